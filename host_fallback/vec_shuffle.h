// Constant lane shuffles of GCC-style vectors (vector_size) that GCC and
// clang both build: GCC's __builtin_shuffle takes an index vector, clang's
// __builtin_shufflevector the indices as arguments (the fuzzing build is
// clang's). Two sources: index i < lanes picks a's lane i, lanes + i b's.
#pragma once

#include <cstdint>

namespace kiln {

typedef float VecF16 __attribute__((vector_size(64)));
typedef int32_t VecI16 __attribute__((vector_size(64)));
typedef float VecF8 __attribute__((vector_size(32)));
typedef int32_t VecI8 __attribute__((vector_size(32)));

}  // namespace kiln

#if defined(__clang__)
#define KILN_SHUFFLE16(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#define KILN_SHUFFLE8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define KILN_SHUFFLE16(a, b, ...) __builtin_shuffle(a, b, ::kiln::VecI16{__VA_ARGS__})
#define KILN_SHUFFLE8(a, b, ...) __builtin_shuffle(a, b, ::kiln::VecI8{__VA_ARGS__})
#endif
