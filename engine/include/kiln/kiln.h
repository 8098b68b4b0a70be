/* Kiln C API: the Interpreter/Session API for apps that bind from C, Java/
 * Kotlin (JNI), Swift or C#.
 *
 * Errors: functions return KILN_OK or an error code, or NULL for handles;
 * kiln_last_error() then gives the message (thread-local, valid until the
 * next Kiln call on that thread).
 * Ownership: an interpreter owns its sessions (freed by
 * kiln_session_release or with the interpreter); a session owns its
 * tensors. Handles are not reference counted.
 * Thread-safety: as the C++ API: one thread at a time per interpreter and its
 * sessions; different interpreters are independent. */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct KilnInterpreter KilnInterpreter;
typedef struct KilnSession KilnSession;
typedef struct KilnTensor KilnTensor;

typedef enum {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,
  KILN_NOT_FOUND = 2,
  KILN_UNSUPPORTED = 3,
  KILN_OUT_OF_MEMORY = 4,
  KILN_IO_ERROR = 5,
  KILN_INTERNAL = 6,
  KILN_UNAVAILABLE = 7,
  KILN_ABORTED = 8,
} KilnStatus;

typedef enum { KILN_FORWARD_HOST = 0, KILN_FORWARD_VULKAN = 1, KILN_FORWARD_OPENCL = 2, KILN_FORWARD_AUTO = 3 } KilnForwardType;
typedef enum { KILN_PRECISION_NORMAL = 0, KILN_PRECISION_HIGH = 1, KILN_PRECISION_LOW = 2 } KilnPrecision;
/* Matches the engine's DataType (schema/kiln.fbs). */
typedef enum {
  KILN_F32 = 0, KILN_F16 = 1, KILN_BF16 = 2, KILN_I32 = 3, KILN_I64 = 4, KILN_I8 = 5, KILN_U8 = 6, KILN_BOOL = 7
} KilnDataType;
typedef enum { KILN_LAYOUT_NCHW = 0, KILN_LAYOUT_NHWC = 1 } KilnLayout;

typedef struct {
  KilnForwardType type;
  KilnForwardType backup_type;
  int num_thread;
  KilnPrecision precision;
} KilnScheduleConfig;

const char* kiln_last_error(void);
void kiln_schedule_config_init(KilnScheduleConfig* config); /* host, 1 thread, normal */

KilnInterpreter* kiln_interpreter_create_from_file(const char* path);
/* Copies the buffer; the caller keeps it. */
KilnInterpreter* kiln_interpreter_create_from_buffer(const void* data, size_t size);
void kiln_interpreter_destroy(KilnInterpreter* interpreter);

KilnSession* kiln_session_create(KilnInterpreter* interpreter, const KilnScheduleConfig* config);
KilnStatus kiln_session_release(KilnInterpreter* interpreter, KilnSession* session);
/* name NULL or "": the first input / output. */
KilnTensor* kiln_session_input(KilnSession* session, const char* name);
KilnTensor* kiln_session_output(KilnSession* session, const char* name);
KilnStatus kiln_session_resize_input(KilnSession* session, KilnTensor* input, const int64_t* shape, int rank);
KilnStatus kiln_session_resize(KilnSession* session);
KilnStatus kiln_session_run(KilnSession* session);
/* Streaming state (Session::bindState): after each run, output `output`
 * becomes input `input` for the next run, on the device. */
KilnStatus kiln_session_bind_state(KilnSession* session, const char* output, const char* input);
/* Zeros every bound input (a new stream). */
KilnStatus kiln_session_reset_state(KilnSession* session);

/* Weights (Session::getWeight / setWeight): constant `name` of the model's
 * graph as raw bytes in its own dtype and shape (kiln-inspect lists them).
 * kiln_session_weight_byte_size gives 0, and sets the error, when there is
 * no such weight. set_weight changes it for this session only, on every
 * backend holding it; `bytes` must equal the weight's size. */
size_t kiln_session_weight_byte_size(KilnSession* session, const char* name);
KilnStatus kiln_session_get_weight(KilnSession* session, const char* name, void* data, size_t bytes);
KilnStatus kiln_session_set_weight(KilnSession* session, const char* name, const void* data, size_t bytes);
/* Interpreter::updateSessionToModel: the session's changed weights into the
 * interpreter's model (sessions created later start from them). */
KilnStatus kiln_interpreter_update_session_to_model(KilnInterpreter* interpreter, KilnSession* session);
/* Interpreter::saveModel: the model as a self-contained .kiln file. */
KilnStatus kiln_interpreter_save_model(KilnInterpreter* interpreter, const char* path);
/* Interpreter::saveBundle: an ahead-of-time bundle of the resized session
 * (its host ops' packed weights; of a Vulkan or OpenCL session also the
 * driver's pipeline cache or program binaries for this device: make it on
 * the device that will run it, e.g. at install). Loads like a model. */
KilnStatus kiln_interpreter_save_bundle(KilnInterpreter* interpreter, KilnSession* session, const char* path);
/* Interpreter::releaseModel: no new sessions; existing ones keep running. */
void kiln_interpreter_release_model(KilnInterpreter* interpreter);
int kiln_tensor_rank(const KilnTensor* tensor);
int64_t kiln_tensor_dim(const KilnTensor* tensor, int axis);
KilnDataType kiln_tensor_dtype(const KilnTensor* tensor);
size_t kiln_tensor_byte_size(const KilnTensor* tensor);
/* Copies `bytes` (must equal kiln_tensor_byte_size) from / to host memory in
 * `layout` (NHWC converts the channel axis). */
KilnStatus kiln_tensor_copy_from_host(KilnTensor* tensor, const void* data, size_t bytes, KilnLayout layout);
KilnStatus kiln_tensor_copy_to_host(const KilnTensor* tensor, void* data, size_t bytes, KilnLayout layout);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H_ */
