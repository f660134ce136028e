#include "test_util.h"

#include "core/array_internal.h"

#include <cmath>
#include <algorithm>
#include <complex>
#include <numeric>
#include <random>
#include <sstream>

namespace jx::testing {

Array fixture(const std::string& name) { return load(std::string(JX_FIXTURES_DIR) + "/" + name + ".npy"); }
std::map<std::string, Array> fixture_npz(const std::string& name) {
  return load_npz(std::string(JX_FIXTURES_DIR) + "/" + name + ".npz");
}

Array fixture_member(const std::string& name, const std::string& key) {
  static std::map<std::string, std::map<std::string, Array>> cache;
  auto archive = cache.find(name);
  if (archive == cache.end()) archive = cache.emplace(name, fixture_npz(name)).first;
  auto it = archive->second.find(key);
  if (it == archive->second.end()) throw std::runtime_error("missing fixture key " + key + " in " + name);
  return it->second;
}

const std::vector<DType> kAllDTypes = {DType::Bool,    DType::Int8,     DType::Int16,   DType::Int32,    DType::Int64,
                                       DType::UInt8,   DType::UInt32,   DType::Float16, DType::BFloat16, DType::Float32,
                                       DType::Float64, DType::Complex64, DType::Complex128};

Array arange(const Shape& shape) {
  std::vector<int32_t> v(static_cast<size_t>(shape_size(shape)));
  std::iota(v.begin(), v.end(), 0);
  return Array(v.data(), shape);
}

Array as_dtype(const Array& a, DType d) {
  std::vector<unsigned char> buf(static_cast<size_t>(a.size() * itemsize(d)) + 1);
  a.copy_to(buf.data(), d);
  return Array(buf.data(), a.shape(), d);
}

Array make_test_view(const Array& x, int64_t code) {
  Shape shape = x.shape();
  std::vector<int64_t> strides = detail::strides(x);
  int64_t offset = x.impl().offset;
  switch (code) {
    case 1:
      for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] > 0) offset += (shape[d] - 1) * strides[d];
        strides[d] = -strides[d];
      }
      break;
    case 2:
      std::reverse(shape.begin(), shape.end());
      std::reverse(strides.begin(), strides.end());
      break;
    case 3:
      shape.insert(shape.begin() + 1, 3);
      strides.insert(strides.begin() + 1, 0);
      break;
    case 4:
      shape.back() = (shape.back() + 1) / 2;
      strides.back() *= 2;
      break;
    default: break;
  }
  return detail::make_view(x, Aval{shape, x.dtype(), false}, strides, offset);
}

double default_rtol(DType d) {
  switch (d) {
    case DType::Float16: return 2e-3;
    case DType::BFloat16: return 1.6e-2;
    case DType::Float32:
    case DType::Complex64: return 2e-6;
    case DType::Float64:
    case DType::Complex128: return 1e-13;
    default: return 0;
  }
}

::testing::AssertionResult allclose(const Array& actual, const Array& expected, double rtol, double atol,
                                    bool check_dtype) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << detail::shape_str(actual.shape()) << " != expected "
                                         << detail::shape_str(expected.shape());
  if (check_dtype && actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "dtype " << actual.dtype() << " != expected " << expected.dtype();
  auto a = actual.to_vector<complex128_t>();
  auto b = expected.to_vector<complex128_t>();
  int bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < a.size(); ++i) {
    for (int part = 0; part < 2; ++part) {
      double x = part ? a[i].imag() : a[i].real();
      double y = part ? b[i].imag() : b[i].real();
      bool ok;
      if (std::isnan(y)) ok = std::isnan(x);
      else if (std::isinf(y)) ok = x == y;
      else ok = std::abs(x - y) <= atol + rtol * std::abs(y);
      if (!ok && bad++ < 5) msg << "\n  at flat index " << i << (part ? " (imag)" : "") << ": " << x << " vs expected " << y;
    }
  }
  if (bad) return ::testing::AssertionFailure() << bad << " mismatches (rtol=" << rtol << ", atol=" << atol << "):" << msg.str();
  return ::testing::AssertionSuccess();
}

Array randn(const Shape& shape, DType dtype, uint32_t seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (double& x : v) x = dist(gen);
  return lax::convert_element_type(Array(v, shape), dtype);
}

}  // namespace jx::testing
