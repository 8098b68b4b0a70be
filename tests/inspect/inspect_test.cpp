// kiln-inspect: the byte map accounts for every byte, --locate finds the
// bytes the generated API reads, JSON is well formed, the summary counts
// right, and the binary's exit codes.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "inspect/inspect.h"
#include "kiln/interpreter.h"
#include "support/control_flow_models.h"
#include "support/test_models.h"

namespace kiln::inspect {
namespace {

std::vector<uint8_t> Finish(const NetBuilder& b) {
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// Quantized int8 weights (per-channel), a uint8 input with symbolic dims, a
// metadata property: the parts of the format TinyCnn leaves out.
NetBuilder QuantizedModel() {
  NetBuilder b("quant");
  int x = b.addInput("x", fb::DataType::U8, {"batch", 4});
  b.setQuantization(x, {0.5f}, {128});
  std::vector<int8_t> w(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(i * 7 - 50);
  int wt = b.addConstant("w", fb::DataType::I8, {4, 4}, w.data(), w.size());
  b.setQuantization(wt, {0.1f, 0.2f, 0.3f, 0.4f}, {0, 0, 0, 0}, 0);
  int y = b.addOp(fb::OpType::MatMul, "mm", {x, wt}, {"y"})[0];
  b.addOutput(y);
  b.setProperty("author", "inspect_test");
  return b;
}

// The invariants of a byte map: sorted, contiguous (so non-overlapping),
// covering the file exactly, nothing unexplained, padding all zero.
void ExpectCompleteMap(const std::vector<uint8_t>& buf) {
  auto map = BuildByteMap(buf.data(), buf.size());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  size_t pos = 0;
  for (const Region& r : map->regions) {
    SCOPED_TRACE(r.meaning);
    EXPECT_EQ(r.offset, pos) << "regions must be sorted and not overlap or leave holes";
    EXPECT_GT(r.length, 0u);
    // Nothing unexplained: a gap is bytes that no object refers to.
    EXPECT_NE(r.kind, RegionKind::kGap);
    EXPECT_FALSE(r.meaning.empty());
    EXPECT_NE(r.meaning.rfind("gap", 0), 0u);
    if (r.kind == RegionKind::kPadding) {
      for (size_t i = 0; i < r.length; ++i) ASSERT_EQ(buf[r.offset + i], 0) << "at " << r.offset + i;
    }
    pos = r.offset + r.length;
  }
  EXPECT_EQ(pos, buf.size());
  size_t sum = 0;
  for (RegionKind k : {RegionKind::kHeader, RegionKind::kTable, RegionKind::kVTable, RegionKind::kVector,
                       RegionKind::kString, RegionKind::kData, RegionKind::kPadding, RegionKind::kGap})
    sum += map->total(k);
  EXPECT_EQ(sum, buf.size());
  EXPECT_EQ(map->total(RegionKind::kHeader), 12u);  // size prefix, root offset, "KILN"
  EXPECT_GT(map->total(RegionKind::kVTable), 0u);

  // Every tensor name is mapped where the generated API finds it.
  const fb::Net* net = fb::GetSizePrefixedNet(buf.data());
  for (flatbuffers::uoffset_t i = 0; i < net->tensors()->size(); ++i) {
    size_t at = static_cast<size_t>(net->tensors()->Get(i)->name()->c_str() -
                                    reinterpret_cast<const char*>(buf.data()));
    bool found = false;
    for (const Region& r : map->regions)
      if (r.offset == at && r.kind == RegionKind::kString &&
          r.meaning.rfind("tensors[" + std::to_string(i) + "].name = ", 0) == 0)
        found = true;
    EXPECT_TRUE(found) << "tensors[" << i << "].name at " << at;
  }
  std::string text = FormatByteMap(*map, buf.data());
  EXPECT_NE(text.find("file size " + std::to_string(buf.size()) + " (all accounted for)"), std::string::npos)
      << text;
}

size_t ConstantBytes(const NetBuilder& b) {
  size_t n = 0;
  for (const auto& t : const_cast<NetBuilder&>(b).net().tensors) n += t->data.size();
  return n;
}

TEST(ByteMap, TinyCnnAccountsForEveryByte) {
  NetBuilder b = test::TinyCnn();
  std::vector<uint8_t> buf = Finish(b);
  ExpectCompleteMap(buf);
  auto map = BuildByteMap(buf.data(), buf.size());
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->total(RegionKind::kData), ConstantBytes(b));
  // Short int vectors get one line per element, with the union member type.
  bool kernel = false;
  for (const Region& r : map->regions)
    kernel |= r.meaning == "ops[0].params<ConvParams>.kernel_shape[1] = 3" && r.length == 4;
  EXPECT_TRUE(kernel);
}

TEST(ByteMap, ExternalWeights) {
  std::string dir = test::TempDir();
  WriteOptions opts;
  opts.external_weights = "tiny.weights";
  ASSERT_TRUE(test::TinyCnn().writeFile(dir + "/tiny.kiln", opts).ok());
  std::vector<uint8_t> buf = test::ReadFile(dir + "/tiny.kiln");
  LoadOptions lo;
  lo.weights_dir = dir;
  auto interp = Interpreter::createFromBuffer(buf.data(), buf.size(), BufferOwnership::kCopy, lo);
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ExpectCompleteMap(buf);
  auto map = BuildByteMap(buf.data(), buf.size());
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->total(RegionKind::kData), 0u);
  bool location = false;
  for (const Region& r : map->regions) location |= r.meaning == "tensors[1].external.location = \"tiny.weights\"";
  EXPECT_TRUE(location);
}

TEST(ByteMap, QuantizationAndSymbolicDims) {
  NetBuilder b = QuantizedModel();
  std::vector<uint8_t> buf = Finish(b);
  auto interp = Interpreter::createFromBuffer(buf.data(), buf.size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  ExpectCompleteMap(buf);
  auto map = BuildByteMap(buf.data(), buf.size());
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(map->total(RegionKind::kData), 16u);
  bool symbol = false, scale = false;
  for (const Region& r : map->regions) {
    symbol |= r.meaning == "tensors[0].shape[0].symbol = \"batch\"";
    scale |= r.meaning == "tensors[1].quant.scale[3] = 0.4";
  }
  EXPECT_TRUE(symbol);
  EXPECT_TRUE(scale);
}

// A small JSON checker: enough to show the output is structurally valid.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& s) : s_(s) {}
  bool Valid() {
    bool ok = Value();
    Ws();
    return ok && i_ == s_.size();
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Lit(const char* w) {
    size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool String() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '\\') ++i_;
      else if (s_[i_] == '"') return ++i_, true;
      else if (static_cast<unsigned char>(s_[i_]) < 0x20) return false;
    }
    return false;
  }
  bool Number() {
    size_t start = i_;
    while (i_ < s_.size() && std::strchr("+-0123456789.eE", s_[i_])) ++i_;
    return i_ > start && std::isdigit(static_cast<unsigned char>(s_[i_ - 1]));
  }
  bool Value() {
    Ws();
    if (i_ >= s_.size() || ++depth_ > 64) return false;
    bool ok;
    char c = s_[i_];
    if (c == '{' || c == '[') {
      ++i_;
      Ws();
      char close = c == '{' ? '}' : ']';
      ok = true;
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
      } else {
        for (;;) {
          if (c == '{') {
            Ws();
            if (!String()) return false;
            Ws();
            if (!Lit(":")) return false;
          }
          if (!Value()) return false;
          Ws();
          if (Lit(",")) continue;
          if (!Lit(std::string(1, close).c_str())) return false;
          break;
        }
      }
    } else if (c == '"') {
      ok = String();
    } else if (c == 't' || c == 'f' || c == 'n') {
      ok = Lit("true") || Lit("false") || Lit("null");
    } else {
      ok = Number();
    }
    --depth_;
    return ok;
  }

  const std::string& s_;
  size_t i_ = 0;
  int depth_ = 0;
};

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

// Everything the small models leave out: long vectors, non-default and
// non-finite floats, strings needing escapes, every dtype's data decoding,
// an empty constant. Only structurally valid (the semantic verifier would
// reject these ops), which is all the walker needs.
std::vector<uint8_t> OddModel() {
  NetBuilder b("odd \"model\"\n");
  int x = b.addInput("x", fb::DataType::F32, {"n", 4});
  const uint16_t f16[] = {0x3c00, 0xc000, 0x7c00, 0x0001};  // 1, -2, inf, 2^-24
  b.addConstant("h", fb::DataType::F16, {4}, f16, sizeof f16);
  const uint16_t bf16[] = {0x3f80, 0x4040};  // 1, 3
  b.addConstant("bf", fb::DataType::BF16, {2}, bf16, sizeof bf16);
  const uint8_t flags[] = {1, 0, 1};
  b.addConstant("flags", fb::DataType::BOOL, {3}, flags, sizeof flags);
  b.addConstant("idx", {2}, std::vector<int64_t>{-5, INT64_MAX});
  int empty = b.addTensor("empty", fb::DataType::F32);
  b.net().tensors[empty]->is_constant = true;
  fb::ConvParamsT conv;
  conv.kernel_shape = {3, 3};
  conv.group = 2;
  conv.auto_pad = fb::AutoPad::SameUpper;
  for (int i = 0; i < 20; ++i) conv.output_shape.push_back(i);
  conv.activation = fb::Activation::Clip;
  conv.activation_min = -6;
  conv.activation_alpha = std::nanf("");
  int c = b.addOp(fb::OpType::ConvTranspose, "", {x}, {"c"}, conv)[0];
  fb::SliceParamsT slice;
  slice.starts = {0, -1};
  slice.ends = {INT64_MAX, INT64_MIN};
  int sl = b.addOp(fb::OpType::Slice, "slice", {c}, {"s"}, slice)[0];
  fb::CustomParamsT custom;
  custom.type_name = "Non\"Zero\\\t\xc3\xa9";
  b.addOp(fb::OpType::Custom, "custom", {sl}, {"out"}, custom);
  b.setProperty("empty", "");
  std::vector<uint8_t> buf = Finish(b);
  flatbuffers::Verifier v(buf.data(), buf.size());
  EXPECT_TRUE(fb::VerifySizePrefixedNetBuffer(v));
  return buf;
}

TEST(OddModel, MapJsonAndLocate) {
  std::vector<uint8_t> buf = OddModel();
  ExpectCompleteMap(buf);
  auto map = BuildByteMap(buf.data(), buf.size());
  ASSERT_TRUE(map.ok());
  bool range = false;
  for (const Region& r : map->regions)
    range |= r.meaning == "ops[0].params<ConvParams>.output_shape[0..20): 20 int elements" && r.length == 80;
  EXPECT_TRUE(range);

  auto json = ToJson(buf.data(), buf.size(), true);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_TRUE(JsonChecker(*json).Valid()) << *json;
  for (const char* s : {"\"name\": \"odd \\\"model\\\"\\n\"", "\"type_name\": \"Non\\\"Zero\\\\\\t\xc3\xa9\"",
                        "\"activation_alpha\": \"nan\"", "\"activation_min\": -6", "\"activation_max\": \"inf\"",
                        "\"values\": [1, -2, \"inf\", 5.9604645e-08]", "\"min\": -2, \"max\": 1",
                        "\"values\": [1, 3]", "\"values\": [true, false, true]",
                        "\"values\": [-5, 9223372036854775807]", "\"ends\": [9223372036854775807, -9223372036854775808]",
                        "\"params_type\": \"CustomParams\"", "\"is_constant\": true", "\"auto_pad\": \"SameUpper\""})
    EXPECT_NE(json->find(s), std::string::npos) << s << "\n" << *json;

  auto last = Locate(buf.data(), buf.size(), "ops[0].params.output_shape[19]");
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  EXPECT_EQ(last->value, "19");
  auto end = Locate(buf.data(), buf.size(), "ops[1].params<SliceParams>.ends[1]");
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(end->value, "-9223372036854775808");
  EXPECT_EQ(end->length, 8u);
  auto tn = Locate(buf.data(), buf.size(), "ops[2].params.type_name");
  ASSERT_TRUE(tn.ok()) << tn.status().ToString();
  EXPECT_EQ(tn->length, 12u);
}

class LocateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    buf_ = Finish(test::TinyCnn());
    net_ = fb::GetSizePrefixedNet(buf_.data());
  }
  size_t Off(const void* p) const { return static_cast<size_t>(static_cast<const uint8_t*>(p) - buf_.data()); }
  StatusOr<Location> Loc(const std::string& path) const { return Locate(buf_.data(), buf_.size(), path); }
  bool HasSpan(const Location& loc, const std::string& what_prefix, size_t offset) const {
    for (const Span& s : loc.spans)
      if (s.what.rfind(what_prefix, 0) == 0 && s.offset == offset) return true;
    return false;
  }

  std::vector<uint8_t> buf_;
  const fb::Net* net_ = nullptr;
};

TEST_F(LocateTest, StringField) {
  auto loc = Loc("tensors[1].name");
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  const flatbuffers::String* name = net_->tensors()->Get(1)->name();
  EXPECT_EQ(loc->offset, Off(name->c_str()));
  EXPECT_EQ(loc->length, name->size());
  EXPECT_EQ(loc->value, "\"conv1.weight\"");
  EXPECT_EQ(loc->kind, "string");
  EXPECT_TRUE(HasSpan(*loc, "length prefix", Off(name->c_str()) - 4));
  EXPECT_TRUE(HasSpan(*loc, "NUL terminator", Off(name->c_str()) + name->size()));
  // The offset field that points at the string: slot + its value = string.
  bool slot = false;
  for (const Span& s : loc->spans) {
    if (s.what.rfind("offset field", 0) != 0) continue;
    ASSERT_EQ(s.length, 4u);
    slot = s.offset + flatbuffers::ReadScalar<uint32_t>(buf_.data() + s.offset) == Off(name);
  }
  EXPECT_TRUE(slot);
  EXPECT_NE(FormatLocation(*loc, buf_.data()).find("conv1.weight"), std::string::npos);
}

TEST_F(LocateTest, VectorElementThroughUnion) {
  auto loc = Loc("ops[0].params.kernel_shape[1]");
  ASSERT_TRUE(loc.ok()) << loc.status().ToString();
  const auto* ks = net_->ops()->Get(0)->params_as_ConvParams()->kernel_shape();
  EXPECT_EQ(loc->offset, Off(ks->data() + 1));  // element 1 of an int32 vector
  EXPECT_EQ(loc->length, 4u);
  EXPECT_EQ(loc->value, "3");
  EXPECT_EQ(loc->path, "ops[0].params<ConvParams>.kernel_shape[1]");
  EXPECT_TRUE(HasSpan(*loc, "length prefix", Off(ks)));

  auto pads = Loc("ops[0].params<ConvParams>.pads");
  ASSERT_TRUE(pads.ok()) << pads.status().ToString();
  EXPECT_EQ(pads->value, "[1, 1, 1, 1]");
  EXPECT_EQ(pads->length, 16u);
}

TEST_F(LocateTest, TablesScalarsAndData) {
  auto op = Loc("ops[2]");
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  const fb::Op* pool = net_->ops()->Get(2);
  EXPECT_EQ(op->offset, Off(pool));
  EXPECT_EQ(op->kind, "table Op");
  size_t vtable = Off(pool) - static_cast<size_t>(flatbuffers::ReadScalar<int32_t>(buf_.data() + Off(pool)));
  EXPECT_TRUE(HasSpan(*op, "its vtable", vtable));

  auto type = Loc("ops[2].type");
  ASSERT_TRUE(type.ok()) << type.status().ToString();
  EXPECT_EQ(type->value.rfind("MaxPool", 0), 0u) << type->value;
  EXPECT_EQ(type->length, 2u);  // OpType is a ushort

  auto data = Loc("tensors[1].data");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->offset, Off(net_->tensors()->Get(1)->data()->data()));
  EXPECT_EQ(data->length, 8u * 3 * 3 * 3 * 4);
  EXPECT_EQ(data->value.rfind("F32 x 216", 0), 0u) << data->value;

  auto name = Loc("name");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->value, "\"tiny_cnn\"");

  auto root = Loc("");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->offset, Off(net_));
  EXPECT_TRUE(HasSpan(*root, "root offset", 4));  // after the size prefix
}

TEST_F(LocateTest, AgreesWithTheGeneratedApiForEveryOp) {
  for (flatbuffers::uoffset_t i = 0; i < net_->ops()->size(); ++i) {
    const fb::Op* op = net_->ops()->Get(i);
    std::string p = "ops[" + std::to_string(i) + "]";
    SCOPED_TRACE(p);
    auto type = Loc(p + ".type");
    ASSERT_TRUE(type.ok()) << type.status().ToString();
    EXPECT_EQ(type->offset, Off(reinterpret_cast<const flatbuffers::Table*>(op)->GetAddressOf(fb::Op::VT_TYPE)));
    EXPECT_EQ(type->value, std::string(fb::EnumNameOpType(op->type())) + " (" +
                               std::to_string(static_cast<int>(op->type())) + ")");
    auto name = Loc(p + ".name");
    ASSERT_TRUE(name.ok()) << name.status().ToString();
    EXPECT_EQ(name->offset, Off(op->name()->c_str()));
    auto out0 = Loc(p + ".outputs[0]");
    ASSERT_TRUE(out0.ok()) << out0.status().ToString();
    EXPECT_EQ(out0->offset, Off(op->outputs()->data()));
    EXPECT_EQ(out0->value, std::to_string(op->outputs()->Get(0)));
  }
}

TEST_F(LocateTest, BadPathsNameTheFirstBadStep) {
  auto field = Loc("tensors[1].nmae");
  ASSERT_FALSE(field.ok());
  EXPECT_EQ(field.status().code(), StatusCode::kNotFound);
  EXPECT_NE(field.status().message().find("'nmae'"), std::string::npos) << field.status().message();
  EXPECT_NE(field.status().message().find("name, dtype, shape"), std::string::npos) << field.status().message();

  auto index = Loc("ops[99].name");
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("ops[99]"), std::string::npos) << index.status().message();
  EXPECT_NE(index.status().message().find("7 elements"), std::string::npos) << index.status().message();

  auto top = Loc("bogus");
  ASSERT_FALSE(top.ok());
  EXPECT_NE(top.status().message().find("'bogus'"), std::string::npos) << top.status().message();

  auto absent = Loc("ops[0].params.group");
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("not stored"), std::string::npos) << absent.status().message();

  auto wrong_union = Loc("ops[0].params<PoolParams>.kernel_shape");
  ASSERT_FALSE(wrong_union.ok());
  EXPECT_NE(wrong_union.status().message().find("ConvParams"), std::string::npos);

  auto deeper = Loc("tensors[1].name.length");
  ASSERT_FALSE(deeper.ok());
  EXPECT_NE(deeper.status().message().find("'length'"), std::string::npos) << deeper.status().message();

  EXPECT_FALSE(Loc("ops[x]").ok());
  EXPECT_FALSE(Loc("ops..name").ok());
}

TEST(Json, WholeModel) {
  std::vector<uint8_t> buf = Finish(test::TinyCnn());
  auto json = ToJson(buf.data(), buf.size(), false);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_TRUE(JsonChecker(*json).Valid()) << *json;
  for (const char* s : {"\"tiny_cnn\"", "\"Conv\"", "\"Relu\"", "\"Softmax\"", "\"ConvParams\"", "\"PoolParams\"",
                        "\"GemmParams\"", "\"AxisParams\"", "\"kernel_shape\": [3, 3]", "\"elements\": 216",
                        "\"dtype\": \"F32\"", "\"producer\": \"NetBuilder\""})
    EXPECT_NE(json->find(s), std::string::npos) << s;
  // Every op has a params_type (unstored ones at their default, NONE):
  // Relu and GlobalAveragePool take no params.
  EXPECT_EQ(Count(*json, "\"params_type\""), 7u);
  EXPECT_EQ(Count(*json, "\"params_type\": \"NONE\""), 2u);
  EXPECT_EQ(Count(*json, "\"type\": \"Conv\""), 1u);
  // Each of the 12 tensors shows its dtype, each of the 4 constants too.
  EXPECT_EQ(Count(*json, "\"dtype\": \"F32\""), 16u);
  EXPECT_EQ(Count(*json, "\"first\": ["), 4u);     // one per constant

  auto full = ToJson(buf.data(), buf.size(), true);
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(JsonChecker(*full).Valid());
  size_t at = full->find("\"values\": [");
  ASSERT_NE(at, std::string::npos);
  std::string values = full->substr(at, full->find(']', at) - at);
  EXPECT_EQ(Count(values, ","), 215u);  // all 216 weights of conv1.weight

  std::vector<uint8_t> q = Finish(QuantizedModel());
  auto qjson = ToJson(q.data(), q.size(), false);
  ASSERT_TRUE(qjson.ok());
  EXPECT_TRUE(JsonChecker(*qjson).Valid()) << *qjson;
  EXPECT_NE(qjson->find("\"symbol\": \"batch\""), std::string::npos) << *qjson;
  EXPECT_NE(qjson->find("\"dtype\": \"I8\""), std::string::npos) << *qjson;
}

TEST(Summary, Counts) {
  NetBuilder b = test::TinyCnn();
  std::vector<uint8_t> buf = Finish(b);
  auto interp = Interpreter::createFromBuffer(buf.data(), buf.size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  // Parameters from the shapes of the constants, as the builder saw them.
  size_t params = 0;
  for (const auto& t : b.net().tensors) {
    if (t->data.empty()) continue;
    size_t n = 1;
    for (const auto& d : t->shape) n *= static_cast<size_t>(d->size);
    params += n;
  }
  ASSERT_EQ(params, 260u);
  std::string s = Summary(**interp);
  EXPECT_NE(s.find("tiny_cnn"), std::string::npos) << s;
  EXPECT_NE(s.find("ops         7: "), std::string::npos) << s;
  EXPECT_NE(s.find("Conv x1"), std::string::npos) << s;
  EXPECT_NE(s.find("parameters  " + std::to_string(params) + "\n"), std::string::npos) << s;
  EXPECT_NE(s.find(std::to_string(ConstantBytes(b)) + " bytes inline, 0 bytes external"), std::string::npos) << s;
  EXPECT_NE(s.find("[1,3,h,w]"), std::string::npos) << s;
  EXPECT_NE(s.find("probs"), std::string::npos) << s;
  EXPECT_NE(s.find("producer    NetBuilder"), std::string::npos) << s;
}

// A model with control flow: the subgraphs' ops and weights are counted.
TEST(Summary, CountsSubgraphs) {
  NetBuilder b = test::IfOnData();  // ReduceSum, Greater, If; then: Mul, Add; else: Sub
  auto buf = b.finish();
  ASSERT_TRUE(buf.ok());
  auto interp = Interpreter::createFromBuffer(buf->data(), buf->size());
  ASSERT_TRUE(interp.ok()) << interp.status().ToString();
  std::string s = Summary(**interp);
  EXPECT_NE(s.find("ops         6: "), std::string::npos) << s;
  EXPECT_NE(s.find("subgraphs   2 (control flow), holding 3 of the ops"), std::string::npos) << s;
  EXPECT_NE(s.find("Sub x1"), std::string::npos) << s;
  EXPECT_NE(s.find("parameters  2\n"), std::string::npos) << s;  // the net's zero and the branch's two
}

// The binary itself: exit codes 0 / 1 / 2.
int RunInspect(const std::string& args, std::string* out = nullptr) {
  std::string dir = test::TempDir();
  std::string cmd = std::string(KILN_INSPECT_BIN) + " " + args + " >" + dir + "/out 2>" + dir + "/err";
  int status = std::system(cmd.c_str());
  if (out) {
    std::ifstream f(dir + "/out");
    std::stringstream ss;
    ss << f.rdbuf();
    *out = ss.str();
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Binary, ExitCodes) {
  std::string dir = test::TempDir();
  std::vector<uint8_t> buf = Finish(test::TinyCnn());
  test::WriteFile(dir + "/tiny.kiln", buf);
  std::vector<uint8_t> bad = buf;
  bad.resize(bad.size() / 2);
  test::WriteFile(dir + "/bad.kiln", bad);

  std::string out;
  EXPECT_EQ(RunInspect(dir + "/tiny.kiln", &out), 0);
  EXPECT_NE(out.find("tiny_cnn"), std::string::npos) << out;
  EXPECT_EQ(RunInspect("--map " + dir + "/tiny.kiln", &out), 0);
  EXPECT_NE(out.find("(all accounted for)"), std::string::npos) << out;
  EXPECT_EQ(RunInspect("--json --full " + dir + "/tiny.kiln"), 0);
  EXPECT_EQ(RunInspect("--locate 'ops[1].name' " + dir + "/tiny.kiln", &out), 0);
  EXPECT_NE(out.find("\"relu1\""), std::string::npos) << out;

  EXPECT_EQ(RunInspect(dir + "/bad.kiln"), 1);
  EXPECT_EQ(RunInspect(dir + "/missing.kiln"), 1);
  EXPECT_EQ(RunInspect("--locate 'ops[1].nope' " + dir + "/tiny.kiln"), 1);

  EXPECT_EQ(RunInspect(""), 2);
  EXPECT_EQ(RunInspect("--bogus " + dir + "/tiny.kiln"), 2);
  EXPECT_EQ(RunInspect("--map --json " + dir + "/tiny.kiln"), 2);
  EXPECT_EQ(RunInspect("--locate"), 2);
  EXPECT_EQ(RunInspect("--help"), 0);
}

}  // namespace
}  // namespace kiln::inspect
