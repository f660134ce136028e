// Fusion, in the order XLA's passes do it:
//   0. duplicate cheap producers (index maps, converts) read by several fusible consumers,
//      so each consumer reads through its own copy instead of a materialized array;
//   1. producer -> consumer: consumers visited last to first absorb the loop groups that
//      produce their operands (and a dot_general into its elementwise epilogue);
//   2. siblings: groups reading the same array over the same iteration space merge into
//      one multi-output fusion (the array is read once);
//   1 and 2 repeat while they change something, a few rounds at most (sum(e) and max(e)
//   become siblings, and then together absorb e's producer);
//   2b. rows: a row reduction (over trailing axes) merges with the work that reads its
//   result back through a broadcast (x - max(x), e / sum(e)), the reductions that follow
//   and the work over the rows between them, into one "rows" fusion that runs each row's
//   reductions and elementwise outputs while the row is in cache (softmax, logsumexp);
//   a reduction that keeps the innermost axis (over the leading ones: x - mean(x, 0))
//   seeds one too, run as blocks of columns;
//   3. groups of index maps alone stay runtime calls (eager returns views, no copy); each
//      other group becomes one `fusion` equation, emitted in a topological order of the
//      group graph, which merging keeps acyclic (every merge checks reachability).
// Every group is a set of equations of the original program; equations the kernels
// cannot compute stay as they are (runtime calls) and are groups of their own.
#include "jit/passes/fusion.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/ir_internal.h"
#include "jit/fusion_primitive.h"
#include "jit/kernel_support.h"
#include "jit/passes/rewrite.h"
#include "transforms/call_rules.h"
#include "lax/primitives.h"

namespace jx::compiler {
namespace {

enum class Role {
  kOther,      // runtime call
  kScalar,     // elementwise op of a loop
  kIndex,      // index map of a loop
  kReduction,  // ends a reduction fusion
  kDot,        // dot_general that may take an elementwise epilogue
  kScalarLoop, // a while loop or scan on scalars: a "scalar_loop" kernel of its own
};

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::vector<int64_t> sorted_axes(const Equation& e) {
  std::vector<int64_t> axes = e.params.get_ints("axes");
  const int64_t ndim = e.inputs.at(0).aval().ndim();
  for (int64_t& a : axes)
    if (a < 0) a += ndim;
  std::sort(axes.begin(), axes.end());
  return axes;
}

// A row-major read (reshape): an index map only of a kernel input (jx/lowering.h).
bool is_reshape(const Equation& e) { return e.primitive->rules().lowering.row_major_read; }

// Cheap enough to recompute in every consumer instead of materializing it once: index
// maps (a broadcast or iota read through costs nothing), the trivial unary ops, and a
// few cheap ops (`chain_cost` at most kCheapChainCost) whose elementwise subtree reads
// at most one array (`reads_one`): each consumer then reads that array where it would
// read the result, and the result is never written (a cross-entropy's labels, their
// negative indices wrapped, were a kernel of their own feeding two others). Other
// elementwise ops with several consumers are materialized: recomputing them re-reads
// all their inputs, which costs about what writing and re-reading the result does.
constexpr int64_t kCheapChainCost = 4;
bool cheap_to_duplicate(const Equation& e, Role role, int64_t chain_cost, bool reads_one) {
  if (role == Role::kIndex) return true;
  if (role != Role::kScalar) return false;
  return e.primitive->rules().lowering.cost == 0 || (reads_one && chain_cost <= kCheapChainCost);
}

struct Group {
  std::string kind;             // "loop", "reduction", "dot"; "" for a runtime call
  std::vector<size_t> members;  // equation indices, ascending (a topological order)
  size_t ops = 0;               // members that compute (all but index maps)
  size_t reductions = 0;        // members that are reductions
  Aval space;                   // iteration space: loop/dot output, reduction operand
  std::vector<int64_t> axes;    // reduction axes (sorted)
  bool alive = true;
  std::vector<std::string> notes;  // merge decisions, prefixed with the fusion's name
};

// A refusal between two equations' groups; dropped if they end up fused after all
// (a later round may merge what an earlier one refused).
struct Refusal {
  std::string text;
  int64_t producer = -1, consumer = -1;
};

// Copies of a cheap producer made for its other consumers (indices after duplication).
struct Duplication {
  std::string text;
  size_t original = 0;
  std::vector<size_t> copies;
};

class Fuser {
 public:
  Fuser(ClosedJaxpr& program, PassContext& ctx, const FusionOptions& options)
      : program_(program.jaxpr), ctx_(ctx), options_(options) {}

  bool run() {
    eqns_ = program_.eqns;
    classify();
    if (options_.merge) duplicate_cheap_producers();
    index_uses();
    make_groups();
    if (options_.merge) {
      for (int round = 0; round < 4; ++round) {
        bool changed = fuse_producers_into_consumers();
        changed = fuse_siblings() || changed;
        if (!changed) break;
      }
      if (options_.rows) fuse_rows();
    }
    return emit();
  }

 private:
  // ---- analysis ----

  std::string name_of(const Var& v) const {
    // Named on the first label (only notes and errors print them): naming every
    // variable of a long program up front cost a millisecond a compile.
    if (!names_) names_ = detail::jaxpr_var_names(program_);
    auto copy = copy_of_.find(v.id);
    auto it = names_->find(copy == copy_of_.end() ? v.id : copy->second);
    return it == names_->end() ? "?" : it->second;
  }
  std::string label(size_t e) const { return label_of(eqns_[e]); }
  // Whether decisions are written down (the dump reads them); their texts are built only then.
  bool notes() const { return ctx_.records_notes(); }
  std::string label_of(const Equation& eq) const {
    std::string s = eq.primitive->name();
    if (!eq.outputs.empty()) s += " (" + name_of(eq.outputs[0]) + ")";
    return s;
  }
  std::string describe(const Group& g) const {
    Aval a{g.space.shape, g.space.dtype, false};
    if (g.kind == "reduction" || g.kind == "rows") return g.kind + " over " + a.str() + " axes=" + ints_str(g.axes);
    return g.kind + " over " + a.str();
  }
  std::string labels(const Group& g) const {
    std::string s;
    for (size_t m : g.members) s += (s.empty() ? "" : ", ") + label(m);
    return s;
  }

  // Records a refusal once: the same text, or the same producer equation refused again
  // by the same (since grown) consumer group in a later round, is not repeated.
  void refuse(std::string text, int64_t producer = -1, int64_t consumer = -1) {
    if (!notes() || refusal_texts_.count(text)) return;
    if (producer >= 0 && consumer >= 0)
      for (size_t k : refusals_by_producer_[producer])
        if (group_of_[static_cast<size_t>(refusals_[k].consumer)] == group_of_[static_cast<size_t>(consumer)]) return;
    refusal_texts_.insert(text);
    if (producer >= 0 && consumer >= 0) refusals_by_producer_[producer].push_back(refusals_.size());
    refusals_.push_back({std::move(text), producer, consumer});
  }

  bool has_used_output(const Equation& e) const {
    for (const Var& v : e.outputs)
      if (used_ids_.count(v.id)) return true;
    return false;
  }

  void classify() {
    for (const Equation& e : eqns_)
      for (const Atom& a : e.inputs)
        if (a.is_var()) used_ids_.insert(a.var().id);
    for (const Atom& a : program_.outvars)
      if (a.is_var()) used_ids_.insert(a.var().id), outvar_ids_.insert(a.var().id);

    roles_.assign(eqns_.size(), Role::kOther);
    for (size_t i = 0; i < eqns_.size(); ++i) {
      const Equation& e = eqns_[i];
      const Primitive& p = *e.primitive;
      if (&p == &fusion_primitive()) continue;  // fused before: left as it is
      if (&p == &lax::dot_general_p) {
        classify_dot(i);
        continue;
      }
      if (p.name() == "while" || p.name() == "scan") {
        std::string why;
        if (scalar_loop_supported(e, &why) && has_used_output(e)) roles_[i] = Role::kScalarLoop;
        else refuse("refused: " + label(i) + ": " + (why.empty() ? "its results are unused (left for dce)" : why));
        continue;
      }
      std::string why_scalar, why_index, why_reduction;
      Role role = Role::kOther;
      if (scalar_op_supported(e, &why_scalar)) role = Role::kScalar;
      else if (index_op_supported(e, &why_index)) role = Role::kIndex;
      else if (reduction_supported(e, &why_reduction)) role = Role::kReduction;
      if (role == Role::kOther) {
        std::string why = p.has(kElementwise) ? why_scalar
                          : p.has(kReduction) ? why_reduction
                          : p.has(kShapeOnly) ? why_index
                                              : std::string();
        if (why.empty()) why = "no native kernel for " + p.name() + " (runs as a runtime call)";
        refuse("refused: " + label(i) + ": " + why);
        continue;
      }
      if (!has_used_output(e)) {
        refuse("refused: " + label(i) + ": its result is unused (left for dce)");
        continue;
      }
      roles_[i] = role;
    }
  }

  // Whether a dot_general's result is read (unoptimized programs keep dead equations).
  bool product_is_used(size_t dot) {
    const Var& r = eqns_[dot].outputs[0];
    return !var_users(r.id).empty() || outvar_ids_.count(r.id);
  }

  // 1-d or 2-d operands, contracting one dimension or none, at most one free dimension a side.
  static bool matrix_like_product(const Equation& e) {
    const int64_t l = e.inputs.at(0).aval().ndim(), r = e.inputs.at(1).aval().ndim();
    const int64_t c = static_cast<int64_t>(e.params.get_ints("lhs_contracting_dimensions").size());
    return l >= 1 && l <= 2 && r >= 1 && r <= 2 && c <= 1 && l - c <= 1 && r - c <= 1;
  }

  // A dot_general takes an epilogue only in the case the dot kernel handles
  // (codegen/dot_kernel.cpp): a float32/float64 matrix product of two arrays.
  void classify_dot(size_t i) {
    const Equation& e = eqns_[i];
    const Aval& out = e.outputs.at(0).aval;
    std::string why;
    if (out.dtype != DType::Float32 && out.dtype != DType::Float64)
      why = std::string(detail::dtype_short_name(out.dtype)) + " result (epilogues are fused only for f32 and f64)";
    else if (!e.params.get_ints("lhs_batch_dimensions").empty())
      why = "batch dimensions (epilogues are fused only for plain products)";
    else if (!matrix_like_product(e))
      why = "not a matrix, vector or outer product (epilogues are fused only for 1-d and 2-d operands with at most "
            "one free dimension a side)";
    for (const Atom& a : e.inputs)
      if (why.empty() && (!a.is_var() || a.aval().dtype != out.dtype))
        why = "operands must be arrays of the result's dtype";
    if (!why.empty()) {
      refuse("refused: " + label(i) + " stays a runtime call: " + why);
      return;
    }
    roles_[i] = Role::kDot;
  }

  // Repeats until no copy is made: copying transpose(b) for a second consumer gives b a
  // second consumer too (chains of index maps are copied whole).
  void duplicate_cheap_producers() {
    for (int pass = 0; pass < 8 && duplicate_cheap_producers_once(); ++pass) {
    }
  }

  // Gives each fusible consumer of a cheap, multiply-used producer its own copy (inserted
  // right after the original), so the consumers fuse it instead of reading a
  // materialized result. Copies that land in the same fusion are merged again there.
  bool duplicate_cheap_producers_once() {
    const size_t earlier = duplications_.size();
    std::vector<size_t> moved(eqns_.size());  // index before -> after this pass
    std::unordered_map<int64_t, std::vector<size_t>> users;  // var id -> distinct user eqns
    for (size_t i = 0; i < eqns_.size(); ++i)
      for (const Atom& a : eqns_[i].inputs)
        if (a.is_var()) {
          auto& u = users[a.var().id];
          if (u.empty() || u.back() != i) u.push_back(i);
        }

    // Per equation of a loop (elementwise or index map): the one array its elementwise
    // subtree reads (-1: none, only literals; -2: more than one) and the subtree's cost,
    // capped; in program order, each from its operands' (memoized: linear).
    std::vector<int64_t> chain_read(eqns_.size(), -1), chain_cost(eqns_.size(), 0);
    {
      std::unordered_map<int64_t, size_t> def;
      for (size_t i = 0; i < eqns_.size(); ++i) {
        const bool loop_op = roles_[i] == Role::kScalar || roles_[i] == Role::kIndex;
        int64_t read = -1, cost = roles_[i] == Role::kScalar ? eqns_[i].primitive->rules().lowering.cost : 0;
        auto merge = [&](int64_t r) { read = read == -1 ? r : (r == -1 || r == read) ? read : -2; };
        for (const Atom& a : eqns_[i].inputs) {
          if (!a.is_var()) continue;
          auto d = def.find(a.var().id);
          if (d != def.end() && (roles_[d->second] == Role::kScalar || roles_[d->second] == Role::kIndex)) {
            merge(chain_read[d->second]);
            cost = std::min<int64_t>(cost + chain_cost[d->second], kCheapChainCost + 1);
          } else {
            merge(a.var().id);
          }
        }
        chain_read[i] = loop_op ? read : -2;
        chain_cost[i] = cost;
        for (const Var& v : eqns_[i].outputs) def[v.id] = i;
      }
    }

    std::vector<Equation> out;
    std::vector<Role> roles;
    std::unordered_map<size_t, std::vector<std::pair<int64_t, Var>>> renames;  // user -> (old id, copy)
    out.reserve(eqns_.size());
    for (size_t i = 0; i < eqns_.size(); ++i) {
      // Moved, not copied: later iterations read only the equations after i.
      const size_t at = out.size();
      moved[i] = at;
      out.push_back(std::move(eqns_[i]));
      roles.push_back(roles_[i]);
      if (auto r = renames.find(i); r != renames.end())
        for (auto& [old_id, copy] : r->second)
          for (Atom& a : out[at].inputs)
            if (a.is_var() && a.var().id == old_id) a = copy;
      if (!cheap_to_duplicate(out[at], roles_[i], chain_cost[i], chain_read[i] != -2) || out[at].outputs.size() != 1)
        continue;
      const Var v = out[at].outputs[0];
      const std::vector<size_t>& u = users[v.id];
      std::vector<size_t> absorbing;
      for (size_t user : u) {
        Role r = roles_[user];
        bool can = r == Role::kScalar || r == Role::kReduction || (r == Role::kIndex && !is_reshape(eqns_[user]));
        if (can && roles_[i] == Role::kScalar && r == Role::kIndex) can = false;  // shapes differ
        if (can) absorbing.push_back(user);
      }
      const size_t consumers = u.size() + (outvar_ids_.count(v.id) ? 1 : 0);
      if (absorbing.empty() || consumers < 2) continue;
      // The original serves the consumers that cannot fuse it, else the first fusible one.
      const bool original_needed = consumers > absorbing.size();
      size_t copies = 0;
      Duplication dup{"", out.size() - 1, {}};
      for (size_t k = original_needed ? 0 : 1; k < absorbing.size(); ++k) {
        Equation c = out[at];
        Var cv = ctx_.fresh_var(v.aval);
        c.outputs = {cv};
        copy_of_[cv.id] = v.id;
        renames[absorbing[k]].push_back({v.id, cv});
        dup.copies.push_back(out.size());
        out.push_back(std::move(c));
        roles.push_back(roles_[i]);
        ++copies;
      }
      if (copies && notes()) {
        dup.text = "fusion: duplicated " + label_of(out[at]) + " for " + std::to_string(copies) + " more consumer" +
                   (copies > 1 ? "s" : "") + " (cheap to recompute, so it is not materialized for them)";
        duplications_.push_back(std::move(dup));
      }
    }
    for (size_t k = 0; k < earlier; ++k) {
      Duplication& d = duplications_[k];
      d.original = moved[d.original];
      for (size_t& c : d.copies) c = moved[c];
    }
    const bool changed = out.size() != eqns_.size();
    eqns_ = std::move(out);
    roles_ = std::move(roles);
    return changed;
  }

  void index_uses() {
    std::unordered_map<int64_t, size_t> def;  // var id -> defining equation
    users_.assign(eqns_.size(), {});
    input_defs_.assign(eqns_.size(), {});
    var_users_.clear();
    for (size_t i = 0; i < eqns_.size(); ++i) {
      for (const Var& v : eqns_[i].outputs) def[v.id] = i;
      for (const Atom& a : eqns_[i].inputs) {
        if (!a.is_var()) continue;
        auto& vu = var_users_[a.var().id];
        if (vu.empty() || vu.back() != i) vu.push_back(i);
        auto d = def.find(a.var().id);
        if (d != def.end()) {
          input_defs_[i].push_back(d->second);
          auto& u = users_[d->second];
          if (std::find(u.begin(), u.end(), i) == u.end()) u.push_back(i);
        }
      }
    }
  }

  void make_groups() {
    groups_.clear();
    group_of_.assign(eqns_.size(), 0);
    order_.resize(eqns_.size());
    for (size_t i = 0; i < eqns_.size(); ++i) order_[i] = i;  // the equations are in topological order
    for (size_t i = 0; i < eqns_.size(); ++i) {
      Group g;
      g.members = {i};
      g.ops = roles_[i] == Role::kIndex ? 0 : 1;
      g.reductions = roles_[i] == Role::kReduction ? 1 : 0;
      const Equation& e = eqns_[i];
      switch (roles_[i]) {
        case Role::kScalar:
        case Role::kIndex:
          g.kind = "loop";
          g.space = e.outputs.at(0).aval;
          break;
        case Role::kReduction:
          g.kind = "reduction";
          g.space = e.inputs.at(0).aval();
          g.axes = sorted_axes(e);
          break;
        case Role::kScalarLoop:
          g.kind = "scalar_loop";  // merges with nothing
          g.space = e.outputs.at(0).aval;
          break;
        default:
          break;
      }
      group_of_[i] = groups_.size();
      groups_.push_back(std::move(g));
    }
  }

  // ---- the group graph ----

  const std::vector<size_t>& var_users(int64_t id) const {
    static const std::vector<size_t> none;
    auto it = var_users_.find(id);
    return it == var_users_.end() ? none : it->second;
  }

  template <class F>
  void for_each_successor(size_t g, F&& f) const {
    for (size_t m : groups_[g].members)
      for (size_t u : users_[m])
        if (group_of_[u] != g) f(group_of_[u]);
  }

  template <class F>
  void for_each_predecessor(size_t g, F&& f) const {
    for (size_t m : groups_[g].members)
      for (size_t d : input_defs_[m])
        if (group_of_[d] != g) f(group_of_[d]);
  }

  // Walks mark the groups they saw with their walk's number: clearing a mark per group
  // before every walk made each check cost the whole program.
  void next_walk() const {
    visited_.resize(groups_.size(), 0);
    visited_back_.resize(groups_.size(), 0);
    if (++walks_ == 0) {  // wrapped: no stale marks
      std::fill(visited_.begin(), visited_.end(), 0);
      std::fill(visited_back_.begin(), visited_back_.end(), 0);
      walks_ = 1;
    }
  }

  // A new walk's mark test-and-set.
  auto new_walk() const {
    next_walk();
    return [this, walk = walks_](size_t g) { return visited_[g] != walk ? (visited_[g] = walk, true) : false; };
  }

  // A group other than `from` and `to` on a path from -> ... -> to (its first member's
  // label names the cycle a merge would make), or -1. With allow_direct, a direct edge
  // from -> to counts as a path too (siblings must not depend on each other at all).
  // Only groups ordered between the two can be on such a path (order_), so the walk
  // stays between them: a check costs the groups in between, not the program after.
  int64_t path_between(size_t from, size_t to, bool allow_direct) const {
    if (order_[from] > order_[to]) return -1;
    const auto first_visit = new_walk();
    std::vector<std::pair<size_t, size_t>>& stack = walk_stack_;  // (group, first group off `from`)
    stack.clear();
    bool direct = false;
    const auto push = [&](size_t s, size_t first) {
      if (order_[s] < order_[to] && first_visit(s)) stack.push_back({s, first});
    };
    for_each_successor(from, [&](size_t s) {
      if (s == to) direct = true;
      else push(s, s);
    });
    if (direct && allow_direct) return static_cast<int64_t>(from);
    while (!stack.empty()) {
      auto [g, first] = stack.back();
      stack.pop_back();
      bool hit = false;
      for_each_successor(g, [&](size_t s) {
        if (s == to) hit = true;
        else push(s, first);
      });
      if (hit) return static_cast<int64_t>(first);
    }
    return -1;
  }

  // Keeps order_ topological when groups a and b become one (a merge whose only path
  // between them, if any, is a direct edge: what the merges check first). With x the
  // earlier of the two and y the later, only groups ordered between them move: those
  // reachable from x (F) go after the merged group, those reaching y (B) before it, each
  // set keeping its own order, in the slots the three held (the reordering of Pearce and
  // Kelly's dynamic topological sort). Most merges move nothing: with F empty (a producer
  // whose only reader in between is the other group) the merged group takes y's slot,
  // with B empty x's; the two walks run in step, so finding either empty costs about
  // the smaller set, not the groups in between.
  void reorder_for_merge(size_t a, size_t b, size_t merged) {
    const bool a_first = order_[a] < order_[b];
    const size_t x = a_first ? a : b, y = a_first ? b : a;
    const size_t lo = order_[x], hi = order_[y];
    next_walk();
    struct Walk {
      std::vector<size_t> stack, found;
      bool forward;
      std::vector<uint32_t>* marks;
    };
    Walk after{{x}, {}, true, &visited_}, before{{y}, {}, false, &visited_back_};
    const auto step = [&](Walk& w) {
      const size_t g = w.stack.back();
      w.stack.pop_back();
      const auto visit = [&](size_t s) {
        if (order_[s] > lo && order_[s] < hi && (*w.marks)[s] != walks_)
          (*w.marks)[s] = walks_, w.found.push_back(s), w.stack.push_back(s);
      };
      if (w.forward) for_each_successor(g, visit);
      else for_each_predecessor(g, visit);
    };
    while (!after.stack.empty() && !before.stack.empty()) step(after), step(before);
    const auto place = [&](size_t g, size_t slot) {
      if (undo_) undo_->orders.push_back({g, order_[g]});
      order_[g] = slot;
    };
    if (after.stack.empty() && after.found.empty()) {
      place(merged, hi);
      return;
    }
    if (before.stack.empty() && before.found.empty()) {
      place(merged, lo);
      return;
    }
    while (!after.stack.empty()) step(after);
    while (!before.stack.empty()) step(before);
    const auto by_order = [&](size_t p, size_t q) { return order_[p] < order_[q]; };
    std::sort(before.found.begin(), before.found.end(), by_order);
    std::sort(after.found.begin(), after.found.end(), by_order);
    std::vector<size_t> slots{lo, hi};
    for (size_t g : before.found) slots.push_back(order_[g]);
    for (size_t g : after.found) slots.push_back(order_[g]);
    std::sort(slots.begin(), slots.end());
    size_t next = 0;
    for (size_t g : before.found) place(g, slots[next++]);
    place(merged, slots[next++]);
    for (size_t g : after.found) place(g, slots[next++]);
  }

  bool used_outside(const Var& v, size_t a, size_t b) const {
    if (outvar_ids_.count(v.id)) return true;
    for (size_t u : var_users(v.id))
      if (group_of_[u] != a && group_of_[u] != b) return true;
    return false;
  }

  // True when every use of p's results is inside p or c.
  bool only_used_by(size_t p, size_t c) const {
    for (size_t m : groups_[p].members)
      for (const Var& v : eqns_[m].outputs)
        if (used_outside(v, p, c)) return false;
    return true;
  }

  void merge(size_t into, size_t from, std::string note) {
    if (undo_) undo_->absorbed.push_back({from, groups_[from]});
    reorder_for_merge(into, from, into);
    Group& dst = groups_[into];
    Group& src = groups_[from];
    for (size_t m : src.members) group_of_[m] = into;
    const auto middle = static_cast<std::ptrdiff_t>(dst.members.size());
    dst.members.insert(dst.members.end(), src.members.begin(), src.members.end());
    std::inplace_merge(dst.members.begin(), dst.members.begin() + middle, dst.members.end());  // both sorted
    if (notes()) {
      dst.notes.insert(dst.notes.end(), src.notes.begin(), src.notes.end());
      dst.notes.push_back(std::move(note));
    }
    dst.ops += src.ops;
    dst.reductions += src.reductions;
    src.alive = false;
    src.members.clear();
    src.ops = 0;
    src.reductions = 0;
  }

  // ---- 1. producer -> consumer ----

  // Ops one fusion may hold: LLVM's time on a kernel grows faster than its body
  // (measured on a chain of sin/tanh/mul/add/sub: 0.8 ms per op up to 200 ops, 1.6 ms per
  // op at 2000 in one kernel), so a longer chain becomes several kernels and compiles in
  // time linear in its length; each split costs one pass over an intermediate, next to
  // nothing beside 256 ops of work per element. Index maps do not count: they compute
  // nothing per element (their affine maps compose into the loads), and a fusion refusing
  // the copy of a broadcast it reads left that copy to be materialized and read as an
  // input on every call (a 2000-op chain of x * y + 0.5 filled 358 arrays of 0.5 per call).
  static constexpr size_t kMaxFusedOps = 256;

  bool fits(size_t a, size_t b) const { return groups_[a].ops + groups_[b].ops <= kMaxFusedOps; }

  std::string too_large(size_t a, size_t b) const {
    const size_t n = groups_[a].ops + groups_[b].ops;
    if (n <= kMaxFusedOps) return "";
    return "the fusion would hold " + std::to_string(n) + " ops, more than " + std::to_string(kMaxFusedOps) +
           " (a kernel's compile time grows faster than its size)";
  }

  // Whether `shape` is reduction group g's operand space with its reduced axes of size 1.
  static bool row_shaped(const Shape& shape, const Group& g) {
    if (shape.size() != g.space.shape.size()) return false;
    for (size_t d = 0; d < shape.size(); ++d) {
      const bool reduced = std::find(g.axes.begin(), g.axes.end(), static_cast<int64_t>(d)) != g.axes.end();
      if (shape[d] != (reduced ? 1 : g.space.shape[d])) return false;
    }
    return true;
  }

  // Why loop group p cannot merge into its consumer c; empty when it can.
  std::string why_not_producer(size_t p, size_t c) {
    const Group& P = groups_[p];
    const Group& C = groups_[c];
    // Built only for a refusal: describing the consumer for every merge attempt was most
    // of the pass's time on a long chain.
    auto into = [&] { return " into " + describe(C) + ": "; };
    if (!fits(p, c)) return label(P.members.back()) + into() + too_large(p, c);
    // c's readers of p's results, found from p's side: a walk over c's members per merge
    // attempt made fusing a long chain quadratic in its length.
    for (size_t d : P.members)
      for (size_t m : users_[d]) {
        if (group_of_[m] != c) continue;
        if (is_reshape(eqns_[m]))
          return label(d) + into() + label(m) +
                 " of a value computed inside the fusion (the loop cannot index it linearly)";
        if (roles_[m] == Role::kDot) return label(d) + into() + label(m) + " reads its operands as kernel inputs";
      }
    // Work over a smaller space than the consumer's is recomputed per element when
    // merged: worth it only for a few plain ops recomputed a few times (1 + sum(q*q) over
    // a [1, n] row read by a [3, n] loop), which beats a kernel of its own and a pass
    // over memory.
    int64_t recompute_cost = 0;
    for (size_t m : P.members)
      if (roles_[m] == Role::kScalar) recompute_cost += std::max<int64_t>(1, eqns_[m].primitive->rules().lowering.cost);
    for (size_t m : P.members) {
      const Aval& out = eqns_[m].outputs[0].aval;
      if (roles_[m] != Role::kScalar || out.size() == C.space.size()) continue;
      constexpr int64_t kMaxRecomputedOps = 2, kMaxRecomputations = 8;
      // A value of a reduction's rows (its shape the operand's with the reduced axes 1: a
      // row's label) is computed once a row there, its loop over the row's points
      // invariant in it: a few cheap ops are worth that (kCheapChainCost).
      const bool per_row = C.kind == "reduction" && recompute_cost <= kCheapChainCost && row_shaped(out.shape, C);
      const bool cheap = per_row || (recompute_cost <= kMaxRecomputedOps && out.size() > 0 &&
                                     C.space.size() <= kMaxRecomputations * out.size());
      if (!cheap)
        return label(m) + into() + "computed over " + out.str() +
               ", not the iteration space (it would be recomputed per element)";
    }
    for (size_t m : P.members)
      for (const Var& v : eqns_[m].outputs) {
        if (!used_outside(v, p, c)) continue;
        if (C.kind == "reduction")
          return label(m) + into() + "its result is also used outside the fusion (materialized)";
        if (v.aval.shape != C.space.shape)
          return label(m) + into() + "its result is also used outside the fusion and " + v.aval.str() +
                 " is not the fusion's output shape (materialized)";
      }
    if (int64_t through = path_between(p, c, false); through >= 0)
      return label(P.members.back()) + into() + "would create a cycle through " + label(groups_[through].members[0]);
    return "";
  }

  // Why dot_general d (a group of its own) cannot take loop group c as its epilogue.
  std::string why_not_epilogue(size_t d, size_t c) {
    const size_t dot = groups_[d].members[0];
    const Group& C = groups_[c];
    const Var& r = eqns_[dot].outputs[0];
    if (C.kind != "loop") return label(dot) + " feeds a " + C.kind + " fusion, not an elementwise epilogue";
    size_t consumers = var_users(r.id).size() + (outvar_ids_.count(r.id) ? 1 : 0);
    if (used_outside(r, c, c))
      return label(dot) + " result used by " + std::to_string(consumers) +
             " consumers (the epilogue must be its only user)";
    if (C.space.shape != r.aval.shape)
      return label(dot) + ": the epilogue's shape " + C.space.str() + " is not the dot's " + r.aval.str();
    // The epilogue runs block by block over the dot's result: it must not index it.
    std::unordered_set<int64_t> derived{r.id};
    for (size_t m : C.members) {
      bool reads = false;
      for (const Atom& a : eqns_[m].inputs) reads = reads || (a.is_var() && derived.count(a.var().id));
      if (!reads) continue;
      if (roles_[m] != Role::kScalar)
        return label(dot) + ": the epilogue reads its result through " + label(m) +
               " (only elementwise ops may follow the dot)";
      for (const Var& v : eqns_[m].outputs) derived.insert(v.id);
    }
    if (int64_t through = path_between(d, c, false); through >= 0)
      return label(dot) + " into " + describe(C) + ": would create a cycle through " +
             label(groups_[through].members[0]);
    return "";
  }

  // Tries to merge producer group p into consumer c; records the reason if refused.
  bool try_producer(size_t p, size_t c) {
    const Group& P = groups_[p];
    if (P.kind.empty() && roles_[P.members[0]] == Role::kDot) {
      std::string why = why_not_epilogue(p, c);
      if (!why.empty()) {
        refuse("refused: " + why, P.members.back(), groups_[c].members[0]);
        return false;
      }
      groups_[c].kind = "dot";
      merge(c, p, notes() ? labels(groups_[p]) + " takes the elementwise epilogue " + labels(groups_[c]) : "");
      return true;
    }
    if (P.kind != "loop") return false;  // reductions and dots end their fusions
    std::string why = why_not_producer(p, c);
    if (!why.empty()) {
      refuse("refused: " + why, P.members.back(), groups_[c].members[0]);
      return false;
    }
    merge(c, p, notes() ? "merged " + labels(P) + " into " + describe(groups_[c]) : "");
    return true;
  }

  // The groups producing c's operands, in the order c reads them.
  std::vector<size_t> producers(size_t c) const {
    std::vector<size_t> out;
    for (size_t m : groups_[c].members)
      for (size_t d : input_defs_[m]) {
        const size_t g = group_of_[d];
        if (g != c && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(g);
      }
    return out;
  }

  // Consumers last to first, as XLA's instruction fusion: each absorbs its producers,
  // first those it alone reads (no extra output), then those whose results are also
  // needed elsewhere (they become extra outputs of a loop fusion); within each, the one
  // computed last first, so a fusion grows back over the program as one stretch. (In the
  // order it reads them, t = t + tanh(x * c - y) repeated absorbed 256 adds, the op
  // limit, and left every tanh to be materialized and read back as one of its 256 inputs.)
  bool fuse_producers_into_consumers() {
    bool changed = false;
    std::vector<char> done(groups_.size(), 0);
    for (size_t i = eqns_.size(); i-- > 0;) {
      const size_t c = group_of_[i];
      if (done[c] || groups_[c].kind.empty() || groups_[c].kind == "scalar_loop") continue;
      done[c] = 1;
      for (bool merged = true; merged;) {
        merged = false;
        std::vector<size_t> candidates = producers(c);
        std::sort(candidates.begin(), candidates.end(),
                  [&](size_t a, size_t b) { return groups_[a].members.back() > groups_[b].members.back(); });
        for (int tier = 0; tier < 2 && !merged; ++tier)
          for (size_t p : candidates) {
            if (only_used_by(p, c) != (tier == 0)) continue;
            if (try_producer(p, c)) {
              merged = changed = true;
              break;
            }
          }
      }
    }
    return changed;
  }

  // ---- 2. siblings ----

  // Reductions one sibling fusion may hold. Each keeps its own accumulators in the loop,
  // and past a few dozen they spill: 256 sums of x * c_i over 10^6 floats ran in 4.9 ms
  // as two fusions of 128 outputs, 3.1 ms as eight of 32 (10^4 floats: 0.123 -> 0.086
  // ms; 16 per fusion measured the same as 32), compile time unchanged.
  static constexpr size_t kMaxSiblingReductions = 32;

  // Each value's readers in program order, first fit: a reader joins the first open
  // sibling fusion over its space that it may merge with, else opens one. Pairs are not
  // enumerated (a value read by R groups costs R tries of a few candidates each, not R^2
  // tries after every merge: a value read by 1500 groups took seconds).
  bool fuse_siblings() {
    bool changed = false;
    std::vector<Var> values = program_.constvars;
    values.insert(values.end(), program_.invars.begin(), program_.invars.end());
    for (const Equation& e : eqns_) values.insert(values.end(), e.outputs.begin(), e.outputs.end());
    std::vector<char> listed(groups_.size(), 0);
    for (const Var& v : values) {
      if (v.aval.ndim() == 0) continue;  // a scalar read twice costs nothing
      std::vector<size_t> readers;
      for (size_t u : var_users(v.id)) {
        const size_t g = group_of_[u];
        if (!groups_[g].kind.empty() && groups_[g].kind != "dot" && !listed[g]) listed[g] = 1, readers.push_back(g);
      }
      for (size_t g : readers) listed[g] = 0;
      if (readers.size() < 2) continue;
      // Open fusions by space; only the last few of a space are tried (each try may walk
      // the graph between the two), which matters only when many are refused.
      constexpr size_t kCandidates = 8;
      std::unordered_map<std::string, std::vector<size_t>> open;
      for (size_t b : readers) {
        std::vector<size_t>& same = open[space_key(groups_[b])];
        bool joined = false;
        for (size_t k = same.size() > kCandidates ? same.size() - kCandidates : 0; k < same.size() && !joined; ++k) {
          const size_t a = same[k];
          if (!fits(a, b) || groups_[a].reductions + groups_[b].reductions > kMaxSiblingReductions) continue;
          int64_t through = path_between(a, b, true);
          if (through < 0) through = path_between(b, a, true);
          if (through >= 0) {
            if (notes())
              refuse("refused: sibling fusion of " + labels(groups_[a]) + " and " + labels(groups_[b]) + " (both read " +
                         name_of(v) + "): one depends on the other",
                     groups_[a].members[0], groups_[b].members[0]);
            continue;
          }
          merge(a, b,
                notes() ? "sibling fusion with " + labels(groups_[b]) + " (both read " + name_of(v) + ", read once)"
                        : "");
          joined = changed = true;
        }
        if (!joined) same.push_back(b);
      }
    }
    return changed;
  }

  // Groups with equal keys may be siblings: loops over one shape, or reductions of one
  // shape over the same axes.
  std::string space_key(const Group& g) const {
    std::string key = g.kind + ":";
    for (int64_t d : g.space.shape) key += std::to_string(d) + ",";
    if (g.kind == "reduction")
      for (int64_t a : g.axes) key += ":" + std::to_string(a);
    else if (g.kind != "loop")
      key += "#" + std::to_string(&g - groups_.data());  // other kinds have no siblings
    return key;
  }

  // ---- 2b. rows ----

  // A rows fusion's rows each run on one thread, its passes re-reading the row: enough
  // rows to share among threads, and rows that stay in cache between passes.
  static constexpr int64_t kMinRows = 8;
  static constexpr int64_t kMaxRowBytes = 1 << 20;
  // A columns fusion (the innermost axis kept, so the reduced axes run across memory, as
  // in a sum over the particles' coordinates) runs blocks of columns, each vector of its
  // inner loops a run of columns: enough columns to fill vectors.
  static constexpr int64_t kMinColumns = 16;

  // Whether reduction group g can seed a rows fusion: its axes are the trailing ones, so
  // a row is contiguous, and its shape suits the schedule; or its innermost axis is kept
  // and long enough for the columns schedule (codegen/kernel_plan.h, Mode::Columns).
  bool rows_seed(const Group& g) const {
    if (g.kind != "reduction" || g.axes.empty()) return false;
    const int64_t n = g.space.ndim(), first = n - static_cast<int64_t>(g.axes.size());
    if (g.axes.back() != n - 1) return g.space.shape.back() >= kMinColumns;
    for (size_t k = 0; k < g.axes.size(); ++k)
      if (g.axes[k] != first + static_cast<int64_t>(k)) return false;
    int64_t rows = 1, row = 1;
    for (int64_t d = 0; d < n; ++d) (d < first ? rows : row) *= g.space.shape[static_cast<size_t>(d)];
    return first > 0 && rows >= kMinRows && row * itemsize(g.space.dtype) <= kMaxRowBytes;
  }

  // Whether reduction group c reduces every axis of rows group r's row space.
  bool totals_rows(const Group& r, const Group& c) const {
    if (c.space.shape != row_shape(r) && c.space.shape != kept_row_shape(r)) return false;
    if (c.axes.size() != c.space.shape.size()) return false;
    for (size_t d = 0; d < c.axes.size(); ++d)
      if (c.axes[d] != static_cast<int64_t>(d)) return false;
    return true;
  }

  // The kept dims: a reduction's result.
  Shape row_shape(const Group& g) const {
    Shape s;
    for (size_t d = 0; d < g.space.shape.size(); ++d)
      if (!std::binary_search(g.axes.begin(), g.axes.end(), static_cast<int64_t>(d))) s.push_back(g.space.shape[d]);
    return s;
  }

  // The row shape with the reduced axes kept as 1s (jnp's keepdims=true results).
  Shape kept_row_shape(const Group& g) const {
    Shape s = g.space.shape;
    for (int64_t a : g.axes) s[static_cast<size_t>(a)] = 1;
    return s;
  }

  // Whether group c may join rows group r: a reduction over r's space and axes, or a
  // loop over r's operand space or its row space (either spelling of it), or a total: a
  // reduction over every axis of the row space (a loss's mean over the rows' losses),
  // which the rows kernel sums block by block as it goes (kernel_plan.h, PlanOutput).
  bool joins_rows(const Group& r, const Group& c) const {
    if (c.kind == "reduction" && totals_rows(r, c)) return true;
    if (c.kind == "reduction") return c.space.shape == r.space.shape && c.axes == r.axes;
    if (c.kind != "loop") return false;
    return c.space.shape == r.space.shape || c.space.shape == row_shape(r) || c.space.shape == kept_row_shape(r);
  }

  // A rows group grows by tentative merges, checked as one rows kernel only when its op
  // count has doubled since the last check and when it stops growing: checking after
  // every merge planned the whole candidate kernel each time, quadratic in the group's
  // size (an unrolled chain of row normalizations spent 0.8 ms per step). A failed check
  // undoes the merges since the last good state and redoes them one checked merge at a
  // time (as each did before), until the group has doubled again.
  struct Undo {
    Group grown;                                       // the rows group at its last good state
    std::vector<std::pair<size_t, Group>> absorbed;    // groups merged into it since, as they were
    std::vector<std::pair<size_t, size_t>> orders;     // (group, order_ before) of every reordering since
  };
  struct RowsGrowth {
    size_t r;
    Undo undo;
    bool careful = false;    // check every merge
    size_t next_check = 0;   // op count at which a tentative run is checked
    bool pending() const { return !undo.absorbed.empty(); }
  };

  void mark_good(RowsGrowth& g) {
    g.undo.grown = groups_[g.r];
    g.undo.absorbed.clear();
    g.undo.orders.clear();
  }

  // Restores the last good state.
  void undo_to_good(RowsGrowth& g) {
    for (auto it = g.undo.orders.rbegin(); it != g.undo.orders.rend(); ++it) order_[it->first] = it->second;
    for (auto it = g.undo.absorbed.rbegin(); it != g.undo.absorbed.rend(); ++it) {
      groups_[it->first] = it->second;
      for (size_t m : it->second.members) group_of_[m] = it->first;
    }
    groups_[g.r] = g.undo.grown;
    g.undo.absorbed.clear();
    g.undo.orders.clear();
  }

  // Whether rows group r as it stands compiles as one rows kernel.
  bool rows_kernel_supported(size_t r, std::string* why) {
    Equation candidate = build_fusion_of(groups_[r].members, [r](size_t g) { return g == r; }, "rows", "candidate");
    return rows_fusion_supported(detail::call_body(candidate.params, "fusion")->jaxpr, why);
  }

  // Merges c into the growing rows group; false if refused (nothing changed then).
  bool try_rows(RowsGrowth& g, size_t c, bool producer) {
    const size_t r = g.r;
    if (!fits(r, c)) return false;
    if (producer ? path_between(c, r, false) >= 0 : path_between(r, c, false) >= 0) return false;
    std::string note;
    if (notes())
      note = "merged " + labels(groups_[c]) + " into " + describe(groups_[r]) +
             (producer ? " (a producer of the rows)" : " (reads the rows' results)");
    const std::string refusal =
        notes() ? "refused: rows fusion of " + labels(groups_[c]) + " into " + describe(groups_[r]) + ": " : "";
    const int64_t c_first = static_cast<int64_t>(groups_[c].members[0]), r_first = static_cast<int64_t>(groups_[r].members[0]);
    undo_ = &g.undo;
    groups_[r].kind = "rows";
    merge(r, c, std::move(note));
    undo_ = nullptr;
    if (!g.careful && groups_[r].ops < g.next_check) return true;
    std::string why;
    if (rows_kernel_supported(r, &why)) {
      mark_good(g);
      if (groups_[r].ops >= g.next_check) g.careful = false, g.next_check = 2 * groups_[r].ops;
      return true;
    }
    const bool single = g.undo.absorbed.size() == 1;
    undo_to_good(g);
    if (single) {
      refuse(refusal + why, c_first, r_first);
      return false;
    }
    g.careful = true;  // redo the undone merges one checked merge at a time
    return true;       // the group changed: look for candidates again
  }

  // Whether loop group p runs over rows group r's row space (either spelling) and costs
  // a plain op an element at most: a first pass's terms read it at every point of the
  // row, where nothing is hoisted, so a transcendental there would run once a point.
  bool over_rows(const Group& r, const Group& p) const {
    if (p.space.shape != row_shape(r) && p.space.shape != kept_row_shape(r)) return false;
    return std::all_of(p.members.begin(), p.members.end(),
                       [&](size_t m) { return eqns_[m].primitive->rules().lowering.cost <= 1; });
  }

  // One pass over r's candidates, consumers first (what reads the reduction back makes
  // the rows), then, once it is a rows group, the loops over its space or its rows and
  // the reductions over its rows that only it reads (the row sums of a cotangent in
  // softmax cross-entropy's gradient, the wrapped labels and their one-hot values: per
  // row, they cost the kernel a few register ops where written out they cost a pass
  // over memory each); true if the group changed.
  bool grow_rows_once(RowsGrowth& g) {
    const size_t r = g.r;
    std::vector<size_t> next;
    for_each_successor(r, [&](size_t c) {
      if (std::find(next.begin(), next.end(), c) == next.end()) next.push_back(c);
    });
    std::sort(next.begin(), next.end(), [&](size_t a, size_t b) { return groups_[a].members[0] < groups_[b].members[0]; });
    for (size_t c : next)
      if (groups_[c].alive && joins_rows(groups_[r], groups_[c]) && try_rows(g, c, false)) return true;
    if (groups_[r].kind != "rows") return false;
    for (size_t p : producers(r))
      if (((groups_[p].kind == "loop" && (groups_[p].space.shape == groups_[r].space.shape || over_rows(groups_[r], groups_[p]))) ||
           (groups_[p].kind == "reduction" && joins_rows(groups_[r], groups_[p]) && !totals_rows(groups_[r], groups_[p]))) &&
          only_used_by(p, r) && try_rows(g, p, true))
        return true;
    return false;
  }

  void fuse_rows() {
    constexpr size_t kFirstCheck = 8;
    for (size_t r = 0; r < groups_.size(); ++r) {
      if (!groups_[r].alive || !rows_seed(groups_[r])) continue;
      RowsGrowth g{.r = r, .next_check = kFirstCheck};
      mark_good(g);
      for (;;) {
        while (grow_rows_once(g)) {
        }
        if (!g.pending()) break;
        // Stopped growing with unchecked merges: check the result.
        std::string why;
        if (rows_kernel_supported(r, &why)) break;
        undo_to_good(g);
        g.careful = true;
      }
    }
  }

  // ---- 3. emission ----

  int64_t first_free_fusion_number() const {
    int64_t next = 0;
    for (const Equation& e : eqns_) {
      if (e.primitive != &fusion_primitive() || !e.params.has("name")) continue;
      const std::string& n = e.params.get_string("name");
      if (n.rfind("fusion.", 0) != 0) continue;
      // Only names fusion.<number> can collide with the names made here.
      int64_t number = 0;
      const char* digits = n.data() + 7;
      auto [end, ec] = std::from_chars(digits, n.data() + n.size(), number);
      if (ec == std::errc() && end == n.data() + n.size() && end != digits && number >= 0 && number < INT64_MAX)
        next = std::max<int64_t>(next, number + 1);
    }
    return next;
  }

  Equation build_fusion(size_t g, const std::string& name) {
    return build_fusion_of(groups_[g].members, [g](size_t x) { return x == g; }, groups_[g].kind, name);
  }

  // The fusion equation of `members` (ascending), whose outputs are the values used
  // outside the groups `inside` accepts.
  Equation build_fusion_of(const std::vector<size_t>& members, const std::function<bool(size_t)>& in_group,
                           const std::string& kind, const std::string& name) {
    std::unordered_set<int64_t> inside;
    for (size_t m : members)
      for (const Var& v : eqns_[m].outputs) inside.insert(v.id);

    Jaxpr body;
    std::vector<Atom> inputs;
    std::unordered_map<int64_t, Var> renamed;  // outer id -> body variable
    std::unordered_multimap<size_t, size_t> computed;  // equation hash -> index in body.eqns
    for (size_t m : members)
      for (const Atom& a : eqns_[m].inputs)
        if (a.is_var() && !inside.count(a.var().id) && !renamed.count(a.var().id)) {
          Var bv = ctx_.fresh_var(a.var().aval);
          renamed.emplace(a.var().id, bv);
          body.invars.push_back(bv);
          inputs.push_back(a);
        }
    for (size_t m : members) {
      Equation e = eqns_[m];
      for (Atom& a : e.inputs)
        if (a.is_var()) a = renamed.at(a.var().id);
      // Copies of a duplicated producer that met again in one fusion: compute it once
      // (looked up by hash, so building a fusion stays linear in its size).
      size_t h = std::hash<const void*>()(e.primitive) ^ (e.params.hash() * 31);
      for (const Atom& a : e.inputs) h = h * 1000003u ^ atom_hash(a);
      const Equation* same = nullptr;
      for (auto [it, end] = computed.equal_range(h); it != end && !same; ++it) {
        const Equation& b = body.eqns[it->second];
        if (b.primitive != e.primitive || !(b.params == e.params) || b.inputs.size() != e.inputs.size() ||
            b.outputs.size() != e.outputs.size())
          continue;
        bool eq = true;
        for (size_t k = 0; k < e.inputs.size() && eq; ++k) eq = same_atom(b.inputs[k], e.inputs[k]);
        if (eq) same = &b;
      }
      if (same) {
        for (size_t k = 0; k < e.outputs.size(); ++k) renamed.emplace(e.outputs[k].id, same->outputs[k]);
        continue;
      }
      computed.emplace(h, body.eqns.size());
      for (Var& v : e.outputs) {
        Var bv = ctx_.fresh_var(v.aval);
        renamed.emplace(v.id, bv);
        v = bv;
      }
      body.eqns.push_back(std::move(e));
    }
    std::vector<Var> outputs;
    for (size_t m : members)
      for (const Var& v : eqns_[m].outputs) {
        bool outside = outvar_ids_.count(v.id) > 0;
        for (size_t u : var_users(v.id)) outside = outside || !in_group(group_of_[u]);
        if (outside) {
          body.outvars.push_back(renamed.at(v.id));
          outputs.push_back(v);
        }
      }
    auto closed = std::make_shared<ClosedJaxpr>(ClosedJaxpr{std::move(body), {}});
    return make_fusion(std::move(closed), std::move(inputs), std::move(outputs), kind, name);
  }

  // A group of index maps alone (no arithmetic, no iota) stays as runtime calls: the
  // eager ops return views of their operands, where a kernel would copy (or, for a
  // broadcast, materialize) the data.
  void keep_pure_data_movement_as_views() {
    const size_t n = groups_.size();
    for (size_t g = 0; g < n; ++g) {
      Group& G = groups_[g];
      if (!G.alive || G.kind != "loop") continue;
      bool views = true;
      for (size_t m : G.members) views = views && roles_[m] == Role::kIndex && !eqns_[m].primitive->rules().lowering.index_is_value;
      if (!views) continue;
      refuse("refused: " + labels(G) + " only moves data: kept as a runtime call (the eager op returns a view, no copy)");
      std::vector<size_t> members = std::move(G.members);
      G.members.clear();
      G.alive = false;
      for (size_t m : members) {
        Group single;
        single.members = {m};
        group_of_[m] = groups_.size();
        groups_.push_back(std::move(single));
      }
    }
  }

  bool emit() {
    if (options_.merge) keep_pure_data_movement_as_views();
    // Group graph in-degrees; Kahn's algorithm, earliest first member first.
    std::vector<std::vector<size_t>> succ(groups_.size());
    std::vector<size_t> indegree(groups_.size(), 0);
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].alive) continue;
      std::vector<size_t>& s = succ[g];
      for_each_successor(g, [&](size_t t) {
        if (std::find(s.begin(), s.end(), t) == s.end()) s.push_back(t);
      });
      for (size_t t : s) ++indegree[t];
    }
    using Item = std::pair<size_t, size_t>;  // (first member, group)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (size_t g = 0; g < groups_.size(); ++g)
      if (groups_[g].alive && indegree[g] == 0) ready.push({groups_[g].members[0], g});

    int64_t next_number = first_free_fusion_number();
    std::vector<Equation> out;
    std::vector<std::string> fusion_notes;
    size_t fusions = 0;
    while (!ready.empty()) {
      const size_t g = ready.top().second;
      ready.pop();
      // A product with no epilogue is a dot kernel of its own (the BLAS call writes the
      // result in place), so a loop body of products and elementwise work is all kernels.
      if (groups_[g].kind.empty() && roles_[groups_[g].members[0]] == Role::kDot &&
          product_is_used(groups_[g].members[0])) {
        groups_[g].kind = "dot";
        groups_[g].space = eqns_[groups_[g].members[0]].outputs[0].aval;
      }
      const Group& G = groups_[g];
      if (G.kind.empty()) {
        out.push_back(eqns_[G.members[0]]);
      } else {
        const std::string name = "fusion." + std::to_string(next_number++);
        out.push_back(build_fusion(g, name));
        ++fusions;
        if (notes()) {
          const Equation& f = out.back();
          std::string summary = name + ": " + describe(G) + " of " + labels(G) + "; " +
                                std::to_string(f.inputs.size()) + " input" + (f.inputs.size() == 1 ? "" : "s") +
                                ", " + std::to_string(f.outputs.size()) + " output" +
                                (f.outputs.size() == 1 ? "" : "s");
          if (std::all_of(G.members.begin(), G.members.end(), [&](size_t m) { return roles_[m] == Role::kIndex; }))
            summary += " (no arithmetic: a copy kernel)";
          if (!options_.merge) summary += " (merging disabled)";
          fusion_notes.push_back(summary);
          for (const std::string& n : G.notes) fusion_notes.push_back(name + ": " + n);
        }
      }
      for (size_t t : succ[g])
        if (--indegree[t] == 0) ready.push({groups_[t].members[0], t});
    }
    JX_CHECK(out.size() == static_cast<size_t>(std::count_if(groups_.begin(), groups_.end(),
                                                             [](const Group& x) { return x.alive; })),
             "fusion", "the group graph has a cycle");

    for (const Duplication& d : duplications_) {
      // Copies that all met the original in one fusion were merged again: no decision.
      bool apart = false;
      for (size_t c : d.copies) apart = apart || group_of_[c] != group_of_[d.original];
      if (apart) ctx_.note(d.text);
    }
    for (const std::string& n : fusion_notes) ctx_.note(n);
    for (const Refusal& r : refusals_) {
      // A refusal an later round undid (they ended up in one fusion) is no decision.
      if (r.producer >= 0 && r.consumer >= 0 && group_of_[static_cast<size_t>(r.producer)] ==
                                                    group_of_[static_cast<size_t>(r.consumer)])
        continue;
      ctx_.note(r.text);
    }
    if (fusions == 0) return false;
    program_.eqns = std::move(out);
    return true;
  }

  Jaxpr& program_;
  PassContext& ctx_;
  FusionOptions options_;
  mutable std::optional<std::unordered_map<int64_t, std::string>> names_;  // printed names in the input program
  std::unordered_map<int64_t, int64_t> copy_of_;  // a duplicated producer's output -> the original's

  std::vector<Equation> eqns_;
  std::vector<Role> roles_;
  std::unordered_set<int64_t> used_ids_, outvar_ids_;
  std::vector<std::vector<size_t>> input_defs_;               // per equation: its inputs' defining equations
  std::vector<std::vector<size_t>> users_;                     // equation -> distinct user equations
  std::unordered_map<int64_t, std::vector<size_t>> var_users_;  // var id -> distinct user equations
  std::vector<Group> groups_;
  std::vector<size_t> group_of_;
  Undo* undo_ = nullptr;  // set while a rows group grows: merge and reorder_for_merge log into it
  // A topological order of the group graph (every edge x -> y has order_[x] < order_[y]),
  // kept through merges by reorder_for_merge; at first, the equations' own order. (Groups
  // split off for emission by keep_pure_data_movement_as_views have none: no merge follows.)
  std::vector<size_t> order_;
  mutable std::vector<uint32_t> visited_, visited_back_;  // walks' marks: the walk that last saw each group
  mutable uint32_t walks_ = 0;
  mutable std::vector<std::pair<size_t, size_t>> walk_stack_;  // path_between's
  std::vector<Refusal> refusals_;
  std::unordered_set<std::string> refusal_texts_;
  std::unordered_map<int64_t, std::vector<size_t>> refusals_by_producer_;  // -> indices in refusals_
  std::vector<Duplication> duplications_;
};

bool run_fusion(ClosedJaxpr& program, PassContext& ctx) { return fuse(program, ctx, FusionOptions{}); }

}  // namespace

bool fuse(ClosedJaxpr& program, PassContext& ctx, const FusionOptions& options) {
  return Fuser(program, ctx, options).run();
}

const Pass kFusionPass{"fusion", &run_fusion};

}  // namespace jx::compiler
