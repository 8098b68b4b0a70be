// cpu_features.h. asimd is used by Sgemm's NEON kernel,
// asimddp by QGemm's NEON kernel (sdot); asimdhp, sve, i8mm and bf16 are
// reported, not used.
#include "cpu_features.h"

#include <cstdio>
#include <cstdlib>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
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

// One cache of sysfs's cpu0/cache/indexN: its level, whether it holds data
// (Data or Unified) and its size; false when the entry is missing.
bool SysfsCache(int index, int* level, bool* data, int64_t* bytes) {
  auto read = [&](const char* leaf, char* buf, int n) {
    char path[96];
    std::snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, leaf);
    FILE* f = std::fopen(path, "r");
    if (!f) return false;
    const bool ok = std::fgets(buf, n, f) != nullptr;
    std::fclose(f);
    return ok;
  };
  char lv[16], type[32], size[32];
  if (!read("level", lv, sizeof(lv)) || !read("type", type, sizeof(type)) || !read("size", size, sizeof(size)))
    return false;
  char* end = nullptr;
  int64_t v = std::strtoll(size, &end, 10);
  if (end && (*end == 'K' || *end == 'k')) v <<= 10;
  else if (end && *end == 'M') v <<= 20;
  else if (end && *end == 'G') v <<= 30;
  *level = std::atoi(lv);
  *data = type[0] == 'D' || type[0] == 'U';
  *bytes = v;
  return true;
}

CpuCaches DetectCaches() {
  CpuCaches c;
  auto take = [&](int level, int64_t bytes) {
    if (level == 1) c.l1d = bytes;
    else if (level == 2) c.l2 = bytes;
    else if (level == 3) c.l3 = bytes;
  };
  for (int i = 0; i < 8; ++i) {
    int level = 0;
    bool data = false;
    int64_t bytes = 0;
    if (!SysfsCache(i, &level, &data, &bytes)) break;
    if (data) take(level, bytes);
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (c.l2 == 0) {
    // Deterministic cache parameters: Intel's leaf 4, AMD's 0x8000001D
    // (same layout); a subleaf a cache until type 0.
    unsigned a, b, cx, d;
    const unsigned leaf = __get_cpuid_max(0x80000000u, nullptr) >= 0x8000001Du && __get_cpuid_count(0x8000001Du, 0, &a, &b, &cx, &d) && (a & 31u)
                              ? 0x8000001Du
                              : 4u;
    for (unsigned i = 0; i < 8 && __get_cpuid_count(leaf, i, &a, &b, &cx, &d); ++i) {
      const unsigned type = a & 31u;
      if (type == 0) break;
      if (type == 2) continue;  // instructions
      const int64_t bytes = int64_t{(b >> 22) + 1} * (((b >> 12) & 1023u) + 1) * ((b & 4095u) + 1) * (int64_t{cx} + 1);
      take(static_cast<int>((a >> 5) & 7u), bytes);
    }
  }
#endif
  return c;
}

std::string Bytes(int64_t v) {
  if (v >= (int64_t{1} << 20) && v % (int64_t{1} << 20) == 0) return std::to_string(v >> 20) + "M";
  return std::to_string(v >> 10) + "K";
}

}  // namespace

const CpuCaches& HostCaches() {
  static const CpuCaches caches = DetectCaches();
  return caches;
}

std::string HostCachesText() {
  const CpuCaches& c = HostCaches();
  std::string s;
  if (c.l1d) s += "L1d " + Bytes(c.l1d);
  if (c.l2) s += (s.empty() ? "L2 " : " L2 ") + Bytes(c.l2);
  if (c.l3) s += (s.empty() ? "L3 " : " L3 ") + Bytes(c.l3);
  return s.empty() ? "caches unknown" : s;
}

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

bool CpuHasFma() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool fma = __builtin_cpu_supports("fma");
  return fma;
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

bool CpuHasAvx512Bw() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool bw = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return bw;
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
