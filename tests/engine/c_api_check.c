/* Compiled as C: kiln.h must be a valid C header. Runs a Relu model given as
 * argv[1] on the host through the C API and checks the result, then binds
 * its output to its input as a streaming state. */
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
  kiln_interpreter_destroy(interp);
  printf("c api ok\n");
  return 0;
}
