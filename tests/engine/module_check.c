/* Compiled as C: kiln/module.h must be a valid C header. A host module
 * (kiln-compile --emit-module) loaded with kiln_module_open and run on a
 * fixed input pattern gives the same bytes as a host session of its own
 * weights (the bundle beside it, through the C API) with the same threads.
 * usage: module_check MODULE.so [OTHER_WEIGHTS.kbundle]
 * OTHER_WEIGHTS: another module's bundle, which this module must refuse. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/module.h"

static void Fill(void* data, size_t bytes, KilnDataType dtype, int seed) {
  if (dtype == KILN_F32) {
    float* f = (float*)data;
    for (size_t i = 0; i < bytes / sizeof(float); ++i) f[i] = (float)sin(0.37 * (double)i + seed);
  } else {
    unsigned char* b = (unsigned char*)data;
    for (size_t i = 0; i < bytes; ++i) b[i] = (unsigned char)(i * 7 + (size_t)seed);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  KilnModule* m = kiln_module_open(argv[1], NULL);
  if (!m) {
    fprintf(stderr, "open: %s\n", kiln_last_error());
    return 1;
  }
  const KilnModuleInfo* info = kiln_module_get_info(m);
  if (info->abi_version != KILN_MODULE_ABI_VERSION || info->num_inputs < 1 || info->num_outputs < 1) return 1;

  /* The interpreted session of the module's own weights. */
  char bundle[4096];
  const char* slash = strrchr(argv[1], '/');
  snprintf(bundle, sizeof bundle, "%.*s%s", slash ? (int)(slash - argv[1] + 1) : 0, argv[1], info->weights_file);
  KilnInterpreter* interp = kiln_interpreter_create_from_file(bundle);
  if (!interp) {
    fprintf(stderr, "bundle: %s\n", kiln_last_error());
    return 1;
  }
  KilnScheduleConfig config;
  kiln_schedule_config_init(&config);
  config.num_thread = info->num_threads;
  KilnSession* session = kiln_session_create(interp, &config);
  if (!session) {
    fprintf(stderr, "session: %s\n", kiln_last_error());
    return 1;
  }

  const void* ins[16];
  void* outs[16];
  if (info->num_inputs > 16 || info->num_outputs > 16) return 1;
  for (int k = 0; k < info->num_inputs; ++k) {
    const KilnModuleTensorInfo* t = &info->inputs[k];
    void* data = malloc(t->byte_size ? t->byte_size : 1);
    Fill(data, t->byte_size, t->dtype, k);
    ins[k] = data;
    KilnTensor* in = kiln_session_input(session, t->name);
    if (!in || kiln_tensor_copy_from_host(in, data, t->byte_size, KILN_LAYOUT_NCHW) != KILN_OK) {
      fprintf(stderr, "input %s: %s\n", t->name, kiln_last_error());
      return 1;
    }
  }
  for (int k = 0; k < info->num_outputs; ++k) outs[k] = calloc(1, info->outputs[k].byte_size + 1);
  if (kiln_session_run(session) != KILN_OK) {
    fprintf(stderr, "session run: %s\n", kiln_last_error());
    return 1;
  }
  /* Twice: the second run must not depend on what the first left behind. */
  for (int run = 0; run < 2; ++run) {
    if (kiln_module_execute(m, ins, outs) != KILN_OK) {
      fprintf(stderr, "module run: %s\n", kiln_last_error());
      return 1;
    }
    for (int k = 0; k < info->num_outputs; ++k) {
      const KilnModuleTensorInfo* t = &info->outputs[k];
      KilnTensor* out = kiln_session_output(session, t->name);
      void* want = malloc(t->byte_size + 1);
      if (!out || kiln_tensor_copy_to_host(out, want, t->byte_size, KILN_LAYOUT_NCHW) != KILN_OK) {
        fprintf(stderr, "output %s: %s\n", t->name, kiln_last_error());
        return 1;
      }
      if (memcmp(want, outs[k], t->byte_size) != 0) {
        fprintf(stderr, "output %s: the module computes other bytes than the session (run %d)\n", t->name, run + 1);
        return 1;
      }
      free(want);
    }
  }
  /* A null input is refused by name. */
  const void* saved = ins[0];
  ins[0] = NULL;
  if (kiln_module_execute(m, ins, outs) != KILN_INVALID_ARGUMENT || !strstr(kiln_last_error(), info->inputs[0].name)) {
    fprintf(stderr, "a null input was not refused: %s\n", kiln_last_error());
    return 1;
  }
  ins[0] = saved;
  /* Another module's weights are refused (their size, or their stamp). */
  if (argc > 2) {
    KilnModule* other = kiln_module_open(argv[1], argv[2]);
    if (other || (!strstr(kiln_last_error(), "not the module's") && !strstr(kiln_last_error(), "was made with"))) {
      fprintf(stderr, "other weights not refused: %s\n", other ? "opened" : kiln_last_error());
      return 1;
    }
  }
  if (kiln_module_open("/nonexistent/x.so", NULL) || !strstr(kiln_last_error(), "does not load")) return 1;
  printf("module %s: %d input(s), %d output(s), %d thread(s): same bytes as the session\n", info->model_name,
         info->num_inputs, info->num_outputs, info->num_threads);
  kiln_module_close(m);
  kiln_interpreter_destroy(interp);
  return 0;
}
