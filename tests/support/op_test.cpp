#include "support/op_test.h"

#include <cmath>

#include "half.h"

namespace kiln::test {

OpTest& OpTest::input(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
  return input(name, std::move(shape), fb::DataType::F32, v.data(), v.size() * 4);
}
OpTest& OpTest::input(const std::string& name, std::vector<int64_t> shape, fb::DataType dtype, const void* data,
                      size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  inputs_.push_back({name, std::move(shape), dtype, std::vector<uint8_t>(p, p + bytes), false, false});
  return *this;
}
OpTest& OpTest::inputI64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return input(name, std::move(shape), fb::DataType::I64, v.data(), v.size() * 8);
}
OpTest& OpTest::inputBool(const std::string& name, std::vector<int64_t> shape, const std::vector<uint8_t>& v) {
  return input(name, std::move(shape), fb::DataType::BOOL, v.data(), v.size());
}
OpTest& OpTest::constant(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
  return constant(name, std::move(shape), fb::DataType::F32, v.data(), v.size() * 4);
}
OpTest& OpTest::constantI64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return constant(name, std::move(shape), fb::DataType::I64, v.data(), v.size() * 8);
}
OpTest& OpTest::constant(const std::string& name, std::vector<int64_t> shape, fb::DataType dtype, const void* data,
                         size_t bytes) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  inputs_.push_back({name, std::move(shape), dtype, std::vector<uint8_t>(p, p + bytes), true, false});
  return *this;
}
OpTest& OpTest::missing() {
  inputs_.push_back({"", {}, fb::DataType::F32, {}, false, true});
  return *this;
}

StatusOr<std::vector<OpResult>> OpTest::run(const ScheduleConfig& config) const {
  NetBuilder b(std::string("op_test_") + fb::EnumNameOpType(type_));
  std::vector<int> ins;
  for (const In& in : inputs_) {
    if (in.missing) {
      ins.push_back(-1);
    } else if (in.constant) {
      ins.push_back(b.addConstant(in.name, in.dtype, in.shape, in.bytes.data(), in.bytes.size()));
    } else {
      std::vector<Dim> dims(in.shape.begin(), in.shape.end());
      ins.push_back(b.addInput(in.name, in.dtype, dims));
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs_; ++i) outs.push_back("out" + std::to_string(i));
  for (int o : b.addOp(type_, name_, ins, outs, params_)) b.addOutput(o);
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  KILN_ASSIGN_OR_RETURN(Session * session, interp->createSession(config));
  if (placement_) *placement_ = session->placement();
  // Inputs that already have memory (all of them when the session resized at
  // creation; shape inputs always) are written first; if any had none, the
  // session is resized with the shape inputs' values and all are written.
  bool need_resize = false;
  for (int pass = 0; pass < 2; ++pass) {
    for (const In& in : inputs_) {
      if (in.missing || in.constant) continue;
      Tensor* t = session->getInput(in.name);
      if (!t) return Internal("no session input '%s'", in.name.c_str());
      if (pass == 0) KILN_RETURN_IF_ERROR(session->resizeTensor(t, in.shape));
      if (!t->hostData() && t->onHost() && !in.bytes.empty()) {
        need_resize = true;
        continue;
      }
      auto host = Tensor::wrap(in.shape, in.dtype, const_cast<uint8_t*>(in.bytes.data()));
      KILN_RETURN_IF_ERROR(t->copyFromHostTensor(*host));
    }
    if (!need_resize) break;
    KILN_RETURN_IF_ERROR(session->resize());
    need_resize = false;
  }
  KILN_RETURN_IF_ERROR(session->run());
  std::vector<OpResult> results;
  for (int i = 0; i < num_outputs_; ++i) {
    Tensor* t = session->getOutput("out" + std::to_string(i));
    OpResult r;
    r.shape = t->shape();
    r.dtype = t->dtype();
    r.bytes.resize(t->byteSize());
    auto host = Tensor::wrap(t->shape(), t->dtype(), r.bytes.data());
    KILN_RETURN_IF_ERROR(t->copyToHostTensor(host.get()));
    results.push_back(std::move(r));
  }
  return results;
}

OpTest& OpTest::roundF32InputsToHalf() {
  for (In& in : inputs_) {
    if (in.dtype != fb::DataType::F32) continue;
    for (size_t i = 0; i + 4 <= in.bytes.size(); i += 4) {
      float v;
      std::memcpy(&v, in.bytes.data() + i, 4);
      v = HalfToFloat(FloatToHalf(v));
      std::memcpy(in.bytes.data() + i, &v, 4);
    }
  }
  return *this;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok = std::fabs(got[i] - want[i]) <= tol * std::max(1.0f, std::fabs(want[i])) ||
              (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i];
    if (!ok && bad++ < 5) ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " values differ";
}

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace kiln::test
