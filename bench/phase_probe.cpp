// phase_probe: is this machine slowing down by phases, and what slows?
//
// Times three loops one after another, again and again: an AVX-512 FMA
// chain bound by the core's arithmetic, a scalar multiply-add chain bound
// by latency alone, and a 64 MB read bound by memory. Where all three slow
// together by about the same factor with no steal time in /proc/stat, the
// core's clock (or a neighbour on its execution units) is what changed, not
// Kiln; compute-bound code loses the most. Pair it with `kiln-bench
// --times FILE`, which writes each run's time in order.
//
//   g++ -O2 -mavx2 bench/phase_probe.cpp -o /tmp/phase_probe && /tmp/phase_probe 400
//
// Prints a line an iteration (ms of each loop), then each loop's spread and
// how much the other two slowed in the iterations where it was 1.3x its
// fastest.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

__attribute__((target("avx512f,fma"))) float FmaLoop(long n) {
  __m512 a[8];
  for (int i = 0; i < 8; ++i) a[i] = _mm512_set1_ps(1.0f + static_cast<float>(i) * 1e-7f);
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < n; ++i)
    for (int j = 0; j < 8; ++j) a[j] = _mm512_fmadd_ps(a[j], m, c);
  float lanes[16], s = 0;
  for (int j = 0; j < 8; ++j) {
    _mm512_storeu_ps(lanes, a[j]);
    for (float v : lanes) s += v;
  }
  return s;
}

long Chain(long n) {
  volatile long seed = 1;
  long y = seed;
  for (long i = 0; i < n; ++i) y = y * 3 + 1;
  return y;
}

float Stream(const std::vector<float>& v) {
  __m256 s = _mm256_setzero_ps();
  for (size_t i = 0; i + 8 <= v.size(); i += 8) s = _mm256_add_ps(s, _mm256_loadu_ps(&v[i]));
  float o[8];
  _mm256_storeu_ps(o, s);
  return o[0];
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  if (!__builtin_cpu_supports("avx512f")) {
    std::fprintf(stderr, "phase_probe: needs AVX-512\n");
    return 2;
  }
  std::vector<float> big(16 << 20, 1.0f);
  std::vector<double> t[3];
  double sink = 0;
  for (int it = 0; it < iterations; ++it) {
    auto s = Clock::now();
    sink += FmaLoop(400000);
    t[0].push_back(Since(s));
    s = Clock::now();
    sink += static_cast<double>(Chain(20000000));
    t[1].push_back(Since(s));
    s = Clock::now();
    sink += Stream(big);
    t[2].push_back(Since(s));
    std::printf("%4d fma %.2f chain %.2f stream %.2f\n", it, t[0].back(), t[1].back(), t[2].back());
  }
  const char* names[3] = {"fma", "chain", "stream"};
  double fastest[3];
  for (int k = 0; k < 3; ++k) fastest[k] = *std::min_element(t[k].begin(), t[k].end());
  for (int k = 0; k < 3; ++k) {
    std::vector<double> v = t[k];
    std::sort(v.begin(), v.end());
    double slowed[3] = {0, 0, 0};
    int n = 0;
    for (size_t i = 0; i < t[k].size(); ++i)
      if (t[k][i] > 1.3 * fastest[k]) {
        ++n;
        for (int o = 0; o < 3; ++o) slowed[o] += t[o][i] / fastest[o];
      }
    std::printf("%-6s min %.2f median %.2f p90 %.2f max %.2f ms; %d iterations at 1.3x its min, where fma %.2fx chain "
                "%.2fx stream %.2fx\n",
                names[k], v.front(), v[v.size() / 2], v[v.size() * 9 / 10], v.back(), n, n ? slowed[0] / n : 0,
                n ? slowed[1] / n : 0, n ? slowed[2] / n : 0);
  }
  return sink == 42.0 ? 1 : 0;
}
