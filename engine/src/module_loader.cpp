// Host modules, the loading side (kiln_module_open & co. in kiln/module.h):
// dlopen the module, map its weights, allocate its activations and set its
// kernels up, so that kiln_module_execute only runs them.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "c_api_status.h"
#include "host_backend.h"
#include "kiln/module.h"
#include "model.h"

struct KilnModule {
  void* handle = nullptr;
  const KilnModuleInfo* info = nullptr;
  KilnModuleRunFn run = nullptr;
  std::shared_ptr<kiln::ByteRegion> weights;
  void* activations = nullptr;
  ~KilnModule() {
    std::free(activations);
    weights.reset();
    if (handle) dlclose(handle);
  }
};

namespace kiln {
namespace {

// Modules call the runtime (module_runtime.cpp) by name: whatever links the
// loader from libkiln.a links the runtime too (and exports it, -rdynamic).
__attribute__((used)) void* const kRuntime[] = {reinterpret_cast<void*>(&kiln_rt_prepare),
                                                reinterpret_cast<void*>(&kiln_rt_op),
                                                reinterpret_cast<void*>(&kiln_rt_release)};

std::string Beside(const std::string& path, const std::string& file) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? file : path.substr(0, slash + 1) + file;
}

StatusOr<std::unique_ptr<KilnModule>> Open(const char* path, const char* weights_path) {
  if (!path) return InvalidArgument("kiln_module_open: null path");
  auto m = std::make_unique<KilnModule>();
  dlerror();
  // A bare name is a file here, not a library for the loader's search path.
  const std::string file = std::strchr(path, '/') ? path : std::string("./") + path;
  m->handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->handle) {
    const char* why = dlerror();
    return Status(StatusCode::kIoError, StrFormat("module '%s' does not load: %s", path, why ? why : "dlopen failed"));
  }
  auto info_fn = reinterpret_cast<KilnModuleInfoFn>(dlsym(m->handle, "kiln_module_info"));
  m->run = reinterpret_cast<KilnModuleRunFn>(dlsym(m->handle, "kiln_module_run"));
  auto prepare = reinterpret_cast<KilnModulePrepareFn>(dlsym(m->handle, "kiln_module_prepare"));
  if (!info_fn || !m->run)
    return InvalidArgument("'%s' is not a Kiln module (no kiln_module_info / kiln_module_run)", path);
  m->info = info_fn();
  if (!m->info || m->info->abi_version != KILN_MODULE_ABI_VERSION)
    return InvalidArgument("module '%s' was made for module ABI %d, this libkiln runs ABI %d (compile it again)", path,
                           m->info ? m->info->abi_version : -1, KILN_MODULE_ABI_VERSION);
  const std::string weights = weights_path ? weights_path : Beside(path, m->info->weights_file ? m->info->weights_file : "");
  KILN_ASSIGN_OR_RETURN(m->weights, ByteRegion::MapFile(weights), "module '%s': its weights", path);
  if (m->weights->size() != m->info->weights_byte_size)
    return InvalidArgument("module '%s': weights '%s' have %zu bytes, the module was made with %llu", path,
                           weights.c_str(), m->weights->size(),
                           static_cast<unsigned long long>(m->info->weights_byte_size));
  m->weights->populate();
  m->activations = AllocateHostPool(m->info->activations_byte_size);  // as a session's host pool
  if (!m->activations)
    return OutOfMemory("module '%s': %zu bytes of activations", path, m->info->activations_byte_size);
  if (prepare && prepare(m->weights->data()) != KILN_OK)
    return InvalidArgument("module '%s': %s", path, kiln_last_error());
  return m;
}

}  // namespace
}  // namespace kiln

extern "C" {

KilnModule* kiln_module_open(const char* path, const char* weights_path) {
  auto m = kiln::Open(path, weights_path);
  if (!m.ok()) return CApiFail(m.status()), nullptr;
  return std::move(m).value().release();
}

const KilnModuleInfo* kiln_module_get_info(const KilnModule* module) { return module ? module->info : nullptr; }

KilnStatus kiln_module_execute(KilnModule* module, const void* const* inputs, void* const* outputs) {
  if (!module) return CApiFail(kiln::InvalidArgument("kiln_module_execute: null module"));
  if ((module->info->num_inputs > 0 && !inputs) || (module->info->num_outputs > 0 && !outputs))
    return CApiFail(kiln::InvalidArgument("kiln_module_execute: null inputs or outputs"));
  for (int k = 0; k < module->info->num_inputs; ++k)
    if (!inputs[k] && module->info->inputs[k].byte_size)
      return CApiFail(kiln::InvalidArgument("kiln_module_execute: input %d ('%s') is null", k, module->info->inputs[k].name));
  for (int k = 0; k < module->info->num_outputs; ++k)
    if (!outputs[k] && module->info->outputs[k].byte_size)
      return CApiFail(kiln::InvalidArgument("kiln_module_execute: output %d ('%s') is null", k, module->info->outputs[k].name));
  const int status = module->run(module->weights->data(), module->activations, inputs, outputs);
  return static_cast<KilnStatus>(status);
}

void kiln_module_close(KilnModule* module) { delete module; }

}  // extern "C"
