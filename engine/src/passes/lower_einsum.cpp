// lower_einsum: an f32 Einsum becomes the ops every backend runs fast:
// ReduceSum, Transpose, Reshape, Unsqueeze / Squeeze and one batched MatMul
// per pair of operands (three or more operands contract left to right).
// Only ranks are needed, not sizes, so dynamic dims (a batch) stay dynamic:
// several contracted letters merge with Reshape [0, ..., 0, -1].
//
// For A and B with the letters still needed after them (`keep`: the output's
// and the later operands'):
//   1. letters in one operand only and not kept are summed (ReduceSum);
//   2. Bt (in both, kept) are batch dims, K (in both, not kept) contracted,
//      Ao / Bo (in one, kept) the free dims. A becomes [Bt, Ao, k] and B
//      [Bt, Bo, k] (k: K merged, or a unit dim when K is empty);
//   3. the MatMul's batch is [Bt, Ao_head, Bo_head] (Ao_head: Ao but its
//      last letter, which is M; likewise N), each operand given unit dims
//      for the other's free letters so that numpy broadcasting lines them
//      up: A'' = [Bt, Ao_head, 1.., M, k], B'' = [Bt, 1.., Bo_head, k, N];
//   4. the product's letters are Bt Ao_head Bo_head M N (a missing M or N
//      squeezed away).
// The output is then a Transpose to the equation's order. Einsums with a
// letter repeated within an operand (diagonals), non-f32 operands or an
// ellipsis over an operand of unknown rank are left to the host's Einsum.
#include <algorithm>
#include <unordered_set>

#include "kiln/passes.h"
#include "passes/pass_util.h"

namespace kiln {

using namespace passes;

namespace {

struct Operand {
  int tensor;
  std::string letters;  // one per dim, outermost first
};

// The ops replacing one Einsum, each writing a new intermediate tensor.
class Emitter {
 public:
  Emitter(fb::NetT& net, const std::string& base) : net_(net), base_(base) {
    for (const auto& t : net.tensors) names_.insert(t->name);
  }

  int emit(fb::OpType type, std::vector<int> inputs, fb::OpParamsUnion params = {}) {
    auto op = std::make_unique<fb::OpT>();
    op->type = type;
    op->name = unique(base_ + "/" + fb::EnumNameOpType(type));
    op->inputs = std::move(inputs);
    op->params = std::move(params);
    auto t = std::make_unique<fb::TensorT>();
    t->name = unique(op->name + ":0");
    t->dtype = fb::DataType::F32;
    t->unknown_rank = true;
    net_.tensors.push_back(std::move(t));
    op->outputs = {static_cast<int>(net_.tensors.size()) - 1};
    ops.push_back(std::move(op));
    return ops.back()->outputs[0];
  }

  // x's dims rearranged into `to` (a permutation of from's letters).
  Operand permute(const Operand& x, const std::string& to) {
    if (x.letters == to) return x;
    fb::TransposeParamsT p;
    for (char c : to) p.perm.push_back(static_cast<int32_t>(x.letters.find(c)));
    fb::OpParamsUnion u;
    u.Set(std::move(p));
    return {emit(fb::OpType::Transpose, {x.tensor}, std::move(u)), to};
  }

  // x with the dims of `letters` summed away.
  Operand sum(const Operand& x, const std::string& letters) {
    if (letters.empty()) return x;
    fb::ReduceParamsT p;
    std::string rest;
    for (size_t d = 0; d < x.letters.size(); ++d) {
      if (letters.find(x.letters[d]) != std::string::npos) p.axes.push_back(static_cast<int32_t>(d));
      else rest += x.letters[d];
    }
    p.keepdims = false;
    fb::OpParamsUnion u;
    u.Set(std::move(p));
    return {emit(fb::OpType::ReduceSum, {x.tensor}, std::move(u)), rest};
  }

  // Unit dims inserted at `axes` of the result (ascending); `unit` names them.
  Operand unsqueeze(const Operand& x, std::vector<int32_t> axes) {
    if (axes.empty()) return x;
    std::string letters = x.letters;
    for (int32_t a : axes) letters.insert(static_cast<size_t>(a), 1, '1');
    fb::AxesParamsT p;
    p.axes = std::move(axes);
    fb::OpParamsUnion u;
    u.Set(std::move(p));
    return {emit(fb::OpType::Unsqueeze, {x.tensor}, std::move(u)), letters};
  }

  Operand squeeze(const Operand& x, std::vector<int32_t> axes) {
    std::string letters;
    for (size_t d = 0; d < x.letters.size(); ++d)
      if (std::find(axes.begin(), axes.end(), static_cast<int32_t>(d)) == axes.end()) letters += x.letters[d];
    fb::AxesParamsT p;
    p.axes = std::move(axes);
    fb::OpParamsUnion u;
    u.Set(std::move(p));
    return {emit(fb::OpType::Squeeze, {x.tensor}, std::move(u)), letters};
  }

  // The trailing `n` dims of x merged into one (n == 0: a unit dim added).
  Operand mergeTail(const Operand& x, size_t n) {
    if (n == 1) return x;
    const size_t lead = x.letters.size() - n;
    if (n == 0) return unsqueeze(x, {static_cast<int32_t>(lead)});
    std::vector<int64_t> shape(lead, 0);  // 0: the input's dim (allowzero off)
    shape.push_back(-1);
    const int s = AddConstant(net_, base_ + "/merge", fb::DataType::I64, {static_cast<int64_t>(shape.size())},
                              shape.data(), shape.size() * sizeof(int64_t));
    names_.insert(net_.tensors[static_cast<size_t>(s)]->name);
    fb::OpParamsUnion u;
    u.Set(fb::ReshapeParamsT());
    return {emit(fb::OpType::Reshape, {x.tensor, s}, std::move(u)), x.letters.substr(0, lead) + "k"};
  }

  std::vector<std::unique_ptr<fb::OpT>> ops;

 private:
  std::string unique(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  fb::NetT& net_;
  std::string base_;
  std::unordered_set<std::string> names_;
};

bool Has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

// A contracted with B, keeping the letters of `keep`.
Operand Contract(Emitter& e, Operand a, Operand b, const std::string& keep) {
  std::string a_only, b_only;
  for (char c : a.letters)
    if (!Has(b.letters, c) && !Has(keep, c)) a_only += c;
  for (char c : b.letters)
    if (!Has(a.letters, c) && !Has(keep, c)) b_only += c;
  a = e.sum(a, a_only);
  b = e.sum(b, b_only);
  std::string bt, k, ao, bo;
  for (char c : a.letters) {
    if (Has(b.letters, c)) (Has(keep, c) ? bt : k) += c;
    else ao += c;
  }
  for (char c : b.letters)
    if (!Has(a.letters, c)) bo += c;
  const std::string ao_head = ao.empty() ? "" : ao.substr(0, ao.size() - 1);
  const std::string bo_head = bo.empty() ? "" : bo.substr(0, bo.size() - 1);
  const int32_t nbt = static_cast<int32_t>(bt.size());

  // A'' = [Bt, Ao_head, 1 x |Bo_head|, M (or 1), k].
  a = e.mergeTail(e.permute(a, bt + ao + k), k.size());
  std::vector<int32_t> a_units;
  const int32_t at = nbt + static_cast<int32_t>(ao_head.size());
  for (int32_t i = 0; i < static_cast<int32_t>(bo_head.size() + (ao.empty() ? 1 : 0)); ++i) a_units.push_back(at + i);
  a = e.unsqueeze(a, a_units);

  // B'' = [Bt, 1 x |Ao_head|, Bo_head, k, N (or 1)].
  if (k.size() == 1 && !bo.empty()) {
    b = e.permute(b, bt + bo_head + k + bo.back());
  } else {
    b = e.mergeTail(e.permute(b, bt + bo + k), k.size());
    if (bo.empty()) {
      b = e.unsqueeze(b, {static_cast<int32_t>(b.letters.size())});
    } else {
      std::string swapped = b.letters;
      std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
      b = e.permute(b, swapped);
    }
  }
  std::vector<int32_t> b_units;
  for (int32_t i = 0; i < static_cast<int32_t>(ao_head.size()); ++i) b_units.push_back(nbt + i);
  b = e.unsqueeze(b, b_units);

  Operand y{e.emit(fb::OpType::MatMul, {a.tensor, b.tensor}),
            bt + ao_head + bo_head + (ao.empty() ? std::string("1") : ao.substr(ao.size() - 1)) +
                (bo.empty() ? std::string("1") : bo.substr(bo.size() - 1))};
  std::vector<int32_t> units;
  const int32_t last = static_cast<int32_t>(y.letters.size()) - 1;
  if (ao.empty()) units.push_back(last - 1);
  if (bo.empty()) units.push_back(last);
  return units.empty() ? y : e.squeeze(y, units);
}

// The operands' letters with ellipses expanded (digits, aligned from the
// right) and the output's; false when the equation is outside this pass.
bool ParseLetters(const fb::NetT& net, const fb::OpT& op, std::vector<std::string>* ins, std::string* out) {
  std::string eq;
  for (char ch : op.params.AsEinsumParams()->equation)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  ins->clear();
  while (true) {
    const size_t comma = lhs.find(',', start);
    ins->push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (ins->size() != op.inputs.size()) return false;
  int ell = 0;  // the broadcast rank of the ellipses
  std::vector<int> ell_rank(ins->size(), 0);
  for (size_t k = 0; k < ins->size(); ++k) {
    const std::string& s = (*ins)[k];
    const size_t dots = s.find("...");
    if (dots == std::string::npos) continue;
    const fb::TensorT& t = *net.tensors[static_cast<size_t>(op.inputs[k])];
    if (t.unknown_rank) return false;
    ell_rank[k] = static_cast<int>(t.shape.size()) - static_cast<int>(s.size() - 3);
    if (ell_rank[k] < 0 || ell_rank[k] > 10) return false;
    ell = std::max(ell, ell_rank[k]);
  }
  std::string ell_letters;
  for (int i = 0; i < ell; ++i) ell_letters += static_cast<char>('0' + i);
  for (size_t k = 0; k < ins->size(); ++k) {
    std::string& s = (*ins)[k];
    const size_t dots = s.find("...");
    if (dots != std::string::npos) s = s.substr(0, dots) + ell_letters.substr(static_cast<size_t>(ell - ell_rank[k])) + s.substr(dots + 3);
    std::string seen;
    for (char c : s) {
      const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (!letter || Has(seen, c)) return false;  // a diagonal: the host's Einsum
      seen += c;
    }
    const fb::TensorT& t = *net.tensors[static_cast<size_t>(op.inputs[k])];
    if (!t.unknown_rank && t.shape.size() != s.size()) return false;
  }
  if (arrow == std::string::npos) {  // implicit: the ellipsis, then letters used once, sorted
    std::string once;
    for (const std::string& s : *ins)
      for (char c : s)
        if (!(c >= '0' && c <= '9') && !Has(once, c)) {
          int uses = 0;
          for (const std::string& r : *ins) uses += static_cast<int>(std::count(r.begin(), r.end(), c));
          if (uses == 1) once += c;
        }
    std::sort(once.begin(), once.end());
    *out = ell_letters + once;
  } else {
    *out = eq.substr(arrow + 2);
    const size_t dots = out->find("...");
    if (dots != std::string::npos) *out = out->substr(0, dots) + ell_letters + out->substr(dots + 3);
  }
  for (char c : *out) {
    bool found = false;
    for (const std::string& s : *ins) found = found || Has(s, c);
    if (!found || std::count(out->begin(), out->end(), c) != 1) return false;
  }
  return true;
}

}  // namespace

StatusOr<int> LowerEinsum(fb::NetT& net) {
  KILN_RETURN_IF_ERROR(CheckIndices(net, "lower_einsum"));
  std::vector<std::unique_ptr<fb::OpT>> ops;
  int n = 0;
  for (auto& op : net.ops) {
    std::vector<std::string> ins;
    std::string out;
    bool lower = op->type == fb::OpType::Einsum && op->params.AsEinsumParams() && op->outputs.size() == 1 &&
                 !op->inputs.empty();
    for (int t : op->inputs) lower = lower && t >= 0 && net.tensors[static_cast<size_t>(t)]->dtype == fb::DataType::F32;
    if (!lower || !ParseLetters(net, *op, &ins, &out)) {
      ops.push_back(std::move(op));
      continue;
    }
    Emitter e(net, op->name);
    Operand cur{op->inputs[0], ins[0]};
    for (size_t k = 1; k < ins.size(); ++k) {
      std::string keep = out;
      for (size_t j = k + 1; j < ins.size(); ++j) keep += ins[j];
      cur = Contract(e, cur, {op->inputs[k], ins[k]}, keep);
    }
    std::string gone;
    for (char c : cur.letters)
      if (!Has(out, c)) gone += c;
    cur = e.sum(cur, gone);
    cur = e.permute(cur, out);
    if (e.ops.empty()) {  // an identity: a copy
      fb::TransposeParamsT p;
      for (size_t d = 0; d < out.size(); ++d) p.perm.push_back(static_cast<int32_t>(d));
      fb::OpParamsUnion u;
      u.Set(std::move(p));
      e.emit(fb::OpType::Transpose, {cur.tensor}, std::move(u));
    }
    // The last op, which produced `cur`, writes the Einsum's output.
    e.ops.back()->outputs[0] = op->outputs[0];
    for (auto& o : e.ops) ops.push_back(std::move(o));
    ++n;
  }
  net.ops = std::move(ops);
  return n;
}

}  // namespace kiln
