// kiln-run --compare: recording two sessions op by op and finding the first
// op whose outputs differ.
#include "compare.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kiln/interpreter.h"
#include "support/backend_compare.h"
#include "support/test_models.h"

namespace kiln::test {
namespace {

StatusOr<std::vector<RecordedOp>> RecordTinyCnn(Interpreter* interp, ForwardType type) {
  ScheduleConfig config;
  config.type = type;
  KILN_ASSIGN_OR_RETURN(Session * s, interp->createSession(config));
  Tensor* in = s->getInput();
  KILN_RETURN_IF_ERROR(s->resizeTensor(in, {1, 3, 9, 7}));
  KILN_RETURN_IF_ERROR(s->resize());
  std::vector<float> x = RandomFloats(3 * 9 * 7, 5);
  auto host = Tensor::wrap({1, 3, 9, 7}, fb::DataType::F32, x.data());
  KILN_RETURN_IF_ERROR(in->copyFromHostTensor(*host));
  return RecordRun(s);
}

std::unique_ptr<Interpreter> TinyCnnInterpreter() {
  auto bytes = TinyCnn().finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto interp = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  return std::move(interp).value();
}

TEST(Compare, RecordsEveryOpInOrder) {
  auto interp = TinyCnnInterpreter();
  auto ops = RecordTinyCnn(interp.get(), ForwardType::kHost);
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  // Conv, Relu, MaxPool, GlobalAveragePool, Flatten, Gemm, Softmax.
  ASSERT_EQ(ops->size(), 7u);
  EXPECT_EQ((*ops)[0].op.type, "Conv");
  EXPECT_EQ((*ops)[6].op.type, "Softmax");
  for (size_t i = 1; i < ops->size(); ++i) EXPECT_GT((*ops)[i].op.index, (*ops)[i - 1].op.index);
  // The last op's output is a distribution.
  const RecordedTensor& probs = (*ops)[6].outputs.at(0);
  double sum = 0;
  for (double v : probs.values) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-5);
}

TEST(Compare, IdenticalRunsAgree) {
  auto interp = TinyCnnInterpreter();
  auto a = RecordTinyCnn(interp.get(), ForwardType::kHost);
  auto b = RecordTinyCnn(interp.get(), ForwardType::kHost);
  ASSERT_TRUE(a.ok() && b.ok());
  int compared = 0;
  auto d = FirstDivergence(*a, *b, 0.0, &compared);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_FALSE(d->has_value());
  EXPECT_EQ(compared, 7);
}

// A fault planted in one op's output is reported at that op, not later ones
// (which inherit it in a real run but here are left intact).
TEST(Compare, NamesTheFirstOpThatDiffers) {
  auto interp = TinyCnnInterpreter();
  auto ref = RecordTinyCnn(interp.get(), ForwardType::kHost);
  ASSERT_TRUE(ref.ok());
  std::vector<RecordedOp> test = *ref;
  for (int broken : {2, 4}) test[static_cast<size_t>(broken)].outputs[0].values[1] += 0.5;
  int compared = 0;
  auto d = FirstDivergence(test, *ref, 1e-3, &compared);
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->has_value());
  const Divergence& v = **d;
  EXPECT_EQ(v.test_op.op.type, "MaxPool");
  EXPECT_EQ(v.ops_compared, 3);
  EXPECT_EQ(v.worst_index, 1);
  EXPECT_NEAR(v.max_abs, 0.5, 1e-9);
  EXPECT_NEAR(v.test_value - v.ref_value, 0.5, 1e-9);
  EXPECT_TRUE(v.reason.empty());
  // Below the tolerance: no divergence.
  test = *ref;
  test[2].outputs[0].values[1] *= 1 + 1e-6;
  d = FirstDivergence(test, *ref, 1e-3, &compared);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->has_value());
}

TEST(Compare, ShapesAndNaNs) {
  RecordedOp a;
  a.op.index = 0;
  a.op.name = "n";
  a.outputs.push_back({"y", fb::DataType::F32, {2}, {1.0, NAN}});
  RecordedOp b = a;
  int compared = 0;
  auto d = FirstDivergence({a}, {b}, 1e-3, &compared);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->has_value()) << "NaN on both sides agrees";
  b.outputs[0].values[1] = 2.0;
  d = FirstDivergence({a}, {b}, 1e-3, &compared);
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_TRUE(std::isinf((*d)->error));
  b = a;
  b.outputs[0].shape = {1, 2};
  d = FirstDivergence({a}, {b}, 1e-3, &compared);
  ASSERT_TRUE(d.ok() && d->has_value());
  EXPECT_EQ((*d)->reason, "shape 2 vs 1x2");
  b = a;
  b.op.index = 5;
  EXPECT_FALSE(FirstDivergence({a}, {b}, 1e-3, &compared).ok());
}

#ifdef KILN_HAVE_VULKAN
// The real use: Vulkan against the host, every op on Vulkan, all agree.
TEST(Compare, VulkanAgreesWithHost) {
  KILN_REQUIRE_BACKEND(ForwardType::kVulkan);
  auto interp = TinyCnnInterpreter();
  auto vk = RecordTinyCnn(interp.get(), ForwardType::kVulkan);
  auto host = RecordTinyCnn(interp.get(), ForwardType::kHost);
  ASSERT_TRUE(vk.ok()) << vk.status().ToString();
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  for (const RecordedOp& op : *vk) EXPECT_EQ(op.op.backend, "vulkan") << op.op.name;
  int compared = 0;
  auto d = FirstDivergence(*vk, *host, 1e-4, &compared);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->has_value()) << (*d)->test_op.op.name << " error " << (*d)->error;
  EXPECT_EQ(compared, 7);
}
#endif

}  // namespace
}  // namespace kiln::test
