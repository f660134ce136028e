// The collectives' test cases, shared by the in-process suite (pmap_test.cpp) and the
// one over MPI ranks (mpi/mpi_test.cpp): each collective over an axis "i" of n devices,
// with its definition written with jnp on the stacked per-device values.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::testing {

namespace collective_cases_detail {
namespace jnp = jx::numpy;
using lax::AllGatherOptions;

// Row k of the result: what device k computes (the stacked values x: [n, ...]).
using Collective = std::function<Array(const Array& x)>;

struct Case {
  std::string name;
  Collective per_device;                            // run on each device's row
  std::function<Array(const Array& stacked)> def;  // the expected stacked result
  Shape row;                                       // a device's operand shape
};

inline std::vector<Case> cases(int64_t n) {
  std::vector<Case> c;
  auto each_row = [n](const std::function<Array(int64_t)>& f) {
    std::vector<Array> rows;
    for (int64_t k = 0; k < n; ++k) rows.push_back(f(k));
    return jnp::stack(rows);
  };
  c.push_back({"psum", [](const Array& x) { return lax::psum(x, "i"); },
               [=](const Array& s) { return each_row([&](int64_t) { return jnp::sum(s, 0); }); }, {3}});
  c.push_back({"pmean", [](const Array& x) { return lax::pmean(x, "i"); },
               [=](const Array& s) { return each_row([&](int64_t) { return jnp::mean(s, 0); }); }, {3}});
  c.push_back({"pmax", [](const Array& x) { return lax::pmax(x, "i"); },
               [=](const Array& s) { return each_row([&](int64_t) { return jnp::max(s, 0); }); }, {3}});
  c.push_back({"pmin", [](const Array& x) { return lax::pmin(x, "i"); },
               [=](const Array& s) { return each_row([&](int64_t) { return jnp::min(s, 0); }); }, {3}});
  c.push_back({"all_gather", [](const Array& x) { return lax::all_gather(x, "i"); },
               [=](const Array& s) { return each_row([&](int64_t) { return s; }); }, {2, 3}});
  c.push_back({"all_gather_axis1", [](const Array& x) { return lax::all_gather(x, "i", AllGatherOptions{.axis = 1}); },
               [=](const Array& s) { return each_row([&](int64_t) { return jnp::moveaxis(s, 0, 1); }); }, {2, 3}});
  c.push_back({"all_gather_tiled",
               [](const Array& x) { return lax::all_gather(x, "i", AllGatherOptions{.axis = 1, .tiled = true}); },
               [=](const Array& s) {
                 std::vector<Array> parts;
                 for (int64_t k = 0; k < n; ++k) parts.push_back(s(k));
                 Array cat = jnp::concatenate(parts, 1);
                 return each_row([&](int64_t) { return cat; });
               },
               {2, 3}});
  c.push_back({"psum_scatter", [](const Array& x) { return lax::psum_scatter(x, "i"); },
               [=](const Array& s) { return jnp::sum(s, 0); }, {n, 2}});
  c.push_back({"psum_scatter_tiled",
               [](const Array& x) { return lax::psum_scatter(x, "i", {.scatter_dimension = 1, .tiled = true}); },
               [=](const Array& s) {
                 Array total = jnp::sum(s, 0);  // [2, 2n]
                 return each_row([&](int64_t k) { return total(all, Slice{2 * k, 2 * k + 2}); });
               },
               {2, 2 * n}});
  c.push_back({"ppermute_ring",
               [n](const Array& x) {
                 std::vector<std::pair<int64_t, int64_t>> perm;
                 for (int64_t k = 0; k < n; ++k) perm.push_back({k, (k + 1) % n});
                 return lax::ppermute(x, "i", perm);
               },
               [=](const Array& s) { return each_row([&](int64_t k) { return s((k + n - 1) % n); }); }, {3}});
  c.push_back({"ppermute_partial", [](const Array& x) { return lax::ppermute(x, "i", {{0, 0}}); },
               [=](const Array& s) {
                 return each_row([&](int64_t k) { return k == 0 ? s(0) : jnp::zeros_like(s(0)); });
               },
               {3}});
  c.push_back({"all_to_all", [](const Array& x) { return lax::all_to_all(x, "i", 0, 1); },
               // device k's result [3, n]: column j is device j's chunk k
               [=](const Array& s) { return each_row([&](int64_t k) { return jnp::transpose(s(all, k)); }); },
               {n, 3}});
  c.push_back({"all_to_all_tiled",
               [](const Array& x) { return lax::all_to_all(x, "i", 1, 0, {.tiled = true}); },
               [=](const Array& s) {  // s: [n, 2, 2n]; device k: concat over j of s[j][:, 2k:2k+2] along 0
                 return each_row([&](int64_t k) {
                   std::vector<Array> parts;
                   for (int64_t j = 0; j < n; ++j) parts.push_back(s(j)(all, Slice{2 * k, 2 * k + 2}));
                   return jnp::concatenate(parts, 0);
                 });
               },
               {2, 2 * n}});
  c.push_back({"axis_index", [](const Array& x) { return jnp::astype(lax::axis_index("i"), x.dtype()) + x * 0.0f; },
               [=](const Array& s) { return each_row([&](int64_t k) { return jnp::full_like(s(0), static_cast<float>(k)); }); },
               {3}});
  return c;
}

// The stacked per-device operands of a case over n devices: [n, row...].
inline Shape stacked_shape(const Case& c, int64_t n) {
  Shape shape = c.row;
  shape.insert(shape.begin(), n);
  return shape;
}

}  // namespace collective_cases_detail

using collective_cases_detail::Case;
using collective_cases_detail::cases;
using collective_cases_detail::stacked_shape;

}  // namespace jx::testing
