// What the runtime reads of jx::Config (include/jx/config.h) without going through a
// snapshot: the settings that become fixed once in use, and the stored request.
#pragma once

#include <cstdint>
#include <span>

#include "jx/config.h"

namespace jx {
class Array;
class Primitive;
}  // namespace jx

namespace jx::detail {

// debug_nans' eager check (src/lax/debug_callback.cpp registers it): called by
// Primitive::eval with an operation's operands and results while debug_nans is on.
using NanCheck = void (*)(const Primitive& p, std::span<const Array> in, std::span<const Array> out);
void register_nan_check(NanCheck check);
// The check to run now (nullptr while debug_nans is off): one atomic load.
NanCheck active_nan_check();

// The stored settings, reading the environment on first use (raises jx::Error naming a
// malformed variable). vector_isa is the request ("auto", ...), not the ISA in use.
Config stored_config();
// The thread pool's size, fixed from this call on (0 resolved to the hardware's count):
// set_num_threads with another value raises afterwards.
int fix_num_threads();
// The number of CPU devices, fixed from this call on (devices are made once).
int fix_num_cpu_devices();
// Applies set_block_cache_mb to the allocator's block cache (src/core/array.cpp).
void set_block_cache_limit(int64_t bytes);

}  // namespace jx::detail
