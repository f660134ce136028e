// What a pmap or shard_map result records of its layout over devices, for
// jx::sharding and jx::addressable_shards (include/jx/sharding.h).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "jx/sharding.h"

namespace jx::detail {

struct ShardPlace {
  Device device;
  std::vector<std::pair<int64_t, int64_t>> index;  // [start, stop) per dimension
};

struct ShardingRecord {
  NamedSharding sharding;
  int squeezed_dim = -1;
  std::vector<ShardPlace> places;  // this process's devices, in device order
};

// x with the record attached: a new handle on the same storage (x as it is when traced).
Array with_sharding(const Array& x, std::shared_ptr<const ShardingRecord> record);

}  // namespace jx::detail
