// What the host CPU offers the host backend's kernels, detected at run time
// (x86-64: cpuid through __builtin_cpu_supports; arm64 Linux: the kernel's
// hardware capabilities, getauxval(AT_HWCAP / AT_HWCAP2)).
#pragma once

#include <string>

namespace kiln {

// The features the host kernels could use, space-separated, in a fixed
// order: "avx2 fma avx512f avx512vnni" on x86-64; "asimd asimdhp asimddp sve i8mm bf16"
// on arm64 (asimdhp: fp16 arithmetic, asimddp: int8 dot product), each only
// when present; "" elsewhere. Shown in HostBackend::deviceName().
std::string HostCpuFeatures();

// Advanced SIMD (NEON) on an arm64 CPU (HWCAP_ASIMD); false on every other
// architecture. Sgemm's NEON kernel runs only when this holds.
bool CpuHasNeon();

// The Advanced SIMD int8 dot product (sdot/udot, HWCAP_ASIMDDP) on an arm64
// Linux CPU; false elsewhere. QGemm's NEON kernel runs only when this holds.
bool CpuHasDotProd();

}  // namespace kiln
