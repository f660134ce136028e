// What the loop impls (while, scan) share when they run compiled bodies on buffers
// (core/subprogram.h, BufferProgram): the carries, in two sets of buffers that the body
// writes alternately (a body's outputs never alias its inputs, so one set is read while
// the other is written), and the scratch workspace of the programs the loop calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "jx/array.h"

namespace jx::detail {

class CarryBuffers {
 public:
  // Starts at `init` (read in place: contiguous copies of any views are taken once).
  explicit CarryBuffers(std::span<const Array> init);
  size_t size() const { return current_.size(); }
  // Where the next carry goes, for the body to write.
  void* const* next() const { return next_ptrs_.data(); }
  // Pointer arrays that mirror where the current carry is (a program's carry inputs:
  // slots[0..size())) or next() (its carry outputs), kept up to date by advance(), so a loop step copies no
  // pointers itself.
  void mirror_current(const void** slots);
  void mirror_next(void** slots);
  // After the body wrote next(): it becomes the current carry.
  void advance();
  // The current carry as arrays.
  std::vector<Array> take() { return std::move(current_); }

 private:
  std::vector<Array> current_, spare_;
  std::vector<const void*> current_ptrs_;
  std::vector<void*> next_ptrs_;
  std::vector<const void**> current_mirrors_;
  std::vector<void**> next_mirrors_;
  bool both_sets_ours_ = false;
  void update_mirrors();
};

// Loops (while or scan) this process ran on buffers, for tests.
int64_t loops_run_on_buffers();

// 64-byte aligned scratch of the largest size any of the given programs asks for.
class LoopWorkspace {
 public:
  explicit LoopWorkspace(size_t bytes);
  void* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
};

}  // namespace jx::detail
