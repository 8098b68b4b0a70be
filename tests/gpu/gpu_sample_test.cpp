// Sampling ops on a GPU backend against the host (gpu_sample.cpp):
// GridSample in each mode with each padding, the grid reaching past the
// image so that padding decides (bicubic with reflection, align_corners
// off, among them); RoiAlign in max and avg modes, adaptive and fixed
// sampling grids, both half-pixel conventions, ROIs partly outside the
// image and i64 batch indices fed at run time, and the zeros of indices
// out of range. Small shapes: each case is a kernel build on OpenCL.
#include <cmath>

#include "support/backend_compare.h"

namespace kiln::test {
namespace {

const ForwardType kGpu = TestGpu();
constexpr float kTol = 1e-5f;

TEST(GpuSample, GridSample) {
  KILN_REQUIRE_BACKEND(kGpu);
  using Mode = fb::ResizeMode;
  using Padding = fb::GridPadding;
  struct Case {
    Mode mode;
    Padding padding;
    bool align;
  };
  const Case cases[] = {{Mode::Cubic, Padding::Reflection, false}, {Mode::Cubic, Padding::Border, true},
                        {Mode::Linear, Padding::Zeros, false},     {Mode::Linear, Padding::Reflection, true},
                        {Mode::Nearest, Padding::Border, false}};
  const std::vector<float> x = Random(2 * 3 * 4 * 5, -2, 2, 31);
  const std::vector<float> grid = Random(2 * 3 * 4 * 2, -3.2f, 3.2f, 32);  // reflected more than once
  for (const Case& c : cases) {
    fb::GridSampleParamsT p;
    p.mode = c.mode;
    p.padding = c.padding;
    p.align_corners = c.align;
    const std::string what = std::string("GridSample ") + fb::EnumNameResizeMode(c.mode) + " " +
                             fb::EnumNameGridPadding(c.padding) + (c.align ? " align_corners" : "");
    ExpectSameAsHost(OpTest(fb::OpType::GridSample).input("x", {2, 3, 4, 5}, x).input("grid", {2, 3, 4, 2}, grid).params(p),
                     kGpu, kTol, what);
  }
}

TEST(GpuSample, RoiAlign) {
  KILN_REQUIRE_BACKEND(kGpu);
  struct Case {
    bool max_mode;
    int ratio;
    bool half_pixel;
    float scale;
  };
  const Case cases[] = {{true, 0, true, 1.f}, {false, 2, false, 0.5f}, {false, 0, true, 1.f}};
  const std::vector<float> x = Random(2 * 3 * 6 * 7, -3, 1, 41);  // some bins all negative
  // (x1, y1, x2, y2): inside, past the bottom-right edge, past the top-left.
  const std::vector<float> rois = {0.5f, 1.f, 5.5f, 4.2f, 3.f, 2.5f, 9.f, 8.f, -1.5f, -0.8f, 2.f, 3.5f};
  for (const Case& c : cases) {
    fb::RoiAlignParamsT p;
    p.max_mode = c.max_mode;
    p.output_height = 3;
    p.output_width = 2;
    p.sampling_ratio = c.ratio;
    p.half_pixel = c.half_pixel;
    p.spatial_scale = c.scale;
    ExpectSameAsHost(OpTest(fb::OpType::RoiAlign)
                         .input("x", {2, 3, 6, 7}, x)
                         .input("rois", {3, 4}, rois)
                         .inputI64("batch_indices", {3}, {1, 0, 1})
                         .params(p),
                     kGpu, kTol,
                     std::string("RoiAlign ") + (c.max_mode ? "max" : "avg") + " ratio " + std::to_string(c.ratio) +
                         (c.half_pixel ? " half_pixel" : " output_half_pixel"));
  }
}

// Batch indices outside [0, N) (the host reports an error, as does a box
// that is not finite): zeros on the GPU, never a read out of bounds.
TEST(GpuSample, RoiAlignBadIndices) {
  KILN_REQUIRE_BACKEND(kGpu);
  fb::RoiAlignParamsT p;
  p.output_height = 2;
  p.output_width = 2;
  Placement placement;
  ScheduleConfig c;
  c.type = kGpu;
  c.backupType = ForwardType::kHost;
  auto got = OpTest(fb::OpType::RoiAlign)
                 .input("x", {2, 1, 3, 3}, Random(18, 1, 2, 51))
                 .input("rois", {3, 4}, {0.f, 0.f, 2.f, 2.f, 0.f, 0.f, 2.f, 2.f, 0.f, 0.f, std::nanf(""), 2.f})
                 .inputI64("batch_indices", {3}, {2, -1, 0})
                 .params(p)
                 .capturePlacement(&placement)
                 .run(c);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (const OpPlacement& op : placement.ops) EXPECT_EQ(op.backend, ForwardTypeName(kGpu)) << op.reason;
  for (float v : (*got)[0].f32()) EXPECT_EQ(v, 0.f);
}

}  // namespace
}  // namespace kiln::test
