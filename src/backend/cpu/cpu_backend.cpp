#include "backend/cpu/cpu_backend.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>

#include "backend/cpu/kernels/kernels.h"
#include "core/array_internal.h"
#include "core/config_internal.h"
#include "distributed/mpi.h"
#include "core/hot_tls.h"

namespace jx::detail {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

constexpr size_t kCachedMin = kStaggeredBytes;  // smaller blocks: malloc's own free lists

// Recently freed large blocks, kept for the next allocation of the same rounded size.
// A fresh 100 MB block costs the kernel zeroing every page on first touch (measured:
// 65-70% of a jitted sin(x) + cos(y) on 5000x5000 float32), and blocks from 256 KB up
// are malloc's mmap/munmap each time, whose page faults serialize the devices' threads
// on the process's memory map (a 2-device data-parallel step scaled 1.35x instead of
// 1.9x). A loop that makes arrays of the same shapes each step reuses warm pages instead.
// Bounded by config's block_cache_mb (JX_BLOCK_CACHE_MB, default 1024; 0 disables): when
// full, the least recently freed blocks go first, since a program's working set is what
// it freed last. One cache for all CPU devices, which share the host's memory. Off under
// AddressSanitizer, where reuse would hide use-after-free.
class LargeBlockCache {
 public:
  void* take(size_t rounded) {
    std::lock_guard lock(mu_);
    auto it = free_.find(rounded);
    if (it == free_.end() || it->second.empty()) return nullptr;
    auto entry = it->second.back();  // the most recently freed of this size
    it->second.pop_back();
    void* p = entry->block;
    lru_.erase(entry);
    held_ -= rounded;
    return p;
  }
  // Keeps p, making room by freeing the least recently freed blocks; false when the
  // block alone is beyond the bound (the caller frees it).
  bool give(void* p, size_t rounded) {
    std::lock_guard lock(mu_);
    if (rounded > limit_) return false;
    shrink_to(limit_ - rounded);
    lru_.push_back({rounded, p});
    free_[rounded].push_back(std::prev(lru_.end()));
    held_ += rounded;
    return true;
  }
  // A new bound; blocks beyond it are freed now.
  void set_limit(size_t bytes) {
    std::lock_guard lock(mu_);
#if !defined(__SANITIZE_ADDRESS__)
    limit_ = bytes;
#endif
    shrink_to(limit_);
  }
  static LargeBlockCache& get() {
    static auto* cache = new LargeBlockCache;  // never destroyed: arrays may die after main
    return *cache;
  }

 private:
  struct Entry {
    size_t rounded;
    void* block;
  };
  LargeBlockCache() {
#if !defined(__SANITIZE_ADDRESS__)
    limit_ = static_cast<size_t>(stored_config().block_cache_mb) << 20;
#endif
  }
  void shrink_to(size_t bytes) {  // with mu_ held
    while (held_ > bytes) {
      const Entry oldest = lru_.front();
      auto& same = free_[oldest.rounded];
      same.erase(same.begin());  // the oldest of its size is the first
      lru_.pop_front();
      held_ -= oldest.rounded;
      std::free(oldest.block);
    }
  }
  std::mutex mu_;
  std::list<Entry> lru_;  // least recently freed first
  std::unordered_map<size_t, std::vector<std::list<Entry>::iterator>> free_;
  size_t held_ = 0, limit_ = 0;
};

// Small blocks (up to 4 KiB: scalars, short vectors, what a loop of small eager ops
// makes) recycled per thread. aligned_alloc and free cost about a third of a 1-element
// eager add (2000 of its 6000 instructions, measured with callgrind); a free-list pop
// costs a few. Bounded: 32 blocks of each 64-byte size class, at most 4 MiB per thread,
// returned to malloc when the thread exits. Off under AddressSanitizer, where reuse
// would hide use-after-free.
class SmallBlockCache {
 public:
  static constexpr size_t kMaxBytes = 4096, kPerSize = 32;
  void* take(size_t rounded) {
    List& l = lists_[rounded / 64 - 1];
    return l.count ? l.blocks[--l.count] : nullptr;
  }
  bool give(void* p, size_t rounded) {
    List& l = lists_[rounded / 64 - 1];
    if (l.count == kPerSize) return false;
    l.blocks[l.count++] = p;
    return true;
  }
  ~SmallBlockCache() {
    for (List& l : lists_)
      while (l.count) std::free(l.blocks[--l.count]);
    t_gone = true;
    t_cache = nullptr;
  }
  // This thread's cache; null while the thread is exiting (once it was destroyed). The
  // cache (17 KiB) is too big for static TLS, and a thread-local of a shared library
  // costs a __tls_get_addr call per access: after the first, one initial-exec pointer is
  // read (the calls were 2% of a 1-element eager add's instructions).
  static SmallBlockCache* get() {
#if defined(__SANITIZE_ADDRESS__)
    return nullptr;
#else
    if (SmallBlockCache* cache = t_cache) return cache;
    if (t_gone) return nullptr;
    thread_local std::unique_ptr<SmallBlockCache> owned = std::make_unique<SmallBlockCache>();
    return t_cache = owned.get();
#endif
  }

 private:
  struct List {
    void* blocks[kPerSize];
    size_t count = 0;
  };
  List lists_[kMaxBytes / 64];
  JX_INITIAL_EXEC_TLS static inline thread_local bool t_gone = false;
  JX_INITIAL_EXEC_TLS static inline thread_local SmallBlockCache* t_cache = nullptr;
};

// Large arrays start at staggered offsets into their page-aligned blocks. A loop that
// loads one array and stores another whose addresses agree in their low 12 bits stalls
// its loads behind the stores ("4K aliasing": array_internal.h, ReadBuffersScope), and
// page-aligned arrays all agree: a softmax over 160000 x 10 floats took 1.9 ms with its
// output at its input's page offset, 0.65 with it 256 bytes or more past. Successive
// large blocks take successive slots of 16 (kAliasingReach apart, 64-byte aligned) in
// the order 0, 7, 14, 5, ..., passing over the slots within reach of the buffers the
// kernel about to write reads (a jitted gradient whose output met its input's offset
// once in 16 calls ran those at 3x).
constexpr size_t kStaggerStep = kAliasingReach, kStaggerSlots = 4096 / kStaggerStep, kStaggerStride = 7;
std::atomic<size_t> g_stagger_counter{0};
size_t next_stagger() {
  for (size_t tries = 0;; ++tries) {
    const size_t offset =
        g_stagger_counter.fetch_add(1, std::memory_order_relaxed) * kStaggerStride % kStaggerSlots * kStaggerStep;
    // (A block is page aligned: the offset is the array's page offset.)
    if (tries == kStaggerSlots || !aliases_read_buffers(reinterpret_cast<const void*>(uintptr_t{offset}))) return offset;
  }
}

// Blocks from 4 MiB are 2 MiB aligned and sized (for transparent huge pages), cached
// ones below that 64 KiB sized, so nearby sizes share cache entries.
size_t rounded_size(size_t n) {
  const size_t align = n >= 2 * kHugePage ? kHugePage : n >= kCachedMin ? size_t{64} << 10 : 64;
  const size_t rounded = (n + align - 1) / align * align;
  return rounded == 0 ? align : rounded;
}

// Host memory: 64-byte aligned; from 256 KiB up at a staggered offset (next_stagger)
// into a block 4 KiB aligned; buffers of 4 MiB and more are marked for transparent huge
// pages (a fresh 100 MB array otherwise costs ~25k page faults on first touch, as much as
// the kernel writing it); blocks from 256 KiB are recycled through the block cache.
class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t n) override {
    if (n < kCachedMin) return allocate_block(n);
    return static_cast<char*>(allocate_block(n + 4096)) + next_stagger();
  }
  void deallocate(void* p, size_t n) override {
    if (n < kCachedMin) return deallocate_block(p, n);
    // The block is 4 KiB aligned and the stagger below 4 KiB.
    deallocate_block(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095}), n + 4096);
  }

 private:
  void* allocate_block(size_t n) {
    const bool huge = n >= 2 * kHugePage, cached = n >= kCachedMin;
    const size_t rounded = rounded_size(n);
    if (rounded <= SmallBlockCache::kMaxBytes)
      if (SmallBlockCache* small = SmallBlockCache::get())
        if (void* p = small->take(rounded)) return p;
    if (cached)
      if (void* p = LargeBlockCache::get().take(rounded)) return p;
    void* p = std::aligned_alloc(huge ? kHugePage : cached ? 4096 : 64, rounded);
    if (!p) throw std::bad_alloc();
    if (huge) madvise(p, rounded, MADV_HUGEPAGE);
    return p;
  }
  void deallocate_block(void* p, size_t n) {
    const size_t rounded = rounded_size(n);
    if (rounded <= SmallBlockCache::kMaxBytes)
      if (SmallBlockCache* small = SmallBlockCache::get(); small && small->give(p, rounded)) return;
    if (n >= kCachedMin && LargeBlockCache::get().give(p, rounded)) return;
    std::free(p);
  }
};

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    // Every process of a distributed run has n devices; ids are global, process p's
    // being p * n ... p * n + n - 1 (the others' are listed, never used here).
    const int n = fix_num_cpu_devices();
    const int processes = mpi::process_group().count;
    states_.reserve(static_cast<size_t>(n) * static_cast<size_t>(processes));
    for (int i = 0; i < n * processes; ++i)
      states_.push_back(DeviceState{.platform = platform_, .id = i, .process_index = i / n, .kind = "cpu",
                                    .backend = this, .allocator = &allocator_});
    for (const DeviceState& s : states_) devices_.emplace_back(&s);
  }
  const std::string& platform() const override { return platform_; }
  std::vector<Device> devices() override { return devices_; }
  bool host_memory() const override { return true; }
  void synchronize(const Device&) override {}  // CPU dispatch is synchronous: nothing is queued

 protected:
  void load_kernels(KernelTable& table) override {
    cpu::add_unary_kernels(table);
    cpu::add_binary_kernels(table);
    cpu::add_elementwise_misc_kernels(table);
    cpu::add_shape_kernels(table);
    cpu::add_slicing_kernels(table);
    cpu::add_gather_scatter_kernels(table);
    cpu::add_reduction_kernels(table);
    cpu::add_cumulative_kernels(table);
    cpu::add_sort_kernels(table);
    cpu::add_dot_kernels(table);
    cpu::add_conv_kernels(table);
    cpu::add_linalg_kernels(table);
    cpu::add_prng_kernels(table);
    cpu::add_collective_kernels(table);
  }

 private:
  const std::string platform_ = "cpu";
  CpuAllocator allocator_;  // one for all devices: they share the host's memory
  std::vector<DeviceState> states_;
  std::vector<Device> devices_;
};

}  // namespace

void set_block_cache_limit(int64_t bytes) { LargeBlockCache::get().set_limit(static_cast<size_t>(bytes)); }

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace jx::detail
