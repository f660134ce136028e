// The text form of a jaxpr (JAX's pretty-printed jaxpr), which parse.cpp reads back:
//
//   { lambda a:f32[3]; b:f32[3]. let
//       c:f32[3] = mul b a
//       d:f32[] = reduce_sum[axes=(0,)] c
//     in (d,) }
//
// Literals print with the fewest digits that convert back to the same value of their
// dtype, so print(parse(text)) == text for canonical text.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/array_internal.h"
#include "core/convert.h"
#include "ir/ir_internal.h"

namespace jx {
namespace detail {

bool is_reserved_jaxpr_word(std::string_view word) {
  return word == "in" || word == "let" || word == "inf" || word == "nan" || word == "lambda" ||
         word == "True" || word == "False";
}

namespace {
// The k-th word of base 26 with digits a..z (26 -> "ba", as JAX).
std::string base26_word(int64_t k) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + k % 26));
    k /= 26;
  } while (k != 0);
  return s;
}
}  // namespace

std::string jaxpr_var_name(int64_t n) {
  for (int64_t k = 0;; ++k) {
    std::string s = base26_word(k);
    if (!is_reserved_jaxpr_word(s) && n-- == 0) return s;
  }
}

std::unordered_map<int64_t, std::string> jaxpr_var_names(const Jaxpr& jaxpr) {
  std::unordered_map<int64_t, std::string> names;
  int64_t k = 0;
  auto fresh = [&]() {
    for (;; ++k)
      if (std::string s = base26_word(k); !is_reserved_jaxpr_word(s)) {
        ++k;
        return s;
      }
  };
  auto see = [&](const Var& v) {
    if (!names.count(v.id)) names.emplace(v.id, fresh());
  };
  for (const Var& v : jaxpr.constvars) see(v);
  for (const Var& v : jaxpr.invars) see(v);
  for (const Equation& e : jaxpr.eqns) {
    for (const Atom& a : e.inputs)
      if (a.is_var()) see(a.var());
    for (const Var& v : e.outputs) see(v);
  }
  for (const Atom& a : jaxpr.outvars)
    if (a.is_var()) see(a.var());
  return names;
}

std::string_view dtype_short_name(DType d) {
  static const auto table = [] {
    std::vector<std::string> t;
    for (int i = 0; i < kNumDTypes; ++i) {
      std::string s = Aval{{}, static_cast<DType>(i), false}.str();
      t.push_back(s.substr(0, s.size() - 2));  // drop "[]"
    }
    return t;
  }();
  return table[static_cast<int>(d)];
}

namespace {

// The shortest %.Ng text of v that converts back (through double) to the same value of
// `dtype`; "inf", "-inf", "nan" for the special values.
std::string float_text(double v, DType dtype) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    double parsed = std::strtod(buf, nullptr);
    alignas(16) unsigned char stored[16];
    double back = 0;
    convert_buffer(&parsed, DType::Float64, stored, dtype, 1);
    convert_buffer(stored, dtype, &back, DType::Float64, 1);
    if (back == v && std::signbit(back) == std::signbit(v)) break;
  }
  return buf;
}

// A real float as Python prints it: always with a '.', 'e', "inf" or "nan".
std::string real_text(double v, DType dtype) {
  std::string s = float_text(v, dtype);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// "value:type" of a 0-d literal.
std::string literal_str(const Literal& lit) {
  const Array& x = lit.value;
  const Aval& aval = x.aval();
  std::string value;
  if (is_bool(aval.dtype)) {
    bool b = false;
    x.copy_to(&b, DType::Bool);
    value = b ? "True" : "False";
  } else if (is_integer(aval.dtype)) {
    int64_t i = 0;
    x.copy_to(&i, DType::Int64);
    value = std::to_string(i);
  } else if (is_floating(aval.dtype)) {
    double d = 0;
    x.copy_to(&d, DType::Float64);
    value = real_text(d, aval.dtype);
  } else {
    // Python's complex repr, "(1+2j)", parts printed for the real dtype of the type.
    complex128_t c;
    x.copy_to(&c, DType::Complex128);
    DType part = real_dtype(aval.dtype);
    std::string im = float_text(c.imag(), part);
    if (im[0] != '-') im = "+" + im;
    value = "(" + float_text(c.real(), part) + im + "j)";
  }
  return value + ":" + aval.str();
}

// Indentation of the equation whose parameters are being printed, so that a nested
// program (printed through Params::str() -> jaxpr_param_str) lines up under it.
thread_local std::string current_param_indent;

// Params::str(), except that sub-programs are printed here directly, so the text never
// depends on how Params::str() renders a JaxprRef.
std::string params_text(const Params& params) {
  bool has_sub_program = false;
  for (const auto& kv : params.items()) has_sub_program |= std::holds_alternative<JaxprRef>(kv.second);
  if (!has_sub_program) return params.str();
  std::string out;
  for (const auto& [key, value] : params.items()) {
    if (!out.empty()) out += " ";
    if (const auto* sub = std::get_if<JaxprRef>(&value))
      out += key + "=" + (*sub ? jaxpr_param_str(**sub) : std::string("None"));
    else
      out += Params{{key, value}}.str();
  }
  return out;
}

void print_jaxpr(std::ostream& os, const Jaxpr& j, const std::string& indent) {
  const auto names = jaxpr_var_names(j);
  auto name = [&](const Var& v) { return names.at(v.id); };
  auto binder = [&](const Var& v) { return name(v) + ":" + v.aval.str(); };
  auto atom = [&](const Atom& a) { return a.is_var() ? name(a.var()) : literal_str(a.literal()); };

  os << "{ lambda ";
  for (size_t i = 0; i < j.constvars.size(); ++i) os << (i ? " " : "") << binder(j.constvars[i]);
  os << "; ";
  for (size_t i = 0; i < j.invars.size(); ++i) os << (i ? " " : "") << binder(j.invars[i]);
  os << ". let\n";
  const std::string eqn_indent = indent + "    ";
  for (const Equation& e : j.eqns) {
    os << eqn_indent;
    if (e.outputs.empty()) os << "_";
    for (size_t i = 0; i < e.outputs.size(); ++i) os << (i ? " " : "") << binder(e.outputs[i]);
    os << " = " << (e.primitive ? e.primitive->name() : std::string("<null primitive>"));
    if (!e.params.empty()) {
      // Restored however params_text returns (a sub-program's printer may raise).
      struct RestoreIndent {
        std::string saved = current_param_indent;
        ~RestoreIndent() { current_param_indent = saved; }
      } restore;
      current_param_indent = eqn_indent;
      os << "[" << params_text(e.params) << "]";
    }
    for (const Atom& a : e.inputs) os << " " << atom(a);
    os << "\n";
  }
  os << indent << "  in (";
  for (size_t i = 0; i < j.outvars.size(); ++i) os << (i ? ", " : "") << atom(j.outvars[i]);
  if (j.outvars.size() == 1) os << ",";
  os << ") }";
}

}  // namespace

std::string jaxpr_param_str(const ClosedJaxpr& j) {
  std::ostringstream os;
  print_jaxpr(os, j.jaxpr, current_param_indent);
  return os.str();
}

}  // namespace detail

std::string Jaxpr::str() const {
  std::ostringstream os;
  detail::print_jaxpr(os, *this, "");
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Jaxpr& j) { return os << j.str(); }
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j) { return os << j.jaxpr.str(); }

}  // namespace jx
