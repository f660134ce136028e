// The op table (op_table.h) against the registry, and the generic checks over every row:
// the call stages to its primitive, eager == jit of the same call, vmap over a batch of
// 3 == a loop over the members, and check_grads in float64 for differentiable rows.
// Rows that a generic check cannot apply to name the test file that covers them.
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "grad_test_util.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "op_table.h"
#include "test_util.h"

namespace jx {
namespace {

using op_table::OpRow;

// ---- coverage ----

TEST(OpTable, EveryRegisteredPrimitiveHasARow) {
  std::set<std::string> with_rows;
  for (const OpRow& row : op_table::rows()) with_rows.insert(row.primitive);
  std::string missing;
  for (const Primitive* p : all_primitives())
    if (!with_rows.count(p->name())) missing += " " + p->name();
  EXPECT_TRUE(missing.empty()) << "registered primitives without a row in tests/op_table.cpp:" << missing;
}

TEST(OpTable, EveryRowNamesARegisteredPrimitive) {
  std::string unknown;
  for (const OpRow& row : op_table::rows())
    if (!find_primitive(row.primitive)) unknown += " " + row.label();
  EXPECT_TRUE(unknown.empty()) << "rows naming no registered primitive:" << unknown;
}

TEST(OpTable, RowsAreWellFormed) {
  const std::filesystem::path tests_dir = std::filesystem::path(JX_FIXTURES_DIR).parent_path();
  std::set<std::string> labels, fixtures;
  for (const OpRow& row : op_table::rows()) {
    SCOPED_TRACE(row.label());
    EXPECT_TRUE(labels.insert(row.label()).second) << "two rows are labelled " << row.label();
    if (!row.fixture.empty()) {
      EXPECT_TRUE(fixtures.insert(row.fixture).second) << "fixture key used twice";
    }
    EXPECT_TRUE(static_cast<bool>(row.call));
    EXPECT_EQ(row.operands(1).size(), static_cast<size_t>(row.arity));
    EXPECT_TRUE(row.dtypes.empty() || row.dtypes.size() == static_cast<size_t>(row.arity));
    // A skipped generic check says why and which test covers the primitive instead.
    if (row.skip) {
      EXPECT_FALSE(row.skip_reason.empty()) << "skips generic checks without a reason";
      const std::string file = row.covered_by.substr(0, row.covered_by.find(' '));
      EXPECT_FALSE(file.empty()) << "skips generic checks without naming the test that covers it";
      EXPECT_TRUE(std::filesystem::exists(tests_dir / file)) << "covered_by names " << file << ", not in tests/";
    }
  }
}

// ---- the generic checks ----

// The rows' labels as test names ("round.even" -> "round_even").
std::string test_name(const ::testing::TestParamInfo<const OpRow*>& info) {
  std::string s = info.param->label();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::vector<const OpRow*> all_rows() {
  std::vector<const OpRow*> out;
  for (const OpRow& row : op_table::rows()) out.push_back(&row);
  return out;
}

class Generic : public ::testing::TestWithParam<const OpRow*> {
 protected:
  const OpRow& row() const { return *GetParam(); }
  bool checks(op_table::GenericCheck c) const { return !(row().skip & c); }
};

// Member b of x along axis 0.
Array member(const Array& x, int64_t b) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit(x.shape().begin(), x.shape().end());
  start[0] = b;
  limit[0] = b + 1;
  return lax::squeeze(lax::slice(x, start, limit), {0});
}

// The call binds the row's primitive (at the top level of its program).
TEST_P(Generic, CallStagesToItsPrimitive) {
  if (!checks(op_table::kCheckJit)) GTEST_SKIP() << row().skip_reason << "; covered by " << row().covered_by;
  std::vector<Array> args = row().operands(1);
  std::vector<Aval> avals;
  for (const Array& a : args) avals.push_back(a.aval());
  ClosedJaxpr j = detail::make_jaxpr_flat(row().call, avals);
  bool found = false;
  for (const Equation& e : j.jaxpr.eqns) found |= e.primitive->name() == row().primitive;
  EXPECT_TRUE(found) << "the row's call does not bind " << row().primitive << ":\n" << j.str();
}

TEST_P(Generic, JitMatchesEager) {
  if (!checks(op_table::kCheckJit)) GTEST_SKIP() << row().skip_reason << "; covered by " << row().covered_by;
  std::vector<Array> args = row().operands(1);
  std::vector<Array> eager = row().call(args);
  const OpRow* r = GetParam();
  auto jitted = jx::jit([r](const std::vector<Array>& xs) { return r->call(xs); }, JitOptions{.name = "op_table." + r->label()});
  std::vector<Array> compiled = jitted(args);
  ASSERT_EQ(compiled.size(), eager.size());
  for (size_t k = 0; k < eager.size(); ++k)
    EXPECT_ALLCLOSE(compiled[k], eager[k], row().jit_rtol, row().jit_rtol) << "output " << k;
}

TEST_P(Generic, VmapMatchesLoop) {
  if (!checks(op_table::kCheckVmap)) GTEST_SKIP() << row().skip_reason << "; covered by " << row().covered_by;
  const size_t n = static_cast<size_t>(row().arity);
  std::vector<std::vector<Array>> members;
  for (uint64_t b = 0; b < 3; ++b) members.push_back(row().operands(1 + 1000 * b));
  // Every operand mapped; for several operands also only the first, and only the last.
  std::vector<std::vector<bool>> configs{std::vector<bool>(n, true)};
  if (n > 1) {
    configs.push_back(std::vector<bool>(n, false));
    configs.back().front() = true;
    configs.push_back(std::vector<bool>(n, false));
    configs.back().back() = true;
  }
  for (const std::vector<bool>& mapped : configs) {
    std::vector<Array> args;
    std::vector<std::optional<int64_t>> in_axes;
    std::string desc = "in_axes (";
    for (size_t i = 0; i < n; ++i) {
      if (mapped[i]) {
        args.push_back(numpy::stack({members[0][i], members[1][i], members[2][i]}, 0));
        in_axes.push_back(0);
      } else {
        args.push_back(members[0][i]);
        in_axes.push_back(std::nullopt);
      }
      desc += mapped[i] ? "0 " : "None ";
    }
    SCOPED_TRACE(desc + ")");
    const size_t outs = row().call(members[0]).size();
    std::vector<std::optional<int64_t>> out_axes(outs, 0);
    std::vector<Array> got = detail::vmap_flat(row().call, args, in_axes, out_axes, {});
    ASSERT_EQ(got.size(), outs);
    for (int64_t b = 0; b < 3; ++b) {
      std::vector<Array> xs;
      for (size_t i = 0; i < n; ++i) xs.push_back(mapped[i] ? members[static_cast<size_t>(b)][i] : members[0][i]);
      std::vector<Array> want = row().call(xs);
      for (size_t k = 0; k < outs; ++k) EXPECT_ALLCLOSE(member(got[k], b), want[k], 1e-12, 1e-12) << "member " << b << " output " << k;
    }
  }
}

TEST_P(Generic, GradsMatchFiniteDifferences) {
  const Primitive* p = find_primitive(row().primitive);
  ASSERT_NE(p, nullptr);
  if (p->has(kNotDifferentiable)) GTEST_SKIP() << "not differentiable";
  if (!checks(op_table::kCheckGrad)) GTEST_SKIP() << row().skip_reason << "; covered by " << row().covered_by;
  std::vector<Array> args = row().operands(1);
  // Differentiate in the free operands; fixed ones are captured.
  std::vector<size_t> free;
  for (size_t i = 0; i < args.size(); ++i)
    if (!(row().fixed_operands & (1u << i))) free.push_back(i);
  const OpRow* r = GetParam();
  test_util::FlatFunction f = [r, &args, &free](std::span<const Array> xs) {
    std::vector<Array> all = args;
    for (size_t k = 0; k < free.size(); ++k) all[free[k]] = xs[k];
    return r->call(all);
  };
  std::vector<Array> free_args;
  for (size_t i : free) free_args.push_back(args[i]);
  try {
    test_util::check_grads(f, free_args, {.order = row().second_order ? 2 : 1});
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, Generic, ::testing::ValuesIn(all_rows()), test_name);

}  // namespace
}  // namespace jx
