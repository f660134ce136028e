#include "jit/codegen/object_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/SHA256.h>
#include <llvm/Support/xxhash.h>

namespace jx::compiler::codegen {
namespace {

// An entry: magic, key length, payload length, checksum of key and payload (all
// little-endian u64), the key, the payload. The key inside is compared with the key asked
// for: a file copied or renamed onto another key's name holds another plan's code.
constexpr char kMagic[8] = {'J', 'X', 'K', 'O', 'B', 'J', '0', '2'};
constexpr size_t kHeader = 32;

std::atomic<int64_t> g_hits{0}, g_misses{0}, g_rejected{0}, g_stores{0};

uint64_t checksum(std::string_view key_and_payload) {
  return llvm::xxh3_64bits(llvm::StringRef(key_and_payload.data(), key_and_payload.size()));
}

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

ObjectCacheStats object_cache_stats() {
  return ObjectCacheStats{g_hits.load(), g_misses.load(), g_rejected.load(), g_stores.load()};
}

void reset_object_cache_stats() {
  g_hits = 0;
  g_misses = 0;
  g_rejected = 0;
  g_stores = 0;
}

std::string object_cache_key(std::string_view text) {
  auto digest = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  std::string hex;
  char buf[3];
  for (uint8_t b : digest) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

std::string object_cache_path(std::string_view dir, std::string_view key) {
  return std::string(dir) + "/kernel-" + std::string(key) + ".jxo";
}

std::optional<std::string> object_cache_load(std::string_view dir, std::string_view key) {
  if (dir.empty()) return std::nullopt;
  std::ifstream in(object_cache_path(dir, key), std::ios::binary);
  if (!in) {
    ++g_misses;
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string data = ss.str();
  // Lengths are compared without adding them (a corrupt header may hold any value).
  const bool well_formed = data.size() >= kHeader && std::memcmp(data.data(), kMagic, sizeof kMagic) == 0 &&
                           get_u64(data.data() + 8) == key.size() && data.size() - kHeader >= key.size() &&
                           get_u64(data.data() + 16) == data.size() - kHeader - key.size();
  const std::string_view body = well_formed ? std::string_view(data).substr(kHeader) : std::string_view();
  if (!well_formed || body.substr(0, key.size()) != key || get_u64(data.data() + 24) != checksum(body)) {
    ++g_rejected;
    return std::nullopt;
  }
  ++g_hits;
  return std::string(body.substr(key.size()));
}

void object_cache_count_unlinkable() {
  --g_hits;
  ++g_rejected;
}

void object_cache_store(std::string_view dir, std::string_view key, std::string_view object) {
  if (dir.empty()) return;
  if (llvm::sys::fs::create_directories(llvm::StringRef(dir.data(), dir.size()))) return;
  std::string body(key);
  body.append(object);
  std::string data(kMagic, sizeof kMagic);
  put_u64(data, key.size());
  put_u64(data, object.size());
  put_u64(data, checksum(body));
  data.append(body);
  // A unique temporary name, so concurrent writers (threads or processes) never share one.
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  const std::string path = object_cache_path(dir, key);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++) + "." +
                          std::to_string(rd());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return;
  }
  ++g_stores;
}

}  // namespace jx::compiler::codegen
