// Walks the primitive registry: every primitive the foundation promises exists, has its
// rules, and bind() routes through a trace installed on the stack.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "backend/backend.h"
#include "op_table.h"
#include "test_util.h"

namespace jx {
namespace {

// The primitives the foundation promises are the op table's (tests/op_table.cpp; its
// coverage test, op_table_test, checks the table against the registry both ways).
TEST(Registry, EveryFoundationPrimitiveIsRegisteredWithItsRules) {
  for (const op_table::OpRow& row : op_table::rows()) {
    const Primitive* p = find_primitive(row.primitive);
    ASSERT_NE(p, nullptr) << "missing primitive " << row.primitive;
    EXPECT_EQ(p->name(), row.primitive);
    EXPECT_TRUE(static_cast<bool>(p->rules().abstract_eval)) << row.primitive << " has no shape rule";
    // Its CPU kernel (src/backend/cpu/kernels/), or a platform-neutral impl.
    EXPECT_NO_THROW(detail::impl_for(*detail::default_cpu_device(), *p)) << row.primitive << " has no CPU impl";
  }
}

TEST(Registry, NamesAreLowercaseIdentifiers) {
  auto all = all_primitives();
  std::set<std::string> promised;
  for (const op_table::OpRow& row : op_table::rows()) promised.insert(row.primitive);
  EXPECT_GE(all.size(), promised.size());
  for (const Primitive* p : all) {
    for (char c : p->name()) EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_') << p->name();
  }
}

TEST(Registry, TraitsAreConsistent) {
  EXPECT_TRUE(find_primitive("add")->has(kElementwise));
  EXPECT_TRUE(find_primitive("add")->has(kCommutative));
  EXPECT_TRUE(find_primitive("mul")->has(kCommutative));
  EXPECT_FALSE(find_primitive("sub")->has(kCommutative));
  EXPECT_TRUE(find_primitive("reduce_sum")->has(kReduction));
  EXPECT_TRUE(find_primitive("reduce_sum")->has(kLinear));
  EXPECT_TRUE(find_primitive("transpose")->has(kLinear));
  EXPECT_TRUE(find_primitive("lt")->has(kNotDifferentiable));
  EXPECT_TRUE(find_primitive("argmax")->has(kNotDifferentiable));
  EXPECT_FALSE(find_primitive("sin")->has(kLinear));
}

// The lowering slot (jx/lowering.h) is filled where passes rely on it: reductions with a
// monoid have a reducer, index maps belong to data-movement ops, and the call primitives
// that hold sub-programs say so with kCallsSubprogram.
TEST(Registry, LoweringsAreConsistent) {
  for (const Primitive* p : all_primitives()) {
    const lowering::Lowering& l = p->rules().lowering;
    if (l.reducer) {
      EXPECT_TRUE(p->has(kReduction)) << p->name();
      EXPECT_TRUE(static_cast<bool>(l.reducer.identity) && static_cast<bool>(l.reducer.native)) << p->name();
    }
    if (l.index_map) EXPECT_FALSE(l.elemental) << p->name() << " is both an index map and elementwise";
    if (l.row_major_read || l.index_is_value) EXPECT_TRUE(static_cast<bool>(l.index_map)) << p->name();
    EXPECT_GE(l.cost, 0) << p->name();
  }
  for (const char* r : {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"})
    EXPECT_TRUE(static_cast<bool>(find_primitive(r)->rules().lowering.reducer)) << r;
  for (const char* m : {"broadcast_in_dim", "transpose", "slice", "rev", "squeeze", "expand_dims", "reshape", "iota"})
    EXPECT_TRUE(static_cast<bool>(find_primitive(m)->rules().lowering.index_map)) << m;
  EXPECT_TRUE(find_primitive("fusion") == nullptr || find_primitive("fusion")->has(kCallsSubprogram));
  // A plain call (inline_calls may inline it) holds its body in `jaxpr`.
  for (const char* c : {"closed_call", "jit", "linear_jit", "custom_jvp_call"}) {
    EXPECT_TRUE(find_primitive(c)->has(kCall)) << c;
    EXPECT_TRUE(find_primitive(c)->has(kCallsSubprogram)) << c;
  }
  // One identity for eager and native kernels: the reducer's is the eager kernel's result
  // on an empty operand.
  for (const char* r : {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min"})
    for (DType d : {DType::Int32, DType::UInt8, DType::Float32, DType::Float64}) {
      const Primitive& p = *find_primitive(r);
      Array empty = lax::convert_element_type(lax::reshape(Array(std::vector<double>{}), {0}), d);
      Array eager = jx::bind(p, std::vector<Array>{empty}, Params{{"axes", std::vector<int64_t>{0}}})[0];
      EXPECT_ALLCLOSE(p.rules().lowering.reducer.identity(d), eager, 0, 0) << r << " " << dtype_name(d);
    }
}

TEST(Registry, UnknownNameIsNull) { EXPECT_EQ(find_primitive("no_such_primitive"), nullptr); }

// A trace that records what it sees and evaluates eagerly: proves that jnp calls reach
// bind (the hook every transformation will use).
class RecordingTrace : public detail::Trace {
 public:
  std::vector<std::string> seen;
  std::vector<Array> process(const Primitive& p, std::span<const Array> in, const Params& params) override {
    seen.push_back(p.name());
    return p.eval(in, params);
  }
  std::string_view transformation() const override { return "recording"; }
};

TEST(Bind, NumpyCallsPassThroughTheTraceOnTheStack) {
  namespace jnp = jx::numpy;
  RecordingTrace trace;
  Array x = jnp::ones({3});
  Array y;
  {
    detail::TraceScope scope(&trace);
    y = jnp::sin(x) + 1.0;
  }
  EXPECT_NE(std::find(trace.seen.begin(), trace.seen.end(), "sin"), trace.seen.end());
  EXPECT_NE(std::find(trace.seen.begin(), trace.seen.end(), "add"), trace.seen.end());
  EXPECT_NEAR(y.to_vector<float>()[0], std::sin(1.0f) + 1.0f, 1e-6);
  EXPECT_EQ(detail::trace_stack_depth(), 0);
}

TEST(Bind, ShapeRuleErrorsNameThePrimitiveAndOperands) {
  EXPECT_JX_ERROR(lax::add(numpy::ones({3}), numpy::ones({4})), "[add]", "f32[3]", "f32[4]");
  EXPECT_JX_ERROR(lax::add(numpy::ones({3}), numpy::ones({3}, int32)), "[add]", "i32[3]");
  EXPECT_JX_ERROR(Array().shape(), "null jx::Array");
}

TEST(Params, PrintSortedAndHash) {
  Params p{{"b", int64_t{2}}, {"a", std::vector<int64_t>{1}}, {"c", DType::Float32}, {"d", true}};
  EXPECT_EQ(p.str(), "a=(1,) b=2 c=float32 d=True");
  Params q{{"d", true}, {"c", DType::Float32}, {"a", std::vector<int64_t>{1}}, {"b", int64_t{2}}};
  EXPECT_EQ(p, q);
  EXPECT_EQ(p.hash(), q.hash());
  EXPECT_JX_ERROR(p.get_int("a"), "parameter 'a'");
  EXPECT_JX_ERROR(p.get("zz"), "missing parameter 'zz'");
}

// ---- transformation rules: every primitive has the rules its traits promise ----

// Test-only primitives (registered by the tests below, named "test_...") are skipped.
bool is_test_primitive(const Primitive& p) { return p.name().rfind("test_", 0) == 0; }

TEST(Registry, EveryPrimitiveHasItsTransformationRules) {
  std::vector<std::string> offenders;
  for (const Primitive* p : all_primitives()) {
    if (is_test_primitive(*p)) continue;
    const auto& r = p->rules();
    if (!p->has(kNotDifferentiable) && !r.jvp)
      offenders.push_back(p->name() + ": no jvp rule (and not kNotDifferentiable)");
    if (p->has(kNotDifferentiable) && r.jvp) offenders.push_back(p->name() + ": kNotDifferentiable but has a jvp rule");
    if (p->has(kLinear) && !r.transpose) offenders.push_back(p->name() + ": kLinear but no transpose rule");
    if (!p->has(kLinear) && r.transpose) offenders.push_back(p->name() + ": a transpose rule but not kLinear");
    if (!r.batch) offenders.push_back(p->name() + ": no batching rule");
  }
  std::string list;
  for (const std::string& o : offenders) list += "\n  " + o;
  EXPECT_TRUE(offenders.empty()) << offenders.size() << " missing or inconsistent rules:" << list;
}

std::vector<Aval> same_aval(std::span<const Aval> in, const Params&) { return {in[0]}; }
std::vector<Array> copy_impl(std::span<const Array> in, const Params&, std::span<const Aval>) {
  detail::TraceScope eager(nullptr);
  return {in[0] * 1.0};
}

// Only a shape rule and an impl: every transformation must refuse it by name.
const Primitive no_rules_p("test_no_rules", {.traits = kElementwise, .abstract_eval = same_aval, .impl = copy_impl, .jvp = {}, .transpose = {}, .batch = {}});
// Linear with a jvp rule, but without the transpose rule reverse mode needs.
extern const Primitive no_transpose_p;
const Primitive no_transpose_p(
    "test_no_transpose",
    {.traits = kElementwise | kLinear,
     .abstract_eval = same_aval,
     .impl = copy_impl,
     .jvp = [](std::span<const Array> primals, std::span<const Array> tangents,
               const Params&) {
       return JvpResult{{jx::bind1(no_transpose_p, {primals[0]})}, {jx::bind1(no_transpose_p, {tangents[0]})}};
     },
     .transpose = {},
     .batch = {}});

TEST(Registry, MissingRulesRaiseNamingPrimitiveAndTransformation) {
  namespace jnp = jx::numpy;
  auto f = [](const Array& x) { return jnp::sum(jx::bind1(no_rules_p, {x})); };
  auto g = [](const Array& x) { return jnp::sum(jx::bind1(no_transpose_p, {x})); };
  Array x = jnp::ones({3});
  EXPECT_NEAR(f(x).item<float>(), 3.0f, 0);  // eager evaluation works
  EXPECT_JX_ERROR(jvp(f, x, x), "[test_no_rules]", "jvp", "no differentiation (jvp) rule");
  EXPECT_JX_ERROR(grad(f)(x), "[test_no_rules]", "grad", "no differentiation (jvp) rule");
  EXPECT_JX_ERROR(vmap(f)(jnp::ones({2, 3})), "[test_no_rules]", "vmap", "no batching rule");
  // Forward mode works without a transpose rule; reverse mode names what is missing.
  EXPECT_NEAR(jvp(g, x, x).second.item<float>(), 3.0f, 0);
  // (Under grad the message says "vjp": transpose_linear does not know which API called it.)
  EXPECT_JX_ERROR(grad(g)(x), "[test_no_transpose]", "no transpose rule", "cannot run it backwards");
  EXPECT_JX_ERROR(vjp(g, x).second(Array(1.0f)), "[test_no_transpose]", "vjp", "no transpose rule");
}

}  // namespace
}  // namespace jx
