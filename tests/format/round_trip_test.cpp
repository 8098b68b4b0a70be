// NetBuilder -> file -> loader round trips: every dtype, every op with every
// params table (filled with non-default values), external weights, and the
// zero-copy guarantee.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "kiln/interpreter.h"
#include "model.h"
#include "ops/op_defs.h"
#include "support/test_models.h"

namespace kiln {
namespace {

fb::NetT Unpack(const fb::Net& net) {
  fb::NetT out;
  net.UnPackTo(&out);
  return out;
}

// A params union of type `type` with every field set away from its default.
fb::OpParamsUnion FilledParams(fb::OpParams type) {
  fb::OpParamsUnion u;
  switch (type) {
    case fb::OpParams::NONE: break;
    case fb::OpParams::ConvParams: {
      fb::ConvParamsT p;
      p.kernel_shape = {3, 5};
      p.strides = {2, 1};
      p.pads = {1, 2, 1, 2};
      p.dilations = {1, 2};
      p.group = 3;
      p.auto_pad = fb::AutoPad::SameLower;
      p.output_padding = {1, 0};
      p.output_shape = {9, 10};
      p.activation = fb::Activation::Clip;
      p.activation_min = 0;
      p.activation_max = 6;
      p.activation_alpha = 0.2f;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::PoolParams: {
      fb::PoolParamsT p;
      p.kernel_shape = {2, 3};
      p.strides = {2, 2};
      p.pads = {0, 1, 0, 1};
      p.dilations = {1, 1};
      p.auto_pad = fb::AutoPad::Valid;
      p.ceil_mode = true;
      p.count_include_pad = true;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::GemmParams: {
      fb::GemmParamsT p;
      p.alpha = 0.5f;
      p.beta = 2.0f;
      p.trans_a = true;
      p.trans_b = true;
      p.activation = fb::Activation::LeakyRelu;
      p.activation_min = -1;
      p.activation_max = 1;
      p.activation_alpha = 0.3f;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::NormParams: u.Set(fb::NormParamsT{}); u.AsNormParams()->epsilon = 1e-3f; u.AsNormParams()->axis = 2; break;
    case fb::OpParams::LeakyReluParams: u.Set(fb::LeakyReluParamsT{}); u.AsLeakyReluParams()->alpha = 0.1f; break;
    case fb::OpParams::EluParams: u.Set(fb::EluParamsT{}); u.AsEluParams()->alpha = 0.7f; break;
    case fb::OpParams::HardSigmoidParams:
      u.Set(fb::HardSigmoidParamsT{});
      u.AsHardSigmoidParams()->alpha = 0.3f;
      u.AsHardSigmoidParams()->beta = 0.4f;
      break;
    case fb::OpParams::ClipParams:
      u.Set(fb::ClipParamsT{});
      u.AsClipParams()->min = -2;
      u.AsClipParams()->max = 3;
      break;
    case fb::OpParams::GeluParams: u.Set(fb::GeluParamsT{}); u.AsGeluParams()->approximate = fb::GeluApproximation::Tanh; break;
    case fb::OpParams::ReduceParams: {
      fb::ReduceParamsT p;
      p.axes = {0, -1};
      p.keepdims = false;
      p.noop_with_empty_axes = true;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::AxisParams: u.Set(fb::AxisParamsT{}); u.AsAxisParams()->axis = -2; break;
    case fb::OpParams::AxesParams: u.Set(fb::AxesParamsT{}); u.AsAxesParams()->axes = {1, 3}; break;
    case fb::OpParams::TransposeParams: u.Set(fb::TransposeParamsT{}); u.AsTransposeParams()->perm = {2, 0, 1}; break;
    case fb::OpParams::SplitParams:
      u.Set(fb::SplitParamsT{});
      u.AsSplitParams()->axis = 1;
      u.AsSplitParams()->split = {2, 5};
      break;
    case fb::OpParams::SliceParams: {
      fb::SliceParamsT p;
      p.starts = {1};
      p.ends = {int64_t{1} << 40};
      p.axes = {-1};
      p.steps = {2};
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::PadParams: {
      fb::PadParamsT p;
      p.mode = fb::PadMode::Reflect;
      p.pads = {0, 1, 2, 3};
      p.value = 1.5f;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::ResizeParams: {
      fb::ResizeParamsT p;
      p.mode = fb::ResizeMode::Linear;
      p.coordinate_transform = fb::CoordinateTransform::AlignCorners;
      p.nearest_mode = fb::NearestMode::Ceil;
      p.cubic_coeff_a = -0.5f;
      p.exclude_outside = true;
      p.extrapolation_value = 7;
      p.scales = {1, 1, 2, 2};
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::SpaceDepthParams:
      u.Set(fb::SpaceDepthParamsT{});
      u.AsSpaceDepthParams()->blocksize = 2;
      u.AsSpaceDepthParams()->mode = fb::DepthToSpaceMode::CRD;
      break;
    case fb::OpParams::CastParams: u.Set(fb::CastParamsT{}); u.AsCastParams()->to = fb::DataType::F16; break;
    case fb::OpParams::ArgParams: {
      fb::ArgParamsT p;
      p.axis = 1;
      p.keepdims = false;
      p.select_last_index = true;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::ShapeParams:
      u.Set(fb::ShapeParamsT{});
      u.AsShapeParams()->start = 1;
      u.AsShapeParams()->end = -1;
      break;
    case fb::OpParams::ReshapeParams: u.Set(fb::ReshapeParamsT{}); u.AsReshapeParams()->allowzero = true; break;
    case fb::OpParams::CustomParams:
      u.Set(fb::CustomParamsT{});
      u.AsCustomParams()->type_name = "NonZero";
      u.AsCustomParams()->domain = "ai.onnx";
      break;
    case fb::OpParams::MaxUnpoolParams: {
      fb::MaxUnpoolParamsT p;
      p.kernel_shape = {3, 2};
      p.strides = {2, 3};
      p.pads = {1, 0, 0, 1};
      p.indices_in_output_shape = true;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::SeluParams:
      u.Set(fb::SeluParamsT{});
      u.AsSeluParams()->alpha = 1.5f;
      u.AsSeluParams()->gamma = 2.5f;
      break;
    case fb::OpParams::ShrinkParams:
      u.Set(fb::ShrinkParamsT{});
      u.AsShrinkParams()->bias = 0.25f;
      u.AsShrinkParams()->lambd = 1.25f;
      break;
    case fb::OpParams::IsInfParams:
      u.Set(fb::IsInfParamsT{});
      u.AsIsInfParams()->detect_positive = false;
      u.AsIsInfParams()->detect_negative = false;
      break;
    case fb::OpParams::BitShiftParams: u.Set(fb::BitShiftParamsT{}); u.AsBitShiftParams()->left = true; break;
    case fb::OpParams::ModParams: u.Set(fb::ModParamsT{}); u.AsModParams()->fmod = true; break;
    case fb::OpParams::EyeLikeParams:
      u.Set(fb::EyeLikeParamsT{});
      u.AsEyeLikeParams()->k = -2;
      u.AsEyeLikeParams()->dtype = fb::DataType::U16;
      u.AsEyeLikeParams()->has_dtype = true;
      break;
    case fb::OpParams::TriluParams: u.Set(fb::TriluParamsT{}); u.AsTriluParams()->upper = false; break;
    case fb::OpParams::GatherNDParams: u.Set(fb::GatherNDParamsT{}); u.AsGatherNDParams()->batch_dims = 1; break;
    case fb::OpParams::ScatterParams:
      u.Set(fb::ScatterParamsT{});
      u.AsScatterParams()->axis = -1;
      u.AsScatterParams()->reduction = fb::ScatterReduction::Max;
      break;
    case fb::OpParams::CumSumParams:
      u.Set(fb::CumSumParamsT{});
      u.AsCumSumParams()->exclusive = true;
      u.AsCumSumParams()->reverse = true;
      break;
    case fb::OpParams::TopKParams:
      u.Set(fb::TopKParamsT{});
      u.AsTopKParams()->axis = 0;
      u.AsTopKParams()->largest = false;
      u.AsTopKParams()->sorted = false;
      break;
    case fb::OpParams::LrnParams:
      u.Set(fb::LrnParamsT{});
      u.AsLrnParams()->alpha = 0.5f;
      u.AsLrnParams()->beta = 0.25f;
      u.AsLrnParams()->bias = 2;
      u.AsLrnParams()->size = 5;
      break;
    case fb::OpParams::LossParams:
      u.Set(fb::LossParamsT{});
      u.AsLossParams()->reduction = fb::LossReduction::Sum;
      u.AsLossParams()->ignore_index = -100;
      u.AsLossParams()->has_ignore_index = true;
      break;
    case fb::OpParams::CompressParams:
      u.Set(fb::CompressParamsT{});
      u.AsCompressParams()->axis = 1;
      u.AsCompressParams()->has_axis = true;
      break;
    case fb::OpParams::UniqueParams:
      u.Set(fb::UniqueParamsT{});
      u.AsUniqueParams()->axis = -1;
      u.AsUniqueParams()->has_axis = true;
      u.AsUniqueParams()->sorted = false;
      break;
    case fb::OpParams::NmsParams: u.Set(fb::NmsParamsT{}); u.AsNmsParams()->center_point_box = true; break;
    case fb::OpParams::ReverseSequenceParams:
      u.Set(fb::ReverseSequenceParamsT{});
      u.AsReverseSequenceParams()->batch_axis = 0;
      u.AsReverseSequenceParams()->time_axis = 1;
      break;
    case fb::OpParams::EinsumParams: u.Set(fb::EinsumParamsT{}); u.AsEinsumParams()->equation = "ij,jk->ik"; break;
    case fb::OpParams::GridSampleParams:
      u.Set(fb::GridSampleParamsT{});
      u.AsGridSampleParams()->mode = fb::ResizeMode::Cubic;
      u.AsGridSampleParams()->padding = fb::GridPadding::Reflection;
      u.AsGridSampleParams()->align_corners = true;
      break;
    case fb::OpParams::RoiAlignParams: {
      fb::RoiAlignParamsT p;
      p.max_mode = true;
      p.output_height = 3;
      p.output_width = 5;
      p.sampling_ratio = 2;
      p.spatial_scale = 0.25f;
      p.half_pixel = false;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::DftParams:
      u.Set(fb::DftParamsT{});
      u.AsDftParams()->axis = -2;
      u.AsDftParams()->inverse = true;
      u.AsDftParams()->onesided = true;
      break;
    case fb::OpParams::WindowParams:
      u.Set(fb::WindowParamsT{});
      u.AsWindowParams()->periodic = false;
      u.AsWindowParams()->dtype = fb::DataType::F64;
      break;
    case fb::OpParams::RnnParams: {
      fb::RnnParamsT p;
      p.direction = fb::RnnDirection::Bidirectional;
      p.hidden_size = 7;
      p.activations = {fb::OpType::HardSigmoid, fb::OpType::Tanh};
      p.activation_alpha = {0.3f, 0};
      p.activation_beta = {0.6f, 0};
      p.clip = 3;
      p.input_forget = true;
      p.batch_first = true;
      p.linear_before_reset = true;
      u.Set(std::move(p));
      break;
    }
    case fb::OpParams::SequenceParams:
      u.Set(fb::SequenceParamsT{});
      u.AsSequenceParams()->axis = 2;
      u.AsSequenceParams()->keepdims = false;
      u.AsSequenceParams()->new_axis = true;
      u.AsSequenceParams()->dtype = fb::DataType::I64;
      break;
    case fb::OpParams::QuantActivationParams:
      u.Set(fb::QuantActivationParamsT{});
      u.AsQuantActivationParams()->activation = fb::Activation::Clip;
      u.AsQuantActivationParams()->activation_min = -1.5f;
      u.AsQuantActivationParams()->activation_max = 4.f;
      break;
    case fb::OpParams::IfParams:
    case fb::OpParams::LoopParams:
    case fb::OpParams::ScanParams: break;  // need subgraphs: ControlFlowRoundTrip
  }
  return u;
}

// Loads the builder's model from a file, then from a buffer; both must give
// back exactly the NetT that was written.
void ExpectRoundTrip(const NetBuilder& b) {
  std::string path = test::TempDir() + "/m.kiln";
  ASSERT_TRUE(b.writeFile(path).ok());
  auto interp = Interpreter::createFromFile(path);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  fb::NetT& want = const_cast<NetBuilder&>(b).net();
  EXPECT_TRUE(Unpack((*interp)->net()) == want);

  auto bytes = b.finish();
  ASSERT_TRUE(bytes.ok());
  auto from_buffer = Interpreter::createFromBuffer(bytes->data(), bytes->size());
  ASSERT_TRUE(from_buffer.ok()) << from_buffer.status().ToString();
  EXPECT_TRUE(Unpack((*from_buffer)->net()) == want);
}

TEST(RoundTrip, EveryOpWithItsParamsTable) {
  std::vector<bool> params_seen(static_cast<size_t>(fb::OpParams::MAX) + 1, false);
  for (int t = 1; t <= static_cast<int>(fb::OpType::MAX); ++t) {
    const OpDef* def = FindOpDef(static_cast<fb::OpType>(t));
    ASSERT_NE(def, nullptr) << t;
    SCOPED_TRACE(def->name);
    if (def->params == fb::OpParams::IfParams || def->params == fb::OpParams::LoopParams ||
        def->params == fb::OpParams::ScanParams) {
      params_seen[static_cast<size_t>(def->params)] = true;  // need subgraphs: ControlFlowRoundTrip
      continue;
    }
    NetBuilder b(std::string("op_") + def->name);
    std::vector<int> inputs;
    for (int i = 0; i < def->min_inputs; ++i)
      inputs.push_back(b.addInput("in" + std::to_string(i), fb::DataType::F32, {2, "n", 3}));
    if (def->type == fb::OpType::Constant) {
      int c = b.addConstant("value", {2}, std::vector<float>{1.5f, -2.5f});
      b.addOpWithOutputs(def->type, "op", {}, {c});
      b.addOutput(c);
    } else {
      std::vector<std::string> outs;
      for (int i = 0; i < def->min_outputs; ++i) outs.push_back("out" + std::to_string(i));
      for (int o : b.addOp(def->type, "op", inputs, outs, FilledParams(def->params))) b.addOutput(o);
    }
    params_seen[static_cast<size_t>(def->params)] = true;
    ExpectRoundTrip(b);
  }
  for (size_t p = 1; p < params_seen.size(); ++p)
    EXPECT_TRUE(params_seen[p]) << "no op uses " << fb::EnumNamesOpParams()[p];
}

TEST(RoundTrip, EveryDtypeAndQuantization) {
  NetBuilder b("dtypes");
  int x = b.addInput("x", fb::DataType::F32, {"batch", 4});
  for (int d = 0; d <= static_cast<int>(fb::DataType::MAX); ++d) {
    auto dt = static_cast<fb::DataType>(d);
    std::vector<uint8_t> bytes(3 * 5 * DataTypeSize(dt));
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + d);
    if (dt == fb::DataType::BOOL)
      for (auto& v : bytes) v &= 1;
    int c = b.addConstant(std::string("c_") + DataTypeName(dt), dt, {3, 5}, bytes.data(), bytes.size());
    if (dt == fb::DataType::I8) b.setQuantization(c, {0.5f}, {-3});
    if (dt == fb::DataType::U8) b.setQuantization(c, {0.1f, 0.2f, 0.3f}, {128, 127, 126}, 0);
    if (dt == fb::DataType::I32) b.setQuantization(c, {0.01f, 0.02f, 0.03f, 0.04f, 0.05f}, {}, 1);
  }
  int y = b.addOp(fb::OpType::Relu, "relu", {x}, {"y"})[0];
  b.addOutput(y);
  b.setProperty("author", "kiln tests");
  b.setMetadata("NetBuilder", "builder", 17);
  b.setProperty("license", "none");
  ExpectRoundTrip(b);
}

TEST(Loading, FileConstantsAreUsedInPlaceAndAligned) {
  NetBuilder b = test::TinyCnn();
  std::string path = test::TempDir() + "/cnn.kiln";
  ASSERT_TRUE(b.writeFile(path).ok());
  auto interp = Interpreter::createFromFile(path);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  const Model& m = (*interp)->model();
  const uint8_t* begin = m.bytes().data();
  int constants = 0;
  for (int i = 0; i < b.tensorCount(); ++i) {
    ConstantView v = m.constant(i);
    if (!v.data) continue;
    ++constants;
    EXPECT_GE(v.data, begin);
    EXPECT_LE(v.data + v.size, begin + m.bytes().size());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % kDataAlignment, 0u);
    EXPECT_EQ(std::memcmp(v.data, b.net().tensors[i]->data.data(), v.size), 0);
  }
  EXPECT_EQ(constants, 4);
}

TEST(Loading, ExternalWeights) {
  NetBuilder b = test::TinyCnn();
  std::string dir = test::TempDir();
  WriteOptions opt;
  opt.external_weights = "cnn.weights";
  opt.external_min_bytes = 64;  // the small biases stay inline
  ASSERT_TRUE(b.writeFile(dir + "/cnn.kiln", opt).ok());
  auto interp = Interpreter::createFromFile(dir + "/cnn.kiln");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  const fb::Net& net = (*interp)->net();
  int external = 0;
  for (int i = 0; i < b.tensorCount(); ++i) {
    const auto& want = b.net().tensors[i]->data;
    ConstantView v = (*interp)->model().constant(i);
    ASSERT_EQ(v.size, want.size());
    if (want.empty()) continue;
    EXPECT_EQ(std::memcmp(v.data, want.data(), want.size()), 0) << i;
    if (net.tensors()->Get(i)->external()) ++external;
    EXPECT_EQ(net.tensors()->Get(i)->external() != nullptr, want.size() >= 64) << i;
  }
  EXPECT_EQ(external, 2);  // conv1.weight (864 B) and fc.weight (128 B)

  // From a buffer, external data needs a weights directory.
  auto bytes = test::ReadFile(dir + "/cnn.kiln");
  auto no_dir = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  ASSERT_FALSE(no_dir.ok());
  EXPECT_NE(no_dir.status().message().find("weights directory"), std::string::npos) << no_dir.status().message();
  LoadOptions lo;
  lo.weights_dir = dir;
  EXPECT_TRUE(Interpreter::createFromBuffer(bytes.data(), bytes.size(), BufferOwnership::kCopy, lo).ok());
}

// A model whose weights lie past 2 GiB in a (sparse) external file: the
// 64-bit offsets of ExternalData must carry it.
TEST(Loading, ExternalWeightsBeyond2GiB) {
  std::string dir = test::TempDir();
  const uint64_t offset = (uint64_t{5} << 29);  // 2.5 GiB
  const size_t n = 1024;
  std::string weights = dir + "/big.weights";
  FILE* f = std::fopen(weights.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::vector<float> values = test::RandomFloats(n, 9);
  ASSERT_EQ(fseeko(f, static_cast<off_t>(offset), SEEK_SET), 0);
  ASSERT_EQ(std::fwrite(values.data(), sizeof(float), n, f), n);
  std::fclose(f);

  NetBuilder b("big");
  int x = b.addInput("x", fb::DataType::F32, {static_cast<int64_t>(n)});
  int w = b.addTensor("w");
  b.net().tensors[w]->unknown_rank = false;
  b.net().tensors[w]->shape.push_back(std::make_unique<fb::DimT>());
  b.net().tensors[w]->shape[0]->size = static_cast<int64_t>(n);
  b.net().tensors[w]->external = std::make_unique<fb::ExternalDataT>();
  b.net().tensors[w]->external->location = "big.weights";
  b.net().tensors[w]->external->offset = offset;
  b.net().tensors[w]->external->length = n * sizeof(float);
  b.addOutput(b.addOp(fb::OpType::Add, "add", {x, w}, {"y"})[0]);
  ASSERT_TRUE(b.writeFile(dir + "/big.kiln").ok());
  auto interp = Interpreter::createFromFile(dir + "/big.kiln");
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ConstantView v = (*interp)->model().constant(w);
  ASSERT_EQ(v.size, n * sizeof(float));
  EXPECT_EQ(std::memcmp(v.data, values.data(), v.size), 0);
}

TEST(Loading, AdoptedBufferIsReleasedOnce) {
  auto bytes = test::TinyCnn().finish();
  ASSERT_TRUE(bytes.ok());
  for (size_t misalign : {size_t{0}, size_t{8}}) {
    int releases = 0;
    uint8_t* raw = static_cast<uint8_t*>(std::aligned_alloc(64, bytes->size() + 64));
    std::memcpy(raw + misalign, bytes->data(), bytes->size());
    {
      auto interp = Interpreter::createFromBuffer(raw + misalign, bytes->size(), BufferOwnership::kAdopt, {},
                                                  [&](const void* p) {
                                                    ++releases;
                                                    std::free(const_cast<uint8_t*>(static_cast<const uint8_t*>(p)) - misalign);
                                                  });
      ASSERT_TRUE(interp.ok()) << interp.status().ToString();
      EXPECT_EQ((*interp)->net().ops()->size(), 7u);
    }
    EXPECT_EQ(releases, 1) << "misalign " << misalign;
  }
}

}  // namespace
}  // namespace kiln
