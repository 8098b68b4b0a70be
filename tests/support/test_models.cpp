#include "support/test_models.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <random>
#include <stdexcept>
#include <system_error>

namespace kiln::test {

std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale) {
  std::vector<float> v = RandomFloats(n, seed);
  for (float& x : v) x *= scale;
  return v;
}

NetBuilder TinyCnn() {
  NetBuilder b("tiny_cnn");
  int x = b.addInput("image", fb::DataType::F32, {1, 3, "h", "w"});
  int w = b.addConstant("conv1.weight", {8, 3, 3, 3}, RandomFloats(8 * 3 * 3 * 3, 1));
  int bias = b.addConstant("conv1.bias", {8}, RandomFloats(8, 2));
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.pads = {1, 1, 1, 1};
  int c = b.addOp(fb::OpType::Conv, "conv1", {x, w, bias}, {"conv1.out"}, conv)[0];
  int r = b.addOp(fb::OpType::Relu, "relu1", {c}, {"relu1.out"})[0];
  fb::PoolParamsT pool;
  pool.kernel_shape = {2, 2};
  pool.strides = {2, 2};
  int p = b.addOp(fb::OpType::MaxPool, "pool1", {r}, {"pool1.out"}, pool)[0];
  int g = b.addOp(fb::OpType::GlobalAveragePool, "gap", {p}, {"gap.out"})[0];
  fb::AxisParamsT flat;
  flat.axis = 1;
  int f = b.addOp(fb::OpType::Flatten, "flatten", {g}, {"flat.out"}, flat)[0];
  int fw = b.addConstant("fc.weight", {4, 8}, RandomFloats(4 * 8, 3));
  int fbias = b.addConstant("fc.bias", {4}, RandomFloats(4, 4));
  fb::GemmParamsT gemm;
  gemm.trans_b = true;
  int fc = b.addOp(fb::OpType::Gemm, "fc", {f, fw, fbias}, {"fc.out"}, gemm)[0];
  fb::AxisParamsT sm;
  sm.axis = -1;
  int probs = b.addOp(fb::OpType::Softmax, "softmax", {fc}, {"probs"}, sm)[0];
  b.addOutput(probs);
  return b;
}

namespace {
// The directories TempDir made, removed at exit (each ctest case is a
// process of its own: a run left thousands behind before).
struct TempDirs {
  std::mutex mu;
  std::vector<std::string> dirs;
  ~TempDirs() {
    for (const std::string& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
TempDirs& Made() {
  static TempDirs made;
  return made;
}
}  // namespace

std::string TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/kiln-test-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  TempDirs& made = Made();
  std::lock_guard<std::mutex> lock(made.mu);
  made.dirs.emplace_back(buf.data());
  return made.dirs.back();
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace kiln::test
