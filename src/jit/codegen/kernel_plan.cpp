#include "jit/codegen/kernel_plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "jit/kernel_support.h"
#include "jx/error.h"
#include "lax/data_movement.h"
#include "lax/elemental.h"

namespace jx::compiler::codegen {
namespace {

using jx::detail::fail;
using jx::detail::shape_str;

// A variable's multi-index as affine functions of the iteration indices, one per dim.
using IndexMap = std::vector<Affine>;

std::string eqn_str(const Equation& e) {
  std::ostringstream os;
  os << e.primitive->name();
  if (!e.params.empty()) {
    bool has_jaxpr = false;
    for (const auto& [k, v] : e.params.items()) has_jaxpr |= std::holds_alternative<JaxprRef>(v);
    if (!has_jaxpr) os << "[" << e.params.str() << "]";
  }
  os << " of (";
  for (size_t i = 0; i < e.inputs.size(); ++i) os << (i ? ", " : "") << e.inputs[i].aval().str();
  os << ")";
  return os.str();
}

[[noreturn]] void refuse(const Equation& e, const std::string& why) {
  fail("jit", "cannot compile equation '", eqn_str(e), "' in a loop kernel: ", why);
}

std::vector<int64_t> canonical_dims(const std::vector<int64_t>& dims, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(d < 0 ? d + ndim : d);
  std::sort(out.begin(), out.end());
  return out;
}

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

Affine zero_affine(size_t n) { return Affine{0, std::vector<int64_t>(n, 0)}; }

// sum_k scale_k * rows_k (+ offset).
Affine combine(const IndexMap& rows, const std::vector<int64_t>& scale, size_t n) {
  Affine a = zero_affine(n);
  for (size_t k = 0; k < rows.size(); ++k) {
    a.offset += scale[k] * rows[k].offset;
    for (size_t d = 0; d < n; ++d) a.coef[d] += scale[k] * rows[k].coef[d];
  }
  return a;
}

std::string affine_str(const Affine& a) {
  std::ostringstream os;
  os << "[" << a.offset << ";";
  for (int64_t c : a.coef) os << " " << c;
  os << "]";
  return os.str();
}

std::string literal_str(const Array& v) {
  std::vector<unsigned char> bytes(static_cast<size_t>(itemsize(v.dtype())));
  v.copy_to(bytes.data(), v.dtype());
  std::string s = "0x";
  char buf[3];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    s += buf;
  }
  return s;
}

// The planner's memo keys, compared and hashed field by field: printing them into
// strings was most of planning's time (a 250-op kernel's nodes each printed their index
// map through a stream).
struct NodeKey {
  PlanNode::Kind kind;
  DType dtype;
  int input, phase;
  Affine index;
  const Equation* eqn;
  std::string literal_bits;  // a literal's value, byte for byte
  std::vector<int> operands;
  bool operator==(const NodeKey&) const = default;
};

struct ValueKey {
  int64_t id;
  IndexMap map;
  bool operator==(const ValueKey&) const = default;
};

struct KeyHash {
  static size_t mix(size_t h, uint64_t v) { return (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))); }
  static size_t affine(size_t h, const Affine& a) {
    h = mix(h, static_cast<uint64_t>(a.offset));
    for (int64_t c : a.coef) h = mix(h, static_cast<uint64_t>(c));
    return mix(h, a.coef.size());
  }
  size_t operator()(const NodeKey& k) const {
    size_t h = mix(mix(mix(static_cast<size_t>(k.kind), static_cast<uint64_t>(k.dtype)), static_cast<uint64_t>(k.input)),
                   static_cast<uint64_t>(k.phase));
    h = mix(affine(h, k.index), reinterpret_cast<uintptr_t>(k.eqn));
    h = mix(h, std::hash<std::string>()(k.literal_bits));
    for (int o : k.operands) h = mix(h, static_cast<uint64_t>(o));
    return h;
  }
  size_t operator()(const ValueKey& k) const {
    size_t h = mix(0, static_cast<uint64_t>(k.id));
    for (const Affine& a : k.map) h = affine(h, a);
    return h;
  }
};

class Planner {
 public:
  Planner(const Jaxpr& j, size_t iter_ndim, const InputStrides& input_strides) : n_(iter_ndim) {
    if (!input_strides.empty() && input_strides.size() != j.invars.size())
      fail("jit", "internal: ", input_strides.size(), " input layouts for a kernel of ", j.invars.size(), " inputs");
    for (size_t i = 0; i < j.invars.size(); ++i) {
      inputs_[j.invars[i].id] = static_cast<int>(i);
      plan.input_dtypes.push_back(j.invars[i].aval.dtype);
      const Shape& shape = j.invars[i].aval.shape;
      const bool strided = !input_strides.empty() && !input_strides[i].empty();
      if (strided && input_strides[i].size() != shape.size())
        fail("jit", "internal: input ", i, " of type ", j.invars[i].aval.str(), " given ", input_strides[i].size(),
             " strides");
      strides_.push_back(strided ? input_strides[i] : jx::detail::contiguous_strides(shape));
      contiguous_.push_back(!strided || strides_.back() == jx::detail::contiguous_strides(shape));
    }
    for (const Equation& e : j.eqns)
      for (const Var& v : e.outputs) defs_[v.id] = &e;
  }

  KernelPlan plan;

  // The equation defining `atom` in the fused program, or null (an input, a literal).
  const Equation* definition(const Atom& atom) const {
    if (!atom.is_var()) return nullptr;
    auto it = defs_.find(atom.var().id);
    return it == defs_.end() ? nullptr : it->second;
  }

  // The node computing `atom` at the iteration point, read through `map`.
  int value(const Atom& atom, const IndexMap& map) {
    if (!atom.is_var()) return literal(atom.literal().value);
    const Var& v = atom.var();
    if (auto it = inputs_.find(v.id); it != inputs_.end())
      return load(it->second, v.aval, combine(map, strides_[static_cast<size_t>(it->second)], n_));
    auto it = defs_.find(v.id);
    if (it == defs_.end()) fail("jit", "variable of type ", v.aval.str(), " is not defined in the fused program");
    // Each value is planned once per index map it is read through, before recursing: a
    // DAG with reuse (y = y * y, twenty times) is walked in linear time, not as a tree.
    ValueKey key{v.id, map};
    if (auto m = planned_.find(key); m != planned_.end()) return m->second;
    ++plan.stats.visits;
    int node = equation(*it->second, map);
    planned_.emplace(std::move(key), node);
    return node;
  }

 private:
  int add(PlanNode node) {
    NodeKey key = node_key(node);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    plan.nodes.push_back(std::move(node));
    int id = static_cast<int>(plan.nodes.size()) - 1;
    memo_.emplace(std::move(key), id);
    return id;
  }

  // Identical nodes (same load address, same op of the same operands) are emitted once.
  static NodeKey node_key(const PlanNode& n) {
    NodeKey key{n.kind, n.dtype, n.input, n.phase, n.index, n.eqn, "", n.operands};
    if (n.kind == PlanNode::Kind::Literal) {
      key.literal_bits.resize(static_cast<size_t>(itemsize(n.literal.dtype())));
      n.literal.copy_to(key.literal_bits.data(), n.literal.dtype());
    }
    return key;
  }

  int literal(const Array& v) {
    PlanNode n;
    n.kind = PlanNode::Kind::Literal;
    n.dtype = v.dtype();
    n.literal = v;
    return add(std::move(n));
  }

  int load(int input, const Aval& aval, Affine address) {
    PlanNode n;
    n.kind = PlanNode::Kind::Load;
    n.dtype = aval.dtype;
    n.input = input;
    n.index = std::move(address);
    return add(std::move(n));
  }

  int equation(const Equation& e, const IndexMap& map) {
    const Aval& out = e.outputs[0].aval;
    const lowering::Lowering& lowering = e.primitive->rules().lowering;
    if (is_index_op(*e.primitive)) {
      std::string why;
      if (!index_op_supported(e, &why)) refuse(e, why);
      if (lowering.index_is_value) {  // iota: the value is the mapped index
        PlanNode n;
        n.kind = PlanNode::Kind::Iota;
        n.dtype = out.dtype;
        n.index = compose(e, map)[0];
        return add(std::move(n));
      }
      const Atom& x = e.inputs[0];
      if (lowering.row_major_read && x.is_var() && inputs_.count(x.var().id)) {
        const size_t input = static_cast<size_t>(inputs_.at(x.var().id));
        // A contiguous input: the reshaped index's row-major address is the element's
        // address, whatever the shapes.
        if (contiguous_[input])
          return load(static_cast<int>(input), x.aval(), combine(map, jx::detail::contiguous_strides(out.shape), n_));
        // A view: its elements as the reshaped shape's strides, where a view has them
        // (a reshape that merges a sliced dim has none: planning refuses below).
        std::vector<int64_t> reshaped;
        if (lax::movement::reshape_strides(x.aval().shape, strides_[input], out.shape, reshaped))
          return load(static_cast<int>(input), x.aval(), combine(map, reshaped, n_));
      }
      return value(x, compose(e, map));
    }
    if (e.primitive->has(kReduction)) {
      if (rows_) return row_value(e, map);
      refuse(e, "a reduction can only end a reduction kernel");
    }
    std::string why;
    if (!scalar_op_supported(e, &why)) refuse(e, why);
    if (e.outputs.size() != 1) refuse(e, "expected one output");
    PlanNode n;
    n.kind = PlanNode::Kind::Op;
    n.dtype = out.dtype;
    n.eqn = &e;
    for (const Atom& a : e.inputs) {
      const Aval& in = a.aval();
      if (!a.is_var() || in.ndim() == 0) {
        n.operands.push_back(value(a, {}));  // a scalar operand (clamp's bounds, literals)
      } else if (in.shape == out.shape) {
        n.operands.push_back(value(a, map));
      } else {
        refuse(e, "operand of type " + in.str() + " does not match the result " + out.str());
      }
    }
    return add(std::move(n));
  }

  // A row reduction's result at the iteration point's row: a RowValue node of its phase
  // (planned once, its operand read over the row).
  int row_value(const Equation& e, const IndexMap& map) {
    std::string why;
    if (!reduction_supported(e, &why)) refuse(e, why);
    const Shape& operand = e.inputs[0].aval().shape;
    if (operand != rows_->operand_shape ||
        canonical_dims(e.params.get_ints("axes"), static_cast<int64_t>(operand.size())) != rows_->axes)
      refuse(e, "a rows kernel's reductions must share the operand shape " + shape_str(rows_->operand_shape) +
                    " and axes " + shape_str(rows_->axes));
    if (map != rows_->row_map)
      refuse(e, "its result is read at another row than its own (only broadcasts along the reduced axes fuse with it)");
    int phase = -1;
    if (auto it = phase_of_.find(&e); it != phase_of_.end()) {
      phase = it->second;
    } else {
      PlanPhase ph;
      ph.node = value(e.inputs[0], rows_->operand_map);
      ph.dtype = e.outputs[0].aval.dtype;
      ph.reduce = e.primitive;
      phase = static_cast<int>(plan.phases.size());
      plan.phases.push_back(ph);
      phase_of_.emplace(&e, phase);
    }
    PlanNode n;
    n.kind = PlanNode::Kind::RowValue;
    n.dtype = e.outputs[0].aval.dtype;
    n.phase = phase;
    return add(std::move(n));
  }

 public:
  // A "rows" kernel's iteration space: reductions over `axes` of `operand_shape`.
  struct Rows {
    Shape operand_shape;
    std::vector<int64_t> axes;
    IndexMap operand_map;  // the operand's index at the iteration point
    IndexMap row_map;      // the row's (kept) index at the iteration point
  };
  void set_rows(Rows rows) { rows_ = std::move(rows); }

 private:
  // The operand's index map (for iota: the value's) of an index op whose result is read
  // through `map`: the primitive's affine map (its lowering) composed with `map`.
  IndexMap compose(const Equation& e, const IndexMap& map) {
    std::vector<Aval> in;
    for (const Atom& a : e.inputs) in.push_back(a.aval());
    lowering::IndexMapResult r = e.primitive->rules().lowering.index_map(in, e.outputs[0].aval, e.params);
    if (!r.why_not.empty()) refuse(e, r.why_not);
    const lowering::AffineMap& m = r.map;
    IndexMap rows(m.coef.size(), zero_affine(n_));
    for (size_t k = 0; k < m.coef.size(); ++k) {
      if (m.coef[k].size() != map.size()) refuse(e, "its index map does not match the result's rank");
      rows[k] = combine(map, m.coef[k], n_);
      rows[k].offset += m.offset[k];
    }
    return rows;
  }

  size_t n_;
  std::map<int64_t, int> inputs_;
  std::vector<std::vector<int64_t>> strides_;  // per input: element strides of its layout
  std::vector<bool> contiguous_;               // per input: row-major
  std::map<int64_t, const Equation*> defs_;
  std::unordered_map<NodeKey, int, KeyHash> memo_;
  std::unordered_map<ValueKey, int, KeyHash> planned_;  // (variable, index map) -> its node
  std::optional<Rows> rows_;                      // set when planning a "rows" kernel
  std::map<const Equation*, int> phase_of_;       // row reduction -> its phase
};

IndexMap identity_map(const std::vector<size_t>& positions, size_t n) {
  IndexMap rows;
  for (size_t p : positions) {
    Affine a = zero_affine(n);
    a.coef[p] = 1;
    rows.push_back(a);
  }
  return rows;
}

// Every affine expression over the iteration dims: loads' and iotas' indices, outputs'.
std::vector<Affine*> affine_indices(KernelPlan& plan) {
  std::vector<Affine*> all;
  for (PlanNode& n : plan.nodes)
    if (n.kind == PlanNode::Kind::Load || n.kind == PlanNode::Kind::Iota) all.push_back(&n.index);
  for (PlanOutput& o : plan.outputs) all.push_back(&o.index);
  return all;
}

// Drops size-1 dims and merges neighbours (within the kept or the reduced group) whose
// coefficients compose in every affine expression, so contiguous work is one flat loop.
void collapse(KernelPlan& plan, std::vector<int64_t> dims, std::vector<bool> kept) {
  const std::vector<Affine*> all = affine_indices(plan);
  auto erase_dim = [&](size_t d) {
    dims.erase(dims.begin() + static_cast<long>(d));
    kept.erase(kept.begin() + static_cast<long>(d));
    for (Affine* a : all) a->coef.erase(a->coef.begin() + static_cast<long>(d));
  };
  for (size_t d = dims.size(); d-- > 0;)
    if (dims[d] == 1) erase_dim(d);
  for (size_t d = dims.size() - std::min<size_t>(dims.size(), 1); d-- > 0;) {
    if (kept[d] != kept[d + 1]) continue;
    bool composes = std::all_of(all.begin(), all.end(),
                                [&](const Affine* a) { return a->coef[d] == a->coef[d + 1] * dims[d + 1]; });
    if (!composes) continue;
    dims[d] *= dims[d + 1];
    for (Affine* a : all) a->coef[d] = a->coef[d + 1];
    erase_dim(d + 1);
  }
  plan.dims = dims;
  plan.num_kept = static_cast<int>(std::count(kept.begin(), kept.end(), true));
}

// Vector blocks and interleaving of an elementwise loop, for a vector ISA.
//
// A loop iteration of a fused body is one long dependent chain (x*y+0.5, sin, -x,
// tanh, ...): run one vector at a time, each op waits for the one before (3-4 cycles on
// Zen 1), and the out-of-order window, a couple hundred micro-ops, holds too little of
// the next iteration to overlap it. Two independent vectors per iteration double the
// work in flight: measured on Zen 1 (AVX2, 2 threads, 65536 float32), ns per element
// and round of a 20-op chain of mul/add/sin/sub/tanh 2.44 -> 1.56, sin chains 1.18 ->
// 0.85, tanh 0.97 -> 0.65, plain arithmetic 0.19 -> 0.16. Four vectors measured no
// faster than two while each inline function's rare-path test ended its vector's basic
// block (each chain then scheduled alone); with the tests of the parts shared
// (scalar_ops.cpp, share_rare_tests) four are faster on every long chain measured (Zen 1,
// 2 threads, 4M elements, f32 / f64 ms): selu 2.90 -> 2.46 / 8.4 -> 6.1, softplus 6.68
// -> 5.78 / 18.7 -> 15.3, sigmoid 2.78 -> 2.54 / 8.1 -> 6.4, gelu's tanh form 3.14 ->
// 2.87, tanh(tanh(x)) 4.66 -> 4.22 / 18.2 -> 15.5, a degree-11 polynomial 2.62 -> 1.99,
// exp(0.1 exp(x)) 4.66 -> 3.54 / 14.7 -> 9.9, tanh(x) 2 + 1 unchanged; selu over 1.6e7
// floats 11.45 -> 9.62 ms. The code doubles: exp(0.1 exp(x))'s first call 20 -> 24 ms,
// the others within noise. A length that is a multiple of two vectors but not of four
// gets two. A chain is long when the op costs on one path add up to 10
// (lowering.cost: a transcendental 8, plain arithmetic 1): softplus log1p(exp(x)) ran
// 0.76-0.81x the time, gelu's tanh form 0.83x, selu 0.94-0.99x (1M float32). Shorter
// bodies gain nothing: one libmvec call, or two side by side (sin(x) + cos(y)), already
// overlap across iterations, and interleaved they spill around the calls (0-5% slower).
// A large body (large_body: kLargeBodyOps, kLargeBodyChainedMath) runs in the same
// blocks of four vectors, but as one vector of four registers (kLargeBodyVectors), not
// interleaved: interleaved, LLVM's code generator took 2.2x as long on a 250-op kernel
// (register allocation 4x), and its transcendentals are calls of outlined math
// (scalar_ops.h), one per register vector, each a dependent chain the out-of-order
// window does not overlap with the next (a 2000-op chain of mul/add/sin/sub/tanh over
// 65536 floats, one register a call: 0.84 ns per element and transcendental on the
// 2-core Zen 3, against 0.25 for the inline code of shorter chains). A call on four
// registers computes their four chains side by side: 0.25 ns, the chain's run 44 -> 13
// ms; a 200-op chain of plain arithmetic 1.14 -> 0.39 ms. Such a body, mostly calls, is
// compiled without LLVM's optimizing code generator (llvm_session.cpp), which spent 2.9x
// as long on its wider vectors.
//
// A flat loop whose length is a multiple of lanes x interleave runs in blocks of exactly
// that: the threads split the blocks, and each block's loop becomes one vector iteration
// with no scalar remainder beside it (a remainder loop cost 40% of a 250-op kernel's code
// generation, 88 -> 51 ms). Blocks of several vector iterations made the register
// allocator rotate a rational function's constants through registers (float32 erf 20%
// slower), so a block is one iteration. Otherwise a length that is a multiple of the
// lanes alone runs in one-vector blocks, without interleaving; a loop that keeps a
// remainder is interleaved only where its inner loop is long beside the remainder.
struct VectorBlocks {
  int64_t lanes = 0, interleave = 1;
};

VectorBlocks vector_blocks(KernelPlan& plan, cpu::VectorIsa isa) {
  constexpr int64_t kInterleavedVectors = 4;
  constexpr int64_t kMinInterleavedDepth = 10;  // op costs (lowering.cost, 1 for plain arithmetic)
  const int64_t vector_bytes = isa == cpu::VectorIsa::Avx512 ? 64 : isa == cpu::VectorIsa::Avx2 ? 32 : 0;
  int64_t widest = 1, depth = 0;  // LLVM widens a loop to the lanes of its widest element type
  std::vector<int64_t> depths(plan.nodes.size(), 0);  // op costs on the longest path to each node
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode& n = plan.nodes[i];
    widest = std::max<int64_t>(widest, static_cast<int64_t>(itemsize(n.dtype)));
    if (n.kind != PlanNode::Kind::Op) continue;
    for (int o : n.operands) depths[i] = std::max(depths[i], depths[static_cast<size_t>(o)]);
    depths[i] += op_cost(*n.eqn->primitive);
    depth = std::max(depth, depths[i]);
  }
  for (const PlanOutput& o : plan.outputs) widest = std::max<int64_t>(widest, static_cast<int64_t>(itemsize(o.dtype)));
  const int64_t lanes = vector_bytes / widest;
  if (lanes < 2 || plan.dims.empty()) return {};
  const bool long_chain = depth >= kMinInterleavedDepth;
  const int64_t interleave = !long_chain ? 1 : large_body(plan) ? kLargeBodyVectors : kInterleavedVectors;
  // The interleaves tried, most first: kInterleavedVectors, halved down to 1.
  std::vector<int64_t> interleaves;
  for (int64_t k = interleave; k >= 1; k /= 2) interleaves.push_back(k);
  if (plan.dims.size() == 1)
    for (int64_t k : interleaves) {
      const int64_t block = lanes * k, n = plan.dims[0];
      if (n <= block || n % block != 0) continue;
      for (Affine* a : affine_indices(plan)) a->coef = {a->coef[0] * block, a->coef[0]};
      plan.dims = {n / block, block};
      plan.num_kept = 2;
      return {lanes, k};
    }
  // Not split: interleaving leaves up to lanes x interleave - 1 elements to the scalar
  // remainder, each ~30x a vector lane's cost (a math call per element). A flat loop has
  // one remainder per thread's range, negligible past 64 vector iterations; a loop nest
  // has one per row, so its rows may leave no more to it than without interleaving.
  const int64_t inner = plan.dims.back();
  // Rows of a few vectors that full vectors do not divide are not interleaved (nor their
  // width fixed): LLVM, knowing the row's length, picks vectors that divide it. exp(a - m)
  // / m over rows of 40 floats, interleaved twice (a long chain), ran 16 + 16 + 8 scalar
  // points a row: 0.54 ms for 1.6e6 floats, 0.22 in LLVM's vectors of 8 (0.21 at rows of
  // 32); rows of 100 0.26 -> 0.21.
  constexpr int64_t kShortRowVectors = 8;
  if (plan.dims.size() >= 2 && inner % lanes != 0 && inner < kShortRowVectors * lanes) return {lanes, 1};
  for (int64_t k : interleaves) {
    const int64_t block = lanes * k;
    if (plan.dims.size() == 1 ? inner >= 64 * block : inner % block == inner % lanes) return {lanes, k};
  }
  return {lanes, 1};
}

// Whether an elementwise loop nest runs its vectors across rows (LoopSchedule::across_rows):
// rows of fewer than 16 points that its vectors do not divide, in a body small enough to
// repeat once per point. Along such a row the vectorizer leaves a scalar remainder or
// masks one vector whose dependent chain (an inline exp) runs alone; across rows each
// vector holds one point of 16 or 8 rows (strided loads and stores, which LLVM groups
// into whole vectors and shuffles), and a row's points are independent chains. Measured
// on the 2-core Xeon, 1.6e6 elements as [n, c] with a broadcast [n, 1] or [c] operand,
// jit against eager (us): float32 c = 3 exp(a - m) 4463 -> 250 (eager 1272), sin(a * s)
// 4910 -> 219 (1183), a * m 1710 -> 331 (1136); c = 5, 6, 7, 12 alike; float64 c = 9 to
// 15 exp 1455-2425 -> 576-629 (eager 920-970). Rows of 16 to 31 floats ran 1.2-2x slower
// across (17 copies of the body spill), and rows of whole vectors gain nothing.
bool runs_across_rows(const KernelPlan& plan, int64_t lanes) {
  constexpr int64_t kMaxPoints = 15, kMaxBodyCopies = 256;  // ops of the repeated body
  if (lanes < 2 || plan.dims.size() < 2) return false;
  const int64_t points = plan.dims.back();
  int64_t ops = 0;
  for (const PlanNode& n : plan.nodes) ops += n.kind == PlanNode::Kind::Op;
  return points <= kMaxPoints && points % lanes != 0 && points * std::max<int64_t>(ops, 1) <= kMaxBodyCopies;
}

constexpr int64_t kFullReduceChunk = 1 << 14;  // elements per partial of a full reduction
constexpr int64_t kColumnBlock = 1024;        // most output elements a column-reduction unit owns
constexpr int64_t kColumnUnits = 8;           // units a column reduction aims for

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= dims[d];
  return p;
}

// Whether more loads of a reduction plan run along memory in the innermost kept dim than
// in the innermost reduced one: its inner loops then run along the kept dim (ColumnReduce,
// Columns) instead of gathering with a stride. Loads the same along the reduced dims (a
// row value: one element a row) take no part: a cross-entropy gradient's rows over 16000
// x 100 floats, beside a per-row value and the labels, ran as columns at twice the time.
bool runs_along_kept(const KernelPlan& plan) {
  const size_t nd = plan.dims.size(), nk = static_cast<size_t>(plan.num_kept);
  if (nk == 0 || nd == nk) return false;
  int along_kept = 0, along_reduced = 0;
  for (const PlanNode& n : plan.nodes)
    if (n.kind == PlanNode::Kind::Load) {
      bool varies = false;
      for (size_t d = nk; d < nd; ++d) varies = varies || n.index.coef[d] != 0;
      if (!varies) continue;
      along_kept += std::abs(n.index.coef[nk - 1]) == 1;
      along_reduced += std::abs(n.index.coef[nd - 1]) == 1;
    }
  return along_kept > along_reduced;
}

// Blocks of at most kColumnBlock elements of the innermost kept dim, a multiple of
// `floor` (down to it) when that makes about kColumnUnits units for the threads.
int64_t column_block(const std::vector<int64_t>& dims, size_t nk, int64_t floor = 64) {
  const int64_t outer = product(dims, 0, nk - 1), inner = dims[nk - 1];
  const int64_t wanted = std::max<int64_t>(1, kColumnUnits / std::max<int64_t>(outer, 1));
  const int64_t block = (std::max<int64_t>(1, (inner + wanted - 1) / wanted) + floor - 1) / floor * floor;
  return std::clamp<int64_t>(block, floor, kColumnBlock);
}

LoopSchedule schedule(const KernelPlan& plan) {
  LoopSchedule s;
  for (const PlanNode& n : plan.nodes)
    if (n.kind == PlanNode::Kind::Op) s.cost += op_cost(*n.eqn->primitive) - 1;
  const auto& dims = plan.dims;
  const size_t nd = dims.size(), nk = static_cast<size_t>(plan.num_kept);
  if (plan.kind == KernelPlan::Kind::Loop) {
    s.mode = LoopSchedule::Mode::Elementwise;
    if (nd == 0) {
      s.units = 1;
    } else if (nd == 1) {
      s.units = dims[0];
    } else {
      s.units = product(dims, 0, nd - 1);
      s.elements_per_unit = dims[nd - 1];
    }
    return s;
  }
  const int64_t reduced = product(dims, nk, nd);
  if (plan.kind == KernelPlan::Kind::Rows && runs_along_kept(plan)) {
    s.mode = LoopSchedule::Mode::Columns;
    // A block's operands over every reduced row stay within about kRowBlockBytes, so
    // later passes read them from cache; past that, the threads' share decides it.
    const bool full_outputs =
        std::any_of(plan.outputs.begin(), plan.outputs.end(), [](const PlanOutput& o) { return !o.per_row; });
    int64_t column_bytes = 0;  // a column of every input
    for (const PlanNode& node : plan.nodes)
      if (node.kind == PlanNode::Kind::Load) column_bytes += reduced * itemsize(node.dtype);
    // Blocks down to 32 elements: a columns kernel's passes stream the reduced rows from
    // memory when they do not fit a cache, and with 64 columns in one block a batch mean
    // over 10^6 x 64 floats ran on one thread (53 ms against 25 in blocks of 32; 16 took 38).
    constexpr int64_t kFloor = 32;
    const int64_t inner = dims[nk - 1];
    const int64_t fits = std::max<int64_t>(kFloor, kRowBlockBytes / std::max<int64_t>(column_bytes, 1) / kFloor * kFloor);
    s.column_block = std::min(column_block(dims, nk, kFloor), fits);
    s.units = product(dims, 0, nk - 1) * ((inner + s.column_block - 1) / s.column_block);
    s.elements_per_unit = std::min(s.column_block, inner) * reduced * (plan.num_passes + (full_outputs ? 1 : 0));
    return s;
  }
  if (plan.kind == KernelPlan::Kind::Rows) {
    s.mode = LoopSchedule::Mode::Rows;
    const bool full_outputs =
        std::any_of(plan.outputs.begin(), plan.outputs.end(), [](const PlanOutput& o) { return !o.per_row; });
    s.units = product(dims, 0, nk);
    s.elements_per_unit = reduced * (plan.num_passes + (full_outputs ? 1 : 0));
    int64_t row_bytes = 0;  // a row of every input, and of every stash
    for (const PlanNode& node : plan.nodes)
      if (node.kind == PlanNode::Kind::Load) row_bytes += reduced * itemsize(node.dtype);
    for (const PlanPhase& ph : plan.phases)
      if (ph.stash) row_bytes += reduced * itemsize(ph.dtype);
    s.chunk_rows = std::clamp<int64_t>(kRowBlockBytes / std::max<int64_t>(row_bytes, 1), 1, kMaxRowBlock);
    for (size_t m = 0; m < plan.outputs.size(); ++m)
      if (plan.outputs[m].total()) s.totals.push_back(static_cast<int>(m));
    return s;
  }
  if (nk == 0) {
    s.mode = LoopSchedule::Mode::FullReduce;
    const int64_t rows = nd > 0 ? dims[0] : 1;
    const int64_t inner = nd > 0 ? product(dims, 1, nd) : 1;
    s.chunk_rows = std::max<int64_t>(1, kFullReduceChunk / std::max<int64_t>(inner, 1));
    s.units = (rows + s.chunk_rows - 1) / s.chunk_rows;
    s.elements_per_unit = s.chunk_rows * inner;
    return s;
  }
  if (runs_along_kept(plan)) {
    s.mode = LoopSchedule::Mode::ColumnReduce;
    // The block never changes the results: each output is accumulated over the reduced
    // rows in the same order whatever its block.
    const int64_t outer = product(dims, 0, nk - 1), inner = dims[nk - 1];
    s.column_block = column_block(dims, nk);
    const int64_t column_units = outer * ((inner + s.column_block - 1) / s.column_block);
    // Tall and narrow (sum(x, 0) of a [100000, 16] array: one block, one thread at 0.58
    // ms against eager's 0.37): the first reduced dim splits into parts of at least
    // kMinPartRows rows, up to kColumnUnits units in all. The parts are the plan's, not
    // the threads', so results do not depend on the thread count.
    constexpr int64_t kMinPartRows = 1024, kMinPartElements = 1 << 15;
    const int64_t rows = dims[nk];
    if (column_units > 0 && column_units < kColumnUnits && rows > 0) {
      const int64_t per_row = std::min(s.column_block, inner) * (reduced / rows);
      const int64_t parts = std::min({(kColumnUnits + column_units - 1) / column_units, rows / kMinPartRows,
                                      rows * per_row / kMinPartElements});
      if (parts >= 2) {
        s.chunk_rows = (rows + parts - 1) / parts;
        s.row_parts = (rows + s.chunk_rows - 1) / s.chunk_rows;
        s.kept_elements = outer * inner;
      }
    }
    s.units = column_units * s.row_parts;
    s.elements_per_unit = std::min(s.column_block, inner) * reduced / s.row_parts;
    return s;
  }
  s.mode = LoopSchedule::Mode::RowReduce;
  s.units = product(dims, 0, nk);
  s.elements_per_unit = reduced;
  return s;
}

// The iteration space of a reduction over `axes` of `shape`: kept dims, then reduced dims.
struct ReducedSpace {
  std::vector<size_t> position;  // operand dim -> iteration dim
  std::vector<int64_t> dims;
  std::vector<bool> kept;
  Shape row_shape;        // the kept dims: a reduction's result
  IndexMap operand_map;   // the operand's index at the iteration point
  IndexMap row_map;       // the row's index at the iteration point
  Affine row_index;       // the row's element offset in a row-shaped output
  Shape kept_row_shape;   // the row shape with each reduced dim kept as 1 (keepdims)
  IndexMap kept_row_map;  // a kept_row_shape value's index at the iteration point

  ReducedSpace(const Shape& shape, const std::vector<int64_t>& axes) : position(shape.size()) {
    const size_t n = shape.size();
    std::vector<size_t> kept_positions;
    for (size_t d = 0; d < n; ++d)
      if (!contains(axes, static_cast<int64_t>(d))) {
        position[d] = dims.size();
        kept_positions.push_back(dims.size());
        dims.push_back(shape[d]);
        kept.push_back(true);
      }
    for (int64_t a : axes) {
      position[static_cast<size_t>(a)] = dims.size();
      dims.push_back(shape[static_cast<size_t>(a)]);
      kept.push_back(false);
    }
    operand_map = identity_map(position, n);
    row_map = identity_map(kept_positions, n);
    for (size_t k : kept_positions) row_shape.push_back(dims[k]);
    row_index = combine(row_map, jx::detail::contiguous_strides(row_shape), n);
    for (size_t d = 0; d < n; ++d) {
      const bool reduced = contains(axes, static_cast<int64_t>(d));
      kept_row_shape.push_back(reduced ? 1 : shape[d]);
      Affine a = zero_affine(n);
      if (!reduced) a.coef[position[d]] = 1;
      kept_row_map.push_back(a);
    }
  }
};

// Passes of a rows plan: a phase runs one pass after the latest phase its operand reads.
// A phase's operand is planned before its RowValue node, so one sweep in node order sees
// every phase's pass before a node reads it.
void assign_passes(KernelPlan& plan) {
  std::vector<int> level(plan.nodes.size(), 0);  // passes a node's value needs done first
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode& n = plan.nodes[i];
    if (n.kind == PlanNode::Kind::RowValue)
      level[i] = level[static_cast<size_t>(plan.phases[static_cast<size_t>(n.phase)].node)] + 1;
    for (int o : n.operands) level[i] = std::max(level[i], level[static_cast<size_t>(o)]);
  }
  plan.num_passes = 0;
  for (PlanPhase& ph : plan.phases) {
    ph.pass = level[static_cast<size_t>(ph.node)];
    plan.num_passes = std::max(plan.num_passes, ph.pass + 1);
  }
}

// Nodes a set of targets reads, stopping at nodes `loaded` marks (stashed earlier).
std::vector<char> cone(const KernelPlan& plan, const std::vector<int>& targets, const std::vector<char>& loaded) {
  std::vector<char> in(plan.nodes.size(), 0);
  for (int t : targets) in[static_cast<size_t>(t)] = 1;
  for (size_t i = plan.nodes.size(); i-- > 0;) {
    if (!in[i] || loaded[i]) continue;
    for (int o : plan.nodes[i].operands) in[static_cast<size_t>(o)] = 1;
  }
  return in;
}

// Stashes a phase's reduced operand when a later pass reads it and recomputing it would
// cost a transcendental (exp(x - m) in a softmax): storing it to a row buffer in cache
// and loading it back costs less than another exp per element.
void choose_stashes(KernelPlan& plan, int64_t row_elements) {
  int64_t bytes = 0;
  std::vector<char> stashed(plan.nodes.size(), 0);
  for (int pass = 0; pass < plan.num_passes; ++pass)
    for (PlanPhase& ph : plan.phases) {
      if (ph.pass != pass) continue;
      const PlanNode& x = plan.nodes[static_cast<size_t>(ph.node)];
      if (x.kind != PlanNode::Kind::Op || stashed[static_cast<size_t>(ph.node)]) continue;
      std::vector<int> later;
      for (const PlanPhase& other : plan.phases)
        if (other.pass > pass) later.push_back(other.node);
      for (const PlanOutput& o : plan.outputs)
        if (!o.per_row) later.push_back(o.node);
      if (!cone(plan, later, stashed)[static_cast<size_t>(ph.node)]) continue;
      const std::vector<char> own = cone(plan, {ph.node}, stashed);
      bool costly = false;
      for (size_t i = 0; i < own.size(); ++i)
        costly = costly || (own[i] && plan.nodes[i].kind == PlanNode::Kind::Op && op_cost(*plan.nodes[i].eqn->primitive) > 1);
      const int64_t size = row_elements * itemsize(ph.dtype);
      if (!costly || bytes + size > kMaxRowStashBytes) continue;
      bytes += size;
      ph.stash = true;
      stashed[static_cast<size_t>(ph.node)] = 1;
    }
}

// `e` if it reduces a value of the row shape (either spelling) over every axis, a rows
// kernel's total; otherwise null.
const Equation* row_total(const Equation* e, const ReducedSpace& space) {
  if (!e || !e->primitive->has(kReduction) || e->inputs.size() != 1) return nullptr;
  const Shape& operand = e->inputs[0].aval().shape;
  if (operand != space.row_shape && operand != space.kept_row_shape) return nullptr;
  const std::vector<int64_t> axes = canonical_dims(e->params.get_ints("axes"), static_cast<int64_t>(operand.size()));
  if (axes.size() != operand.size()) return nullptr;
  std::string why;
  if (!reduction_supported(*e, &why)) fail("jit", why);
  return e;
}

// A "rows" fusion: row reductions over the same trailing-or-not axes of one operand
// shape, elementwise work before and after them over that shape (reading their results
// through broadcasts along the reduced axes), and work over the row shape between them.
KernelPlan plan_rows(const Jaxpr& fused, const InputStrides& input_strides) {
  const Equation* first = nullptr;
  for (const Equation& e : fused.eqns)
    if (e.primitive->has(kReduction)) {
      first = &e;
      break;
    }
  if (!first) fail("jit", "a rows fusion must hold a reduction");
  const Shape xshape = first->inputs[0].aval().shape;
  const std::vector<int64_t> axes =
      canonical_dims(first->params.get_ints("axes"), static_cast<int64_t>(xshape.size()));
  const ReducedSpace space(xshape, axes);
  if (space.row_shape.empty()) fail("jit", "a rows fusion needs kept dims, got a reduction of ", shape_str(xshape), " over every axis");
  const size_t n = xshape.size();
  Planner p(fused, n, input_strides);
  p.plan.kind = KernelPlan::Kind::Rows;
  p.set_rows({xshape, axes, space.operand_map, space.row_map});
  const Affine full_index = combine(space.operand_map, jx::detail::contiguous_strides(xshape), n);
  for (const Atom& o : fused.outvars) {
    PlanOutput out;
    out.dtype = o.aval().dtype;
    if (o.aval().shape == xshape) {
      out.node = p.value(o, space.operand_map);
      out.index = full_index;
    } else if (o.aval().shape == space.row_shape || o.aval().shape == space.kept_row_shape) {
      // Either spelling of the row shape has the same elements in the same order.
      out.node = p.value(o, o.aval().shape == space.row_shape ? space.row_map : space.kept_row_map);
      out.index = space.row_index;
      out.per_row = true;
    } else if (const Equation* total = row_total(p.definition(o), space)) {
      // A reduction of a per-row value over every row (PlanOutput::total).
      const Shape& operand = total->inputs[0].aval().shape;
      out.node = p.value(total->inputs[0], operand == space.row_shape ? space.row_map : space.kept_row_map);
      out.index = zero_affine(n);
      out.per_row = true;
      out.reduce = total->primitive;
    } else {
      fail("jit", "an output of a rows fusion must have the operand's shape ", shape_str(xshape), " or the row's ",
           shape_str(space.row_shape), " (or ", shape_str(space.kept_row_shape), "), got ", o.aval().str());
    }
    p.plan.outputs.push_back(out);
  }
  if (p.plan.phases.empty()) fail("jit", "no output of the rows fusion reads its reductions");
  assign_passes(p.plan);
  int64_t row_elements = 1;
  for (int64_t a : axes) row_elements *= xshape[static_cast<size_t>(a)];
  collapse(p.plan, space.dims, space.kept);
  const bool totals = std::any_of(p.plan.outputs.begin(), p.plan.outputs.end(), [](const PlanOutput& o) { return o.total(); });
  if (runs_along_kept(p.plan)) {
    if (totals) fail("jit", "a rows fusion whose rows run across memory (the columns schedule) cannot total its rows");
  } else {
    choose_stashes(p.plan, row_elements);  // Columns recomputes
  }
  p.plan.schedule = schedule(p.plan);
  return std::move(p.plan);
}

}  // namespace

bool can_write_over(const KernelPlan& plan, int output, int input) {
  if (plan.kind == KernelPlan::Kind::Reduction) return false;
  if (output < 0 || static_cast<size_t>(output) >= plan.outputs.size()) return false;
  if (input < 0 || static_cast<size_t>(input) >= plan.input_dtypes.size()) return false;
  const PlanOutput& out = plan.outputs[static_cast<size_t>(output)];
  if (out.total()) return false;  // stored by the finish function, not a point
  if (itemsize(plan.input_dtypes[static_cast<size_t>(input)]) != itemsize(out.dtype)) return false;
  return std::all_of(plan.nodes.begin(), plan.nodes.end(), [&](const PlanNode& n) {
    return n.kind != PlanNode::Kind::Load || n.input != input || n.index == out.index;
  });
}

OutputsOverInputs writable_pairs(const KernelPlan& plan, const std::function<bool(int input)>& eligible) {
  OutputsOverInputs pairs;
  for (int o = 0; o < static_cast<int>(plan.outputs.size()); ++o)
    for (int i = 0; i < static_cast<int>(plan.input_dtypes.size()); ++i)
      if (eligible(i) && can_write_over(plan, o, i)) pairs.push_back({o, i});
  return pairs;
}

bool is_index_op(const Primitive& p) { return static_cast<bool>(p.rules().lowering.index_map); }

int op_cost(const Primitive& p) { return std::max(1, p.rules().lowering.cost); }

// The chained count: transcendentals (lax::elemental::kTranscendentalCost) on one
// dependent path, the most over the body's paths; one pass in node order, each node's
// count from its operands'.
bool large_body(const KernelPlan& plan) {
  int64_t ops = 0, chained = 0;
  std::vector<int64_t> on_path(plan.nodes.size(), 0);
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode& n = plan.nodes[i];
    if (n.kind != PlanNode::Kind::Op) continue;
    ++ops;
    for (int o : n.operands) on_path[i] = std::max(on_path[i], on_path[static_cast<size_t>(o)]);
    on_path[i] += op_cost(*n.eqn->primitive) >= lax::elemental::kTranscendentalCost;
    chained = std::max(chained, on_path[i]);
  }
  return ops > kLargeBodyOps || (plan.kind == KernelPlan::Kind::Loop && chained >= kLargeBodyChainedMath);
}

namespace {

// Whether a reduction of rows is better planned as a rows kernel (plan_rows), whose loop
// over a block's rows runs across rows (rows_emitter.cpp): where the row reduction runs
// each row's few points as one masked vector and a horizontal reduction, across rows each
// vector holds a point of 8 rows and no row is reduced horizontally. Rows of
// kAcrossRowsMin to kAcrossRowsMax contiguous 4-byte points, AVX2 (where a block's rows
// are staged by transposes; AVX-512 gathers them, not measured for plain reductions).
// Over 160000 rows on the 2-core Zen 3, us, row reduction -> rows kernel: sum of exp,
// rows of 8 474 -> 332, 9 786 -> 310, 10 787 -> 484, 11 782 -> 531; of tanh, 8 341 ->
// 247, 9 811 -> 352, 11 727 -> 420; of |x|, 8 162 -> 98, 9 210 -> 116, 11 219 -> 145; a
// max of |x|, 8 158 -> 131, 10 247 -> 158, 11 256 -> 164. Rows of 4 ran slower across
// (|x| 101 -> 134), rows of 16 too (exp 779 -> 965), rows of 23 and 32 level.
bool short_rows_reduce_across(const KernelPlan& plan, const InputStrides& input_strides, cpu::VectorIsa isa) {
  if (isa != cpu::VectorIsa::Avx2 || plan.schedule.mode != LoopSchedule::Mode::RowReduce) return false;
  if (plan.dims.size() != 2 || plan.num_kept != 1) return false;
  const int64_t points = plan.dims.back();
  if (points < kAcrossRowsMin || points > kAcrossRowsMax) return false;
  if (std::any_of(input_strides.begin(), input_strides.end(), [](const std::vector<int64_t>& s) { return !s.empty(); }))
    return false;
  const auto narrow = [](DType d) { return itemsize(d) <= 4; };
  return std::all_of(plan.nodes.begin(), plan.nodes.end(), [&](const PlanNode& n) { return narrow(n.dtype); }) &&
         std::all_of(plan.outputs.begin(), plan.outputs.end(), [&](const PlanOutput& o) { return narrow(o.dtype); });
}

KernelPlan plan_fused(const Jaxpr& fused, std::string_view kind, const InputStrides& input_strides, cpu::VectorIsa isa) {
  if (!fused.constvars.empty()) fail("jit", "a fused program must have no constvars");
  if (fused.outvars.empty()) fail("jit", "a fused program must have outputs");
  if (kind == "loop") {
    const Shape shape = fused.outvars[0].aval().shape;
    for (const Atom& o : fused.outvars)
      if (o.aval().shape != shape)
        fail("jit", "the outputs of a loop fusion must share one shape, got ", o.aval().str(), " and ",
             fused.outvars[0].aval().str());
    const size_t n = shape.size();
    Planner p(fused, n, input_strides);
    p.plan.kind = KernelPlan::Kind::Loop;
    std::vector<size_t> positions(n);
    for (size_t d = 0; d < n; ++d) positions[d] = d;
    const IndexMap identity = identity_map(positions, n);
    const std::vector<int64_t> strides = jx::detail::contiguous_strides(shape);
    for (const Atom& o : fused.outvars) {
      PlanOutput out;
      out.node = p.value(o, identity);
      out.dtype = o.aval().dtype;
      out.index = combine(identity, strides, n);
      p.plan.outputs.push_back(out);
    }
    collapse(p.plan, shape, std::vector<bool>(n, true));
    const VectorBlocks blocks = vector_blocks(p.plan, isa);
    p.plan.schedule = schedule(p.plan);
    p.plan.schedule.vector_lanes = blocks.lanes;
    p.plan.schedule.interleave = blocks.interleave;
    if (runs_across_rows(p.plan, blocks.lanes)) {
      p.plan.schedule.across_rows = true;
      p.plan.schedule.interleave = 1;
    }
    return std::move(p.plan);
  }
  if (kind == "rows") return plan_rows(fused, input_strides);
  if (kind != "reduction") fail("jit", "a loop kernel's kind must be loop, reduction or rows, got '", kind, "'");

  // Every output is a reduction over the same axes of an operand of the same shape.
  Shape xshape;
  std::vector<int64_t> axes;
  std::vector<const Equation*> reductions;
  for (size_t i = 0; i < fused.outvars.size(); ++i) {
    const Atom& o = fused.outvars[i];
    const Equation* def = nullptr;
    if (o.is_var())
      for (const Equation& e : fused.eqns)
        for (const Var& v : e.outputs)
          if (v.id == o.var().id) def = &e;
    if (!def || !def->primitive->has(kReduction))
      fail("jit", "output ", i, " of a reduction fusion (", o.aval().str(), ") is not computed by a reduction");
    std::string why;
    if (!reduction_supported(*def, &why)) refuse(*def, why);
    const Shape& s = def->inputs[0].aval().shape;
    std::vector<int64_t> a = canonical_dims(def->params.get_ints("axes"), static_cast<int64_t>(s.size()));
    if (i == 0) {
      xshape = s;
      axes = a;
    } else if (s != xshape || a != axes) {
      fail("jit", "the reductions of a reduction fusion must share operand shape and axes, got ", shape_str(xshape),
           " axes ", shape_str(axes), " and ", shape_str(s), " axes ", shape_str(a));
    }
    reductions.push_back(def);
  }
  const ReducedSpace space(xshape, axes);
  Planner p(fused, space.position.size(), input_strides);
  p.plan.kind = KernelPlan::Kind::Reduction;
  for (const Equation* r : reductions) {
    PlanOutput out;
    out.node = p.value(r->inputs[0], space.operand_map);
    out.dtype = r->outputs[0].aval.dtype;
    out.reduce = r->primitive;
    out.index = space.row_index;
    p.plan.outputs.push_back(out);
  }
  collapse(p.plan, space.dims, space.kept);
  p.plan.schedule = schedule(p.plan);
  if (short_rows_reduce_across(p.plan, input_strides, isa)) {
    try {
      return plan_rows(fused, input_strides);
    } catch (const Error&) {  // a body the rows planner does not take keeps the row loop
    }
  }
  return std::move(p.plan);
}

}  // namespace

KernelPlan plan_kernel(const Jaxpr& fused, std::string_view kind, const InputStrides& input_strides, cpu::VectorIsa isa,
                       const OutputsOverInputs& over) {
  KernelPlan plan = plan_fused(fused, kind, input_strides, isa);
  std::vector<bool> written(plan.input_dtypes.size(), false);
  for (const OutputOverInput& o : over) {
    if (!can_write_over(plan, o.output, o.input) || written[static_cast<size_t>(o.input)] ||
        plan.outputs[static_cast<size_t>(o.output)].over_input >= 0)
      fail("jit", "internal: output ", o.output, " of a ", kind, " kernel cannot be written over its input ", o.input);
    written[static_cast<size_t>(o.input)] = true;
    plan.outputs[static_cast<size_t>(o.output)].over_input = o.input;
  }
  return plan;
}

std::string KernelPlan::str() const {
  std::ostringstream os;
  static const char* const kKinds[] = {"loop", "reduction", "rows"};
  os << kKinds[static_cast<int>(kind)] << " dims " << shape_str(dims) << " kept " << num_kept << "\n";
  for (size_t i = 0; i < input_dtypes.size(); ++i) os << "in" << i << " " << dtype_name(input_dtypes[i]) << "\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const PlanNode& n = nodes[i];
    os << "n" << i << ":" << dtype_name(n.dtype) << " = ";
    switch (n.kind) {
      case PlanNode::Kind::Load: os << "load in" << n.input << " " << affine_str(n.index); break;
      case PlanNode::Kind::Iota: os << "iota " << affine_str(n.index); break;
      case PlanNode::Kind::Literal: os << "literal " << literal_str(n.literal); break;
      case PlanNode::Kind::RowValue: os << "row_value p" << n.phase; break;
      case PlanNode::Kind::Op: {
        os << n.eqn->primitive->name();
        if (!n.eqn->params.empty()) os << "[" << n.eqn->params.str() << "]";
        os << " (";
        for (size_t k = 0; k < n.operands.size(); ++k)
          os << (k ? " " : "") << "n" << n.operands[k] << ":" << dtype_name(n.eqn->inputs[k].aval().dtype)
             << (n.eqn->inputs[k].aval().weak_type ? "{weak}" : "");
        os << ")";
        break;
      }
    }
    os << "\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const PlanOutput& o = outputs[i];
    os << "out" << i << ":" << dtype_name(o.dtype) << " = n" << o.node << " " << affine_str(o.index);
    if (o.reduce) os << " " << o.reduce->name();
    if (o.per_row) os << " per_row";
    if (o.over_input >= 0) os << " over in" << o.over_input;
    os << "\n";
  }
  for (size_t i = 0; i < phases.size(); ++i) {
    const PlanPhase& ph = phases[i];
    os << "p" << i << ":" << dtype_name(ph.dtype) << " = " << ph.reduce->name() << " n" << ph.node << " pass " << ph.pass
       << (ph.stash ? " stash" : "") << "\n";
  }
  static const char* const kModes[] = {"elementwise", "row_reduce", "column_reduce", "full_reduce", "rows", "columns"};
  os << "schedule " << kModes[static_cast<int>(schedule.mode)] << " units " << schedule.units << " chunk_rows "
     << schedule.chunk_rows << " column_block " << schedule.column_block;
  if (schedule.row_parts > 1) os << " row_parts " << schedule.row_parts;
  if (schedule.vector_lanes) os << " lanes " << schedule.vector_lanes << " interleave " << schedule.interleave;
  if (schedule.across_rows) os << " across_rows";
  os << "\n";
  return os.str();
}

}  // namespace jx::compiler::codegen
