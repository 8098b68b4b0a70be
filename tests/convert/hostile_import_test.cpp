// Hostile ONNX and TFLite models: each failure class the importers once
// crashed or hung on (uncaught exceptions, protobuf CHECKs, allocations sized
// from declared dims, overflowing products, out-of-bounds reads, quadratic
// passes) must now give a Status naming the node and the problem.
#include <gtest/gtest.h>

#include <fstream>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "kiln/passes.h"
#include "convert/onnx_model_util.h"
#include "onnx/onnx.pb.h"
#include "support/test_models.h"
#include "tflite/tflite_builder.h"

namespace kiln {
namespace {

onnx::ModelProto NewModel(int opset) { return test::NewOnnxModel(opset); }

void AddInput(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims) {
  auto* tt = g->add_input();
  tt->set_name(name);
  auto* t = tt->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& type, std::vector<std::string> in,
                         std::vector<std::string> out, const std::string& name = "") {
  return test::AddOnnxNode(g, type, std::move(in), std::move(out), name);
}

// Imports from memory (weights_dir for external data), runs the passes and
// loads the result: the whole way kiln-convert takes.
Status Convert(const onnx::ModelProto& m, const std::string& weights_dir = "") {
  std::string bytes;
  m.SerializeToString(&bytes);
  auto b = ImportOnnxBuffer(bytes.data(), bytes.size(), ConvertOptions{}, nullptr, weights_dir);
  if (!b.ok()) return b.status();
  PassReport passes;
  KILN_RETURN_IF_ERROR(OptimizeNet(b->net(), &passes));
  auto out = b->finish();
  if (!out.ok()) return out.status();
  return Interpreter::createFromBuffer(out->data(), out->size()).status();
}

void ExpectError(const Status& s, const std::string& want) {
  ASSERT_FALSE(s.ok()) << "expected an error containing: " << want;
  EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
}

TEST(HostileOnnx, NodesWithoutTheirInputs) {
  for (int opset : {11, 13}) {
    for (const char* type : {"Dropout", "Softmax", "LogSoftmax", "Relu", "Conv", "Concat"}) {
      onnx::ModelProto m = NewModel(opset);
      AddInput(m.mutable_graph(), "x", {2, 3});
      AddNode(m.mutable_graph(), type, {}, {"y"}, "bad");
      m.mutable_graph()->add_output()->set_name("y");
      Status s = Convert(m);
      ASSERT_FALSE(s.ok()) << type;
      EXPECT_NE(s.message().find("node 0 'bad' (" + std::string(type) + ")"), std::string::npos) << s.message();
    }
  }
}

TEST(HostileOnnx, EmptyInputNameForARequiredInput) {
  onnx::ModelProto m = NewModel(13);
  AddInput(m.mutable_graph(), "x", {2, 3});
  AddNode(m.mutable_graph(), "Add", {"", "x"}, {"y"}, "add");
  m.mutable_graph()->add_output()->set_name("y");
  ExpectError(Convert(m), "Add input 0 is required but missing");
}

TEST(HostileOnnx, ConstantWithoutOutputAndNodeWithoutOutputs) {
  onnx::ModelProto m = NewModel(13);
  auto* c = AddNode(m.mutable_graph(), "Constant", {}, {}, "c");
  auto* a = c->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(1.f);
  ExpectError(Convert(m), "Constant must have one named output");

  onnx::ModelProto r = NewModel(13);
  AddInput(r.mutable_graph(), "x", {2});
  AddNode(r.mutable_graph(), "Relu", {"x"}, {}, "relu");
  ExpectError(Convert(r), "Relu has 1 to 1 outputs, the node names 0");
}

TEST(HostileOnnx, ExternalDataFieldsThatAreNotNumbersOrOutOfRange) {
  const std::string dir = test::TempDir();
  std::ofstream(dir + "/w.bin", std::ios::binary).write("0123456789abcdef", 16);
  struct Case {
    const char* offset;
    const char* length;
    const char* want;
  };
  for (const Case& c : {Case{"abc", "16", "external data offset 'abc' is not a number"},
                        Case{"0", "99999999999999999999999", "is not a number"},
                        Case{"18446744073709551615", "16", "is outside 'w.bin'"},
                        Case{"8", "16", "is outside 'w.bin' (16 bytes)"},
                        Case{"-1", "16", "is not a number"}}) {
    onnx::ModelProto m = NewModel(13);
    auto* g = m.mutable_graph();
    AddInput(g, "x", {4});
    auto* init = g->add_initializer();
    init->set_name("w");
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(4);
    init->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<const char*, const char*>{"location", "w.bin"}, {"offset", c.offset},
                        {"length", c.length}}) {
      auto* e = init->add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    AddNode(g, "Add", {"x", "w"}, {"y"}, "add");
    g->add_output()->set_name("y");
    ExpectError(Convert(m, dir), c.want);
  }
  // From memory with no directory: refused, not read from the working directory.
  onnx::ModelProto m = NewModel(13);
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = init->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  ExpectError(Convert(m), "in a model read from memory");
}

// Tensors declaring 2^36 to 2^40 elements with no data used to be allocated
// (std::bad_alloc); dims whose product wraps used to overflow.
TEST(HostileOnnx, HugeOrWrappingDeclaredDims) {
  struct Case {
    std::vector<int64_t> dims;
    const char* want;
  };
  for (const Case& c : {Case{{int64_t{1} << 40}, "0 values for 1099511627776 elements"},
                        Case{{1 << 18, 1 << 18}, "0 values for 68719476736 elements"},
                        Case{{int64_t{1} << 32, int64_t{1} << 32}, "overflows"},
                        Case{{int64_t{1} << 62, 4}, "overflows"},
                        Case{{-3, 2}, "negative dim"}}) {
    for (bool as_constant : {false, true}) {
      onnx::ModelProto m = NewModel(13);
      auto* g = m.mutable_graph();
      AddInput(g, "x", {1});
      onnx::TensorProto* t;
      if (as_constant) {
        auto* n = AddNode(g, "Constant", {}, {"w"}, "const");
        auto* a = n->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        t = a->mutable_t();
      } else {
        t = g->add_initializer();
      }
      t->set_name("w");
      t->set_data_type(onnx::TensorProto::FLOAT);
      for (int64_t d : c.dims) t->add_dims(d);
      AddNode(g, "Add", {"x", "w"}, {"y"}, "add");
      g->add_output()->set_name("y");
      ExpectError(Convert(m), c.want);
    }
  }
}

TEST(HostileOnnx, IntAttributesOutOfInt32Range) {
  onnx::ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {1, 1, 4, 4});
  auto* n = AddNode(g, "MaxPool", {"x"}, {"y"}, "pool");
  auto* a = n->add_attribute();
  a->set_name("kernel_shape");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(int64_t{1} << 33);
  a->add_ints(2);
  g->add_output()->set_name("y");
  ExpectError(Convert(m), "attribute kernel_shape: value 8589934592 is out of the int32 range");
}

// 200,000 nodes: RemoveIdentity used to rebuild its index for every Identity
// (40,000 nodes took 147 s). The chain must convert and keep its meaning.
TEST(HostileOnnx, LongChainConverts) {
  onnx::ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {4});
  std::string prev = "x";
  const int kNodes = 200000;
  for (int i = 0; i < kNodes; ++i) {
    std::string out = i + 1 == kNodes ? "y" : "t" + std::to_string(i);
    AddNode(g, i % 50 == 0 ? "Neg" : "Identity", {prev}, {out});
    prev = out;
  }
  g->add_output()->set_name("y");
  std::string bytes;
  m.SerializeToString(&bytes);
  auto b = ImportOnnxBuffer(bytes.data(), bytes.size(), ConvertOptions{}, nullptr);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  PassReport passes;
  ASSERT_TRUE(OptimizeNet(b->net(), &passes).ok());
  EXPECT_EQ(b->net().ops.size(), static_cast<size_t>(kNodes / 50)) << passes.toString();
}

// TFLite: a conv whose weights come from a DEQUANTIZE of data of another rank
// used to read past the shape (heap-buffer-overflow in PermuteDims); an
// operator with too few inputs used to rely on a caught std::out_of_range.
TEST(HostileTflite, WeightsOfAnotherRankAndMissingInputs) {
  namespace tfl = tflite;
  using test::B;
  {
    test::TfliteBuilder t;
    std::vector<uint16_t> half(54, 0x3c00);
    int x = t.tensor("x", {1, 4, 4, 3}), y = t.tensor("y", {1, 4, 4, 2});
    int w = t.tensor("w_f16", {54}, tfl::kFloat16, test::TfliteBuilder::Bytes(half));
    int wf = t.tensor("w_f32", {2, 3, 3, 3});
    t.op(tfl::DEQUANTIZE, {w}, {wf});
    t.op(tfl::CONV_2D, {x, wf, -1}, {y}, tfl::kConv2DOptions, {B(tfl::opt::kPadding, tfl::kSame)});
    t.io({x}, {y});
    auto bytes = t.finish();
    auto r = ImportTfliteBuffer(bytes.data(), bytes.size(), ConvertOptions{}, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("constant data of rank 1 where rank 4 is declared"), std::string::npos)
        << r.status().message();
  }
  for (int32_t code : {int32_t{tfl::CONV_2D}, int32_t{tfl::STRIDED_SLICE}, int32_t{tfl::ADD}}) {
    test::TfliteBuilder t;
    int x = t.tensor("x", {1, 4, 4, 3}), y = t.tensor("y", {1, 4, 4, 3});
    t.op(code, {x}, {y});
    t.io({x}, {y});
    auto bytes = t.finish();
    auto r = ImportTfliteBuffer(bytes.data(), bytes.size(), ConvertOptions{}, nullptr);
    ASSERT_FALSE(r.ok()) << code;
    EXPECT_NE(r.status().message().find("has 1 inputs, needs"), std::string::npos) << r.status().message();
  }
  {  // a required input given as -1
    test::TfliteBuilder t;
    int x = t.tensor("x", {1, 4}), y = t.tensor("y", {1, 4});
    t.op(tfl::ADD, {x, -1}, {y});
    t.io({x}, {y});
    auto bytes = t.finish();
    auto r = ImportTfliteBuffer(bytes.data(), bytes.size(), ConvertOptions{}, nullptr);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("input 1 is required but missing"), std::string::npos) << r.status().message();
  }
}

// Control flow: a branch reading a name no enclosing graph has, a branch
// whose outputs disagree in count with the other's, and a Loop body that
// declares fewer inputs than the op gives it.
TEST(HostileOnnx, BrokenControlFlow) {
  auto make_if = [](const std::string& then_reads, bool extra_output) {
    onnx::ModelProto m = NewModel(13);
    onnx::GraphProto* g = m.mutable_graph();
    auto* c = g->add_input();
    c->set_name("c");
    c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
    c->mutable_type()->mutable_tensor_type()->mutable_shape();
    AddInput(g, "x", {2});
    auto* n = AddNode(g, "If", {"c"}, {"y"}, "branch");
    auto* then_attr = n->add_attribute();
    then_attr->set_name("then_branch");
    then_attr->set_type(onnx::AttributeProto::GRAPH);
    AddNode(then_attr->mutable_g(), "Relu", {then_reads}, {"t"});
    then_attr->mutable_g()->add_output()->set_name("t");
    if (extra_output) then_attr->mutable_g()->add_output()->set_name("t");
    auto* else_attr = n->add_attribute();
    else_attr->set_name("else_branch");
    else_attr->set_type(onnx::AttributeProto::GRAPH);
    AddNode(else_attr->mutable_g(), "Neg", {"x"}, {"e"});
    else_attr->mutable_g()->add_output()->set_name("e");
    g->add_output()->set_name("y");
    return m;
  };
  EXPECT_TRUE(Convert(make_if("x", false)).ok());
  ExpectError(Convert(make_if("nope", false)), "input 0 'nope' is not produced before this node");
  ExpectError(Convert(make_if("x", true)), "then_branch has 2 outputs, else_branch 1");

  onnx::ModelProto m = NewModel(13);
  onnx::GraphProto* g = m.mutable_graph();
  AddInput(g, "x", {2});
  auto* loop = AddNode(g, "Loop", {"", "", "x"}, {"y"}, "loop");
  auto* body = loop->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  body->mutable_g()->add_input()->set_name("i");
  AddNode(body->mutable_g(), "Identity", {"i"}, {"o"});
  body->mutable_g()->add_output()->set_name("o");
  g->add_output()->set_name("y");
  ExpectError(Convert(m), "declares 1 inputs; the op gives it 3");
}

}  // namespace
}  // namespace kiln
