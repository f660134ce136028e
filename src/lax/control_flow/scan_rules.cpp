// The scan primitive's transformation rules, after JAX's (lax/control_flow/loops.py):
// each applies the jaxpr-level layer (jaxpr_transforms.h) to the body. Where a carry's
// role (has a tangent, is batched, is unknown, is used) depends on what the body does
// with the others, the rule iterates to a fixpoint first: the body maps carries to
// carries, so the property must hold of a carry's input exactly when of its output.
// Transformed bodies are memoized per (body, flags), as call_rules does for calls.
#include <algorithm>
#include <unordered_set>

#include "jx/error.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/control_flow/scan_rules.h"
#include "transforms/ad_util.h"
#include "transforms/call_rules.h"
#include "transforms/effects.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/staging.h"
#include "transforms/subprogram_cache.h"

namespace jx::detail {
namespace {

std::vector<bool> join(std::initializer_list<std::vector<bool>> parts) {
  std::vector<bool> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
std::vector<bool> part(const std::vector<bool>& v, size_t begin, size_t count) {
  return std::vector<bool>(v.begin() + static_cast<std::ptrdiff_t>(begin),
                           v.begin() + static_cast<std::ptrdiff_t>(begin + count));
}
size_t count(const std::vector<bool>& v) {
  size_t n = 0;
  for (bool b : v) n += b;
  return n;
}
// a |= b elementwise; whether a changed.
bool merge(std::vector<bool>& a, const std::vector<bool>& b) {
  bool changed = false;
  for (size_t i = 0; i < a.size(); ++i)
    if (b[i] && !a[i]) a[i] = changed = true;
  return changed;
}
// [begin, begin + n)
std::vector<size_t> range(size_t begin, size_t n) {
  std::vector<size_t> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = begin + i;
  return r;
}
void append(std::vector<size_t>& a, const std::vector<size_t>& b) { a.insert(a.end(), b.begin(), b.end()); }

std::string cache_key(const ScanParams& p, std::initializer_list<std::vector<bool>> masks) {
  std::string key = cat(p.num_consts, ",", p.num_carry);
  for (const auto& m : masks) {
    key += '/';
    key += mask_str(m);
  }
  return key;
}

// A body with its constants lifted to leading inputs (their values in `consts`).
struct LiftedBody {
  JaxprRef body;
  std::vector<Array> consts;
};
LiftedBody lift(ClosedJaxpr program) {
  LiftedBody b;
  b.body = body_with_consts_first(std::move(program), &b.consts);
  return b;
}

// A program with reordered inputs and outputs: input k is the old input in_order[k],
// output k the old output out_order[k].
ClosedJaxpr permuted(ClosedJaxpr p, const std::vector<size_t>& in_order, const std::vector<size_t>& out_order) {
  std::vector<Var> invars;
  for (size_t i : in_order) invars.push_back(p.jaxpr.invars[i]);
  std::vector<Atom> outvars;
  for (size_t i : out_order) outvars.push_back(p.jaxpr.outvars[i]);
  p.jaxpr.invars = std::move(invars);
  p.jaxpr.outvars = std::move(outvars);
  return p;
}

// A new body staged from `fn` (which evaluates the programs it combines), apart from
// any active transformation.
ClosedJaxpr stage_body(const FlatFn& fn, std::span<const Aval> avals) {
  TraceScope isolated(nullptr);
  return stage_flat(fn, avals, "scan");
}

// ---- jvp: a scan of jvp_jaxpr(body) ----

struct JvpBody {
  LiftedBody lifted;  // [consts, dconsts, carry, dcarry, xs, dxs] -> [carry, dcarry, ys, dys]
  std::vector<bool> carry_nz, ys_nz;
};

std::shared_ptr<const JvpBody> jvp_body(const ScanParams& p, const std::vector<bool>& const_nz,
                                        std::vector<bool> carry_nz, const std::vector<bool>& xs_nz) {
  static auto* cache = new SubprogramCache<std::shared_ptr<const JvpBody>>;
  return cache->get(p.body, cache_key(p, {const_nz, carry_nz, xs_nz}), [&] {
    const size_t nc = p.consts(), nk = p.carry(), ny = p.ys(), n = nc + nk + p.xs();
    // A carry has a tangent if its init has one or the body gives its output one.
    JvpJaxpr j;
    do {
      j = jvp_jaxpr(*p.body, join({const_nz, carry_nz, xs_nz}), join({carry_nz, std::vector<bool>(ny, false)}));
    } while (merge(carry_nz, part(j.out_nonzero, 0, nk)));
    const size_t a = count(const_nz), b = count(carry_nz), c = count(xs_nz);
    std::vector<size_t> in_order = range(0, nc), out_order = range(0, nk);
    append(in_order, range(n, a));
    append(in_order, range(nc, nk));
    append(in_order, range(n + a, b));
    append(in_order, range(nc + nk, n - nc - nk));
    append(in_order, range(n + a + b, c));
    append(out_order, range(nk + ny, b));
    append(out_order, range(nk, ny));
    append(out_order, range(nk + ny + b, j.jaxpr.jaxpr.outvars.size() - nk - ny - b));
    auto out = std::make_shared<JvpBody>();
    out->lifted = lift(permuted(std::move(j.jaxpr), in_order, out_order));
    out->carry_nz = std::move(carry_nz);
    out->ys_nz = part(j.out_nonzero, nk, ny);
    return std::shared_ptr<const JvpBody>(out);
  });
}

}  // namespace

JvpResult scan_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const ScanParams p = ScanParams::from(params);
  const size_t nc = p.consts(), nk = p.carry(), nx = p.xs(), ny = p.ys();
  std::vector<bool> nz(primals.size());
  for (size_t i = 0; i < nz.size(); ++i) nz[i] = tangents[i].valid();
  auto jb = jvp_body(p, part(nz, 0, nc), part(nz, nc, nk), part(nz, nc + nk, nx));
  std::vector<Array> in = jb->lifted.consts;
  auto add_section = [&](size_t begin, size_t n, const std::vector<bool>& with_tangent) {
    in.insert(in.end(), primals.begin() + static_cast<std::ptrdiff_t>(begin),
              primals.begin() + static_cast<std::ptrdiff_t>(begin + n));
    for (size_t i = 0; i < n; ++i)
      if (with_tangent[i]) in.push_back(ad::instantiate(tangents[begin + i], tangent_aval(primals[begin + i].aval())));
  };
  add_section(0, nc, part(nz, 0, nc));
  const size_t num_consts = in.size();
  add_section(nc, nk, jb->carry_nz);
  add_section(nc + nk, nx, part(nz, nc + nk, nx));
  const size_t b = count(jb->carry_nz);
  std::vector<Array> outs = bind_scan(in, p.with(jb->lifted.body, num_consts, nk + b));
  JvpResult r;
  r.tangents_out.resize(nk + ny);
  for (size_t k = 0, t = nk; k < nk; ++k) {
    r.primals_out.push_back(outs[k]);
    if (jb->carry_nz[k]) r.tangents_out[k] = outs[t++];
  }
  for (size_t k = 0, t = nk + b + ny; k < ny; ++k) {
    r.primals_out.push_back(outs[nk + b + k]);
    if (jb->ys_nz[k]) r.tangents_out[nk + k] = outs[t++];
  }
  return r;
}

// ---- vmap: a scan of batch_jaxpr(body); xs keep axis 0 as the scan axis ----
namespace {

struct BatchBody {
  LiftedBody lifted;
  std::vector<bool> carry_b, ys_b;
};

// `slice_dims`: where the consts', and the x slices', batch axes are; carries are batched at 0.
std::shared_ptr<const BatchBody> batch_body(const ScanParams& p, const BatchAxis& axis,
                                            const std::vector<int64_t>& const_dims, std::vector<bool> carry_b,
                                            const std::vector<int64_t>& x_dims) {
  static auto* cache = new SubprogramCache<std::shared_ptr<const BatchBody>>;
  std::string key = cat(axis.size, "/", axis.name, "/", cache_key(p, {carry_b}));
  for (int64_t d : const_dims) key += cat(",", d);
  key += ";";
  for (int64_t d : x_dims) key += cat(",", d);
  return cache->get(p.body, key, [&] {
    const size_t nk = p.carry(), ny = p.ys();
    // A carry is batched if its init is or the body batches its output.
    BatchedJaxpr bj;
    do {
      std::vector<int64_t> dims = const_dims;
      for (bool b : carry_b) dims.push_back(b ? 0 : kNotMapped);
      dims.insert(dims.end(), x_dims.begin(), x_dims.end());
      bj = batch_jaxpr(*p.body, axis.size, dims, join({carry_b, std::vector<bool>(ny, false)}), axis.name);
    } while (merge(carry_b, part(bj.out_batched, 0, nk)));
    auto out = std::make_shared<BatchBody>();
    out->lifted = lift(std::move(bj.jaxpr));
    out->carry_b = std::move(carry_b);
    out->ys_b = part(bj.out_batched, nk, ny);
    return std::shared_ptr<const BatchBody>(out);
  });
}

}  // namespace

BatchResult scan_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                       const BatchAxis& axis) {
  const ScanParams p = ScanParams::from(params);
  const size_t nc = p.consts(), nk = p.carry(), nx = p.xs(), ny = p.ys();
  std::vector<int64_t> const_dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(nc)), x_dims;
  std::vector<bool> carry_b;
  for (size_t k = 0; k < nk; ++k) carry_b.push_back(dims[nc + k] != kNotMapped);
  std::vector<Array> xs;
  for (size_t k = 0; k < nx; ++k) {
    const Array& x = args[nc + nk + k];
    const int64_t d = dims[nc + nk + k];
    // A batch axis at 0 moves to 1: axis 0 stays the one scanned over.
    xs.push_back(d == 0 ? lax::batch_rules::move_axis(x, 0, 1) : x);
    x_dims.push_back(d == kNotMapped ? kNotMapped : d == 0 ? 0 : d - 1);
  }
  auto bb = batch_body(p, axis, const_dims, carry_b, x_dims);
  std::vector<Array> in = bb->lifted.consts;
  in.insert(in.end(), args.begin(), args.begin() + static_cast<std::ptrdiff_t>(nc));
  const size_t num_consts = in.size();
  for (size_t k = 0; k < nk; ++k)
    in.push_back(bb->carry_b[k] ? lax::batch_rules::batch_to_front(args[nc + k], dims[nc + k], axis.size)
                                : args[nc + k]);
  in.insert(in.end(), xs.begin(), xs.end());
  BatchResult r{bind_scan(in, p.with(bb->lifted.body, num_consts, nk)), {}};
  for (size_t k = 0; k < nk; ++k) r.dims.push_back(bb->carry_b[k] ? 0 : kNotMapped);
  for (size_t k = 0; k < ny; ++k) r.dims.push_back(bb->ys_b[k] ? 1 : kNotMapped);  // stacked before the batch axis
  return r;
}

// ---- partial evaluation (JAX's _scan_partial_eval) ----
namespace {

// A scan split in two: the known scan computes the known outputs and, as extra ys, the
// residuals that vary from step to step; the unknown scan reads those as xs, reads the
// known xs it needs directly, and recomputes each loop-invariant residual from the known
// consts inside its body, so neither is stacked `length` times.
struct ScanSplit {
  LiftedBody known, unknown;
  ScanParams known_params, unknown_params;
  bool has_known = false;
  std::vector<size_t> known_operands, unknown_operands;
  std::vector<bool> out_unknowns;
  size_t num_residuals = 0;
};

enum class Residual { Invariant, Stacked, KnownXs };

// What each residual of the known body (its outputs after the first num_known_outs) is:
// a known x itself (read by the unknown scan directly), a value that varies from step
// to step (it reads a carry or an x: stacked), or a function of the known consts alone.
// `known_ops`: the operand index of each known-body input.
std::vector<Residual> classify_residuals(const Jaxpr& k, size_t num_known_outs, const std::vector<size_t>& known_ops,
                                         size_t nc, size_t nk, std::vector<size_t>* xs_ops) {
  std::unordered_set<int64_t> varying;
  std::unordered_map<int64_t, size_t> input_op;  // known-body input id -> operand index
  for (size_t i = 0; i < k.invars.size(); ++i) {
    input_op[k.invars[i].id] = known_ops[i];
    if (known_ops[i] >= nc) varying.insert(k.invars[i].id);
  }
  for (const Equation& e : k.eqns) {
    bool reads_varying = false;
    for (const Atom& a : e.inputs) reads_varying |= a.is_var() && varying.count(a.var().id);
    if (reads_varying)
      for (const Var& v : e.outputs) varying.insert(v.id);
  }
  std::vector<Residual> kinds;
  for (size_t i = num_known_outs; i < k.outvars.size(); ++i) {
    const Atom& a = k.outvars[i];
    auto op = a.is_var() ? input_op.find(a.var().id) : input_op.end();
    if (op != input_op.end() && op->second >= nc + nk) {
      kinds.push_back(Residual::KnownXs);
      xs_ops->push_back(op->second);
    } else {
      kinds.push_back(a.is_var() && varying.count(a.var().id) ? Residual::Stacked : Residual::Invariant);
    }
  }
  return kinds;
}

std::shared_ptr<const ScanSplit> split_scan(const ScanParams& p, const std::vector<bool>& unknowns) {
  static auto* cache = new SubprogramCache<std::shared_ptr<const ScanSplit>>;
  return cache->get(p.body, cache_key(p, {unknowns}), [&] {
    const size_t nc = p.consts(), nk = p.carry(), nx = p.xs(), ny = p.ys(), n = nc + nk + nx;
    // A carry is unknown if its init is or the body makes its output unknown.
    std::vector<bool> carry_uk = part(unknowns, nc, nk);
    PartialEvalJaxpr pe;
    do {
      pe = partial_eval_jaxpr(*p.body, join({part(unknowns, 0, nc), carry_uk, part(unknowns, nc + nk, nx)}),
                              join({carry_uk, std::vector<bool>(ny, false)}));
    } while (merge(carry_uk, part(pe.out_unknowns, 0, nk)));
    const std::vector<bool> body_uk = join({part(unknowns, 0, nc), carry_uk, part(unknowns, nc + nk, nx)});
    std::vector<size_t> known_ops, unknown_ops;  // operand index of each known / unknown body input
    for (size_t i = 0; i < n; ++i) (body_uk[i] ? unknown_ops : known_ops).push_back(i);

    const Jaxpr& k = pe.known.jaxpr;
    const size_t num_known_outs = k.outvars.size() - pe.num_residuals;
    std::vector<size_t> xs_residual_ops;
    const std::vector<Residual> kind = classify_residuals(k, num_known_outs, known_ops, nc, nk, &xs_residual_ops);
    // The known scan's outputs (the known ones and the stacked residuals), and the
    // loop-invariant residuals.
    std::vector<bool> known_scan_outputs(k.outvars.size(), true), invariant(k.outvars.size(), false);
    for (size_t r = 0; r < pe.num_residuals; ++r) {
      known_scan_outputs[num_known_outs + r] = kind[r] == Residual::Stacked;
      invariant[num_known_outs + r] = kind[r] == Residual::Invariant;
    }
    auto used_consts = [](const ClosedJaxpr& program, const DcedJaxpr& d) {
      ClosedJaxpr out{d.jaxpr, {}};
      for (size_t i = 0; i < program.consts.size(); ++i)
        if (d.used_constvars[i]) out.consts.push_back(program.consts[i]);
      return out;
    };

    auto s = std::make_shared<ScanSplit>();
    s->out_unknowns = pe.out_unknowns;
    s->num_residuals = count(known_scan_outputs) - num_known_outs;
    // The known scan: [consts, carry, xs] known -> [known carry, known ys, stacked residuals].
    DcedJaxpr kd = dce_jaxpr(k, known_scan_outputs, std::vector<bool>(k.invars.size(), true));
    s->known = lift(used_consts(pe.known, kd));
    s->has_known = !kd.jaxpr.outvars.empty();
    size_t known_consts = 0;
    for (size_t op : known_ops) known_consts += op < nc;
    s->known_params = p.with(s->known.body, s->known.consts.size() + known_consts, nk - count(carry_uk));
    s->known_operands = range(0, s->known.consts.size());
    for (size_t op : known_ops) s->known_operands.push_back(s->known.consts.size() + op);

    // The loop-invariant residuals, as a program of the known consts. Effects without
    // results (a debug print) stay in the known scan, once per iteration: they are not
    // hoisted with the invariants (dce would keep them, and they read the carry).
    Jaxpr k_values = k;
    std::erase_if(k_values.eqns, [](const Equation& e) { return e.outputs.empty() && has_effects(e); });
    DcedJaxpr gd = dce_jaxpr(k_values, invariant);
    const ClosedJaxpr g = used_consts(pe.known, gd);
    std::vector<size_t> g_ops;
    for (size_t i = 0; i < k.invars.size(); ++i)
      if (gd.used_inputs[i]) {
        JX_CHECK(known_ops[i] < nc, "scan", "a loop-invariant residual reads a carry or an x");
        g_ops.push_back(known_ops[i]);
      }
    // The unknown scan: [g's consts, unknown consts | unknown carry | unknown xs, stacked
    // residuals, known xs read].
    const Jaxpr& u = pe.unknown.jaxpr;
    const size_t num_uk_inputs = unknown_ops.size();
    std::vector<Aval> avals;
    for (size_t i = 0; i < g_ops.size(); ++i) avals.push_back(g.jaxpr.invars[i].aval);
    for (size_t i = 0; i < num_uk_inputs; ++i) avals.push_back(u.invars[pe.num_residuals + i].aval);
    for (Residual want : {Residual::Stacked, Residual::KnownXs})
      for (size_t r = 0; r < pe.num_residuals; ++r)
        if (kind[r] == want) avals.push_back(u.invars[r].aval);
    FlatFn unknown_body = [&](std::span<const Array> in) {
      std::span<const Array> g_in = in.first(g_ops.size()), uk_in = in.subspan(g_ops.size(), num_uk_inputs);
      std::vector<Array> inv = eval_jaxpr(g, g_in);
      std::vector<Array> u_in;
      size_t next_inv = 0, next = g_ops.size() + num_uk_inputs, next_xs = next + s->num_residuals;
      for (size_t r = 0; r < pe.num_residuals; ++r)
        u_in.push_back(kind[r] == Residual::Invariant ? inv[next_inv++]
                       : kind[r] == Residual::Stacked ? in[next++]
                                                      : in[next_xs++]);
      u_in.insert(u_in.end(), uk_in.begin(), uk_in.end());
      return eval_jaxpr(pe.unknown, u_in);
    };
    s->unknown = lift(stage_body(unknown_body, avals));
    // Operands index [unknown consts..., residuals..., the scan's operands...].
    const size_t nu = s->unknown.consts.size(), operand0 = nu + s->num_residuals;
    size_t unknown_consts = nu + g_ops.size();
    s->unknown_operands = range(0, nu);
    for (size_t op : g_ops) s->unknown_operands.push_back(operand0 + op);
    for (size_t op : unknown_ops) {
      s->unknown_operands.push_back(operand0 + op);
      unknown_consts += op < nc;
    }
    append(s->unknown_operands, range(nu, s->num_residuals));
    for (size_t op : xs_residual_ops) s->unknown_operands.push_back(operand0 + op);
    s->unknown_params = p.with(s->unknown.body, unknown_consts, count(carry_uk));
    return std::shared_ptr<const ScanSplit>(s);
  });
}

}  // namespace

PartialEvalSplit scan_partial_eval(const std::vector<bool>& unknowns, const Params& params) {
  auto split = split_scan(ScanParams::from(params), unknowns);
  PartialEvalSplit s;
  s.known = split->has_known ? &scan_p : nullptr;
  s.known_params = split->known_params.to_params();
  s.known_consts = split->known.consts;
  s.known_operands = split->known_operands;
  s.unknown = &scan_p;
  s.unknown_params = split->unknown_params.to_params();
  s.unknown_consts = split->unknown.consts;
  s.unknown_operands = split->unknown_operands;
  s.out_unknowns = split->out_unknowns;
  s.num_residuals = split->num_residuals;
  return s;
}

// ---- transpose: a reverse scan of transpose_jaxpr(body) ----
namespace {

// [consts, non-linear consts | const ct accumulators, carry cts | ys cts, non-linear xs]
//   -> [accumulators + this step's const cts, carry-in cts | linear xs cts]
std::shared_ptr<const LiftedBody> transpose_body(const ScanParams& p, const std::vector<bool>& const_lin,
                                                 const std::vector<bool>& xs_lin, const std::vector<bool>& ys_ct) {
  static auto* cache = new SubprogramCache<std::shared_ptr<const LiftedBody>>;
  return cache->get(p.body, cache_key(p, {const_lin, xs_lin, ys_ct}), [&] {
    const size_t nc = p.consts(), nk = p.carry(), nx = p.xs();
    const Jaxpr& j = p.body->jaxpr;
    const ClosedJaxpr t =
        transpose_jaxpr(*p.body, join({const_lin, std::vector<bool>(nk, true), xs_lin}),
                        join({std::vector<bool>(nk, true), ys_ct}));
    std::vector<Aval> avals;
    for (size_t i = 0; i < nc; ++i)
      if (!const_lin[i]) avals.push_back(j.invars[i].aval);
    for (size_t i = 0; i < nc; ++i)
      if (const_lin[i]) avals.push_back(tangent_aval(j.invars[i].aval));
    for (size_t k = 0; k < nk; ++k) avals.push_back(tangent_aval(j.outvars[k].aval()));
    for (size_t k = 0; k < ys_ct.size(); ++k)
      if (ys_ct[k]) avals.push_back(tangent_aval(j.outvars[nk + k].aval()));
    for (size_t k = 0; k < nx; ++k)
      if (!xs_lin[k]) avals.push_back(j.invars[nc + nk + k].aval);
    const size_t a = nc - count(const_lin), b = count(const_lin), e = count(ys_ct), f = nx - count(xs_lin);
    FlatFn body = [&](std::span<const Array> in) {
      // transpose_jaxpr takes [non-linear inputs in order, output cts].
      std::vector<Array> t_in(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(a));
      t_in.insert(t_in.end(), in.end() - static_cast<std::ptrdiff_t>(f), in.end());
      t_in.insert(t_in.end(), in.begin() + static_cast<std::ptrdiff_t>(a + b),
                  in.begin() + static_cast<std::ptrdiff_t>(a + b + nk + e));
      std::vector<Array> cts = eval_jaxpr(t, t_in);  // [linear consts, carry, linear xs]
      for (size_t i = 0; i < b; ++i) cts[i] = lax::add(in[a + i], cts[i]);
      return cts;
    };
    return std::make_shared<const LiftedBody>(lift(stage_body(body, avals)));
  });
}

}  // namespace

// Linear in its carries and in the consts and xs that are linear here; the others
// (residuals) are evaluated forward in each step. A carry whose init is a known value (a
// zero tangent materialized by the jvp rule) is treated as linear; its ct is dropped.
std::vector<Array> scan_transpose(std::span<const Array> cts, std::span<const TransposeOperand> operands,
                                  const Params& params) {
  const ScanParams p = ScanParams::from(params);
  const size_t nc = p.consts(), nk = p.carry(), nx = p.xs(), ny = p.ys();
  std::vector<bool> const_lin, xs_lin, ys_ct;
  for (size_t i = 0; i < nc; ++i) const_lin.push_back(operands[i].is_linear());
  for (size_t k = 0; k < nx; ++k) xs_lin.push_back(operands[nc + nk + k].is_linear());
  for (size_t k = 0; k < ny; ++k) ys_ct.push_back(cts[nk + k].valid());
  auto tb = transpose_body(p, const_lin, xs_lin, ys_ct);
  std::vector<Array> in = tb->consts;
  for (size_t i = 0; i < nc; ++i)
    if (!const_lin[i]) in.push_back(operands[i].value);
  const size_t num_consts = in.size();
  for (size_t i = 0; i < nc; ++i)
    if (const_lin[i]) in.push_back(ad::zeros(tangent_aval(operands[i].aval)));
  for (size_t k = 0; k < nk; ++k) in.push_back(ad::instantiate(cts[k], tangent_aval(operands[nc + k].aval)));
  for (size_t k = 0; k < ny; ++k)
    if (ys_ct[k]) in.push_back(cts[nk + k]);
  for (size_t k = 0; k < nx; ++k)
    if (!xs_lin[k]) in.push_back(operands[nc + nk + k].value);
  const size_t b = count(const_lin);
  ScanParams tp = p.with(tb->body, num_consts, b + nk);
  tp.reverse = !p.reverse;
  std::vector<Array> outs = bind_scan(in, tp);
  std::vector<Array> result(operands.size());
  for (size_t i = 0, next = 0; i < nc; ++i)
    if (const_lin[i]) result[i] = outs[next++];
  for (size_t k = 0; k < nk; ++k)
    if (operands[nc + k].is_linear()) result[nc + k] = outs[b + k];
  for (size_t k = 0, next = b + nk; k < nx; ++k)
    if (xs_lin[k]) result[nc + nk + k] = outs[next++];
  return result;
}

// ---- dce: prune the body, keeping a carry while its output or the body needs it ----

DceEquationResult scan_dce(const std::vector<bool>& used_outputs, Equation& eqn) {
  const ScanParams p = ScanParams::from(eqn.params);
  const size_t nc = p.consts(), nk = p.carry(), nx = p.xs();
  std::vector<bool> used_carry = part(used_outputs, 0, nk);
  const std::vector<bool> used_ys = part(used_outputs, nk, p.ys());
  DcedJaxpr d;
  do {
    d = dce_jaxpr(p.body->jaxpr, join({used_carry, used_ys}),
                  join({std::vector<bool>(nc, false), used_carry, std::vector<bool>(nx, false)}));
  } while (merge(used_carry, part(d.used_inputs, nc, nk)));
  const bool outputs_dropped = count(used_carry) + count(used_ys) < eqn.outputs.size();
  if (!d.changed && !outputs_dropped) return DceEquationResult{d.used_inputs, false};
  auto pruned = std::make_shared<ClosedJaxpr>();
  pruned->jaxpr = std::move(d.jaxpr);
  eqn.params = p.with(pruned, count(part(d.used_inputs, 0, nc)), count(used_carry)).to_params();
  drop_unused_inputs_and_outputs(eqn, d.used_inputs, join({used_carry, used_ys}));
  return DceEquationResult{d.used_inputs, true};
}

}  // namespace jx::detail
