#include "support/control_flow_models.h"

#include <cmath>

#include "kiln/passes.h"

namespace kiln::test {

namespace {

// Declares the outputs' dtypes the way the importers do.
NetBuilder Typed(NetBuilder b) {
  (void)InferDtypes(b.net());
  return b;
}

}  // namespace

NetBuilder IfOnData() {
  NetBuilder b("if_on_data");
  int x = b.addInput("x", fb::DataType::F32, {4});
  int y = b.addInput("y", fb::DataType::F32, {4});
  int zero = b.addConstant("zero", {1}, std::vector<float>{0.f});
  int sum = b.addOp(fb::OpType::ReduceSum, "sum", {x}, {"sum"})[0];
  int cond = b.addOp(fb::OpType::Greater, "positive", {sum, zero}, {"cond"})[0];

  NetBuilder then_b("then");
  int tx = then_b.addInput("x", fb::DataType::F32, {4});
  int ty = then_b.addInput("y", fb::DataType::F32, {4});
  int two = then_b.addConstant("two", {1}, std::vector<float>{2.f});
  int tx2 = then_b.addOp(fb::OpType::Mul, "twice", {tx, two}, {"x2"})[0];
  then_b.addOutput(then_b.addOp(fb::OpType::Add, "plus_y", {tx2, ty}, {"then_out"})[0]);
  NetBuilder else_b("else");
  int ex = else_b.addInput("x", fb::DataType::F32, {4});
  int ey = else_b.addInput("y", fb::DataType::F32, {4});
  else_b.addOutput(else_b.addOp(fb::OpType::Sub, "y_minus_x", {ey, ex}, {"else_out"})[0]);

  fb::IfParamsT p;
  p.then_branch = b.addSubgraph(Typed(std::move(then_b)));
  p.else_branch = b.addSubgraph(Typed(std::move(else_b)));
  b.addOutput(b.addOp(fb::OpType::If, "if", {cond, x, y}, {"out"}, p)[0]);
  return Typed(std::move(b));
}

std::vector<float> IfOnDataRef(const std::vector<float>& x, const std::vector<float>& y) {
  float sum = 0;
  for (float v : x) sum += v;
  std::vector<float> r;
  for (size_t i = 0; i < x.size(); ++i) r.push_back(sum > 0 ? 2 * x[i] + y[i] : y[i] - x[i]);
  return r;
}

NetBuilder IfOnSampleRate() {
  NetBuilder b("if_on_sample_rate");
  int sr = b.addInput("sr", fb::DataType::I64, {});
  int x = b.addInput("x", fb::DataType::F32, {4});
  int k16 = b.addConstant("k16000", {}, std::vector<int64_t>{16000});
  int cond = b.addOp(fb::OpType::Equal, "is_16k", {sr, k16}, {"cond"})[0];
  NetBuilder then_b("then");
  then_b.addOutput(then_b.addOp(fb::OpType::Relu, "relu", {then_b.addInput("x", fb::DataType::F32, {4})}, {"r"})[0]);
  NetBuilder else_b("else");
  else_b.addOutput(else_b.addOp(fb::OpType::Neg, "neg", {else_b.addInput("x", fb::DataType::F32, {4})}, {"n"})[0]);
  fb::IfParamsT p;
  p.then_branch = b.addSubgraph(Typed(std::move(then_b)));
  p.else_branch = b.addSubgraph(Typed(std::move(else_b)));
  b.addOutput(b.addOp(fb::OpType::If, "if", {cond, x}, {"out"}, p)[0]);
  return Typed(std::move(b));
}

NetBuilder LoopWithTripCount(bool m_input) {
  NetBuilder b("loop_trip_count");
  int x = b.addInput("x", fb::DataType::F32, {3});
  int m = m_input ? b.addInput("m", fb::DataType::I64, {}) : b.addConstant("m", {}, std::vector<int64_t>{4});
  uint8_t yes = 1;
  int cond = b.addConstant("cond", fb::DataType::BOOL, {}, &yes, 1);
  int acc0 = b.addConstant("acc0", {3}, std::vector<float>{0.f, 0.f, 0.f});

  NetBuilder body("body");
  body.addInput("iter", fb::DataType::I64, {});
  int cin = body.addInput("cond_in", fb::DataType::BOOL, {});
  int acc = body.addInput("acc_in", fb::DataType::F32, {3});
  int bx = body.addInput("x", fb::DataType::F32, {3});
  int half = body.addConstant("half", {1}, std::vector<float>{0.5f});
  int scaled = body.addOp(fb::OpType::Mul, "scale", {acc, half}, {"scaled"})[0];
  int next = body.addOp(fb::OpType::Add, "add_x", {scaled, bx}, {"acc_out"})[0];
  body.addOutput(body.addOp(fb::OpType::Identity, "cond_pass", {cin}, {"cond_out"})[0]);
  body.addOutput(next);
  body.addOutput(body.addOp(fb::OpType::Identity, "scan", {next}, {"scan_out"})[0]);

  fb::LoopParamsT p;
  p.body = b.addSubgraph(Typed(std::move(body)));
  p.num_captures = 1;
  auto outs = b.addOp(fb::OpType::Loop, "loop", {m, cond, acc0, x}, {"acc", "scans"}, p);
  b.addOutput(outs[0]);
  b.addOutput(outs[1]);
  return Typed(std::move(b));
}

void LoopWithTripCountRef(const std::vector<float>& x, int64_t m, std::vector<float>* acc, std::vector<float>* scans) {
  acc->assign(x.size(), 0.f);
  scans->clear();
  for (int64_t i = 0; i < m; ++i)
    for (size_t k = 0; k < x.size(); ++k) {
      (*acc)[k] = (*acc)[k] * 0.5f + x[k];
      scans->push_back((*acc)[k]);
    }
}

NetBuilder LoopUntil() {
  NetBuilder b("loop_until");
  int v = b.addInput("v", fb::DataType::F32, {2});
  uint8_t yes = 1;
  int cond = b.addConstant("cond", fb::DataType::BOOL, {}, &yes, 1);
  NetBuilder body("body");
  body.addInput("iter", fb::DataType::I64, {});
  body.addInput("cond_in", fb::DataType::BOOL, {});
  int vin = body.addInput("v_in", fb::DataType::F32, {2});
  int two = body.addConstant("two", {1}, std::vector<float>{2.f});
  int limit = body.addConstant("limit", {1}, std::vector<float>{100.f});
  int vout = body.addOp(fb::OpType::Mul, "double", {vin, two}, {"v_out"})[0];
  int sum = body.addOp(fb::OpType::ReduceSum, "sum", {vout}, {"sum"})[0];
  body.addOutput(body.addOp(fb::OpType::Less, "below", {sum, limit}, {"cond_out"})[0]);
  body.addOutput(vout);
  body.addOutput(body.addOp(fb::OpType::Identity, "scan", {vout}, {"scan_out"})[0]);
  fb::LoopParamsT p;
  p.body = b.addSubgraph(Typed(std::move(body)));
  auto outs = b.addOp(fb::OpType::Loop, "loop", {-1, cond, v}, {"last", "scans"}, p);
  b.addOutput(outs[0]);
  b.addOutput(outs[1]);
  return Typed(std::move(b));
}

void LoopUntilRef(const std::vector<float>& v, std::vector<float>* last, std::vector<float>* scans) {
  *last = v;
  scans->clear();
  for (;;) {
    for (float& x : *last) x *= 2;
    scans->insert(scans->end(), last->begin(), last->end());
    if (!((*last)[0] + (*last)[1] < 100.f)) break;
  }
}

NetBuilder ScanReverse() {
  NetBuilder b("scan_reverse");
  int s0 = b.addInput("s0", fb::DataType::F32, {2});
  int seq = b.addInput("seq", fb::DataType::F32, {2, 5});
  int w = b.addConstant("w", {2}, std::vector<float>{1.5f, -0.5f});
  NetBuilder body("body");
  int sin = body.addInput("s_in", fb::DataType::F32, {2});
  int slice = body.addInput("slice", fb::DataType::F32, {2});
  int bw = body.addInput("w", fb::DataType::F32, {2});
  int sout = body.addOp(fb::OpType::Add, "add", {sin, slice}, {"s_out"})[0];
  body.addOutput(sout);
  body.addOutput(body.addOp(fb::OpType::Mul, "weigh", {sout, bw}, {"y"})[0]);
  fb::ScanParamsT p;
  p.body = b.addSubgraph(Typed(std::move(body)));
  p.num_scan_inputs = 1;
  p.num_captures = 1;
  p.input_axes = {1};
  p.input_directions = {1};
  auto outs = b.addOp(fb::OpType::Scan, "scan", {s0, seq, w}, {"s", "out"}, p);
  b.addOutput(outs[0]);
  b.addOutput(outs[1]);
  return Typed(std::move(b));
}

void ScanReverseRef(const std::vector<float>& s0, const std::vector<float>& seq, std::vector<float>* s,
                    std::vector<float>* out) {
  *s = s0;
  out->assign(10, 0.f);
  const float w[2] = {1.5f, -0.5f};
  for (int t = 0; t < 5; ++t) {
    const int at = 4 - t;
    for (int k = 0; k < 2; ++k) {
      (*s)[static_cast<size_t>(k)] += seq[static_cast<size_t>(k * 5 + at)];
      (*out)[static_cast<size_t>(t * 2 + k)] = (*s)[static_cast<size_t>(k)] * w[k];
    }
  }
}

}  // namespace kiln::test

namespace kiln::test {

NetBuilder StreamingCell() {
  NetBuilder b("streaming_cell");
  int h = b.addInput("h", fb::DataType::F32, {1, 4});
  int x = b.addInput("x", fb::DataType::F32, {1, 4});
  int half = b.addConstant("half", {1}, std::vector<float>{0.5f});
  int two = b.addConstant("two", {1}, std::vector<float>{2.f});
  int hs = b.addOp(fb::OpType::Mul, "decay", {h, half}, {"hs"})[0];
  int pre = b.addOp(fb::OpType::Add, "in", {hs, x}, {"pre"})[0];
  int hout = b.addOp(fb::OpType::Tanh, "tanh", {pre}, {"h_out"})[0];
  b.addOutput(hout);
  b.addOutput(b.addOp(fb::OpType::Mul, "head", {hout, two}, {"out"})[0]);
  return Typed(std::move(b));
}

std::vector<float> StreamingCellRef(const std::vector<std::vector<float>>& xs) {
  std::vector<float> h(4, 0.f), out(4, 0.f);
  for (const auto& x : xs)
    for (size_t i = 0; i < 4; ++i) {
      h[i] = std::tanh(h[i] * 0.5f + x[i]);
      out[i] = h[i] * 2;
    }
  return out;
}

}  // namespace kiln::test
