// ONNX importer: models built here with the protobuf classes, converted,
// checked for structure and run on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kiln/convert.h"
#include "kiln/interpreter.h"
#include "convert/onnx_model_util.h"
#include "onnx/onnx.pb.h"
#include "support/op_test.h"
#include "support/test_models.h"

namespace kiln {
namespace {

onnx::ValueInfoProto* AddInput(onnx::GraphProto* g, const std::string& name, std::vector<std::string> dims) {
  auto* v = g->add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (const std::string& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
  return v;
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& type, std::vector<std::string> in,
                         std::vector<std::string> out, const std::string& name = "") {
  return test::AddOnnxNode(g, type, std::move(in), std::move(out), name);
}

std::string Write(const onnx::ModelProto& m, const std::string& dir) {
  std::string path = dir + "/model.onnx";
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

onnx::ModelProto NewModel(int opset) { return test::NewOnnxModel(opset); }

TEST(OnnxImport, ExternalInitializerSymbolicDimsAndDefaults) {
  std::string dir = test::TempDir();
  onnx::ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {"batch", "4"});
  // w: [4] in an external file at offset 16.
  std::vector<float> w = {0.5f, -1.f, 2.f, 3.f};
  {
    std::ofstream f(dir + "/w.bin", std::ios::binary);
    std::vector<char> pad(16, 0);
    f.write(pad.data(), 16);
    f.write(reinterpret_cast<const char*>(w.data()), 16);
  }
  auto* init = g->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(4);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char* k, const std::string& v) {
    auto* e = init->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "w.bin");
  kv("offset", "16");
  kv("length", "16");
  AddNode(g, "Mul", {"x", "w"}, {"xw"}, "mul");
  auto* lr = AddNode(g, "LeakyRelu", {"xw"}, {"y"}, "leaky");  // alpha defaults to 0.01
  (void)lr;
  g->add_output()->set_name("y");

  ConvertReport report;
  Status s = ConvertFile(Write(m, dir), dir + "/m.kiln", ConvertOptions{}, &report);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(report.opset, 13);
  EXPECT_EQ(report.ops_in, 2);
  EXPECT_EQ(report.weight_bytes, 16u);

  auto interp = Interpreter::createFromFile(dir + "/m.kiln");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  const fb::Tensor* x = (*interp)->net().tensors()->Get((*interp)->net().inputs()->Get(0));
  ASSERT_EQ(x->shape()->size(), 2u);
  EXPECT_EQ(x->shape()->Get(0)->size(), -1);
  EXPECT_EQ(x->shape()->Get(0)->symbol()->str(), "batch");
  Session* sess = *(*interp)->createSession({});
  ASSERT_TRUE(sess->resizeTensor(sess->getInput("x"), {3, 4}).ok());
  ASSERT_TRUE(sess->resize().ok());
  std::vector<float> xv = test::RandomFloats(12, 3);
  auto hx = Tensor::wrap({3, 4}, fb::DataType::F32, xv.data());
  ASSERT_TRUE(sess->getInput("x")->copyFromHostTensor(*hx).ok());
  ASSERT_TRUE(sess->run().ok());
  std::vector<float> want;
  for (int i = 0; i < 12; ++i) {
    float v = xv[i] * w[i % 4];
    want.push_back(v >= 0 ? v : 0.01f * v);
  }
  test::ExpectNear(std::vector<float>(sess->getOutput()->host<float>(), sess->getOutput()->host<float>() + 12), want,
                   1e-6f);
}

TEST(OnnxImport, UnsupportedOpsAreListedWithCountsAndNames) {
  std::string dir = test::TempDir();
  onnx::ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {"3"});
  AddNode(g, "StringNormalizer", {"x"}, {"a"}, "nz1");
  AddNode(g, "Relu", {"x"}, {"r"}, "relu");
  AddNode(g, "StringNormalizer", {"r"}, {"b"}, "nz2");
  AddNode(g, "TfIdfVectorizer", {"x"}, {"c"}, "tfidf");
  g->add_output()->set_name("c");
  Status s = ConvertFile(Write(m, dir), dir + "/m.kiln", ConvertOptions{}, nullptr);
  ASSERT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("StringNormalizer x2: 'nz1' 'nz2'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("TfIdfVectorizer x1: 'tfidf'"), std::string::npos) << s.message();

  // Kept as Custom ops, the session names them when no backend can run them.
  ConvertOptions keep;
  keep.allow_unsupported = true;
  ConvertReport report;
  Status kept = ConvertFile(Write(m, dir), dir + "/m.kiln", keep, &report);
  ASSERT_TRUE(kept.ok()) << kept.ToString();
  EXPECT_EQ(report.unsupported.at("StringNormalizer"), 2);
  auto interp = Interpreter::createFromFile(dir + "/m.kiln");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  auto sess = (*interp)->createSession({});
  ASSERT_FALSE(sess.ok());
  // Only 'tfidf' feeds the output, so dead-code removal leaves it alone.
  EXPECT_NE(sess.status().message().find("op 0 'tfidf' (TfIdfVectorizer): no backend can run it (host: the host backend has "
                                         "no TfIdfVectorizer kernel)"),
            std::string::npos)
      << sess.status().message();
}

TEST(OnnxImport, NodesOutOfOrderAreSortedAndCyclesNamed) {
  // y = relu(x) * 2 + 1 written with the consumers first.
  std::string dir = test::TempDir();
  onnx::ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {"4"});
  AddNode(g, "Add", {"r2", "one"}, {"y"}, "add");
  AddNode(g, "Mul", {"r", "two"}, {"r2"}, "mul");
  AddNode(g, "Relu", {"x"}, {"r"}, "relu");
  for (auto [name, v] : {std::pair<const char*, float>{"one", 1.f}, {"two", 2.f}}) {
    auto* c = g->add_initializer();
    c->set_name(name);
    c->set_data_type(onnx::TensorProto::FLOAT);
    c->add_float_data(v);
  }
  g->add_output()->set_name("y");
  ASSERT_TRUE(ConvertFile(Write(m, dir), dir + "/m.kiln", ConvertOptions{}, nullptr).ok());
  auto interp = Interpreter::createFromFile(dir + "/m.kiln");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  Session* sess = *(*interp)->createSession({});
  std::vector<float> xv = {-1, 0.5f, 2, -3};
  auto hx = Tensor::wrap({4}, fb::DataType::F32, xv.data());
  ASSERT_TRUE(sess->getInput("x")->copyFromHostTensor(*hx).ok());
  ASSERT_TRUE(sess->run().ok());
  test::ExpectNear(std::vector<float>(sess->getOutput()->host<float>(), sess->getOutput()->host<float>() + 4),
                   {1, 2, 5, 1}, 0);

  // a -> b -> a: an error naming both nodes, not a dangling input.
  onnx::ModelProto cyc = NewModel(13);
  auto* cg = cyc.mutable_graph();
  AddInput(cg, "x", {"4"});
  AddNode(cg, "Add", {"x", "b"}, {"a"}, "node_a");
  AddNode(cg, "Relu", {"a"}, {"b"}, "node_b");
  AddNode(cg, "Relu", {"x"}, {"y"}, "fine");
  cg->add_output()->set_name("y");
  Status st = ConvertFile(Write(cyc, dir), dir + "/c.kiln", ConvertOptions{}, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cycle"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("'node_a' (Add)"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("'node_b' (Relu)"), std::string::npos) << st.ToString();
  EXPECT_EQ(st.message().find("'fine'"), std::string::npos) << st.ToString();
}

TEST(OnnxImport, LegacySoftmaxFlattensFromAxis) {
  // Softmax-11 with axis 1 on [2,3,4] normalizes over 3*4 = 12 values per row.
  std::string dir = test::TempDir();
  onnx::ModelProto m = NewModel(11);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {"2", "3", "4"});
  AddNode(g, "Softmax", {"x"}, {"y"}, "sm");  // axis defaults to 1 before opset 13
  g->add_output()->set_name("y");
  ASSERT_TRUE(ConvertFile(Write(m, dir), dir + "/m.kiln", ConvertOptions{}, nullptr).ok());
  auto interp = Interpreter::createFromFile(dir + "/m.kiln");
  ASSERT_TRUE(interp.ok());
  Session* sess = *(*interp)->createSession({});
  std::vector<float> xv = test::RandomFloats(24, 5);
  auto hx = Tensor::wrap({2, 3, 4}, fb::DataType::F32, xv.data());
  ASSERT_TRUE(sess->getInput("x")->copyFromHostTensor(*hx).ok());
  ASSERT_TRUE(sess->run().ok());
  EXPECT_EQ(sess->getOutput()->shape(), (std::vector<int64_t>{2, 3, 4}));
  std::vector<float> want(24);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int i = 0; i < 12; ++i) sum += std::exp(xv[r * 12 + i]);
    for (int i = 0; i < 12; ++i) want[r * 12 + i] = float(std::exp(xv[r * 12 + i]) / sum);
  }
  test::ExpectNear(std::vector<float>(sess->getOutput()->host<float>(), sess->getOutput()->host<float>() + 24), want,
                   1e-5f);
}

TEST(OnnxImport, InputShapeOverrideAndBadFiles) {
  std::string dir = test::TempDir();
  onnx::ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {"n", "c"});
  AddNode(g, "Relu", {"x"}, {"y"}, "relu");
  g->add_output()->set_name("y");
  ConvertOptions opt;
  opt.input_shapes["x"] = {2, 5};
  ASSERT_TRUE(ConvertFile(Write(m, dir), dir + "/m.kiln", opt, nullptr).ok());
  auto interp = Interpreter::createFromFile(dir + "/m.kiln");
  ASSERT_TRUE(interp.ok());
  EXPECT_TRUE((*interp)->createSession({}).ok());  // static now: resized at creation

  test::WriteFile(dir + "/junk.onnx", {1, 2, 3, 4, 5, 6, 7});
  Status s = ConvertFile(dir + "/junk.onnx", dir + "/j.kiln", {}, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("junk.onnx"), std::string::npos) << s.message();
  EXPECT_EQ(ConvertFile(dir + "/missing.onnx", dir + "/j.kiln", {}, nullptr).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(OnnxImport, Fp16WeightsHalveTheFileAndStayClose) {
  std::string dir = test::TempDir();
  onnx::ModelProto m = NewModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", {"2", "64"});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(64);
  w->add_dims(32);
  for (float v : test::RandomFloats(64 * 32, 4)) w->add_float_data(v);
  AddNode(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  g->add_output()->set_name("y");
  std::string onnx_path = Write(m, dir);

  ConvertReport full, half;
  ASSERT_TRUE(ConvertFile(onnx_path, dir + "/f32.kiln", {}, &full).ok());
  ConvertOptions opt;
  opt.fp16 = true;
  Status s = ConvertFile(onnx_path, dir + "/f16.kiln", opt, &half);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(half.fp16_weights, 1);
  EXPECT_EQ(half.weight_bytes * 2, full.weight_bytes);

  std::vector<float> xv = test::RandomFloats(128, 5);
  std::vector<std::vector<float>> outs;
  for (const char* name : {"/f32.kiln", "/f16.kiln"}) {
    auto interp = Interpreter::createFromFile(dir + name);
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    auto sess = (*interp)->createSession({});
    ASSERT_TRUE(sess.ok()) << sess.status().ToString();
    // The widening Cast reads only a constant: it runs at resize, not per run.
    if (std::string(name) == "/f16.kiln") {
      EXPECT_EQ((*sess)->placement().ops[0].type, "Cast");
    }
    auto hx = Tensor::wrap({2, 64}, fb::DataType::F32, xv.data());
    ASSERT_TRUE((*sess)->getInput("x")->copyFromHostTensor(*hx).ok());
    std::vector<std::string> ran;
    auto seen = [&](const std::vector<Tensor*>&, const OpInfo& op) {
      ran.push_back(op.type);
      return true;
    };
    ASSERT_TRUE((*sess)->runWithCallBack(seen, nullptr).ok());
    EXPECT_EQ(ran, std::vector<std::string>{"MatMul"});
    Tensor* y = (*sess)->getOutput();
    outs.emplace_back(y->host<float>(), y->host<float>() + y->elementCount());
  }
  test::ExpectNear(outs[1], outs[0], 2e-3f, "fp16 weights vs f32");
}

}  // namespace
}  // namespace kiln
