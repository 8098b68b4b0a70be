// Sampling ops on a GPU backend against the host (gpu_sample.cpp):
// GridSample in each mode with each padding, the grid reaching past the
// image so that padding decides (bicubic with reflection, align_corners
// off, among them). Small shapes: each case is a kernel build on OpenCL.
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
    ExpectSameAsHost(OpTest(fb::OpType::GridSample).input("x", {2, 3, 4, 5}, x).input("grid", {2, 3, 4, 2}, grid).params(p),
                     kGpu, kTol,
                     std::string("GridSample ") + fb::EnumNameResizeMode(c.mode) + " " + fb::EnumNameGridPadding(c.padding) +
                         (c.align ? " align_corners" : ""));
  }
}

}  // namespace
}  // namespace kiln::test
