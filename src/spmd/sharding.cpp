#include "jx/sharding.h"

#include <algorithm>

#include "core/array_internal.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "spmd/sharding_record.h"

namespace jx {

PartitionSpec::PartitionSpec(std::vector<Entry> entries) {
  for (Entry& e : entries) dims_.push_back(e.axes());
}

std::string PartitionSpec::str() const {
  std::string s = "P(";
  for (size_t d = 0; d < dims_.size(); ++d) {
    if (d) s += ", ";
    if (dims_[d].empty()) s += "None";
    else if (dims_[d].size() == 1) s += "'" + dims_[d][0] + "'";
    else {
      s += "(";
      for (size_t k = 0; k < dims_[d].size(); ++k) s += (k ? ", '" : "'") + dims_[d][k] + "'";
      s += ")";
    }
  }
  return s + ")";
}

Mesh::Mesh(std::vector<Device> devices, std::vector<std::string> axis_names, std::vector<int64_t> shape)
    : devices_(std::move(devices)), axis_names_(std::move(axis_names)), shape_(std::move(shape)) {
  if (axis_names_.size() != shape_.size())
    detail::fail("Mesh", axis_names_.size(), " axis names for a shape of ", shape_.size(), " dimensions");
  if (axis_names_.empty()) detail::fail("Mesh", "needs at least one axis");
  int64_t n = 1;
  for (size_t a = 0; a < shape_.size(); ++a) {
    if (shape_[a] < 1) detail::fail("Mesh", "axis '", axis_names_[a], "' has size ", shape_[a]);
    n *= shape_[a];
    const std::string& name = axis_names_[a];
    if (name.empty() || name.find_first_of(",+|") != std::string::npos)
      detail::fail("Mesh", "axis name '", name, "' must be non-empty without ',', '+' or '|'");
    if (std::count(axis_names_.begin(), axis_names_.end(), name) > 1)
      detail::fail("Mesh", "axis name '", name, "' appears twice");
  }
  if (n != static_cast<int64_t>(devices_.size()))
    detail::fail("Mesh", "a mesh of shape ", shape_.size() == 1 ? std::to_string(shape_[0]) : str(), " needs ", n,
                 " devices, got ", devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (!devices_[i].valid()) detail::fail("Mesh", "device ", i, " is a null jx::Device");
    for (size_t j = 0; j < i; ++j)
      if (devices_[j] == devices_[i]) detail::fail("Mesh", "device ", devices_[i].str(), " is listed twice");
  }
}

Mesh::Mesh(std::vector<Device> devices, std::string axis_name)
    : Mesh(devices, {std::move(axis_name)}, {static_cast<int64_t>(devices.size())}) {}

int64_t Mesh::axis_size(const std::string& name) const {
  for (size_t a = 0; a < axis_names_.size(); ++a)
    if (axis_names_[a] == name) return shape_[a];
  detail::fail("Mesh", "has no axis '", name, "' (", str(), ")");
}

std::string Mesh::str() const {
  std::string s = "Mesh(";
  for (size_t a = 0; a < axis_names_.size(); ++a)
    s += (a ? ", '" : "'") + axis_names_[a] + "': " + std::to_string(shape_[a]);
  return s + ")";
}

std::string NamedSharding::str() const { return "NamedSharding(" + mesh.str() + ", " + spec.str() + ")"; }

std::optional<NamedSharding> sharding(const Array& x) {
  if (!x.valid() || !x.impl().sharding) return std::nullopt;
  return x.impl().sharding->sharding;
}

std::vector<Shard> addressable_shards(const Array& x) {
  if (!x.valid()) detail::fail("addressable_shards", "got a null jx::Array");
  if (!x.is_concrete())
    detail::fail("addressable_shards", "got a traced array of type ", x.aval().str(),
                 "; shards exist only for concrete arrays (call it outside jit, grad and vmap)");
  const detail::ArrayImpl& impl = x.impl();
  if (!impl.sharding) {
    Shard whole{x.device(), {}, -1, x};
    for (int64_t d : x.shape()) whole.index.push_back({0, d});
    return {whole};
  }
  const detail::ShardingRecord& r = *impl.sharding;
  std::vector<Shard> shards;
  for (const detail::ShardPlace& place : r.places) {
    std::vector<int64_t> start, stop;
    for (const auto& [b, e] : place.index) {
      start.push_back(b);
      stop.push_back(e);
    }
    Array block = lax::slice(x, start, stop);
    if (r.squeezed_dim >= 0) block = lax::squeeze(block, {r.squeezed_dim});
    // The same memory, seen as the device's: committed there.
    auto storage = std::make_shared<detail::Storage>();
    const detail::Storage& base = *block.impl().storage;
    storage->data = base.data;
    storage->nbytes = base.nbytes;
    storage->device = place.device;
    storage->committed = true;
    storage->owner = block.impl().storage;
    auto view = std::make_shared<detail::ArrayImpl>(block.impl());
    view->storage = std::move(storage);
    shards.push_back(Shard{place.device, place.index, r.squeezed_dim, Array(std::move(view))});
  }
  return shards;
}

namespace detail {

Array with_sharding(const Array& x, std::shared_ptr<const ShardingRecord> record) {
  if (!x.is_concrete()) return x;
  auto impl = std::make_shared<ArrayImpl>(x.impl());
  impl->sharding = std::move(record);
  return Array(std::move(impl));
}

}  // namespace detail

}  // namespace jx
