// Helpers over ONNX protobuf messages: attributes, tensors and the order of a graph's nodes.
#pragma once

#include <string>
#include <vector>

#include "kiln/format.h"
#include "kiln/status.h"
#include "onnx/onnx.pb.h"

namespace kiln::onnx_import {

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const char* name);
int64_t AttrInt(const onnx::NodeProto& n, const char* name, int64_t def);
float AttrFloat(const onnx::NodeProto& n, const char* name, float def);
std::string AttrString(const onnx::NodeProto& n, const char* name, const std::string& def);
std::vector<int64_t> AttrInts(const onnx::NodeProto& n, const char* name);
// Int attributes stored as int32 in Kiln's params: a value outside int32 is
// an error naming the attribute, never a silent truncation.
StatusOr<std::vector<int32_t>> AttrInts32(const onnx::NodeProto& n, const char* name);
StatusOr<int32_t> AttrInt32(const onnx::NodeProto& n, const char* name, int64_t def);
std::string ShapeString(const std::vector<int64_t>& shape);
std::vector<float> AttrFloats(const onnx::NodeProto& n, const char* name);

// ONNX TensorProto.DataType -> Kiln dtype; Unsupported for the others.
StatusOr<fb::DataType> MapDataType(int onnx_type);

struct TensorData {
  fb::DataType dtype = fb::DataType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // little-endian, row-major
};

// Reads a TensorProto's values (raw_data, typed fields, or external data
// resolved against `base_dir`; refused when base_dir is empty). Sizes are
// checked for overflow and against the data present before any allocation.
StatusOr<TensorData> ReadTensor(const onnx::TensorProto& t, const std::string& base_dir);

// The nodes in an order where each comes after the producers of its
// inputs: the file's order when it already is one (ONNX requires it, but
// exporters do not always keep it), else the file's order as far as the
// dependencies allow (Kahn's algorithm, smallest index first). A cycle is
// an error naming the nodes on it.
StatusOr<std::vector<int>> TopologicalOrder(const onnx::GraphProto& g);

}  // namespace kiln::onnx_import
