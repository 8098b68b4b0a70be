// The channel-packed activation layout (GpuLayout::kPacked) on a GPU
// backend (Vulkan, or OpenCL with KILN_TEST_GPU=opencl): which
// tensors a session packs (a tensor is packed only between packed-aware
// ops, never where the app or another backend reads it), and that every
// packed-aware kernel (conv_c4 and conv_dw_c4 on both sides of a layout
// border, unary with zero lanes kept zero (Log(0) = -inf), binary with and without
// broadcast, max and average pool, global average pool, channel Concat)
// computes what the host does, at odd channel counts, after a resize, in fp16 storage, and as
// callbacks see each op's output.
#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "support/backend_compare.h"
#include "support/test_models.h"

namespace kiln::test {
namespace {

const ForwardType kGpu = TestGpu();

// Conv weights scaled by 1/sqrt(fan-in), so activations stay near 1 deep
// into the chain (the fp16 run's tolerance is absolute below 1).
int ConvOp(NetBuilder& b, const std::string& name, int x, int cin, int cout, int k, int group, int stride, int pad,
           bool bias, uint32_t seed) {
  const int cg = cin / group;
  std::vector<float> w = RandomFloats(static_cast<size_t>(cout * cg * k * k), seed);
  for (float& v : w) v /= std::sqrt(static_cast<float>(cg * k * k));
  std::vector<int> in = {x, b.addConstant(name + ".w", {cout, cg, k, k}, w)};
  if (bias) in.push_back(b.addConstant(name + ".b", {cout}, RandomFloats(static_cast<size_t>(cout), seed + 1)));
  fb::ConvParamsT p;
  p.kernel_shape = {k, k};
  p.strides = {stride, stride};
  p.pads = {pad, pad, pad, pad};
  p.group = group;
  return b.addOp(fb::OpType::Conv, name, in, {name + ".out"}, p)[0];
}

int PoolOp(NetBuilder& b, fb::OpType type, const std::string& name, int x, int k, int stride, int pad) {
  fb::PoolParamsT p;
  p.kernel_shape = {k, k};
  p.strides = {stride, stride};
  p.pads = {pad, pad, pad, pad};
  return b.addOp(type, name, {x}, {name + ".out"}, p)[0];
}

// x[1, 5, h, w] through every packed-aware op (16 ops); 15 intermediate tensors, all
// of which a packed session holds packed (y, the app's, stays NCHW).
constexpr size_t kChainPacked = 15;
std::vector<uint8_t> Chain() {
  NetBuilder b("packed_chain");
  int x = b.addInput("x", fb::DataType::F32, {1, 5, "h", "w"});
  int c1 = ConvOp(b, "conv1", x, 5, 6, 3, 1, 1, 1, true, 10);  // NCHW in, packed out
  int r1 = b.addOp(fb::OpType::Relu, "relu1", {c1}, {"r1"})[0];
  int d1 = ConvOp(b, "dw1", r1, 6, 6, 3, 6, 2, 1, true, 20);  // depthwise, 6 channels: a partial block
  int s1 = b.addOp(fb::OpType::Abs, "abs", {d1}, {"s1"})[0];
  // log|x|: finite on real channels; a zero lane that Log did not keep
  // zero would be log(0) = -inf, which poisons the next conv (-inf * 0 =
  // NaN).
  int rc = b.addOp(fb::OpType::Log, "log", {s1}, {"rc"})[0];
  int c2 = ConvOp(b, "conv2", rc, 6, 9, 1, 1, 1, 0, false, 30);  // 1x1
  int m1 = PoolOp(b, fb::OpType::MaxPool, "maxpool", c2, 3, 2, 1);
  int c3 = ConvOp(b, "conv3", m1, 9, 8, 3, 1, 1, 1, true, 40);
  int g1 = ConvOp(b, "grouped", c3, 8, 8, 3, 2, 1, 1, true, 50);  // 2 groups of 4 channels
  int a1 = b.addOp(fb::OpType::Add, "add", {g1, c3}, {"a1"})[0];
  int gp = b.addOp(fb::OpType::GlobalAveragePool, "gap", {a1}, {"gp"})[0];
  int se = ConvOp(b, "se", gp, 8, 8, 1, 1, 1, 0, true, 60);
  fb::HardSigmoidParamsT hs;
  hs.alpha = 0.2f;
  hs.beta = 0.5f;
  int sg = b.addOp(fb::OpType::HardSigmoid, "hsig", {se}, {"sg"}, hs)[0];
  int mul = b.addOp(fb::OpType::Mul, "scale", {a1, sg}, {"mul"})[0];  // broadcast over pixels
  int ap = PoolOp(b, fb::OpType::AveragePool, "avgpool", mul, 2, 1, 0);
  int y = ConvOp(b, "head", ap, 8, 7, 3, 1, 1, 1, true, 70);  // packed in, NCHW out
  b.addOutput(y);
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

ScheduleConfig Config(ForwardType type, GpuLayout layout, Precision precision = Precision::kNormal) {
  ScheduleConfig c;
  c.type = type;
  c.backupType = ForwardType::kHost;
  c.gpuLayout = layout;
  c.precision = precision;
  return c;
}

size_t PackedTensors(Session* s) {
  for (const MemoryUse& m : s->memory())
    if (m.backend == ForwardTypeName(kGpu)) return m.packed_tensors;
  return 0;
}

// A model with one session a config: the host's reference and the GPU
// sessions under test, created the same way in every test below.
struct Loaded {
  std::unique_ptr<Interpreter> interp;
  std::vector<Session*> sessions;
  Session* operator[](size_t i) const { return sessions[i]; }
  std::vector<float> run(size_t i, const std::vector<int64_t>& shape, const std::vector<float>& x) const {
    return RunOnce(interp.get(), sessions[i], shape, x);
  }
};

StatusOr<Loaded> Load(const std::vector<uint8_t>& bytes, const std::vector<ScheduleConfig>& configs) {
  Loaded l;
  KILN_ASSIGN_OR_RETURN(l.interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  for (const ScheduleConfig& c : configs) {
    KILN_ASSIGN_OR_RETURN(Session * s, l.interp->createSession(c), "session on %s", ForwardTypeName(c.type));
    l.sessions.push_back(s);
  }
  return l;
}

StatusOr<Loaded> Load(NetBuilder& b, const std::vector<ScheduleConfig>& configs) {
  KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, b.finish());
  return Load(bytes, configs);
}

const ScheduleConfig kHostConfig = Config(ForwardType::kHost, GpuLayout::kAuto);

TEST(GpuPacked, ChainMatchesHostAcrossResizes) {
  KILN_REQUIRE_BACKEND(kGpu);
  auto m = Load(Chain(), {kHostConfig, Config(kGpu, GpuLayout::kPacked), Config(kGpu, GpuLayout::kPlanar)});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Session *packed = (*m)[1], *planar = (*m)[2];
  EXPECT_EQ(packed->placement().ops_per_backend.count("host"), 0u) << packed->placement().toString();
  for (auto [h, w, seed] : {std::tuple<int64_t, int64_t, uint32_t>{11, 13, 1}, {7, 9, 2}, {11, 13, 3}}) {
    const std::vector<int64_t> shape = {1, 5, h, w};
    const auto x = Random(static_cast<size_t>(5 * h * w), -2, 2, seed);
    const auto want = m->run(0, shape, x);
    const std::string what = std::to_string(h) + "x" + std::to_string(w);
    ExpectNear(m->run(1, shape, x), want, 1e-4f, "packed " + what);
    EXPECT_EQ(PackedTensors(packed), kChainPacked) << what;
    ExpectNear(m->run(2, shape, x), want, 1e-4f, "planar " + what);
    EXPECT_EQ(PackedTensors(planar), 0u) << what;
  }
}

TEST(GpuPacked, Fp16Storage) {
  KILN_REQUIRE_BACKEND(kGpu);
  auto m = Load(Chain(), {kHostConfig, Config(kGpu, GpuLayout::kPacked, Precision::kLow)});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<int64_t> shape = {1, 5, 10, 12};
  const auto x = Random(5 * 10 * 12, -2, 2, 4);
  // Sixteen ops, each rounding its output to 11 significant bits.
  ExpectNear(m->run(1, shape, x), m->run(0, shape, x), 2e-2f, "fp16 packed");
  EXPECT_EQ(PackedTensors((*m)[1]), kChainPacked);
}

// Callbacks read every op's output in NCHW order, packed or not.
TEST(GpuPacked, CallbacksSeeNchw) {
  KILN_REQUIRE_BACKEND(kGpu);
  auto bytes = Chain();
  auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  ASSERT_TRUE(interp.ok());
  const std::vector<int64_t> shape = {1, 5, 9, 11};
  const auto x = Random(5 * 9 * 11, -2, 2, 5);
  std::map<ForwardType, std::map<std::string, std::vector<float>>> seen;
  for (ForwardType type : {ForwardType::kHost, kGpu}) {
    auto s = (*interp)->createSession(Config(type, GpuLayout::kPacked));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    Tensor* in = (*interp)->getSessionInput(*s);
    ASSERT_TRUE((*interp)->resizeTensor(in, shape).ok());
    ASSERT_TRUE((*interp)->resizeSession(*s).ok());
    auto host = Tensor::wrap(shape, fb::DataType::F32, const_cast<float*>(x.data()));
    ASSERT_TRUE(in->copyFromHostTensor(*host).ok());
    auto& outs = seen[type];
    // Before each conv: its weights, which a packed GPU session keeps
    // only in the conv's own layout on the device (read from the model).
    Status st = (*interp)->runSessionWithCallBack(
        *s,
        [&outs](const std::vector<Tensor*>& ts, const OpInfo& op) {
          if (op.type == "Conv") outs[op.name + ".w"].assign(ts[1]->host<float>(), ts[1]->host<float>() + ts[1]->elementCount());
          return true;
        },
        [&outs](const std::vector<Tensor*>& ts, const OpInfo& op) {
          const Tensor* t = ts[0];
          outs[op.name].assign(t->host<float>(), t->host<float>() + t->elementCount());
          return true;
        });
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (type == kGpu) {
      EXPECT_EQ(PackedTensors(*s), kChainPacked);
    }
  }
  ASSERT_EQ(seen[kGpu].size(), 16u + 7u);  // every op's output, every conv's weights
  for (auto& [op, want] : seen[ForwardType::kHost]) ExpectNear(seen[kGpu][op], want, 1e-4f, op);
}

// Packed convs keep one copy of their weights on the device (their own
// blocks, here Winograd's), not the model's NCHW copy beside it.
TEST(GpuPacked, WeightsUploadedOnce) {
  KILN_REQUIRE_BACKEND(kGpu);
  NetBuilder b("weights");
  int x = b.addInput("x", fb::DataType::F32, {1, 64, 8, 8});
  int c1 = ConvOp(b, "conv1", x, 64, 64, 3, 1, 1, 1, true, 90);
  int r = b.addOp(fb::OpType::Relu, "relu", {c1}, {"r"})[0];
  b.addOutput(ConvOp(b, "conv2", r, 64, 64, 3, 1, 1, 1, true, 91));
  auto bytes = b.finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok());
  std::map<GpuLayout, size_t> weights;
  for (GpuLayout layout : {GpuLayout::kPlanar, GpuLayout::kPacked}) {
    auto s = (*interp)->createSession(Config(kGpu, layout));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    for (const MemoryUse& m : (*s)->memory())
      if (m.backend == ForwardTypeName(kGpu)) weights[layout] = m.constant_bytes;
    EXPECT_EQ(PackedTensors(*s), layout == GpuLayout::kPacked ? 2u : 0u);
  }
  const size_t model_bytes = 2 * (64 * 64 * 9 + 64) * sizeof(float);
  EXPECT_GE(weights[GpuLayout::kPlanar], model_bytes);
  // Packed, these 3x3 convs run through Winograd F(2x2, 3x3), whose
  // transformed weights are 16 floats a kernel where the model has 9.
  EXPECT_GE(weights[GpuLayout::kPacked], 2 * 64 * 64 * 16 * sizeof(float));
  EXPECT_LT(weights[GpuLayout::kPacked], model_bytes * 16 / 9 * 11 / 10);
}

// Concat over channels stays packed where the blocks line up (every input
// but the last a multiple of four channels), and returns its inputs to
// NCHW where they do not.
TEST(GpuPacked, ConcatOfWholeBlocks) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (bool aligned : {true, false}) {
    NetBuilder b("concat");
    int x = b.addInput("x", fb::DataType::F32, {1, 5, 9, 7});
    int c0 = ConvOp(b, "conv0", x, 5, 8, 3, 1, 1, 1, true, 100);
    int ca = ConvOp(b, "conv_a", c0, 8, 4, 1, 1, 1, 0, true, 101);
    int cb = ConvOp(b, "conv_b", c0, 8, 6, 3, 1, 1, 1, true, 102);
    fb::AxisParamsT axis;
    axis.axis = 1;
    // Aligned: [4 | 6] -> 10 channels; not: [6 | 4], a partial block inside.
    std::vector<int> parts = aligned ? std::vector<int>{ca, cb} : std::vector<int>{cb, ca};
    int cat = b.addOp(fb::OpType::Concat, "cat", parts, {"cat"}, axis)[0];
    b.addOutput(ConvOp(b, "head", cat, 10, 7, 3, 1, 1, 1, true, 103));
    auto m = Load(b, {kHostConfig, Config(kGpu, GpuLayout::kPacked)});
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const std::vector<int64_t> shape = {1, 5, 9, 7};
    const auto x_values = Random(5 * 9 * 7, -1, 1, 8);
    const std::string what = aligned ? "aligned" : "unaligned";
    ExpectNear(m->run(1, shape, x_values), m->run(0, shape, x_values), 1e-4f, what);
    EXPECT_EQ(PackedTensors((*m)[1]), aligned ? 4u : 1u) << what;  // c0, ca, cb, cat; or c0 alone
  }
}

// Packed 2-D pools between convs, in the row form PoCL takes (8 output
// pixels a work item, pool.cl's XB): MaxPool 3x3 stride 2 with ceil_mode
// and pads, AveragePool with and without count_include_pad over padded
// windows, on rows shorter and longer than 8 and not a multiple of it.
TEST(GpuPacked, PoolsByRows) {
  KILN_REQUIRE_BACKEND(kGpu);
  NetBuilder b("pools");
  int x = b.addInput("x", fb::DataType::F32, {1, 4, "h", "w"});
  int c1 = ConvOp(b, "conv1", x, 4, 8, 3, 1, 1, 1, true, 80);
  fb::PoolParamsT mp;
  mp.kernel_shape = {3, 3};
  mp.strides = {2, 2};
  mp.pads = {1, 0, 0, 1};
  mp.ceil_mode = true;
  int m1 = b.addOp(fb::OpType::MaxPool, "maxpool", {c1}, {"m1"}, mp)[0];
  fb::PoolParamsT ap = mp;
  ap.strides = {1, 1};
  ap.pads = {1, 1, 1, 1};
  ap.ceil_mode = false;
  ap.count_include_pad = true;
  int a1 = b.addOp(fb::OpType::AveragePool, "avg_pad", {m1}, {"a1"}, ap)[0];
  ap.count_include_pad = false;
  ap.pads = {0, 2, 1, 0};
  int a2 = b.addOp(fb::OpType::AveragePool, "avg", {a1}, {"a2"}, ap)[0];
  b.addOutput(ConvOp(b, "head", a2, 8, 5, 1, 1, 1, 0, true, 81));
  auto m = Load(b, {kHostConfig, Config(kGpu, GpuLayout::kPacked)});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)[1]->placement().ops_per_backend.count("host"), 0u) << (*m)[1]->placement().toString();
  for (auto [h, w] : {std::pair<int64_t, int64_t>{9, 13}, {21, 40}, {5, 3}}) {
    const std::vector<int64_t> shape = {1, 4, h, w};
    const auto in = Random(static_cast<size_t>(4 * h * w), -2, 2, 9);
    ExpectNear(m->run(1, shape, in), m->run(0, shape, in), 1e-4f, std::to_string(h) + "x" + std::to_string(w));
  }
}

// A packed tensor must not meet an op that reads it as NCHW: an Add of a
// conv output and a graph input (NCHW, the app's) keeps both planar, and
// Div (whose 0 / 0 would fill the zero lanes with NaN) is never packed.
// Convs with a fused residual (fuse_residual's fourth input): packed and
// planar, with Relu, LeakyRelu and none, the residual another conv's
// output, on the general, 1x1, depthwise and strided paths, 6 channels (a
// partial block whose zero lanes must stay zero).
TEST(GpuPacked, FusedResidual) {
  KILN_REQUIRE_BACKEND(kGpu);
  NetBuilder b("residual");
  int x = b.addInput("x", fb::DataType::F32, {1, 5, "h", "w"});
  int c1 = ConvOp(b, "conv1", x, 5, 6, 3, 1, 1, 1, true, 10);
  auto with_residual = [&](int conv, int r, fb::Activation act) {
    fb::OpT& op = *b.net().ops.back();
    EXPECT_EQ(op.outputs[0], conv);
    op.inputs.resize(3, -1);
    op.inputs.push_back(r);
    op.params.AsConvParams()->activation = act;
    op.params.AsConvParams()->activation_alpha = 0.2f;
    return conv;
  };
  int c2 = with_residual(ConvOp(b, "conv2", c1, 6, 6, 3, 1, 1, 1, true, 20), c1, fb::Activation::Relu);
  int c3 = with_residual(ConvOp(b, "pw", c2, 6, 6, 1, 1, 1, 0, false, 30), c1, fb::Activation::LeakyRelu);
  int c4 = with_residual(ConvOp(b, "dw", c3, 6, 6, 3, 6, 1, 1, true, 40), c2, fb::Activation::None);
  int s1 = ConvOp(b, "down", c4, 6, 6, 3, 1, 2, 1, true, 50);
  int s2 = with_residual(ConvOp(b, "down2", c4, 6, 6, 1, 1, 2, 0, true, 60), s1, fb::Activation::Relu);
  b.addOutput(ConvOp(b, "head", s2, 6, 7, 3, 1, 1, 1, true, 70));
  auto m = Load(b, {kHostConfig, Config(kGpu, GpuLayout::kPacked), Config(kGpu, GpuLayout::kPlanar)});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Session* packed = (*m)[1];
  EXPECT_EQ(packed->placement().ops_per_backend.count("host"), 0u) << packed->placement().toString();
  const std::vector<int64_t> shape = {1, 5, 11, 13};
  const auto in = Random(5 * 11 * 13, -2, 2, 5);
  const auto want = m->run(0, shape, in);
  ExpectNear(m->run(1, shape, in), want, 1e-4f, "packed");
  EXPECT_GE(PackedTensors(packed), 5u);
  ExpectNear(m->run(2, shape, in), want, 1e-4f, "planar");
}

// 3x3 stride-1 convs of 8 or more channels go through Winograd F(2x2,
// 3x3) (wino_in, wino_gemm, wino_out): odd and tiny planes (a last tile
// row or column half outside), pads 0, 1 and 2 and asymmetric ones, a
// partial output block, batch 2, bias or none, Relu and Clip fused, a fused
// residual, X from the app (NCHW) and Y to it, and fp16 storage.
TEST(GpuPacked, WinogradConvs) {
  KILN_REQUIRE_BACKEND(kGpu);
  NetBuilder b("winograd");
  int x = b.addInput("x", fb::DataType::F32, {2, 8, "h", "w"});
  auto conv = [&](const std::string& name, int in, int cin, int cout, std::vector<int> pads, bool bias,
                  fb::Activation act, uint32_t seed) {
    const int at = ConvOp(b, name, in, cin, cout, 3, 1, 1, 0, bias, seed);
    fb::ConvParamsT* p = b.net().ops.back()->params.AsConvParams();
    p->pads = std::move(pads);
    p->activation = act;
    p->activation_min = -0.5f;  // Clip's range
    p->activation_max = 0.75f;
    return at;
  };
  int c1 = conv("c1", x, 8, 10, {1, 1, 1, 1}, true, fb::Activation::Relu, 90);      // NCHW in, M = 10
  int c2 = conv("c2", c1, 10, 12, {0, 1, 1, 0}, false, fb::Activation::None, 91);   // asymmetric pads
  int c3 = conv("c3", c2, 12, 12, {2, 2, 2, 2}, true, fb::Activation::Clip, 92);    // grows the plane by 2
  int c4 = conv("c4", c3, 12, 12, {1, 1, 1, 1}, true, fb::Activation::Relu, 93);
  fb::OpT& last = *b.net().ops.back();
  last.inputs.push_back(c3);  // a fused residual: y = relu(conv + b + c3)
  int c5 = conv("c5", c4, 12, 9, {0, 0, 0, 0}, true, fb::Activation::None, 94);     // valid, NCHW out
  b.addOutput(c5);
  auto m = Load(b, {kHostConfig, Config(kGpu, GpuLayout::kPacked), Config(kGpu, GpuLayout::kPacked, Precision::kLow)});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Session* packed = (*m)[1];
  EXPECT_EQ(packed->placement().ops_per_backend.count("host"), 0u) << packed->placement().toString();
  for (auto [h, w, seed] : {std::tuple<int64_t, int64_t, uint32_t>{11, 13, 1}, {3, 2, 2}, {2, 3, 3}, {7, 7, 4}}) {
    const std::vector<int64_t> shape = {2, 8, h, w};
    const auto in = Random(static_cast<size_t>(2 * 8 * h * w), -2, 2, seed);
    const auto want = m->run(0, shape, in);
    const std::string what = std::to_string(h) + "x" + std::to_string(w);
    ExpectNear(m->run(1, shape, in), want, 1e-4f, "packed " + what);
    ExpectNear(m->run(2, shape, in), want, 2e-2f, "fp16 " + what);
  }
  // The weights the convs keep are the transformed ones: 16 positions of
  // C4 x M4 blocks of 4 x 4 floats, and the bias (conv_c4's would be 9 taps).
  size_t want_bytes = 0;
  for (auto [c, m, bias] : {std::tuple<int, int, bool>{8, 10, true}, {10, 12, false}, {12, 12, true}, {12, 12, true},
                            {12, 9, true}}) {
    const size_t c4 = static_cast<size_t>(c + 3) / 4, m4 = static_cast<size_t>(m + 3) / 4;
    want_bytes += (16 * m4 * c4 * 4 + m4) * 4 * sizeof(float);
    (void)bias;  // the bias's vec4s are there either way
  }
  for (const MemoryUse& use : packed->memory()) {
    if (use.backend == ForwardTypeName(kGpu)) {
      EXPECT_EQ(use.constant_bytes, want_bytes);
    }
  }
}

// A first conv on RGB (one input block), 7x7 stride 2 as in ResNet, then
// a 1x1 conv, with 20 and 64 channels: lavapipe's pointwise tile of 8
// blocks (GpuCaps::conv_tile_blocks_pointwise) divides 16 blocks and not 5
// (which take the general tile, a partial last one). X from the app.
TEST(GpuPacked, StemAndPointwiseTiles) {
  KILN_REQUIRE_BACKEND(kGpu);
  for (int m : {20, 64}) {
    NetBuilder b("stem");
    int x = b.addInput("x", fb::DataType::F32, {1, 3, "h", "w"});
    int c1 = ConvOp(b, "stem", x, 3, m, 7, 1, 2, 3, true, 95);
    b.net().ops.back()->params.AsConvParams()->activation = fb::Activation::Relu;
    int c2 = ConvOp(b, "pw", c1, m, m, 1, 1, 1, 0, true, 96);
    b.net().ops.back()->params.AsConvParams()->activation = fb::Activation::Relu;
    b.addOutput(ConvOp(b, "head", c2, m, 6, 1, 1, 1, 0, true, 97));
    auto l = Load(b, {kHostConfig, Config(kGpu, GpuLayout::kPacked)});
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    const std::vector<int64_t> shape = {1, 3, 29, 35};
    const auto in = Random(3 * 29 * 35, -2, 2, 8);
    ExpectNear(l->run(1, shape, in), l->run(0, shape, in), 1e-4f, std::to_string(m) + " channels");
    EXPECT_EQ(PackedTensors((*l)[1]), 2u);
  }
}

// Depthwise convs between packed convs: 3x3 and 5x5, stride 1 (on CPU
// OpenCL drivers four outputs a 16-wide vector, their taps one load where
// all four pixels are inside, else pixel by pixel: planes of 5 to 37
// columns, pads 0 to 2; four output rows an item where there are four,
// the last block of rows and of columns overlapping the one before; on
// lavapipe 7 columns an invocation on rows of 7, 14 and 28 outputs) and stride 2 (on lavapipe a row's pixels read once
// for 8 outputs, both strides and sizes), channels not a multiple of four.
TEST(GpuPacked, DepthwiseColumns) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    int k, stride, pad;
  };
  for (const Case c : {Case{3, 1, 1}, Case{3, 1, 0}, Case{5, 1, 2}, Case{3, 2, 1}, Case{5, 2, 2}}) {
    NetBuilder b("dw");
    int x = b.addInput("x", fb::DataType::F32, {"n", 3, "h", "w"});
    int c1 = ConvOp(b, "in", x, 3, 10, 1, 1, 1, 0, true, 91);
    int d = ConvOp(b, "dw", c1, 10, 10, c.k, 10, c.stride, c.pad, true, 92);
    b.net().ops.back()->params.AsConvParams()->activation = fb::Activation::Relu;
    b.addOutput(ConvOp(b, "out", d, 10, 6, 1, 1, 1, 0, true, 93));
    auto m = Load(b, {kHostConfig, Config(kGpu, GpuLayout::kPacked)});
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    for (int64_t h : {3, 9, 16})
      for (int64_t w : {5, 8, 13, 14, 28, 37}) {
        const int64_t n = h == 9 && w == 13 ? 2 : 1;  // one batch of two
        const std::vector<int64_t> shape = {n, 3, h, w};
        const auto in = Random(static_cast<size_t>(n * 3 * h * w), -2, 2, 9);
        ExpectNear(m->run(1, shape, in), m->run(0, shape, in), 1e-4f,
                   "k " + std::to_string(c.k) + " stride " + std::to_string(c.stride) + " pad " +
                       std::to_string(c.pad) + " batch " + std::to_string(n) + " height " + std::to_string(h) +
                       " width " + std::to_string(w));
      }
  }
}

TEST(GpuPacked, BordersStayPlanar) {
  KILN_REQUIRE_BACKEND(kGpu);
  NetBuilder b("borders");
  int x = b.addInput("x", fb::DataType::F32, {1, 6, 7, 9});
  int skip = b.addInput("skip", fb::DataType::F32, {1, 6, 7, 9});
  int c1 = ConvOp(b, "conv1", x, 6, 6, 3, 1, 1, 1, true, 80);
  int a = b.addOp(fb::OpType::Add, "add", {c1, skip}, {"a"})[0];   // planar: skip is the app's
  int c2 = ConvOp(b, "conv2", a, 6, 6, 3, 1, 1, 1, true, 81);      // NCHW in, packed out
  int c3 = ConvOp(b, "conv3", a, 6, 6, 1, 1, 1, 0, true, 82);      // NCHW in, packed out
  int d = b.addOp(fb::OpType::Div, "div", {c2, c3}, {"d"})[0];     // not packed-aware: both stay NCHW
  int c4 = ConvOp(b, "conv4", d, 6, 5, 3, 1, 1, 1, true, 83);
  int r = b.addOp(fb::OpType::Relu, "relu", {c4}, {"r"})[0];       // the app's output
  b.addOutput(r);
  auto bytes = b.finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok());
  std::vector<std::vector<float>> results;
  for (ForwardType type : {ForwardType::kHost, kGpu}) {
    auto s = (*interp)->createSession(Config(type, GpuLayout::kPacked));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    for (auto& [name, t] : (*s)->getInputAll()) {
      auto v = Random(static_cast<size_t>(t->elementCount()), -1, 1, name == "x" ? 6 : 7);
      auto host = Tensor::wrap(t->shape(), fb::DataType::F32, v.data());
      ASSERT_TRUE(t->copyFromHostTensor(*host).ok());
    }
    ASSERT_TRUE((*interp)->runSession(*s).ok());
    Tensor* out = (*interp)->getSessionOutput(*s);
    results.emplace_back(static_cast<size_t>(out->elementCount()));
    auto dst = Tensor::wrap(out->shape(), fb::DataType::F32, results.back().data());
    ASSERT_TRUE(out->copyToHostTensor(dst.get()).ok());
    if (type == kGpu) {
      EXPECT_EQ(PackedTensors(*s), 0u);
    }
  }
  ExpectNear(results[1], results[0], 1e-4f, "borders");
}

}  // namespace
}  // namespace kiln::test
