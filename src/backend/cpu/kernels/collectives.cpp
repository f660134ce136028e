// CPU kernels of the collectives (their rules: src/lax/collectives.cpp). A kernel finds
// this device thread's Communicator for the axis it names (core/axis_env.h), lays its
// operand out so each member's block is contiguous, and lets the communicator move the
// bytes; the transports are in src/distributed/.
#include "backend/cpu/kernels/kernels.h"
#include "core/array_internal.h"
#include "core/axis_env.h"
#include "distributed/communicator.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/collective_params.h"

namespace jx::cpu {
namespace {

using detail::Communicator;
using detail::CollectiveSignature;
using detail::ReduceOp;
using detail::fail;
using lax::batch_rules::move_axis;

Communicator& member_of(std::string_view op, const std::string& name, int64_t traced_size) {
  Communicator* c = detail::device_axis(name);
  if (!c)
    fail(op, "axis '", name,
         "' is not bound to devices on this thread: collectives run inside jx::pmap or jx::shard_map, or under "
         "jx::vmap with that axis_name");
  if (c->size() != traced_size)
    fail(op, "axis '", name, "' has ", c->size(), " members here but the program was traced for ", traced_size);
  return *c;
}

// The single axis a collective other than the reductions runs over.
Communicator& single_member(std::string_view op, const Params& params) {
  const auto names = lax::collective::axis_names(params);
  if (names.size() != 1) fail(op, "takes exactly one axis name, got '", params.get_string("axes"), "'");
  return member_of(op, names[0], params.get_ints("axis_sizes")[0]);
}

CollectiveSignature signature(std::string op, const std::string& axis, const Array& x, std::string extra = "") {
  return CollectiveSignature{.collective = std::move(op), .axis = axis, .dtype = x.dtype(), .shape = x.shape(),
                             .params = std::move(extra)};
}

Array fresh(const Aval& aval) { return detail::alloc_array(aval); }
Array finished(const Array& x, const Aval& aval) {
  Array c = detail::contiguous(x);
  return c.aval().weak_type == aval.weak_type ? c : detail::with_weak_type(c, aval.weak_type);
}
void* bytes_of(const Array& fresh_array) { return detail::mutable_data<void>(fresh_array); }

ImplRule reduction_kernel(std::string op, ReduceOp reduce) {
  return [op, reduce](std::span<const Array> in, const Params& params, std::span<const Aval> out) {
    const auto names = lax::collective::axis_names(params);
    const auto& sizes = params.get_ints("axis_sizes");
    Array x = detail::contiguous(in[0]);
    Array y = fresh(out[0]);
    const void* src = detail::raw_data(x);
    // Several axes: one reduction after the other, each over one group.
    for (size_t i = 0; i < names.size(); ++i) {
      Communicator& comm = member_of(op, names[i], sizes[i]);
      comm.all_reduce(signature(op, names[i], x), reduce, src, bytes_of(y), static_cast<size_t>(x.size()));
      src = detail::raw_data(y);
    }
    if (names.empty() && x.nbytes() > 0) std::memcpy(bytes_of(y), src, static_cast<size_t>(x.nbytes()));
    return std::vector<Array>{y};
  };
}

std::vector<Array> all_gather_kernel(std::span<const Array> in, const Params& params, std::span<const Aval> out) {
  Communicator& comm = single_member("all_gather", params);
  Array x = detail::contiguous(in[0]);
  const int64_t axis = params.get_int("axis");
  const bool tiled = params.get_bool("tiled");
  Shape stacked = x.shape();
  stacked.insert(stacked.begin(), comm.size());
  Array g = fresh(Aval{stacked, x.dtype()});
  comm.all_gather(signature("all_gather", params.get_string("axes"), x,
                            "axis=" + std::to_string(axis) + (tiled ? " tiled" : "")),
                  detail::raw_data(x), bytes_of(g), static_cast<size_t>(x.nbytes()));
  Array r = move_axis(g, 0, axis);
  if (tiled) r = lax::reshape(r, out[0].shape);
  return {finished(r, out[0])};
}

std::vector<Array> psum_scatter_kernel(std::span<const Array> in, const Params& params, std::span<const Aval> out) {
  Communicator& comm = single_member("psum_scatter", params);
  const int64_t sd = params.get_int("scatter_dimension");
  const int64_t n = comm.size();
  Array x = in[0];
  if (params.get_bool("tiled")) {  // split the dimension into (members, block)
    Shape s = x.shape();
    s[sd] /= n;
    s.insert(s.begin() + sd, n);
    x = lax::reshape(x, s);
  }
  Array blocks = detail::contiguous(move_axis(x, sd, 0));
  Array y = fresh(out[0]);
  comm.reduce_scatter(signature("psum_scatter", params.get_string("axes"), in[0],
                                "scatter_dimension=" + std::to_string(sd) + (params.get_bool("tiled") ? " tiled" : "")),
                      ReduceOp::kSum, detail::raw_data(blocks), bytes_of(y), static_cast<size_t>(out[0].size()));
  return {y};
}

std::vector<Array> ppermute_kernel(std::span<const Array> in, const Params& params, std::span<const Aval> out) {
  Communicator& comm = single_member("ppermute", params);
  const auto& flat = params.get_ints("perm");
  std::vector<std::pair<int, int>> pairs;
  std::string text = "perm=";
  for (size_t i = 0; i + 1 < flat.size(); i += 2) {
    pairs.emplace_back(static_cast<int>(flat[i]), static_cast<int>(flat[i + 1]));
    text += "(" + std::to_string(flat[i]) + "," + std::to_string(flat[i + 1]) + ")";
  }
  Array x = detail::contiguous(in[0]);
  Array y = fresh(out[0]);
  comm.permute(signature("ppermute", params.get_string("axes"), x, text), pairs, detail::raw_data(x), bytes_of(y),
               static_cast<size_t>(x.nbytes()));
  return {y};
}

std::vector<Array> all_to_all_kernel(std::span<const Array> in, const Params& params, std::span<const Aval> out) {
  Communicator& comm = single_member("all_to_all", params);
  const int64_t split = params.get_int("split_axis"), concat = params.get_int("concat_axis");
  const bool tiled = params.get_bool("tiled");
  const int64_t n = comm.size();
  Array x = in[0];
  if (tiled) {  // the split axis becomes (members, chunk)
    Shape s = x.shape();
    s[split] /= n;
    s.insert(s.begin() + split, n);
    x = lax::reshape(x, s);
  }
  Array blocks = detail::contiguous(move_axis(x, split, 0));  // [chunk for member k, ...]
  Array received = fresh(blocks.aval());                       // [chunk from member m, ...]
  comm.all_to_all(signature("all_to_all", params.get_string("axes"), in[0],
                            "split_axis=" + std::to_string(split) + " concat_axis=" + std::to_string(concat) +
                                (tiled ? " tiled" : "")),
                  detail::raw_data(blocks), bytes_of(received), static_cast<size_t>(blocks.nbytes() / std::max<int64_t>(n, 1)));
  // Untiled: the members' axis lands at concat_axis. Tiled: just before the concat
  // axis, then merged with it.
  Array r = move_axis(received, 0, concat);
  if (tiled) r = lax::reshape(r, out[0].shape);
  return {finished(r, out[0])};
}

std::vector<Array> axis_index_kernel(std::span<const Array>, const Params& params, std::span<const Aval> out) {
  Communicator& comm = single_member("axis_index", params);
  Array y = fresh(out[0]);
  *detail::mutable_data<int32_t>(y) = comm.rank();
  return {y};
}

}  // namespace

void add_collective_kernels(detail::KernelTable& table) {
  table.add("psum", reduction_kernel("psum", ReduceOp::kSum));
  table.add("pmax", reduction_kernel("pmax", ReduceOp::kMax));
  table.add("pmin", reduction_kernel("pmin", ReduceOp::kMin));
  table.add("all_gather", all_gather_kernel);
  table.add("psum_scatter", psum_scatter_kernel);
  table.add("ppermute", ppermute_kernel);
  table.add("all_to_all", all_to_all_kernel);
  table.add("axis_index", axis_index_kernel);
}

}  // namespace jx::cpu
