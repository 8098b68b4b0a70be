// Writes the fuzzers' starting corpora, at build time, from the test models:
//   DIR/loader  .kiln models (TinyCnn; If, Loop and Scan with subgraphs);
//   DIR/onnx    every model of ONNX's backend test data (libonnx-testdata),
//               which covers each op the importer maps;
//   DIR/tflite  small TFLite models written with the tests' TfliteBuilder:
//               conv, depthwise, dequantized weights, fully-connected,
//               softmax, layout ops, pooling;
//   DIR/run     the ONNX models with inputs of 4096 elements or fewer, and
//               the TFLite ones (the run target converts and runs them).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/control_flow_models.h"
#include "support/test_models.h"
#include "tflite/tflite_builder.h"

namespace fs = std::filesystem;
namespace tfl = kiln::tflite;
using kiln::test::B;
using kiln::test::F;
using kiln::test::I;
using kiln::test::TfliteBuilder;
using kiln::test::V;

namespace {

std::vector<float> Values(size_t n, uint32_t seed) { return kiln::test::RandomFloats(n, seed); }

std::vector<std::vector<uint8_t>> TfliteSeeds() {
  std::vector<std::vector<uint8_t>> seeds;
  {  // conv + add(relu) + mean
    TfliteBuilder t;
    int x = t.tensor("x", {1, 5, 6, 3}), w = t.constF32("w", {4, 3, 3, 3}, Values(108, 1));
    int b = t.constF32("b", {4}, Values(4, 2)), c = t.constF32("c", {4}, Values(4, 3));
    int y = t.tensor("conv", {1, 5, 6, 4}), z = t.tensor("add", {1, 5, 6, 4}), m = t.tensor("mean", {1, 4});
    t.op(tfl::CONV_2D, {x, w, b}, {y}, tfl::kConv2DOptions,
         {B(tfl::opt::kPadding, tfl::kSame), I(tfl::opt::kStrideW, 1), I(tfl::opt::kStrideH, 1)});
    t.op(tfl::ADD, {y, c}, {z}, tfl::kAddOptions, {B(tfl::opt::kBinaryActivation, tfl::kActRelu)});
    t.op(tfl::MEAN, {z, t.constI32("axes", {2}, {1, 2})}, {m}, tfl::kReducerOptions, {B(tfl::opt::kKeepDims, 0)});
    t.io({x}, {z, m});
    seeds.push_back(t.finish());
  }
  {  // depthwise + max pool
    TfliteBuilder t;
    int x = t.tensor("x", {1, 6, 6, 4}), w = t.constF32("w", {1, 3, 3, 4}, Values(36, 4));
    int y = t.tensor("dw", {1, 6, 6, 4}), p = t.tensor("pool", {1, 3, 3, 4});
    t.op(tfl::DEPTHWISE_CONV_2D, {x, w, -1}, {y}, tfl::kDepthwiseConv2DOptions,
         {B(tfl::opt::kPadding, tfl::kSame), I(tfl::opt::kStrideW, 1), I(tfl::opt::kStrideH, 1)});
    t.op(tfl::MAX_POOL_2D, {y}, {p}, tfl::kPool2DOptions,
         {B(tfl::opt::kPadding, tfl::kValid), I(tfl::opt::kStrideW, 2), I(tfl::opt::kStrideH, 2),
          I(tfl::opt::kPoolFilterW, 2), I(tfl::opt::kPoolFilterH, 2)});
    t.io({x}, {p});
    seeds.push_back(t.finish());
  }
  {  // int8 weights behind a DEQUANTIZE
    TfliteBuilder t;
    std::vector<int8_t> q(54);
    for (size_t k = 0; k < q.size(); ++k) q[k] = static_cast<int8_t>(k * 7 % 50 - 25);
    int x = t.tensor("x", {1, 4, 4, 3}), wf = t.tensor("w_f32", {2, 3, 3, 3}), y = t.tensor("y", {1, 4, 4, 2});
    int w = t.tensor("w_i8", {2, 3, 3, 3}, tfl::kInt8, TfliteBuilder::Bytes(q), {{1.f / 64, 1.f / 32}, {0, 0}, 0});
    t.op(tfl::DEQUANTIZE, {w}, {wf});
    t.op(tfl::CONV_2D, {x, wf, -1}, {y}, tfl::kConv2DOptions, {B(tfl::opt::kPadding, tfl::kSame)});
    t.io({x}, {y});
    seeds.push_back(t.finish());
  }
  {  // fully-connected over 4-D + softmax
    TfliteBuilder t;
    int x = t.tensor("x", {1, 2, 2, 3}), w = t.constF32("w", {5, 12}, Values(60, 5)), b = t.constF32("b", {5}, Values(5, 6));
    int f = t.tensor("fc", {1, 5}), s = t.tensor("prob", {1, 5});
    t.op(tfl::FULLY_CONNECTED, {x, w, b}, {f}, tfl::kFullyConnectedOptions, {B(tfl::opt::kFcActivation, tfl::kActRelu)});
    t.op(tfl::SOFTMAX, {f}, {s}, tfl::kSoftmaxOptions, {F(tfl::opt::kSoftmaxBeta, 0.5f)});
    t.io({x}, {s});
    seeds.push_back(t.finish());
  }
  {  // sparse weights (row CSR, uint8 indices) behind a DENSIFY, into a fully-connected
    TfliteBuilder t;
    kiln::test::SparseSpec sp;
    sp.traversal_order = {0, 1};
    kiln::test::SparseLevel rows, cols;
    rows.dense_size = 4;
    cols.format = tfl::kDimSparseCsr;
    cols.segments = {0, 2, 3, 3, 5};
    cols.indices = {1, 4, 0, 2, 5};
    cols.segments_type = cols.indices_type = tfl::kIndexUint8;
    sp.levels = {rows, cols};
    int x = t.tensor("x", {1, 6}), wd = t.tensor("w", {4, 6}), y = t.tensor("y", {1, 4});
    int ws = t.sparseTensor("w_sparse", {4, 6}, tfl::kFloat32, TfliteBuilder::Bytes(Values(5, 7)), sp);
    t.op(tfl::DENSIFY, {ws}, {wd});
    t.op(tfl::FULLY_CONNECTED, {x, wd, -1}, {y}, tfl::kFullyConnectedOptions, {});
    t.io({x}, {y});
    seeds.push_back(t.finish());
  }
  {  // layout ops
    TfliteBuilder t;
    int x = t.tensor("x", {1, 4, 6, 2});
    int pads = t.constI32("pads", {4, 2}, {0, 0, 1, 0, 0, 2, 0, 0});
    int p = t.tensor("pad", {1, 5, 8, 2}), r = t.tensor("flat", {1, 80}), tr = t.tensor("tr", {1, 2, 5, 8});
    int b = t.constI32("begin", {4}, {0, 1, 0, 0}), e = t.constI32("end", {4}, {1, 5, 8, 1});
    int st = t.constI32("strides", {4}, {1, 2, 3, 1}), sl = t.tensor("slice", {1, 2, 3});
    int sz = t.constI32("size", {2}, {10, 16}), rs = t.tensor("resize", {1, 10, 16, 2});
    int sa = t.constI32("split_axis", {}, {3}), s0 = t.tensor("s0", {1, 5, 8, 1}), s1 = t.tensor("s1", {1, 5, 8, 1});
    t.op(tfl::PAD, {x, pads}, {p});
    t.op(tfl::RESHAPE, {p, t.constI32("shape", {2}, {1, 80})}, {r}, tfl::kReshapeOptions, {V(0, {1, 80})});
    t.op(tfl::TRANSPOSE, {p, t.constI32("perm", {4}, {0, 3, 1, 2})}, {tr});
    t.op(tfl::STRIDED_SLICE, {p, b, e, st}, {sl}, tfl::kStridedSliceOptions, {I(tfl::opt::kShrinkAxisMask, 8)});
    t.op(tfl::RESIZE_NEAREST_NEIGHBOR, {p, sz}, {rs}, tfl::kResizeNearestNeighborOptions, {});
    t.op(tfl::SPLIT, {sa, p}, {s0, s1}, tfl::kSplitOptions, {I(tfl::opt::kNumSplits, 2)});
    t.io({x}, {r, tr, sl, rs, s0, s1});
    seeds.push_back(t.finish());
  }
  return seeds;
}

bool Write(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: kiln-fuzz-seeds DIR [ONNX_TESTDATA_NODE_DIR]\n");
    return 2;
  }
  const fs::path dir = argv[1];
  for (const char* sub : {"loader", "onnx", "tflite", "run"}) fs::create_directories(dir / sub);
  auto kiln_model = kiln::test::TinyCnn().finish();
  if (!kiln_model.ok() || !Write(dir / "loader" / "tiny_cnn.kiln", *kiln_model)) return 1;
  // Control flow: subgraphs, captures, If / Loop / Scan params.
  for (auto [name, builder] : {std::pair<const char*, kiln::NetBuilder (*)()>{"if.kiln", &kiln::test::IfOnData},
                               {"scan.kiln", &kiln::test::ScanReverse}}) {
    auto m = builder().finish();
    if (!m.ok() || !Write(dir / "loader" / name, *m)) return 1;
  }
  auto loop = kiln::test::LoopWithTripCount().finish();
  if (!loop.ok() || !Write(dir / "loader" / "loop.kiln", *loop)) return 1;
  int n = 0;
  for (const auto& seed : TfliteSeeds()) {
    const std::string name = "seed" + std::to_string(n++) + ".tflite";
    if (!Write(dir / "tflite" / name, seed) || !Write(dir / "run" / name, seed)) return 1;
  }
  int onnx = 0;
  if (argc == 3) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(argv[2], ec)) {
      const fs::path model = entry.path() / "model.onnx";
      if (!fs::exists(model)) continue;
      const std::string name = entry.path().filename().string() + ".onnx";
      fs::copy_file(model, dir / "onnx" / name, fs::copy_options::overwrite_existing, ec);
      // The run target takes the small ones (its inputs are capped at 4096 elements anyway).
      if (fs::file_size(model, ec) < 4096) fs::copy_file(model, dir / "run" / name, fs::copy_options::overwrite_existing, ec);
      ++onnx;
    }
  }
  std::printf("kiln-fuzz-seeds: 4 loader, %d tflite, %d onnx seeds in %s\n", n, onnx, argv[1]);
  return 0;
}
