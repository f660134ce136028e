#include "lax/control_flow/buffer_loop.h"

#include <atomic>
#include <new>

#include "core/array_internal.h"

namespace jx::detail {
namespace {
std::atomic<int64_t> g_loops_on_buffers{0};
}  // namespace

int64_t loops_run_on_buffers() { return g_loops_on_buffers.load(); }

CarryBuffers::CarryBuffers(std::span<const Array> init) {
  ++g_loops_on_buffers;
  for (const Array& x : init) {
    current_.push_back(contiguous(x));
    current_ptrs_.push_back(raw_data(current_.back()));
  }
  // The first step writes a fresh set; the set it read (the initial values, which the
  // caller may still hold) is never written, so the second set is made at the second step.
  for (const Array& x : current_) {
    spare_.push_back(alloc_array(x.aval()));
    next_ptrs_.push_back(mutable_data<void>(spare_.back()));
  }
}

void CarryBuffers::mirror_current(const void** slots) {
  current_mirrors_.push_back(slots);
  update_mirrors();
}
void CarryBuffers::mirror_next(void** slots) {
  next_mirrors_.push_back(slots);
  update_mirrors();
}
void CarryBuffers::update_mirrors() {
  const size_t n = current_ptrs_.size();
  for (const void** m : current_mirrors_)
    for (size_t k = 0; k < n; ++k) m[k] = current_ptrs_[k];
  for (void** m : next_mirrors_)
    for (size_t k = 0; k < n; ++k) m[k] = next_ptrs_[k];
}

void CarryBuffers::advance() {
  std::swap(current_, spare_);
  for (size_t k = 0; k < current_.size(); ++k) {
    const void* read = current_ptrs_[k];
    current_ptrs_[k] = next_ptrs_[k];
    next_ptrs_[k] = const_cast<void*>(read);
  }
  if (both_sets_ours_) {
    update_mirrors();
    return;
  }
  // After the first step the set just read is the initial values: the caller's (or a
  // contiguous copy of a view, ours). The caller's are never written: a second fresh
  // set replaces them, once, and from then on the two sets alternate.
  for (size_t k = 0; k < current_.size(); ++k) {
    if (spare_[k].impl_ptr().use_count() != 1 || spare_[k].impl().storage.use_count() != 1) {
      spare_[k] = alloc_array(current_[k].aval());
      next_ptrs_[k] = mutable_data<void>(spare_[k]);
    }
  }
  both_sets_ours_ = true;
  update_mirrors();
}

LoopWorkspace::LoopWorkspace(size_t bytes)
    : data_(bytes ? ::operator new(bytes, std::align_val_t{64}) : nullptr) {}

void LoopWorkspace::Free::operator()(void* p) const { ::operator delete(p, std::align_val_t{64}); }

}  // namespace jx::detail
