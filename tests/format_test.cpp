// repr/str against the strings NumPy and JAX print (tests/fixtures/io/format_cases.txt,
// written by scripts/fixtures/io.py from the arrays in format_inputs.npz).
#include <fstream>
#include <sstream>

#include "core/array_internal.h"
#include "core/convert.h"
#include "test_util.h"

namespace jx {
namespace {

struct FormatCase {
  std::string name, dtype, gen, repr, str;
  bool weak = false;
  Shape shape;
  double scale = 1;
};

std::string field(const std::string& header, const std::string& key) {
  size_t at = header.find(" " + key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return header.substr(at, header.find(' ', at) - at);
}

std::vector<FormatCase> read_cases() {
  std::ifstream f(std::string(JX_FIXTURES_DIR) + "/io/format_cases.txt");
  std::vector<FormatCase> cases;
  std::string line;
  bool in_str = false;
  auto append = [](std::string& to, const std::string& l) { to += (to.empty() ? "" : "\n") + l; };
  while (std::getline(f, line)) {
    if (line.rfind("=== ", 0) == 0) {
      FormatCase c;
      c.name = line.substr(4, line.find(' ', 4) - 4);
      c.dtype = field(line, "dtype");
      c.weak = field(line, "weak") == "1";
      c.gen = field(line, "gen");
      std::string shape = field(line, "shape");
      std::stringstream ss(shape);
      for (std::string d; std::getline(ss, d, ',');) c.shape.push_back(std::stoll(d));
      if (c.gen == "arange") c.scale = std::stod(field(line, "scale"));
      cases.push_back(c);
      in_str = false;
    } else if (line == "--- str") {
      in_str = true;
    } else if (!cases.empty()) {
      append(in_str ? cases.back().str : cases.back().repr, line);
    }
  }
  return cases;
}

Array build(const FormatCase& c, const std::map<std::string, Array>& inputs) {
  DType dtype = dtype_from_name(c.dtype);
  Array a;
  if (c.gen == "arange") {
    a = detail::alloc_array(Aval{c.shape, dtype, false});
    dispatch_dtype(dtype, [&]<class T>() {
      T* out = detail::mutable_data<T>(a);
      for (int64_t i = 0; i < a.size(); ++i) {
        if constexpr (std::is_floating_point_v<detail::compute_t<T>> || is_complex_v<T>)
          out[i] = detail::convert_value<T>(static_cast<double>(i) * c.scale);
        else
          out[i] = detail::convert_value<T>(i * static_cast<int64_t>(c.scale));
      }
    });
  } else {
    a = inputs.at(c.name);
    if (dtype == DType::BFloat16) {  // stored as its bits, viewed as int16
      std::vector<uint16_t> bits(static_cast<size_t>(a.size()));
      std::vector<int32_t> wide(static_cast<size_t>(a.size()));
      a.copy_to(wide.data(), DType::Int32);
      for (size_t i = 0; i < wide.size(); ++i) bits[i] = static_cast<uint16_t>(wide[i]);
      a = Array(static_cast<const void*>(bits.data()), a.shape(), DType::BFloat16);
    }
  }
  EXPECT_EQ(a.dtype(), dtype) << c.name;
  EXPECT_EQ(a.shape(), c.shape) << c.name;
  return detail::with_weak_type(a, c.weak);
}

TEST(Format, MatchesNumpyAndJax) {
  auto cases = read_cases();
  ASSERT_GT(cases.size(), 50u);
  auto inputs = testing::fixture_npz("io/format_inputs");
  for (const FormatCase& c : cases) {
    Array a = build(c, inputs);
    EXPECT_EQ(repr(a), c.repr) << c.name;
    EXPECT_EQ(str(a), c.str) << c.name;
  }
}

TEST(Format, StreamOperatorIsRepr) {
  Array a = testing::fixture_npz("io/format_inputs").at("f32_2x2");
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), "Array([[1., 2.],\n       [3., 4.]], dtype=float32)");
  EXPECT_EQ(str(a), "[[1. 2.]\n [3. 4.]]");
}

TEST(Format, StridedViewsPrintTheirLogicalOrder) {
  Array a = testing::fixture_npz("io/format_inputs").at("f32_2x2");
  Array t = detail::make_view(a, Aval{{2, 2}, DType::Float32, false}, {1, 2}, 0);
  EXPECT_EQ(repr(t), "Array([[1., 3.],\n       [2., 4.]], dtype=float32)");
  Array b = detail::make_view(a, Aval{{3}, DType::Float32, false}, {0}, 3);
  EXPECT_EQ(str(b), "[4. 4. 4.]");
  Array r = detail::make_view(a, Aval{{2}, DType::Float32, false}, {-2}, 2);  // a[::-1, 0]
  EXPECT_EQ(str(r), "[3. 1.]");
}

class FakeTracer : public detail::Tracer {
 public:
  detail::Trace* trace() const override { return nullptr; }
};

TEST(Format, TracedAndNullArrays) {
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->aval = Aval{{3}, DType::Float32, false};
  impl->tracer = std::make_shared<FakeTracer>();
  Array traced(impl);
  EXPECT_EQ(repr(traced), "Traced<f32[3]>");
  EXPECT_EQ(str(traced), "Traced<f32[3]>");
  EXPECT_EQ(repr(Array()), "Array(null)");
}

}  // namespace
}  // namespace jx
