// The on-disk cache of compiled kernels: object code keyed by a hash of everything it
// depends on (the kernel plan's canonical text, the host target, jx's version and the
// codegen version), so a fresh process skips LLVM's optimizer and code generator.
//
// Directory: KernelOptions::cache_dir, filled from config's cache_dir (JX_CACHE_DIR, else
// $XDG_CACHE_HOME/jx, else $HOME/.cache/jx); config's disk_cache (JX_DISABLE_DISK_CACHE=1)
// or KernelOptions::disk_cache = false turns it off. Files are
// written atomically (temporary file + rename) and carry their key, lengths and a
// checksum; a file that fails them (truncated, corrupted, or another key's entry copied
// onto this name) is ignored (and overwritten by the next store), never trusted. Kernels
// also name their symbols after their key (loop_emitter.h), so even an entry that passed
// the checks but holds other code fails to link and is recompiled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jx::compiler::codegen {

// Bump whenever generated code changes for the same plan, so stale entries are not used.
inline constexpr int kCodegenVersion = 33;  // 2: jx_vm_* transcendentals, float32 sums in double; 3: inline exp/tanh/erf; 4: no interleaving around calls; 5: symbols named after the key; 6: emitters in the primitives' lowering (ScalarBuilder); 7: rows kernels, odd-rational tanh/erf; 8: inline sin/cos/tan/log/log1p/expm1 with rare paths; 9: no SLP vectorizer; 10: elementwise loops through a short pipeline; 11: long chains interleave two vectors; 12: exp scales once, a rare path for the rest; 13: inline float64 tanh (AVX2); 14: streaming stores for large rows outputs; 15: max/min reductions keep more accumulators; 16: streaming stores for plain elementwise kernels; 17: long bodies call their inline math outlined; 18: rows kernels prefetch and pipeline, float32 sums of transcendentals in chunk partials; 19: vectorized rare-path tests shared, float max/min loops by maxps with an exact rerun, exp scale in one shift; 20: column reductions' vector width and interleave fit a block's columns; 21: row reductions' and rows kernels' too; 22: short rows held as loops and masked, elementwise vectors across short rows; 23: later passes of rows kernels hoist their row values; 24: rows of 8-11 floats reduce across rows; 25: integer sums beside a checked float extremum; 26: across-rows passes in one loop, rows outputs in one masked register; 27: rows kernels total their rows, IEEE max/min; 28: no masked stores without AVX-512, rows outputs across rows there; 29: across rows on AVX2, a block staged through column buffers; 30: large bodies on vectors of four registers, their machine code unoptimized; 31: rare tests shared across calls whose results are summed between them; 32: elementwise bodies chaining four transcendentals call them outlined; 33: no streamed stores over rows not of whole registers, short rows across rows over large inputs

struct ObjectCacheStats {
  int64_t hits = 0;      // valid entries loaded
  int64_t misses = 0;    // no entry
  int64_t rejected = 0;  // entries present but corrupt or truncated
  int64_t stores = 0;    // entries written
};
// Counters since the process started (or the last reset), for tests and dumps.
ObjectCacheStats object_cache_stats();
void reset_object_cache_stats();

// A key (hex SHA-256) for the text naming everything an object depends on.
std::string object_cache_key(std::string_view text);
// Where the entry of `key` lives in the cache directory `dir`.
std::string object_cache_path(std::string_view dir, std::string_view key);

// The object stored under `key` in `dir`, if a valid entry for that very key exists.
std::optional<std::string> object_cache_load(std::string_view dir, std::string_view key);
// Stores an object under `key` in `dir` (created if missing); a failure (read-only disk,
// ...) leaves the cache without the entry, which only costs a later compile.
void object_cache_store(std::string_view dir, std::string_view key, std::string_view object);
// Recounts the last hit as rejected: its payload passed the checks but did not link.
void object_cache_count_unlinkable();

}  // namespace jx::compiler::codegen
