// Dump directories: <dir>/<name>.<n>/, n the first number this process has not used whose
// directory does not exist yet. mkdir either creates a directory or fails because it
// exists, atomically, so two processes (or threads) writing into one dump_dir never share
// a directory: each takes the next free n.
#include "jit/dump.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "jx/error.h"

namespace jx::compiler {
namespace {

std::atomic<int64_t> next_dump_number{0};

// Program names come from users (JitOptions::name): keep them to one path component.
std::string file_safe(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.';
    out += ok ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "program";
  return out;
}

}  // namespace

Dump::Dump(std::string_view program_name, std::string dir) {
  if (dir.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) detail::fail("jit", "cannot create dump directory ", dir, ": ", ec.message());
  const std::string base = file_safe(program_name);
  for (int attempt = 0; attempt < 100000; ++attempt) {
    fs::path candidate = fs::path(dir) / (base + "." + std::to_string(next_dump_number++));
    if (fs::create_directory(candidate, ec)) {
      dir_ = candidate.string();
      return;
    }
    if (ec) detail::fail("jit", "cannot create dump directory ", candidate.string(), ": ", ec.message());
  }
  detail::fail("jit", "cannot create dump directory in ", dir, ": every ", base, ".<n> name is taken");
}

void Dump::write(std::string_view file, std::string_view text) const {
  if (!enabled()) return;
  const std::string path = (std::filesystem::path(dir_) / file).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) detail::fail("jit", "cannot write dump file ", path, ": ", std::strerror(errno));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out) detail::fail("jit", "cannot write dump file ", path, ": ", std::strerror(errno));
}

}  // namespace jx::compiler
