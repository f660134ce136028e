// NumPy's .npy format (and .npz on top of src/io/zip.cpp). Reading accepts format
// versions 1.0-3.0, either byte order and Fortran order; writing produces version 1.0
// (2.0 only when the header outgrows 64 KiB, as NumPy does), little-endian, C order.
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/array_internal.h"
#include "io/zip.h"
#include "jx/io.h"

namespace jx {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreludeV1 = 10;  // magic, 2 version bytes, u16 header length
constexpr size_t kPreludeV2 = 12;  // ... u32 header length
constexpr size_t kHeaderAlign = 64;

// ---- dtype descriptors ----

// NumPy's descr for a jx dtype, without the byte-order character.
std::string_view descr_body(DType d) {
  switch (d) {
    case DType::Bool: return "b1";
    case DType::Int8: return "i1";
    case DType::Int16: return "i2";
    case DType::Int32: return "i4";
    case DType::Int64: return "i8";
    case DType::UInt8: return "u1";
    case DType::UInt32: return "u4";
    case DType::Float16: return "f2";
    case DType::Float32: return "f4";
    case DType::Float64: return "f8";
    case DType::Complex64: return "c8";
    case DType::Complex128: return "c16";
    case DType::BFloat16: break;
  }
  return {};
}

struct Descr {
  DType dtype;
  bool swap;  // stored in the other byte order than this machine's
};

// Parses "<f4", ">i8", "|b1", "=u4"... Raises with a reason for anything jx cannot hold.
Descr parse_descr(const std::string& descr, const std::string& what, std::string_view op) {
  std::string_view s = descr;
  char order = '|';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=')) {
    order = s[0];
    s.remove_prefix(1);
  }
  if (s == "?") s = "b1";
  for (int i = 0; i < kNumDTypes; ++i) {
    auto d = static_cast<DType>(i);
    if (d == DType::BFloat16 || s != descr_body(d)) continue;
    bool little = order == '<' || (order != '>' && std::endian::native == std::endian::little);
    bool swap = itemsize(d) > 1 && little != (std::endian::native == std::endian::little);
    return {d, swap};
  }
  if (s == "u2" || s == "u8")
    detail::fail(op, what, ": dtype descr '", descr, "' (uint", s == "u2" ? 16 : 64,
                 ") is not supported by jx; convert it in NumPy first");
  if (!s.empty() && s[0] == 'V')
    detail::fail(op, what, ": void dtype descr '", descr,
                 "' is not supported (bfloat16 saved through ml_dtypes looks like this; save it as float32)");
  detail::fail(op, what, ": unknown or unsupported dtype descr '", descr, "'");
}

// ---- the header: a Python dict literal ----

// The values NumPy writes in a header: strings, booleans, integers and tuples/lists.
struct PyValue {
  enum class Kind { String, Bool, Int, Tuple, List, Other } kind = Kind::Other;
  std::string text;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view src, const std::string& what, std::string_view op)
      : s_(src), what_(what), op_(op) {}

  std::map<std::string, PyValue> parse_dict() {
    std::map<std::string, PyValue> out;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      PyValue key = parse_value(0);
      if (key.kind != PyValue::Kind::String) error("dict keys must be strings");
      expect(':');
      out[key.text] = parse_value(0);
      skip_space();
      if (peek() == ',') ++pos_;
      else if (peek() != '}') error("expected ',' or '}'");
    }
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the dict");
    return out;
  }

 private:
  [[noreturn]] void error(std::string_view problem) const {
    detail::fail(op_, what_, ": bad header dict (", problem, " at offset ", pos_, ") in \"", printable(), "\"");
  }
  std::string printable() const {
    std::string out;
    for (char c : s_.substr(0, 200)) out += (c >= 32 && c < 127) ? c : '?';
    return out;
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }

  PyValue parse_value(int depth) {
    if (depth > 16) error("nesting too deep");
    skip_space();
    PyValue v;
    char c = peek();
    if (c == '\'' || c == '"') {
      ++pos_;
      v.kind = PyValue::Kind::String;
      while (peek() != c) {
        if (pos_ >= s_.size()) error("unterminated string");
        v.text += s_[pos_++];
      }
      ++pos_;
    } else if (c == '(' || c == '[') {
      char close = c == '(' ? ')' : ']';
      v.kind = c == '(' ? PyValue::Kind::Tuple : PyValue::Kind::List;
      ++pos_;
      while (true) {
        skip_space();
        if (peek() == close) {
          ++pos_;
          break;
        }
        v.items.push_back(parse_value(depth + 1));
        skip_space();
        if (peek() == ',') ++pos_;
        else if (peek() != close) error(std::string("expected ',' or '") + close + "'");
      }
    } else if (c >= '0' && c <= '9') {
      v.kind = PyValue::Kind::Int;
      while (peek() >= '0' && peek() <= '9') {
        int digit = s_[pos_++] - '0';
        if (v.integer > (INT64_MAX - digit) / 10) error("integer too large");
        v.integer = v.integer * 10 + digit;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs in old files
    } else if (s_.substr(pos_, 4) == "True") {
      v.kind = PyValue::Kind::Bool;
      v.boolean = true;
      pos_ += 4;
    } else if (s_.substr(pos_, 5) == "False") {
      v.kind = PyValue::Kind::Bool;
      pos_ += 5;
    } else if (c == '-') {
      error("negative number");
    } else {
      error("unexpected character");
    }
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
  const std::string& what_;
  std::string_view op_;
};

uint32_t read_le(std::string_view bytes, size_t at, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

void byte_swap(char* data, int64_t count, int width) {
  for (int64_t i = 0; i < count; ++i) {
    char* p = data + i * width;
    for (int a = 0, b = width - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
  }
}

Array parse_npy(std::string_view bytes, const std::string& what, std::string_view op) {
  if (bytes.size() < kPreludeV1 || bytes.substr(0, kMagic.size()) != kMagic)
    detail::fail(op, what, ": not a .npy file (bad magic string; expected \\x93NUMPY)");
  int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    detail::fail(op, what, ": unsupported .npy format version ", major, ".", minor, " (jx reads 1.0, 2.0, 3.0)");
  size_t prelude = major == 1 ? kPreludeV1 : kPreludeV2;
  if (bytes.size() < prelude) detail::fail(op, what, ": truncated header (file is ", bytes.size(), " bytes)");
  size_t header_len = read_le(bytes, 8, major == 1 ? 2 : 4);
  if (header_len > bytes.size() - prelude)
    detail::fail(op, what, ": truncated header (header claims ", header_len, " bytes, file has ",
                 bytes.size() - prelude, " after the prelude)");
  std::string_view header = bytes.substr(prelude, header_len);
  auto dict = HeaderParser(header, what, op).parse_dict();

  auto field = [&](const char* key) -> const PyValue& {
    auto it = dict.find(key);
    if (it == dict.end()) detail::fail(op, what, ": bad header dict (missing key '", key, "')");
    return it->second;
  };
  const PyValue& descr_value = field("descr");
  const PyValue& fortran_value = field("fortran_order");
  const PyValue& shape_value = field("shape");
  if (dict.size() != 3)
    detail::fail(op, what, ": bad header dict (expected exactly the keys 'descr', 'fortran_order', 'shape')");
  if (descr_value.kind != PyValue::Kind::String)
    detail::fail(op, what, ": structured or non-string dtype descr is not supported");
  if (fortran_value.kind != PyValue::Kind::Bool)
    detail::fail(op, what, ": bad header dict ('fortran_order' must be True or False)");
  if (shape_value.kind != PyValue::Kind::Tuple)
    detail::fail(op, what, ": bad header dict ('shape' must be a tuple)");
  Shape shape;
  for (const PyValue& d : shape_value.items) {
    if (d.kind != PyValue::Kind::Int) detail::fail(op, what, ": bad header dict (shape entries must be integers)");
    shape.push_back(d.integer);
  }
  if (shape.size() > 64) detail::fail(op, what, ": shape has ", shape.size(), " dimensions (too many)");
  Descr descr = parse_descr(descr_value.text, what, op);

  // Size checks guard every multiplication: a corrupt header may claim anything.
  std::string_view payload = bytes.substr(prelude + header_len);
  uint64_t count = 1;
  bool overflow = false;
  for (int64_t d : shape) overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(d), &count);
  uint64_t nbytes = 0;
  overflow |= __builtin_mul_overflow(count, static_cast<uint64_t>(itemsize(descr.dtype)), &nbytes);
  if (overflow || nbytes > payload.size())
    detail::fail(op, what, ": truncated data (shape ", detail::shape_str(shape), " of ", descr_value.text,
                 " needs ", overflow ? std::string("too many") : std::to_string(nbytes), " bytes, file has ",
                 payload.size(), ")");
  if (nbytes < payload.size())
    detail::fail(op, what, ": shape/data size mismatch (shape ", detail::shape_str(shape), " of ", descr_value.text,
                 " needs ", nbytes, " bytes, file has ", payload.size(), ")");

  bool fortran = fortran_value.boolean && shape.size() > 1;
  Shape stored_shape = fortran ? Shape(shape.rbegin(), shape.rend()) : shape;
  Array stored = detail::alloc_array(Aval{stored_shape, descr.dtype, false});
  char* out = detail::mutable_data<char>(stored);
  if (nbytes) std::memcpy(out, payload.data(), nbytes);
  if (descr.swap) {
    int width = itemsize(descr.dtype);
    if (is_complex(descr.dtype)) byte_swap(out, static_cast<int64_t>(count) * 2, width / 2);
    else byte_swap(out, static_cast<int64_t>(count), width);
  }
  // A C++ bool must hold 0 or 1; a file may hold any byte.
  if (descr.dtype == DType::Bool)
    for (uint64_t i = 0; i < count; ++i) out[i] = out[i] != 0;
  if (!fortran) return stored;
  // Column-major data is the row-major data of the reversed shape: view it transposed.
  auto c_strides = detail::contiguous_strides(stored_shape);
  return detail::contiguous(
      detail::make_view(stored, Aval{shape, descr.dtype, false}, {c_strides.rbegin(), c_strides.rend()}, 0));
}

// `what` names the destination in messages ("out.npy", "array 'w' of out.npz").
std::string npy_bytes(const Array& a, std::string_view op, const std::string& what) {
  if (!a.valid()) detail::fail(op, what, ": cannot save a null jx::Array");
  detail::concrete_impl(a, op);
  if (a.dtype() == DType::BFloat16)
    detail::fail(op, what, ": bfloat16 has no NumPy dtype, so it cannot be written as .npy; convert it first "
                           "(a.astype(jx::float32))");
  std::string header = "{'descr': '";
  header += itemsize(a.dtype()) == 1 ? '|' : std::endian::native == std::endian::little ? '<' : '>';
  header += descr_body(a.dtype());
  header += "', 'fortran_order': False, 'shape': " + detail::shape_str(a.shape()) + ", }";
  // NumPy pads with spaces so the data starts on a 64-byte boundary, ending in '\n'.
  size_t prelude = kPreludeV1;
  size_t total = prelude + header.size() + 1;
  if ((total + kHeaderAlign - 1) / kHeaderAlign * kHeaderAlign - prelude > 0xffff) prelude = kPreludeV2;
  total = prelude + header.size() + 1;
  header.append((kHeaderAlign - total % kHeaderAlign) % kHeaderAlign, ' ');
  header += '\n';

  std::string out(kMagic);
  out += static_cast<char>(prelude == kPreludeV1 ? 1 : 2);
  out += '\0';
  size_t len = header.size();
  for (size_t i = 0; i < prelude - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  Array c = detail::contiguous(a);
  size_t nbytes = static_cast<size_t>(c.nbytes());
  size_t start = out.size();
  out.resize(start + nbytes);
  if (nbytes) std::memcpy(out.data() + start, detail::raw_data(c), nbytes);
  return out;
}

std::string read_file(const std::string& path, std::string_view op) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) detail::fail(op, path, ": is a directory, not a file");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) detail::fail(op, path, ": cannot open file for reading (missing or unreadable)");
  std::streamoff size = f.tellg();
  if (size < 0) detail::fail(op, path, ": cannot determine the file size (not a regular file?)");
  std::string bytes(static_cast<size_t>(size), '\0');
  f.seekg(0);
  f.read(bytes.data(), size);
  if (f.gcount() != size) detail::fail(op, path, ": read error");
  return bytes;
}

void write_file(const std::string& path, const std::string& bytes, std::string_view op) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) detail::fail(op, path, ": cannot open file for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) detail::fail(op, path, ": write error");
}

void write_npz(const std::string& path, const std::map<std::string, Array>& arrays, bool compress,
               std::string_view op) {
  std::vector<detail::ZipMember> members;
  for (const auto& [name, array] : arrays) {
    if (name.empty()) detail::fail(op, path, ": array names must not be empty");
    members.push_back({name + ".npy", npy_bytes(array, op, "array '" + name + "' of " + path)});
  }
  write_file(path, detail::zip_write(members, compress), op);
}

}  // namespace

std::string to_npy_bytes(const Array& a) { return npy_bytes(a, "to_npy_bytes", "<bytes>"); }

Array from_npy_bytes(const std::string& bytes, const std::string& what) {
  return parse_npy(bytes, what, "from_npy_bytes");
}

void save(const std::string& path, const Array& a) {
  write_file(path, npy_bytes(a, "save", path), "save");
}

Array load(const std::string& path) { return parse_npy(read_file(path, "load"), path, "load"); }

void savez(const std::string& path, const std::map<std::string, Array>& arrays) {
  write_npz(path, arrays, false, "savez");
}

void savez_compressed(const std::string& path, const std::map<std::string, Array>& arrays) {
  write_npz(path, arrays, true, "savez_compressed");
}

std::map<std::string, Array> load_npz(const std::string& path) {
  std::string archive = read_file(path, "load_npz");
  std::map<std::string, Array> out;
  for (auto& member : detail::zip_read(archive, path, "load_npz")) {
    std::string key = member.name;
    if (key.size() > 4 && key.ends_with(".npy")) key.resize(key.size() - 4);
    if (out.count(key)) detail::fail("load_npz", path, ": duplicate member '", member.name, "'");
    out.emplace(key, parse_npy(member.data, path + "[" + member.name + "]", "load_npz"));
  }
  return out;
}

}  // namespace jx
