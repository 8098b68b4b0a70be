// QGemm's arm64 micro-kernel (qgemm.h): 8 x 8 with the Advanced SIMD int8
// dot product (sdot). B arrives offset to int8 (x ^ 0x80; the driver adds
// 128 * row_sum back). Each group of four k loads 8 columns x 4 bytes (two
// q registers) and 8 rows x 4 weights (two q registers); vdotq_laneq_s32
// multiplies a B register by one row's dword: 16 accumulators. The function
// carries its own +dotprod target and runs only where HWCAP_ASIMDDP holds.
#include "qgemm.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>

namespace kiln::qgemm_detail {
namespace {

__attribute__((target("arch=armv8.2-a+dotprod"))) void MicroNeonDot(int64_t kq, const int8_t* a, const uint8_t* b, int32_t* c) {
  int32x4_t acc[8][2];
  for (int r = 0; r < 8; ++r) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
  for (int64_t q = 0; q < kq; ++q, a += 32, b += 32) {
    const int8x16_t b0 = vreinterpretq_s8_u8(vld1q_u8(b)), b1 = vreinterpretq_s8_u8(vld1q_u8(b + 16));
    const int8x16_t a0 = vld1q_s8(a), a1 = vld1q_s8(a + 16);
    acc[0][0] = vdotq_laneq_s32(acc[0][0], b0, a0, 0);
    acc[0][1] = vdotq_laneq_s32(acc[0][1], b1, a0, 0);
    acc[1][0] = vdotq_laneq_s32(acc[1][0], b0, a0, 1);
    acc[1][1] = vdotq_laneq_s32(acc[1][1], b1, a0, 1);
    acc[2][0] = vdotq_laneq_s32(acc[2][0], b0, a0, 2);
    acc[2][1] = vdotq_laneq_s32(acc[2][1], b1, a0, 2);
    acc[3][0] = vdotq_laneq_s32(acc[3][0], b0, a0, 3);
    acc[3][1] = vdotq_laneq_s32(acc[3][1], b1, a0, 3);
    acc[4][0] = vdotq_laneq_s32(acc[4][0], b0, a1, 0);
    acc[4][1] = vdotq_laneq_s32(acc[4][1], b1, a1, 0);
    acc[5][0] = vdotq_laneq_s32(acc[5][0], b0, a1, 1);
    acc[5][1] = vdotq_laneq_s32(acc[5][1], b1, a1, 1);
    acc[6][0] = vdotq_laneq_s32(acc[6][0], b0, a1, 2);
    acc[6][1] = vdotq_laneq_s32(acc[6][1], b1, a1, 2);
    acc[7][0] = vdotq_laneq_s32(acc[7][0], b0, a1, 3);
    acc[7][1] = vdotq_laneq_s32(acc[7][1], b1, a1, 3);
  }
  for (int r = 0; r < 8; ++r) {
    vst1q_s32(c + r * 8, acc[r][0]);
    vst1q_s32(c + r * 8 + 4, acc[r][1]);
  }
}

const QKernel kNeonDot{8, 8, 4, false, &MicroNeonDot};

}  // namespace

const QKernel* NeonDotKernel() { return &kNeonDot; }

}  // namespace kiln::qgemm_detail

#endif
