// --map: every byte of the file, attributed to what it encodes.
//
// A visitor turns each walker callback into regions; whatever no object
// claims is then filled in as padding (all zero) or a gap (not), so the map
// accounts for every byte exactly once and a file with hidden bytes shows
// them.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "inspect/constant_data.h"
#include "inspect/inspect.h"
#include "inspect/walker.h"

namespace kiln::inspect {
namespace {

// Scalar vectors up to this many elements get a line per element; longer
// ones one line, so a map stays readable.
constexpr size_t kMaxElementLines = 16;

std::string Hex(size_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%06zx", v);
  return buf;
}

std::string Quoted(const std::string& s, size_t max_chars = 60) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < max_chars; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += s.size() > max_chars ? "\"..." : "\"";
  return out;
}

std::string TypeName(reflection::BaseType t) {
  std::string s = reflection::EnumNameBaseType(t);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class MapVisitor : public Visitor {
 public:
  explicit MapVisitor(const Walker& w) : w_(w) {}

  Status status() const { return status_; }
  std::vector<Region>& regions() { return regions_; }

  void Header(const HeaderInfo& h) override {
    if (h.size_prefixed)
      Add(0, 4, RegionKind::kHeader, "size prefix = " + std::to_string(w_.size() - 4) + " (bytes after it)");
    Add(h.root_slot, 4, RegionKind::kHeader, "root offset -> root table at " + Hex(h.root));
    if (h.has_identifier) {
      std::string id(reinterpret_cast<const char*>(w_.data() + h.identifier), 4);
      Add(h.identifier, 4, RegionKind::kHeader, "file identifier " + Quoted(id));
    }
  }

  bool BeginTable(const Path& path, const TableInfo& t) override {
    if (!t.first_visit) return false;  // shared: its bytes are already mapped
    std::string p = Name(path);
    std::string obj = ShortName(t.object->name());
    Add(t.offset, 4, RegionKind::kTable,
        p + ": table " + obj + " (" + std::to_string(t.size) + " bytes inline), soffset -> vtable at " +
            Hex(t.vtable));
    tables_.push_back({t.offset, t.size, p});
    auto it = vtables_.find(t.vtable);
    if (it == vtables_.end()) {
      vtables_[t.vtable] = VTableUse{t.vtable_size, p, obj, 1, {}};
    } else {
      it->second.users++;
      // Identical vtables are shared even between tables of different types.
      std::vector<std::string>& others = it->second.other_types;
      if (obj != it->second.object && std::find(others.begin(), others.end(), obj) == others.end())
        others.push_back(obj);
    }
    return true;
  }

  void Scalar(const Path& path, const ScalarInfo& s) override {
    std::string v = FormatScalar(s.value, s.enum_def);
    if (s.enum_def) v += " (" + std::to_string(s.value.i) + ")";
    Add(s.offset, s.size, RegionKind::kTable, Name(path) + " = " + v);
  }

  void Offset(const Path& path, const OffsetInfo& o) override {
    Add(o.offset, 4, o.in_vector ? RegionKind::kVector : RegionKind::kTable,
        Name(path) + ": offset -> " + o.target_kind + " at " + Hex(o.target));
  }

  bool BeginVector(const Path& path, const VectorInfo& v) override {
    if (!v.first_visit) return false;
    std::string p = Name(path);
    std::string elem = v.element_object ? ShortName(v.element_object->name()) : TypeName(v.element_type);
    Add(v.offset, 4, RegionKind::kVector,
        p + ": vector length = " + std::to_string(v.count) + " (" + elem + ")");
    if (!v.scalar_elements() || v.count == 0) return true;
    size_t bytes = v.count * v.element_size;
    if (IsConstantData(v)) {
      auto s = SummarizeData(w_, v, 4);
      std::string desc = s.ok() ? FormatDataSummary(*s) : s.status().message();
      Add(v.elements, bytes, RegionKind::kData, p + ": constant data, " + desc);
    } else if (v.count <= kMaxElementLines) {
      for (size_t i = 0; i < v.count; ++i) {
        size_t at = v.elements + i * v.element_size;
        auto val = w_.ReadScalar(v.element_type, at);
        if (!val.ok()) return Fail(val.status());
        Add(at, v.element_size, RegionKind::kVector,
            p + "[" + std::to_string(i) + "] = " + FormatScalar(*val, v.element_enum));
      }
    } else {
      Add(v.elements, bytes, RegionKind::kVector,
          p + "[0.." + std::to_string(v.count) + "): " + std::to_string(v.count) + " " + elem + " elements");
    }
    return true;
  }

  void String(const Path& path, const StringInfo& s) override {
    if (!s.first_visit) return;
    std::string p = Name(path);
    Add(s.offset, 4, RegionKind::kString, p + ": string length = " + std::to_string(s.length));
    if (s.length) {
      auto text = w_.ReadString(s);
      if (!text.ok()) return (void)Fail(text.status());
      Add(s.bytes, s.length, RegionKind::kString, p + " = " + Quoted(*text));
    }
    Add(s.bytes + s.length, 1, RegionKind::kString, p + ": string NUL terminator");
  }

  // Adds the vtables (known only now: how many tables share each), sorts,
  // checks for overlaps and fills the holes.
  Status Finish() {
    KILN_RETURN_IF_ERROR(status_);
    for (const auto& [at, use] : vtables_) {
      size_t slots = (use.size - 4) / 2;
      std::string m = "vtable of " + use.first_user + " (" + use.object + ", " + std::to_string(slots) +
                      (slots == 1 ? " field slot)" : " field slots)");
      if (use.users > 1) {
        m += " (shared by " + std::to_string(use.users) + " tables";
        if (!use.other_types.empty()) {
          m += ", also of type";
          for (size_t i = 0; i < use.other_types.size(); ++i) m += (i ? ", " : " ") + use.other_types[i];
        }
        m += ")";
      }
      Add(at, use.size, RegionKind::kVTable, m);
    }
    std::sort(regions_.begin(), regions_.end(),
              [](const Region& a, const Region& b) { return a.offset < b.offset; });
    std::sort(tables_.begin(), tables_.end(),
              [](const TableExtent& a, const TableExtent& b) { return a.offset < b.offset; });
    std::vector<Region> out;
    size_t pos = 0;
    for (Region& r : regions_) {
      if (r.offset < pos) {
        return InvalidArgument("byte map: %s at %zu overlaps the previous region (%s)", r.meaning.c_str(),
                               r.offset, out.empty() ? "?" : out.back().meaning.c_str());
      }
      if (r.offset > pos) out.push_back(Hole(pos, r.offset - pos));
      pos = r.offset + r.length;
      out.push_back(std::move(r));
    }
    if (pos < w_.size()) out.push_back(Hole(pos, w_.size() - pos));
    regions_ = std::move(out);
    return Status::Ok();
  }

 private:
  struct VTableUse {
    size_t size;
    std::string first_user;
    std::string object;
    size_t users;
    std::vector<std::string> other_types;  // of sharing tables, besides `object`
  };
  struct TableExtent {
    size_t offset, size;
    std::string path;
  };

  static std::string Name(const Path& path) { return path.empty() ? "(root)" : PathString(path); }

  void Add(size_t offset, size_t length, RegionKind kind, std::string meaning) {
    if (length) regions_.push_back(Region{offset, length, kind, std::move(meaning)});
  }

  bool Fail(const Status& s) {
    if (status_.ok()) status_ = s;
    return false;
  }

  // Bytes no object claims: padding the builder inserted for alignment (all
  // zero), or a gap that holds something (a hand-edited or foreign file).
  Region Hole(size_t offset, size_t length) const {
    bool zero = true;
    for (size_t i = 0; i < length && zero; ++i) zero = w_.data()[offset + i] == 0;
    std::string where;
    // The last table starting at or before the hole; inside it if it spans it.
    auto it = std::upper_bound(tables_.begin(), tables_.end(), offset,
                               [](size_t off, const TableExtent& t) { return off < t.offset; });
    if (it != tables_.begin() && offset < std::prev(it)->offset + std::prev(it)->size)
      where = " inside table " + std::prev(it)->path;
    if (zero) return Region{offset, length, RegionKind::kPadding, "padding (all zero)" + where};
    return Region{offset, length, RegionKind::kGap,
                  "gap: bytes no object refers to, NOT all zero" + where};
  }

  const Walker& w_;
  Status status_;
  std::vector<Region> regions_;
  std::vector<TableExtent> tables_;
  std::map<size_t, VTableUse> vtables_;
};

}  // namespace

const char* RegionKindName(RegionKind k) {
  switch (k) {
    case RegionKind::kHeader: return "header";
    case RegionKind::kTable: return "tables";
    case RegionKind::kVTable: return "vtables";
    case RegionKind::kVector: return "vectors";
    case RegionKind::kString: return "strings";
    case RegionKind::kData: return "data";
    case RegionKind::kPadding: return "padding";
    case RegionKind::kGap: return "gaps";
  }
  return "?";
}

size_t ByteMap::total(RegionKind k) const {
  size_t n = 0;
  for (const Region& r : regions)
    if (r.kind == k) n += r.length;
  return n;
}

std::string HexBytes(const uint8_t* data, size_t offset, size_t length) {
  constexpr size_t kShown = 16;
  std::string out;
  char buf[4];
  for (size_t i = 0; i < length && i < kShown; ++i) {
    std::snprintf(buf, sizeof buf, i ? " %02x" : "%02x", data[offset + i]);
    out += buf;
  }
  if (length > kShown) out += " ... (" + std::to_string(length) + " bytes)";
  return out;
}

StatusOr<ByteMap> BuildByteMap(const uint8_t* data, size_t size) {
  Walker w(data, size);
  MapVisitor v(w);
  KILN_RETURN_IF_ERROR(w.Walk(v));
  KILN_RETURN_IF_ERROR(v.Finish());
  ByteMap map;
  map.regions = std::move(v.regions());
  map.file_size = size;
  return map;
}

std::string FormatByteMap(const ByteMap& map, const uint8_t* data) {
  // The bytes column is as wide as its widest entry, so meanings line up.
  size_t width = 5;
  for (const Region& r : map.regions) width = std::max(width, HexBytes(data, r.offset, r.length).size());
  std::string out;
  char line[64];
  std::snprintf(line, sizeof line, "%-8s  %6s  ", "offset", "length");
  out += line + std::string("bytes") + std::string(width - 5, ' ') + "  meaning\n";
  for (const Region& r : map.regions) {
    std::snprintf(line, sizeof line, "%08zx  %6zu  ", r.offset, r.length);
    std::string hex = HexBytes(data, r.offset, r.length);
    hex.resize(width, ' ');
    out += line + hex + "  " + r.meaning + "\n";
  }
  size_t sum = 0;
  for (const Region& r : map.regions) sum += r.length;
  out += "total " + std::to_string(sum) + " bytes =";
  const RegionKind kinds[] = {RegionKind::kHeader, RegionKind::kTable,  RegionKind::kVTable,
                              RegionKind::kVector, RegionKind::kString, RegionKind::kData,
                              RegionKind::kPadding, RegionKind::kGap};
  bool first = true;
  for (RegionKind k : kinds) {
    size_t n = map.total(k);
    if (k == RegionKind::kGap && n == 0) continue;  // the usual case: say nothing
    out += std::string(first ? " " : " + ") + RegionKindName(k) + " " + std::to_string(n);
    first = false;
  }
  out += "; file size " + std::to_string(map.file_size) + (sum == map.file_size ? " (all accounted for)\n" : " (MISMATCH)\n");
  return out;
}

}  // namespace kiln::inspect
