// Printing arrays the way JAX does: NumPy's array2string (default print options:
// precision 8, floatmode 'maxprec', threshold 1000, edgeitems 3, linewidth 75) wrapped
// in JAX's "Array(..., dtype=...)". The float rules follow NumPy's FloatingFormat:
// shortest round-trip digits in each element's own precision, capped at 8 fractional
// digits, one common width, scientific notation when the magnitudes call for it.
// bfloat16 is not a NumPy float: NumPy prints ml_dtypes' scalars one by one with
// C++ stream formatting (%g), so jx does the same.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "core/array_internal.h"
#include "core/convert.h"

namespace jx {
namespace {

constexpr int kPrecision = 8;
constexpr int64_t kThreshold = 1000;
constexpr int kEdgeItems = 3;
constexpr int kLineWidth = 75;

// ---- shortest round-trip digits ----

// |value| = digits[0].digits[1...] x 10^exp, with no trailing zeros in digits.
struct Decimal {
  bool negative = false;
  std::string digits;
  int exp = 0;
};

// Parses "[-]d[.ddd]e[+-]xx" as printf and to_chars write it.
Decimal parse_scientific(const char* s) {
  Decimal d;
  if (*s == '-') {
    d.negative = true;
    ++s;
  }
  for (; *s && *s != 'e'; ++s)
    if (*s != '.') d.digits += *s;
  if (*s == 'e') d.exp = std::atoi(s + 1);
  while (d.digits.size() > 1 && d.digits.back() == '0') d.digits.pop_back();
  return d;
}

Decimal printf_scientific(double v, int digits_after_point) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits_after_point, v);
  return parse_scientific(buf);
}

// The half types: the shortest decimal whose nearest value of T is x. printf's %.*e
// gives the nearest p-digit decimal, so the first p that lands inside x's rounding
// interval is the answer (midpoints of T are exact in double).
template <class T>
Decimal shortest_half(T x) {
  uint16_t bits = x.bits;
  uint16_t mag = bits & 0x7fff;
  double v = static_cast<float>(x);
  if (mag == 0) {
    Decimal d{std::signbit(v), "0", 0};
    return d;
  }
  auto value_of = [](uint16_t m) { return static_cast<double>(T::to_float(m)); };
  double here = value_of(mag);
  double below = value_of(static_cast<uint16_t>(mag - 1));
  double above_gap = std::isinf(value_of(static_cast<uint16_t>(mag + 1))) ? here - below
                                                                            : value_of(static_cast<uint16_t>(mag + 1)) - here;
  double lo = here - (here - below) / 2, hi = here + above_gap / 2;
  bool even = (mag & 1) == 0;  // round-half-even keeps the boundary for even mantissas
  for (int p = 1; p < 17; ++p) {
    Decimal d = printf_scientific(here, p - 1);
    double c = std::strtod((d.digits.substr(0, 1) + "." + d.digits.substr(1) + "e" + std::to_string(d.exp)).c_str(),
                           nullptr);
    if (even ? (lo <= c && c <= hi) : (lo < c && c < hi)) {
      d.negative = std::signbit(v);
      return d;
    }
  }
  Decimal d = printf_scientific(here, 16);
  d.negative = std::signbit(v);
  return d;
}

template <class T>
Decimal shortest(T x) {
  if constexpr (is_half_v<T>) {
    return shortest_half(x);
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf - 1, x, std::chars_format::scientific);
    *r.ptr = '\0';
    return parse_scientific(buf);
  }
}

// ---- NumPy's dragon4_positional / dragon4_scientific (unique mode) ----

struct Parts {
  std::string int_part;  // with its sign
  std::string frac;      // digits after the point
  std::string exp;       // "e+05" in scientific mode
};

std::string sign_of(bool negative, bool plus) { return negative ? "-" : plus ? "+" : ""; }

// Unique digits, at most `precision` after the point (rounding the exact value).
Parts positional(const Decimal& d, double v, int precision, bool plus) {
  Parts p;
  int nfrac = std::max(0, static_cast<int>(d.digits.size()) - 1 - d.exp);
  if (precision >= 0 && nfrac > precision) {
    char buf[400];
    std::snprintf(buf, sizeof buf, "%.*f", precision, std::fabs(v));
    std::string s = buf;
    size_t dot = s.find('.');
    p.int_part = s.substr(0, dot);
    p.frac = dot == std::string::npos ? "" : s.substr(dot + 1);
    while (!p.frac.empty() && p.frac.back() == '0') p.frac.pop_back();
  } else if (d.exp >= 0) {
    std::string digits = d.digits;
    if (static_cast<int>(digits.size()) < d.exp + 1) digits.append(static_cast<size_t>(d.exp + 1) - digits.size(), '0');
    p.int_part = digits.substr(0, static_cast<size_t>(d.exp + 1));
    p.frac = digits.substr(static_cast<size_t>(d.exp + 1));
  } else {
    p.int_part = "0";
    p.frac = std::string(static_cast<size_t>(-d.exp - 1), '0') + d.digits;
  }
  p.int_part = sign_of(d.negative, plus) + p.int_part;
  return p;
}

// Unique digits, at most `precision` after the point; with min_digits, more digits of the
// exact value are printed (rounded), not zeros. The exponent has at least 2 digits.
Parts scientific(Decimal d, double v, int precision, bool plus, int exp_digits, int min_digits = 0) {
  int nfrac = static_cast<int>(d.digits.size()) - 1;
  if ((precision >= 0 && nfrac > precision) || nfrac < min_digits) {
    bool negative = d.negative;
    int digits = nfrac < min_digits ? min_digits : precision;
    d = printf_scientific(std::fabs(v), digits);
    d.negative = negative;
  }
  Parts p;
  p.int_part = sign_of(d.negative, plus) + d.digits.substr(0, 1);
  p.frac = d.digits.substr(1);
  std::string e = std::to_string(std::abs(d.exp));
  exp_digits = std::max(exp_digits, 2);
  if (static_cast<int>(e.size()) < exp_digits) e.insert(0, static_cast<size_t>(exp_digits) - e.size(), '0');
  p.exp = std::string("e") + (d.exp < 0 ? "-" : "+") + e;
  return p;
}

// ---- element formatters (NumPy's FloatingFormat, IntegerFormat, BoolFormat...) ----

template <class T>
class FloatFormat {
 public:
  FloatFormat(const std::vector<T>& data, bool plus) : plus_(plus) {
    using C = detail::compute_t<T>;
    std::vector<T> finite;
    bool any_inf_negative = false, any_nonfinite = false;
    for (T x : data) {
      C c = static_cast<C>(x);
      if (std::isfinite(c)) finite.push_back(x);
      else any_nonfinite = true;
      if (std::isinf(c) && c < 0) any_inf_negative = true;
    }
    // NumPy compares in the array's own dtype (Python floats are weak), so float32's
    // 1e-4 is not "< 0.0001".
    auto in_t = [](double v) { return static_cast<C>(static_cast<T>(static_cast<C>(v))); };
    bool have_nonzero = false;
    C max_val = 0, min_val = 0;
    for (T x : finite) {
      C a = std::fabs(static_cast<C>(x));
      if (a == 0) continue;
      if (!have_nonzero) max_val = min_val = a;
      max_val = std::max(max_val, a);
      min_val = std::min(min_val, a);
      have_nonzero = true;
    }
    if (have_nonzero) {
      C ratio = static_cast<C>(static_cast<T>(max_val / min_val));
      // NumPy 2.3+: the cutoff is 10**min(8, decimal precision of the dtype).
      double cutoff = std::is_same_v<T, double> ? 1e8 : std::is_same_v<T, float> ? 1e6 : 1e3;
      exp_format_ = max_val >= in_t(cutoff) || min_val < in_t(0.0001) || ratio > in_t(1000.);
    }
    if (finite.empty()) {
      pad_left_ = pad_right_ = 0;
    } else if (exp_format_) {
      int exp_size = 0;
      for (T x : finite) {
        Parts p = scientific(shortest(x), static_cast<C>(x), kPrecision, plus_, 0);
        exp_size = std::max(exp_size, static_cast<int>(p.exp.size()) - 2);
        precision_ = std::max(precision_, static_cast<int>(p.frac.size()));
        pad_left_ = std::max(pad_left_, static_cast<int>(p.int_part.size()));
      }
      exp_size_ = exp_size;
      pad_right_ = exp_size_ + 2 + precision_;
    } else {
      precision_ = kPrecision;
      for (T x : finite) {
        Parts p = positional(shortest(x), static_cast<C>(x), kPrecision, plus_);
        pad_left_ = std::max(pad_left_, static_cast<int>(p.int_part.size()));
        pad_right_ = std::max(pad_right_, static_cast<int>(p.frac.size()));
      }
    }
    if (any_nonfinite) {
      int offset = pad_right_ + 1;
      int neginf = plus_ || any_inf_negative ? 1 : 0;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + neginf - offset});
    }
  }

  std::string operator()(T x) const {
    using C = detail::compute_t<T>;
    C c = static_cast<C>(x);
    if (!std::isfinite(c)) {
      std::string ret = std::isnan(c) ? (plus_ ? "+nan" : "nan") : (c < 0 ? "-inf" : plus_ ? "+inf" : "inf");
      int width = pad_left_ + pad_right_ + 1;
      return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(ret.size()))), ' ') + ret;
    }
    Parts p = exp_format_ ? scientific(shortest(x), c, precision_, plus_, exp_size_, precision_)
                          : positional(shortest(x), c, precision_, plus_);
    std::string out(static_cast<size_t>(std::max(0, pad_left_ - static_cast<int>(p.int_part.size()))), ' ');
    out += p.int_part;
    out += '.';
    out += p.frac;
    if (exp_format_) {
      // trim='k' with min_digits=precision: every mantissa gets the same digit count.
      out.append(static_cast<size_t>(std::max(0, precision_ - static_cast<int>(p.frac.size()))), '0');
      out += p.exp;
    } else {
      out.append(static_cast<size_t>(std::max(0, pad_right_ - static_cast<int>(p.frac.size()))), ' ');
    }
    return out;
  }

 private:
  bool plus_;
  bool exp_format_ = false;
  int pad_left_ = 0, pad_right_ = 0, precision_ = 0, exp_size_ = 0;
};

template <class T>
class ComplexFormat {
 public:
  using R = typename T::value_type;
  explicit ComplexFormat(const std::vector<T>& data)
      : real_(parts(data, false), false), imag_(parts(data, true), true) {}
  std::string operator()(T x) const {
    std::string r = real_(x.real()), i = imag_(x.imag());
    size_t end = i.find_last_not_of(' ') + 1;  // 'j' goes before the padding
    return r + i.substr(0, end) + "j" + i.substr(end);
  }

 private:
  static std::vector<R> parts(const std::vector<T>& data, bool imag) {
    std::vector<R> out;
    for (const T& x : data) out.push_back(imag ? x.imag() : x.real());
    return out;
  }
  FloatFormat<R> real_, imag_;
};

template <class T>
class IntFormat {
 public:
  explicit IntFormat(const std::vector<T>& data) {
    for (T x : data) width_ = std::max(width_, std::to_string(static_cast<int64_t>(x)).size());
  }
  std::string operator()(T x) const {
    std::string s = std::to_string(static_cast<int64_t>(x));
    return std::string(width_ - s.size(), ' ') + s;
  }

 private:
  size_t width_ = 0;
};

class BoolFormat {
 public:
  explicit BoolFormat(bool zero_d) : true_str_(zero_d ? "True" : " True") {}
  std::string operator()(bool x) const { return x ? true_str_ : "False"; }

 private:
  std::string true_str_;
};

// ml_dtypes' str(): C++ stream output of the float value (%g, 6 digits).
std::string bfloat16_str(bfloat16_t x) {
  float f = x;
  if (std::isnan(f)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(f));
  return buf;
}

// ---- NumPy's _formatArray ----

std::string rstrip(const std::string& s) { return s.substr(0, s.find_last_not_of(" \n") + 1); }

void extend_line(std::string& s, std::string& line, const std::string& word, size_t width,
                 const std::string& next_line_prefix) {
  bool wrap = line.size() + word.size() > width && line.size() > next_line_prefix.size();
  if (wrap) {
    s += rstrip(line) + "\n";
    line = next_line_prefix;
  }
  line += word;
}

template <class Format>
class ArrayPrinter {
 public:
  ArrayPrinter(const Shape& shape, const Format& format, std::string separator, bool summarize)
      : shape_(shape), strides_(detail::contiguous_strides(shape)), format_(format),
        separator_(std::move(separator)), summary_(summarize ? "..." : "") {}

  std::string print(int line_width, const std::string& next_line_prefix) const {
    return recurse(0, 0, next_line_prefix, line_width);
  }

 private:
  std::string recurse(size_t axis, int64_t base, const std::string& hanging, int width) const {
    if (axis == shape_.size()) return format_(base);
    size_t axes_left = shape_.size() - axis;
    std::string next_hanging = hanging + " ";
    int next_width = width - 1;
    int64_t len = shape_[axis], stride = strides_[axis];
    bool show_summary = !summary_.empty() && 2 * kEdgeItems < len;
    int64_t leading = show_summary ? kEdgeItems : 0, trailing = show_summary ? kEdgeItems : len;
    auto item = [&](int64_t i) { return recurse(axis + 1, base + i * stride, next_hanging, next_width); };
    std::string s;
    if (axes_left == 1) {
      size_t elem_width = static_cast<size_t>(
          std::max<int64_t>(0, width - static_cast<int64_t>(std::max<size_t>(rstrip(separator_).size(), 1))));
      std::string line = hanging;
      for (int64_t i = 0; i < leading; ++i) {
        extend_line(s, line, item(i), elem_width, hanging);
        line += separator_;
      }
      if (show_summary) {
        extend_line(s, line, summary_, elem_width, hanging);
        line += separator_;
      }
      for (int64_t i = trailing; i > 1; --i) {
        extend_line(s, line, item(len - i), elem_width, hanging);
        line += separator_;
      }
      extend_line(s, line, item(len - 1), elem_width, hanging);
      s += line;
    } else {
      std::string line_sep = rstrip(separator_) + std::string(axes_left - 1, '\n');
      for (int64_t i = 0; i < leading; ++i) s += hanging + item(i) + line_sep;
      if (show_summary) s += hanging + summary_ + line_sep;
      for (int64_t i = trailing; i > 1; --i) s += hanging + item(len - i) + line_sep;
      s += hanging + item(len - 1);
    }
    return "[" + s.substr(hanging.size()) + "]";
  }

  const Shape& shape_;
  std::vector<int64_t> strides_;
  const Format& format_;
  std::string separator_;
  std::string summary_;
};

// The elements a summarized print shows (NumPy's _leading_trailing): the formatter's
// widths come from these only.
void collect_shown(const Shape& shape, const std::vector<int64_t>& strides, bool summarize, size_t axis,
                   int64_t base, std::vector<int64_t>& out) {
  if (axis == shape.size()) {
    out.push_back(base);
    return;
  }
  int64_t len = shape[axis];
  for (int64_t i = 0; i < len; ++i) {
    if (summarize && 2 * kEdgeItems < len && i == kEdgeItems) i = len - kEdgeItems;
    collect_shown(shape, strides, summarize, axis + 1, base + i * strides[axis], out);
  }
}

// np.array2string(a, max_line_width=75, separator=..., prefix=..., suffix=...).
std::string array2string(const Array& a, const std::string& separator, const std::string& prefix,
                         const std::string& suffix) {
  if (a.size() == 0) return "[]";
  Array c = detail::contiguous(a);
  const Shape& shape = c.shape();
  bool summarize = c.size() > kThreshold;
  std::vector<int64_t> shown;
  collect_shown(shape, detail::contiguous_strides(shape), summarize, 0, 0, shown);
  int line_width = kLineWidth - static_cast<int>(suffix.size());
  std::string next_line_prefix = " " + std::string(prefix.size(), ' ');
  return dispatch_dtype(c.dtype(), [&]<class T>() -> std::string {
    const T* data = detail::data<T>(c);
    std::vector<T> values;
    for (int64_t i : shown) values.push_back(data[i]);
    auto run = [&](auto&& format) {
      auto at = [&](int64_t i) { return format(data[i]); };
      return ArrayPrinter<decltype(at)>(shape, at, separator, summarize).print(line_width, next_line_prefix);
    };
    if constexpr (std::is_same_v<T, bool>) return run(BoolFormat(shape.empty()));
    else if constexpr (std::is_same_v<T, bfloat16_t>) return run(bfloat16_str);
    else if constexpr (is_complex_v<T>) return run(ComplexFormat<T>(values));
    else if constexpr (std::is_integral_v<T>) return run(IntFormat<T>(values));
    else return run(FloatFormat<T>(values, false));
  });
}

// ---- NumPy scalar str(), for str() of a 0-d array ----

// Positional between 1e-4 and 1e16, else scientific; trim keeps ".0" only when asked.
template <class T>
std::string float_scalar_str(T x, bool keep_point_zero) {
  double v = static_cast<double>(static_cast<detail::compute_t<T>>(x));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  Decimal d = shortest(x);
  double a = std::fabs(v);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    Parts p = positional(d, v, -1, false);
    if (p.frac.empty()) return keep_point_zero ? p.int_part + ".0" : p.int_part;
    return p.int_part + "." + p.frac;
  }
  Parts p = scientific(d, v, -1, false, 2);
  return p.int_part + (p.frac.empty() ? "" : "." + p.frac) + p.exp;
}

// Python's complex repr as NumPy's complex scalars print it: "(1+2j)", "2j".
template <class T>
std::string complex_scalar_str(T x) {
  using R = typename T::value_type;
  std::string im = float_scalar_str<R>(x.imag(), false);
  if (x.real() == 0 && !std::signbit(x.real())) return im + "j";
  if (im[0] != '-') im = "+" + im;
  return "(" + float_scalar_str<R>(x.real(), false) + im + "j)";
}

std::string scalar_str(const Array& a) {
  return dispatch_dtype(a.dtype(), [&]<class T>() -> std::string {
    T x = *detail::data<T>(a);
    if constexpr (std::is_same_v<T, bool>) return x ? "True" : "False";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return bfloat16_str(x);
    else if constexpr (is_complex_v<T>) return complex_scalar_str(x);
    else if constexpr (std::is_integral_v<T>) return std::to_string(static_cast<int64_t>(x));
    else return float_scalar_str<T>(x, true);
  });
}

std::string traced_str(const Array& a) { return "Traced<" + a.aval().str() + ">"; }

}  // namespace

std::string repr(const Array& a) {
  if (!a.valid()) return "Array(null)";
  if (!a.is_concrete()) return traced_str(a);
  if (a.is_deleted()) return "Array(<deleted>, shape=" + detail::shape_str(a.shape()) + ", dtype=" + std::string(dtype_name(a.dtype())) + ")";
  const std::string prefix = "Array(";
  std::string dtype_str = "dtype=" + std::string(dtype_name(a.dtype()));
  if (a.weak_type()) dtype_str += ", weak_type=True";
  std::string s = a.size() == 0 ? "[], shape=" + detail::shape_str(a.shape()) : array2string(a, ", ", prefix, ",");
  // JAX's rule, kept as it is: the dtype goes after a wider gap when the last line is long.
  size_t newline = s.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(s.size()) - (newline == std::string::npos ? -1 : static_cast<int64_t>(newline)) + 1;
  std::string sep = last_line_len + static_cast<int64_t>(dtype_str.size()) + 2 > kLineWidth ? std::string(prefix.size(), ' ') : " ";
  return prefix + s + "," + sep + dtype_str + ")";
}

std::string str(const Array& a) {
  if (!a.valid()) return "null";
  if (!a.is_concrete()) return traced_str(a);
  if (a.is_deleted()) return "<deleted>";
  if (a.ndim() == 0) return scalar_str(a);
  return array2string(a, " ", "", "");
}

std::ostream& operator<<(std::ostream& os, const Array& a) { return os << repr(a); }

}  // namespace jx
