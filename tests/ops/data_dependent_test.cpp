// The ops whose output shapes depend on their input values (NonZero,
// Compress, Unique, NonMaxSuppression): planned from the values at resize,
// planned again at run when the values change; and ReverseSequence, Det,
// Einsum, the signal ops and the recurrent ops' bad inputs.
#include <cmath>

#include "kiln/format.h"
#include "kiln/interpreter.h"
#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

using test::ExpectNear;
using test::OpTest;

// NonZero on a graph input: the output's shape follows the values written,
// run after run, without the app calling resize again.
TEST(DataDependent, NonZeroPlansAgainWhenTheValuesChange) {
  NetBuilder b("nonzero");
  int x = b.addInput("x", fb::DataType::F32, {Dim(2), Dim(3)});
  int y = b.addOp(fb::OpType::NonZero, "nz", {x}, {"y"})[0];
  b.addOutput(y);
  auto bytes = b.finish();
  ASSERT_TRUE(bytes.ok());
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  auto sess = (*interp)->createSession({});
  ASSERT_TRUE(sess.ok()) << sess.status().ToString();
  Session* s = *sess;
  Tensor* in = s->getInput("x");
  auto write = [&](std::vector<float> v) {
    auto h = Tensor::wrap({2, 3}, fb::DataType::F32, v.data());
    ASSERT_TRUE(in->copyFromHostTensor(*h).ok());
  };
  write({0, 1, 0, 2, 0, 3});
  ASSERT_TRUE(s->resize().ok());
  ASSERT_TRUE(s->run().ok());
  Tensor* out = s->getOutput("y");
  EXPECT_EQ(out->shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::vector<int64_t>(out->host<int64_t>(), out->host<int64_t>() + 6), (std::vector<int64_t>{0, 1, 1, 1, 0, 2}));
  write({5, 0, 0, 0, 0, 0});
  ASSERT_TRUE(s->run().ok());
  out = s->getOutput("y");
  EXPECT_EQ(out->shape(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(std::vector<int64_t>(out->host<int64_t>(), out->host<int64_t>() + 2), (std::vector<int64_t>{0, 0}));
  write({0, 0, 0, 0, 0, 0});
  ASSERT_TRUE(s->run().ok());
  EXPECT_EQ(s->getOutput("y")->shape(), (std::vector<int64_t>{2, 0}));
}

TEST(DataDependent, CompressUniqueNms) {
  {
    fb::CompressParamsT p;
    p.axis = 1;
    p.has_axis = true;
    std::vector<uint8_t> cond = {1, 0, 1};
    auto out = OpTest(fb::OpType::Compress)
                   .input("x", {2, 3}, {1, 2, 3, 4, 5, 6})
                   .inputBool("c", {3}, cond)
                   .params(p)
                   .run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (std::vector<int64_t>{2, 2}));
    ExpectNear(out->at(0).f32(), {1, 3, 4, 6}, 0, "Compress");
  }
  {  // unsorted: the order of first occurrence
    fb::UniqueParamsT p;
    p.sorted = false;
    auto out = OpTest(fb::OpType::Unique).input("x", {6}, {2, 1, 1, 3, 4, 3}).params(p).outputs(4).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {2, 1, 3, 4}, 0, "Unique");
    EXPECT_EQ(out->at(1).i64(), (std::vector<int64_t>{0, 1, 3, 4}));
    EXPECT_EQ(out->at(2).i64(), (std::vector<int64_t>{0, 1, 1, 2, 3, 2}));
    EXPECT_EQ(out->at(3).i64(), (std::vector<int64_t>{1, 2, 2, 1}));
  }
  {  // two overlapping boxes and a far one, one class: the weaker overlap goes
    auto out = OpTest(fb::OpType::NonMaxSuppression)
                   .input("boxes", {1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11})
                   .input("scores", {1, 1, 3}, {0.9f, 0.8f, 0.7f})
                   .constantI64("max", {1}, {3})
                   .constant("iou", {1}, {0.5f})
                   .run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->at(0).shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(out->at(0).i64(), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
  }
}

TEST(DataDependent, ReverseSequenceDetEinsum) {
  {  // time-major [T=3, B=2], lengths {2, 3}
    auto out = OpTest(fb::OpType::ReverseSequence)
                   .input("x", {3, 2}, {1, 10, 2, 20, 3, 30})
                   .inputI64("len", {2}, {2, 3})
                   .run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {2, 30, 1, 20, 3, 10}, 0, "ReverseSequence");
    auto bad = OpTest(fb::OpType::ReverseSequence).input("x", {3, 2}, std::vector<float>(6)).inputI64("len", {2}, {4, 1}).run();
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("out of range"), std::string::npos) << bad.status().ToString();
  }
  {
    auto out = OpTest(fb::OpType::Det).input("x", {2, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0}).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {-2, -1}, 1e-6f, "Det");
  }
  {  // batched matmul with a transposed output, and the implicit form (trace)
    fb::EinsumParamsT p;
    p.equation = "bij,bjk->bki";
    auto out = OpTest(fb::OpType::Einsum).input("a", {1, 2, 2}, {1, 2, 3, 4}).input("b", {1, 2, 2}, {5, 6, 7, 8}).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {19, 43, 22, 50}, 0, "Einsum bmm");
    p.equation = "ii";
    out = OpTest(fb::OpType::Einsum).input("a", {2, 2}, {1, 2, 3, 4}).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {5}, 0, "Einsum trace");
    p.equation = "ij,jk->ik";
    auto bad = OpTest(fb::OpType::Einsum).input("a", {2, 3}, std::vector<float>(6)).input("b", {2, 2}, std::vector<float>(4)).params(p).run();
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("subscript 'j'"), std::string::npos) << bad.status().ToString();
  }
}

TEST(Signal, DftOfACosineAndWindows) {
  // x[t] = cos(2 pi t / 8): bins 1 and 7 hold 4, the rest 0.
  std::vector<float> x;
  for (int t = 0; t < 8; ++t) x.push_back(static_cast<float>(std::cos(2 * 3.14159265358979 * t / 8)));
  fb::DftParamsT p;
  auto out = OpTest(fb::OpType::DFT).input("x", {1, 8, 1}, x).params(p).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> want(16, 0.f);
  want[2] = 4;
  want[14] = 4;
  ExpectNear(out->at(0).f32(), want, 1e-5f, "DFT");
  fb::WindowParamsT w;
  out = OpTest(fb::OpType::HannWindow).constantI64("n", {}, {4}).params(w).run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectNear(out->at(0).f32(), {0, 0.5f, 1, 0.5f}, 1e-6f, "Hann periodic");
}

// One LSTM step of one unit against the equations, with a bias and initial
// states; then the shape errors.
TEST(Recurrent, LstmStepAndBadShapes) {
  auto sig = [](float v) { return 1.f / (1.f + std::exp(-v)); };
  fb::RnnParamsT p;
  p.hidden_size = 1;
  // W, R: gates i, o, f, c; B: Wb then Rb.
  std::vector<float> w = {0.5f, -0.25f, 0.75f, 1.f}, r = {0.1f, 0.2f, 0.3f, 0.4f}, bias = {0.1f, 0, 0, 0, 0, 0, 0.2f, 0};
  const float x = 2, h0 = 0.5f, c0 = -1;
  auto out = OpTest(fb::OpType::LSTM)
                 .input("x", {1, 1, 1}, {x})
                 .constant("w", {1, 4, 1}, w)
                 .constant("r", {1, 4, 1}, r)
                 .constant("b", {1, 8}, bias)
                 .missing()
                 .input("h0", {1, 1, 1}, {h0})
                 .input("c0", {1, 1, 1}, {c0})
                 .params(p)
                 .outputs(3)
                 .run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const float i = sig(w[0] * x + r[0] * h0 + 0.1f), o = sig(w[1] * x + r[1] * h0), f = sig(w[2] * x + r[2] * h0 + 0.2f);
  const float c = f * c0 + i * std::tanh(w[3] * x + r[3] * h0), h = o * std::tanh(c);
  ExpectNear(out->at(0).f32(), {h}, 1e-6f, "LSTM Y");
  ExpectNear(out->at(1).f32(), {h}, 1e-6f, "LSTM Y_h");
  ExpectNear(out->at(2).f32(), {c}, 1e-6f, "LSTM Y_c");

  auto bad = OpTest(fb::OpType::GRU).input("x", {1, 1, 2}, {1, 2}).constant("w", {1, 3, 1}, {1, 1, 1}).constant("r", {1, 3, 1}, {1, 1, 1}).params(p).run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("GRU: W [1,3,1]"), std::string::npos) << bad.status().ToString();
}

TEST(Sampling, RoiAlignRefusesABadBatchIndex) {
  fb::RoiAlignParamsT p;
  auto bad = OpTest(fb::OpType::RoiAlign)
                 .input("x", {1, 1, 4, 4}, std::vector<float>(16, 1.f))
                 .input("rois", {1, 4}, {0, 0, 2, 2})
                 .inputI64("idx", {1}, {3})
                 .params(p)
                 .run();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("batch index 3 is out of range"), std::string::npos) << bad.status().ToString();
  auto ok = OpTest(fb::OpType::RoiAlign)
                .input("x", {1, 1, 4, 4}, std::vector<float>(16, 2.f))
                .input("rois", {1, 4}, {0, 0, 2, 2})
                .inputI64("idx", {1}, {0})
                .params(p)
                .run();
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ExpectNear(ok->at(0).f32(), {2}, 1e-6f, "RoiAlign of a constant image");
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Hostile values and sizes in the v2 ops: a clear error or a defined
// result, never a cast of NaN or a huge value to an index, never hours of
// work within the memory limits.
TEST(HostileV2, ValuesAndWorkBounds) {
  {  // Einsum: a non-letter output subscript; work past the bound
    fb::EinsumParamsT p;
    p.equation = "ij->i\xff";
    auto bad = OpTest(fb::OpType::Einsum).input("a", {2, 2}, {1, 2, 3, 4}).params(p).run();
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("bad output subscript"), std::string::npos) << bad.status().ToString();
    p.equation = "i,j,k->";
    std::vector<float> big(4096, 1.f);
    auto work = OpTest(fb::OpType::Einsum).input("a", {4096}, big).input("b", {4096}, big).input("c", {4096}, big).params(p).run();
    ASSERT_FALSE(work.ok());
    EXPECT_NE(work.status().message().find("multiply-adds"), std::string::npos) << work.status().ToString();
  }
  {  // EyeLike with k far past the matrix: all zeros
    fb::EyeLikeParamsT p;
    p.k = INT64_MAX;
    auto out = OpTest(fb::OpType::EyeLike).input("x", {2, 3}, std::vector<float>(6)).params(p).run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), std::vector<float>(6, 0.f), 0, "EyeLike k = INT64_MAX");
  }
  {  // OneHot of NaN and huge float indices: rows of `off`
    auto out = OpTest(fb::OpType::OneHot)
                   .input("i", {3}, {std::nanf(""), 1e30f, 1.f})
                   .constantI64("depth", {}, {2})
                   .constant("values", {2}, {0.f, 1.f})
                   .run();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectNear(out->at(0).f32(), {0, 0, 0, 0, 0, 1}, 0, "OneHot of NaN");
  }
  {  // GridSample at NaN and huge coordinates: the zero padding
    fb::GridSampleParamsT p;
    for (auto mode : {fb::ResizeMode::Nearest, fb::ResizeMode::Linear, fb::ResizeMode::Cubic}) {
      p.mode = mode;
      auto out = OpTest(fb::OpType::GridSample)
                     .input("x", {1, 1, 2, 2}, {1, 2, 3, 4})
                     .input("g", {1, 1, 2, 2}, {std::nanf(""), 0.f, 1e30f, -1e30f})
                     .params(p)
                     .run();
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectNear(out->at(0).f32(), {0, 0}, 0, "GridSample far away");
    }
  }
  {  // NonMaxSuppression with a NaN box limit and NaN scores: nothing selected
    auto out = OpTest(fb::OpType::NonMaxSuppression)
                   .input("boxes", {1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1})
                   .input("scores", {1, 1, 2}, {std::nanf(""), 0.5f})
                   .constant("max", {1}, {std::nanf("")})
                   .run();
    ASSERT_FALSE(out.ok());  // max_output_boxes_per_class must be an integer tensor
    auto nan_score = OpTest(fb::OpType::NonMaxSuppression)
                         .input("boxes", {1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1})
                         .input("scores", {1, 1, 2}, {std::nanf(""), 0.5f})
                         .constantI64("max", {1}, {5})
                         .run();
    ASSERT_TRUE(nan_score.ok()) << nan_score.status().ToString();
    EXPECT_EQ(nan_score->at(0).i64(), (std::vector<int64_t>{0, 0, 1}));
  }
}

}  // namespace
}  // namespace kiln
