// The shard_map primitive (JAX's shard_map, which pmap is built on too): a call of a
// per-device body over a device mesh. Its operands and results are the whole
// (process-local) arrays; in_specs/out_specs say which mesh axes split which
// dimensions. Every rule transforms the body with the jaxpr-level layer:
//   jvp          a shard_map of jvp_jaxpr(body); tangents share their primals' specs
//   partial eval a known shard_map now and a linear_shard_map later; the residuals,
//                different on every device, are stacked along a new leading dimension
//                split over every mesh axis
//   transpose    (linear_shard_map) a shard_map of transpose_jaxpr(body), with two
//                corrections for replication: the cotangent of an output replicated
//                over an axis (taken from index 0 there) reaches index 0 only, and
//                the cotangent of an operand replicated over an axis is psum'd over it
//   batching     a shard_map of batch_jaxpr(body), the batch axis a replicated dimension
//   dce          the pruned body, the specs of what is left
// The impl compiles the body once and runs it on every device's thread at once, each
// with its communicators per mesh axis (core/axis_env.h).
#include <algorithm>
#include <limits>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>

#include "core/array_internal.h"
#include "core/axis_env.h"
#include "core/text.h"
#include "distributed/hierarchical.h"
#include "distributed/shared_memory.h"
#include "jit/jit_primitive.h"
#include "jit/executable.h"
#include "jx/config.h"
#include "jx/error.h"
#include "jx/lax.h"
#include "jx/pmap.h"
#include "lax/batch_rules.h"
#include "lax/data_movement.h"
#include "transforms/call_rules.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"
#include "transforms/subprogram_cache.h"
#include "spmd/device_threads.h"
#include "spmd/sharding_record.h"

namespace jx::detail {
namespace {

// ---- the mesh and specs, as params ----

// Per dimension, the mesh axes (indices) that split it, major first.
using Spec = std::vector<std::vector<int>>;

// A mesh that spans processes is seen through this process's devices: they must form a
// box (origin, extent per axis), and the operands and results of a call are the
// process-local arrays, made of the blocks of that box in its own row-major order (as
// pmap across processes takes each process's slices of the mapped axis). Collectives
// still run over the whole axis: the axis sizes in scope are the global ones.
struct MeshInfo {
  std::vector<std::string> names;
  std::vector<int64_t> shape;
  std::vector<Device> devices;          // row-major over shape, every process's
  std::vector<int64_t> origin, extent;  // this process's box
  std::vector<size_t> local;            // indices into devices of this process's, in order
  bool spans_processes = false;

  MeshInfo(std::vector<std::string> names_, std::vector<int64_t> shape_, std::vector<Device> devices_)
      : names(std::move(names_)), shape(std::move(shape_)), devices(std::move(devices_)) {
    const int self = jx::process_index();
    origin.assign(shape.size(), std::numeric_limits<int64_t>::max());
    std::vector<int64_t> last(shape.size(), -1);
    for (size_t k = 0; k < devices.size(); ++k) {
      if (devices[k].process_index() != self) {
        spans_processes = true;
        continue;
      }
      local.push_back(k);
      const std::vector<int64_t> c = coords(k);
      for (size_t a = 0; a < c.size(); ++a) {
        origin[a] = std::min(origin[a], c[a]);
        last[a] = std::max(last[a], c[a]);
      }
    }
    if (local.empty())
      fail("shard_map", "the mesh (", str(), ") has none of the devices of this process (process ", self,
           "); every process runs the program on its own devices");
    extent.resize(shape.size());
    int64_t box = 1;
    for (size_t a = 0; a < shape.size(); ++a) box *= extent[a] = last[a] - origin[a] + 1;
    if (box != static_cast<int64_t>(local.size()))
      fail("shard_map", "this process's ", local.size(), " devices of the mesh (", str(),
           ") do not form a box of it; order the mesh's devices so each process holds a contiguous block");
  }

  int axis(std::string_view op, const std::string& name) const {
    for (size_t a = 0; a < names.size(); ++a)
      if (names[a] == name) return static_cast<int>(a);
    fail(op, "mesh axis '", name, "' is not an axis of the mesh (", str(), ")");
  }
  std::string str() const {
    std::string s;
    for (size_t a = 0; a < names.size(); ++a) s += (a ? ", '" : "'") + names[a] + "': " + std::to_string(shape[a]);
    return s;
  }
  std::vector<int64_t> coords(size_t k) const {
    std::vector<int64_t> c(shape.size());
    for (size_t a = shape.size(); a-- > 0;) {
      c[a] = static_cast<int64_t>(k) % shape[a];
      k /= static_cast<size_t>(shape[a]);
    }
    return c;
  }
  // The number of blocks of this process's arrays a dimension split by `axes` has.
  int64_t blocks(const std::vector<int>& axes) const {
    int64_t n = 1;
    for (int a : axes) n *= extent[a];
    return n;
  }
  // Which of those blocks the device at coordinates c holds.
  int64_t block_index(const std::vector<int>& axes, const std::vector<int64_t>& c) const {
    int64_t i = 0;
    for (int a : axes) i = i * extent[a] + (c[a] - origin[a]);
    return i;
  }
};

std::string join(const std::vector<std::string>& v, char sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? std::string(1, sep) : "") + v[i];
  return s;
}
MeshInfo mesh_of(const Params& params) {
  const std::vector<Device> all = jx::devices();
  std::vector<Device> devices;
  for (int64_t id : params.get_ints("mesh_devices")) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Device& d) { return d.platform() == "cpu" && d.id() == id; });
    if (it == all.end()) fail("shard_map", "the mesh names device cpu:", id, ", which this run does not have");
    devices.push_back(*it);
  }
  return MeshInfo(split(params.get_string("mesh_axes"), ','), params.get_ints("mesh_shape"), std::move(devices));
}

void set_mesh(Params& p, const Mesh& mesh) {
  p.set("mesh_axes", join(mesh.axis_names(), ','));
  p.set("mesh_shape", mesh.shape());
  std::vector<int64_t> ids;
  for (const Device& d : mesh.devices()) ids.push_back(d.id());
  p.set("mesh_devices", ids);
}

// Specs as text: arrays joined by '|', dimensions by ',', a dimension's axes by '+'.
std::string encode(std::span<const Spec> specs, const MeshInfo& m) {
  std::vector<std::string> arrays;
  for (const Spec& s : specs) {
    std::vector<std::string> dims;
    for (const auto& axes : s) {
      std::vector<std::string> names;
      for (int a : axes) names.push_back(m.names[a]);
      dims.push_back(join(names, '+'));
    }
    arrays.push_back(join(dims, ','));
  }
  return join(arrays, '|');
}
std::vector<Spec> decode(const std::string& text, size_t count, const MeshInfo& m) {
  if (count == 0) return {};
  std::vector<Spec> specs;
  for (const std::string& array : split(text, '|')) {
    Spec s;
    if (!array.empty())
      for (const std::string& dim : split(array, ',')) {
        std::vector<int> axes;
        if (!dim.empty())
          for (const std::string& name : split(dim, '+')) axes.push_back(m.axis("shard_map", name));
        s.push_back(axes);
      }
    specs.push_back(s);
  }
  if (specs.size() != count) fail("shard_map", "specs '", text, "' describe ", specs.size(), " arrays, not ", count);
  return specs;
}

Spec spec_of(const PartitionSpec& p, const MeshInfo& m, std::string_view what, const Aval& aval) {
  Spec s;
  std::vector<bool> used(m.names.size());
  if (static_cast<int>(p.dims().size()) > aval.ndim())
    fail("shard_map", what, " of type ", aval.str(), " has a spec ", p.str(), " of more dimensions");
  for (const auto& axes : p.dims()) {
    std::vector<int> idx;
    for (const std::string& name : axes) {
      int a = m.axis("shard_map", name);
      if (used[a]) fail("shard_map", what, " has spec ", p.str(), ", which names mesh axis '", name, "' twice");
      used[a] = true;
      idx.push_back(a);
    }
    s.push_back(idx);
  }
  return s;
}

// The block of `global` a device holds, and back.
Aval block_aval(std::string_view op, const Aval& global, const Spec& s, const MeshInfo& m, std::string_view what) {
  Aval b = global;
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t n = m.blocks(s[d]);
    if (b.shape[d] % n != 0)
      fail(op, what, " of type ", global.str(), ": dimension ", d, " (", b.shape[d], ") is not divisible by the ", n,
           " devices that split it (mesh ", m.str(), ")");
    b.shape[d] /= n;
  }
  return b;
}
Aval global_aval(const Aval& block, const Spec& s, const MeshInfo& m) {
  Aval g = block;
  for (size_t d = 0; d < s.size(); ++d) g.shape[d] = checked_mul(g.shape[d], m.blocks(s[d]), "shard_map");
  return g;
}

Spec replicated() { return {}; }
// The spec of a value with a leading dimension split over every mesh axis (residuals).
Spec stacked(const MeshInfo& m) {
  std::vector<int> all(m.names.size());
  for (size_t a = 0; a < all.size(); ++a) all[a] = static_cast<int>(a);
  return {all};
}
// Whether a spec names mesh axis a anywhere.
bool names_axis(const Spec& s, int a) {
  for (const auto& axes : s)
    if (std::find(axes.begin(), axes.end(), a) != axes.end()) return true;
  return false;
}

extern const Primitive shard_map_p, linear_shard_map_p;

struct Decoded {
  MeshInfo mesh;
  std::vector<Spec> in, out;
};
Decoded decoded(const Params& params, size_t num_in, size_t num_out) {
  Decoded d{mesh_of(params), {}, {}};
  d.in = decode(params.get_string("in_specs"), num_in, d.mesh);
  d.out = decode(params.get_string("out_specs"), num_out, d.mesh);
  return d;
}
Params with_specs(const Params& params, const JaxprRef& body, std::span<const Spec> in, std::span<const Spec> out,
                  const MeshInfo& m) {
  Params p = params;
  p.set("jaxpr", body);
  p.set("in_specs", encode(in, m));
  p.set("out_specs", encode(out, m));
  return p;
}

// ---- shape rule ----

std::vector<Aval> shard_map_avals(std::string_view op, std::span<const Aval> in, const Params& params) {
  const JaxprRef& body = call_body(params, op);
  const auto body_in = body->in_avals();
  if (body_in.size() != in.size())
    fail(op, "the body takes ", body_in.size(), " inputs but there are ", in.size(), " operands");
  Decoded d = decoded(params, in.size(), body->jaxpr.outvars.size());
  for (size_t i = 0; i < in.size(); ++i) {
    Aval b = block_aval(op, in[i], d.in[i], d.mesh, "operand " + std::to_string(i));
    if (b.shape != body_in[i].shape || b.dtype != body_in[i].dtype)
      fail(op, "operand ", i, " of type ", in[i].str(), " has blocks of type ", b.str(), " but the body takes ",
           body_in[i].str());
  }
  std::vector<Aval> out;
  const auto body_out = body->out_avals();
  for (size_t j = 0; j < body_out.size(); ++j) out.push_back(global_aval(body_out[j], d.out[j], d.mesh));
  return out;
}

// ---- impl: every device runs the compiled body on its blocks ----

// The communicators of one call: per mesh axis, one group per line of devices along it
// that holds this process's devices: shared memory when the whole line is local, the
// hierarchical transport when it spans processes.
struct CallGroups {
  std::vector<std::shared_ptr<SharedMemoryGroup>> local_lines;
  std::vector<std::shared_ptr<CrossProcessGroup>> spanning_lines;
  std::vector<std::vector<std::unique_ptr<Communicator>>> members;  // [local device][axis]
  void abort(const std::string& reason) {
    for (auto& g : local_lines) g->abort(reason);
    for (auto& g : spanning_lines) g->abort(reason);
  }
};

CallGroups make_groups(const MeshInfo& m, double timeout_s) {
  CallGroups g;
  const size_t n = m.devices.size(), naxes = m.names.size();
  g.members.resize(m.local.size());
  for (size_t a = 0; a < naxes; ++a) {
    // The line of a device along axis a: the devices whose other coordinates match.
    auto line_key = [&](size_t k) {
      std::vector<int64_t> c = m.coords(k);
      c[a] = 0;
      return c;
    };
    std::map<std::vector<int64_t>, std::function<std::unique_ptr<Communicator>(int)>> lines;
    for (size_t l = 0; l < m.local.size(); ++l) {
      const size_t k = m.local[l];
      const std::vector<int64_t> key = line_key(k);
      auto& member_of = lines[key];
      if (!member_of) {
        std::vector<size_t> line(static_cast<size_t>(m.shape[a]));
        for (size_t j = 0; j < n; ++j)
          if (line_key(j) == key) line[static_cast<size_t>(m.coords(j)[a])] = j;
        std::vector<std::string> names;
        std::vector<int> process;
        int64_t first_id = std::numeric_limits<int64_t>::max();
        for (size_t j : line) {
          names.push_back(m.devices[j].str());
          process.push_back(m.devices[j].process_index());
          first_id = std::min<int64_t>(first_id, m.devices[j].id());
        }
        const bool local = std::all_of(process.begin(), process.end(), [&](int p) { return p == process[0]; });
        if (local) {
          auto group = SharedMemoryGroup::create(std::move(names), timeout_s);
          g.local_lines.push_back(group);
          member_of = [group](int rank) { return group->member(rank); };
        } else {
          for (size_t r = 0; r < names.size(); ++r) names[r] += " (process " + std::to_string(process[r]) + ")";
          // Unique among the lines of this call: a device is on one line per axis.
          const int64_t tag = first_id * static_cast<int64_t>(naxes) + static_cast<int64_t>(a) + 1;
          auto group = CrossProcessGroup::create(std::move(names), std::move(process),
                                                 static_cast<int>(tag % std::numeric_limits<int>::max()), timeout_s);
          g.spanning_lines.push_back(group);
          member_of = [group](int rank) { return group->member(rank); };
        }
      }
      g.members[l].push_back(member_of(static_cast<int>(m.coords(k)[a])));
    }
  }
  return g;
}

// The view of x that device coordinates c hold under spec s.
Array block_of(const Array& x, const Spec& s, const MeshInfo& m, const std::vector<int64_t>& c) {
  if (s.empty()) return x;
  std::vector<int64_t> start(x.ndim(), 0);
  Shape stop = x.shape();
  for (size_t d = 0; d < s.size(); ++d) {
    const int64_t len = x.shape()[d] / m.blocks(s[d]);
    start[d] = m.block_index(s[d], c) * len;
    stop[d] = start[d] + len;
  }
  return lax::slice(x, start, stop);
}

// Whether device coordinates c hold the copy of a result replicated by spec s that the
// caller gets (the first of this process's along every axis s does not name).
bool representative(const Spec& s, const MeshInfo& m, const std::vector<int64_t>& c) {
  for (size_t a = 0; a < m.names.size(); ++a)
    if (!names_axis(s, static_cast<int>(a)) && c[a] != m.origin[a]) return false;
  return true;
}

// Copies a device's result block into its place in the global result.
void place_block(const Array& block, const Array& global, const Spec& s, const MeshInfo& m,
                 const std::vector<int64_t>& c) {
  if (block.size() == 0) return;
  const auto& gi = global.impl();
  int64_t offset = gi.offset;
  for (size_t d = 0; d < s.size(); ++d) offset += m.block_index(s[d], c) * block.shape()[d] * gi.strides[d];
  const auto& bi = block.impl();
  const auto* src = static_cast<const char*>(raw_data(block));
  auto* dst = static_cast<char*>(gi.storage->data) + offset * global.itemsize();
  lax::movement::copy_strided(global.itemsize(), block.shape(), src, bi.strides, dst, gi.strides);
}

std::vector<Array> shard_map_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const JaxprRef& body = call_body(params, "shard_map");
  Decoded d = decoded(params, in.size(), out_avals.size());
  const MeshInfo& m = d.mesh;
  auto exe = body_executable(body, params.get_string("name"));
  CallGroups groups = make_groups(m, config::get().collective_timeout_s);
  std::vector<Array> outs;
  for (const Aval& a : out_avals) outs.push_back(alloc_array(a));
  std::vector<Device> local_devices;
  for (size_t k : m.local) local_devices.push_back(m.devices[k]);
  auto task = [&](size_t l) {
    const size_t k = m.local[l];
    const std::vector<int64_t> c = m.coords(k);
    std::vector<Array> blocks;
    for (size_t i = 0; i < in.size(); ++i) blocks.push_back(block_of(in[i], d.in[i], m, c));
    std::vector<DeviceAxis> axes;
    for (size_t a = 0; a < m.names.size(); ++a) axes.push_back({m.names[a], groups.members[l][a].get()});
    DefaultDeviceScope device(m.devices[k]);
    DeviceAxesScope scope(std::move(axes));
    std::vector<Array> results = exe->run(blocks);
    for (size_t j = 0; j < results.size(); ++j)
      if (representative(d.out[j], m, c)) place_block(results[j], outs[j], d.out[j], m, c);
  };
  auto on_failure = [&](size_t l, const std::exception_ptr& e) {
    std::string what = "an error";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    groups.abort(local_devices[l].str() + " raised: " + what);
  };
  std::vector<std::exception_ptr> errors = run_on_devices(local_devices, task, on_failure);
  // The first device's own error, not another's report that it gave up waiting.
  std::exception_ptr first, first_abandoned;
  for (auto& e : errors) {
    if (!e) continue;
    bool abandoned = false;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      abandoned = std::string_view(ex.what()).find("abandoned because") != std::string_view::npos;
    } catch (...) {
    }
    if (!abandoned && !first) first = e;
    if (abandoned && !first_abandoned) first_abandoned = e;
  }
  if (first) std::rethrow_exception(first);
  if (first_abandoned) std::rethrow_exception(first_abandoned);
  // Each result records which block each of this process's devices computed.
  const Mesh mesh(m.devices, m.names, m.shape);
  for (size_t j = 0; j < outs.size(); ++j) {
    std::vector<PartitionSpec::Entry> entries;
    for (const auto& axes : d.out[j]) {
      std::vector<std::string> names;
      for (int a : axes) names.push_back(m.names[a]);
      entries.emplace_back(std::move(names));
    }
    auto record = std::make_shared<ShardingRecord>(ShardingRecord{NamedSharding{mesh, PartitionSpec(std::move(entries))}});
    const Shape& shape = outs[j].shape();
    for (size_t k : m.local) {
      const std::vector<int64_t> c = m.coords(k);
      ShardPlace place{m.devices[k], {}};
      for (size_t dim = 0; dim < shape.size(); ++dim) {
        if (dim >= d.out[j].size() || d.out[j][dim].empty()) {
          place.index.push_back({0, shape[dim]});
          continue;
        }
        const int64_t len = shape[dim] / m.blocks(d.out[j][dim]);
        const int64_t start = m.block_index(d.out[j][dim], c) * len;
        place.index.push_back({start, start + len});
      }
      record->places.push_back(std::move(place));
    }
    outs[j] = with_sharding(outs[j], std::move(record));
  }
  return outs;
}

// ---- body wrappers, memoized per body and flags so compiled executables are reused ----

JaxprRef restage(const std::function<std::vector<Array>(std::span<const Array>)>& f, const std::vector<Aval>& in,
                 const MeshInfo& m, const std::string& name) {
  std::vector<std::unique_ptr<AxisEnvScope>> env;
  for (size_t a = 0; a < m.names.size(); ++a) env.push_back(std::make_unique<AxisEnvScope>(m.names[a], m.shape[a]));
  std::vector<Array> consts;
  JaxprRef body = body_with_consts_first(stage_flat(f, in, name), &consts);
  if (!consts.empty()) fail("shard_map", "internal: a re-staged body captured ", consts.size(), " constants");
  return body;
}

// Leading dimension of 1 on the residual outputs (the known half) or off the residual
// inputs (the unknown half).
JaxprRef with_stacked_residual_outputs(const JaxprRef& known, size_t first_residual, const MeshInfo& m) {
  return restage(
      [&](std::span<const Array> xs) {
        std::vector<Array> outs = eval_jaxpr(*known, xs);
        for (size_t j = first_residual; j < outs.size(); ++j) outs[j] = lax::expand_dims(outs[j], {0});
        return outs;
      },
      known->in_avals(), m, "shard_map_known");
}
JaxprRef with_stacked_residual_inputs(const JaxprRef& unknown, size_t first, size_t count, const MeshInfo& m) {
  std::vector<Aval> in = unknown->in_avals();
  for (size_t i = first; i < first + count; ++i) in[i].shape.insert(in[i].shape.begin(), 1);
  return restage(
      [&](std::span<const Array> xs) {
        std::vector<Array> args(xs.begin(), xs.end());
        for (size_t i = first; i < first + count; ++i) args[i] = lax::squeeze(args[i], {0});
        return eval_jaxpr(*unknown, args);
      },
      in, m, "shard_map_lin");
}

// ---- jvp ----

JvpResult shard_map_jvp(const Primitive& p, std::span<const Array> primals, std::span<const Array> tangents,
                        const Params& params) {
  const JaxprRef& body = call_body(params, p.name());
  Decoded d = decoded(params, primals.size(), body->jaxpr.outvars.size());
  std::vector<bool> nonzero(tangents.size());
  for (size_t i = 0; i < tangents.size(); ++i) nonzero[i] = tangents[i].valid();
  auto jvp = jvp_of_body(body, nonzero);
  std::vector<Spec> in(jvp->consts.size(), replicated());
  in.insert(in.end(), d.in.begin(), d.in.end());
  for (size_t i = 0; i < nonzero.size(); ++i)
    if (nonzero[i]) in.push_back(d.in[i]);
  std::vector<Spec> out = d.out;
  for (size_t j = 0; j < jvp->out_flags.size(); ++j)
    if (jvp->out_flags[j]) out.push_back(d.out[j]);
  // A linear_shard_map's jvp is a plain shard_map (residuals carry tangents too).
  Params q;
  for (const auto& [k, v] : params.items())
    if (k != "num_residuals") q.set(k, v);
  q = with_specs(q, jvp->body, in, out, d.mesh);
  std::vector<Array> outs = jx::bind(shard_map_p, jvp_call_operands(*jvp, primals, tangents), q);
  return split_jvp_outputs(std::move(outs), jvp->out_flags);
}

// ---- partial evaluation ----

struct ShardMapSplit {
  std::shared_ptr<const SplitBody> split;
  JaxprRef known, unknown;
};
SubprogramCache<std::shared_ptr<const ShardMapSplit>>& split_cache() {
  static auto* c = new SubprogramCache<std::shared_ptr<const ShardMapSplit>>;
  return *c;
}

PartialEvalSplit shard_map_partial_eval(const std::vector<bool>& unknowns, const Params& params) {
  const JaxprRef& body = call_body(params, "shard_map");
  Decoded d = decoded(params, unknowns.size(), body->jaxpr.outvars.size());
  const MeshInfo& m = d.mesh;
  auto s = split_cache().get(body, mask_str(unknowns), [&] {
    auto r = std::make_shared<ShardMapSplit>();
    r->split = partial_eval_of_body(body, unknowns);
    const size_t known_outs = r->split->known->jaxpr.outvars.size() - r->split->num_residuals;
    r->known = with_stacked_residual_outputs(r->split->known, known_outs, m);
    r->unknown = with_stacked_residual_inputs(r->split->unknown, r->split->unknown_consts.size(),
                                              r->split->num_residuals, m);
    return std::shared_ptr<const ShardMapSplit>(r);
  });
  const SplitBody& sp = *s->split;
  std::vector<Spec> known_in(sp.known_consts.size(), replicated()), unknown_in(sp.unknown_consts.size(), replicated());
  for (size_t r = 0; r < sp.num_residuals; ++r) unknown_in.push_back(stacked(m));
  for (size_t i = 0; i < unknowns.size(); ++i) (unknowns[i] ? unknown_in : known_in).push_back(d.in[i]);
  std::vector<Spec> known_out, unknown_out;
  for (size_t j = 0; j < sp.out_unknowns.size(); ++j) (sp.out_unknowns[j] ? unknown_out : known_out).push_back(d.out[j]);
  for (size_t r = 0; r < sp.num_residuals; ++r) known_out.push_back(stacked(m));

  PartialEvalSplit out;
  out.known = &shard_map_p;
  out.known_params = with_specs(params, s->known, known_in, known_out, m);
  out.known_consts = sp.known_consts;
  out.unknown = &linear_shard_map_p;
  out.unknown_params = with_specs(params, s->unknown, unknown_in, unknown_out, m);
  out.unknown_params.set("num_residuals", static_cast<int64_t>(sp.unknown_consts.size() + sp.num_residuals));
  out.unknown_consts = sp.unknown_consts;
  out.out_unknowns = sp.out_unknowns;
  out.num_residuals = sp.num_residuals;
  return out;
}

// ---- transpose (of linear_shard_map) ----

SubprogramCache<JaxprRef>& transpose_cache() {
  static auto* c = new SubprogramCache<JaxprRef>;
  return *c;
}

std::vector<Array> linear_shard_map_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                              const Params& params) {
  const JaxprRef& body = call_body(params, "linear_shard_map");
  Decoded d = decoded(params, operands.size(), cts.size());
  const MeshInfo& m = d.mesh;
  const size_t r = static_cast<size_t>(params.get_int("num_residuals"));
  for (size_t i = 0; i < r; ++i)
    if (operands[i].is_linear()) fail("linear_shard_map", "internal: residual operand ", i, " is linear");
  std::vector<bool> linear(operands.size(), true), ct_nonzero(cts.size());
  for (size_t i = 0; i < r; ++i) linear[i] = false;
  for (size_t j = 0; j < cts.size(); ++j) ct_nonzero[j] = cts[j].valid();
  auto t = transpose_of_body(body, linear, ct_nonzero);
  const size_t nc = t->consts.size();
  std::vector<size_t> ct_index;  // output j of each nonzero ct input
  for (size_t j = 0; j < cts.size(); ++j)
    if (ct_nonzero[j]) ct_index.push_back(j);
  JaxprRef wrapped = transpose_cache().get(t->body, mask_str(ct_nonzero), [&] {
    return restage(
        [&](std::span<const Array> xs) {
          std::vector<Array> args(xs.begin(), xs.end());
          // A cotangent of an output replicated over an axis reaches index 0 there only.
          for (size_t k = 0; k < ct_index.size(); ++k) {
            Array& ct = args[nc + r + k];
            for (size_t a = 0; a < m.names.size(); ++a) {
              if (names_axis(d.out[ct_index[k]], static_cast<int>(a))) continue;
              Array first = lax::convert_element_type(lax::eq(lax::axis_index(m.names[a]), lax::convert_element_type(Array(0), DType::Int32)),
                                                      ct.dtype());
              ct = lax::mul(ct, lax::broadcast_in_dim(first, ct.shape(), {}));
            }
          }
          std::vector<Array> outs = eval_jaxpr(*t->body, args);
          // An operand replicated over an axis gets the sum of its devices' cotangents.
          for (size_t i = r, k = 0; i < operands.size(); ++i, ++k) {
            std::vector<std::string> over;
            for (size_t a = 0; a < m.names.size(); ++a)
              if (!names_axis(d.in[i], static_cast<int>(a))) over.push_back(m.names[a]);
            if (!over.empty()) outs[k] = lax::psum(outs[k], over);
          }
          return outs;
        },
        t->body->in_avals(), m, "shard_map_transpose");
  });
  std::vector<Array> in = t->consts;
  std::vector<Spec> in_specs(nc, replicated());
  for (size_t i = 0; i < r; ++i) {
    in.push_back(operands[i].value);
    in_specs.push_back(d.in[i]);
  }
  for (size_t k = 0; k < ct_index.size(); ++k) {
    in.push_back(cts[ct_index[k]]);
    in_specs.push_back(d.out[ct_index[k]]);
  }
  std::vector<Spec> out_specs(d.in.begin() + static_cast<std::ptrdiff_t>(r), d.in.end());
  Params q;
  for (const auto& [k, v] : params.items())
    if (k != "num_residuals") q.set(k, v);
  std::vector<Array> lin = jx::bind(shard_map_p, in, with_specs(q, wrapped, in_specs, out_specs, m));
  std::vector<Array> out(operands.size());
  for (size_t i = r; i < operands.size(); ++i) out[i] = std::move(lin[i - r]);
  return out;
}

// ---- batching ----

BatchResult shard_map_batch(const Primitive& p, std::span<const Array> args, std::span<const int64_t> dims,
                            const Params& params, const BatchAxis& axis) {
  const JaxprRef& body = call_body(params, p.name());
  Decoded d = decoded(params, args.size(), body->jaxpr.outvars.size());
  BatchAxis inner = axis;
  if (std::find(d.mesh.names.begin(), d.mesh.names.end(), axis.name) != d.mesh.names.end()) inner.name.clear();
  std::vector<int64_t> front(dims.size());
  std::vector<Array> moved;
  for (size_t i = 0; i < args.size(); ++i) {
    front[i] = dims[i] == kNotMapped ? kNotMapped : 0;
    moved.push_back(dims[i] == kNotMapped ? args[i] : lax::batch_rules::move_axis(args[i], dims[i], 0));
  }
  auto b = batch_of_body(body, front, inner, /*instantiate_all=*/false);
  std::vector<Array> operands = b->consts;
  operands.insert(operands.end(), moved.begin(), moved.end());
  std::vector<Spec> in(b->consts.size(), replicated());
  for (size_t i = 0; i < args.size(); ++i) {
    Spec s = d.in[i];
    if (front[i] == 0) s.insert(s.begin(), std::vector<int>{});
    in.push_back(s);
  }
  std::vector<Spec> out;
  for (size_t j = 0; j < b->out_flags.size(); ++j) {
    Spec s = d.out[j];
    if (b->out_flags[j]) s.insert(s.begin(), std::vector<int>{});
    out.push_back(s);
  }
  Params q = with_specs(params, b->body, in, out, d.mesh);
  if (q.has("num_residuals")) q.set("num_residuals", params.get_int("num_residuals") + static_cast<int64_t>(b->consts.size()));
  BatchResult res{jx::bind(p, operands, q), {}};
  for (bool batched : b->out_flags) res.dims.push_back(batched ? 0 : kNotMapped);
  return res;
}

// ---- dce ----

DceEquationResult shard_map_dce(const std::vector<bool>& used_outputs, Equation& eqn) {
  const JaxprRef& body = call_body(eqn.params, eqn.primitive->name());
  DcedJaxpr dj = dce_jaxpr(body->jaxpr, used_outputs);
  if (!dj.changed) return DceEquationResult{std::move(dj.used_inputs), false};
  Decoded d = decoded(eqn.params, eqn.inputs.size(), eqn.outputs.size());
  std::vector<Spec> in, out;
  for (size_t i = 0; i < d.in.size(); ++i)
    if (dj.used_inputs[i]) in.push_back(d.in[i]);
  for (size_t j = 0; j < d.out.size(); ++j)
    if (used_outputs[j]) out.push_back(d.out[j]);
  if (eqn.params.has("num_residuals")) {
    int64_t r = eqn.params.get_int("num_residuals"), kept = 0;
    for (int64_t i = 0; i < r; ++i) kept += dj.used_inputs[static_cast<size_t>(i)];
    eqn.params.set("num_residuals", kept);
  }
  auto pruned = std::make_shared<ClosedJaxpr>();
  pruned->jaxpr = std::move(dj.jaxpr);
  eqn.params = with_specs(eqn.params, JaxprRef(pruned), in, out, d.mesh);
  drop_unused_inputs_and_outputs(eqn, dj.used_inputs, used_outputs);
  return DceEquationResult{std::move(dj.used_inputs), true};
}

const Primitive shard_map_p(
    "shard_map",
    {.traits = kCallsSubprogram,
     .num_outputs = -1,
     .abstract_eval = [](std::span<const Aval> in,
                         const Params& params) { return shard_map_avals("shard_map", in, params); },
     .impl = shard_map_impl,
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params& params) { return shard_map_jvp(shard_map_p, primals, tangents, params); },
     .batch = [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                 const BatchAxis& axis) { return shard_map_batch(shard_map_p, args, dims, params, axis); },
     .partial_eval = shard_map_partial_eval,
     .dce = shard_map_dce});

// Linear in the operands after num_residuals: the unknown half reverse mode records.
const Primitive linear_shard_map_p(
    "linear_shard_map",
    {.traits = kLinear | kCallsSubprogram,
     .num_outputs = -1,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& params) {
           int64_t r = params.get_int("num_residuals");
           if (r < 0 || static_cast<size_t>(r) > in.size())
             fail("linear_shard_map", "num_residuals=", r, " but there are ", in.size(), " operands");
           return shard_map_avals("linear_shard_map", in, params);
         },
     .impl = shard_map_impl,
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params& params) { return shard_map_jvp(linear_shard_map_p, primals, tangents, params); },
     .transpose = linear_shard_map_transpose,
     .batch = [](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                 const BatchAxis& axis) { return shard_map_batch(linear_shard_map_p, args, dims, params, axis); },
     .dce = shard_map_dce});

}  // namespace

// ---- the flat entry points ----

std::vector<Array> shard_map_flat(const FlatFn& f, std::span<const Array> args, const Mesh& mesh,
                                  std::span<const PartitionSpec> in_specs, std::span<const PartitionSpec> out_specs) {
  MeshInfo m(mesh.axis_names(), mesh.shape(), mesh.devices());
  if (in_specs.size() != args.size())
    fail("shard_map", "got ", in_specs.size(), " in_specs for ", args.size(), " array arguments");
  std::vector<Spec> in;
  std::vector<Aval> blocks;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string what = "argument " + std::to_string(i);
    in.push_back(spec_of(in_specs[i], m, what, args[i].aval()));
    blocks.push_back(block_aval("shard_map", args[i].aval(), in.back(), m, what));
  }
  JaxprRef body = restage(f, blocks, m, "shard_map");
  const size_t nout = body->jaxpr.outvars.size();
  if (out_specs.size() != 1 && out_specs.size() != nout)
    fail("shard_map", "got ", out_specs.size(), " out_specs for ", nout, " outputs");
  std::vector<Spec> out;
  const auto body_out = body->out_avals();
  for (size_t j = 0; j < nout; ++j)
    out.push_back(spec_of(out_specs.size() == 1 ? out_specs[0] : out_specs[j], m, "output " + std::to_string(j),
                          body_out[j]));
  Params p{{"name", std::string("shard_map")}};
  set_mesh(p, mesh);
  return jx::bind(shard_map_p, args, with_specs(p, body, in, out, m));
}

std::vector<Array> pmap_flat(const FlatFn& f, std::span<const Array> args,
                             std::span<const std::optional<int64_t>> in_axes,
                             std::span<const std::optional<int64_t>> out_axes, const std::string& axis_name,
                             const std::vector<Device>& devices) {
  // The mapped size, from the mapped arguments, which must agree.
  int64_t n = -1;
  std::vector<Array> moved;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_axes[i]) {
      moved.push_back(args[i]);
      continue;
    }
    const int64_t nd = args[i].ndim();
    int64_t ax = *in_axes[i];
    if (ax < -nd || ax >= nd) fail("pmap", "in_axes ", ax, " is out of range for argument ", i, " of type ", args[i].aval().str());
    if (ax < 0) ax += nd;
    const int64_t len = args[i].shape()[ax];
    if (n < 0) n = len;
    else if (len != n)
      fail("pmap", "mapped axes have inconsistent sizes: argument ", i, " of type ", args[i].aval().str(),
           " has size ", len, " along axis ", ax, " but others have ", n);
    moved.push_back(lax::batch_rules::move_axis(args[i], ax, 0));
  }
  if (n < 0) fail("pmap", "needs at least one mapped argument (an in_axes entry that is not jx::not_mapped)");
  // Across processes each process passes the slices of its own devices and the program
  // runs over every process's devices (the collectives span them all), as in JAX.
  std::vector<Device> devs = devices;
  if (devs.empty()) {
    std::vector<Device> local = jx::local_devices();
    if (jx::process_count() > 1) {
      if (n != static_cast<int64_t>(local.size()))
        fail("pmap", "across ", jx::process_count(), " processes each process maps its own devices: the mapped axis has size ", n,
             " but this process has ", local.size(), " devices (pass .devices to map over a subset)");
      devs = jx::devices();
    } else {
      if (n > static_cast<int64_t>(local.size()))
        fail("pmap", "the mapped axis has size ", n, " but this process has only ", local.size(),
             " devices (JX_NUM_CPU_DEVICES or jx::config::set_num_cpu_devices gives a CPU process more)");
      devs.assign(local.begin(), local.begin() + n);
    }
  } else {
    const int self = jx::process_index();
    const auto mine = std::count_if(devs.begin(), devs.end(), [&](const Device& d) { return d.process_index() == self; });
    if (mine != n)
      fail("pmap", "the mapped axis has size ", n, " but ", devs.size(), " devices were given",
           devs.size() == static_cast<size_t>(mine) ? std::string() : ", " + std::to_string(mine) + " of them this process's");
  }
  const std::string name = axis_name.empty() ? "_pmap" : axis_name;
  Mesh mesh(devs, name);
  std::vector<PartitionSpec> in_specs;
  for (size_t i = 0; i < args.size(); ++i) in_specs.push_back(in_axes[i] ? P(name) : PartitionSpec{});
  // The body sees one slice (the mapped axis squeezed) and returns its results with a
  // leading axis of 1 for mapped outputs; which are mapped is known once f is traced.
  std::vector<bool> out_mapped;
  size_t nout = 0;
  FlatFn body = [&](std::span<const Array> blocks) {
    std::vector<Array> xs;
    for (size_t i = 0; i < blocks.size(); ++i) xs.push_back(in_axes[i] ? lax::squeeze(blocks[i], {0}) : blocks[i]);
    std::vector<Array> outs = f(xs);
    nout = outs.size();
    if (out_axes.size() != 1 && out_axes.size() != nout)
      fail("pmap", "out_axes has ", out_axes.size(), " entries for ", nout, " outputs");
    out_mapped.clear();
    for (size_t j = 0; j < nout; ++j) {
      const bool mapped = (out_axes.size() == 1 ? out_axes[0] : out_axes[j]).has_value();
      out_mapped.push_back(mapped);
      if (mapped) outs[j] = lax::expand_dims(outs[j], {0});
    }
    return outs;
  };
  // out_specs need the output count: trace once through shard_map_flat with a spec per
  // output computed from out_mapped after tracing. shard_map_flat takes the specs after
  // tracing f, so a lazily filled list works: one spec for all when out_axes has one.
  std::vector<PartitionSpec> out_specs;
  if (out_axes.size() == 1) out_specs.push_back(out_axes[0] ? P(name) : PartitionSpec{});
  else
    for (const auto& ax : out_axes) out_specs.push_back(ax ? P(name) : PartitionSpec{});
  std::vector<Array> outs = shard_map_flat(body, moved, mesh, in_specs, out_specs);
  for (size_t j = 0; j < outs.size(); ++j) {
    const auto& ax = out_axes.size() == 1 ? out_axes[0] : out_axes[j];
    if (!ax) continue;
    int64_t want = *ax;
    const int64_t nd = outs[j].ndim();
    if (want < -nd || want >= nd) fail("pmap", "out_axes ", want, " is out of range for output ", j, " of rank ", nd);
    if (want < 0) want += nd;
    if (want != 0) outs[j] = lax::batch_rules::move_axis(outs[j], 0, want);
  }
  // pmap's shards: device k's is index k of the mapped axis (the per-device value), or
  // the whole of an unmapped output.
  std::vector<Device> mine;
  for (const Device& dev : devs)
    if (dev.process_index() == jx::process_index()) mine.push_back(dev);
  for (size_t j = 0; j < outs.size(); ++j) {
    const auto& ax = out_axes.size() == 1 ? out_axes[0] : out_axes[j];
    const Shape& shape = outs[j].shape();
    const int mapped = ax ? static_cast<int>(*ax < 0 ? *ax + static_cast<int64_t>(shape.size()) : *ax) : -1;
    std::vector<PartitionSpec::Entry> entries;
    for (int dim = 0; dim <= mapped; ++dim) entries.push_back(dim == mapped ? PartitionSpec::Entry(name) : none);
    auto record =
        std::make_shared<ShardingRecord>(ShardingRecord{NamedSharding{mesh, PartitionSpec(std::move(entries))}, mapped});
    for (size_t k = 0; k < mine.size(); ++k) {
      ShardPlace place{mine[k], {}};
      for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim)
        place.index.push_back(dim == mapped ? std::pair<int64_t, int64_t>(static_cast<int64_t>(k), static_cast<int64_t>(k) + 1)
                                            : std::pair<int64_t, int64_t>(0, shape[dim]));
      record->places.push_back(std::move(place));
    }
    outs[j] = with_sharding(outs[j], std::move(record));
  }
  return outs;
}

}  // namespace jx::detail
