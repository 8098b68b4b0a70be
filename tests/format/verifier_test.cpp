// One model per semantic check of the loader, each breaking exactly that
// check, starting from the valid TinyCnn. Each must be rejected with a message
// that names the place and the problem.
#include <gtest/gtest.h>

#include <functional>

#include "kiln/interpreter.h"
#include "support/test_models.h"

namespace kiln {
namespace {

// TinyCnn tensors: 0 image, 1 conv1.weight, 2 conv1.bias, 3 conv1.out,
// 4 relu1.out, 5 pool1.out, 6 gap.out, 7 flat.out, 8 fc.weight, 9 fc.bias,
// 10 fc.out, 11 probs. Ops: 0 conv1, 1 relu1, 2 pool1, 3 gap, 4 flatten,
// 5 fc, 6 softmax.
struct Case {
  const char* name;
  std::function<void(fb::NetT&, const std::string& dir)> breakit;
  std::vector<const char*> expect;  // substrings of the error message
};

std::unique_ptr<fb::DimT> D(int64_t s) {
  auto d = std::make_unique<fb::DimT>();
  d->size = s;
  return d;
}

void External(fb::TensorT& t, const std::string& loc, uint64_t offset, uint64_t length) {
  t.data.clear();
  t.external = std::make_unique<fb::ExternalDataT>();
  t.external->location = loc;
  t.external->offset = offset;
  t.external->length = length;
}

std::vector<Case> Cases() {
  return {
      {"format_version", [](fb::NetT& n, auto&) { n.format_version = 99; }, {"format version 99"}},
      {"input_out_of_range", [](fb::NetT& n, auto&) { n.ops[0]->inputs[1] = 97; },
       {"op 0 'conv1'", "input 1", "index 97 out of range (12 tensors)"}},
      {"output_out_of_range", [](fb::NetT& n, auto&) { n.ops[1]->outputs[0] = -4; },
       {"op 1 'relu1'", "output 0", "out of range"}},
      {"unknown_op_type", [](fb::NetT& n, auto&) { n.ops[1]->type = static_cast<fb::OpType>(999); },
       {"op 1 'relu1'", "op type 999 is not a known op"}},
      {"too_few_inputs", [](fb::NetT& n, auto&) { n.ops[0]->inputs.resize(1); },
       {"op 0 'conv1'", "Conv takes 2 to 4 inputs, has 1"}},
      {"too_many_outputs", [](fb::NetT& n, auto&) { n.ops[1]->outputs.push_back(11); },
       {"op 1 'relu1'", "Relu takes 1 to 1 outputs, has 2"}},
      {"required_input_missing", [](fb::NetT& n, auto&) { n.ops[0]->inputs[1] = -1; },
       {"op 0 'conv1'", "Conv input 1 is required but missing"}},
      {"params_wrong_type",
       [](fb::NetT& n, auto&) {
         n.ops[2]->params.Reset();
         n.ops[2]->params.Set(fb::AxisParamsT{});
       },
       {"op 2 'pool1'", "MaxPool takes PoolParams, has AxisParams"}},
      {"params_missing", [](fb::NetT& n, auto&) { n.ops[6]->params.Reset(); },
       {"op 6 'softmax'", "Softmax needs AxisParams"}},
      {"params_on_op_without",
       [](fb::NetT& n, auto&) { n.ops[1]->params.Set(fb::AxisParamsT{}); },
       {"op 1 'relu1'", "Relu takes no params, has AxisParams"}},
      {"conv_group_zero", [](fb::NetT& n, auto&) { n.ops[0]->params.AsConvParams()->group = 0; },
       {"op 0 'conv1'", "group 0"}},
      {"conv_pads_length", [](fb::NetT& n, auto&) { n.ops[0]->params.AsConvParams()->pads = {1, 1}; },
       {"op 0 'conv1'", "pads has 2 entries, expected 4"}},
      {"pool_stride_zero", [](fb::NetT& n, auto&) { n.ops[2]->params.AsPoolParams()->strides = {2, 0}; },
       {"op 2 'pool1'", "strides[1] is 0"}},
      {"pool_kernel_missing", [](fb::NetT& n, auto&) { n.ops[2]->params.AsPoolParams()->kernel_shape.clear(); },
       {"op 2 'pool1'", "kernel_shape is required"}},
      {"read_before_produced", [](fb::NetT& n, auto&) { std::swap(n.ops[1], n.ops[2]); },
       {"op 1 'pool1'", "tensor 4 'relu1.out' is read before any op produces it"}},
      {"two_producers", [](fb::NetT& n, auto&) { n.ops[1]->outputs[0] = 3; },
       {"op 1 'relu1'", "tensor 3 'conv1.out' already has a producer"}},
      {"output_is_constant", [](fb::NetT& n, auto&) { n.ops[1]->outputs[0] = 2; },
       {"op 1 'relu1'", "tensor 2 'conv1.bias' is a constant"}},
      {"graph_output_never_produced", [](fb::NetT& n, auto&) { n.ops.pop_back(); },
       {"graph output 0: tensor 11 'probs' is never produced"}},
      {"graph_output_out_of_range", [](fb::NetT& n, auto&) { n.outputs[0] = 12; },
       {"graph output 0: index 12 out of range"}},
      {"no_outputs", [](fb::NetT& n, auto&) { n.outputs.clear(); }, {"the graph has no outputs"}},
      {"graph_input_constant", [](fb::NetT& n, auto&) { n.inputs.push_back(1); },
       {"graph input 1: tensor 1 'conv1.weight' is a constant"}},
      {"graph_input_twice", [](fb::NetT& n, auto&) { n.inputs.push_back(0); },
       {"graph input 1: tensor 0 'image' is listed twice"}},
      {"unknown_dtype", [](fb::NetT& n, auto&) { n.tensors[4]->dtype = static_cast<fb::DataType>(77); },
       {"tensor 4 'relu1.out'", "dtype 77 is not a known type"}},
      {"negative_dim", [](fb::NetT& n, auto&) { n.tensors[0]->shape[1]->size = -5; },
       {"tensor 0 'image'", "dim 1 has size -5"}},
      {"element_count_overflow",
       [](fb::NetT& n, auto&) {
         n.tensors[9]->shape.clear();
         n.tensors[9]->shape.push_back(D(int64_t{1} << 40));
         n.tensors[9]->shape.push_back(D(int64_t{1} << 40));
       },
       {"tensor 9 'fc.bias'", "element count overflows at dim 1"}},
      {"rank_too_large",
       [](fb::NetT& n, auto&) {
         for (int i = 0; i < 40; ++i) n.tensors[3]->shape.push_back(D(1));
       },
       {"tensor 3 'conv1.out'", "rank 40 exceeds the maximum of 32"}},
      {"data_size_mismatch", [](fb::NetT& n, auto&) { n.tensors[9]->data.resize(12); },
       {"tensor 9 'fc.bias'", "data has 12 bytes, but 4 elements of f32 need 16"}},
      {"constant_with_symbolic_dim", [](fb::NetT& n, auto&) { n.tensors[9]->shape[0]->size = -1; },
       {"tensor 9 'fc.bias'", "constant data needs a fully static shape"}},
      {"data_and_external",
       [](fb::NetT& n, auto&) {
         n.tensors[9]->external = std::make_unique<fb::ExternalDataT>();
         n.tensors[9]->external->location = "w.bin";
       },
       {"tensor 9 'fc.bias'", "has both inline data and external data"}},
      {"external_file_missing", [](fb::NetT& n, auto&) { External(*n.tensors[9], "missing.bin", 0, 16); },
       {"tensor 9 'fc.bias'", "missing.bin: no such file"}},
      {"external_file_short",
       [](fb::NetT& n, const std::string& dir) {
         test::WriteFile(dir + "/short.bin", std::vector<uint8_t>(70));
         External(*n.tensors[9], "short.bin", 64, 16);
       },
       {"tensor 9 'fc.bias'", "bytes [64, +16) lie outside the file (70 bytes)"}},
      {"external_offset_overflow",
       [](fb::NetT& n, const std::string& dir) {
         test::WriteFile(dir + "/w.bin", std::vector<uint8_t>(128));
         External(*n.tensors[9], "w.bin", ~uint64_t{0} - 8, 16);
       },
       {"tensor 9 'fc.bias'", "lie outside the file"}},
      {"external_misaligned",
       [](fb::NetT& n, const std::string& dir) {
         test::WriteFile(dir + "/w.bin", std::vector<uint8_t>(128));
         External(*n.tensors[9], "w.bin", 4, 16);
       },
       {"tensor 9 'fc.bias'", "offset 4 is not 64-byte aligned"}},
      {"external_wrong_length",
       [](fb::NetT& n, const std::string& dir) {
         test::WriteFile(dir + "/w.bin", std::vector<uint8_t>(128));
         External(*n.tensors[9], "w.bin", 0, 8);
       },
       {"tensor 9 'fc.bias'", "data has 8 bytes, but 4 elements of f32 need 16"}},
      {"external_absolute_path", [](fb::NetT& n, auto&) { External(*n.tensors[9], "/etc/passwd", 0, 16); },
       {"tensor 9 'fc.bias'", "'/etc/passwd' must be a relative path"}},
      {"external_parent_path", [](fb::NetT& n, auto&) { External(*n.tensors[9], "a/../../w.bin", 0, 16); },
       {"tensor 9 'fc.bias'", "without '..'"}},
      {"quant_on_float",
       [](fb::NetT& n, auto&) {
         n.tensors[9]->quant = std::make_unique<fb::QuantizationT>();
         n.tensors[9]->quant->scale = {1.0f};
       },
       {"tensor 9 'fc.bias'", "f32 tensors cannot be quantized"}},
      {"quant_scale_count",
       [](fb::NetT& n, auto&) {
         n.tensors[9]->dtype = fb::DataType::I32;
         n.tensors[9]->quant = std::make_unique<fb::QuantizationT>();
         n.tensors[9]->quant->scale = {1.0f, 2.0f, 3.0f};
       },
       {"tensor 9 'fc.bias'", "3 scales for 4 channels on axis 0"}},
      {"quant_zero_point_count",
       [](fb::NetT& n, auto&) {
         n.tensors[9]->dtype = fb::DataType::I32;
         n.tensors[9]->quant = std::make_unique<fb::QuantizationT>();
         n.tensors[9]->quant->scale = {1.0f};
         n.tensors[9]->quant->zero_point = {0, 1};
       },
       {"tensor 9 'fc.bias'", "2 zero points for 1 scales"}},
      {"quant_scale_not_positive",
       [](fb::NetT& n, auto&) {
         n.tensors[9]->dtype = fb::DataType::I32;
         n.tensors[9]->quant = std::make_unique<fb::QuantizationT>();
         n.tensors[9]->quant->scale = {0.0f};
       },
       {"tensor 9 'fc.bias'", "scale 0 is 0"}},
      {"quant_axis_out_of_range",
       [](fb::NetT& n, auto&) {
         n.tensors[9]->dtype = fb::DataType::I32;
         n.tensors[9]->quant = std::make_unique<fb::QuantizationT>();
         n.tensors[9]->quant->scale = {1.0f, 2.0f};
         n.tensors[9]->quant->axis = 3;
       },
       {"tensor 9 'fc.bias'", "per-channel axis 3 out of range for rank 1"}},
      {"transpose_bad_perm",
       [](fb::NetT& n, auto&) {
         n.ops[1]->type = fb::OpType::Transpose;
         fb::TransposeParamsT p;
         p.perm = {0, 2, 2};
         n.ops[1]->params.Set(std::move(p));
       },
       {"op 1 'relu1'", "perm is not a permutation of 0..2 (entry 2 is 2)"}},
      {"cast_unknown_dtype",
       [](fb::NetT& n, auto&) {
         n.ops[1]->type = fb::OpType::Cast;
         fb::CastParamsT p;
         p.to = static_cast<fb::DataType>(50);
         n.ops[1]->params.Set(std::move(p));
       },
       {"op 1 'relu1'", "Cast to unknown dtype 50"}},
      {"blocksize_zero",
       [](fb::NetT& n, auto&) {
         n.ops[1]->type = fb::OpType::DepthToSpace;
         n.ops[1]->params.Set(fb::SpaceDepthParamsT{});
       },
       {"op 1 'relu1'", "blocksize 0 must be >= 1"}},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class VerifierTest : public ::testing::TestWithParam<Case> {};

TEST_P(VerifierTest, RejectsWithAPreciseMessage) {
  const Case& c = GetParam();
  std::string dir = test::TempDir();
  NetBuilder b = test::TinyCnn();
  // The unbroken model loads.
  ASSERT_TRUE(b.writeFile(dir + "/good.kiln").ok());
  auto good = Interpreter::createFromFile(dir + "/good.kiln");
  ASSERT_TRUE(good.ok()) << good.status().ToString();

  c.breakit(b.net(), dir);
  std::string path = dir + "/model.kiln";
  ASSERT_TRUE(b.writeFile(path).ok());
  auto bad = Interpreter::createFromFile(path);
  ASSERT_FALSE(bad.ok()) << c.name << " was accepted";
  std::string msg = bad.status().message();
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "want the file name first in: " << msg;
  for (const char* want : c.expect) EXPECT_NE(msg.find(want), std::string::npos) << "want '" << want << "' in: " << msg;
}

INSTANTIATE_TEST_SUITE_P(EachCheck, VerifierTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(VerifierTest, NotAKilnFile) {
  std::vector<uint8_t> junk(64, 0);
  auto r = Interpreter::createFromBuffer(junk.data(), junk.size());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a Kiln model"), std::string::npos) << r.status().message();
  auto empty = Interpreter::createFromBuffer(nullptr, 0);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("too short"), std::string::npos) << empty.status().message();
  auto missing = Interpreter::createFromFile("/nonexistent/model.kiln");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kiln
