// Host modules, the writing side (kiln-compile --emit-module; the format is
// described in kiln/module.h): a resized host session's steps and memory
// plan (SessionImpl::modulePlan) become generated C++ whose run function
// calls each op's libkiln kernel with its tensors' addresses in the caller's
// activations, the weights or the inputs and outputs, spelled out.
#include <cctype>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "alloc_guard.h"
#include "host_backend.h"
#include "kiln/interpreter.h"
#include "kiln/module.h"
#include "mapped_file.h"
#include "session_impl.h"

namespace kiln {

StatusOr<ModulePlan> SessionImpl::modulePlan() const {
  const Graph& g = *graph_;
  if (!resized_) return InvalidArgument("a module bakes a resized session: resize it first");
  if (backends_.size() != 1 || backends_[0].get() != host_)
    return Unsupported("a module runs on the host backend only; this session also uses %s",
                       describePlacement().c_str());
  if (hasShapeInputs()) return Unsupported("a module has fixed shapes; this model's inputs decide shapes at run time");
  for (size_t i = 0; i < g.ops.size(); ++i)
    if (control_[i]) return Unsupported("a module holds straight-line host ops; %s is control flow", where(static_cast<int>(i)).c_str());

  ModulePlan plan;
  plan.threads = threads();
  plan.precision = precision();
  plan.arena_bytes = host_->memoryReport().planned_bytes;
  const uint8_t* arena = host_->poolBase();
  const uint8_t* weights = model_->bytes().data();
  const size_t weights_size = model_->bytes().size();

  std::unordered_map<const Tensor*, int> ref_of;
  auto ref = [&](const Tensor* t) -> StatusOr<int> {
    if (!t) return -1;
    auto it = ref_of.find(t);
    if (it != ref_of.end()) return it->second;
    auto gi = graph_index_.find(t);
    if (gi == graph_index_.end()) return Internal("module: tensor '%s' is not a graph tensor", t->name().c_str());
    const GraphTensor& gt = g.tensors[gi->second];
    if (t->isContainer()) return Unsupported("a module holds plain tensors; '%s' is a sequence or an optional", gt.name.c_str());
    ModulePlan::TensorRef r;
    r.graph_tensor = static_cast<int>(gi->second);
    r.dtype = t->dtype();
    r.shape = t->shape();
    const uint8_t* p = t->host<uint8_t>();
    const size_t bytes = t->byteSize();
    auto index_in = [&](const std::vector<int>& list) {
      return static_cast<uint64_t>(std::find(list.begin(), list.end(), r.graph_tensor) - list.begin());
    };
    if (bytes == 0 && !gt.is_input && !gt.is_output) {  // an empty tensor: no bytes anywhere
      r.where = ModulePlan::Where::kArena;
    } else if (gt.isConstant()) {
      if (!p || p < weights || p + bytes > weights + weights_size)
        return Unsupported("module: constant '%s' is not inside the model's bytes (external weights: write a bundle first)",
                           gt.name.c_str());
      r.where = ModulePlan::Where::kWeights;
      r.at = static_cast<uint64_t>(p - weights);
    } else if (gt.is_input) {
      r.where = ModulePlan::Where::kInput;
      r.at = index_in(g.inputs);
    } else if (resize_value_[gi->second]) {
      if (!p) return Internal("module: the value of '%s' is not kept", gt.name.c_str());
      r.where = ModulePlan::Where::kValue;
      r.value.assign(p, p + bytes);
    } else if (gt.is_output) {
      r.where = ModulePlan::Where::kOutput;
      r.at = index_in(g.outputs);
    } else {
      if (!arena || !p || p < arena || p + bytes > arena + plan.arena_bytes)
        return Internal("module: tensor '%s' is not in the host pool", gt.name.c_str());
      r.where = ModulePlan::Where::kArena;
      r.at = static_cast<uint64_t>(p - arena);
    }
    plan.tensors.push_back(std::move(r));
    ref_of[t] = static_cast<int>(plan.tensors.size() - 1);
    return ref_of[t];
  };

  std::vector<bool> written(g.tensors.size(), false);
  for (const Step& st : steps_) {
    if (st.op < 0 || !st.exec || st.backend != host_) return Internal("module: a step that is not a host op");
    ModulePlan::StepRef s;
    s.op = st.op;
    for (const Tensor* t : st.inputs) {
      KILN_ASSIGN_OR_RETURN(int r, ref(t));
      s.inputs.push_back(r);
    }
    for (const Tensor* t : st.outputs) {
      KILN_ASSIGN_OR_RETURN(int r, ref(t));
      s.outputs.push_back(r);
      if (r >= 0) written[static_cast<size_t>(plan.tensors[static_cast<size_t>(r)].graph_tensor)] = true;
    }
    plan.steps.push_back(std::move(s));
  }
  for (int t : g.inputs) {  // every input has its entry (the module's info), read or not
    KILN_ASSIGN_OR_RETURN(int r, ref(tensors_[static_cast<size_t>(t)].get()));
    (void)r;
  }
  // Outputs no step writes into the caller's buffer: copied at the end.
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    const int t = g.outputs[k];
    const bool first = static_cast<size_t>(std::find(g.outputs.begin(), g.outputs.end(), t) - g.outputs.begin()) == k;
    if (first && written[static_cast<size_t>(t)]) continue;
    KILN_ASSIGN_OR_RETURN(int r, ref(tensors_[static_cast<size_t>(t)].get()));
    plan.output_copies.emplace_back(static_cast<int>(k), r);
  }
  return plan;
}

namespace {

// C++ source text: identifiers and literals.
std::string CString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      out += buf;
    }
  }
  return out + "\"";
}

std::string Dims(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]) + "LL";
  return s.empty() ? "0" : s;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

// A comment-safe name (no "*/").
std::string CommentText(std::string s) {
  for (size_t at; (at = s.find("*/")) != std::string::npos;) s.replace(at, 2, "*_");
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// A C identifier from `s` (the header's constants).
std::string Identifier(const std::string& s) {
  std::string id;
  for (char c : s) id += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "M_" + id;
  return id;
}

size_t ByteSize(const ModulePlan::TensorRef& t) {
  size_t n = DataTypeSize(t.dtype);
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  return n;
}

struct ModuleText {
  std::string header, source;
};

ModuleText WriteModuleText(const ModulePlan& plan, const Graph& g, const std::string& stem_name,
                           const std::string& model_name, const std::string& weights_file, uint64_t weights_bytes,
                           uint64_t stamp) {
  const std::string guard = Identifier(stem_name) + "_MODULE_H_";
  const std::string prefix = Identifier(stem_name);
  std::ostringstream h;
  h << "/* " << stem_name << ".h: generated by kiln-compile --emit-module from " << CommentText(model_name)
    << ". Do not edit.\n"
    << " * Load " << stem_name << ".so with kiln_module_open (kiln/module.h), or call its\n"
    << " * kiln_module_run with the weights in " << CommentText(weights_file) << " and buffers of these sizes. */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n#include \"kiln/module.h\"\n\n";
  h << "#define " << prefix << "_WEIGHTS_FILE " << CString(weights_file) << "\n";
  h << "#define " << prefix << "_WEIGHTS_BYTES " << weights_bytes << "ULL\n";
  h << "#define " << prefix << "_ACTIVATIONS_BYTES " << plan.arena_bytes << "ULL\n";
  h << "#define " << prefix << "_THREADS " << plan.threads << "\n";
  h << "#define " << prefix << "_NUM_INPUTS " << g.inputs.size() << "\n";
  h << "#define " << prefix << "_NUM_OUTPUTS " << g.outputs.size() << "\n";
  // Input or output k: the tensor the steps name, or the one an output is
  // copied from; null for an input no step reads (its graph declaration).
  auto io_tensor = [&](bool output, size_t k) -> const ModulePlan::TensorRef* {
    const ModulePlan::Where where = output ? ModulePlan::Where::kOutput : ModulePlan::Where::kInput;
    for (const auto& t : plan.tensors)
      if (t.where == where && t.at == k) return &t;
    if (output)
      for (const auto& [out, t] : plan.output_copies)
        if (static_cast<size_t>(out) == k) return &plan.tensors[static_cast<size_t>(t)];
    return nullptr;
  };
  // The header's sizes, the source's dims arrays and info entries, in one walk.
  std::ostringstream dims, info[2];
  for (int pass = 0; pass < 2; ++pass) {
    const bool output = pass == 1;
    const auto& list = output ? g.outputs : g.inputs;
    const char* kind = output ? "OUTPUT" : "INPUT";
    const char* array = output ? "kOutDims" : "kInDims";
    for (size_t k = 0; k < list.size(); ++k) {
      const GraphTensor& gt = g.tensors[static_cast<size_t>(list[k])];
      const ModulePlan::TensorRef* r = io_tensor(output, k);
      const std::vector<int64_t>& shape = r ? r->shape : gt.dims;
      const fb::DataType dtype = r ? r->dtype : gt.dtype;
      const size_t bytes = r ? ByteSize(*r) : 0;
      h << "/* " << kind << " " << k << ": " << CommentText(gt.name) << ", " << DataTypeName(dtype) << " "
        << ShapeText(shape) << " */\n";
      h << "#define " << prefix << "_" << kind << k << "_BYTES " << bytes << "ULL\n";
      dims << "static const int64_t " << array << k << "[] = {" << Dims(shape) << "};\n";
      info[pass] << "    {" << CString(gt.name) << ", static_cast<KilnDataType>(" << static_cast<int>(dtype) << "), "
                 << shape.size() << ", " << array << k << ", " << bytes << "u},\n";
    }
    if (list.empty()) info[pass] << "    {nullptr, KILN_F32, 0, nullptr, 0u},\n";
  }
  h << "\n#endif\n";

  std::ostringstream c;
  c << "// " << stem_name << ".cpp: generated by kiln-compile --emit-module from " << CommentText(model_name)
    << ". Do not edit.\n"
    << "// The memory plan and the kernel sequence of a " << plan.threads << "-thread host session: each step\n"
    << "// runs one op's libkiln kernel on tensors at fixed places in the weights (W),\n"
    << "// the caller's activations (A), inputs (I) and outputs (O).\n"
    << "#include <cstring>\n#include <mutex>\n\n#include \"" << stem_name << ".h\"\n\nnamespace {\n\n";
  c << dims.str();
  c << "const KilnModuleTensorInfo kInputs[] = {\n" << info[0].str() << "};\n";
  c << "const KilnModuleTensorInfo kOutputs[] = {\n" << info[1].str() << "};\n\n";
  c << "const KilnModuleInfo kInfo = {KILN_MODULE_ABI_VERSION, " << CString(model_name) << ", " << CString(weights_file)
    << ", " << weights_bytes << "ULL, 0x" << std::hex << stamp << std::dec << "ULL, " << plan.arena_bytes << "u, "
    << plan.threads << ", " << g.inputs.size() << ", " << g.outputs.size() << ", kInputs, kOutputs};\n\n";

  // The tensors' shapes (and the values computed at compile time).
  c << "// Tensors: shape, and where they live.\n";
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const auto& t = plan.tensors[i];
    c << "const int64_t kD" << i << "[] = {" << Dims(t.shape) << "};";
    if (t.where == ModulePlan::Where::kValue) {
      c << " alignas(64) const unsigned char kV" << i << "[] = {";
      for (size_t b = 0; b < t.value.size(); ++b) c << (b ? "," : "") << static_cast<unsigned>(t.value[b]);
      if (t.value.empty()) c << "0";
      c << "};";
    }
    c << "  // " << CommentText(g.tensors[static_cast<size_t>(t.graph_tensor)].name) << "\n";
  }
  c << "const KilnRtTensor kTensors[] = {\n";
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const auto& t = plan.tensors[i];
    const bool value = t.where == ModulePlan::Where::kValue;
    c << "    {" << t.graph_tensor << ", " << static_cast<int>(t.dtype) << ", " << t.shape.size() << ", kD" << i << ", "
      << (value ? "kV" + std::to_string(i) : "nullptr") << ", " << (value ? t.value.size() : 0) << "u, "
      << (t.where == ModulePlan::Where::kWeights ? std::to_string(t.at) + "LL" : "-1") << "},\n";
  }
  if (plan.tensors.empty()) c << "    {0, 0, 0, nullptr, nullptr, 0u, -1},\n";
  c << "};\n";
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const auto& st = plan.steps[s];
    auto list = [](const std::vector<int>& v) {
      std::string out;
      for (size_t k = 0; k < v.size(); ++k) out += (k ? ", " : "") + std::to_string(v[k]);
      return out.empty() ? std::string("-1") : out;
    };
    c << "const int32_t kS" << s << "In[] = {" << list(st.inputs) << "}, kS" << s << "Out[] = {" << list(st.outputs)
      << "};\n";
  }
  c << "const KilnRtStep kSteps[] = {\n";
  for (size_t s = 0; s < plan.steps.size(); ++s)
    c << "    {" << plan.steps[s].op << ", " << plan.steps[s].inputs.size() << ", kS" << s << "In, "
      << plan.steps[s].outputs.size() << ", kS" << s << "Out},\n";
  if (plan.steps.empty()) c << "    {0, 0, nullptr, 0, nullptr},\n";
  c << "};\n";
  c << "const KilnRtPlan kPlan = {KILN_MODULE_ABI_VERSION, " << plan.threads << ", " << static_cast<int>(plan.precision)
    << ", " << weights_bytes << "ULL, 0x" << std::hex << stamp << std::dec << "ULL, " << plan.tensors.size()
    << ", kTensors, " << plan.steps.size() << ", kSteps};\n\n";

  c << "// The kernels, set up once per weights (kiln_rt_prepare), and released\n"
       "// with the module.\n"
       "std::mutex g_mutex;\n"
       "KilnRtProgram* g_program = nullptr;\n"
       "const void* g_weights = nullptr;\n"
       "struct Release {\n  ~Release() { kiln_rt_release(g_program); }\n} g_release;\n\n"
       "int PrepareLocked(const void* weights) {\n"
       "  if (g_program && g_weights == weights) return KILN_OK;\n"
       "  kiln_rt_release(g_program);\n"
       "  g_weights = nullptr;\n"
       "  g_program = kiln_rt_prepare(&kPlan, weights);\n"
       "  if (!g_program) return KILN_INVALID_ARGUMENT;\n"
       "  g_weights = weights;\n"
       "  return KILN_OK;\n"
       "}\n\n}  // namespace\n\n";
  c << "extern \"C\" const KilnModuleInfo* kiln_module_info(void) { return &kInfo; }\n\n"
       "extern \"C\" int kiln_module_prepare(const void* weights) {\n"
       "  std::lock_guard<std::mutex> lock(g_mutex);\n"
       "  return PrepareLocked(weights);\n"
       "}\n\n";
  c << "extern \"C\" int kiln_module_run(const void* weights, void* activations, const void* const* I, void* const* O) {\n"
       "  std::lock_guard<std::mutex> lock(g_mutex);\n"
       "  if (int status = PrepareLocked(weights)) return status;\n"
       "  const unsigned char* W = static_cast<const unsigned char*>(weights);\n"
       "  unsigned char* A = static_cast<unsigned char*>(activations);\n"
       "  (void)W;\n  (void)A;\n  (void)I;\n  (void)O;\n";
  auto address = [&](int r, bool write) -> std::string {
    if (r < 0) return "nullptr";
    const auto& t = plan.tensors[static_cast<size_t>(r)];
    switch (t.where) {
      case ModulePlan::Where::kArena: return "A + " + std::to_string(t.at);
      case ModulePlan::Where::kWeights: return write ? "nullptr" : "W + " + std::to_string(t.at);
      case ModulePlan::Where::kValue: return write ? "nullptr" : "kV" + std::to_string(r);
      case ModulePlan::Where::kInput: return write ? "nullptr" : "I[" + std::to_string(t.at) + "]";
      case ModulePlan::Where::kOutput: return "O[" + std::to_string(t.at) + "]";
    }
    return "nullptr";
  };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const auto& st = plan.steps[s];
    const GraphOp& op = g.ops[static_cast<size_t>(st.op)];
    std::string shapes;
    for (int r : st.outputs)
      if (r >= 0) shapes += (shapes.empty() ? "" : ", ") + ShapeText(plan.tensors[static_cast<size_t>(r)].shape);
    c << "  {  // op " << st.op << ": " << CommentText(op.typeName()) << " '" << CommentText(op.name) << "' -> " << shapes
      << "\n    const void* in[] = {";
    for (size_t k = 0; k < st.inputs.size(); ++k) c << (k ? ", " : "") << address(st.inputs[k], false);
    if (st.inputs.empty()) c << "nullptr";
    c << "};\n    void* out[] = {";
    for (size_t k = 0; k < st.outputs.size(); ++k) c << (k ? ", " : "") << address(st.outputs[k], true);
    if (st.outputs.empty()) c << "nullptr";
    c << "};\n    if (KilnStatus status = kiln_rt_op(g_program, " << s << ", in, out)) return status;\n  }\n";
  }
  for (const auto& [k, r] : plan.output_copies) {
    const auto& t = plan.tensors[static_cast<size_t>(r)];
    c << "  std::memcpy(O[" << k << "], " << address(r, false) << ", " << ByteSize(t) << "u);  // output " << k
      << " is not written by a step\n";
  }
  c << "  return KILN_OK;\n}\n";
  return {h.str(), c.str()};
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Status Interpreter::saveModule(Session* session, const std::string& stem) const {
  if (!owns(session)) return NotOurs("saveModule");
  if (!model_) return InvalidArgument("saveModule after releaseModel(): there is no model to write");
  const SessionImpl& impl = *session->impl_;
  KILN_RETURN_IF_ERROR(impl.modulePlan().status(), "saveModule");  // refused before anything is written
  const std::string name = BaseName(stem);
  if (name.empty()) return InvalidArgument("saveModule: '%s' names no file", stem.c_str());
  // The weights: this session's bundle, stamped so that the module runs on
  // these bytes only.
  std::random_device rd;
  uint64_t stamp = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                   static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (stamp == 0) stamp = 1;
  const std::string weights_path = stem + ".kbundle";
  KILN_RETURN_IF_ERROR(writeBundle(impl, weights_path, stamp), "saveModule");
  // The plan is taken from a session of the bundle itself (its constants'
  // offsets are in the bundle's bytes; its kernels took the packed forms).
  KILN_ASSIGN_OR_RETURN(auto bundle, Interpreter::createFromFile(weights_path), "saveModule");
  ScheduleConfig config;
  config.type = ForwardType::kHost;
  config.numThread = impl.threads();
  config.precision = impl.precision();
  KILN_ASSIGN_OR_RETURN(Session * s, bundle->createSession(config), "saveModule: a session of '%s'", weights_path.c_str());
  KILN_ASSIGN_OR_RETURN(ModulePlan plan, s->impl_->modulePlan(), "saveModule");
  const ModuleText text = WriteModuleText(plan, *bundle->graph_, name, name_, BaseName(weights_path),
                                          bundle->model_->bytes().size(), stamp);
  KILN_RETURN_IF_ERROR(WriteFileAtomically(stem + ".h", text.header.data(), text.header.size(), "saveModule"));
  return WriteFileAtomically(stem + ".cpp", text.source.data(), text.source.size(), "saveModule");
}

}  // namespace kiln
