// Elementwise lax primitives against NumPy/SciPy fixtures (scripts/fixtures/elementwise.py)
// over dtypes and views (0-d, size-0, reshaped, transposed, reversed, stepped, broadcast
// and large enough to run in parallel), under each vector instruction set the CPU has.
// Hand-checked edge cases and error messages are in lax_elementwise_edge_test.cpp.
#include <map>
#include <string>

#include "core/array_internal.h"
#include "backend/cpu/vector_math.h"
#include "op_table.h"
#include "test_util.h"

namespace jx {
namespace {

// The lax call of a fixture op: the op table's row with that fixture key.
const op_table::OpRow* row_for_fixture(const std::string& op) { return op_table::row_with_fixture(op); }

const std::map<std::string, Array>& fixtures(const std::string& name) {
  static std::map<std::string, std::map<std::string, Array>> cache;
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, testing::fixture_npz("elementwise/" + name)).first;
  return it->second;
}

// "op.dtype.role" -> {op, dtype}
std::pair<std::string, std::string> split_key(const std::string& key) {
  auto a = key.find('.');
  auto b = key.find('.', a + 1);
  return {key.substr(0, a), key.substr(a + 1, b - a - 1)};
}

// Fixture arrays store bfloat16 as float32; give the test the real dtype.
Array as_dtype(const Array& stored, const std::string& dtype) {
  DType d = dtype_from_name(dtype);
  return stored.dtype() == d ? stored : lax::convert_element_type(stored, d);
}

// A fresh copy of any view, for oracles that must not share the view's layout.
Array materialize(const Array& a) {
  std::vector<char> bytes(static_cast<size_t>(a.nbytes()) + 1);
  a.copy_to(bytes.data(), a.dtype());
  return Array(bytes.data(), a.shape(), a.dtype());
}

// The views every fixture case runs through. Each maps a (24,) array to a view of it,
// applied alike to inputs and expected outputs.
enum class View { Plain, Cube, Transposed, Reversed, Stepped, Tiled, Scalar, Broadcast, Empty, EmptyRows };
const std::vector<View> kViews = {View::Plain,   View::Cube,   View::Transposed, View::Reversed, View::Stepped,
                                  View::Tiled,   View::Scalar, View::Broadcast,  View::Empty,    View::EmptyRows};
const char* view_name(View v) {
  static const char* names[] = {"plain", "cube", "transposed", "reversed", "stepped",
                                "tiled", "scalar", "broadcast", "empty", "empty_rows"};
  return names[static_cast<int>(v)];
}

Array make_test_view(const Array& a, View v) {
  const int64_t off = a.impl().offset;
  auto view = [&](const Array& base, Shape shape, std::vector<int64_t> strides, int64_t offset) {
    return detail::make_view(base, Aval{std::move(shape), a.dtype(), a.weak_type()}, std::move(strides), offset);
  };
  switch (v) {
    case View::Plain: return a;
    case View::Cube: return view(a, {2, 3, 4}, {12, 4, 1}, off);
    case View::Transposed: return view(a, {4, 3, 2}, {1, 4, 12}, off);
    case View::Reversed: return view(a, {24}, {-1}, off + 23);
    case View::Stepped: {  // every other element of a buffer twice as long
      std::vector<char> src(static_cast<size_t>(a.nbytes())), twice(2 * src.size());
      a.copy_to(src.data(), a.dtype());
      const size_t w = static_cast<size_t>(a.itemsize());
      for (size_t i = 0; i < 24; ++i) std::memcpy(&twice[2 * i * w], &src[i * w], w);
      Array base(twice.data(), Shape{48}, a.dtype());
      return view(base, {24}, {2}, 0);
    }
    case View::Tiled: return view(a, {1366, 24}, {0, 1}, off);  // just over kParallelGrain elements
    case View::Scalar: return view(a, {}, {}, off + 5);
    case View::Broadcast: return view(a, {3, 7}, {0, 0}, off + 5);
    case View::Empty: return view(a, {0}, {1}, off);
    case View::EmptyRows: return view(a, {3, 0}, {0, 1}, off);
  }
  return a;
}

struct Tolerance {
  double rtol, atol;
};

Tolerance tolerance(const std::string& op, DType d) {
  double rtol = testing::default_rtol(d);
  double atol = 0;
  switch (d) {
    case DType::Float16: atol = 1e-4; break;
    case DType::BFloat16: atol = 1e-3; break;
    case DType::Float32: atol = 1e-6; break;
    case DType::Float64: atol = 1e-13; break;
    case DType::Complex64: rtol = 1e-5, atol = 1e-5; break;
    case DType::Complex128: atol = 1e-12; break;
    default: break;
  }
  // Results computed in float32 from half inputs are rounded twice (float64 oracle
  // rounds once); allow one more half ulp. Complex pow compounds exp and log errors.
  if (d == DType::Float16 || d == DType::BFloat16) rtol *= 2;
  if (is_complex(d)) {
    const op_table::OpRow* row = row_for_fixture(op);
    const double scale = row ? row->fixture_complex_tol_scale : 1;
    rtol *= scale, atol *= scale;
  }
  return {rtol, atol};
}

// Ops whose float kernels call libmvec (the row says): the only ones an instruction set
// changes.
bool uses_libmvec(const std::string& op) {
  const op_table::OpRow* row = row_for_fixture(op);
  return row && row->calls_libmvec;
}

// Runs the body under each instruction set, restoring the default afterwards.
class ElementwiseFixtureTest : public ::testing::TestWithParam<cpu::VectorIsa> {
 protected:
  void SetUp() override {
    if (GetParam() > cpu::best_vector_isa()) GTEST_SKIP() << "CPU lacks " << cpu::vector_isa_name(GetParam());
    previous_ = cpu::set_vector_isa(GetParam());
  }
  void TearDown() override { cpu::set_vector_isa(previous_); }
  // Ops that never call libmvec run once, under the best instruction set.
  bool skip(const std::string& op) const { return GetParam() != cpu::best_vector_isa() && !uses_libmvec(op); }
  cpu::VectorIsa previous_ = cpu::VectorIsa::Scalar;
};

TEST_P(ElementwiseFixtureTest, Unary) {
  const auto& fx = fixtures("unary");
  int cases = 0;
  for (const auto& [key, stored_x] : fx) {
    if (!key.ends_with(".x")) continue;
    auto [op, dtype] = split_key(key);
    if (skip(op)) continue;
    SCOPED_TRACE(op + " " + dtype);
    const op_table::OpRow* row = row_for_fixture(op);
    ASSERT_TRUE(row && row->arity == 1) << "no unary row in tests/op_table.cpp for fixture op " << op;
    Array x = as_dtype(stored_x, dtype);
    const Array& stored_y = fx.at(op + "." + dtype + ".y");
    Tolerance tol = tolerance(op, x.dtype());
    for (View v : kViews) {
      SCOPED_TRACE(view_name(v));
      Array y = row->call1(std::vector<Array>{make_test_view(x, v)});
      Array expected = make_test_view(stored_y, v);
      // bfloat16 results are compared with their float32-stored expectations.
      bool check_dtype = !(dtype == "bfloat16" && stored_y.dtype() == DType::Float32);
      if (!check_dtype) {
        EXPECT_EQ(y.dtype(), DType::BFloat16);
      }
      EXPECT_ALLCLOSE(y, expected, tol.rtol, tol.atol, check_dtype);
    }
    ++cases;
  }
  if (GetParam() == cpu::best_vector_isa()) {
    EXPECT_GT(cases, 200);
  }
}

TEST_P(ElementwiseFixtureTest, Binary) {
  const auto& fx = fixtures("binary");
  int cases = 0;
  for (const auto& [key, stored_x] : fx) {
    if (!key.ends_with(".x")) continue;
    auto [op, dtype] = split_key(key);
    if (skip(op)) continue;
    SCOPED_TRACE(op + " " + dtype);
    const op_table::OpRow* row = row_for_fixture(op);
    ASSERT_TRUE(row && row->arity == 2) << "no binary row in tests/op_table.cpp for fixture op " << op;
    auto fn = [row](const Array& a, const Array& b) { return row->call1(std::vector<Array>{a, b}); };
    Array x = as_dtype(stored_x, dtype);
    Array y = as_dtype(fx.at(op + "." + dtype + ".y"), dtype);
    const Array& stored_out = fx.at(op + "." + dtype + ".out");
    Tolerance tol = tolerance(op, x.dtype());
    bool check_dtype = dtype != "bfloat16";
    for (View v : kViews) {
      SCOPED_TRACE(view_name(v));
      Array out = fn(make_test_view(x, v), make_test_view(y, v));
      EXPECT_ALLCLOSE(out, make_test_view(stored_out, v), tol.rtol, tol.atol, check_dtype);
    }
    // One operand broadcast from a scalar (stride 0), the other contiguous or strided:
    // must agree with the same operation on materialized copies.
    for (View v : {View::Plain, View::Reversed, View::Tiled}) {
      SCOPED_TRACE(std::string("scalar operand with ") + view_name(v));
      Array xs = make_test_view(x, v);
      Aval bcast{xs.shape(), y.dtype(), false};
      Array ys = detail::make_view(y, bcast, std::vector<int64_t>(xs.shape().size(), 0), y.impl().offset + 7);
      EXPECT_ALLCLOSE(fn(xs, ys), fn(materialize(xs), materialize(ys)), 0, 0);
      EXPECT_ALLCLOSE(fn(ys, xs), fn(materialize(ys), materialize(xs)), 0, 0);
    }
    ++cases;
  }
  if (GetParam() == cpu::best_vector_isa()) {
    EXPECT_GT(cases, 200);
  }
}

TEST_P(ElementwiseFixtureTest, ConvertElementType) {
  const auto& fx = fixtures("convert");
  int cases = 0;
  for (const auto& [key, expected] : fx) {
    auto first = key.find('.');
    auto second = key.find('.', first + 1);
    if (second == std::string::npos) continue;  // an input, not a case
    std::string src = key.substr(0, first), dst = key.substr(first + 1, second - first - 1);
    std::string tag = key.substr(second + 1);
    if (skip("convert_element_type")) continue;
    SCOPED_TRACE(src + " -> " + dst + " (" + tag + ")");
    Array x = as_dtype(fx.at(src + "." + tag), src);
    DType to = dtype_from_name(dst);
    Array out = lax::convert_element_type(x, to);
    EXPECT_EQ(out.dtype(), to);
    EXPECT_ALLCLOSE(out, expected, 0, 0, /*check_dtype=*/dst != "bfloat16");
    // Through a reversed view too.
    int64_t n = x.size();
    Array rx = detail::make_view(x, x.aval(), {-1}, x.impl().offset + n - 1);
    Array rexp = detail::make_view(expected, expected.aval(), {-1}, expected.impl().offset + n - 1);
    EXPECT_ALLCLOSE(lax::convert_element_type(rx, to), rexp, 0, 0, dst != "bfloat16");
    ++cases;
  }
  if (GetParam() == cpu::best_vector_isa()) {
    EXPECT_GT(cases, 250);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, ElementwiseFixtureTest,
                         ::testing::Values(cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512),
                         [](const auto& info) { return std::string(cpu::vector_isa_name(info.param)); });

// Every fixture row names a registered primitive, and every fixture op has a row (the
// Unary/Binary cases assert that per key; this names the stray keys at once).
TEST(ElementwiseRegistry, FixtureOpsHaveRowsOfRegisteredPrimitives) {
  for (const op_table::OpRow& row : op_table::rows())
    if (!row.fixture.empty()) {
      EXPECT_NE(find_primitive(row.primitive), nullptr) << row.label();
    }
  std::string stray;
  for (const char* file : {"unary", "binary"})
    for (const auto& [key, value] : fixtures(file))
      if (key.ends_with(".x") && !row_for_fixture(split_key(key).first)) stray += " " + split_key(key).first;
  EXPECT_TRUE(stray.empty()) << "fixture ops without a row in tests/op_table.cpp:" << stray;
}

}  // namespace
}  // namespace jx
