// --json: the model as JSON, written by a visitor over the generic walk.
//
// Fields come in schema declaration order. A scalar field the file does not
// store is written with its default (what a reader gets), so every tensor
// shows its dtype; absent strings, vectors and tables are left out. Enums
// are written by name, a union as "<name>_type" (the member's name) plus
// "<name>" (its table). Non-finite floats are written as strings ("-inf"),
// since JSON has no literal for them. Small tables of scalars (a Dim, an
// AxisParams) go on one line.
#include <cmath>
#include <cstdio>

#include "inspect/constant_data.h"
#include "inspect/inspect.h"
#include "inspect/walker.h"

namespace kiln::inspect {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          // Bytes >= 0x80 pass through: valid UTF-8 stays valid.
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// A scalar as a JSON value: a number, true/false, or a quoted enum name /
// non-finite float.
std::string JsonScalar(const ScalarValue& v, const reflection::Enum* e) {
  std::string text = FormatScalar(v, e);
  if (e && FindEnumValue(e, v.i)) return JsonString(text);
  if (v.is_float() && !std::isfinite(v.f)) return JsonString(text);
  return text;
}

// Data element text as JSON: numbers stay bare, non-finite ones are quoted.
std::string JsonNumber(const std::string& text) {
  if (text == "inf" || text == "-inf" || text == "nan") return JsonString(text);
  return text;
}

class JsonVisitor : public Visitor {
 public:
  JsonVisitor(const Walker& w, bool full) : w_(w), full_(full) {}

  Status status() const { return status_; }
  std::string take() { return std::move(out_) + "\n"; }

  bool BeginTable(const Path& path, const TableInfo& t) override {
    BeginValue(path);
    table_starts_.push_back(out_.size());
    out_ += "{";
    stack_.push_back(0);
    return true;
  }
  void EndTable(const Path& path, const TableInfo& t) override {
    Close('}');
    size_t start = table_starts_.back();
    table_starts_.pop_back();
    // Without nested tables the body is one value per line; join the lines
    // when the result is short. Strings hold no raw newlines (escaped), so
    // only layout whitespace is removed.
    if (out_.find('{', start + 1) != std::string::npos) return;
    std::string joined;
    for (size_t i = start; i < out_.size(); ++i) {
      if (out_[i] != '\n') {
        joined += out_[i];
        continue;
      }
      while (i + 1 < out_.size() && out_[i + 1] == ' ') ++i;
      if (joined.back() != '{' && i + 1 < out_.size() && out_[i + 1] != '}') joined += ' ';
    }
    if (joined.size() <= 100) out_.replace(start, std::string::npos, joined);
  }

  void Absent(const Path& path, const reflection::Field& f, const TableInfo& t) override {
    reflection::BaseType bt = f.type()->base_type();
    if (f.deprecated() || !ScalarSize(bt)) return;
    BeginValue(path);
    out_ += JsonScalar(FieldDefault(f), EnumOfType(*f.type()));
  }

  void Scalar(const Path& path, const ScalarInfo& s) override {
    BeginValue(path);
    out_ += JsonScalar(s.value, s.enum_def);
  }

  bool BeginVector(const Path& path, const VectorInfo& v) override {
    BeginValue(path);
    if (v.scalar_elements()) {
      if (IsConstantData(v)) {
        WriteData(v);
      } else {
        // Short scalar lists (shapes, axes) read best on one line.
        out_ += "[";
        for (size_t i = 0; i < v.count; ++i) {
          auto val = w_.ReadScalar(v.element_type, v.elements + i * v.element_size);
          if (!val.ok()) return Fail(val.status());
          out_ += (i ? ", " : "") + JsonScalar(*val, v.element_enum);
        }
        out_ += "]";
      }
      return false;
    }
    out_ += "[";
    stack_.push_back(0);
    return true;
  }
  void EndVector(const Path& path, const VectorInfo& v) override {
    if (!v.scalar_elements()) Close(']');
  }

  void String(const Path& path, const StringInfo& s) override {
    BeginValue(path);
    auto text = w_.ReadString(s);
    if (!text.ok()) return (void)Fail(text.status());
    out_ += JsonString(*text);
  }

 private:
  // Writes what precedes a value: a comma after a sibling, the line break
  // and indent, and the key when the container is a table.
  void BeginValue(const Path& path) {
    if (stack_.empty()) return;  // the root
    out_ += stack_.back()++ ? ",\n" : "\n";
    Indent();
    if (!path.empty() && !path.back().is_index()) out_ += JsonString(path.back().field) + ": ";
  }

  void Close(char c) {
    bool empty = stack_.back() == 0;
    stack_.pop_back();
    if (!empty) {
      out_ += "\n";
      Indent();
    }
    out_ += c;
  }

  void Indent() { out_.append(2 * stack_.size(), ' '); }

  void WriteData(const VectorInfo& v) {
    auto s = SummarizeData(w_, v, full_ ? SIZE_MAX : 8);
    if (!s.ok()) return (void)Fail(s.status());
    out_ += "{\"dtype\": " + JsonString(s->dtype) + ", \"bytes\": " + std::to_string(s->bytes) +
            ", \"elements\": " + std::to_string(s->elements);
    if (s->has_range) {
      ScalarValue lo, hi;
      lo.type = hi.type = reflection::Float;  // the data's own precision
      lo.f = s->min;
      hi.f = s->max;
      out_ += ", \"min\": " + FormatScalar(lo, nullptr) + ", \"max\": " + FormatScalar(hi, nullptr);
    }
    out_ += full_ ? ", \"values\": [" : ", \"first\": [";
    for (size_t i = 0; i < s->values.size(); ++i) out_ += (i ? ", " : "") + JsonNumber(s->values[i]);
    out_ += "]}";
  }

  bool Fail(const Status& s) {
    if (status_.ok()) status_ = s;
    return false;
  }

  const Walker& w_;
  bool full_;
  Status status_;
  std::string out_;
  std::vector<size_t> stack_;  // values written so far in each open container
  std::vector<size_t> table_starts_;  // where each open table's '{' is in out_
};

}  // namespace

StatusOr<std::string> ToJson(const uint8_t* data, size_t size, bool full) {
  Walker w(data, size);
  JsonVisitor v(w, full);
  KILN_RETURN_IF_ERROR(w.Walk(v));
  KILN_RETURN_IF_ERROR(v.status());
  return v.take();
}

}  // namespace kiln::inspect
