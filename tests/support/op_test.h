// OpTest: builds a one-op model, runs it through the real Interpreter and
// Session on a backend, and returns the outputs, for per-op tests that
// compare against a naive reference written in the test.
//
//   auto out = OpTest(fb::OpType::Add)
//                  .input("a", {2, 3}, a_values)
//                  .input("b", {3}, b_values)
//                  .run();
//   ASSERT_TRUE(out.ok()) << out.status().ToString();
//   ExpectNear(out->at(0).f32(), want, 1e-5f);
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"

namespace kiln::test {

struct OpResult {
  std::vector<int64_t> shape;
  fb::DataType dtype = fb::DataType::F32;
  std::vector<uint8_t> bytes;

  template <typename T>
  std::vector<T> as() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
  std::vector<float> f32() const { return as<float>(); }
  std::vector<int64_t> i64() const { return as<int64_t>(); }
  std::vector<int32_t> i32() const { return as<int32_t>(); }
  std::vector<uint8_t> u8() const { return bytes; }
};

class OpTest {
 public:
  explicit OpTest(fb::OpType type, std::string name = "op") : type_(type), name_(std::move(name)) {}

  // A graph input fed at run time.
  OpTest& input(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v);
  OpTest& input(const std::string& name, std::vector<int64_t> shape, fb::DataType dtype, const void* data,
                size_t bytes);
  OpTest& inputI64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v);
  OpTest& inputBool(const std::string& name, std::vector<int64_t> shape, const std::vector<uint8_t>& v);
  // A constant input stored in the model.
  OpTest& constant(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v);
  OpTest& constantI64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v);
  OpTest& constant(const std::string& name, std::vector<int64_t> shape, fb::DataType dtype, const void* data,
                   size_t bytes);
  // An optional input left out (-1).
  OpTest& missing();
  template <typename P>
  OpTest& params(P p) {
    params_.Set(std::move(p));
    return *this;
  }
  OpTest& outputs(int n) {
    num_outputs_ = n;
    return *this;
  }

  // Rounds every f32 input and constant to the nearest fp16 value (kept as
  // f32), so that an fp16-storage run and the host reference start from the
  // same numbers and a tolerance measures the kernel, not the input rounding.
  OpTest& roundF32InputsToHalf();

  // Where the op ran, filled by run().
  OpTest& capturePlacement(Placement* p) {
    placement_ = p;
    return *this;
  }

  StatusOr<std::vector<OpResult>> run(const ScheduleConfig& config = {}) const;

 private:
  struct In {
    std::string name;
    std::vector<int64_t> shape;
    fb::DataType dtype;
    std::vector<uint8_t> bytes;
    bool constant;
    bool missing;
  };
  fb::OpType type_;
  std::string name_;
  std::vector<In> inputs_;
  fb::OpParamsUnion params_;
  int num_outputs_ = 1;
  Placement* placement_ = nullptr;
};

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what = "");

// Row-major strides and index helpers for naive references.
std::vector<int64_t> Strides(const std::vector<int64_t>& shape);
int64_t Numel(const std::vector<int64_t>& shape);

}  // namespace kiln::test
