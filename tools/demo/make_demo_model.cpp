// kiln-demo-model DIR: writes a small CNN with NetBuilder into DIR, once with
// weights inline (tiny_cnn.kiln) and once with external weights
// (tiny_cnn_ext.kiln + tiny_cnn.weights), loads both back and prints what
// it loaded, and writes an input image.npy for kiln-run. `make demo` uses
// it until the GPU demo replaces it.
#include <cstdio>
#include <random>
#include <string>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "npy.h"

namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.1f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

kiln::NetBuilder DemoNet() {
  using namespace kiln;
  NetBuilder b("demo_cnn");
  int x = b.addInput("image", fb::DataType::F32, {"batch", 3, 32, 32});
  int c = x, channels = 3;
  for (int i = 0; i < 2; ++i) {
    int out = 16 << i;
    std::string n = "conv" + std::to_string(i + 1);
    int w = b.addConstant(n + ".weight", {out, channels, 3, 3}, Random(size_t(out) * channels * 9, 10 + i));
    int bias = b.addConstant(n + ".bias", {out}, Random(size_t(out), 20 + i));
    fb::ConvParamsT conv;
    conv.kernel_shape = {3, 3};
    conv.strides = {2, 2};
    conv.pads = {1, 1, 1, 1};
    conv.activation = fb::Activation::Relu;
    c = b.addOp(fb::OpType::Conv, n, {c, w, bias}, {n + ".out"}, conv)[0];
    channels = out;
  }
  int g = b.addOp(fb::OpType::GlobalAveragePool, "gap", {c}, {"gap.out"})[0];
  fb::AxisParamsT flat;
  flat.axis = 1;
  int f = b.addOp(fb::OpType::Flatten, "flatten", {g}, {"features"}, flat)[0];
  int fw = b.addConstant("fc.weight", {10, channels}, Random(size_t(10) * channels, 30));
  int fbias = b.addConstant("fc.bias", {10}, Random(10, 31));
  fb::GemmParamsT gemm;
  gemm.trans_b = true;
  int logits = b.addOp(fb::OpType::Gemm, "fc", {f, fw, fbias}, {"logits"}, gemm)[0];
  fb::AxisParamsT sm;
  sm.axis = -1;
  b.addOutput(b.addOp(fb::OpType::Softmax, "softmax", {logits}, {"probs"}, sm)[0]);
  b.setProperty("description", "Kiln demo: two strided 3x3 convs, global pool, classifier");
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-demo-model DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  kiln::NetBuilder b = DemoNet();
  kiln::WriteOptions ext;
  ext.external_weights = "tiny_cnn.weights";
  for (auto [path, opt] : {std::make_pair(dir + "/tiny_cnn.kiln", kiln::WriteOptions{}),
                           std::make_pair(dir + "/tiny_cnn_ext.kiln", ext)}) {
    kiln::Status s = b.writeFile(path, opt);
    if (!s.ok()) {
      std::fprintf(stderr, "kiln-demo-model: %s\n", s.ToString().c_str());
      return 1;
    }
    auto interp = kiln::Interpreter::createFromFile(path);
    if (!interp.ok()) {
      std::fprintf(stderr, "kiln-demo-model: %s\n", interp.status().ToString().c_str());
      return 1;
    }
    std::printf("wrote and loaded %s: %u ops, %u tensors%s\n", path.c_str(), (*interp)->net().ops()->size(),
                (*interp)->net().tensors()->size(), opt.external_weights.empty() ? "" : " (weights external)");
  }
  // An input for kiln-run: one 32x32 RGB image.
  kiln::NpyArray image;
  image.shape = {1, 3, 32, 32};
  std::vector<float> pixels = Random(3 * 32 * 32, 99);
  image.bytes.assign(reinterpret_cast<const uint8_t*>(pixels.data()),
                     reinterpret_cast<const uint8_t*>(pixels.data() + pixels.size()));
  kiln::Status s = kiln::WriteNpy(dir + "/image.npy", image);
  if (!s.ok()) {
    std::fprintf(stderr, "kiln-demo-model: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s/image.npy (a random 1x3x32x32 input)\n", dir.c_str());
  return 0;
}
