// Collectives (JAX's jax.lax parallel operators): operations across the members of a
// named axis. The axis is bound by jx::pmap (one member per device), jx::shard_map (one
// axis per mesh dimension), or jx::vmap with an axis_name (one member per batch lane);
// the same function gives the same values under each. A collective naming an axis that
// no enclosing pmap, shard_map or vmap binds raises jx::Error naming the axis.
//
// Every collective is a primitive with its jvp, transpose and batching rules, so they
// compose with grad, vjp, vmap and jit in every order. Values are per member: the
// transpose of psum is psum, of all_gather is psum_scatter, of ppermute the inverse
// permutation, of all_to_all the swapped all_to_all.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/array.h"
#include "jx/tree.h"

namespace jx::lax {

// One axis name ("i") or several ({"data", "model"}), as psum's axis_name.
class AxisNames {
 public:
  AxisNames(const char* name) : names_{name} {}                 // NOLINT: implicit, as in JAX
  AxisNames(std::string name) : names_{std::move(name)} {}      // NOLINT
  AxisNames(std::string_view name) : names_{std::string(name)} {}  // NOLINT
  AxisNames(std::initializer_list<std::string> names) : names_(names) {}
  AxisNames(std::vector<std::string> names) : names_(std::move(names)) {}  // NOLINT
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// Sum over every member of the named axes (several names: over their product).
Array psum(const Array& x, const AxisNames& axes);
// psum divided by the number of members (integers become float32, as a true division).
Array pmean(const Array& x, const AxisNames& axes);
Array pmax(const Array& x, const AxisNames& axes);
Array pmin(const Array& x, const AxisNames& axes);

struct AllGatherOptions {
  int64_t axis = 0;    // where the members' axis goes in the result
  bool tiled = false;  // concatenate along `axis` instead of stacking a new one
};
// Every member's x, stacked in member order: shape[axis] inserted = the axis size
// (tiled: x.shape[axis] * size).
Array all_gather(const Array& x, std::string_view axis_name, AllGatherOptions options = {});

struct PsumScatterOptions {
  int64_t scatter_dimension = 0;
  bool tiled = false;  // keep the dimension, divided by the size, instead of removing it
};
// psum, of which member k keeps block k along scatter_dimension (whose extent must be
// the axis size; tiled: a multiple of it).
Array psum_scatter(const Array& x, std::string_view axis_name, PsumScatterOptions options = {});

// Member `target` receives `source`'s x for each (source, target) pair; a member that is
// no pair's target gets zeros. Each member is at most one source and one target.
Array ppermute(const Array& x, std::string_view axis_name, std::vector<std::pair<int64_t, int64_t>> perm);

struct AllToAllOptions {
  bool tiled = false;
};
// Splits x into size chunks along split_axis, sends chunk k to member k, and joins the
// chunks received along concat_axis in member order. Untiled: x.shape[split_axis] must
// be the axis size; that axis is removed and one of that size is inserted at
// concat_axis. Tiled: split_axis is divided by the size and concat_axis multiplied.
Array all_to_all(const Array& x, std::string_view axis_name, int64_t split_axis, int64_t concat_axis,
                 AllToAllOptions options = {});

// This member's index along the axis (int32).
Array axis_index(std::string_view axis_name);
// The number of members of the named axes (JAX's psum(1, axis_name)).
int64_t axis_size(const AxisNames& axes);

// Pytree forms: the collective applied to every leaf.
template <class T>
  requires(!std::is_same_v<T, Array>)
auto psum(const T& tree, const AxisNames& axes) {
  return jx::tree::map([&](const Array& x) { return psum(x, axes); }, tree);
}
template <class T>
  requires(!std::is_same_v<T, Array>)
auto pmean(const T& tree, const AxisNames& axes) {
  return jx::tree::map([&](const Array& x) { return pmean(x, axes); }, tree);
}
template <class T>
  requires(!std::is_same_v<T, Array>)
auto pmax(const T& tree, const AxisNames& axes) {
  return jx::tree::map([&](const Array& x) { return pmax(x, axes); }, tree);
}
template <class T>
  requires(!std::is_same_v<T, Array>)
auto pmin(const T& tree, const AxisNames& axes) {
  return jx::tree::map([&](const Array& x) { return pmin(x, axes); }, tree);
}

}  // namespace jx::lax
