// KILN_SIMD_CLONES: put before a plain-loop kernel to have the compiler build
// it three times, for AVX-512, for AVX2 + FMA (x86-64-v3) and for the
// baseline, and pick one when the library loads by the CPU's features
// (function multi-versioning through an ifunc). It suits loops that the
// compiler vectorizes by itself (elementwise, strided rows); hand-written
// kernels with intrinsics live in the per-ISA files (gemm_avx512.cpp ...).
// Expands to nothing where multi-versioning is unavailable (non-x86, non-ELF).
//
// The call goes through an indirect jump: call such a function once per
// plane or per row block, not once per element.
#pragma once

// Not under ThreadSanitizer: the ifunc resolvers run before its runtime is
// set up, and their instrumented code crashed every test binary at load.
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__SANITIZE_THREAD__)
#define KILN_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define KILN_SIMD_CLONES
#endif

// The same for function templates, which clang cannot multi-version: there
// (the fuzzing build) they are built for the baseline only.
#if defined(__clang__)
#define KILN_SIMD_CLONES_TEMPLATE
#else
#define KILN_SIMD_CLONES_TEMPLATE KILN_SIMD_CLONES
#endif
