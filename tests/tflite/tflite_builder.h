// TfliteBuilder: writes small .tflite files by hand with
// flatbuffers::FlatBufferBuilder and the field ids of tools/convert/
// tflite_reader.h, for the importer tests (no TensorFlow code involved).
//
//   TfliteBuilder t;
//   int x = t.tensor("x", {1, 4, 4, 3});
//   int w = t.constF32("w", {2, 3, 3, 3}, weights);
//   int y = t.tensor("y", {1, 4, 4, 2});
//   t.op(tflite::CONV_2D, {x, w, -1}, {y}, tflite::kConv2DOptions,
//        {I(tflite::opt::kStrideW, 1), I(tflite::opt::kStrideH, 1)});
//   t.io({x}, {y});
//   std::vector<uint8_t> bytes = t.finish();
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <string>
#include <vector>

#include "tflite_reader.h"

namespace kiln::test {

// One field of an options table: id, kind ('b' byte, 'i' int, 'f' float, 'v' [int]) and value.
struct OptField {
  int id;
  char kind;
  double value = 0;
  std::vector<int32_t> ints;
};
inline OptField B(int id, int v) { return {id, 'b', static_cast<double>(v), {}}; }
inline OptField I(int id, int v) { return {id, 'i', static_cast<double>(v), {}}; }
inline OptField F(int id, float v) { return {id, 'f', v, {}}; }
inline OptField V(int id, std::vector<int32_t> v) { return {id, 'v', 0, std::move(v)}; }

// A sparse constant's SparsityParameters as written: each level's index
// vectors with their stored type (tflite::SparseIndexType).
struct SparseLevel {
  int8_t format = tflite::kDimDense;
  int32_t dense_size = 0;
  std::vector<int64_t> segments, indices;  // SPARSE_CSR
  uint8_t segments_type = tflite::kIndexInt32, indices_type = tflite::kIndexInt32;
};
struct SparseSpec {
  std::vector<int32_t> traversal_order, block_map;
  std::vector<SparseLevel> levels;
};

class TfliteBuilder {
 public:
  TfliteBuilder() { buffers_.emplace_back(); }  // buffer 0: the empty sentinel

  // Starts another subgraph (IF's branches, WHILE's cond and body): later
  // tensor(), op() and io() calls build it; use(0) returns to the main one.
  // Returns its index.
  int subgraph(const std::string& name) {
    graphs_.push_back(Graph{name, {}, {}, {}, {}});
    cur_ = graphs_.size() - 1;
    return static_cast<int>(cur_);
  }
  void use(int graph) { cur_ = static_cast<size_t>(graph); }

  int tensor(const std::string& name, std::vector<int32_t> shape, int8_t type = tflite::kFloat32,
             std::vector<uint8_t> data = {}, tflite::Quantization quant = {}) {
    int buffer = 0;
    if (!data.empty()) {
      buffer = static_cast<int>(buffers_.size());
      buffers_.push_back(std::move(data));
    }
    graphs_[cur_].tensors.push_back({name, std::move(shape), type, buffer, std::move(quant), false, {}});
    return static_cast<int>(graphs_[cur_].tensors.size()) - 1;
  }
  // A sparse constant: `values` holds the stored elements in traversal order.
  int sparseTensor(const std::string& name, std::vector<int32_t> shape, int8_t type, std::vector<uint8_t> values,
                   SparseSpec sparsity) {
    int i = tensor(name, std::move(shape), type, std::move(values));
    graphs_[cur_].tensors[static_cast<size_t>(i)].sparse = true;
    graphs_[cur_].tensors[static_cast<size_t>(i)].sparsity = std::move(sparsity);
    return i;
  }
  template <typename T>
  static std::vector<uint8_t> Bytes(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  int constF32(const std::string& name, std::vector<int32_t> shape, const std::vector<float>& v) {
    return tensor(name, std::move(shape), tflite::kFloat32, Bytes(v));
  }
  int constI32(const std::string& name, std::vector<int32_t> shape, const std::vector<int32_t>& v) {
    return tensor(name, std::move(shape), tflite::kInt32, Bytes(v));
  }

  // A builtin op (code < 0 means CUSTOM with `custom_code`).
  void op(int32_t code, std::vector<int32_t> inputs, std::vector<int32_t> outputs, uint8_t options_type = 0,
          std::vector<OptField> options = {}, const std::string& custom_code = "",
          std::vector<uint8_t> custom_options = {}) {
    int32_t builtin = code < 0 ? tflite::CUSTOM : code;
    int index = -1;
    for (size_t k = 0; k < codes_.size(); ++k)
      if (codes_[k].first == builtin && codes_[k].second == custom_code) index = static_cast<int>(k);
    if (index < 0) {
      codes_.emplace_back(builtin, custom_code);
      index = static_cast<int>(codes_.size()) - 1;
    }
    graphs_[cur_].ops.push_back({index, std::move(inputs), std::move(outputs), options_type, std::move(options),
                    std::move(custom_options)});
  }
  void io(std::vector<int32_t> inputs, std::vector<int32_t> outputs) {
    graphs_[cur_].inputs = std::move(inputs);
    graphs_[cur_].outputs = std::move(outputs);
  }

  std::vector<uint8_t> finish() {
    using namespace tflite::field;
    using tflite::VT;
    flatbuffers::FlatBufferBuilder b;
    b.ForceDefaults(true);
    std::vector<flatbuffers::Offset<void>> buffers;
    for (const auto& data : buffers_) {
      auto d = data.empty() ? flatbuffers::Offset<flatbuffers::Vector<uint8_t>>() : b.CreateVector(data);
      auto t = b.StartTable();
      if (!data.empty()) b.AddOffset(VT(buffer_f::kData), d);
      buffers.push_back(flatbuffers::Offset<void>(b.EndTable(t)));
    }
    std::vector<flatbuffers::Offset<void>> graphs;
    for (const Graph& gr : graphs_) {
    std::vector<flatbuffers::Offset<void>> tensors;
    for (const auto& x : gr.tensors) {
      auto shape = b.CreateVector(x.shape);
      auto name = b.CreateString(x.name);
      flatbuffers::Offset<void> quant;
      if (!x.quant.scale.empty()) {
        auto scale = b.CreateVector(x.quant.scale);
        auto zp = b.CreateVector(x.quant.zero_point);
        auto q = b.StartTable();
        b.AddOffset(VT(quant_f::kScale), scale);
        b.AddOffset(VT(quant_f::kZeroPoint), zp);
        b.AddElement<int32_t>(VT(quant_f::kQuantizedDimension), x.quant.dimension, 0);
        quant = flatbuffers::Offset<void>(b.EndTable(q));
      }
      flatbuffers::Offset<void> sparsity;
      if (x.sparse) sparsity = WriteSparsity(b, x.sparsity);
      auto t = b.StartTable();
      b.AddOffset(VT(tensor_f::kShape), shape);
      b.AddElement<int8_t>(VT(tensor_f::kType), x.type, 0);
      b.AddElement<uint32_t>(VT(tensor_f::kBuffer), static_cast<uint32_t>(x.buffer), 0);
      b.AddOffset(VT(tensor_f::kName), name);
      if (!quant.IsNull()) b.AddOffset(VT(tensor_f::kQuantization), quant);
      if (!sparsity.IsNull()) b.AddOffset(VT(tensor_f::kSparsity), sparsity);
      tensors.push_back(flatbuffers::Offset<void>(b.EndTable(t)));
    }
    std::vector<flatbuffers::Offset<void>> ops;
    for (const auto& o : gr.ops) {
      auto in = b.CreateVector(o.inputs);
      auto out = b.CreateVector(o.outputs);
      flatbuffers::Offset<void> options;
      if (o.options_type) {
        std::vector<flatbuffers::Offset<flatbuffers::Vector<int32_t>>> vecs;
        for (const auto& f : o.options)
          vecs.push_back(f.kind == 'v' ? b.CreateVector(f.ints) : flatbuffers::Offset<flatbuffers::Vector<int32_t>>());
        auto t = b.StartTable();
        for (size_t k = 0; k < o.options.size(); ++k) {
          const OptField& f = o.options[k];
          if (f.kind == 'b') b.AddElement<int8_t>(VT(f.id), static_cast<int8_t>(f.value), 0);
          if (f.kind == 'i') b.AddElement<int32_t>(VT(f.id), static_cast<int32_t>(f.value), 0);
          if (f.kind == 'f') b.AddElement<float>(VT(f.id), static_cast<float>(f.value), 0.f);
          if (f.kind == 'v') b.AddOffset(VT(f.id), vecs[k]);
        }
        options = flatbuffers::Offset<void>(b.EndTable(t));
      }
      flatbuffers::Offset<flatbuffers::Vector<uint8_t>> custom;
      if (!o.custom.empty()) custom = b.CreateVector(o.custom);
      auto t = b.StartTable();
      b.AddElement<uint32_t>(VT(operator_f::kOpcodeIndex), static_cast<uint32_t>(o.opcode), 0);
      b.AddOffset(VT(operator_f::kInputs), in);
      b.AddOffset(VT(operator_f::kOutputs), out);
      if (o.options_type) {
        b.AddElement<uint8_t>(VT(operator_f::kOptionsType), o.options_type, 0);
        b.AddOffset(VT(operator_f::kOptions), options);
      }
      if (!custom.IsNull()) b.AddOffset(VT(operator_f::kCustomOptions), custom);
      ops.push_back(flatbuffers::Offset<void>(b.EndTable(t)));
    }
    auto tv = b.CreateVector(tensors);
    auto iv = b.CreateVector(gr.inputs);
    auto ov = b.CreateVector(gr.outputs);
    auto opv = b.CreateVector(ops);
    auto gname = b.CreateString(gr.name);
    auto g = b.StartTable();
    b.AddOffset(VT(subgraph_f::kTensors), tv);
    b.AddOffset(VT(subgraph_f::kInputs), iv);
    b.AddOffset(VT(subgraph_f::kOutputs), ov);
    b.AddOffset(VT(subgraph_f::kOperators), opv);
    b.AddOffset(VT(subgraph_f::kName), gname);
    graphs.push_back(flatbuffers::Offset<void>(b.EndTable(g)));
    }
    std::vector<flatbuffers::Offset<void>> codes;
    for (const auto& [builtin, custom_code] : codes_) {
      auto cc = custom_code.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateString(custom_code);
      auto t = b.StartTable();
      b.AddElement<int8_t>(VT(opcode_f::kDeprecatedBuiltinCode), static_cast<int8_t>(builtin < 127 ? builtin : 127), 0);
      if (!cc.IsNull()) b.AddOffset(VT(opcode_f::kCustomCode), cc);
      b.AddElement<int32_t>(VT(opcode_f::kVersion), 1, 1);
      b.AddElement<int32_t>(VT(opcode_f::kBuiltinCode), builtin, 0);
      codes.push_back(flatbuffers::Offset<void>(b.EndTable(t)));
    }
    auto cv = b.CreateVector(codes);
    auto sv = b.CreateVector(graphs);
    auto bv = b.CreateVector(buffers);
    auto desc = b.CreateString("kiln test model");
    auto m = b.StartTable();
    b.AddElement<uint32_t>(VT(model_f::kVersion), 3, 0);
    b.AddOffset(VT(model_f::kOperatorCodes), cv);
    b.AddOffset(VT(model_f::kSubgraphs), sv);
    b.AddOffset(VT(model_f::kDescription), desc);
    b.AddOffset(VT(model_f::kBuffers), bv);
    b.Finish(flatbuffers::Offset<void>(b.EndTable(m)), "TFL3");
    return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  }

 private:
  // A SparseIndexVector table (Int32Vector / Uint16Vector / Uint8Vector) of `v` narrowed to `type`.
  static flatbuffers::Offset<void> WriteIndexVector(flatbuffers::FlatBufferBuilder& b, uint8_t type,
                                                    const std::vector<int64_t>& v) {
    using tflite::VT;
    flatbuffers::Offset<void> values;
    if (type == tflite::kIndexUint16) {
      values = b.CreateVector(std::vector<uint16_t>(v.begin(), v.end())).Union();
    } else if (type == tflite::kIndexUint8) {
      values = b.CreateVector(std::vector<uint8_t>(v.begin(), v.end())).Union();
    } else {
      values = b.CreateVector(std::vector<int32_t>(v.begin(), v.end())).Union();
    }
    auto t = b.StartTable();
    b.AddOffset(VT(tflite::field::index_vector_f::kValues), values);
    return flatbuffers::Offset<void>(b.EndTable(t));
  }
  static flatbuffers::Offset<void> WriteSparsity(flatbuffers::FlatBufferBuilder& b, const SparseSpec& sp) {
    using namespace tflite::field;
    using tflite::VT;
    std::vector<flatbuffers::Offset<void>> levels;
    for (const SparseLevel& l : sp.levels) {
      flatbuffers::Offset<void> seg, idx;
      const bool csr = l.format == tflite::kDimSparseCsr;
      if (csr) {
        seg = WriteIndexVector(b, l.segments_type, l.segments);
        idx = WriteIndexVector(b, l.indices_type, l.indices);
      }
      auto t = b.StartTable();
      b.AddElement<int8_t>(VT(dim_metadata_f::kFormat), l.format, 0);
      b.AddElement<int32_t>(VT(dim_metadata_f::kDenseSize), l.dense_size, 0);
      if (csr) {
        b.AddElement<uint8_t>(VT(dim_metadata_f::kSegmentsType), l.segments_type, 0);
        b.AddOffset(VT(dim_metadata_f::kSegments), seg);
        b.AddElement<uint8_t>(VT(dim_metadata_f::kIndicesType), l.indices_type, 0);
        b.AddOffset(VT(dim_metadata_f::kIndices), idx);
      }
      levels.push_back(flatbuffers::Offset<void>(b.EndTable(t)));
    }
    auto order = b.CreateVector(sp.traversal_order);
    auto block_map = sp.block_map.empty() ? flatbuffers::Offset<flatbuffers::Vector<int32_t>>()
                                          : b.CreateVector(sp.block_map);
    auto dims = b.CreateVector(levels);
    auto t = b.StartTable();
    b.AddOffset(VT(sparsity_f::kTraversalOrder), order);
    if (!block_map.IsNull()) b.AddOffset(VT(sparsity_f::kBlockMap), block_map);
    b.AddOffset(VT(sparsity_f::kDimMetadata), dims);
    return flatbuffers::Offset<void>(b.EndTable(t));
  }

  struct T {
    std::string name;
    std::vector<int32_t> shape;
    int8_t type;
    int buffer;
    tflite::Quantization quant;
    bool sparse = false;
    SparseSpec sparsity;
  };
  struct O {
    int opcode;
    std::vector<int32_t> inputs, outputs;
    uint8_t options_type;
    std::vector<OptField> options;
    std::vector<uint8_t> custom;
  };
  struct Graph {
    std::string name;
    std::vector<T> tensors;
    std::vector<O> ops;
    std::vector<int32_t> inputs, outputs;
  };
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<std::pair<int32_t, std::string>> codes_;
  std::vector<Graph> graphs_{Graph{"main", {}, {}, {}, {}}};
  size_t cur_ = 0;  // the subgraph tensor(), op() and io() build
};

}  // namespace kiln::test
