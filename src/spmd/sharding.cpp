#include "jx/sharding.h"

#include <algorithm>

#include "jx/error.h"

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

}  // namespace jx
