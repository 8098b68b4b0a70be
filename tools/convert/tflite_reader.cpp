// TFLite reader: verification and decoding (see tflite_reader.h for the
// schema facts). Every table is checked with flatbuffers::Verifier right
// before it is read, so errors name the part of the model that is broken.
#include "tflite_reader.h"

#include <flatbuffers/flatbuffers.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <type_traits>

#include "checked_math.h"
#include "ops/shape_inference.h"

namespace kiln::tflite {

using flatbuffers::Offset;
using flatbuffers::Table;
using flatbuffers::Vector;
using flatbuffers::voffset_t;

namespace {

using namespace field;  // NOLINT

// Option tables this reader reads: one character a field id, in id order:
// 'b' byte/bool, 'i' int, 'f' float, 'v' [int], '.' a field not read.
const std::map<uint8_t, const char*>& OptionSpecs() {
  static const std::map<uint8_t, const char*> specs = {
      {kConv2DOptions, "biibii"},       // padding, stride_w, stride_h, activation, dilation_w, dilation_h
      {kDepthwiseConv2DOptions, "biiibii"},  // ... depth_multiplier 3, activation 4, dilation_w 5, dilation_h 6
      {kPool2DOptions, "biiiib"},       // padding, stride_w, stride_h, filter_width, filter_height, activation
      {kFullyConnectedOptions, "bbbb"},  // activation, weights_format, keep_num_dims, asymmetric_quantize_inputs
      {kSoftmaxOptions, "f"},           // beta
      {kConcatenationOptions, "ib"},    // axis, activation
      {kAddOptions, "bb"},              // activation, pot_scale_int16
      {kSubOptions, "bb"},
      {kMulOptions, "b"},
      {kDivOptions, "b"},
      {kResizeBilinearOptions, "iibb"},  // new_height, new_width (deprecated), align_corners, half_pixel_centers
      {kResizeNearestNeighborOptions, "bb"},  // align_corners, half_pixel_centers
      {kReshapeOptions, "v"},           // new_shape
      {kSpaceToDepthOptions, "i"},      // block_size
      {kDepthToSpaceOptions, "i"},
      {kGatherOptions, "ii"},           // axis, batch_dims
      {kReducerOptions, "b"},           // keep_dims
      {kSqueezeOptions, "v"},           // squeeze_dims
      {kStridedSliceOptions, "iiiiib"},  // begin/end/ellipsis/new_axis/shrink_axis masks, offset
      {kSplitOptions, "i"},             // num_splits
      {kSplitVOptions, "i"},
      {kCastOptions, "bb"},             // in_data_type, out_data_type
      {kArgMaxOptions, "b"},            // output_type
      {kArgMinOptions, "b"},
      {kTransposeConvOptions, "biib"},  // padding, stride_w, stride_h, activation
      {kLeakyReluOptions, "f"},         // alpha
      {kMirrorPadOptions, "b"},         // mode
      {kBatchMatMulOptions, "bbb"},     // adj_x, adj_y, asymmetric_quantize_inputs
      {kGeluOptions, "b"},              // approximate
      {kUnidirectionalSequenceLSTMOptions, "bffbbb"},  // activation, cell_clip, proj_clip, time_major, ...
      {kBidirectionalSequenceLSTMOptions, "bffbbb"},
      {kIfOptions, "ii"},               // then_subgraph_index, else_subgraph_index
      {kWhileOptions, "ii"},            // cond_subgraph_index, body_subgraph_index   // activation, cell_clip, proj_clip, merge_outputs, time_major, ...
  };
  return specs;
}

}  // namespace

const char* TensorTypeName(int type) {
  static const char* const names[] = {"FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING",
                                      "BOOL",    "INT16",   "COMPLEX64", "INT8", "FLOAT64"};
  return type >= 0 && type <= 10 ? names[type] : "UNKNOWN_TYPE";
}

std::string BuiltinName(int32_t code) {
  static const std::map<int32_t, const char*> names = {
      {ADD, "ADD"}, {AVERAGE_POOL_2D, "AVERAGE_POOL_2D"}, {CONCATENATION, "CONCATENATION"}, {CONV_2D, "CONV_2D"},
      {DEPTHWISE_CONV_2D, "DEPTHWISE_CONV_2D"}, {DEPTH_TO_SPACE, "DEPTH_TO_SPACE"}, {DEQUANTIZE, "DEQUANTIZE"},
      {FLOOR, "FLOOR"}, {FULLY_CONNECTED, "FULLY_CONNECTED"}, {L2_NORMALIZATION, "L2_NORMALIZATION"},
      {LOGISTIC, "LOGISTIC"}, {MAX_POOL_2D, "MAX_POOL_2D"}, {MUL, "MUL"}, {RELU, "RELU"},
      {RELU_N1_TO_1, "RELU_N1_TO_1"}, {RELU6, "RELU6"}, {RESHAPE, "RESHAPE"}, {RESIZE_BILINEAR, "RESIZE_BILINEAR"},
      {SOFTMAX, "SOFTMAX"}, {SPACE_TO_DEPTH, "SPACE_TO_DEPTH"}, {TANH, "TANH"}, {CUSTOM, "CUSTOM"}, {PAD, "PAD"},
      {GATHER, "GATHER"}, {TRANSPOSE, "TRANSPOSE"}, {MEAN, "MEAN"}, {SUB, "SUB"}, {DIV, "DIV"},
      {SQUEEZE, "SQUEEZE"}, {STRIDED_SLICE, "STRIDED_SLICE"}, {EXP, "EXP"}, {SPLIT, "SPLIT"},
      {LOG_SOFTMAX, "LOG_SOFTMAX"}, {CAST, "CAST"}, {PRELU, "PRELU"}, {MAXIMUM, "MAXIMUM"}, {ARG_MAX, "ARG_MAX"},
      {MINIMUM, "MINIMUM"}, {LESS, "LESS"}, {NEG, "NEG"}, {PADV2, "PADV2"}, {GREATER, "GREATER"},
      {SELECT, "SELECT"}, {SLICE, "SLICE"}, {TRANSPOSE_CONV, "TRANSPOSE_CONV"}, {TILE, "TILE"},
      {EXPAND_DIMS, "EXPAND_DIMS"}, {EQUAL, "EQUAL"}, {LOG, "LOG"}, {SUM, "SUM"}, {SQRT, "SQRT"},
      {RSQRT, "RSQRT"}, {POW, "POW"}, {ARG_MIN, "ARG_MIN"}, {REDUCE_PROD, "REDUCE_PROD"},
      {REDUCE_MAX, "REDUCE_MAX"}, {LOGICAL_NOT, "LOGICAL_NOT"}, {REDUCE_MIN, "REDUCE_MIN"}, {SQUARE, "SQUARE"},
      {RESIZE_NEAREST_NEIGHBOR, "RESIZE_NEAREST_NEIGHBOR"}, {LEAKY_RELU, "LEAKY_RELU"},
      {SQUARED_DIFFERENCE, "SQUARED_DIFFERENCE"}, {MIRROR_PAD, "MIRROR_PAD"}, {ABS, "ABS"}, {SPLIT_V, "SPLIT_V"},
      {ELU, "ELU"}, {HARD_SWISH, "HARD_SWISH"}, {SELECT_V2, "SELECT_V2"}, {DENSIFY, "DENSIFY"},
      {BATCH_MATMUL, "BATCH_MATMUL"}, {GELU, "GELU"}, {QUANTIZE, "QUANTIZE"},
      {IF, "IF"}, {WHILE, "WHILE"}, {UNIDIRECTIONAL_SEQUENCE_LSTM, "UNIDIRECTIONAL_SEQUENCE_LSTM"}, {BIDIRECTIONAL_SEQUENCE_LSTM, "BIDIRECTIONAL_SEQUENCE_LSTM"},
  };
  auto it = names.find(code);
  return it != names.end() ? it->second : "BUILTIN_" + std::to_string(code);
}

// ---- Options ----

char Options::Kind(int id) const {
  if (!table_) return '.';
  auto it = OptionSpecs().find(type_);
  if (it == OptionSpecs().end() || id < 0 || id >= static_cast<int>(std::strlen(it->second))) return '.';
  return it->second[id];
}

int32_t Options::Int(int id, int32_t def) const {
  return Kind(id) == 'i' ? table_->GetField<int32_t>(VT(id), def) : def;
}

float Options::Float(int id, float def) const { return Kind(id) == 'f' ? table_->GetField<float>(VT(id), def) : def; }

int8_t Options::Byte(int id, int8_t def) const { return Kind(id) == 'b' ? table_->GetField<int8_t>(VT(id), def) : def; }

std::vector<int32_t> Options::Ints(int id) const {
  std::vector<int32_t> r;
  if (Kind(id) != 'v') return r;
  if (auto* v = table_->GetPointer<const Vector<int32_t>*>(VT(id))) r.assign(v->begin(), v->end());
  return r;
}

// ---- parser ----

class ModelParser {
 public:
  ModelParser(const uint8_t* buf, size_t size) : buf_(buf), size_(size), v_(buf, size, /*max_depth=*/64) {}

  Status Parse(Model* m) {
    if (size_ < 8) return InvalidArgument("file is %zu bytes, too small for a TFLite model", size_);
    if (!flatbuffers::BufferHasIdentifier(buf_, "TFL3"))
      return InvalidArgument("not a TFLite model (no \"TFL3\" file identifier at byte 4)");
    flatbuffers::uoffset_t root = v_.VerifyOffset(0);
    if (root == 0) return InvalidArgument("root table offset is outside the file");
    const Table* t = reinterpret_cast<const Table*>(buf_ + root);
    KILN_RETURN_IF_ERROR(Start(t), "model");
    KILN_ASSIGN_OR_RETURN(m->version, Scalar<uint32_t>(t, model_f::kVersion, 0), "model version");
    KILN_ASSIGN_OR_RETURN(m->description, Str(t, model_f::kDescription), "model description");

    KILN_ASSIGN_OR_RETURN(auto* buffers, Tables(t, model_f::kBuffers), "model buffers");
    for (size_t i = 0; buffers && i < buffers->size(); ++i) {
      KILN_ASSIGN_OR_RETURN(ByteSpan b, ParseBuffer(buffers->Get(static_cast<flatbuffers::uoffset_t>(i))), "buffer %zu", i);
      m->buffers.push_back(b);
    }
    KILN_ASSIGN_OR_RETURN(auto* codes, Tables(t, model_f::kOperatorCodes), "model operator_codes");
    for (size_t i = 0; codes && i < codes->size(); ++i) {
      OperatorCode c;
      KILN_RETURN_IF_ERROR(ParseOpCode(codes->Get(static_cast<flatbuffers::uoffset_t>(i)), &c), "operator code %zu", i);
      m->operator_codes.push_back(std::move(c));
    }
    KILN_ASSIGN_OR_RETURN(auto* subgraphs, Tables(t, model_f::kSubgraphs), "model subgraphs");
    if (!subgraphs || subgraphs->size() == 0) return InvalidArgument("the model has no subgraph");
    for (size_t i = 0; i < subgraphs->size(); ++i) {
      SubGraph g;
      KILN_RETURN_IF_ERROR(ParseSubGraph(subgraphs->Get(static_cast<flatbuffers::uoffset_t>(i)), *m, &g), "subgraph %zu", i);
      m->subgraphs.push_back(std::move(g));
    }
    v_.EndTable();
    return Status::Ok();
  }

 private:
  Status Corrupt(const char* what) const { return InvalidArgument("%s is malformed or outside the file", what); }

  Status Start(const Table* t) {
    if (!t || !t->VerifyTableStart(v_)) return Corrupt("table header");
    return Status::Ok();
  }

  template <typename T>
  StatusOr<T> Scalar(const Table* t, int id, T def) {
    if (!t->VerifyField<T>(v_, VT(id), sizeof(T))) return Corrupt(StrFormat("field %d", id).c_str());
    return t->GetField<T>(VT(id), def);
  }

  template <typename T>
  StatusOr<const Vector<T>*> Vec(const Table* t, int id) {
    if (!t->VerifyOffset(v_, VT(id))) return Corrupt(StrFormat("vector field %d", id).c_str());
    auto* v = t->GetPointer<const Vector<T>*>(VT(id));
    if (!v_.VerifyVector(v)) return Corrupt(StrFormat("vector field %d", id).c_str());
    return v;
  }

  template <typename T>
  StatusOr<std::vector<T>> VecCopy(const Table* t, int id) {
    KILN_ASSIGN_OR_RETURN(auto* v, Vec<T>(t, id));
    std::vector<T> r;
    if (v && v->size()) {  // memcpy: the verifier aligns a vector to 4 bytes, not to an int64 element
      static_assert(std::is_arithmetic<T>::value, "VecCopy copies scalars");
      r.resize(v->size());
      std::memcpy(r.data(), v->Data(), r.size() * sizeof(T));
    }
    return r;
  }

  StatusOr<const Vector<Offset<Table>>*> Tables(const Table* t, int id) { return Vec<Offset<Table>>(t, id); }

  StatusOr<std::string> Str(const Table* t, int id) {
    if (!t->VerifyOffset(v_, VT(id))) return Corrupt(StrFormat("string field %d", id).c_str());
    auto* s = t->GetPointer<const flatbuffers::String*>(VT(id));
    if (!v_.VerifyString(s)) return Corrupt(StrFormat("string field %d", id).c_str());
    return s ? s->str() : std::string();
  }

  StatusOr<const Table*> SubTable(const Table* t, int id) {
    if (!t->VerifyOffset(v_, VT(id))) return Corrupt(StrFormat("table field %d", id).c_str());
    return t->GetPointer<const Table*>(VT(id));
  }

  StatusOr<ByteSpan> ParseBuffer(const Table* t) {
    KILN_RETURN_IF_ERROR(Start(t));
    KILN_ASSIGN_OR_RETURN(auto* data, Vec<uint8_t>(t, buffer_f::kData), "data");
    KILN_ASSIGN_OR_RETURN(uint64_t offset, Scalar<uint64_t>(t, buffer_f::kOffset, 0), "offset");
    KILN_ASSIGN_OR_RETURN(uint64_t size, Scalar<uint64_t>(t, buffer_f::kSize, 0), "size");
    v_.EndTable();
    ByteSpan b;
    if (offset > 1) {  // data stored after the FlatBuffer, at a file offset
      if (offset > size_ || size > size_ - offset)
        return InvalidArgument("data at offset %llu, %llu bytes, is outside the %zu-byte file",
                               static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size), size_);
      b.data = buf_ + offset;
      b.size = static_cast<size_t>(size);
    } else if (data) {
      b.data = data->data();
      b.size = data->size();
    }
    return b;
  }

  Status ParseOpCode(const Table* t, OperatorCode* c) {
    KILN_RETURN_IF_ERROR(Start(t));
    KILN_ASSIGN_OR_RETURN(int8_t deprecated, Scalar<int8_t>(t, opcode_f::kDeprecatedBuiltinCode, 0));
    KILN_ASSIGN_OR_RETURN(int32_t builtin, Scalar<int32_t>(t, opcode_f::kBuiltinCode, 0));
    KILN_ASSIGN_OR_RETURN(c->version, Scalar<int32_t>(t, opcode_f::kVersion, 1));
    KILN_ASSIGN_OR_RETURN(c->custom_code, Str(t, opcode_f::kCustomCode), "custom_code");
    c->builtin = std::max<int32_t>(deprecated, builtin);
    v_.EndTable();
    return Status::Ok();
  }

  Status ParseTensor(const Table* t, const Model& m, Tensor* out) {
    KILN_RETURN_IF_ERROR(Start(t));
    KILN_ASSIGN_OR_RETURN(auto* shape, Vec<int32_t>(t, tensor_f::kShape), "shape");
    out->has_shape = shape != nullptr;
    if (shape) out->shape.assign(shape->begin(), shape->end());
    KILN_ASSIGN_OR_RETURN(out->shape_signature, VecCopy<int32_t>(t, tensor_f::kShapeSignature), "shape_signature");
    KILN_ASSIGN_OR_RETURN(out->type, Scalar<int8_t>(t, tensor_f::kType, kFloat32), "type");
    KILN_ASSIGN_OR_RETURN(out->buffer, Scalar<uint32_t>(t, tensor_f::kBuffer, 0), "buffer");
    KILN_ASSIGN_OR_RETURN(out->name, Str(t, tensor_f::kName), "name");
    if (out->buffer >= m.buffers.size() && !(out->buffer == 0 && m.buffers.empty()))
      return InvalidArgument("buffer index %u out of range (%zu buffers)", out->buffer, m.buffers.size());
    for (int32_t d : out->shape)
      if (d < -1) return InvalidArgument("'%s': negative dimension %d in the shape", out->name.c_str(), d);
    KILN_ASSIGN_OR_RETURN(const Table* q, SubTable(t, tensor_f::kQuantization), "quantization");
    if (q) {
      KILN_RETURN_IF_ERROR(Start(q), "quantization");
      KILN_ASSIGN_OR_RETURN(out->quant.scale, VecCopy<float>(q, quant_f::kScale), "quantization scale");
      KILN_ASSIGN_OR_RETURN(out->quant.zero_point, VecCopy<int64_t>(q, quant_f::kZeroPoint), "quantization zero_point");
      KILN_ASSIGN_OR_RETURN(out->quant.dimension, Scalar<int32_t>(q, quant_f::kQuantizedDimension, 0),
                       "quantized_dimension");
      v_.EndTable();
    }
    KILN_ASSIGN_OR_RETURN(const Table* sparsity, SubTable(t, tensor_f::kSparsity), "sparsity");
    out->sparse = sparsity != nullptr;
    if (sparsity) KILN_RETURN_IF_ERROR(ParseSparsity(sparsity, &out->sparsity), "'%s': sparsity", out->name.c_str());
    v_.EndTable();
    return Status::Ok();
  }

  // A SparseIndexVector union member (type byte at field type_id, table at
  // type_id + 1), widened to int64. Absent: an empty vector.
  Status ParseIndexVector(const Table* t, int type_id, const char* what, std::vector<int64_t>* out) {
    KILN_ASSIGN_OR_RETURN(uint8_t type, Scalar<uint8_t>(t, type_id, kIndexNone), "%s type", what);
    KILN_ASSIGN_OR_RETURN(const Table* v, SubTable(t, type_id + 1), "%s", what);
    if (!v) return Status::Ok();
    KILN_RETURN_IF_ERROR(Start(v), "%s", what);
    switch (type) {
      case kIndexInt32: {
        KILN_ASSIGN_OR_RETURN(auto x, VecCopy<int32_t>(v, index_vector_f::kValues), "%s values", what);
        out->assign(x.begin(), x.end());
        break;
      }
      case kIndexUint16: {
        KILN_ASSIGN_OR_RETURN(auto x, VecCopy<uint16_t>(v, index_vector_f::kValues), "%s values", what);
        out->assign(x.begin(), x.end());
        break;
      }
      case kIndexUint8: {
        KILN_ASSIGN_OR_RETURN(auto x, VecCopy<uint8_t>(v, index_vector_f::kValues), "%s values", what);
        out->assign(x.begin(), x.end());
        break;
      }
      default: return InvalidArgument("%s: unknown SparseIndexVector type %u", what, type);
    }
    v_.EndTable();
    return Status::Ok();
  }

  Status ParseSparsity(const Table* t, Sparsity* sp) {
    KILN_RETURN_IF_ERROR(Start(t));
    KILN_ASSIGN_OR_RETURN(sp->traversal_order, VecCopy<int32_t>(t, sparsity_f::kTraversalOrder), "traversal_order");
    KILN_ASSIGN_OR_RETURN(sp->block_map, VecCopy<int32_t>(t, sparsity_f::kBlockMap), "block_map");
    KILN_ASSIGN_OR_RETURN(auto* dims, Tables(t, sparsity_f::kDimMetadata), "dim_metadata");
    for (size_t i = 0; dims && i < dims->size(); ++i) {
      const Table* d = dims->Get(static_cast<flatbuffers::uoffset_t>(i));
      DimensionMetadata m;
      KILN_RETURN_IF_ERROR(Start(d), "dim_metadata %zu", i);
      KILN_ASSIGN_OR_RETURN(m.format, Scalar<int8_t>(d, dim_metadata_f::kFormat, kDimDense),
                            "dim_metadata %zu format", i);
      KILN_ASSIGN_OR_RETURN(m.dense_size, Scalar<int32_t>(d, dim_metadata_f::kDenseSize, 0),
                            "dim_metadata %zu dense_size", i);
      KILN_RETURN_IF_ERROR(ParseIndexVector(d, dim_metadata_f::kSegmentsType, "array_segments", &m.segments),
                           "dim_metadata %zu", i);
      KILN_RETURN_IF_ERROR(ParseIndexVector(d, dim_metadata_f::kIndicesType, "array_indices", &m.indices),
                           "dim_metadata %zu", i);
      v_.EndTable();
      sp->dim_metadata.push_back(std::move(m));
    }
    v_.EndTable();
    return Status::Ok();
  }

  Status ParseOptions(const Table* op, Operator* out) {
    KILN_ASSIGN_OR_RETURN(uint8_t type, Scalar<uint8_t>(op, operator_f::kOptionsType, kNoOptions), "builtin_options_type");
    KILN_ASSIGN_OR_RETURN(const Table* t, SubTable(op, operator_f::kOptions), "builtin_options");
    out->options.type_ = type;
    auto spec = OptionSpecs().find(type);
    if (!t || spec == OptionSpecs().end()) return Status::Ok();  // none, or a table this reader never reads
    KILN_RETURN_IF_ERROR(Start(t), "builtin_options (type %u)", type);
    for (int id = 0; spec->second[id]; ++id) {
      bool ok = true;
      switch (spec->second[id]) {
        case 'b': ok = t->VerifyField<int8_t>(v_, VT(id), 1); break;
        case 'i': ok = t->VerifyField<int32_t>(v_, VT(id), 4); break;
        case 'f': ok = t->VerifyField<float>(v_, VT(id), 4); break;
        case 'v':
          ok = t->VerifyOffset(v_, VT(id)) && v_.VerifyVector(t->GetPointer<const Vector<int32_t>*>(VT(id)));
          break;
        default: break;
      }
      if (!ok) return InvalidArgument("builtin_options (type %u): field %d is malformed or outside the file", type, id);
    }
    v_.EndTable();
    out->options.table_ = t;
    return Status::Ok();
  }

  Status ParseOperator(const Table* t, const Model& m, size_t num_tensors, Operator* out) {
    KILN_RETURN_IF_ERROR(Start(t));
    KILN_ASSIGN_OR_RETURN(out->opcode_index, Scalar<uint32_t>(t, operator_f::kOpcodeIndex, 0), "opcode_index");
    if (out->opcode_index >= m.operator_codes.size())
      return InvalidArgument("opcode_index %u out of range (%zu operator codes)", out->opcode_index,
                             m.operator_codes.size());
    KILN_ASSIGN_OR_RETURN(out->inputs, VecCopy<int32_t>(t, operator_f::kInputs), "inputs");
    KILN_ASSIGN_OR_RETURN(out->outputs, VecCopy<int32_t>(t, operator_f::kOutputs), "outputs");
    for (size_t k = 0; k < out->inputs.size(); ++k)
      if (out->inputs[k] < -1 || out->inputs[k] >= static_cast<int64_t>(num_tensors))
        return InvalidArgument("input %zu: tensor index %d out of range (%zu tensors)", k, out->inputs[k], num_tensors);
    for (size_t k = 0; k < out->outputs.size(); ++k)
      if (out->outputs[k] < 0 || out->outputs[k] >= static_cast<int64_t>(num_tensors))
        return InvalidArgument("output %zu: tensor index %d out of range (%zu tensors)", k, out->outputs[k],
                               num_tensors);
    KILN_RETURN_IF_ERROR(ParseOptions(t, out));
    KILN_ASSIGN_OR_RETURN(auto* custom, Vec<uint8_t>(t, operator_f::kCustomOptions), "custom_options");
    if (custom) out->custom_options = ByteSpan{custom->data(), custom->size()};
    v_.EndTable();
    return Status::Ok();
  }

  Status ParseSubGraph(const Table* t, const Model& m, SubGraph* g) {
    KILN_RETURN_IF_ERROR(Start(t));
    KILN_ASSIGN_OR_RETURN(g->name, Str(t, subgraph_f::kName), "name");
    KILN_ASSIGN_OR_RETURN(auto* tensors, Tables(t, subgraph_f::kTensors), "tensors");
    for (size_t i = 0; tensors && i < tensors->size(); ++i) {
      Tensor x;
      KILN_RETURN_IF_ERROR(ParseTensor(tensors->Get(static_cast<flatbuffers::uoffset_t>(i)), m, &x), "tensor %zu", i);
      g->tensors.push_back(std::move(x));
    }
    const size_t n = g->tensors.size();
    KILN_ASSIGN_OR_RETURN(g->inputs, VecCopy<int32_t>(t, subgraph_f::kInputs), "inputs");
    KILN_ASSIGN_OR_RETURN(g->outputs, VecCopy<int32_t>(t, subgraph_f::kOutputs), "outputs");
    for (int32_t i : g->inputs)
      if (i < 0 || i >= static_cast<int64_t>(n))
        return InvalidArgument("input tensor %d out of range (%zu tensors)", i, n);
    for (int32_t i : g->outputs)
      if (i < 0 || i >= static_cast<int64_t>(n))
        return InvalidArgument("output tensor %d out of range (%zu tensors)", i, n);
    KILN_ASSIGN_OR_RETURN(auto* ops, Tables(t, subgraph_f::kOperators), "operators");
    for (size_t i = 0; ops && i < ops->size(); ++i) {
      Operator op;
      KILN_RETURN_IF_ERROR(ParseOperator(ops->Get(static_cast<flatbuffers::uoffset_t>(i)), m, n, &op), "operator %zu", i);
      g->operators.push_back(std::move(op));
    }
    v_.EndTable();
    return Status::Ok();
  }

  const uint8_t* buf_;
  size_t size_;
  flatbuffers::Verifier v_;
};

// ---- window attributes ----

StatusOr<Window> ReadWindow(const OperatorCode& code, const Operator& op) {
  Window w;
  const Options& o = op.options;
  if (code.builtin == CUSTOM) {
    const bool pool = code.custom_code == "MaxPoolingWithArgmax2D";
    const size_t n = pool ? 5 : 3;
    if (op.custom_options.size < 4 * n)
      return InvalidArgument("custom options are %zu bytes, need %zu", op.custom_options.size, 4 * n);
    int32_t v[5];
    std::memcpy(v, op.custom_options.data, 4 * n);
    w.padding = v[0] == 2 ? kValid : kSame;
    w.stride_w = v[1];
    w.stride_h = v[2];
    if (pool) {
      w.filter_w = v[3];
      w.filter_h = v[4];
    }
  } else {
    w.padding = o.Byte(opt::kPadding, kSame);
    w.stride_w = o.Int(opt::kStrideW, 1);
    w.stride_h = o.Int(opt::kStrideH, 1);
    switch (code.builtin) {
      case CONV_2D:
        w.activation = o.Byte(opt::kConvActivation, kActNone);
        w.dilation_w = o.Int(opt::kConvDilationW, 1);
        w.dilation_h = o.Int(opt::kConvDilationH, 1);
        break;
      case DEPTHWISE_CONV_2D:
        w.activation = o.Byte(opt::kDwActivation, kActNone);
        w.dilation_w = o.Int(opt::kDwDilationW, 1);
        w.dilation_h = o.Int(opt::kDwDilationH, 1);
        break;
      case TRANSPOSE_CONV: w.activation = o.Byte(opt::kTransposeConvActivation, kActNone); break;
      default:  // pools
        w.activation = o.Byte(opt::kPoolActivation, kActNone);
        w.filter_w = o.Int(opt::kPoolFilterW, 0);
        w.filter_h = o.Int(opt::kPoolFilterH, 0);
    }
  }
  const bool pool = w.filter_w || w.filter_h || code.builtin == AVERAGE_POOL_2D || code.builtin == MAX_POOL_2D;
  if (w.stride_h < 1 || w.stride_w < 1 || w.dilation_h < 1 || w.dilation_w < 1 ||
      (pool && (w.filter_h < 1 || w.filter_w < 1)))
    return InvalidArgument("strides %dx%d, dilations %dx%d, filter %dx%d: each must be >= 1", w.stride_h, w.stride_w,
                           w.dilation_h, w.dilation_w, w.filter_h, w.filter_w);
  return w;
}

// ---- op semantics ----

StatusOr<SliceSpec> ResolveSlice(const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                                 const std::vector<int64_t>& steps, const SliceMasks& m,
                                 const std::vector<int64_t>& shape) {
  if (begin.size() > shape.size() || end.size() != begin.size() || steps.size() != begin.size())
    return InvalidArgument("begin/end/strides have %zu/%zu/%zu values for rank %zu", begin.size(), end.size(),
                           steps.size(), shape.size());
  SliceSpec r;
  for (size_t d = 0; d < begin.size(); ++d) {
    int64_t b = begin[d], e = end[d], s = steps[d];
    if (s == 0) return InvalidArgument("stride 0 on axis %zu", d);
    if (m.sizes) e = e == -1 ? INT64_MAX : b + e;
    if (m.offset) e += b;
    if (m.begin >> d & 1) b = s > 0 ? 0 : INT64_MAX;
    if (m.end >> d & 1) e = s > 0 ? INT64_MAX : INT64_MIN;
    if (m.shrink >> d & 1) {
      if (b < 0) b += shape[d];
      if (b < 0 || b >= shape[d]) return InvalidArgument("shrunk axis %zu: index out of range", d);
      e = b + 1;
      s = 1;
    }
    r.starts.push_back(b);
    r.ends.push_back(e);
    r.steps.push_back(s);
  }
  return r;
}

SliceMasks ReadSliceMasks(const Operator& op, bool strided) {
  SliceMasks m;
  m.sizes = !strided;
  if (!strided) return m;
  m.begin = op.options.Int(opt::kBeginMask, 0);
  m.end = op.options.Int(opt::kEndMask, 0);
  m.shrink = op.options.Int(opt::kShrinkAxisMask, 0);
  m.offset = op.options.Bool(opt::kSliceOffset, false);
  m.unsupported = op.options.Int(opt::kEllipsisMask, 0) != 0 || op.options.Int(opt::kNewAxisMask, 0) != 0;
  return m;
}

StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, int rank) {
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank)
      return InvalidArgument("axis %lld out of range for rank %d", static_cast<long long>(a), rank);
    if (a < 0) a += rank;
  }
  return axes;
}

void TransposeConvPadding(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t* begin, int64_t* end,
                          int64_t* output_padding) {
  const int64_t total = stride * (in - 1) + kernel - out;
  *begin = total > 0 ? total / 2 : 0;
  *end = total > 0 ? total - total / 2 : 0;
  *output_padding = total < 0 ? -total : 0;
}

// ---- tensor data ----

namespace {

// Saturating (kDimOverflow), so that a hostile shape never matches a buffer.
int64_t Numel(const std::vector<int64_t>& s) {
  int64_t n;
  return CheckedElementCount(s, &n) ? n : kDimOverflow;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  float f;
  if (exp == 0) f = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) f = man ? NAN : INFINITY;
  else f = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= sign;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

size_t TypeSize(int type) {
  switch (type) {
    case kFloat32: case kInt32: return 4;
    case kFloat16: case kInt16: return 2;
    case kInt64: case kFloat64: case kComplex64: return 8;
    case kUInt8: case kInt8: case kBool: return 1;
    default: return 0;
  }
}

bool HasData(const Model& m, const Tensor& t) { return t.buffer < m.buffers.size() && m.buffers[t.buffer].size > 0; }

StatusOr<TensorData> ReadData(const Model& m, const Tensor& t) {
  if (!HasData(m, t)) return InvalidArgument("tensor '%s' has no data", t.name.c_str());
  TensorData d;
  d.type = t.type;
  d.shape.assign(t.shape.begin(), t.shape.end());
  for (int64_t x : d.shape)
    if (x < 0) return InvalidArgument("constant '%s' has an unknown dimension", t.name.c_str());
  const ByteSpan& s = m.buffers[t.buffer];
  if (t.sparse) {
    auto dense = Densify(t.type, d.shape, t.sparsity, s);
    if (!dense.ok()) return dense.status().WithContext(StrFormat("sparse constant '%s'", t.name.c_str()));
    return dense;
  }
  size_t want = 0;
  if (TypeSize(t.type) == 0 || !CheckedShapeBytes(d.shape, TypeSize(t.type), &want) || s.size != want)
    return InvalidArgument("constant '%s': buffer has %zu bytes, %zu elements of %s need %llu", t.name.c_str(), s.size,
                           static_cast<size_t>(Numel(d.shape)), TensorTypeName(t.type),
                           static_cast<unsigned long long>(want));
  d.bytes.assign(s.data, s.data + s.size);
  return d;
}

Status ToFloat32(TensorData* d, const Quantization& q) {
  if (d->type == kFloat32) return Status::Ok();
  const int64_t n = Numel(d->shape);
  if (d->bytes.size() != static_cast<size_t>(n) * TypeSize(d->type))  // ReadData's sizes: checked, never overflowing
    return InvalidArgument("constant data of %zu bytes for shape of %lld elements", d->bytes.size(),
                           static_cast<long long>(n));
  std::vector<uint8_t> out(static_cast<size_t>(n) * 4);
  if (d->type == kFloat16) {
    for (int64_t k = 0; k < n; ++k) {
      uint16_t h;
      std::memcpy(&h, &d->bytes[static_cast<size_t>(2 * k)], 2);
      float f = HalfToFloat(h);
      std::memcpy(&out[static_cast<size_t>(4 * k)], &f, 4);
    }
  } else if (d->type == kInt8 || d->type == kUInt8) {
    const int64_t channels = static_cast<int64_t>(q.scale.size());
    int64_t inner = 1;
    if (channels == 0) return InvalidArgument("quantized data without scales");
    if (channels > 1) {
      if (q.dimension < 0 || q.dimension >= static_cast<int>(d->shape.size()) ||
          d->shape[static_cast<size_t>(q.dimension)] != channels)
        return InvalidArgument("%lld scales do not match dimension %d", static_cast<long long>(channels), q.dimension);
      for (size_t k = static_cast<size_t>(q.dimension) + 1; k < d->shape.size(); ++k) inner *= d->shape[k];
    }
    for (int64_t k = 0; k < n; ++k) {
      const size_t c = static_cast<size_t>(channels > 1 ? (k / inner) % channels : 0);
      const uint8_t b = d->bytes[static_cast<size_t>(k)];
      const float v = d->type == kInt8 ? static_cast<float>(static_cast<int8_t>(b)) : static_cast<float>(b);
      const float f = q.scale[c] * (v - static_cast<float>(c < q.zero_point.size() ? q.zero_point[c] : 0));
      std::memcpy(&out[static_cast<size_t>(4 * k)], &f, 4);
    }
  } else {
    return Unsupported("%s data cannot be read as float", TensorTypeName(d->type));
  }
  d->bytes = std::move(out);
  d->type = kFloat32;
  return Status::Ok();
}

StatusOr<std::vector<int64_t>> ToInt64(const TensorData& d) {
  if (d.type != kInt64 && d.type != kInt32)
    return Unsupported("%s data where INT32 or INT64 is needed", TensorTypeName(d.type));
  const int64_t n = Numel(d.shape);
  if (n == kDimOverflow || d.bytes.size() != static_cast<size_t>(n) * TypeSize(d.type))
    return InvalidArgument("constant data of %zu bytes for shape of %lld elements", d.bytes.size(),
                           static_cast<long long>(n));
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) {
    if (d.type == kInt64) {
      std::memcpy(&v[k], &d.bytes[8 * k], 8);
    } else if (d.type == kInt32) {
      int32_t x;
      std::memcpy(&x, &d.bytes[4 * k], 4);
      v[k] = x;
    } else {
      return Unsupported("%s data where INT32 or INT64 is needed", TensorTypeName(d.type));
    }
  }
  return v;
}

std::vector<int64_t> PermuteDims(const std::vector<int64_t>& s, const std::vector<int64_t>& perm) {
  std::vector<int64_t> r;
  for (int64_t p : perm) r.push_back(s[static_cast<size_t>(p)]);
  return r;
}

std::vector<uint8_t> PermuteData(const std::vector<uint8_t>& src, const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& perm, size_t elem) {
  const size_t rank = shape.size();
  std::vector<int64_t> out_shape = PermuteDims(shape, perm), src_stride(rank, 1), idx(rank, 0);
  for (size_t d = rank; d-- > 1;) src_stride[d - 1] = src_stride[d] * shape[d];
  std::vector<uint8_t> dst(src.size());
  const int64_t n = Numel(shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * src_stride[static_cast<size_t>(perm[d])];
    std::memcpy(&dst[static_cast<size_t>(i) * elem], &src[static_cast<size_t>(off) * elem], elem);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return dst;
}

StatusOr<Model> ReadModel(std::vector<uint8_t> bytes) {
  if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Unsupported("TFLite files of 2 GiB or more are not supported (%zu bytes)", bytes.size());
  Model m;
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  m.bytes = owned;
  ModelParser p(owned->data(), owned->size());
  KILN_RETURN_IF_ERROR(p.Parse(&m));
  return m;
}

StatusOr<Model> ReadModelFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return NotFound("%s: cannot open", path.c_str());
  std::streamoff size = f.tellg();
  if (size < 0) return IoError("%s: cannot read the size", path.c_str());
  if (static_cast<uint64_t>(size) >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return Unsupported("%s: TFLite files of 2 GiB or more are not supported", path.c_str());
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  f.seekg(0);
  if (size > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), size)) return IoError("%s: read failed", path.c_str());
  auto m = ReadModel(std::move(bytes));
  if (!m.ok()) return m.status().WithContext(path);
  return m;
}

}  // namespace kiln::tflite
