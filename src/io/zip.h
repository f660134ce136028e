// The small subset of the zip format .npz needs: write stored or deflated members,
// read any archive NumPy writes (stored or deflated, zip64 extra fields included).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jx::detail {

struct ZipMember {
  std::string name;
  std::string data;  // uncompressed bytes
};

// Builds an archive in memory. `compress` deflates every member with zlib.
std::string zip_write(const std::vector<ZipMember>& members, bool compress);

// Parses an archive from memory, checking sizes and CRCs. `what` names the archive
// in error messages raised as "[op] <what>: <problem>".
std::vector<ZipMember> zip_read(std::string_view archive, const std::string& what, std::string_view op);

}  // namespace jx::detail
