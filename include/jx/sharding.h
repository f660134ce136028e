// Device meshes and partition specs (JAX's jax.sharding.Mesh and PartitionSpec): how
// jx::shard_map lays arrays out over devices.
//
//   jx::Mesh mesh(jx::devices(), {"data", "model"}, {2, 2});
//   auto f = jx::shard_map(step, mesh, {jx::P("data", jx::none), jx::P()}, {jx::P("data")});
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "jx/array.h"
#include "jx/device.h"
#include "jx/none.h"

namespace jx {

// Per array dimension, the mesh axes that split it (none: replicated; several: their
// product, the first major). Dimensions past the spec's length are replicated.
class PartitionSpec {
 public:
  // One dimension's entry: no axes, one, or several.
  class Entry {
   public:
    Entry(None) {}                                               // NOLINT: implicit, as P's arguments (jx::none)
    Entry(const char* axis) : axes_{axis} {}                     // NOLINT
    Entry(std::string axis) : axes_{std::move(axis)} {}          // NOLINT
    Entry(std::initializer_list<std::string> axes) : axes_(axes) {}
    Entry(std::vector<std::string> axes) : axes_(std::move(axes)) {}  // NOLINT
    const std::vector<std::string>& axes() const { return axes_; }

   private:
    std::vector<std::string> axes_;
  };

  PartitionSpec() = default;
  PartitionSpec(std::vector<Entry> entries);  // NOLINT
  const std::vector<std::vector<std::string>>& dims() const { return dims_; }
  // "P('data', None)".
  std::string str() const;
  bool operator==(const PartitionSpec&) const = default;

 private:
  std::vector<std::vector<std::string>> dims_;
};

// P("data", jx::none), P({"data", "model"}), P(): a PartitionSpec.
template <class... E>
PartitionSpec P(E&&... entries) {
  return PartitionSpec(std::vector<PartitionSpec::Entry>{PartitionSpec::Entry(std::forward<E>(entries))...});
}

// Devices arranged in an n-dimensional grid with named axes; devices are listed in
// row-major order of the grid.
class Mesh {
 public:
  // Raises jx::Error when shape's product is not the device count, a name repeats or is
  // empty, or a device is invalid or listed twice.
  Mesh(std::vector<Device> devices, std::vector<std::string> axis_names, std::vector<int64_t> shape);
  // A 1-d mesh over the devices.
  Mesh(std::vector<Device> devices, std::string axis_name);

  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return static_cast<int64_t>(devices_.size()); }
  // The extent of a named axis; raises naming the mesh when there is none.
  int64_t axis_size(const std::string& name) const;
  // "Mesh('data': 2, 'model': 2)".
  std::string str() const;

 private:
  std::vector<Device> devices_;
  std::vector<std::string> axis_names_;
  std::vector<int64_t> shape_;
};

// How a pmap or shard_map result lies over the devices that computed it (JAX's
// NamedSharding): the mesh and, per dimension, the mesh axes that split it.
struct NamedSharding {
  Mesh mesh;
  PartitionSpec spec;
  std::string str() const;  // "NamedSharding(Mesh('i': 4), P('i'))"
};

// One device's block of an array (JAX's Shard).
struct Shard {
  Device device;
  // Where the block sits in the array: [start, stop) per dimension. pmap's mapped
  // dimension is indexed, not sliced: `data` has the per-device shape.
  std::vector<std::pair<int64_t, int64_t>> index;
  int squeezed_dim = -1;  // the dimension `data` drops (pmap's mapped one), or -1
  // The block: a view of the array (no copy) committed to `device`.
  Array data;
};

// The sharding of a pmap or shard_map result (a process-local array: across processes,
// this process's part); nullopt for every other array, including tracers.
std::optional<NamedSharding> sharding(const Array& x);
// The blocks of this process's devices, in device order, replicated copies included: a
// pmap or shard_map result has one per device; any other array one, the whole array on
// its device. Raises for tracers.
std::vector<Shard> addressable_shards(const Array& x);

}  // namespace jx
