// SPMD over devices (JAX's jax.pmap and shard_map): one program, run by every device on
// its own part of the data, with collectives (jx/collectives.h) between them.
//
//   auto step = jx::pmap([](const Array& x) { return jx::lax::psum(x * x, "i"); }, {.axis_name = "i"});
//   auto y = step(jnp::arange(4.0f).reshape({4, 1}));   // one row per device
//
// Both are one primitive, `shard_map` (src/spmd/shard_map.cpp): its body is the traced
// per-device program, compiled once and run concurrently by each device's thread; its
// rules (jvp, transpose, partial evaluation, batching, dce) transform the body, so
// pmap and shard_map compose with grad, vjp, vmap and jit in every order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "jx/collectives.h"
#include "jx/jit.h"
#include "jx/sharding.h"
#include "jx/transforms.h"

namespace jx {
namespace detail {

// f maps per-device blocks to per-device blocks; in_specs: one per argument leaf;
// out_specs: one for every output leaf, or one per output leaf.
std::vector<Array> shard_map_flat(const FlatFn& f, std::span<const Array> args, const Mesh& mesh,
                                  std::span<const PartitionSpec> in_specs, std::span<const PartitionSpec> out_specs);
// in_axes: one per argument leaf (nullopt: the same value on every device); out_axes:
// one for every output leaf, or one per output leaf.
std::vector<Array> pmap_flat(const FlatFn& f, std::span<const Array> args,
                             std::span<const std::optional<int64_t>> in_axes,
                             std::span<const std::optional<int64_t>> out_axes, const std::string& axis_name,
                             const std::vector<Device>& devices);

// Spreads a per-argument option over that argument's leaves.
template <class T, class... A>
std::pair<std::vector<Array>, std::vector<T>> leaves_with(std::string_view op, const std::vector<T>& per_arg,
                                                          const T& fallback, const std::tuple<A...>& args) {
  std::vector<Array> xs;
  std::vector<T> per_leaf;
  if (!per_arg.empty() && per_arg.size() != 1 && per_arg.size() != sizeof...(A))
    fail(op, "got ", per_arg.size(), " per-argument entries but the function got ", sizeof...(A), " arguments");
  size_t k = 0;
  std::apply(
      [&](const auto&... arg) {
        ((
             [&] {
               const T& spec = per_arg.empty() ? fallback : per_arg.size() == 1 ? per_arg[0] : per_arg[k];
               for (Array& leaf : tree::leaves(arg)) {
                 xs.push_back(std::move(leaf));
                 per_leaf.push_back(spec);
               }
               ++k;
             }()),
         ...);
      },
      args);
  return {std::move(xs), std::move(per_leaf)};
}

}  // namespace detail

struct PmapOptions {
  // The name collectives use for the mapped axis ("" : f uses none).
  std::string axis_name;
  // The mapped axis of each positional argument (all its leaves), or jx::not_mapped for
  // an argument every device sees whole. Empty: axis 0 for every argument; a single
  // entry applies to every argument.
  std::vector<std::optional<int64_t>> in_axes;
  // Where each output leaf gets the mapped axis (one entry for all, or one per leaf);
  // jx::not_mapped returns device 0's value, for outputs the same on every device.
  std::vector<std::optional<int64_t>> out_axes = {0};
  // The devices to run on, one per index of the mapped axis. Empty: the first ones of
  // jx::local_devices() (JX_NUM_CPU_DEVICES sets how many a CPU process has); across
  // processes (jx::distributed::initialize), every process's devices, each process
  // passing the slices of its own (the mapped axis has local_device_count() entries)
  // and getting its own results back, while collectives span all of them.
  std::vector<Device> devices;
};

// pmap(f)(args...): f applied to each slice of its arguments along the mapped axis, each
// on its own device, all concurrently; results stacked along out_axes.
template <class F>
auto pmap(F f, PmapOptions options = {}) {
  JX_DETAIL_CHECK_FN("pmap", F);
  return [f = std::move(f), options = std::move(options)]<class... A>(const A&... a) {
    using Info = detail::CallInfo<false, F, ArgNums<>, A...>;
    JX_DETAIL_CHECK_CALL("pmap", Info);
    if constexpr (Info::ok) {
      using Args = detail::traced_args_t<A...>;
      Args args(detail::to_array_tree(a)...);
      auto [xs, in_axes] = detail::leaves_with<std::optional<int64_t>>("pmap", options.in_axes, 0, args);
      detail::FlatCallAll<F, A...> call(f, std::move(args));
      std::vector<Array> outs =
          detail::pmap_flat(call.fn(), xs, in_axes, options.out_axes, options.axis_name, options.devices);
      return call.result(outs);
    }
  };
}

// pmap(f, jx::static_argnums<k, ...>, options)(args...): as pmap(f, options), with the
// arguments at those positions passed to f as they are (ints, strings, configuration
// structs: JAX's static_broadcasted_argnums), the same on every device, each value traced
// anew. in_axes, when it has one entry per argument, has entries for the static ones
// too (ignored).
template <class F, size_t... S>
auto pmap(F f, StaticArgNums<S...>, PmapOptions options = {}) {
  return [f = std::move(f), options = std::move(options)]<class... A>(const A&... a) {
    static_assert(((S < sizeof...(A)) && ...), "jx::pmap: a static_argnums index is past the last argument");
    using All = typename detail::JitArgs<std::index_sequence<S...>, std::index_sequence_for<A...>, A...>::type;
    using Result = detail::result_t<F, All>;
    auto given = std::forward_as_tuple(a...);
    All all = [&]<size_t... I>(std::index_sequence<I...>) {
      auto convert = [](const auto& v, auto target) {
        using T = typename decltype(target)::type;
        if constexpr (std::is_same_v<T, std::decay_t<decltype(v)>>) return v;
        else return T(detail::to_array_tree(v));
      };
      return All{convert(std::get<I>(given), std::type_identity<std::tuple_element_t<I, All>>{})...};
    }(std::index_sequence_for<A...>{});
    if (options.in_axes.size() > 1 && options.in_axes.size() != sizeof...(A))
      detail::fail("pmap", "got ", options.in_axes.size(), " in_axes entries but the function got ", sizeof...(A),
                   " arguments");
    // The dynamic arguments' leaves, each with its argument's mapped axis.
    std::vector<Array> xs;
    std::vector<std::optional<int64_t>> in_axes;
    std::vector<tree::TreeDef> defs(sizeof...(A));
    auto collect = [&]<size_t K>(std::integral_constant<size_t, K>) {
      if constexpr (!detail::is_static_index<K, S...>) {
        auto [leaves, def] = tree::flatten(std::get<K>(all));
        const std::optional<int64_t> axis = options.in_axes.empty()       ? std::optional<int64_t>(0)
                                            : options.in_axes.size() == 1 ? options.in_axes[0]
                                                                          : options.in_axes[K];
        for (Array& leaf : leaves) {
          xs.push_back(std::move(leaf));
          in_axes.push_back(axis);
        }
        defs[K] = std::move(def);
      }
    };
    [&]<size_t... I>(std::index_sequence<I...>) { (collect(std::integral_constant<size_t, I>{}), ...); }(
        std::index_sequence_for<A...>{});
    tree::TreeDef out_def;
    detail::FlatFn fn = [&](std::span<const Array> leaves) {
      All call_args = all;
      size_t next = 0;
      auto put = [&]<size_t K>(std::integral_constant<size_t, K>) {
        if constexpr (!detail::is_static_index<K, S...>) {
          const size_t n = tree::flatten(std::get<K>(all)).first.size();
          std::get<K>(call_args) =
              tree::unflatten<std::tuple_element_t<K, All>>(defs[K], leaves.subspan(next, n));
          next += n;
        }
      };
      [&]<size_t... I>(std::index_sequence<I...>) { (put(std::integral_constant<size_t, I>{}), ...); }(
          std::index_sequence_for<A...>{});
      auto [outs, def] = tree::flatten(detail::to_array_tree(std::apply(f, call_args)));
      out_def = std::move(def);
      return outs;
    };
    std::vector<Array> outs = detail::pmap_flat(fn, xs, in_axes, options.out_axes, options.axis_name, options.devices);
    return tree::unflatten<Result>(out_def, outs);
  };
}

// shard_map(f, mesh, in_specs, out_specs)(args...): each device of the mesh runs f on
// its blocks of the arguments (in_specs: one per positional argument, applied to all its
// leaves), with the mesh's axis names bound for collectives; the blocks f returns are
// assembled by out_specs (one for every output leaf, or one per leaf). An output
// replicated over a mesh axis (its spec does not name it) is taken from the devices at
// index 0 along that axis. A mesh spanning processes needs each process's devices to form
// a block of it; the arguments and results are then this process's parts (its blocks).
template <class F>
auto shard_map(F f, Mesh mesh, std::vector<PartitionSpec> in_specs, std::vector<PartitionSpec> out_specs) {
  JX_DETAIL_CHECK_FN("shard_map", F);
  return [f = std::move(f), mesh = std::move(mesh), in_specs = std::move(in_specs),
          out_specs = std::move(out_specs)]<class... A>(const A&... a) {
    using Info = detail::CallInfo<false, F, ArgNums<>, A...>;
    JX_DETAIL_CHECK_CALL("shard_map", Info);
    if constexpr (Info::ok) {
      using Args = detail::traced_args_t<A...>;
      Args args(detail::to_array_tree(a)...);
      if (in_specs.size() != sizeof...(A))
        detail::fail("shard_map", "got ", in_specs.size(), " in_specs for ", sizeof...(A), " arguments");
      auto [xs, specs] = detail::leaves_with<PartitionSpec>("shard_map", in_specs, PartitionSpec{}, args);
      detail::FlatCallAll<F, A...> call(f, std::move(args));
      std::vector<Array> outs = detail::shard_map_flat(call.fn(), xs, mesh, specs, out_specs);
      return call.result(outs);
    }
  };
}

}  // namespace jx
