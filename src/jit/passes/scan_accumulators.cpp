#include "jit/passes/scan_accumulators.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "jx/error.h"
#include "lax/control_flow/scan_rules.h"
#include "lax/primitives.h"

namespace jx::compiler {
namespace {

constexpr int64_t kMinProductOverFactors = 4;
constexpr int64_t kMaxStackBytes = int64_t{256} << 20;

// An accumulator carry of a scan body: carry `k` whose output is c + outer(a, b), or
// c + transpose(outer(a, b)) when `transposed`.
struct Accumulator {
  size_t carry = 0;
  Atom a, b;
  bool transposed = false;
};

bool is_outer_product(const Equation& e) {
  return e.primitive == &lax::dot_general_p && e.params.get_ints("lhs_contracting_dimensions").empty() &&
         e.params.get_ints("lhs_batch_dimensions").empty() && e.inputs.at(0).aval().ndim() == 1 &&
         e.inputs.at(1).aval().ndim() == 1;
}

// The accumulators of a body with `nc` constants and `nk` carries, found in one walk.
std::vector<Accumulator> find_accumulators(const Jaxpr& body, size_t nc, size_t nk, int64_t length) {
  std::unordered_map<int64_t, const Equation*> def;
  std::unordered_map<int64_t, int> uses;
  for (const Equation& e : body.eqns) {
    for (const Var& v : e.outputs) def[v.id] = &e;
    for (const Atom& a : e.inputs)
      if (a.is_var()) ++uses[a.var().id];
  }
  for (const Atom& a : body.outvars)
    if (a.is_var()) ++uses[a.var().id];
  auto defined_by = [&](const Atom& a) -> const Equation* {
    if (!a.is_var()) return nullptr;
    auto it = def.find(a.var().id);
    return it == def.end() ? nullptr : it->second;
  };
  std::vector<Accumulator> found;
  for (size_t k = 0; k < nk; ++k) {
    const Var& c = body.invars[nc + k];
    const Equation* sum = defined_by(body.outvars[k]);
    if (!sum || sum->primitive != &lax::add_p || uses[c.id] != 1 || uses[body.outvars[k].var().id] != 1) continue;
    const int side = sum->inputs[0].is_var() && sum->inputs[0].var().id == c.id   ? 1
                     : sum->inputs[1].is_var() && sum->inputs[1].var().id == c.id ? 0
                                                                                 : -1;
    if (side < 0) continue;
    const Equation* term = defined_by(sum->inputs[static_cast<size_t>(side)]);
    bool transposed = false;
    if (term && term->primitive == &lax::transpose_p && term->params.get_ints("permutation") == std::vector<int64_t>{1, 0}) {
      transposed = true;
      term = defined_by(term->inputs[0]);
    }
    if (!term || !is_outer_product(*term)) continue;
    const Aval& out = sum->outputs[0].aval;
    const Aval &a = term->inputs[0].aval(), &b = term->inputs[1].aval();
    // Strong types only, so the product and the sum after the loop type as the carry does.
    if (!(out == c.aval) || c.aval.weak_type || a.weak_type || b.weak_type || a.dtype != out.dtype ||
        b.dtype != out.dtype || term->outputs[0].aval.dtype != out.dtype)
      continue;
    const int64_t factors = a.size() + b.size();
    if (out.size() < kMinProductOverFactors * factors) continue;
    if (length > 0 && factors * static_cast<int64_t>(itemsize(out.dtype)) > kMaxStackBytes / length) continue;
    found.push_back({k, term->inputs[0], term->inputs[1], transposed});
  }
  return found;
}

Params dot_params(DType dtype) {
  return Params{{"lhs_contracting_dimensions", std::vector<int64_t>{0}},
                {"rhs_contracting_dimensions", std::vector<int64_t>{0}},
                {"lhs_batch_dimensions", std::vector<int64_t>{}},
                {"rhs_batch_dimensions", std::vector<int64_t>{}},
                {"preferred_element_type", dtype}};
}

// `v` without the carries marked in `hoisted`, the carries starting at v[first].
template <class T>
std::vector<T> without_hoisted(const std::vector<T>& v, size_t first, const std::vector<bool>& hoisted) {
  std::vector<T> kept;
  for (size_t i = 0; i < v.size(); ++i)
    if (i < first || i >= first + hoisted.size() || !hoisted[i - first]) kept.push_back(v[i]);
  return kept;
}

// Rewrites scan equation `e` (appending it and what follows it to `out`); false when it
// has no accumulator.
bool rewrite_scan(const Equation& e, std::vector<Equation>& out, PassContext& ctx) {
  const detail::ScanParams p = detail::ScanParams::from(e.params);
  const Jaxpr& body = p.body->jaxpr;
  const size_t nc = p.consts(), nk = p.carry();
  std::vector<Accumulator> acc = find_accumulators(body, nc, nk, p.length);
  if (acc.empty()) return false;
  std::vector<bool> hoisted(nk, false);
  for (const Accumulator& x : acc) hoisted[x.carry] = true;

  // The body without those carries, and with each one's two factors as extra ys.
  auto new_body = std::make_shared<ClosedJaxpr>(*p.body);
  Jaxpr& nb = new_body->jaxpr;
  nb.invars = without_hoisted(body.invars, nc, hoisted);
  nb.outvars = without_hoisted(body.outvars, 0, hoisted);
  // Each factor's stack over the steps: the scan's own xs operand when the factor is a
  // row of it, else a new y of the body (once per value).
  std::unordered_map<int64_t, Atom> stack_of_var;
  std::vector<Var> new_ys;
  auto stack_of = [&](const Atom& f) -> Atom {
    if (f.is_var()) {
      for (size_t i = nc + nk; i < body.invars.size(); ++i)
        if (body.invars[i].id == f.var().id) return e.inputs[i];
      if (auto it = stack_of_var.find(f.var().id); it != stack_of_var.end()) return it->second;
    }
    Aval s = f.aval();
    s.shape.insert(s.shape.begin(), p.length);
    Var stacked = ctx.fresh_var(s);
    nb.outvars.push_back(f);
    new_ys.push_back(stacked);
    if (f.is_var()) stack_of_var.emplace(f.var().id, Atom(stacked));
    return Atom(stacked);
  };
  std::vector<std::pair<Atom, Atom>> stacks;
  for (const Accumulator& x : acc) {
    Atom a = stack_of(x.a);
    stacks.emplace_back(a, stack_of(x.b));
  }
  // The sums go (they read the removed carries); the products they summed are left for
  // the body's own dce when it compiles.
  std::vector<int64_t> sums;
  for (const Accumulator& x : acc) sums.push_back(body.outvars[x.carry].var().id);
  std::erase_if(nb.eqns, [&](const Equation& q) {
    return q.outputs.size() == 1 && std::find(sums.begin(), sums.end(), q.outputs[0].id) != sums.end();
  });

  // The equation: the same operands without the hoisted inits; outputs without their
  // carries, plus the stacked factors.
  Equation scan = e;
  scan.inputs = without_hoisted(e.inputs, nc, hoisted);
  scan.outputs = without_hoisted(e.outputs, 0, hoisted);
  scan.outputs.insert(scan.outputs.end(), new_ys.begin(), new_ys.end());
  scan.params = p.with(new_body, nc, nk - acc.size()).to_params();
  out.push_back(std::move(scan));

  // After the loop: c_T = c_0 + A^T B (or B^T A for the transposed sum).
  for (size_t i = 0; i < acc.size(); ++i) {
    const Accumulator& x = acc[i];
    const Var& final_carry = e.outputs[x.carry];
    const Atom& init = e.inputs[nc + x.carry];
    const auto& [a_stack, b_stack] = stacks[i];
    Var product = ctx.fresh_var(Aval{final_carry.aval.shape, final_carry.aval.dtype, false});
    out.push_back(Equation{&lax::dot_general_p,
                           {x.transposed ? b_stack : a_stack, x.transposed ? a_stack : b_stack},
                           {product},
                           dot_params(final_carry.aval.dtype)});
    out.push_back(Equation{&lax::add_p, {init, Atom(product)}, {final_carry}, Params{}});
    ctx.note(detail::cat("scan: carry ", x.carry, " (", final_carry.aval.str(),
                         ") sums outer products: its factors are stacked (rows of xs are read in place) and "
                         "multiplied after the loop"));
  }
  return true;
}

}  // namespace

bool hoist_scan_accumulators(ClosedJaxpr& program, PassContext& ctx) {
  Jaxpr& j = program.jaxpr;
  bool changed = false;
  std::vector<Equation> out;
  out.reserve(j.eqns.size());
  for (Equation& e : j.eqns) {
    if (e.primitive == &detail::scan_p && rewrite_scan(e, out, ctx)) {
      changed = true;
      continue;
    }
    out.push_back(std::move(e));
  }
  j.eqns = std::move(out);
  return changed;
}

const Pass kScanAccumulatorsPass{"scan_accumulators", &hoist_scan_accumulators};

}  // namespace jx::compiler
