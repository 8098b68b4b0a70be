// The C API (kiln/kiln.h) over the C++ Interpreter and Session.
#include "kiln/kiln.h"

#include <cstring>
#include <string>

#include "c_api_status.h"
#include "kiln/interpreter.h"

using kiln::Interpreter;
using kiln::Session;
using kiln::Status;
using kiln::Tensor;

struct KilnInterpreter {
  std::unique_ptr<Interpreter> impl;
};

namespace {

thread_local std::string g_last_error;

}  // namespace

KilnStatus CApiFail(const Status& s) {
  g_last_error = s.message();
  return static_cast<KilnStatus>(s.code());
}

namespace {

KilnStatus Fail(const Status& s) { return CApiFail(s); }

Session* AsSession(KilnSession* s) { return reinterpret_cast<Session*>(s); }
Tensor* AsTensor(KilnTensor* t) { return reinterpret_cast<Tensor*>(t); }
const Tensor* AsTensor(const KilnTensor* t) { return reinterpret_cast<const Tensor*>(t); }

std::vector<int64_t> HostShape(const Tensor& t, KilnLayout layout) {
  std::vector<int64_t> s = t.shape();
  if (layout == KILN_LAYOUT_NHWC && s.size() >= 3) {
    int64_t c = s[1];
    s.erase(s.begin() + 1);
    s.push_back(c);
  }
  return s;
}

}  // namespace

extern "C" {

const char* kiln_last_error(void) { return g_last_error.c_str(); }

void kiln_schedule_config_init(KilnScheduleConfig* c) {
  c->type = KILN_FORWARD_HOST;
  c->backup_type = KILN_FORWARD_HOST;
  c->num_thread = 1;
  c->precision = KILN_PRECISION_NORMAL;
}

KilnInterpreter* kiln_interpreter_create_from_file(const char* path) {
  if (!path) return Fail(kiln::InvalidArgument("null path")), nullptr;
  auto r = Interpreter::createFromFile(path);
  if (!r.ok()) return Fail(r.status()), nullptr;
  return new KilnInterpreter{std::move(r).value()};
}

KilnInterpreter* kiln_interpreter_create_from_buffer(const void* data, size_t size) {
  auto r = Interpreter::createFromBuffer(data, size, kiln::BufferOwnership::kCopy);
  if (!r.ok()) return Fail(r.status()), nullptr;
  return new KilnInterpreter{std::move(r).value()};
}

void kiln_interpreter_destroy(KilnInterpreter* i) { delete i; }

KilnSession* kiln_session_create(KilnInterpreter* i, const KilnScheduleConfig* c) {
  if (!i || !c) return Fail(kiln::InvalidArgument("null interpreter or config")), nullptr;
  kiln::ScheduleConfig config;
  config.type = static_cast<kiln::ForwardType>(c->type);
  config.backupType = static_cast<kiln::ForwardType>(c->backup_type);
  config.numThread = c->num_thread;
  config.precision = static_cast<kiln::Precision>(c->precision);
  auto s = i->impl->createSession(config);
  if (!s.ok()) return Fail(s.status()), nullptr;
  return reinterpret_cast<KilnSession*>(*s);
}

KilnStatus kiln_session_release(KilnInterpreter* i, KilnSession* s) {
  if (!i) return Fail(kiln::InvalidArgument("null interpreter"));
  Status st = i->impl->releaseSession(AsSession(s));
  return st.ok() ? KILN_OK : Fail(st);
}

KilnTensor* kiln_session_input(KilnSession* s, const char* name) {
  Tensor* t = s ? AsSession(s)->getInput(name ? name : "") : nullptr;
  if (!t) Fail(kiln::NotFound("no input '%s'", name ? name : ""));
  return reinterpret_cast<KilnTensor*>(t);
}

KilnTensor* kiln_session_output(KilnSession* s, const char* name) {
  Tensor* t = s ? AsSession(s)->getOutput(name ? name : "") : nullptr;
  if (!t) Fail(kiln::NotFound("no output '%s'", name ? name : ""));
  return reinterpret_cast<KilnTensor*>(t);
}

KilnStatus kiln_session_resize_input(KilnSession* s, KilnTensor* t, const int64_t* shape, int rank) {
  if (!s || !t || (rank > 0 && !shape) || rank < 0) return Fail(kiln::InvalidArgument("bad arguments"));
  Status st = AsSession(s)->resizeTensor(AsTensor(t), std::vector<int64_t>(shape, shape + rank));
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_session_resize(KilnSession* s) {
  if (!s) return Fail(kiln::InvalidArgument("null session"));
  Status st = AsSession(s)->resize();
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_session_run(KilnSession* s) {
  if (!s) return Fail(kiln::InvalidArgument("null session"));
  Status st = AsSession(s)->run();
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_session_bind_state(KilnSession* s, const char* output, const char* input) {
  if (!s || !output || !input) return Fail(kiln::InvalidArgument("kiln_session_bind_state: null argument"));
  Status st = AsSession(s)->bindState(output, input);
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_session_reset_state(KilnSession* s) {
  if (!s) return Fail(kiln::InvalidArgument("null session"));
  Status st = AsSession(s)->resetState();
  return st.ok() ? KILN_OK : Fail(st);
}

size_t kiln_session_weight_byte_size(KilnSession* s, const char* name) {
  if (!s || !name) return Fail(kiln::InvalidArgument("kiln_session_weight_byte_size: null argument")), 0;
  auto w = AsSession(s)->getWeight(name);
  if (!w.ok()) return Fail(w.status()), 0;
  return (*w)->byteSize();
}

KilnStatus kiln_session_get_weight(KilnSession* s, const char* name, void* data, size_t bytes) {
  if (!s || !name || (!data && bytes)) return Fail(kiln::InvalidArgument("kiln_session_get_weight: null argument"));
  auto w = AsSession(s)->getWeight(name);
  if (!w.ok()) return Fail(w.status());
  if (bytes != (*w)->byteSize())
    return Fail(kiln::InvalidArgument("kiln_session_get_weight '%s': %zu bytes for a weight of %zu", name, bytes,
                                      (*w)->byteSize()));
  if (bytes) std::memcpy(data, (*w)->hostData(), bytes);
  return KILN_OK;
}

KilnStatus kiln_session_set_weight(KilnSession* s, const char* name, const void* data, size_t bytes) {
  if (!s || !name || (!data && bytes)) return Fail(kiln::InvalidArgument("kiln_session_set_weight: null argument"));
  auto w = AsSession(s)->getWeight(name);  // its dtype and shape
  if (!w.ok()) return Fail(w.status());
  if (bytes != (*w)->byteSize())
    return Fail(kiln::InvalidArgument("kiln_session_set_weight '%s': %zu bytes for a weight of %zu", name, bytes,
                                      (*w)->byteSize()));
  auto value = Tensor::wrap((*w)->shape(), (*w)->dtype(), const_cast<void*>(data));
  Status st = AsSession(s)->setWeight(name, *value);
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_interpreter_update_session_to_model(KilnInterpreter* i, KilnSession* s) {
  if (!i) return Fail(kiln::InvalidArgument("null interpreter"));
  Status st = i->impl->updateSessionToModel(AsSession(s));
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_interpreter_save_model(KilnInterpreter* i, const char* path) {
  if (!i || !path) return Fail(kiln::InvalidArgument("kiln_interpreter_save_model: null argument"));
  Status st = i->impl->saveModel(path);
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_interpreter_save_bundle(KilnInterpreter* i, KilnSession* s, const char* path) {
  if (!i || !s || !path) return Fail(kiln::InvalidArgument("kiln_interpreter_save_bundle: null argument"));
  Status st = i->impl->saveBundle(AsSession(s), path);
  return st.ok() ? KILN_OK : Fail(st);
}

void kiln_interpreter_release_model(KilnInterpreter* i) {
  if (i) i->impl->releaseModel();
}

int kiln_tensor_rank(const KilnTensor* t) { return t ? AsTensor(t)->dimensions() : -1; }
int64_t kiln_tensor_dim(const KilnTensor* t, int axis) {
  if (!t || axis < 0 || axis >= AsTensor(t)->dimensions()) return -1;
  return AsTensor(t)->length(axis);
}
KilnDataType kiln_tensor_dtype(const KilnTensor* t) { return static_cast<KilnDataType>(AsTensor(t)->dtype()); }
size_t kiln_tensor_byte_size(const KilnTensor* t) { return t ? AsTensor(t)->byteSize() : 0; }

KilnStatus kiln_tensor_copy_from_host(KilnTensor* t, const void* data, size_t bytes, KilnLayout layout) {
  if (!t || !data) return Fail(kiln::InvalidArgument("null tensor or data"));
  Tensor* dst = AsTensor(t);
  if (bytes != dst->byteSize())
    return Fail(kiln::InvalidArgument("tensor '%s' takes %zu bytes, got %zu", dst->name().c_str(), dst->byteSize(), bytes));
  auto host = Tensor::wrap(HostShape(*dst, layout), dst->dtype(), const_cast<void*>(data),
                           layout == KILN_LAYOUT_NHWC ? kiln::DimensionType::kNHWC : kiln::DimensionType::kNCHW);
  Status st = dst->copyFromHostTensor(*host);
  return st.ok() ? KILN_OK : Fail(st);
}

KilnStatus kiln_tensor_copy_to_host(const KilnTensor* t, void* data, size_t bytes, KilnLayout layout) {
  if (!t || !data) return Fail(kiln::InvalidArgument("null tensor or data"));
  const Tensor* src = AsTensor(t);
  if (bytes != src->byteSize())
    return Fail(kiln::InvalidArgument("tensor '%s' has %zu bytes, buffer %zu", src->name().c_str(), src->byteSize(), bytes));
  auto host = Tensor::wrap(HostShape(*src, layout), src->dtype(), data,
                           layout == KILN_LAYOUT_NHWC ? kiln::DimensionType::kNHWC : kiln::DimensionType::kNCHW);
  Status st = src->copyToHostTensor(host.get());
  return st.ok() ? KILN_OK : Fail(st);
}

}  // extern "C"
