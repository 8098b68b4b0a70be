// Helpers shared by the TFLite importer suites (tflite_test.cpp,
// tflite_densify_test.cpp): seeded values, NHWC <-> NCHW, writing a model to
// a temp file, importing and running it on the host, a naive NHWC conv.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>
#include <map>
#include <string>
#include <vector>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "support/op_test.h"

namespace kiln::test {

using Shape = std::vector<int32_t>;

inline std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.f) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(seed >> 8) / 8388608.f - 1.f);
  }
  return v;
}
inline size_t Count(const Shape& s) {
  size_t n = 1;
  for (int32_t d : s) n *= static_cast<size_t>(d);
  return n;
}
// NHWC values -> NCHW values.
inline std::vector<float> ToNchw(const std::vector<float>& v, const Shape& s) {
  std::vector<float> r(v.size());
  const int N = s[0], H = s[1], W = s[2], C = s[3];
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < H; ++h)
      for (int w = 0; w < W; ++w)
        for (int c = 0; c < C; ++c) r[((n * C + c) * H + h) * W + w] = v[((n * H + h) * W + w) * C + c];
  return r;
}
inline std::vector<int64_t> NchwShape(const Shape& s) { return {s[0], s[3], s[1], s[2]}; }

// A model file that is removed when the object goes (the tests wrote
// hundreds into the temp folder and left them there).
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  TempFile(TempFile&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  operator const std::string&() const { return path_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The file's name carries the process id: ctest runs tests of one binary
// in parallel processes, and two that wrote one path read each other's
// half-written file.
inline TempFile WriteTemp(const std::vector<uint8_t>& bytes, const std::string& name) {
  TempFile file(::testing::TempDir() + "/" + name + "." + std::to_string(::getpid()) + ".tflite");
  std::ofstream(file.path(), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return file;
}

struct Feed {
  std::vector<int64_t> shape;  // Kiln (NCHW) shape
  std::vector<float> values;   // in that layout
};

// Imports, runs on the host, returns every output by name.
inline StatusOr<std::map<std::string, OpResult>> RunModel(const std::vector<uint8_t>& tflite, const std::map<std::string, Feed>& in,
                                              const ConvertOptions& opt = {}, ConvertReport* report = nullptr) {
  const TempFile path = WriteTemp(tflite, ::testing::UnitTest::GetInstance()->current_test_info()->name());
  KILN_ASSIGN_OR_RETURN(NetBuilder b, ImportTflite(path, opt, report));
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  KILN_ASSIGN_OR_RETURN(Session * s, interp->createSession({}));
  for (const auto& [name, f] : in) {
    Tensor* t = s->getInput(name);
    if (!t) return NotFound("no input '%s'", name.c_str());
    if (t->shape() != f.shape) return InvalidArgument("input '%s' has another shape", name.c_str());
    auto host = Tensor::wrap(f.shape, fb::DataType::F32, const_cast<float*>(f.values.data()));
    KILN_RETURN_IF_ERROR(t->copyFromHostTensor(*host));
  }
  KILN_RETURN_IF_ERROR(s->run());
  std::map<std::string, OpResult> out;
  for (auto& [name, t] : s->getOutputAll()) {
    OpResult r;
    r.shape = t->shape();
    r.dtype = t->dtype();
    r.bytes.resize(t->byteSize());
    auto host = Tensor::wrap(t->shape(), t->dtype(), r.bytes.data());
    KILN_RETURN_IF_ERROR(t->copyToHostTensor(host.get()));
    out[name] = std::move(r);
  }
  return out;
}

// Naive NHWC convolution; w is OHWI (I = C / group), pads are TFLite's (SAME: begin = total / 2).
inline std::vector<float> ConvRef(const std::vector<float>& x, const Shape& xs, const std::vector<float>& w, const Shape& ws,
                           const std::vector<float>& bias, int stride, int dil, bool same, const Shape& ys,
                           int group = 1) {
  const int H = xs[1], W = xs[2], C = xs[3], O = ws[0], KH = ws[1], KW = ws[2], I = ws[3];
  const int OH = ys[1], OW = ys[2];
  const int pt = same ? std::max(0, ((OH - 1) * stride + (KH - 1) * dil + 1 - H) / 2) : 0;
  const int pl = same ? std::max(0, ((OW - 1) * stride + (KW - 1) * dil + 1 - W) / 2) : 0;
  std::vector<float> y(Count(ys));
  for (int oy = 0; oy < OH; ++oy)
    for (int ox = 0; ox < OW; ++ox)
      for (int o = 0; o < O; ++o) {
        const int g = o / (O / group);
        float acc = bias.empty() ? 0.f : bias[o];
        for (int ky = 0; ky < KH; ++ky)
          for (int kx = 0; kx < KW; ++kx) {
            int iy = oy * stride - pt + ky * dil, ix = ox * stride - pl + kx * dil;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
            for (int i = 0; i < I; ++i)
              acc += x[(iy * W + ix) * C + g * I + i] * w[((o * KH + ky) * KW + kx) * I + i];
          }
        y[(oy * OW + ox) * O + o] = acc;
      }
  return y;
}

}  // namespace kiln::test
