// How the reduce family's row kernels (reduce, reduce_arg, softmax,
// norm_stats) spread their rows, a row being the elements behind one result
// (see RowExecution in backends/gpu/ops/gpu_reduce.h):
//   * ROW_GROUP: one work group per row (rows folded into y past 65535
//     groups); its invocations stride over the row and a shared-memory tree
//     combines their partials. The group size is a power of two of at most
//     KILN_ROW_GROUP_MAX, so the shared arrays can have a fixed size.
//   * otherwise one invocation per row (KILN_GLOBAL_INDEX).
// In both cases a row is walked as RowLane(), RowLane() + RowStep(), ...
layout(constant_id = 3) const bool ROW_GROUP = false;

#define KILN_ROW_GROUP_MAX 256

uint RowIndex() { return ROW_GROUP ? gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x : KILN_GLOBAL_INDEX; }
uint RowLane() { return ROW_GROUP ? gl_LocalInvocationID.x : 0u; }
uint RowStep() { return ROW_GROUP ? gl_WorkGroupSize.x : 1u; }

// Bit patterns of the IEEE values GLSL has no literal for.
#define KILN_INF uintBitsToFloat(0x7f800000u)
#define KILN_NAN uintBitsToFloat(0x7fc00000u)
