// Loops with JAX's semantics: lax.scan, lax.map, lax.fori_loop (static bounds) and
// lax.associative_scan.
//
//   // cumulative sum: carry the running total, emit it at every step
//   auto [total, partial] = jx::lax::scan(
//       [](const Array& c, const Array& x) { return std::pair(c + x, c + x); }, 0.0f, xs);
//   // x -> x * 0.9 ten times, no xs
//   auto [x, _] = jx::lax::scan([](const Array& c, jx::None) { return std::pair(c * 0.9, jx::none); },
//                               x0, jx::none, {.length = 10});
//
// scan stages f once into a sub-program and applies it as one `scan` equation (params:
// body, num_consts, num_carry, length, reverse, unroll), so it differentiates (forward and
// reverse, to any order), batches and jits as a whole; fori_loop with static bounds and
// map are scans. The rules live in src/lax/control_flow/scan*.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/array.h"
#include "jx/transforms.h"
#include "jx/none.h"
#include "jx/tree.h"


namespace jx::tree::detail {
// Flattens to no leaves and prints "None", as an empty std::optional does.
template <>
struct Node<jx::None> {
  static constexpr Kind kind = Kind::Optional;
  template <class X>
  using with_leaves = jx::None;
  static std::string pattern() { return "None"; }
  template <class Fn>
  static void for_each_child(const jx::None&, Fn&&) {}
  static jx::None build(const DefNode& d, Builder& b) {
    if (!(d.kind == Kind::Optional && d.children.empty())) mismatch(b, "None", d);
    return {};
  }
};
}  // namespace jx::tree::detail

namespace jx::lax {

struct ScanOptions {
  // The number of steps; needed when xs has no leaves (jx::none), else it must agree
  // with their leading size.
  std::optional<int64_t> length;
  // Run from the last element of xs to the first (ys stay in xs's order).
  bool reverse = false;
  // Steps per loop iteration in a native lowering (a hint; eager ignores it). >= 1.
  int64_t unroll = 1;
};

struct AssociativeScanOptions {
  // Scan from the end: out[i] combines elems[i], ..., elems[n - 1].
  bool reverse = false;
  // The axis scanned along (negative counts from the end).
  int64_t axis = 0;
};

struct MapOptions {
  // Map over chunks of this many elements with vmap (the remainder in one more vmap).
  std::optional<int64_t> batch_size;
};

}  // namespace jx::lax

namespace jx::detail {

// What a scan's errors call the operation and the user's function, and how many leading
// carry leaves are the scan's own (fori_loop's counter), left out of their numbering.
struct ScanNames {
  std::string_view op = "scan";
  std::string_view fn = "f";
  size_t hidden_carry = 0;
};

// The steps of a scan over `xs` (their common leading size, or `length`); raises naming
// the leaves whose sizes differ, or when there are no leaves and no length.
int64_t scan_length(std::span<const Array> xs, std::optional<int64_t> length, std::string_view op);
// Stages `body` ([carry..., x slices...] -> [new carry..., y...]) and binds the scan
// primitive. A weakly typed init whose type the body changes is converted to the body's
// carry type (JAX's weak type promotion); any other change of a carry's type raises.
std::vector<Array> scan_flat(const FlatFn& body, std::vector<Array> init, std::vector<Array> xs,
                             const lax::ScanOptions& options, const ScanNames& names);
// map's chunks: each leaf's first n - n % batch_size rows as (n / batch_size, batch_size, ...),
// and the last n % batch_size rows (empty when none).
struct MapChunks {
  std::vector<Array> chunks, remainder;
};
MapChunks map_chunks(std::span<const Array> xs, int64_t batch_size);
// The chunked results (n / batch_size, batch_size, ...) flattened back to rows, with the
// remainder's rows (if any) appended.
std::vector<Array> map_unchunk(std::span<const Array> chunked, std::span<const Array> remainder);
// fori_loop's counter at `lower`, an int32 scalar; raises when a bound does not fit int32.
Array fori_counter(int64_t lower, int64_t upper);
// The structure check of a loop body's carry: raises "[op] fn must return a carry with
// the structure of ...".
void check_carry_structure(const tree::TreeDef& out, const tree::TreeDef& in, const ScanNames& names);

// associative_scan's combining function over flat leaves: fn(a, b) for pytrees a, b of
// elems' structure.
using CombineFn = std::function<std::vector<Array>(std::span<const Array> a, std::span<const Array> b)>;
// JAX's parallel prefix on the leaves, built from slices, pads and concatenations.
std::vector<Array> associative_scan_flat(const CombineFn& combine, std::vector<Array> elems,
                                         const lax::AssociativeScanOptions& options);

template <class F, class C, class X>
struct ScanBodyResult {
  using type = void;
};
template <class F, class C, class X>
  requires std::is_invocable_v<const F&, const C&, const X&>
struct ScanBodyResult<F, C, X> {
  using type = std::decay_t<std::invoke_result_t<const F&, const C&, const X&>>;
};

// lax::scan with the names its errors use.
template <class F, class Carry, class Xs>
auto scan_with_names(const ScanNames& names, const F& f, const Carry& init, const Xs& xs,
                     const lax::ScanOptions& options) {
  static_assert(tree::detail::Tree<Carry>, "jx::lax::scan: init must be a pytree (jx::Array, a C++ scalar, a std "
                                           "container of them or a JX_TREE_NODE struct)");
  static_assert(tree::detail::Tree<Xs>, "jx::lax::scan: xs must be a pytree of arrays, or jx::none");
  using C = tree::array_tree_t<Carry>;
  using X = tree::array_tree_t<Xs>;
  using R = typename ScanBodyResult<F, C, X>::type;
  static_assert(!std::is_void_v<R>, "jx::lax::scan: f must be callable as f(carry, x), carry shaped like init and "
                                    "x like one slice of xs (jx::None for jx::none)");
  static_assert(std::is_void_v<R> || is_pair_v<R>,
                "jx::lax::scan: f must return std::pair(new_carry, y) of pytrees (y may be jx::none)");
  if constexpr (is_pair_v<R>) {
    using Y = tree::array_tree_t<std::decay_t<std::tuple_element_t<1, R>>>;
    auto [init_leaves, init_def] = tree::flatten(init);
    auto [xs_leaves, xs_def] = tree::flatten(xs);
    const size_t num_carry = init_leaves.size();
    tree::TreeDef y_def;
    FlatFn body = [&](std::span<const Array> in) {
      R r = f(tree::unflatten<C>(init_def, in.first(num_carry)), tree::unflatten<X>(xs_def, in.subspan(num_carry)));
      auto [out, out_def] = tree::flatten(to_array_tree(std::get<0>(r)));
      check_carry_structure(out_def, init_def, names);
      auto [ys, def] = tree::flatten(to_array_tree(std::get<1>(r)));
      y_def = std::move(def);
      out.insert(out.end(), ys.begin(), ys.end());
      return out;
    };
    std::vector<Array> outs = scan_flat(body, std::move(init_leaves), std::move(xs_leaves), options, names);
    std::span<const Array> all(outs);
    return std::pair<C, Y>(tree::unflatten<C>(init_def, all.first(num_carry)),
                           tree::unflatten<Y>(y_def, all.subspan(num_carry)));
  }
}

}  // namespace jx::detail

namespace jx::lax {

// JAX's lax.scan: with f(carry, x) -> (new_carry, y),
//   carry = init; for i in 0..length: (carry, ys[i]) = f(carry, xs[i]); return (carry, ys)
// xs is a pytree of arrays sliced along axis 0 (or jx::none with options.length); ys
// stacks the y's along a new axis 0. f must return a carry of init's structure, shapes
// and dtypes. Returns std::pair(final carry, ys) with array leaves.
template <class F, class Carry, class Xs>
auto scan(const F& f, const Carry& init, const Xs& xs, const ScanOptions& options = {}) {
  return detail::scan_with_names(detail::ScanNames{}, f, init, xs, options);
}

// JAX's lax.map: f applied to each slice of xs along axis 0, results stacked; a scan
// with no carry. With options.batch_size, f is vmapped over chunks of that many slices
// (the last chunk holding the remainder), trading memory for fewer steps.
template <class F, class Xs>
auto map(const F& f, const Xs& xs, const MapOptions& options = {}) {
  static_assert(tree::detail::Tree<Xs>, "jx::lax::map: xs must be a pytree of arrays");
  using X = tree::array_tree_t<Xs>;
  static_assert(std::is_invocable_v<const F&, const X&>, "jx::lax::map: f must be callable as f(x), x shaped "
                                                          "like one slice of xs");
  using Y = tree::array_tree_t<std::decay_t<std::invoke_result_t<const F&, const X&>>>;
  auto [leaves, def] = tree::flatten(xs);
  const int64_t n = detail::scan_length(leaves, std::nullopt, "map");
  if (options.batch_size && *options.batch_size < 1)
    detail::fail("map", "batch_size must be positive, got ", *options.batch_size);
  if (!options.batch_size || *options.batch_size == 1 || n == 0) {
    auto step = [&f](const None&, const X& x) { return std::pair<None, Y>(none, detail::to_array_tree(f(x))); };
    return scan(step, none, xs).second;
  }
  auto batched = jx::vmap(f);
  auto step = [&batched](const None&, const X& chunk) { return std::pair<None, Y>(none, batched(chunk)); };
  detail::MapChunks parts = detail::map_chunks(leaves, *options.batch_size);
  auto [chunked, y_def] = tree::flatten(scan(step, none, tree::unflatten<X>(def, parts.chunks)).second);
  std::vector<Array> rest;
  if (!parts.remainder.empty()) rest = tree::leaves(batched(tree::unflatten<X>(def, parts.remainder)));
  return tree::unflatten<Y>(y_def, detail::map_unchunk(chunked, rest));
}

}  // namespace jx::lax

namespace jx::detail {

// fori_loop as a scan of `steps` steps, i starting at `counter` (whose dtype i keeps).
template <class F, class T>
tree::array_tree_t<T> fori_scan(const Array& counter, int64_t steps, const F& body_fn, const T& init) {
  using C = tree::array_tree_t<T>;
  constexpr ScanNames names{.op = "fori_loop", .fn = "body_fn", .hidden_carry = 1};
  const tree::TreeDef init_def = tree::structure(init);
  auto step = [&](const std::pair<Array, C>& carry, const None&) {
    auto [out, out_def] = tree::flatten(to_array_tree(body_fn(carry.first, carry.second)));
    check_carry_structure(out_def, init_def, names);
    return std::pair<std::pair<Array, C>, None>({carry.first + 1, tree::unflatten<C>(out_def, out)}, none);
  };
  return scan_with_names(names, step, std::pair<Array, C>(counter, to_array_tree(init)), none,
                         lax::ScanOptions{.length = steps})
      .first.second;
}

}  // namespace jx::detail

namespace jx::lax {

// JAX's lax.fori_loop with static bounds: for i in [lower, upper): carry = body_fn(i, carry),
// i an int32 scalar Array. A scan of upper - lower steps (none when upper <= lower), so
// it differentiates in reverse mode too. body_fn must keep the carry's structure, shapes
// and dtypes. With jx::Array bounds (possibly traced): jx/control_flow/while_loop.h.
template <class F, class T>
tree::array_tree_t<T> fori_loop(int64_t lower, int64_t upper, const F& body_fn, const T& init) {
  static_assert(tree::detail::Tree<T>, "jx::lax::fori_loop: init must be a pytree");
  using C = tree::array_tree_t<T>;
  static_assert(std::is_invocable_v<const F&, const Array&, const C&>,
                "jx::lax::fori_loop: body_fn must be callable as body_fn(i, carry), i an int32 jx::Array");
  using R = std::decay_t<std::invoke_result_t<const F&, const Array&, const C&>>;
  static_assert(tree::detail::Tree<R>, "jx::lax::fori_loop: body_fn must return a pytree shaped like init");
  return detail::fori_scan(detail::fori_counter(lower, upper), upper > lower ? upper - lower : 0, body_fn, init);
}

// JAX's lax.associative_scan: the inclusive prefix combination of elems along `axis`,
// out[i] = fn(... fn(fn(elems[0], elems[1]), elems[2]) ..., elems[i]) for an associative
// fn over pytrees of elems' structure (applied elementwise to slices of every leaf at
// once). O(log n) rounds of slices, pads and concatenations (Blelloch's parallel
// prefix), so it differentiates, batches and jits as those do.
template <class F, class T>
tree::array_tree_t<T> associative_scan(const F& fn, const T& elems, const AssociativeScanOptions& options = {}) {
  static_assert(tree::detail::Tree<T>, "jx::lax::associative_scan: elems must be a pytree of arrays");
  using E = tree::array_tree_t<T>;
  static_assert(std::is_invocable_v<const F&, const E&, const E&>,
                "jx::lax::associative_scan: fn must be callable as fn(a, b), a and b shaped like elems");
  auto [leaves, def] = tree::flatten(elems);
  detail::CombineFn combine = [&fn, &def](std::span<const Array> a, std::span<const Array> b) {
    auto [out, out_def] = tree::flatten(detail::to_array_tree(fn(tree::unflatten<E>(def, a), tree::unflatten<E>(def, b))));
    if (!(out_def == def))
      detail::fail("associative_scan", "fn must return a pytree with the structure of elems: it returned ",
                   out_def.str(), " but elems is ", def.str());
    return out;
  };
  return tree::unflatten<E>(def, detail::associative_scan_flat(combine, std::move(leaves), options));
}

}  // namespace jx::lax
