// TFLite WHILE and IF through the importer, run on the host: a WHILE whose
// condition compares a counter with an input, an IF on a bool input; and
// subgraph references that are out of range or recursive.
#include <cmath>

#include "tflite/tflite_builder.h"
#include "tflite/tflite_test_util.h"

namespace kiln::test {
namespace {

// main(x[2], n, flag) { (i, n, acc, x) = WHILE(0, n, 0, x) { i < n } { i + 1, n, 2 acc + x, x };
//                       y = IF(flag, acc) { -acc } else { |acc| } }
std::vector<uint8_t> WhileIfModel(int cond_graph = 1) {
  TfliteBuilder t;
  const int x = t.tensor("x", {2}), n = t.tensor("n", {}, tflite::kInt32), flag = t.tensor("flag", {}, tflite::kBool);
  const int i0 = t.constI32("i0", {}, {0}), acc0 = t.constF32("acc0", {2}, {0.f, 0.f});
  const int i_f = t.tensor("i_f", {}, tflite::kInt32), n_f = t.tensor("n_f", {}, tflite::kInt32);
  const int acc_f = t.tensor("acc_f", {2}), x_f = t.tensor("x_f", {2}), y = t.tensor("y", {2});
  t.op(tflite::WHILE, {i0, n, acc0, x}, {i_f, n_f, acc_f, x_f}, tflite::kWhileOptions,
       {I(tflite::opt::kCondGraph, cond_graph), I(tflite::opt::kBodyGraph, 2)});
  t.op(tflite::IF, {flag, acc_f}, {y}, tflite::kIfOptions, {I(tflite::opt::kThenGraph, 3), I(tflite::opt::kElseGraph, 4)});
  t.io({x, n, flag}, {y});

  t.subgraph("cond");  // 1
  {
    const int i = t.tensor("i", {}, tflite::kInt32), m = t.tensor("n", {}, tflite::kInt32);
    const int a = t.tensor("acc", {2}), xx = t.tensor("x", {2}), c = t.tensor("c", {}, tflite::kBool);
    t.op(tflite::LESS, {i, m}, {c});
    t.io({i, m, a, xx}, {c});
  }
  t.subgraph("body");  // 2
  {
    const int i = t.tensor("i", {}, tflite::kInt32), m = t.tensor("n", {}, tflite::kInt32);
    const int a = t.tensor("acc", {2}), xx = t.tensor("x", {2});
    const int one = t.constI32("one", {}, {1}), two = t.constF32("two", {1}, {2.f});
    const int i2 = t.tensor("i2", {}, tflite::kInt32), a2 = t.tensor("a2", {2}), a3 = t.tensor("a3", {2});
    t.op(tflite::ADD, {i, one}, {i2}, tflite::kAddOptions, {});
    t.op(tflite::MUL, {a, two}, {a2}, tflite::kMulOptions, {});
    t.op(tflite::ADD, {a2, xx}, {a3}, tflite::kAddOptions, {});
    t.io({i, m, a, xx}, {i2, m, a3, xx});
  }
  t.subgraph("then");  // 3
  {
    const int a = t.tensor("a", {2}), r = t.tensor("neg", {2});
    t.op(tflite::NEG, {a}, {r});
    t.io({a}, {r});
  }
  t.subgraph("else");  // 4
  {
    const int a = t.tensor("a", {2}), r = t.tensor("abs", {2});
    t.op(tflite::ABS, {a}, {r});
    t.io({a}, {r});
  }
  t.use(0);
  return t.finish();
}

// The converted model on the host, with n and flag as given.
StatusOr<std::vector<float>> RunWhileIf(const std::vector<uint8_t>& model, const std::vector<float>& x, int32_t n, bool flag) {
  const TempFile path = WriteTemp(model, "while_if");
  KILN_ASSIGN_OR_RETURN(NetBuilder b, ImportTflite(path, {}, nullptr));
  KILN_ASSIGN_OR_RETURN(auto bytes, b.finish());
  KILN_ASSIGN_OR_RETURN(auto interp, Interpreter::createFromBuffer(bytes.data(), bytes.size()));
  KILN_ASSIGN_OR_RETURN(Session * s, interp->createSession({}));
  uint8_t f = flag ? 1 : 0;
  KILN_RETURN_IF_ERROR(s->getInput("n")->copyFromHostTensor(*Tensor::wrap({}, fb::DataType::I32, &n)));
  KILN_RETURN_IF_ERROR(s->getInput("flag")->copyFromHostTensor(*Tensor::wrap({}, fb::DataType::BOOL, &f)));
  KILN_RETURN_IF_ERROR(s->getInput("x")->copyFromHostTensor(*Tensor::wrap({2}, fb::DataType::F32, const_cast<float*>(x.data()))));
  KILN_RETURN_IF_ERROR(s->run());
  std::vector<float> y(2);
  KILN_RETURN_IF_ERROR(s->getOutput("y")->copyToHostTensor(Tensor::wrap({2}, fb::DataType::F32, y.data()).get()));
  return y;
}

TEST(TfliteControlFlow, WhileThenIf) {
  const std::vector<float> x = {1.5f, -0.25f};
  for (int32_t n : {0, 1, 4}) {
    for (bool flag : {true, false}) {
      auto y = RunWhileIf(WhileIfModel(), x, n, flag);
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      std::vector<float> acc = {0.f, 0.f};
      for (int32_t i = 0; i < n; ++i)
        for (size_t k = 0; k < 2; ++k) acc[k] = 2 * acc[k] + x[k];
      for (size_t k = 0; k < 2; ++k) EXPECT_EQ((*y)[k], flag ? -acc[k] : std::fabs(acc[k])) << "n " << n << " k " << k;
    }
  }
}

TEST(TfliteControlFlow, BadSubgraphReferences) {
  auto r = RunWhileIf(WhileIfModel(/*cond_graph=*/9), {1, 2}, 1, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("subgraph 9 does not exist"), std::string::npos) << r.status().message();
  r = RunWhileIf(WhileIfModel(/*cond_graph=*/0), {1, 2}, 1, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("subgraph 0 runs itself"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace kiln::test
