/* Compiled as C: kiln.h must be a valid C header. Runs the model
 * y = Relu(x + b) given as argv[1] (b zeros) on the host through the C API
 * and checks the result, then binds its output to its input as a streaming
 * state, then changes the weight b, writes it back, saves and reloads. */
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  KilnInterpreter* interp = kiln_interpreter_create_from_file(argv[1]);
  if (!interp) {
    fprintf(stderr, "load: %s\n", kiln_last_error());
    return 1;
  }
  KilnScheduleConfig config;
  kiln_schedule_config_init(&config);
  KilnSession* session = kiln_session_create(interp, &config);
  if (!session) {
    fprintf(stderr, "session: %s\n", kiln_last_error());
    return 1;
  }
  KilnTensor* in = kiln_session_input(session, NULL);
  int64_t shape[2] = {2, 3};
  if (kiln_session_resize_input(session, in, shape, 2) != KILN_OK || kiln_session_resize(session) != KILN_OK) {
    fprintf(stderr, "resize: %s\n", kiln_last_error());
    return 1;
  }
  float x[6] = {-1, 2, -3, 4, -5, 6}, y[6];
  if (kiln_tensor_copy_from_host(in, x, sizeof x, KILN_LAYOUT_NCHW) != KILN_OK) return 1;
  if (kiln_session_run(session) != KILN_OK) return 1;
  KilnTensor* out = kiln_session_output(session, NULL);
  if (kiln_tensor_rank(out) != 2 || kiln_tensor_dim(out, 1) != 3 || kiln_tensor_dtype(out) != KILN_F32) return 1;
  if (kiln_tensor_copy_to_host(out, y, sizeof y, KILN_LAYOUT_NCHW) != KILN_OK) return 1;
  for (int i = 0; i < 6; ++i)
    if (y[i] != (x[i] > 0 ? x[i] : 0)) return 1;
  /* A wrong buffer size is an error with a message. */
  if (kiln_tensor_copy_to_host(out, y, 4, KILN_LAYOUT_NCHW) != KILN_INVALID_ARGUMENT) return 1;
  if (strstr(kiln_last_error(), "24 bytes") == NULL) return 1;
  if (kiln_interpreter_create_from_file("/nonexistent.kiln") != NULL) return 1;
  /* Streaming state: y feeds x of the next run; a reset zeros x. */
  if (kiln_session_bind_state(session, "nope", "x") != KILN_NOT_FOUND) return 1;
  if (kiln_session_bind_state(session, "y", "x") != KILN_OK) return 1;
  if (kiln_session_run(session) != KILN_OK || kiln_session_run(session) != KILN_OK) return 1;
  if (kiln_tensor_copy_to_host(out, y, sizeof y, KILN_LAYOUT_NCHW) != KILN_OK || y[5] != 6) return 1;
  if (kiln_session_reset_state(session) != KILN_OK || kiln_session_run(session) != KILN_OK) return 1;
  if (kiln_tensor_copy_to_host(out, y, sizeof y, KILN_LAYOUT_NCHW) != KILN_OK) return 1;
  for (int i = 0; i < 6; ++i)
    if (y[i] != 0) return 1;
  /* Weights: b read, refused at a wrong size, set to 10s (y = Relu(0 + 10)
   * after a reset), written back, saved, reloaded. */
  float b[3] = {1, 1, 1}, tens[3] = {10, 10, 10};
  if (kiln_session_weight_byte_size(session, "b") != sizeof b) return 1;
  if (kiln_session_weight_byte_size(session, "nope") != 0 || strstr(kiln_last_error(), "nope") == NULL) return 1;
  if (kiln_session_get_weight(session, "b", b, sizeof b) != KILN_OK || b[0] != 0 || b[2] != 0) return 1;
  if (kiln_session_set_weight(session, "b", tens, 4) != KILN_INVALID_ARGUMENT) return 1;
  if (kiln_session_set_weight(session, "b", tens, sizeof tens) != KILN_OK) return 1;
  if (kiln_session_reset_state(session) != KILN_OK || kiln_session_run(session) != KILN_OK) return 1;
  if (kiln_tensor_copy_to_host(out, y, sizeof y, KILN_LAYOUT_NCHW) != KILN_OK) return 1;
  for (int i = 0; i < 6; ++i)
    if (y[i] != 10) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s.saved.kiln", argv[1]);
  if (kiln_interpreter_update_session_to_model(interp, session) != KILN_OK) return 1;
  if (kiln_interpreter_save_model(interp, path) != KILN_OK) {
    fprintf(stderr, "save: %s\n", kiln_last_error());
    return 1;
  }
  KilnInterpreter* saved = kiln_interpreter_create_from_file(path);
  KilnSession* s2 = saved ? kiln_session_create(saved, &config) : NULL;
  if (!s2) return 1;
  KilnTensor* in2 = kiln_session_input(s2, NULL);
  int64_t one_row[2] = {1, 3};
  float zeros[3] = {0, 0, 0}, y2[3];
  if (kiln_session_resize_input(s2, in2, one_row, 2) != KILN_OK || kiln_session_resize(s2) != KILN_OK) return 1;
  if (kiln_tensor_copy_from_host(in2, zeros, sizeof zeros, KILN_LAYOUT_NCHW) != KILN_OK) return 1;
  if (kiln_session_run(s2) != KILN_OK) return 1;
  if (kiln_tensor_copy_to_host(kiln_session_output(s2, NULL), y2, sizeof y2, KILN_LAYOUT_NCHW) != KILN_OK) return 1;
  if (y2[0] != 10 || y2[2] != 10) return 1;
  /* A bundle of that session: loads like a model, computes the same. */
  char bundle[4096];
  snprintf(bundle, sizeof bundle, "%s.kbundle", argv[1]);
  if (kiln_interpreter_save_bundle(saved, NULL, bundle) != KILN_INVALID_ARGUMENT) return 1;
  if (kiln_interpreter_save_bundle(saved, s2, bundle) != KILN_OK) {
    fprintf(stderr, "save_bundle: %s\n", kiln_last_error());
    return 1;
  }
  KilnInterpreter* bundled = kiln_interpreter_create_from_file(bundle);
  KilnSession* s3 = bundled ? kiln_session_create(bundled, &config) : NULL;
  float y3[3] = {0, 0, 0};
  if (!s3 || kiln_tensor_copy_from_host(kiln_session_input(s3, NULL), zeros, sizeof zeros, KILN_LAYOUT_NCHW) != KILN_OK ||
      kiln_session_run(s3) != KILN_OK ||
      kiln_tensor_copy_to_host(kiln_session_output(s3, NULL), y3, sizeof y3, KILN_LAYOUT_NCHW) != KILN_OK)
    return 1;
  if (y3[0] != 10 || y3[2] != 10) return 1;
  kiln_interpreter_destroy(bundled);
  remove(bundle);
  kiln_interpreter_destroy(saved);
  remove(path);
  /* After releaseModel there is nothing to write into; the session runs on. */
  kiln_interpreter_release_model(interp);
  if (kiln_interpreter_update_session_to_model(interp, session) == KILN_OK) return 1;
  if (strstr(kiln_last_error(), "releaseModel") == NULL) return 1;
  if (kiln_interpreter_save_model(interp, path) == KILN_OK) return 1;
  if (kiln_session_run(session) != KILN_OK) return 1;
  kiln_interpreter_destroy(interp);
  printf("c api ok\n");
  return 0;
}
