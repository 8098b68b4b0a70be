/* Kiln host modules: a model compiled ahead of time into a shared object
 * (`kiln-compile MODEL --emit-module -o NAME.so`), Glow's "bundle" in
 * Kiln's terms.
 *
 * kiln-compile writes four files:
 *   NAME.so       the module, built from NAME.cpp;
 *   NAME.cpp      generated C++: the memory plan (every tensor's place in
 *                 the caller's activation buffer or in the weights) and the
 *                 kernel sequence, one call of a libkiln kernel per op;
 *   NAME.h        generated: the buffer sizes and the inputs' and outputs'
 *                 names, dtypes and shapes as constants;
 *   NAME.kbundle  the weights: a host bundle (the model's constants and the
 *                 packed forms its kernels use), read in place.
 *
 * A module exports two C functions:
 *   const KilnModuleInfo* kiln_module_info(void);
 *   int kiln_module_run(const void* weights, void* activations,
 *                       const void* const* inputs, void* const* outputs);
 * `weights`: NAME.kbundle's bytes (mapped or read, 64-byte aligned);
 * `activations`: activations_byte_size bytes, 64-byte aligned, owned by the
 * caller; `inputs` / `outputs`: one pointer per tensor, in the info's order.
 * kiln_module_run returns 0 (KILN_OK) or a KilnStatus, with
 * kiln_last_error() set. Its first call with a weights pointer sets up the
 * kernels (kiln_module_prepare does it ahead); runs of one module are
 * serialized. The module calls libkiln's kernels: the process must have
 * libkiln loaded (linked to libkiln.so, or to libkiln.a with its symbols
 * exported, as kiln-run is).
 *
 * The loader below does all of this: kiln_module_open maps the weights and
 * allocates the activations; kiln-run NAME.so runs a module like a model. */
#ifndef KILN_MODULE_H_
#define KILN_MODULE_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_MODULE_ABI_VERSION 1

typedef struct {
  const char* name;
  KilnDataType dtype;
  int rank;
  const int64_t* dims;
  size_t byte_size;
} KilnModuleTensorInfo;

typedef struct {
  int abi_version;             /* KILN_MODULE_ABI_VERSION of the libkiln that wrote it */
  const char* model_name;
  const char* weights_file;    /* the bundle it was made with, beside the module */
  uint64_t weights_byte_size;
  uint64_t weights_stamp;       /* the bundle's stamp (Bundle.stamp): made together */
  size_t activations_byte_size;
  int num_threads;
  int num_inputs;
  int num_outputs;
  const KilnModuleTensorInfo* inputs;
  const KilnModuleTensorInfo* outputs;
} KilnModuleInfo;

typedef const KilnModuleInfo* (*KilnModuleInfoFn)(void);
typedef int (*KilnModulePrepareFn)(const void* weights);
typedef int (*KilnModuleRunFn)(const void* weights, void* activations, const void* const* inputs,
                               void* const* outputs);

/* ---- Loading a module (libkiln) ---- */
typedef struct KilnModule KilnModule;

/* Opens module `path` (dlopen) and its weights: `weights_path`, or NULL for
 * the info's weights_file beside the module. Checks the ABI version and that
 * the weights are the ones the module was made with; sets the kernels up. */
KilnModule* kiln_module_open(const char* path, const char* weights_path);
const KilnModuleInfo* kiln_module_get_info(const KilnModule* module);
/* Runs the module: `inputs` / `outputs` in the info's order, each of its
 * byte_size, NCHW as the model declares them. */
KilnStatus kiln_module_execute(KilnModule* module, const void* const* inputs, void* const* outputs);
void kiln_module_close(KilnModule* module);

/* ---- The runtime generated modules call (libkiln; not for apps) ---- */
typedef struct {
  int32_t graph_tensor;     /* index in the bundle's net */
  int32_t dtype;            /* KilnDataType / the schema's DataType */
  int32_t rank;
  const int64_t* dims;
  const void* value;        /* a value computed at compile time (shapes), or NULL */
  size_t value_byte_size;
  int64_t weights_offset;   /* a constant: its bytes' offset in the weights; else -1 */
} KilnRtTensor;

typedef struct {
  int32_t op;               /* index in the bundle's net */
  int32_t num_inputs;
  const int32_t* inputs;    /* plan tensors (KilnRtPlan.tensors), -1 for an absent optional */
  int32_t num_outputs;
  const int32_t* outputs;
} KilnRtStep;

typedef struct {
  int abi_version;
  int num_threads;
  int precision;            /* KilnPrecision */
  uint64_t weights_byte_size;
  uint64_t weights_stamp;
  int num_tensors;
  const KilnRtTensor* tensors;
  int num_steps;
  const KilnRtStep* steps;
} KilnRtPlan;

typedef struct KilnRtProgram KilnRtProgram;

/* The kernels of `plan` set up over `weights` (NULL: failed, see
 * kiln_last_error()). */
KilnRtProgram* kiln_rt_prepare(const KilnRtPlan* plan, const void* weights);
/* Runs step `step` with its tensors at these addresses (the plan's order). */
KilnStatus kiln_rt_op(KilnRtProgram* program, int step, const void* const* inputs, void* const* outputs);
void kiln_rt_release(KilnRtProgram* program);

#ifdef __cplusplus
}
#endif

#endif /* KILN_MODULE_H_ */
