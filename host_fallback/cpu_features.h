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

// A fused multiply-add in hardware (x86-64: FMA3; arm64: always), so that
// std::fma in a vectorized loop is one instruction, not a library call.
bool CpuHasFma();

// AVX-512 F, BW (byte and word ops) and VL (their 128/256-bit forms) on an
// x86-64 CPU; false elsewhere. The host's byte kernels in AVX-512 run only
// when this holds.
bool CpuHasAvx512Bw();

// The data caches the host's first core sees, in bytes, 0 where unknown:
// Linux sysfs (/sys/devices/system/cpu/cpu0/cache), else on x86-64 cpuid's
// cache leaves (4 on Intel, 0x8000001D on AMD). l2 is one core's (or its
// cluster's), l3 the shared last level. Read once; kernels size their
// blocks from these rather than from the core the code was tuned on.
struct CpuCaches {
  int64_t l1d = 0, l2 = 0, l3 = 0;
};
const CpuCaches& HostCaches();
// "L1d 48K L2 2M L3 300M" (for kiln-kernelbench and the device name).
std::string HostCachesText();

}  // namespace kiln
