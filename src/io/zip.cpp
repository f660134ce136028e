// Zip archives for .npz. Reading trusts the central directory (as Python's zipfile
// does), so data descriptors and zip64 local headers from NumPy's writer need no
// special path; every offset and size is bounds-checked because the file may be corrupt.
#include "io/zip.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "jx/error.h"

namespace jx::detail {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalHeaderSize = 30;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kEndSize = 22;
constexpr uint16_t kStored = 0, kDeflated = 8;
// 1980-01-01 00:00: a fixed timestamp keeps archives byte-for-byte reproducible.
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1, kDosTime = 0;

void put(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t crc_of(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  size_t left = data.size();
  while (left > 0) {  // zlib takes uInt lengths
    uInt n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

std::string deflate_raw(std::string_view data) {
  z_stream zs{};
  // Negative window bits: a raw deflate stream, as zip members hold.
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw Error("[savez_compressed] zlib deflateInit2 failed");
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&zs, Z_FINISH);
  size_t produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw Error("[savez_compressed] zlib deflate failed");
  out.resize(produced);
  return out;
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& what, std::string_view op) : b_(bytes), what_(what), op_(op) {}

  [[noreturn]] void corrupt(std::string_view problem) const { fail(op_, what_, ": corrupt zip archive (", problem, ")"); }

  uint64_t u(uint64_t at, int n) const {
    if (at > b_.size() || static_cast<uint64_t>(n) > b_.size() - at) corrupt("field out of bounds");
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b_[at + i]);
    return v;
  }
  std::string_view span(uint64_t at, uint64_t n, std::string_view what) const {
    if (at > b_.size() || n > b_.size() - at) corrupt(cat(what, " runs past the end of the file"));
    return b_.substr(at, n);
  }
  size_t size() const { return b_.size(); }

 private:
  std::string_view b_;
  const std::string& what_;
  std::string_view op_;
};

std::string inflate_raw(std::string_view data, uint64_t expected, const Reader& r, const std::string& name) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) r.corrupt("zlib inflateInit2 failed");
  // Grow as output arrives rather than trusting the declared size for the allocation.
  std::string out;
  out.resize(std::min<uint64_t>(expected, 1u << 20) + 1);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(std::min<size_t>(data.size(), std::numeric_limits<uInt>::max()));
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.total_out == out.size()) {
      if (out.size() > expected) break;  // more than declared: stop, reported below
      out.resize(std::min<uint64_t>(expected + 1, out.size() * 2));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + zs.total_out);
    zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - zs.total_out, std::numeric_limits<uInt>::max()));
    rc = inflate(&zs, Z_NO_FLUSH);
  }
  size_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END && rc != Z_OK) r.corrupt(cat("deflate data of '", name, "' is invalid"));
  if (rc != Z_STREAM_END || produced != expected)
    r.corrupt(cat("member '", name, "' inflates to a different size than the declared ", expected, " bytes"));
  out.resize(produced);
  return out;
}

// Reads the zip64 extended-information extra field, replacing the 0xffffffff markers.
void apply_zip64_extra(std::string_view extra, uint64_t& usize, uint64_t& csize, uint64_t& offset, const Reader& r) {
  size_t at = 0;
  while (at + 4 <= extra.size()) {
    auto le = [&](size_t i, int n) {
      uint64_t v = 0;
      for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<uint8_t>(extra[i + k]);
      return v;
    };
    uint64_t id = le(at, 2), len = le(at + 2, 2);
    if (at + 4 + len > extra.size()) r.corrupt("extra field runs past its header");
    if (id == 1) {
      size_t p = at + 4, end = at + 4 + len;
      for (uint64_t* field : {&usize, &csize, &offset}) {
        if (*field != 0xffffffffu) continue;
        if (p + 8 > end) r.corrupt("zip64 extra field too short");
        *field = le(p, 8);
        p += 8;
      }
    }
    at += 4 + len;
  }
}

}  // namespace

std::string zip_write(const std::vector<ZipMember>& members, bool compress) {
  std::string out, central;
  const char* op = compress ? "savez_compressed" : "savez";
  for (const ZipMember& m : members) {
    uint32_t crc = crc_of(m.data);
    std::string packed = compress ? deflate_raw(m.data) : std::string();
    std::string_view body = compress ? std::string_view(packed) : std::string_view(m.data);
    uint64_t offset = out.size();
    if (m.data.size() >= 0xffffffffu || body.size() >= 0xffffffffu || offset >= 0xffffffffu ||
        m.name.size() > 0xffff)
      fail(op, "archive member '", m.name, "' needs zip64, which jx does not write (keep .npz files under 4 GiB)");
    uint16_t method = compress ? kDeflated : kStored;
    auto common = [&](std::string& s) {  // the fields local and central headers share
      put(s, 20, 2);                     // version needed: 2.0
      put(s, 0, 2);                      // flags
      put(s, method, 2);
      put(s, kDosTime, 2);
      put(s, kDosDate, 2);
      put(s, crc, 4);
      put(s, body.size(), 4);
      put(s, m.data.size(), 4);
      put(s, m.name.size(), 2);
      put(s, 0, 2);  // extra length
    };
    put(out, kLocalSig, 4);
    common(out);
    out += m.name;
    out += body;

    put(central, kCentralSig, 4);
    put(central, (3 << 8) | 20, 2);  // made by: Unix, 2.0
    common(central);
    put(central, 0, 2);               // comment length
    put(central, 0, 2);               // disk
    put(central, 0, 2);               // internal attributes
    put(central, 0600u << 16, 4);     // external: rw------- as Python's zipfile writes
    put(central, offset, 4);
    central += m.name;
  }
  if (members.size() > 0xffff || out.size() + central.size() >= 0xffffffffu)
    fail(op, "archive needs zip64, which jx does not write (keep .npz files under 4 GiB and 65535 arrays)");
  uint64_t central_offset = out.size();
  out += central;
  put(out, kEndSig, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, members.size(), 2);
  put(out, members.size(), 2);
  put(out, central.size(), 4);
  put(out, central_offset, 4);
  put(out, 0, 2);
  return out;
}

std::vector<ZipMember> zip_read(std::string_view archive, const std::string& what, std::string_view op) {
  Reader r(archive, what, op);
  if (archive.size() < kEndSize) r.corrupt("file too small to be a zip archive");
  // The end record sits at the end, before a comment of up to 64 KiB.
  uint64_t end = std::numeric_limits<uint64_t>::max();
  uint64_t lowest = archive.size() > kEndSize + 0xffff ? archive.size() - kEndSize - 0xffff : 0;
  for (uint64_t at = archive.size() - kEndSize + 1; at-- > lowest;) {
    if (r.u(at, 4) == kEndSig) {
      end = at;
      break;
    }
  }
  if (end == std::numeric_limits<uint64_t>::max()) r.corrupt("no end-of-central-directory record; not a zip file");
  uint64_t count = r.u(end + 10, 2);
  uint64_t central_size = r.u(end + 12, 4);
  uint64_t central_offset = r.u(end + 16, 4);
  if ((count == 0xffff || central_size == 0xffffffffu || central_offset == 0xffffffffu) && end >= 20 &&
      r.u(end - 20, 4) == kZip64LocatorSig) {
    uint64_t z64 = r.u(end - 20 + 8, 8);
    if (r.u(z64, 4) != kZip64EndSig) r.corrupt("bad zip64 end-of-central-directory record");
    count = r.u(z64 + 32, 8);
    central_size = r.u(z64 + 40, 8);
    central_offset = r.u(z64 + 48, 8);
  }
  r.span(central_offset, central_size, "central directory");

  std::vector<ZipMember> members;
  uint64_t at = central_offset;
  for (uint64_t i = 0; i < count; ++i) {
    if (r.u(at, 4) != kCentralSig) r.corrupt("bad central directory entry signature");
    uint64_t flags = r.u(at + 8, 2), method = r.u(at + 10, 2), crc = r.u(at + 16, 4);
    uint64_t csize = r.u(at + 20, 4), usize = r.u(at + 24, 4);
    uint64_t name_len = r.u(at + 28, 2), extra_len = r.u(at + 30, 2), comment_len = r.u(at + 32, 2);
    uint64_t offset = r.u(at + 42, 4);
    std::string name(r.span(at + kCentralHeaderSize, name_len, "member name"));
    apply_zip64_extra(r.span(at + kCentralHeaderSize + name_len, extra_len, "extra field"), usize, csize, offset, r);
    at += kCentralHeaderSize + name_len + extra_len + comment_len;
    if (flags & 1) fail(op, what, ": member '", name, "' is encrypted, which is not supported");

    if (r.u(offset, 4) != kLocalSig) r.corrupt(cat("bad local header signature for '", name, "'"));
    uint64_t data_at = offset + kLocalHeaderSize + r.u(offset + 26, 2) + r.u(offset + 28, 2);
    std::string_view body = r.span(data_at, csize, cat("data of '", name, "'"));
    ZipMember m{name, {}};
    if (method == kStored) {
      if (csize != usize) r.corrupt(cat("stored member '", name, "' has different compressed and plain sizes"));
      m.data = std::string(body);
    } else if (method == kDeflated) {
      m.data = inflate_raw(body, usize, r, name);
    } else {
      fail(op, what, ": member '", name, "' uses compression method ", method, " (only stored and deflate are supported)");
    }
    if (crc_of(m.data) != crc) r.corrupt(cat("CRC mismatch in member '", name, "'"));
    members.push_back(std::move(m));
  }
  return members;
}

}  // namespace jx::detail
