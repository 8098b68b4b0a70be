#include "kiln/net_builder.h"

#include <cstdio>
#include <cstring>
#include <memory>

namespace kiln {

namespace {

std::unique_ptr<fb::DimT> MakeDim(const Dim& d) {
  auto dim = std::make_unique<fb::DimT>();
  dim->size = d.size;
  dim->symbol = d.symbol;
  return dim;
}

bool SerializedSizeFits(const fb::NetT& net) {
  uint64_t total = 0;
  for (auto& t : net.tensors) total += t->data.size() + kDataAlignment;
  return total < FLATBUFFERS_MAX_BUFFER_SIZE / 2;
}

std::vector<uint8_t> Serialize(const fb::NetT& net) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  fb::FinishSizePrefixedNetBuffer(fbb, fb::Net::Pack(fbb, &net));
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

Status WriteAll(std::FILE* f, const void* data, size_t n, const std::string& path) {
  if (n && std::fwrite(data, 1, n, f) != n) return IoError("%s: write failed", path.c_str());
  return Status::Ok();
}

}  // namespace

NetBuilder::NetBuilder(std::string name) {
  net_.format_version = kFormatVersion;
  net_.name = std::move(name);
  setMetadata("NetBuilder", "builder");
}

int NetBuilder::addTensor(const std::string& name, fb::DataType dtype) {
  auto t = std::make_unique<fb::TensorT>();
  t->name = name;
  t->dtype = dtype;
  t->unknown_rank = true;  // inputs and constants set their shape below
  net_.tensors.push_back(std::move(t));
  return tensorCount() - 1;
}

int NetBuilder::addInput(const std::string& name, fb::DataType dtype, const std::vector<Dim>& shape) {
  int i = addTensor(name, dtype);
  net_.tensors[i]->unknown_rank = false;
  for (const Dim& d : shape) net_.tensors[i]->shape.push_back(MakeDim(d));
  net_.inputs.push_back(i);
  return i;
}

int NetBuilder::addConstant(const std::string& name, fb::DataType dtype, const std::vector<int64_t>& shape,
                            const void* data, size_t bytes) {
  int i = addTensor(name, dtype);
  net_.tensors[i]->unknown_rank = false;
  for (int64_t d : shape) net_.tensors[i]->shape.push_back(MakeDim(Dim(d)));
  net_.tensors[i]->is_constant = true;
  auto& v = net_.tensors[i]->data;
  v.resize(bytes);
  if (bytes) std::memcpy(v.data(), data, bytes);
  return i;
}

int NetBuilder::addConstant(const std::string& name, const std::vector<int64_t>& shape,
                            const std::vector<float>& v) {
  return addConstant(name, fb::DataType::F32, shape, v.data(), v.size() * sizeof(float));
}
int NetBuilder::addConstant(const std::string& name, const std::vector<int64_t>& shape,
                            const std::vector<int64_t>& v) {
  return addConstant(name, fb::DataType::I64, shape, v.data(), v.size() * sizeof(int64_t));
}
int NetBuilder::addConstant(const std::string& name, const std::vector<int64_t>& shape,
                            const std::vector<int32_t>& v) {
  return addConstant(name, fb::DataType::I32, shape, v.data(), v.size() * sizeof(int32_t));
}

void NetBuilder::setQuantization(int tensor, std::vector<float> scale, std::vector<int64_t> zero_point, int axis) {
  auto q = std::make_unique<fb::QuantizationT>();
  q->scale = std::move(scale);
  q->zero_point = std::move(zero_point);
  q->axis = axis;
  net_.tensors.at(static_cast<size_t>(tensor))->quant = std::move(q);
}

std::vector<int> NetBuilder::addOp(fb::OpType type, const std::string& name, const std::vector<int>& inputs,
                                   const std::vector<std::string>& outputs, fb::OpParamsUnion params) {
  std::vector<int> out;
  for (const std::string& o : outputs) out.push_back(addTensor(o));
  addOpWithOutputs(type, name, inputs, out, std::move(params));
  return out;
}

void NetBuilder::addOpWithOutputs(fb::OpType type, const std::string& name, const std::vector<int>& inputs,
                                  const std::vector<int>& outputs, fb::OpParamsUnion params) {
  auto op = std::make_unique<fb::OpT>();
  op->type = type;
  op->name = name;
  op->inputs.assign(inputs.begin(), inputs.end());
  op->outputs.assign(outputs.begin(), outputs.end());
  op->params = std::move(params);
  net_.ops.push_back(std::move(op));
}

void NetBuilder::addOutput(int tensor) { net_.outputs.push_back(tensor); }

void NetBuilder::setMetadata(const std::string& producer, const std::string& source_format, int source_opset) {
  if (!net_.metadata) net_.metadata = std::make_unique<fb::MetadataT>();
  net_.metadata->producer = producer;
  net_.metadata->source_format = source_format;
  net_.metadata->source_opset = source_opset;
}

void NetBuilder::setProperty(const std::string& key, const std::string& value) {
  if (!net_.metadata) setMetadata("NetBuilder", "builder");
  auto kv = std::make_unique<fb::KeyValueT>();
  kv->key = key;
  kv->value = value;
  net_.metadata->properties.push_back(std::move(kv));
}

int NetBuilder::addSubgraph(NetBuilder body) {
  auto sg = std::make_unique<fb::SubGraphT>();
  sg->name = body.net_.name;
  sg->tensors = std::move(body.net_.tensors);
  sg->ops = std::move(body.net_.ops);
  sg->inputs = std::move(body.net_.inputs);
  sg->outputs = std::move(body.net_.outputs);
  net_.subgraphs.push_back(std::move(sg));
  return static_cast<int>(net_.subgraphs.size()) - 1;
}

StatusOr<std::vector<uint8_t>> NetBuilder::finish() const {
  if (!SerializedSizeFits(net_))
    return InvalidArgument("model '%s' has too many weights for one file; write it with external weights",
                           net_.name.c_str());
  return Serialize(net_);
}

Status NetBuilder::writeFile(const std::string& path, const WriteOptions& options) const {
  std::vector<uint8_t> bytes;
  if (options.external_weights.empty()) {
    KILN_ASSIGN_OR_RETURN(bytes, finish());
  } else {
    // Move large constants to the weights file, each 64-byte aligned, and
    // serialize a copy of the net that points at them.
    const std::string& loc = options.external_weights;
    if (loc.empty() || loc[0] == '/' || loc.find("..") != std::string::npos)
      return InvalidArgument("external weights name '%s' must be a plain relative name", loc.c_str());
    size_t slash = path.rfind('/');
    std::string weights_path = (slash == std::string::npos ? "" : path.substr(0, slash + 1)) + loc;
    std::FILE* wf = std::fopen(weights_path.c_str(), "wb");
    if (!wf) return IoError("%s: cannot open for writing", weights_path.c_str());
    fb::NetT copy = net_;
    uint64_t offset = 0;
    static const uint8_t kZeros[kDataAlignment] = {};
    Status s;
    for (auto& t : copy.tensors) {
      if (t->data.empty() || t->data.size() < options.external_min_bytes) continue;
      size_t pad = (kDataAlignment - offset % kDataAlignment) % kDataAlignment;
      s = WriteAll(wf, kZeros, pad, weights_path);
      if (s.ok()) s = WriteAll(wf, t->data.data(), t->data.size(), weights_path);
      if (!s.ok()) break;
      offset += pad;
      t->external = std::make_unique<fb::ExternalDataT>();
      t->external->location = loc;
      t->external->offset = offset;
      t->external->length = t->data.size();
      offset += t->data.size();
      t->data.clear();
      t->data.shrink_to_fit();
    }
    if (std::fclose(wf) != 0 && s.ok()) s = IoError("%s: write failed", weights_path.c_str());
    KILN_RETURN_IF_ERROR(s);
    if (!SerializedSizeFits(copy))
      return InvalidArgument("model '%s' is too large even with external weights", net_.name.c_str());
    bytes = Serialize(copy);
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return IoError("%s: cannot open for writing", path.c_str());
  Status s = WriteAll(f, bytes.data(), bytes.size(), path);
  if (std::fclose(f) != 0 && s.ok()) s = IoError("%s: write failed", path.c_str());
  return s;
}

}  // namespace kiln
