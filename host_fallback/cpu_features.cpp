// cpu_features.h. asimd is used by Sgemm's NEON kernel,
// asimddp by QGemm's NEON kernel (sdot); asimdhp, sve, i8mm and bf16 are
// reported, not used.
#include "cpu_features.h"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace kiln {

namespace {

void Add(std::string& s, bool have, const char* name) {
  if (!have) return;
  if (!s.empty()) s += ' ';
  s += name;
}

}  // namespace

std::string HostCpuFeatures() {
  std::string s;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  Add(s, __builtin_cpu_supports("avx2"), "avx2");
  Add(s, __builtin_cpu_supports("fma"), "fma");
  Add(s, __builtin_cpu_supports("avx512f"), "avx512f");
  Add(s, __builtin_cpu_supports("avx512vnni"), "avx512vnni");
#elif defined(__aarch64__) && defined(__linux__)
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  Add(s, hw & HWCAP_ASIMD, "asimd");
  Add(s, hw & HWCAP_ASIMDHP, "asimdhp");
  Add(s, hw & HWCAP_ASIMDDP, "asimddp");
  Add(s, hw & HWCAP_SVE, "sve");
#ifdef HWCAP2_I8MM
  Add(s, hw2 & HWCAP2_I8MM, "i8mm");
#endif
#ifdef HWCAP2_BF16
  Add(s, hw2 & HWCAP2_BF16, "bf16");
#endif
  (void)hw2;
#endif
  return s;
}

bool CpuHasNeon() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#elif defined(__aarch64__)
  return true;  // Advanced SIMD is part of the AArch64 base architecture
#else
  return false;
#endif
}

bool CpuHasDotProd() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#else
  return false;
#endif
}

}  // namespace kiln
