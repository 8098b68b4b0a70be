// --locate PATH: where one value lives in the file.
//
// The same walk as --map and --json, with a visitor that descends only
// along the requested path. On a miss it remembers the deepest node that
// did resolve, so the error can name the first step that does not and say
// what is there instead.
#include <algorithm>
#include <cctype>

#include "inspect/constant_data.h"
#include "inspect/inspect.h"
#include "inspect/walker.h"

namespace kiln::inspect {
namespace {

std::string Hex(size_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%06zx", v);
  return buf;
}

std::string TypeName(reflection::BaseType t) {
  std::string s = reflection::EnumNameBaseType(t);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

StatusOr<Path> ParsePath(const std::string& s) {
  Path path;
  size_t i = 0;
  auto bad = [&](const char* why) {
    return InvalidArgument("bad path '%s' at character %zu: %s", s.c_str(), i + 1, why);
  };
  while (i < s.size()) {
    if (s[i] == '[') {
      size_t close = s.find(']', i);
      if (close == std::string::npos || close == i + 1) return bad("expected an index like [0]");
      std::string digits = s.substr(i + 1, close - i - 1);
      if (digits.size() > 10 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return bad("an index must be a non-negative number");
      path.push_back(PathStep{"", static_cast<size_t>(std::stoull(digits)), ""});
      i = close + 1;
      continue;
    }
    if (s[i] == '.') {
      if (path.empty()) return bad("a path starts with a field name");
      ++i;
    } else if (!path.empty()) {
      return bad("expected '.' or '['");
    }
    size_t start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
    if (i == start) return bad("expected a field name");
    PathStep step{s.substr(start, i - start), 0, ""};
    if (i < s.size() && s[i] == '<') {
      size_t close = s.find('>', i);
      if (close == std::string::npos || close == i + 1) return bad("expected a union type like <ConvParams>");
      step.union_type = s.substr(i + 1, close - i - 1);
      i = close + 1;
    }
    path.push_back(std::move(step));
  }
  return path;
}

bool SameStep(const PathStep& node, const PathStep& want) {
  if (node.is_index() != want.is_index()) return false;
  return node.is_index() ? node.index == want.index : node.field == want.field;
}

std::vector<const reflection::Field*> FieldsInOrder(const reflection::Object& obj) {
  std::vector<const reflection::Field*> fields(obj.fields()->begin(), obj.fields()->end());
  std::sort(fields.begin(), fields.end(),
            [](const reflection::Field* a, const reflection::Field* b) { return a->id() < b->id(); });
  return fields;
}

class LocateVisitor : public Visitor {
 public:
  LocateVisitor(const Walker& w, const Path& target) : w_(w), target_(target) {}

  bool found() const { return found_; }
  Location& location() { return loc_; }
  const Status& status() const { return status_; }

  void Header(const HeaderInfo& h) override {
    slot_ = OffsetInfo{h.root_slot, h.root, false, "table"};
    slot_depth_ = 0;
  }

  void Offset(const Path& path, const OffsetInfo& o) override {
    if (!OnPath(path)) return;
    slot_ = o;
    slot_depth_ = path.size();
  }

  bool BeginTable(const Path& path, const TableInfo& t) override {
    if (!OnPath(path) || !UnionMatches(path)) return false;
    table_ = t;
    Deepest(path, kTable);
    if (path.size() < target_.size()) return true;
    std::string obj = ShortName(t.object->name());
    size_t stored = 0;
    for (const reflection::Field* f : *t.object->fields()) {
      if (size_t{f->offset()} + 2 > t.vtable_size) continue;
      auto fo = w_.ReadScalar(reflection::UShort, t.vtable + f->offset());
      if (fo.ok() && fo->u != 0) ++stored;
    }
    Found(path, "table " + obj, t.offset, t.size,
          "table " + obj + ", " + std::to_string(stored) + " of " + std::to_string(t.object->fields()->size()) +
              " fields stored");
    loc_.spans.push_back({"table (soffset to vtable + inline fields)", t.offset, t.size});
    loc_.spans.push_back({"its vtable", t.vtable, t.vtable_size});
    AddSlot(path);
    return false;
  }

  void Scalar(const Path& path, const ScalarInfo& s) override {
    if (!OnPath(path)) return;
    Deepest(path, kScalar);
    if (path.size() < target_.size()) return;
    std::string type = s.enum_def ? ShortName(s.enum_def->name()) : TypeName(s.value.type);
    std::string value = FormatScalar(s.value, s.enum_def);
    if (s.enum_def) value += " (" + std::to_string(s.value.i) + ")";
    Found(path, type + " field", s.offset, s.size, value);
    loc_.spans.push_back({"value", s.offset, s.size});
    loc_.spans.push_back({"vtable entry: the field's offset in its table", table_.vtable + s.field->offset(), 2});
    loc_.spans.push_back({"in table " + Parent(path) + " (" + ShortName(table_.object->name()) + ")",
                          table_.offset, table_.size});
  }

  bool BeginVector(const Path& path, const VectorInfo& v) override {
    if (!OnPath(path)) return false;
    Deepest(path, kVector);
    vector_count_ = v.count;
    std::string elem = v.element_object ? ShortName(v.element_object->name()) : TypeName(v.element_type);
    if (path.size() == target_.size()) {
      std::string value;
      if (IsConstantData(v)) {
        auto s = SummarizeData(w_, v, 8);
        if (!s.ok()) return Fail(s.status());
        value = FormatDataSummary(*s);
        elem = "ubyte (constant data)";
      } else if (v.scalar_elements()) {
        value = "[";
        for (size_t i = 0; i < v.count && i < 16; ++i) {
          auto e = w_.ReadScalar(v.element_type, v.elements + i * v.element_size);
          if (!e.ok()) return Fail(e.status());
          value += (i ? ", " : "") + FormatScalar(*e, v.element_enum);
        }
        value += v.count > 16 ? ", ... (" + std::to_string(v.count) + " elements)]" : "]";
      } else {
        value = std::to_string(v.count) + " " + elem + (v.element_object ? " tables" : "s");
      }
      Found(path, "vector of " + elem, v.elements, v.count * v.element_size, value);
      loc_.spans.push_back({"elements", v.elements, v.count * v.element_size});
      loc_.spans.push_back({"length prefix (" + std::to_string(v.count) + ")", v.offset, 4});
      AddSlot(path);
      return false;
    }
    const PathStep& next = target_[path.size()];
    if (!next.is_index() || next.index >= v.count) return false;  // reported after the walk
    if (!v.scalar_elements()) return true;                         // the walk goes on to element i
    Path elem_path = path;
    elem_path.push_back(next);
    Deepest(elem_path, kScalar);
    if (elem_path.size() < target_.size()) return false;
    size_t at = v.elements + next.index * v.element_size;
    auto e = w_.ReadScalar(v.element_type, at);
    if (!e.ok()) return Fail(e.status());
    Found(elem_path, "element " + std::to_string(next.index) + " of vector of " + elem, at, v.element_size,
          FormatScalar(*e, v.element_enum));
    loc_.spans.push_back({"value", at, v.element_size});
    loc_.spans.push_back({"length prefix of " + PathString(path) + " (" + std::to_string(v.count) + ")",
                          v.offset, 4});
    AddSlot(path);
    return false;
  }

  void String(const Path& path, const StringInfo& s) override {
    if (!OnPath(path)) return;
    Deepest(path, kString);
    if (path.size() < target_.size()) return;
    auto text = w_.ReadString(s);
    if (!text.ok()) return (void)Fail(text.status());
    std::string q = "\"";
    for (char c : *text) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    Found(path, "string", s.bytes, s.length, q + "\"");
    loc_.spans.push_back({"characters (" + std::to_string(s.length) + ")", s.bytes, s.length});
    loc_.spans.push_back({"length prefix", s.offset, 4});
    loc_.spans.push_back({"NUL terminator", s.bytes + s.length, 1});
    AddSlot(path);
  }

  // The error for a path that did not resolve, from the deepest node that did.
  Status Miss() const {
    if (!status_.ok()) return status_;
    if (deepest_path_.size() >= target_.size()) return Internal("locate: path resolved but not reported");
    const PathStep& next = target_[deepest_path_.size()];
    std::string here = deepest_path_.empty() ? "the root table" : "'" + PathString(deepest_path_) + "'";
    Path upto = deepest_path_;
    upto.push_back(next);
    std::string bad = "'" + PathString(upto, false) + "' does not resolve: ";
    std::string step = next.is_index() ? "[" + std::to_string(next.index) + "]" : "'" + next.field + "'";
    switch (deepest_kind_) {
      case kTable: {
        const reflection::Object& obj = *deepest_table_.object;
        std::string obj_name = ShortName(obj.name());
        std::string list;
        for (const reflection::Field* f : FieldsInOrder(obj)) list += (list.empty() ? "" : ", ") + f->name()->str();
        if (next.is_index())
          return NotFound("%s%s is a table (%s), not a vector; its fields: %s", bad.c_str(), here.c_str(),
                          obj_name.c_str(), list.c_str());
        const reflection::Field* f = obj.fields()->LookupByKey(next.field.c_str());
        if (!f)
          return NotFound("%s%s (%s) has no field %s; its fields: %s", bad.c_str(), here.c_str(),
                          obj_name.c_str(), step.c_str(), list.c_str());
        reflection::BaseType bt = f->type()->base_type();
        if (ScalarSize(bt)) {
          return NotFound("%sfield %s of %s is not stored in the file (its default, %s, applies)", bad.c_str(),
                          step.c_str(), obj_name.c_str(), FormatScalar(FieldDefault(*f), EnumOfType(*f->type())).c_str());
        }
        return NotFound("%sfield %s of %s is absent from the file", bad.c_str(), step.c_str(), obj_name.c_str());
      }
      case kVector:
        if (next.is_index())
          return NotFound("%sindex %zu is out of range (%s has %zu elements)", bad.c_str(), next.index,
                          here.c_str(), vector_count_);
        return NotFound("%s%s is a vector (%zu elements), it has no field %s; use an index, e.g. %s[0]",
                        bad.c_str(), here.c_str(), vector_count_, step.c_str(),
                        PathString(deepest_path_, false).c_str());
      case kScalar:
      case kString:
        return NotFound("%s%s is a %s, it has no component %s", bad.c_str(), here.c_str(),
                        deepest_kind_ == kString ? "string" : "scalar", step.c_str());
    }
    return NotFound("%s", bad.c_str());
  }

 private:
  enum Kind { kTable, kVector, kScalar, kString };

  bool OnPath(const Path& path) const {
    if (found_ || !status_.ok() || path.size() > target_.size()) return false;
    for (size_t i = 0; i < path.size(); ++i)
      if (!SameStep(path[i], target_[i])) return false;
    return true;
  }

  // A union member type given in the path must be the one stored.
  bool UnionMatches(const Path& path) {
    if (path.empty()) return true;
    const std::string& want = target_[path.size() - 1].union_type;
    const std::string& have = path.back().union_type;
    if (want.empty() || want == have) return true;
    return Fail(NotFound("'%s' does not resolve: '%s' holds a %s, not a %s", PathString(target_, true).c_str(),
                         PathString(path, false).c_str(), have.c_str(), want.c_str()));
  }

  // Only nodes on the path get here, and the walk goes down the path, so
  // each one is at least as deep as the one before.
  void Deepest(const Path& path, Kind kind) {
    if (path.size() < deepest_path_.size()) return;
    deepest_path_ = path;
    deepest_kind_ = kind;
    if (kind == kTable) deepest_table_ = table_;
  }

  void Found(const Path& path, std::string kind, size_t offset, size_t length, std::string value) {
    found_ = true;
    loc_.path = PathString(path);
    loc_.kind = std::move(kind);
    loc_.offset = offset;
    loc_.length = length;
    loc_.value = std::move(value);
  }

  // The uoffset that leads to the object at `path` (or the root offset).
  void AddSlot(const Path& path) {
    if (slot_depth_ != path.size()) return;
    std::string what = path.empty() ? "root offset" : "offset field " + PathString(path);
    if (slot_.in_vector) what = "offset " + PathString(path) + " in vector " + Parent(path);
    loc_.spans.push_back({what + " -> " + Hex(slot_.target), slot_.offset, 4});
  }

  static std::string Parent(const Path& path) {
    Path p(path.begin(), path.end() - (path.empty() ? 0 : 1));
    return p.empty() ? "(root)" : PathString(p);
  }

  bool Fail(const Status& s) {
    if (status_.ok()) status_ = s;
    return false;
  }

  const Walker& w_;
  const Path& target_;
  bool found_ = false;
  Location loc_;
  Status status_;
  OffsetInfo slot_;
  size_t slot_depth_ = SIZE_MAX;
  TableInfo table_;  // the innermost table on the path so far
  Path deepest_path_;
  Kind deepest_kind_ = kTable;
  TableInfo deepest_table_;
  size_t vector_count_ = 0;
};

}  // namespace

StatusOr<Location> Locate(const uint8_t* data, size_t size, const std::string& path) {
  KILN_ASSIGN_OR_RETURN(Path target, ParsePath(path));
  Walker w(data, size);
  LocateVisitor v(w, target);
  KILN_RETURN_IF_ERROR(w.Walk(v));
  if (!v.found()) return v.Miss();
  return std::move(v.location());
}

std::string FormatLocation(const Location& loc, const uint8_t* data) {
  std::string out;
  out += "path    " + (loc.path.empty() ? std::string("(root)") : loc.path) + "\n";
  out += "kind    " + loc.kind + "\n";
  out += "value   " + loc.value + "\n";
  out += "at      offset " + Hex(loc.offset) + " (" + std::to_string(loc.offset) + "), " +
         std::to_string(loc.length) + " bytes\n";
  char line[64];
  for (const Span& s : loc.spans) {
    std::snprintf(line, sizeof line, "  %08zx  %6zu  ", s.offset, s.length);
    std::string hex = HexBytes(data, s.offset, s.length);
    if (hex.size() < 47) hex.resize(47, ' ');
    out += line + hex + "  " + s.what + "\n";
  }
  return out;
}

}  // namespace kiln::inspect
