// jx::none, JAX's None: a pytree node without leaves (scan's xs when only a length is
// given, what a scan body returns as its y when it emits nothing) and, in a
// PartitionSpec, a dimension no mesh axis splits.
#pragma once

namespace jx {

struct None {};
inline constexpr None none{};

}  // namespace jx
