// Model::Load: structural verification by flatbuffers::Verifier, then the
// semantic checks that make the view safe to trust on the hot path:
//   * format version known;
//   * tensors: known dtype, dims >= -1, element counts and byte sizes without
//     overflow, constant data of exactly the right size, inside its file,
//     64-byte aligned; external data files present and long enough;
//     quantization parameters consistent with the dtype and shape;
//   * ops: known type, input/output counts within the op's arity, every index
//     in range, every input produced before it is read, each tensor produced
//     once, params of the type the op takes and with valid values;
//   * graph inputs and outputs in range and consistent;
//   * subgraphs (control flow's bodies) checked like the net, each op's
//     references to them in range with matching input and output counts,
//     and their nesting free of cycles and at most kMaxSubgraphDepth deep.
// Every failure names the model, the op or tensor (index and name) and the
// problem.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "model.h"
#include "ops/op_defs.h"

namespace kiln {
namespace {

// Bytes above this are rejected as a tensor size: no real tensor is 256 TiB,
// and it keeps every size computation far from overflow.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 48;
constexpr int kMaxRank = 32;
// Control flow nested deeper than this is rejected (real models nest 1 to 3).
constexpr int kMaxSubgraphDepth = 16;
// A session makes one child session per subgraph reference, recursively: a
// file whose references fan out (an If at each of 12 levels naming the next
// level twice) would ask for thousands. Real models need a handful.
constexpr uint64_t kMaxSubgraphInstances = 1024;

std::string Quote(const flatbuffers::String* s) {
  return s ? "'" + s->str() + "'" : "''";
}

template <typename T>
size_t VecSize(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

bool SafeRelativePath(const std::string& p) {
  if (p.empty() || p[0] == '/' || p.find('\0') != std::string::npos) return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (p.compare(start, end - start, "..") == 0 && end - start == 2) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

class ModelVerifier {
 public:
  ModelVerifier(Model& m, const std::string& base_dir) : m_(m), base_dir_(base_dir) {}

  Status Run() {
    const fb::Net& net = *m_.net_;
    if (net.format_version() == 0 || net.format_version() > kFormatVersion)
      return InvalidArgument("format version %u is not supported (this build reads 1 to %u)",
                             net.format_version(), kFormatVersion);
    const size_t nsub = VecSize(net.subgraphs());
    m_.sub_constants_.resize(nsub);
    KILN_RETURN_IF_ERROR(CheckGraphAndTensors(net, &m_.constants_));
    for (size_t i = 0; i < nsub; ++i) {
      const fb::SubGraph* g = net.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(i));
      KILN_RETURN_IF_ERROR(CheckGraphAndTensors(*g, &m_.sub_constants_[i]), "subgraph %zu %s", i,
                           Quote(g->name()).c_str());
    }
    KILN_RETURN_IF_ERROR(CheckNesting(net));
    return CheckBundle(net);
  }

 private:
  // An ahead-of-time bundle's blobs name ops of the net, each with a key and data.
  Status CheckBundle(const fb::Net& net) {
    const fb::Bundle* b = net.bundle();
    if (!b || !b->blobs()) return Status::Ok();
    const size_t nops = VecSize(net.ops());
    for (size_t i = 0; i < b->blobs()->size(); ++i) {
      const fb::PrepackedBlob* blob = b->blobs()->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (blob->op() < 0 || static_cast<size_t>(blob->op()) >= nops)
        return InvalidArgument("bundle blob %zu names op %d of %zu", i, blob->op(), nops);
      if (!blob->key() || !blob->data()) return InvalidArgument("bundle blob %zu has no key or no data", i);
    }
    return Status::Ok();
  }

  // Net and SubGraph have the same fields.
  template <typename G>
  Status CheckGraphAndTensors(const G& g, std::vector<ConstantView>* constants) {
    tensors_ = g.tensors();
    num_tensors_ = VecSize(g.tensors());
    if (num_tensors_ > static_cast<size_t>(INT32_MAX))
      return InvalidArgument("%zu tensors is too many", num_tensors_);
    constants->assign(num_tensors_, ConstantView{});
    constants_ = constants;
    for (size_t i = 0; i < num_tensors_; ++i) {
      const fb::Tensor* t = g.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
      KILN_RETURN_IF_ERROR(CheckTensor(t, i), "tensor %zu %s", i, Quote(t->name()).c_str());
    }
    return CheckGraph(g);
  }

  // The subgraphs an op runs (If's two branches, Loop's and Scan's body).
  static std::vector<int> SubgraphsOf(const fb::Op& op) {
    if (auto* p = op.params_as_IfParams()) return {p->then_branch(), p->else_branch()};
    if (auto* p = op.params_as_LoopParams()) return {p->body()};
    if (auto* p = op.params_as_ScanParams()) return {p->body()};
    return {};
  }

  // References form a tree-like DAG from the net: no subgraph reaches itself,
  // and no chain is deeper than kMaxSubgraphDepth.
  Status CheckNesting(const fb::Net& net) {
    const size_t nsub = VecSize(net.subgraphs());
    std::vector<std::vector<int>> refs(nsub + 1);  // [0]: the net; [i + 1]: subgraph i
    auto collect = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Op>>* ops, std::vector<int>* out) {
      for (size_t i = 0; i < VecSize(ops); ++i)
        for (int s : SubgraphsOf(*ops->Get(static_cast<flatbuffers::uoffset_t>(i)))) out->push_back(s);
    };
    collect(net.ops(), &refs[0]);
    for (size_t i = 0; i < nsub; ++i) collect(net.subgraphs()->Get(static_cast<flatbuffers::uoffset_t>(i))->ops(), &refs[i + 1]);
    // Depth-first with an explicit stack (a hostile file must not recurse us).
    std::vector<uint8_t> state(nsub + 1, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<int, size_t>> path{{0, 0}};
    state[0] = 1;
    while (!path.empty()) {
      auto& [node, next] = path.back();
      if (next == refs[static_cast<size_t>(node)].size()) {
        state[static_cast<size_t>(node)] = 2;
        path.pop_back();
        continue;
      }
      const int child = refs[static_cast<size_t>(node)][next++] + 1;  // CheckParams ranged it
      if (state[static_cast<size_t>(child)] == 1)
        return InvalidArgument("subgraph %d runs itself (recursive control flow)", child - 1);
      if (state[static_cast<size_t>(child)] == 2) continue;
      if (static_cast<int>(path.size()) > kMaxSubgraphDepth)
        return InvalidArgument("subgraph %d is nested %zu deep (the limit is %d)", child - 1, path.size(),
                               kMaxSubgraphDepth);
      state[static_cast<size_t>(child)] = 1;
      path.push_back({child, 0});
    }
    // Child sessions a session of the net would make: instances(g) = the
    // sum over g's references r of 1 + instances(r), over the DAG in
    // reverse topological order (the walk above proved it acyclic).
    std::vector<uint64_t> instances(nsub + 1, 0);
    std::vector<uint8_t> done(nsub + 1, 0);
    std::vector<std::pair<int, size_t>> stack{{0, 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      const auto& r = refs[static_cast<size_t>(node)];
      if (next < r.size()) {
        const int child = r[next++] + 1;
        if (!done[static_cast<size_t>(child)]) stack.push_back({child, 0});
        continue;
      }
      uint64_t n = 0;
      for (int c : r) n += 1 + instances[static_cast<size_t>(c + 1)];
      instances[static_cast<size_t>(node)] = std::min<uint64_t>(n, kMaxSubgraphInstances + 1);
      done[static_cast<size_t>(node)] = 1;
      stack.pop_back();
    }
    if (instances[0] > kMaxSubgraphInstances)
      return InvalidArgument("control flow expands to more than %llu subgraph instances (each runs as a session)",
                             static_cast<unsigned long long>(kMaxSubgraphInstances));
    return Status::Ok();
  }

  // Control flow's counts against its subgraphs' (schema/kiln.fbs).
  Status CheckControlFlow(const fb::Op& op, const OpDef& def) {
    const auto* subs = m_.net_->subgraphs();
    const int nsub = static_cast<int>(VecSize(subs));
    const int nin = static_cast<int>(VecSize(op.inputs())), nout = static_cast<int>(VecSize(op.outputs()));
    for (int s : SubgraphsOf(op))
      if (s < 0 || s >= nsub) return InvalidArgument("%s refers to subgraph %d (the model has %d)", def.name, s, nsub);
    auto counts = [&](int s, int want_in, int want_out, const char* role) -> Status {
      const fb::SubGraph* g = subs->Get(static_cast<flatbuffers::uoffset_t>(s));
      const int gin = static_cast<int>(VecSize(g->inputs())), gout = static_cast<int>(VecSize(g->outputs()));
      if (gin != want_in || gout != want_out)
        return InvalidArgument("%s %s (subgraph %d) has %d inputs and %d outputs; the op needs %d and %d", def.name,
                               role, s, gin, gout, want_in, want_out);
      return Status::Ok();
    };
    if (auto* p = op.params_as_IfParams()) {
      KILN_RETURN_IF_ERROR(counts(p->then_branch(), nin - 1, nout, "then_branch"));
      return counts(p->else_branch(), nin - 1, nout, "else_branch");
    }
    if (auto* p = op.params_as_LoopParams()) {
      // In 64 bits: the counts come from the file and may be anything.
      const int c = p->num_captures();
      const int64_t n64 = int64_t{nin} - 2 - c;
      if (c < 0 || n64 < 0) return InvalidArgument("Loop: %d captures for %d inputs", c, nin);
      const int n = static_cast<int>(n64);  // below nin now
      if (nout < n) return InvalidArgument("Loop: %d outputs for %d loop-carried values", nout, n);
      return counts(p->body(), nin, 1 + nout, "body");
    }
    const fb::ScanParams* p = op.params_as_ScanParams();
    const int m = p->num_scan_inputs(), c = p->num_captures();
    const int64_t n64 = int64_t{nin} - m - c;
    if (m < 1 || c < 0 || n64 < 0) return InvalidArgument("Scan: %d scan inputs and %d captures for %d inputs", m, c, nin);
    const int n = static_cast<int>(n64);  // below nin now
    if (nout < n) return InvalidArgument("Scan: %d outputs for %d state values", nout, n);
    auto check = [](const flatbuffers::Vector<int32_t>* v, int count, int lo, int hi, const char* what) -> Status {
      if (!v) return Status::Ok();
      if (static_cast<int>(v->size()) != count) return InvalidArgument("Scan: %u %s for %d values", v->size(), what, count);
      for (int32_t x : *v)
        if (x < lo || x > hi) return InvalidArgument("Scan: %s entry %d is out of range [%d, %d]", what, x, lo, hi);
      return Status::Ok();
    };
    KILN_RETURN_IF_ERROR(check(p->input_directions(), m, 0, 1, "input_directions"));
    KILN_RETURN_IF_ERROR(check(p->output_directions(), nout - n, 0, 1, "output_directions"));
    KILN_RETURN_IF_ERROR(check(p->input_axes(), m, -kMaxRank, kMaxRank - 1, "input_axes"));
    KILN_RETURN_IF_ERROR(check(p->output_axes(), nout - n, -kMaxRank, kMaxRank - 1, "output_axes"));
    return counts(p->body(), nin, nout, "body");
  }

  StatusOr<uint64_t> ElementCount(const fb::Tensor* t) {
    uint64_t n = 1;
    auto* shape = t->shape();
    if (VecSize(shape) > kMaxRank)
      return InvalidArgument("rank %zu exceeds the maximum of %d", VecSize(shape), kMaxRank);
    for (size_t d = 0; shape && d < shape->size(); ++d) {
      int64_t size = shape->Get(static_cast<flatbuffers::uoffset_t>(d))->size();
      if (size < -1) return InvalidArgument("dim %zu has size %lld", d, static_cast<long long>(size));
      if (size < 0) return uint64_t{0};  // symbolic: unknown until resize
      if (__builtin_mul_overflow(n, static_cast<uint64_t>(size), &n) || n > kMaxTensorBytes)
        return InvalidArgument("element count overflows at dim %zu", d);
    }
    return n;
  }

  Status CheckTensor(const fb::Tensor* t, size_t index) {
    size_t esize = DataTypeSize(t->dtype());
    if (esize == 0) return InvalidArgument("dtype %d is not a known type", static_cast<int>(t->dtype()));
    KILN_ASSIGN_OR_RETURN(uint64_t numel, ElementCount(t));
    bool is_static = !t->unknown_rank();
    for (size_t d = 0; t->shape() && d < t->shape()->size(); ++d)
      if (t->shape()->Get(static_cast<flatbuffers::uoffset_t>(d))->size() < 0) is_static = false;
    uint64_t bytes = numel * esize;
    if (bytes > kMaxTensorBytes) return InvalidArgument("%llu bytes is too large", (unsigned long long)bytes);

    if (t->quant()) KILN_RETURN_IF_ERROR(CheckQuant(t), "quantization");
    if (!t->data() && !t->external()) {
      if (!t->is_constant()) return Status::Ok();
      if (!is_static || numel != 0)
        return InvalidArgument("is_constant without data needs a static shape with 0 elements");
      static const uint8_t kEmpty = 0;  // a non-null address for "constant, no bytes"
      (*constants_)[index] = ConstantView{&kEmpty, 0};
      return Status::Ok();
    }
    if (t->data() && t->external())
      return InvalidArgument("has both inline data and external data");
    if (!is_static) return InvalidArgument("constant data needs a fully static shape");

    ConstantView view;
    if (t->data()) {
      view.data = t->data()->data();
      view.size = t->data()->size();
      size_t offset = static_cast<size_t>(view.data - m_.bytes_->data());
      if (offset % kDataAlignment != 0)
        return InvalidArgument("data at file offset %zu is not %zu-byte aligned", offset, kDataAlignment);
    } else {
      KILN_ASSIGN_OR_RETURN(view, ResolveExternal(*t->external()), "external data");
    }
    if (view.size != bytes)
      return InvalidArgument("data has %zu bytes, but %llu elements of %s need %llu", view.size,
                             (unsigned long long)numel, DataTypeName(t->dtype()),
                             (unsigned long long)bytes);
    (*constants_)[index] = view;
    return Status::Ok();
  }

  Status CheckQuant(const fb::Tensor* t) {
    auto dt = t->dtype();
    if (dt != fb::DataType::I8 && dt != fb::DataType::U8 && dt != fb::DataType::I32)
      return InvalidArgument("%s tensors cannot be quantized (i8, u8, i32 only)", DataTypeName(dt));
    const fb::Quantization* q = t->quant();
    size_t n = VecSize(q->scale());
    if (n == 0) return InvalidArgument("no scale");
    if (q->zero_point() && q->zero_point()->size() != n)
      return InvalidArgument("%u zero points for %zu scales", q->zero_point()->size(), n);
    for (size_t i = 0; i < n; ++i) {
      float s = q->scale()->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (!(s > 0.0f) || std::isinf(s)) return InvalidArgument("scale %zu is %g (must be finite and > 0)", i, s);
    }
    if (n == 1) return Status::Ok();
    size_t rank = VecSize(t->shape());
    if (q->axis() < 0 || static_cast<size_t>(q->axis()) >= rank)
      return InvalidArgument("per-channel axis %d out of range for rank %zu", q->axis(), rank);
    int64_t channels = t->shape()->Get(static_cast<flatbuffers::uoffset_t>(q->axis()))->size();
    if (channels >= 0 && static_cast<uint64_t>(channels) != n)
      return InvalidArgument("%zu scales for %lld channels on axis %d", n, (long long)channels, q->axis());
    return Status::Ok();
  }

  StatusOr<ConstantView> ResolveExternal(const fb::ExternalData& ext) {
    std::string loc = ext.location()->str();
    if (!SafeRelativePath(loc))
      return InvalidArgument("location '%s' must be a relative path without '..'", loc.c_str());
    if (base_dir_.empty())
      return InvalidArgument("location '%s': the model was loaded from a buffer without a weights directory",
                             loc.c_str());
    auto it = m_.external_files_.find(loc);
    if (it == m_.external_files_.end()) {
      KILN_ASSIGN_OR_RETURN(auto region, ByteRegion::MapFile(base_dir_ + "/" + loc));
      it = m_.external_files_.emplace(loc, std::move(region)).first;
    }
    const ByteRegion& file = *it->second;
    uint64_t end;
    if (__builtin_add_overflow(ext.offset(), ext.length(), &end) || end > file.size())
      return InvalidArgument("'%s': bytes [%llu, +%llu) lie outside the file (%zu bytes)", loc.c_str(),
                             (unsigned long long)ext.offset(), (unsigned long long)ext.length(), file.size());
    if (ext.offset() % kDataAlignment != 0)
      return InvalidArgument("'%s': offset %llu is not %zu-byte aligned", loc.c_str(),
                             (unsigned long long)ext.offset(), kDataAlignment);
    return ConstantView{file.data() + ext.offset(), static_cast<size_t>(ext.length())};
  }

  Status CheckTensorIndex(int32_t index, const char* what, size_t pos) {
    if (index < 0 || static_cast<size_t>(index) >= num_tensors_)
      return InvalidArgument("%s %zu: index %d out of range (%zu tensors)", what, pos, index, num_tensors_);
    return Status::Ok();
  }

  const char* TensorName(int32_t i) {
    auto* n = tensors_->Get(static_cast<flatbuffers::uoffset_t>(i))->name();
    return n->c_str();
  }

  template <typename G>
  Status CheckGraph(const G& net) {
    // available[i]: tensor i can be read at this point of the op order.
    std::vector<uint8_t> available(num_tensors_, 0), produced(num_tensors_, 0), is_input(num_tensors_, 0);
    const std::vector<ConstantView>& constants = *constants_;
    for (size_t i = 0; i < num_tensors_; ++i) available[i] = constants[i].data != nullptr;

    for (size_t i = 0; i < VecSize(net.inputs()); ++i) {
      int32_t t = net.inputs()->Get(static_cast<flatbuffers::uoffset_t>(i));
      KILN_RETURN_IF_ERROR(CheckTensorIndex(t, "graph input", i));
      if (constants[t].data) return InvalidArgument("graph input %zu: tensor %d '%s' is a constant", i, t, TensorName(t));
      if (is_input[t]) return InvalidArgument("graph input %zu: tensor %d '%s' is listed twice", i, t, TensorName(t));
      is_input[t] = available[t] = 1;
    }

    for (size_t i = 0; i < VecSize(net.ops()); ++i) {
      const fb::Op* op = net.ops()->Get(static_cast<flatbuffers::uoffset_t>(i));
      const OpDef* def = FindOpDef(op->type());
      KILN_RETURN_IF_ERROR(CheckOp(*op, available, produced), "op %zu %s%s%s%s", i, Quote(op->name()).c_str(),
                      def ? " (" : "", def ? def->name : "", def ? ")" : "");
    }

    size_t num_outputs = VecSize(net.outputs());
    if (num_outputs == 0) return InvalidArgument("the graph has no outputs");
    for (size_t i = 0; i < num_outputs; ++i) {
      int32_t t = net.outputs()->Get(static_cast<flatbuffers::uoffset_t>(i));
      KILN_RETURN_IF_ERROR(CheckTensorIndex(t, "graph output", i));
      if (!available[t])
        return InvalidArgument("graph output %zu: tensor %d '%s' is never produced", i, t, TensorName(t));
    }
    return Status::Ok();
  }

  Status CheckOp(const fb::Op& op, std::vector<uint8_t>& available, std::vector<uint8_t>& produced) {
    const OpDef* def = FindOpDef(op.type());
    if (!def) return InvalidArgument("op type %d is not a known op", static_cast<int>(op.type()));
    int nin = static_cast<int>(VecSize(op.inputs())), nout = static_cast<int>(VecSize(op.outputs()));
    if (nin < def->min_inputs || nin > def->max_inputs)
      return InvalidArgument("%s takes %d to %d inputs, has %d", def->name, def->min_inputs, def->max_inputs, nin);
    if (nout < def->min_outputs || nout > def->max_outputs)
      return InvalidArgument("%s takes %d to %d outputs, has %d", def->name, def->min_outputs, def->max_outputs, nout);

    for (int k = 0; k < nin; ++k) {
      int32_t t = op.inputs()->Get(static_cast<flatbuffers::uoffset_t>(k));
      if (t == -1 && k >= def->min_inputs) continue;  // optional input not given
      if (t == -1) return InvalidArgument("%s input %d is required but missing", def->name, k);
      KILN_RETURN_IF_ERROR(CheckTensorIndex(t, "input", static_cast<size_t>(k)));
      if (!available[t])
        return InvalidArgument("input %d: tensor %d '%s' is read before any op produces it", k, t, TensorName(t));
    }
    for (int k = 0; k < nout; ++k) {
      int32_t t = op.outputs()->Get(static_cast<flatbuffers::uoffset_t>(k));
      KILN_RETURN_IF_ERROR(CheckTensorIndex(t, "output", static_cast<size_t>(k)));
      if ((*constants_)[t].data && op.type() != fb::OpType::Constant)
        return InvalidArgument("output %d: tensor %d '%s' is a constant", k, t, TensorName(t));
      if (produced[t] || (available[t] && op.type() != fb::OpType::Constant))
        return InvalidArgument("output %d: tensor %d '%s' already has a producer", k, t, TensorName(t));
      if (op.type() == fb::OpType::Constant && !(*constants_)[t].data)
        return InvalidArgument("Constant output %d: tensor %d '%s' has no data", k, t, TensorName(t));
      produced[t] = available[t] = 1;
    }
    return CheckParams(op, *def);
  }

  Status CheckParams(const fb::Op& op, const OpDef& def) {
    fb::OpParams type = op.params_type();
    if (type == fb::OpParams::NONE || !op.params()) {
      if (def.params_required)
        return InvalidArgument("%s needs %s", def.name, fb::EnumNameOpParams(def.params));
      return Status::Ok();
    }
    if (type != def.params)
      return InvalidArgument("%s takes %s, has %s", def.name,
                             def.params == fb::OpParams::NONE ? "no params" : fb::EnumNameOpParams(def.params),
                             type <= fb::OpParams::MAX ? fb::EnumNameOpParams(type) : "an unknown params type");
    switch (type) {
      case fb::OpParams::ConvParams: return CheckConv(*op.params_as_ConvParams());
      case fb::OpParams::PoolParams: return CheckPool(*op.params_as_PoolParams());
      case fb::OpParams::MaxUnpoolParams: return CheckUnpool(*op.params_as_MaxUnpoolParams());
      case fb::OpParams::SpaceDepthParams:
        if (op.params_as_SpaceDepthParams()->blocksize() < 1)
          return InvalidArgument("blocksize %d must be >= 1", op.params_as_SpaceDepthParams()->blocksize());
        return Status::Ok();
      case fb::OpParams::CastParams:
        if (DataTypeSize(op.params_as_CastParams()->to()) == 0)
          return InvalidArgument("Cast to unknown dtype %d", static_cast<int>(op.params_as_CastParams()->to()));
        return Status::Ok();
      case fb::OpParams::TransposeParams: return CheckPerm(op.params_as_TransposeParams()->perm());
      case fb::OpParams::IfParams:
      case fb::OpParams::LoopParams:
      case fb::OpParams::ScanParams: return CheckControlFlow(op, def);
      default: return Status::Ok();
    }
  }

  static Status CheckPositive(const flatbuffers::Vector<int32_t>* v, const char* what, size_t rank, int min) {
    if (!v) return Status::Ok();
    if (rank && v->size() != rank)
      return InvalidArgument("%s has %u entries, expected %zu", what, v->size(), rank);
    for (size_t i = 0; i < v->size(); ++i)
      if (v->Get(static_cast<flatbuffers::uoffset_t>(i)) < min)
        return InvalidArgument("%s[%zu] is %d (must be >= %d)", what, i, v->Get(static_cast<flatbuffers::uoffset_t>(i)), min);
    return Status::Ok();
  }

  template <typename P>
  static Status CheckWindow(const P& p, bool kernel_required) {
    size_t rank = VecSize(p.kernel_shape());
    if (kernel_required && rank == 0) return InvalidArgument("kernel_shape is required");
    if (rank == 0) rank = std::max(VecSize(p.strides()), VecSize(p.dilations()));
    KILN_RETURN_IF_ERROR(CheckPositive(p.kernel_shape(), "kernel_shape", rank, 1));
    KILN_RETURN_IF_ERROR(CheckPositive(p.strides(), "strides", rank, 1));
    KILN_RETURN_IF_ERROR(CheckPositive(p.dilations(), "dilations", rank, 1));
    KILN_RETURN_IF_ERROR(CheckPositive(p.pads(), "pads", rank * 2, 0));
    return Status::Ok();
  }

  static Status CheckConv(const fb::ConvParams& p) {
    if (p.group() < 1) return InvalidArgument("group %d must be >= 1", p.group());
    return CheckWindow(p, false);
  }

  static Status CheckPool(const fb::PoolParams& p) { return CheckWindow(p, true); }

  static Status CheckUnpool(const fb::MaxUnpoolParams& p) {
    size_t rank = VecSize(p.kernel_shape());
    if (rank == 0) return InvalidArgument("kernel_shape is required");
    KILN_RETURN_IF_ERROR(CheckPositive(p.kernel_shape(), "kernel_shape", rank, 1));
    KILN_RETURN_IF_ERROR(CheckPositive(p.strides(), "strides", rank, 1));
    KILN_RETURN_IF_ERROR(CheckPositive(p.pads(), "pads", rank * 2, 0));
    return Status::Ok();
  }

  static Status CheckPerm(const flatbuffers::Vector<int32_t>* perm) {
    size_t n = VecSize(perm);
    std::vector<uint8_t> seen(n, 0);
    for (size_t i = 0; i < n; ++i) {
      int32_t v = perm->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (v < 0 || static_cast<size_t>(v) >= n || seen[v])
        return InvalidArgument("perm is not a permutation of 0..%zu (entry %zu is %d)", n - 1, i, v);
      seen[v] = 1;
    }
    return Status::Ok();
  }

  Model& m_;
  std::string base_dir_;
  // The graph being checked (the net or a subgraph).
  const flatbuffers::Vector<flatbuffers::Offset<fb::Tensor>>* tensors_ = nullptr;
  size_t num_tensors_ = 0;
  std::vector<ConstantView>* constants_ = nullptr;
};

Model::~Model() = default;

StatusOr<std::unique_ptr<Model>> Model::Load(std::shared_ptr<ByteRegion> bytes, const std::string& name,
                                             const std::string& base_dir) {
  const uint8_t* data = bytes->data();
  size_t size = bytes->size();
  auto fail = [&](const Status& s) { return s.WithContext(name); };
  // Layout: [u32 size of the rest][u32 root offset]["KILN"]...; the size
  // prefix makes every truncation (and trailing garbage) detectable.
  if (size < 12) return fail(InvalidArgument("%zu bytes is too short for a Kiln model", size));
  if (!flatbuffers::BufferHasIdentifier(data, fb::NetIdentifier(), /*size_prefixed=*/true))
    return fail(InvalidArgument("not a Kiln model (no \"%s\" file identifier at byte 8)", fb::NetIdentifier()));
  uint32_t declared = flatbuffers::ReadScalar<uint32_t>(data);
  if (static_cast<uint64_t>(declared) + 4 != size)
    return fail(InvalidArgument("the model is %zu bytes, but its header says %llu (truncated or trailing bytes)",
                                size, static_cast<unsigned long long>(declared) + 4));
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return fail(InvalidArgument("%zu bytes exceeds the 2 GiB limit; put weights in an external file", size));
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0)
    return fail(InvalidArgument("model buffer is not 8-byte aligned in memory"));

  flatbuffers::Verifier::Options opts;
  opts.max_depth = 16;  // the schema nests at most 5 tables deep
  opts.max_tables = 1u << 24;
  flatbuffers::Verifier verifier(data, size, opts);
  if (!fb::VerifySizePrefixedNetBuffer(verifier))
    return fail(InvalidArgument("corrupt model: the FlatBuffers structure does not verify "
                                "(bad offset, bad vtable or missing required field)"));

  std::unique_ptr<Model> m(new Model());
  m->bytes_ = std::move(bytes);
  m->net_ = fb::GetSizePrefixedNet(data);
  m->name_ = name;
  Status s = ModelVerifier(*m, base_dir).Run();
  if (!s.ok()) return fail(s);
  return m;
}

}  // namespace kiln
