// The default view: what a person wants to know first about a model. It
// reads the model through the generated API (not the walker): the summary is
// about meaning (counts, shapes), not about bytes.
#include <algorithm>
#include <map>

#include "inspect/inspect.h"
#include "model.h"

namespace kiln::inspect {
namespace {

std::string Str(const flatbuffers::String* s) { return s ? s->str() : ""; }

std::string ShapeText(const fb::Tensor& t) {
  if (t.unknown_rank()) return "(rank unknown)";
  if (!t.shape()) return "[] (scalar)";
  std::string out = "[";
  for (flatbuffers::uoffset_t i = 0; i < t.shape()->size(); ++i) {
    const fb::Dim* d = t.shape()->Get(i);
    if (i) out += ",";
    if (d->size() >= 0) {
      out += std::to_string(d->size());
    } else {
      out += d->symbol() && d->symbol()->size() ? d->symbol()->str() : "?";
    }
  }
  return out + "]";
}

void IoList(std::string& out, const char* title, const fb::Net& net, const flatbuffers::Vector<int32_t>* ids) {
  out += std::string(title) + " (" + std::to_string(ids ? ids->size() : 0) + ")\n";
  if (!ids) return;
  for (int32_t id : *ids) {
    // Verified: every graph input / output index is a valid tensor.
    const fb::Tensor& t = *net.tensors()->Get(static_cast<flatbuffers::uoffset_t>(id));
    char line[256];
    std::snprintf(line, sizeof line, "  %-24s %-5s %s\n", Str(t.name()).c_str(), DataTypeName(t.dtype()),
                  ShapeText(t).c_str());
    out += line;
  }
}

}  // namespace

std::string Summary(const Interpreter& interp) {
  const fb::Net& net = interp.net();
  const Model& model = interp.model();
  std::string out;
  auto row = [&out](const char* key, const std::string& value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%-12s", key);
    out += buf + value + "\n";
  };

  row("model", Str(net.name()).empty() ? "(unnamed)" : Str(net.name()));
  row("file", interp.modelName() + ", " + std::to_string(model.bytes().size()) + " bytes");
  row("format", "version " + std::to_string(net.format_version()));
  if (const fb::Metadata* md = net.metadata()) {
    std::string producer = Str(md->producer());
    if (md->producer_version()) producer += " " + Str(md->producer_version());
    row("producer", producer.empty() ? "(not recorded)" : producer);
    std::string source = Str(md->source_format());
    if (md->source_opset()) source += ", opset " + std::to_string(md->source_opset());
    row("source", source.empty() ? "(not recorded)" : source);
    if (md->properties())
      for (const fb::KeyValue* kv : *md->properties()) row("property", Str(kv->key()) + " = " + Str(kv->value()));
  }

  // Ops by type, most frequent first (ties by name), as a profile of the net
  // and its control-flow subgraphs.
  std::map<std::string, size_t> by_type;
  size_t num_ops = net.ops() ? net.ops()->size() : 0;
  for (size_t i = 0; i < num_ops; ++i)
    by_type[fb::EnumNameOpType(net.ops()->Get(static_cast<flatbuffers::uoffset_t>(i))->type())]++;
  const size_t num_subgraphs = net.subgraphs() ? net.subgraphs()->size() : 0;
  size_t sub_ops = 0;
  for (size_t s = 0; s < num_subgraphs; ++s) {
    const fb::SubGraph& g = *net.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(s));
    for (size_t i = 0; g.ops() && i < g.ops()->size(); ++i, ++sub_ops)
      by_type[fb::EnumNameOpType(g.ops()->Get(static_cast<flatbuffers::uoffset_t>(i))->type())]++;
  }
  num_ops += sub_ops;
  std::vector<std::pair<std::string, size_t>> sorted(by_type.begin(), by_type.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string ops = std::to_string(num_ops);
  for (size_t i = 0; i < sorted.size(); ++i)
    ops += (i ? ", " : ": ") + sorted[i].first + " x" + std::to_string(sorted[i].second);
  row("ops", ops);
  if (num_subgraphs)
    row("subgraphs", std::to_string(num_subgraphs) + " (control flow), holding " + std::to_string(sub_ops) + " of the ops");

  size_t num_tensors = net.tensors() ? net.tensors()->size() : 0;
  size_t constants = 0, quantized = 0;
  uint64_t params = 0, inline_bytes = 0, external_bytes = 0;
  std::map<std::string, uint64_t> external_files;
  for (size_t i = 0; i < num_tensors; ++i) {
    const fb::Tensor& t = *net.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (t.quant()) ++quantized;
    ConstantView c = model.constant(static_cast<int>(i));
    if (!c.data) continue;
    ++constants;
    // The verifier checked that the data is exactly elements x dtype size.
    size_t esize = DataTypeSize(t.dtype());
    params += esize ? c.size / esize : 0;
    if (t.external()) {
      external_bytes += c.size;
      external_files[Str(t.external()->location())] += c.size;
    } else {
      inline_bytes += c.size;
    }
  }
  for (size_t s = 0; s < num_subgraphs; ++s) {  // subgraph constants are inline
    const fb::SubGraph& g = *net.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(s));
    for (size_t i = 0; g.tensors() && i < g.tensors()->size(); ++i) {
      ConstantView c = model.constant(static_cast<int>(s), static_cast<int>(i));
      if (!c.data) continue;
      ++constants;
      const size_t esize = DataTypeSize(g.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i))->dtype());
      params += esize ? c.size / esize : 0;
      inline_bytes += c.size;
    }
    num_tensors += g.tensors() ? g.tensors()->size() : 0;
  }
  std::string tensors = std::to_string(num_tensors) + " (" + std::to_string(constants) + " constant";
  if (quantized) tensors += ", " + std::to_string(quantized) + " quantized";
  row("tensors", tensors + ")");
  row("parameters", std::to_string(params));
  row("weights", std::to_string(inline_bytes) + " bytes inline, " + std::to_string(external_bytes) +
                     " bytes external" + (external_files.empty() ? "" : ":"));
  for (const auto& [file, bytes] : external_files) out += "  " + file + ": " + std::to_string(bytes) + " bytes\n";
  IoList(out, "inputs", net, net.inputs());
  IoList(out, "outputs", net, net.outputs());
  return out;
}

}  // namespace kiln::inspect
