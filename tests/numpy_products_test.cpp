// jx::numpy products: matmul, dot, vdot, inner, outer, tensordot, kron, cross, einsum.
// Every row of the fixture tables (scripts/fixtures/numpy_index.py ->
// tests/fixtures/numpy_index/products.npz) holds the operands and NumPy's result; einsum
// rows also hold their subscripts string.
#include <functional>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

const std::map<std::string, Array>& fixtures() {
  static const auto f = jx::testing::fixture_npz("numpy_index/products");
  return f;
}
bool has(const std::string& key) { return fixtures().count(key) > 0; }
Array F(const std::string& key) {
  auto it = fixtures().find(key);
  if (it == fixtures().end()) throw std::runtime_error("missing fixture key " + key);
  return it->second;
}
std::string text(const Array& bytes) {
  auto v = bytes.to_vector<uint8_t>();
  return std::string(v.begin(), v.end());
}

double rtol(DType d) { return is_integer(d) ? 0 : d == DType::Float64 ? 1e-12 : 2e-5; }

// Same values, non-contiguous: a reversed copy reversed back (negative strides).
Array strided(const Array& x) {
  if (x.ndim() == 0) return x;
  return lax::rev(detail::contiguous(lax::rev(x, {0})), {0});
}

void check_binary(const std::string& prefix, const std::function<Array(const Array&, const Array&)>& op) {
  int n = F(prefix + "count").item<int>();
  ASSERT_GT(n, 0);
  for (int i = 0; i < n; ++i) {
    std::string k = prefix + std::to_string(i);
    Array a = F(k + "_a"), b = F(k + "_b"), expected = F(k + "_out");
    SCOPED_TRACE(k + " " + detail::shape_str(a.shape()) + " x " + detail::shape_str(b.shape()) + " " +
                 std::string(dtype_name(a.dtype())));
    EXPECT_ALLCLOSE(op(a, b), expected, rtol(a.dtype()), 1e-5);
    EXPECT_ALLCLOSE(op(strided(a), strided(b)), expected, rtol(a.dtype()), 1e-5);
  }
}

TEST(NumpyProducts, Matmul) { check_binary("matmul", jnp::matmul); }
TEST(NumpyProducts, Dot) { check_binary("dot", jnp::dot); }
TEST(NumpyProducts, Inner) { check_binary("inner", jnp::inner); }
TEST(NumpyProducts, Outer) { check_binary("outer", jnp::outer); }
TEST(NumpyProducts, Vdot) { check_binary("vdot", jnp::vdot); }
TEST(NumpyProducts, Kron) { check_binary("kron", jnp::kron); }
TEST(NumpyProducts, Tensordot) {
  check_binary("tensordot2", [](const Array& a, const Array& b) { return jnp::tensordot(a, b); });
  check_binary("tensordot_pairs", [](const Array& a, const Array& b) { return jnp::tensordot(a, b, {{0, 2}, {1, 0}}); });
  Array a = F("tensordot20_a");
  EXPECT_EQ(jnp::tensordot(a, a, 0).shape(), (Shape{2, 3, 4, 2, 3, 4}));  // outer product
}
TEST(NumpyProducts, Cross) {
  check_binary("cross", [](const Array& a, const Array& b) { return jnp::cross(a, b); });
  // axis moves the vectors: (3, 2) columns are vectors along axis 0.
  Array a = F("cross1_a"), b = F("cross1_b");  // (4, 3) x (3,)
  Array at = lax::transpose(a, {1, 0});
  EXPECT_ALLCLOSE(jnp::cross(at, b, 0, -1, 0), lax::transpose(F("cross1_out"), {1, 0}), 2e-5, 1e-5);
}

TEST(NumpyProducts, Einsum) {
  int n = F("einsumcount").item<int>();
  for (int i = 0; i < n; ++i) {
    std::string k = "einsum" + std::to_string(i);
    std::string subs = text(F(k + "_subs"));
    std::vector<Array> ops;
    for (int j = 0; has(k + "_op" + std::to_string(j)); ++j) ops.push_back(F(k + "_op" + std::to_string(j)));
    SCOPED_TRACE(k + " '" + subs + "'");
    EXPECT_ALLCLOSE(jnp::einsum(subs, ops), F(k + "_out"), 2e-5, 1e-5);
    std::vector<Array> strided_ops;
    for (const Array& o : ops) strided_ops.push_back(strided(o));
    EXPECT_ALLCLOSE(jnp::einsum(subs, strided_ops), F(k + "_out"), 2e-5, 1e-5);
  }
  // The variadic form and integer operands.
  Array a = Array({{1, 2}, {3, 4}});
  EXPECT_ALLCLOSE(jnp::einsum("ij,jk->ik", a, a), Array({{7, 10}, {15, 22}}));
  EXPECT_ALLCLOSE(jnp::einsum("ii", a), Array(5).astype(DType::Int32));
}

TEST(NumpyProducts, DTypesPromote) {
  Array i = Array({{1, 2}, {3, 4}});
  Array f = Array({{1.0, 0.0}, {0.0, 1.0}});
  EXPECT_EQ(jnp::matmul(i, f).dtype(), DType::Float32);
  EXPECT_EQ(jnp::matmul(i, i).dtype(), DType::Int32);
  EXPECT_EQ(jnp::dot(f, Array(2)).dtype(), DType::Float32);  // a weak scalar keeps float32
  EXPECT_ALLCLOSE(jnp::dot(f, Array(2)), Array({{2.0, 0.0}, {0.0, 2.0}}));
  Array c = lax::convert_element_type(f, DType::Complex64);
  EXPECT_EQ(jnp::matmul(c, f).dtype(), DType::Complex64);
  Array h = lax::convert_element_type(f, DType::Float16);
  EXPECT_ALLCLOSE(jnp::matmul(h, h), h);
  EXPECT_EQ(jnp::outer(Array({1, 2}), Array({true, false})).dtype(), DType::Int32);
}

TEST(NumpyProducts, Errors) {
  Array a34 = lax::broadcast_in_dim(Array(1.0f), {3, 4}, {});
  Array a56 = lax::broadcast_in_dim(Array(1.0f), {5, 6}, {});
  EXPECT_JX_ERROR(jnp::matmul(a34, a56), "[matmul] shapes (3, 4) and (5, 6) are not aligned: 4 (dim 1) != 5 (dim 0)");
  EXPECT_JX_ERROR(jnp::matmul(a34, Array({1.0, 2.0})), "[matmul] shapes (3, 4) and (2,) are not aligned: 4 (dim 1) != 2 (dim 0)");
  EXPECT_JX_ERROR(jnp::matmul(Array(1.0f), a34), "[matmul] input operand 0 has shape () but needs at least 1 dimension");
  EXPECT_JX_ERROR(jnp::matmul(a34, Array(1.0f)), "[matmul] input operand 1 has shape ()");
  Array b234 = lax::broadcast_in_dim(Array(1.0f), {2, 3, 4}, {});
  Array b346 = lax::broadcast_in_dim(Array(1.0f), {3, 4, 6}, {});
  EXPECT_JX_ERROR(jnp::matmul(b234, b346),
                  "[matmul] batch dimensions of shapes (2, 3, 4) and (3, 4, 6) cannot be broadcast: 2 != 3");
  EXPECT_JX_ERROR(jnp::dot(a34, a56), "[dot] shapes (3, 4) and (5, 6) are not aligned: 4 (dim 1) != 5 (dim 0)");
  EXPECT_JX_ERROR(jnp::dot(b234, a56), "[dot] shapes (2, 3, 4) and (5, 6) are not aligned: 4 (dim 2) != 5 (dim 0)");
  EXPECT_JX_ERROR(jnp::vdot(a34, a56), "[vdot] arrays must have the same number of elements, got shapes (3, 4) and (5, 6)");
  EXPECT_JX_ERROR(jnp::inner(a34, a56), "[inner] shapes (3, 4) and (5, 6) are not aligned: 4 (dim 1) != 6 (dim 1)");
  EXPECT_JX_ERROR(jnp::tensordot(a34, a56, -1), "[tensordot] axes must be non-negative, got -1");
  EXPECT_JX_ERROR(jnp::tensordot(a34, a56, 3), "[tensordot] axes=3 is larger than the rank of shapes (3, 4) and (5, 6)");
  EXPECT_JX_ERROR(jnp::tensordot(a34, a56, 1), "[tensordot] shape mismatch for sum: a has size 4 on axis 1 but b has size 5 on axis 0");
  EXPECT_JX_ERROR(jnp::tensordot(a34, a56, {{0, 1}, {0}}), "[tensordot] the axes lists must have the same length, got 2 and 1");
  EXPECT_JX_ERROR(jnp::tensordot(a34, a34, {{0, 0}, {0, 1}}), "[tensordot] repeated axis");
  EXPECT_JX_ERROR(jnp::tensordot(a34, a34, {{2}, {0}}), "[tensordot] axis 2 is out of bounds for array of shape (3, 4)");
  EXPECT_JX_ERROR(jnp::cross(a34, a34), "[cross] incompatible dimensions for cross product (dimension must be 2 or 3)");
  EXPECT_JX_ERROR(jnp::cross(Array(1.0f), a34), "[cross] operand a must have at least one dimension");
  EXPECT_JX_ERROR(jnp::cross(Array({1.0, 2.0, 3.0}), Array({1.0, 2.0, 3.0}), -1, -1, 1), "[cross] axis 1 is out of bounds");

  Array m23 = lax::broadcast_in_dim(Array(1.0f), {2, 3}, {});
  EXPECT_JX_ERROR(jnp::einsum("ij", std::vector<Array>{}), "[einsum] at least one operand is required");
  EXPECT_JX_ERROR(jnp::einsum("ij,jk", m23), "[einsum] subscripts 'ij,jk' name 2 operand(s) but 1 were given");
  EXPECT_JX_ERROR(jnp::einsum("ij->i->", m23), "[einsum] subscripts 'ij->i->' contain more than one '->'");
  EXPECT_JX_ERROR(jnp::einsum("i1", m23), "[einsum] invalid subscript '1' in 'i1': subscripts must be letters");
  EXPECT_JX_ERROR(jnp::einsum("...i...", m23), "[einsum] an ellipsis may appear only once per operand");
  EXPECT_JX_ERROR(jnp::einsum("ijk", m23), "[einsum] operand 0 has shape (2, 3) (2 dimensions) but its subscripts name 3");
  EXPECT_JX_ERROR(jnp::einsum("i", m23), "[einsum] operand 0 has shape (2, 3)", "use '...'");
  EXPECT_JX_ERROR(jnp::einsum("ii", m23), "[einsum] dimensions in operand 0 for repeated subscript 'i' don't match (2 != 3)");
  EXPECT_JX_ERROR(jnp::einsum("ij,ij", m23, a34), "[einsum] size of label 'i' for operand 1 (3) does not match previous terms (2)");
  EXPECT_JX_ERROR(jnp::einsum("...i->i", m23), "[einsum] output subscripts of '...i->i' have no '...' for the 1 dimension(s)");
  EXPECT_JX_ERROR(jnp::einsum("ij->k", m23), "[einsum] output subscript 'k' of 'ij->k' does not appear in the inputs");
  EXPECT_JX_ERROR(jnp::einsum("ij->ii", m23), "[einsum] output subscript 'i' appears more than once in 'ij->ii'");
}

}  // namespace
}  // namespace jx
