// The one reflection-driven walk over a Kiln model buffer that --map, --json
// and --locate are built on.
//
// The walker knows nothing about Kiln: it reads the binary schema
// (kiln.bfbs, embedded at build time) and follows the FlatBuffers wire format
// itself, reporting every object with the byte offsets where it lives. It
// does its own bounds-checked reads rather than using flatbuffers::Table
// accessors, because the consumers need offsets, not just values, and
// because a checked read keeps a bug in the walk from ever reading outside
// the buffer (the buffer is verified, but the index math is still ours).
//
// Thread-safety: a Walker is immutable; Walk() may run on several threads
// with different visitors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <flatbuffers/reflection.h>

#include "kiln/status.h"

namespace kiln::inspect {

// One step of a path into the model: a field, or an index into a vector.
struct PathStep {
  std::string field;       // empty for an index step
  size_t index = 0;        // for an index step
  std::string union_type;  // for a union field: the member type ("ConvParams")
  bool is_index() const { return field.empty(); }
};
using Path = std::vector<PathStep>;

// "ops[1].params<ConvParams>.kernel_shape[0]"; without union types when
// `with_union_types` is false (the form users type).
std::string PathString(const Path& path, bool with_union_types = true);

// The embedded kiln.bfbs schema (verified once, on first use); null if the
// embedded bytes do not verify (a broken build).
const reflection::Schema* KilnSchema();

// Short name of a schema object or enum: "kiln.fb.ConvParams" -> "ConvParams".
std::string ShortName(const flatbuffers::String* qualified);

// A scalar's value as read from the buffer.
struct ScalarValue {
  reflection::BaseType type = reflection::None;
  int64_t i = 0;   // signed integers, bool, enums of signed type
  uint64_t u = 0;  // unsigned integers (also set for signed, as bits)
  double f = 0;    // Float / Double
  bool is_float() const { return type == reflection::Float || type == reflection::Double; }
};

// The value as text: "3", "-inf", "true", or the enum member name ("Conv")
// when `enum_def` is given and has a member of that value.
std::string FormatScalar(const ScalarValue& v, const reflection::Enum* enum_def);

// The member of `e` with value `value`, or null.
const reflection::EnumVal* FindEnumValue(const reflection::Enum* e, int64_t value);

// The schema default of scalar field `f` (what a reader gets when the
// table does not store it).
ScalarValue FieldDefault(const reflection::Field& f);

// The enum (or union) a scalar type refers to, or null.
const reflection::Enum* EnumOfType(const reflection::Type& type);

// Size in bytes of a scalar base type; 0 for non-scalars.
size_t ScalarSize(reflection::BaseType t);

struct TableInfo {
  const reflection::Object* object = nullptr;
  size_t offset = 0;         // where the table starts (its soffset to the vtable)
  size_t size = 0;           // inline size, from the vtable
  size_t vtable = 0;         // where its vtable starts
  size_t vtable_size = 0;
  bool first_visit = true;   // false when another offset already led here
};

// A field slot stored inline in a table: a scalar, or an offset.
struct ScalarInfo {
  const reflection::Field* field = nullptr;
  const reflection::Enum* enum_def = nullptr;  // for enums and union types
  size_t offset = 0;
  size_t size = 0;
  ScalarValue value;
};

// A 4-byte uoffset (in a table field or a vector element) and what it points at.
struct OffsetInfo {
  size_t offset = 0;  // the slot
  size_t target = 0;  // the object it points to
  bool in_vector = false;
  const char* target_kind = "";  // "table", "vector", "string"
};

struct VectorInfo {
  const reflection::Field* field = nullptr;
  const TableInfo* parent = nullptr;  // the table holding the field
  size_t offset = 0;                  // the 4-byte length prefix
  size_t count = 0;
  size_t elements = 0;                // offset of element 0
  size_t element_size = 0;
  reflection::BaseType element_type = reflection::None;
  const reflection::Enum* element_enum = nullptr;  // scalar elements of enum type
  const reflection::Object* element_object = nullptr;  // table elements
  bool first_visit = true;
  bool scalar_elements() const { return ScalarSize(element_type) != 0; }
};

struct StringInfo {
  size_t offset = 0;  // the 4-byte length prefix
  size_t length = 0;  // bytes, without the terminating NUL
  size_t bytes = 0;   // offset of the first byte
  bool first_visit = true;
};

// Callbacks of a walk, in file-structure order (depth first, fields of a
// table in declaration order). Begin* return false to skip the children
// and the matching End* call.
// Vectors of scalars get no per-element callbacks: a consumer that wants
// elements reads them with Walker::ReadScalar, so a 100 MB weights vector
// costs one callback, not 100 million.
// The buffer's header. Kiln files are size-prefixed ([u32 size of the rest]
// [u32 root offset]["KILN"]); a plain FlatBuffer ([root offset]["KILN"]) is
// walked as well.
struct HeaderInfo {
  bool size_prefixed = false;  // the size prefix is bytes [0, 4)
  size_t root_slot = 0;        // where the root uoffset is
  size_t root = 0;             // where the root table is
  bool has_identifier = false; // the file identifier follows the root offset
  size_t identifier = 0;
};

class Visitor {
 public:
  virtual ~Visitor() = default;
  virtual void Header(const HeaderInfo& h) {}
  virtual bool BeginTable(const Path& path, const TableInfo& t) { return true; }
  virtual void EndTable(const Path& path, const TableInfo& t) {}
  virtual void Scalar(const Path& path, const ScalarInfo& s) {}
  // A field the table does not store (it reads as its schema default).
  virtual void Absent(const Path& path, const reflection::Field& f, const TableInfo& t) {}
  virtual void Offset(const Path& path, const OffsetInfo& o) {}
  virtual bool BeginVector(const Path& path, const VectorInfo& v) { return true; }
  virtual void EndVector(const Path& path, const VectorInfo& v) {}
  virtual void String(const Path& path, const StringInfo& s) {}
};

class Walker {
 public:
  // `data` must be a buffer that has passed the loader's verification and
  // must outlive the walker.
  Walker(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  Status Walk(Visitor& visitor) const;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Checked reads: an error instead of reading past the end.
  StatusOr<ScalarValue> ReadScalar(reflection::BaseType type, size_t offset) const;
  StatusOr<std::string> ReadString(const StringInfo& s) const;
  // The value of scalar field `name` of a table, or its schema default when
  // the table does not store it (the data summary needs Tensor.dtype).
  StatusOr<ScalarValue> FieldValue(const TableInfo& t, const char* name) const;

 private:
  struct State;
  Status WalkTable(State& st, const reflection::Object& obj, size_t offset, Path& path) const;
  Status WalkField(State& st, const TableInfo& t, const reflection::Field& f, size_t at,
                   Path& path) const;
  Status WalkVector(State& st, const TableInfo& t, const reflection::Field& f, size_t at,
                    Path& path) const;
  Status WalkString(State& st, size_t at, Path& path) const;
  StatusOr<size_t> FollowOffset(size_t slot) const;
  Status Check(size_t offset, size_t length, const char* what) const;

  const uint8_t* data_;
  size_t size_;
};

}  // namespace kiln::inspect
