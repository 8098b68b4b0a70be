// A small reader of TFLite model files (.tflite): our own accessors over
// flatbuffers::Table, not TensorFlow's schema or generated code.
//
// tflite::ReadModel verifies the bytes with flatbuffers::Verifier (buffer
// size, root offset, every table, vector and string this reader touches,
// and the options table of every operator whose options type it knows),
// then decodes the model into the plain structs below. Indices that point
// into other vectors (tensor -> buffer, operator -> opcode, operator ->
// tensor) are range-checked too, so the importer never reads outside the
// file: a corrupt .tflite gives a Status naming the table and index.
//
// Schema facts used (tensorflow/lite/schema/schema.fbs, public): a table
// field with id N is found at vtable offset 4 + 2 * N; a union field takes
// two ids (the type byte, then the table). File identifier "TFL3".
//   Model:        version 0, operator_codes 1, subgraphs 2, description 3, buffers 4
//   SubGraph:     tensors 0, inputs 1, outputs 2, operators 3, name 4
//   Tensor:       shape 0 ([int]), type 1 (byte), buffer 2 (uint), name 3,
//                 quantization 4, is_variable 5, sparsity 6, shape_signature 7
//   SparsityParameters: traversal_order 0 ([int]), block_map 1 ([int]),
//                 dim_metadata 2 ([DimensionMetadata])
//   DimensionMetadata: format 0 (byte: DENSE 0, SPARSE_CSR 1), dense_size 1 (int),
//                 array_segments_type 2, array_segments 3, array_indices_type 4,
//                 array_indices 5 (union SparseIndexVector: Int32Vector 1,
//                 Uint16Vector 2, Uint8Vector 3; each a table with values 0)
//   QuantizationParameters: min 0, max 1, scale 2 ([float]), zero_point 3 ([long]),
//                 details_type 4, details 5, quantized_dimension 6 (int)
//   Buffer:       data 0 ([ubyte]), offset 1 (ulong), size 2 (ulong)
//   Operator:     opcode_index 0 (uint), inputs 1, outputs 2, builtin_options_type 3
//                 (ubyte), builtin_options 4, custom_options 5 ([ubyte])
//   OperatorCode: deprecated_builtin_code 0 (byte), custom_code 1, version 2 (int, 1),
//                 builtin_code 3 (int); the op is max(deprecated, builtin_code)
// The option tables and their field ids are listed in tflite_reader.cpp.
//
// Thread-safety: a Model is immutable after ReadModel; share it freely.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace flatbuffers {
class Table;
}

namespace kiln::tflite {

// Vtable offset of the field with id `id`.
constexpr uint16_t VT(int id) { return static_cast<uint16_t>(4 + 2 * id); }

// Field ids of the structural tables (the ones listed above).
namespace field {
namespace model_f { constexpr int kVersion = 0, kOperatorCodes = 1, kSubgraphs = 2, kDescription = 3, kBuffers = 4; }
namespace subgraph_f { constexpr int kTensors = 0, kInputs = 1, kOutputs = 2, kOperators = 3, kName = 4; }
namespace tensor_f {
constexpr int kShape = 0, kType = 1, kBuffer = 2, kName = 3, kQuantization = 4, kSparsity = 6, kShapeSignature = 7;
}
namespace quant_f { constexpr int kScale = 2, kZeroPoint = 3, kQuantizedDimension = 6; }
namespace sparsity_f { constexpr int kTraversalOrder = 0, kBlockMap = 1, kDimMetadata = 2; }
namespace dim_metadata_f {
constexpr int kFormat = 0, kDenseSize = 1, kSegmentsType = 2, kSegments = 3, kIndicesType = 4, kIndices = 5;
}
namespace index_vector_f { constexpr int kValues = 0; }
namespace buffer_f { constexpr int kData = 0, kOffset = 1, kSize = 2; }
namespace operator_f {
constexpr int kOpcodeIndex = 0, kInputs = 1, kOutputs = 2, kOptionsType = 3, kOptions = 4, kCustomOptions = 5;
}
namespace opcode_f { constexpr int kDeprecatedBuiltinCode = 0, kCustomCode = 1, kVersion = 2, kBuiltinCode = 3; }
}  // namespace field

// TensorType values.
enum TensorType : int8_t {
  kFloat32 = 0, kFloat16 = 1, kInt32 = 2, kUInt8 = 3, kInt64 = 4, kString = 5,
  kBool = 6, kInt16 = 7, kComplex64 = 8, kInt8 = 9, kFloat64 = 10,
};
const char* TensorTypeName(int type);

// BuiltinOperator values (the ones the importer names).
enum BuiltinOp : int32_t {
  ADD = 0, AVERAGE_POOL_2D = 1, CONCATENATION = 2, CONV_2D = 3, DEPTHWISE_CONV_2D = 4,
  DEPTH_TO_SPACE = 5, DEQUANTIZE = 6, FLOOR = 8, FULLY_CONNECTED = 9, L2_NORMALIZATION = 11,
  LOGISTIC = 14, MAX_POOL_2D = 17, MUL = 18, RELU = 19, RELU_N1_TO_1 = 20, RELU6 = 21,
  RESHAPE = 22, RESIZE_BILINEAR = 23, SOFTMAX = 25, SPACE_TO_DEPTH = 26, TANH = 28,
  CUSTOM = 32, PAD = 34, GATHER = 36, TRANSPOSE = 39, MEAN = 40, SUB = 41, DIV = 42,
  SQUEEZE = 43, STRIDED_SLICE = 45, EXP = 47, SPLIT = 49, LOG_SOFTMAX = 50, CAST = 53,
  PRELU = 54, MAXIMUM = 55, ARG_MAX = 56, MINIMUM = 57, LESS = 58, NEG = 59, PADV2 = 60,
  GREATER = 61, SELECT = 64, SLICE = 65, TRANSPOSE_CONV = 67, TILE = 69, EXPAND_DIMS = 70,
  EQUAL = 71, LOG = 73, SUM = 74, SQRT = 75, RSQRT = 76, POW = 78, ARG_MIN = 79,
  REDUCE_PROD = 81, REDUCE_MAX = 82, LOGICAL_NOT = 87, REDUCE_MIN = 89, SQUARE = 92,
  RESIZE_NEAREST_NEIGHBOR = 97, LEAKY_RELU = 98, SQUARED_DIFFERENCE = 99, MIRROR_PAD = 100,
  ABS = 101, SPLIT_V = 102, ELU = 111, HARD_SWISH = 117, SELECT_V2 = 123, DENSIFY = 124,
  BATCH_MATMUL = 126, GELU = 150, QUANTIZE = 114,
  UNIDIRECTIONAL_SEQUENCE_LSTM = 44, BIDIRECTIONAL_SEQUENCE_LSTM = 52, IF = 118, WHILE = 119,
};
// "CONV_2D"; "BUILTIN_<n>" for codes this reader does not name.
std::string BuiltinName(int32_t code);

// BuiltinOptions union type values (the option tables this reader reads).
enum OptionsType : uint8_t {
  kNoOptions = 0, kConv2DOptions = 1, kDepthwiseConv2DOptions = 2, kPool2DOptions = 5,
  kFullyConnectedOptions = 8, kSoftmaxOptions = 9, kConcatenationOptions = 10, kAddOptions = 11,
  kResizeBilinearOptions = 15, kReshapeOptions = 17, kSpaceToDepthOptions = 19, kMulOptions = 21,
  kGatherOptions = 23, kReducerOptions = 27, kSubOptions = 28, kDivOptions = 29,
  kSqueezeOptions = 30, kStridedSliceOptions = 32, kSplitOptions = 35, kCastOptions = 37,
  kArgMaxOptions = 40, kArgMinOptions = 57, kTransposeConvOptions = 49,
  kResizeNearestNeighborOptions = 74, kLeakyReluOptions = 75, kMirrorPadOptions = 77,
  kSplitVOptions = 79, kDepthToSpaceOptions = 94, kBatchMatMulOptions = 101, kGeluOptions = 116,
  kBidirectionalSequenceLSTMOptions = 69, kUnidirectionalSequenceLSTMOptions = 71, kIfOptions = 92,
  kWhileOptions = 93,
};

// Field ids inside option tables (shared where tables agree).
namespace opt {
// Conv2DOptions / DepthwiseConv2DOptions / Pool2DOptions / TransposeConvOptions
constexpr int kPadding = 0, kStrideW = 1, kStrideH = 2;
constexpr int kConvActivation = 3, kConvDilationW = 4, kConvDilationH = 5;
constexpr int kDwDepthMultiplier = 3, kDwActivation = 4, kDwDilationW = 5, kDwDilationH = 6;
constexpr int kPoolFilterW = 3, kPoolFilterH = 4, kPoolActivation = 5;
constexpr int kTransposeConvActivation = 3;
// FullyConnectedOptions
constexpr int kFcActivation = 0, kFcWeightsFormat = 1, kFcKeepNumDims = 2;
// Add/Sub/Mul/DivOptions: the fused activation
constexpr int kBinaryActivation = 0;
// ConcatenationOptions
constexpr int kConcatAxis = 0, kConcatActivation = 1;
constexpr int kSoftmaxBeta = 0;          // SoftmaxOptions
constexpr int kReshapeNewShape = 0;      // ReshapeOptions
constexpr int kBlockSize = 0;            // SpaceToDepth / DepthToSpaceOptions
constexpr int kGatherAxis = 0, kGatherBatchDims = 1;
constexpr int kKeepDims = 0;             // ReducerOptions
constexpr int kSqueezeDims = 0;          // SqueezeOptions
constexpr int kBeginMask = 0, kEndMask = 1, kEllipsisMask = 2, kNewAxisMask = 3, kShrinkAxisMask = 4,
              kSliceOffset = 5;          // StridedSliceOptions
constexpr int kNumSplits = 0;            // SplitOptions / SplitVOptions
constexpr int kCastOut = 1;              // CastOptions: in_data_type 0, out_data_type 1
constexpr int kArgOutputType = 0;        // ArgMax/ArgMinOptions
constexpr int kResizeBilinearAlignCorners = 2, kResizeBilinearHalfPixel = 3;  // (0, 1: new_height/width)
constexpr int kResizeNearestAlignCorners = 0, kResizeNearestHalfPixel = 1;
constexpr int kLeakyAlpha = 0;           // LeakyReluOptions
constexpr int kMirrorPadMode = 0;        // MirrorPadOptions: REFLECT 0, SYMMETRIC 1
constexpr int kAdjX = 0, kAdjY = 1;      // BatchMatMulOptions
constexpr int kGeluApproximate = 0;      // GeluOptions
// Uni/BidirectionalSequenceLSTMOptions: activation 0, cell_clip 1, proj_clip 2;
// unidirectional: time_major 3; bidirectional: merge_outputs 3, time_major 4
// (default true), asymmetric_quantize_inputs 5.
constexpr int kThenGraph = 0, kElseGraph = 1;  // IfOptions
constexpr int kCondGraph = 0, kBodyGraph = 1;  // WhileOptions
constexpr int kLstmActivation = 0, kLstmCellClip = 1, kLstmProjClip = 2, kUniTimeMajor = 3, kBiMergeOutputs = 3,
              kBiTimeMajor = 4;
}  // namespace opt

// Padding and ActivationFunctionType values.
enum Padding : int8_t { kSame = 0, kValid = 1 };
enum FusedActivation : int8_t {
  kActNone = 0, kActRelu = 1, kActReluN1To1 = 2, kActRelu6 = 3, kActTanh = 4, kActSignBit = 5
};

// Bytes inside the model file.
struct ByteSpan {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// A verified options table. Accessors return the default when the field is
// absent, or when it is not one this reader verified for the table's type.
class Options {
 public:
  uint8_t type() const { return type_; }
  bool known() const { return table_ != nullptr; }
  int32_t Int(int id, int32_t def) const;
  float Float(int id, float def) const;
  int8_t Byte(int id, int8_t def) const;
  bool Bool(int id, bool def) const { return Byte(id, def ? 1 : 0) != 0; }
  std::vector<int32_t> Ints(int id) const;

 private:
  friend class ModelParser;
  char Kind(int id) const;
  uint8_t type_ = kNoOptions;
  const flatbuffers::Table* table_ = nullptr;
};

struct Quantization {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int32_t dimension = 0;
};

// DimensionType and the SparseIndexVector union's types.
enum DimensionType : int8_t { kDimDense = 0, kDimSparseCsr = 1 };
enum SparseIndexType : uint8_t { kIndexNone = 0, kIndexInt32 = 1, kIndexUint16 = 2, kIndexUint8 = 3 };

// One level of a sparse tensor, in traversal order: DENSE (dense_size
// coordinates, implicit) or SPARSE_CSR (for each position of the level
// above, the segment [segments[p], segments[p + 1]) of `indices`). Index
// vectors are widened to int64 whatever their stored type.
struct DimensionMetadata {
  int8_t format = kDimDense;
  int32_t dense_size = 0;
  std::vector<int64_t> segments, indices;
};
// SparsityParameters (TACO-like): an n-D tensor stored as n + k levels, k of
// them the dims of a block; traversal_order names each level's dim (0..n-1
// the tensor's, n..n+k-1 the block's), block_map the tensor dim each block
// dim divides.
struct Sparsity {
  std::vector<int32_t> traversal_order, block_map;
  std::vector<DimensionMetadata> dim_metadata;
};

struct Tensor {
  std::string name;
  int8_t type = kFloat32;
  bool has_shape = false;       // an absent shape means unknown
  std::vector<int32_t> shape;
  std::vector<int32_t> shape_signature;  // -1 for dims free at run time
  uint32_t buffer = 0;          // 0: no data (buffer 0 is the empty sentinel)
  Quantization quant;
  bool sparse = false;          // has SparsityParameters (DENSIFY input)
  Sparsity sparsity;            // when sparse
};

struct Operator {
  uint32_t opcode_index = 0;
  std::vector<int32_t> inputs, outputs;  // -1: optional input left out
  Options options;
  ByteSpan custom_options;
};

struct OperatorCode {
  int32_t builtin = 0;          // max(deprecated_builtin_code, builtin_code)
  std::string custom_code;
  int32_t version = 1;
};

struct SubGraph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<int32_t> inputs, outputs;
  std::vector<Operator> operators;
};

struct Model {
  uint32_t version = 0;
  std::string description;
  std::vector<OperatorCode> operator_codes;
  std::vector<SubGraph> subgraphs;
  std::vector<ByteSpan> buffers;  // data of each buffer, range-checked
  std::shared_ptr<const std::vector<uint8_t>> bytes;  // keeps the spans valid
};

// Sliding-window attributes of CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV,
// AVERAGE/MAX_POOL_2D and the MediaPipe custom ops Convolution2DTransposeBias
// and MaxPoolingWithArgmax2D (whose custom options are the raw C structs
// TfLiteTransposeConvParams {padding, stride_w, stride_h} and TfLitePoolParams
// {padding, stride_w, stride_h, filter_w, filter_h, activation, ...}, int32
// each, padding 1 = SAME, 2 = VALID).
struct Window {
  int32_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int32_t filter_h = 0, filter_w = 0;  // pools only
  int8_t padding = kSame;
  int8_t activation = kActNone;
};
StatusOr<Window> ReadWindow(const OperatorCode& code, const Operator& op);

// STRIDED_SLICE / SLICE resolved to ONNX Slice terms for a tensor of
// `shape`: per sliced axis a start, end (clamped by the consumer, INT64_MAX /
// INT64_MIN for "to the end") and step. Shrunk axes keep one element
// (`shrink` bit d set); the caller drops them. Ellipsis / new-axis masks are
// not handled (the caller refuses them).
struct SliceSpec {
  std::vector<int64_t> starts, ends, steps;
};
struct SliceMasks {
  int32_t begin = 0, end = 0, shrink = 0;
  bool offset = false;       // end is relative to begin
  bool sizes = false;        // SLICE: `end` holds sizes (-1: to the end)
  bool unsupported = false;  // an ellipsis or new-axis mask
};
// The masks of a STRIDED_SLICE (strided) or SLICE operator.
SliceMasks ReadSliceMasks(const Operator& op, bool strided);
StatusOr<SliceSpec> ResolveSlice(const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                                 const std::vector<int64_t>& steps, const SliceMasks& masks,
                                 const std::vector<int64_t>& shape);
// Axes normalized to [0, rank).
StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, int rank);
// Padding of a transposed conv with recorded input and output sizes, as
// ONNX ConvTranspose pads (begin, end) or, when the output is larger than the
// natural size, output_padding: total = stride * (in - 1) + kernel - out,
// begin = total / 2 (TFLite puts the odd element at the end).
void TransposeConvPadding(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t* begin, int64_t* end,
                          int64_t* output_padding);

// ---- tensor data, for importers ----

// Row-major little-endian values of a constant tensor.
struct TensorData {
  int8_t type = kFloat32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};
size_t TypeSize(int type);  // bytes per element; 0 for types without fixed size
// An integer tensor with quantization scales (quantized activations or weights).
inline bool IsQuantized(const Tensor& t) {
  return !t.quant.scale.empty() && (t.type == kInt8 || t.type == kUInt8 || t.type == kInt16);
}
// Whether tensor `t` has data (a non-empty buffer).
bool HasData(const Model& m, const Tensor& t);
// The data of `t`, its size checked against the shape and type. A sparse
// tensor is densified (Densify).
StatusOr<TensorData> ReadData(const Model& m, const Tensor& t);
// The dense values of a sparse constant: `values` (the buffer, its stored
// non-zero elements in traversal order) scattered into a zero tensor of
// `shape` by `sp`. Every number read from the file is checked: the traversal
// order and block map must be permutations of their dims, each DENSE level's
// size must be its dim's (a block dim's size divides its tensor dim), each
// CSR level's segments must be non-decreasing, start at 0 and stay inside its
// indices, each index must be below its level's size, and the values must be
// exactly the ones the levels address. The dense tensor may be at most
// kMaxDensifyRatio times its stored values (or kMinDensifyElements elements),
// so that a few bytes cannot ask for gigabytes.
constexpr int64_t kMaxDensifyRatio = 64, kMinDensifyElements = int64_t{1} << 20;
StatusOr<TensorData> Densify(int8_t type, const std::vector<int64_t>& shape, const Sparsity& sp, ByteSpan values);
// In place to FLOAT32: FLOAT16 widened; INT8/UINT8 dequantized with `q`
// (per tensor, or per channel along q.dimension).
Status ToFloat32(TensorData* d, const Quantization& q);
// INT32 / INT64 values.
StatusOr<std::vector<int64_t>> ToInt64(const TensorData& d);
// Dims / data permuted: result dim i is source dim perm[i].
std::vector<int64_t> PermuteDims(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm);
std::vector<uint8_t> PermuteData(const std::vector<uint8_t>& src, const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& perm, size_t elem_size);

// Verifies and decodes a whole .tflite file held in `bytes`.
StatusOr<Model> ReadModel(std::vector<uint8_t> bytes);
// Reads the file, then ReadModel.
StatusOr<Model> ReadModelFile(const std::string& path);

}  // namespace kiln::tflite
