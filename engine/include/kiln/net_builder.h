// NetBuilder: writes Kiln models. Tests, importers and apps use it.
//
//   NetBuilder b("tiny");
//   int x = b.addInput("x", fb::DataType::F32, {Dim(1), Dim(3), Dim("h"), Dim("w")});
//   int w = b.addConstant("w", {8, 3, 3, 3}, weights);           // std::vector<float>
//   fb::ConvParamsT conv;
//   conv.kernel_shape = {3, 3};
//   conv.pads = {1, 1, 1, 1};
//   int y = b.addOp(fb::OpType::Conv, "conv1", {x, w}, {"y"}, conv)[0];
//   b.addOutput(y);
//   Status s = b.writeFile("tiny.kiln");
//
// Params are the FlatBuffers object-API structs of schema/kiln.fbs
// (fb::ConvParamsT, fb::AxisParamsT, ...). The builder does not check the
// graph; the loader does, so a builder can also write broken models on
// purpose (tests do).
//
// Thread-safety: none; one builder per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/format.h"
#include "kiln/status.h"

namespace kiln {

// A dimension: fixed (Dim(3)) or symbolic (Dim("batch")).
struct Dim {
  Dim(int64_t s) : size(s) {}  // NOLINT: implicit, so {1, 3, 224, 224} works
  Dim(int s) : size(s) {}      // NOLINT: a literal 0 is not a null symbol
  Dim(const char* sym) : size(-1), symbol(sym) {}  // NOLINT
  int64_t size;
  std::string symbol;
};

struct WriteOptions {
  // When set, constant data goes to this file (written beside the model, the
  // name stored relative to it) instead of into the model: for weights over
  // the 2 GiB FlatBuffers limit, or to share weights between models.
  std::string external_weights;
  // Only constants of at least this many bytes go to the external file.
  size_t external_min_bytes = 0;
};

class NetBuilder {
 public:
  explicit NetBuilder(std::string name);

  int addInput(const std::string& name, fb::DataType dtype, const std::vector<Dim>& shape);
  // An intermediate tensor; shape unknown (shape inference fills it).
  int addTensor(const std::string& name, fb::DataType dtype = fb::DataType::F32);
  // A constant from raw little-endian bytes.
  int addConstant(const std::string& name, fb::DataType dtype, const std::vector<int64_t>& shape,
                  const void* data, size_t bytes);
  int addConstant(const std::string& name, const std::vector<int64_t>& shape, const std::vector<float>& v);
  int addConstant(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int64_t>& v);
  int addConstant(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int32_t>& v);
  void setQuantization(int tensor, std::vector<float> scale, std::vector<int64_t> zero_point, int axis = 0);

  // Adds an op reading `inputs` (-1 for an optional input left out) and
  // producing new tensors named `outputs`; returns their indices.
  std::vector<int> addOp(fb::OpType type, const std::string& name, const std::vector<int>& inputs,
                         const std::vector<std::string>& outputs, fb::OpParamsUnion params = {});
  template <typename P>
  std::vector<int> addOp(fb::OpType type, const std::string& name, const std::vector<int>& inputs,
                         const std::vector<std::string>& outputs, P params) {
    fb::OpParamsUnion u;
    u.Set(std::move(params));
    return addOp(type, name, inputs, outputs, std::move(u));
  }
  // Adds an op whose outputs are existing tensors.
  void addOpWithOutputs(fb::OpType type, const std::string& name, const std::vector<int>& inputs,
                        const std::vector<int>& outputs, fb::OpParamsUnion params = {});

  void addOutput(int tensor);
  // Control flow: makes `body` (its tensors, ops, inputs and outputs) a
  // subgraph of this model and returns its index for IfParams / LoopParams /
  // ScanParams. Subgraphs nested in `body` must be added to this (outermost)
  // builder first, by index; `body`'s own subgraph list is ignored.
  int addSubgraph(NetBuilder body);
  void setMetadata(const std::string& producer, const std::string& source_format, int source_opset = 0);
  void setProperty(const std::string& key, const std::string& value);

  // The model being built, for direct edits (tests write broken models so).
  fb::NetT& net() { return net_; }
  const fb::NetT& net() const { return net_; }
  int tensorCount() const { return static_cast<int>(net_.tensors.size()); }

  // Serializes with all data inline (fails past the 2 GiB FlatBuffers limit).
  StatusOr<std::vector<uint8_t>> finish() const;
  Status writeFile(const std::string& path, const WriteOptions& options = {}) const;

 private:
  fb::NetT net_;
};

}  // namespace kiln
