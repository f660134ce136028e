// parse_jaxpr: reads the text form print.cpp writes. A character-level scanner with
// recursive descent; whitespace (newlines included) only separates tokens, so a program
// may be written on one line or many.
//
//   program  := '{' 'lambda' binder* ';' binder* '.' 'let' equation* 'in' '(' atoms ')' '}'
//   binder   := name ':' type
//   type     := dtype-short ['{weak}'] '[' [int (',' int)*] ']'
//   equation := (binder+ | '_') '=' primitive ['[' (name '=' value)* ']'] atom*
//   atom     := name | literal          literal := value ':' type   (0-d)
//   value    := True | False | number | '(' number (+|-)number 'j' ')' | int-tuple
//               | 'string' | dtype-name | program
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "core/array_internal.h"
#include "core/convert.h"
#include "ir/ir_internal.h"

namespace jx {
namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// A number as written: its text and whether it reads as a float ('.', exponent, inf, nan).
struct NumberToken {
  std::string text;
  bool is_float = false;
  size_t pos = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Jaxpr parse_top() {
    Jaxpr j = parse_program();
    skip_ws();
    if (pos_ != text_.size()) fail_expected("end of input");
    return j;
  }

 private:
  struct Scope {
    std::unordered_map<std::string, std::pair<Var, size_t>> vars;  // name -> var, position defined
  };

  // ---- errors ----

  std::pair<int, int> line_col(size_t pos) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return {line, col};
  }

  [[noreturn]] void fail_at(size_t pos, const std::string& message) const {
    auto [line, col] = line_col(pos);
    detail::fail("parse_jaxpr", "line ", line, ", column ", col, ": ", message);
  }

  // What the text holds at pos, for "got ...".
  std::string describe(size_t pos) const {
    if (pos >= text_.size()) return "end of input";
    size_t end = pos;
    if (is_ident_char(text_[pos]) || text_[pos] == '-' || text_[pos] == '+' || text_[pos] == '.') {
      ++end;
      while (end < text_.size() && (is_ident_char(text_[end]) || text_[end] == '.')) ++end;
    } else {
      ++end;
    }
    return "'" + std::string(text_.substr(pos, end - pos)) + "'";
  }

  [[noreturn]] void fail_expected(const std::string& what) const {
    fail_at(pos_, "expected " + what + ", got " + describe(pos_));
  }

  // ---- scanning ----

  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() {
    skip_ws();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool at_end() {
    skip_ws();
    return pos_ >= text_.size();
  }
  // The identifier at the cursor, not consumed ("" if none).
  std::string_view peek_ident() {
    skip_ws();
    if (pos_ >= text_.size() || !is_ident_start(text_[pos_])) return {};
    size_t end = pos_ + 1;
    while (end < text_.size() && is_ident_char(text_[end])) ++end;
    return text_.substr(pos_, end - pos_);
  }
  bool at_word(std::string_view word) { return peek_ident() == word; }
  std::string read_ident(const std::string& what) {
    std::string_view id = peek_ident();
    if (id.empty()) fail_expected(what);
    pos_ += id.size();
    return std::string(id);
  }
  void expect_word(std::string_view word) {
    if (!at_word(word)) fail_expected("'" + std::string(word) + "'");
    pos_ += word.size();
  }
  void expect_char(char c) {
    if (peek() != c) fail_expected(std::string("'") + c + "'");
    ++pos_;
  }
  bool accept_char(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  NumberToken read_number() {
    skip_ws();
    NumberToken tok;
    tok.pos = pos_;
    size_t p = pos_;
    if (p < text_.size() && (text_[p] == '-' || text_[p] == '+')) ++p;
    // No word boundary needed after inf/nan: "(1+nanj)" ends the imaginary part with 'j'.
    if (text_.substr(p, 3) == "inf" || text_.substr(p, 3) == "nan") {
      p += 3;
      tok.is_float = true;
    } else {
      size_t digits_start = p;
      while (p < text_.size() && is_digit(text_[p])) ++p;
      if (p == digits_start) fail_expected("a number");
      if (p < text_.size() && text_[p] == '.') {
        tok.is_float = true;
        ++p;
        while (p < text_.size() && is_digit(text_[p])) ++p;
      }
      if (p < text_.size() && (text_[p] == 'e' || text_[p] == 'E')) {
        size_t q = p + 1;
        if (q < text_.size() && (text_[q] == '-' || text_[q] == '+')) ++q;
        if (q < text_.size() && is_digit(text_[q])) {
          tok.is_float = true;
          p = q;
          while (p < text_.size() && is_digit(text_[p])) ++p;
        }
      }
    }
    tok.text = std::string(text_.substr(pos_, p - pos_));
    pos_ = p;
    return tok;
  }

  int64_t to_int(const NumberToken& tok) const {
    if (tok.is_float) fail_at(tok.pos, "expected an integer, got '" + tok.text + "'");
    errno = 0;
    long long v = std::strtoll(tok.text.c_str(), nullptr, 10);
    if (errno == ERANGE) fail_at(tok.pos, "integer '" + tok.text + "' is out of the range of int64");
    return v;
  }
  // Digits only (a shape entry): "3." must not read as a float.
  int64_t read_dimension() {
    NumberToken tok;
    tok.pos = pos_;
    while (pos_ < text_.size() && is_digit(text_[pos_])) ++pos_;
    tok.text = std::string(text_.substr(tok.pos, pos_ - tok.pos));
    return to_int(tok);
  }
  static double to_double(const NumberToken& tok) { return std::strtod(tok.text.c_str(), nullptr); }

  // ---- types and variables ----

  Aval parse_type() {
    skip_ws();
    size_t start = pos_;
    std::string short_name = read_ident("a type such as f32[3]");
    Aval aval;
    bool found = false;
    for (int i = 0; i < kNumDTypes && !found; ++i)
      if (detail::dtype_short_name(static_cast<DType>(i)) == short_name) {
        aval.dtype = static_cast<DType>(i);
        found = true;
      }
    if (!found) fail_at(start, "expected a dtype such as f32 or i32, got '" + short_name + "'");
    if (accept_char('{')) {
      expect_word("weak");
      expect_char('}');
      aval.weak_type = true;
    }
    expect_char('[');
    if (!accept_char(']')) {
      do {
        if (!is_digit(peek())) fail_expected("a dimension size");
        aval.shape.push_back(read_dimension());
      } while (accept_char(','));
      expect_char(']');
    }
    return aval;
  }

  // name ':' type, defining the variable in the current scope (after the whole equation
  // is read, see parse_equation).
  std::pair<Var, std::pair<std::string, size_t>> parse_binder() {
    skip_ws();
    size_t at = pos_;
    std::string name = read_ident("a variable name");
    if (detail::is_reserved_jaxpr_word(name)) fail_at(at, "expected a variable name, got the keyword '" + name + "'");
    expect_char(':');
    Var v{next_id_++, parse_type()};
    return {v, {name, at}};
  }

  void define(Scope& scope, const Var& v, const std::string& name, size_t at) {
    auto [it, inserted] = scope.vars.emplace(name, std::make_pair(v, at));
    if (!inserted) {
      auto [line, col] = line_col(it->second.second);
      fail_at(at, detail::cat("variable '", name, "' is defined twice (first at line ", line, ", column ", col, ")"));
    }
  }

  Var lookup(const Scope& scope) {
    skip_ws();
    size_t at = pos_;
    std::string name = read_ident("a variable name");
    auto it = scope.vars.find(name);
    if (it == scope.vars.end()) fail_at(at, "undefined variable '" + name + "'");
    return it->second.first;
  }

  // ---- literals ----

  Literal parse_literal() {
    skip_ws();
    size_t at = pos_;
    enum class Kind { Bool, Number, Complex } kind;
    bool bool_value = false;
    NumberToken re, im;
    if (at_word("True") || at_word("False")) {
      kind = Kind::Bool;
      bool_value = at_word("True");
      pos_ += bool_value ? 4 : 5;
    } else if (accept_char('(')) {
      kind = Kind::Complex;
      re = read_number();
      skip_ws();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-'))
        fail_expected("'+' or '-' and the imaginary part of a complex literal");
      im = read_number();
      expect_char('j');
      expect_char(')');
    } else {
      kind = Kind::Number;
      re = read_number();
    }
    const std::string value_text(text_.substr(at, pos_ - at));
    expect_char(':');
    size_t type_at = pos_;
    Aval aval = parse_type();
    if (aval.ndim() != 0) fail_at(type_at, "expected a 0-d type for a literal, got " + aval.str());

    Array out = detail::alloc_array(aval);
    void* dst = detail::mutable_data<char>(out);
    auto mismatch = [&](const char* expected) {
      fail_at(at, std::string("expected ") + expected + " for a literal of type " + aval.str() + ", got '" +
                      value_text + "'");
    };
    if (is_bool(aval.dtype)) {
      if (kind != Kind::Bool) mismatch("True or False");
      detail::convert_buffer(&bool_value, DType::Bool, dst, aval.dtype, 1);
    } else if (is_integer(aval.dtype)) {
      if (kind != Kind::Number || re.is_float) mismatch("an integer");
      int64_t v = to_int(re);
      const int bits = 8 * itemsize(aval.dtype);
      const bool fits = is_unsigned(aval.dtype)
                            ? v >= 0 && (bits >= 63 || v < (int64_t{1} << bits))
                            : bits >= 64 || (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << (bits - 1)));
      if (!fits) fail_at(at, "integer literal " + value_text + " is out of the range of " + aval.str());
      detail::convert_buffer(&v, DType::Int64, dst, aval.dtype, 1);
    } else if (is_floating(aval.dtype)) {
      if (kind != Kind::Number) mismatch("a real number");
      double v = to_double(re);
      detail::convert_buffer(&v, DType::Float64, dst, aval.dtype, 1);
    } else {
      if (kind == Kind::Bool) mismatch("a complex number");
      complex128_t v(to_double(re), kind == Kind::Complex ? to_double(im) : 0.0);
      detail::convert_buffer(&v, DType::Complex128, dst, aval.dtype, 1);
    }
    return Literal{out};
  }

  bool at_literal() {
    char c = peek();
    return is_digit(c) || c == '-' || c == '+' || c == '(' || at_word("True") || at_word("False") ||
           at_word("inf") || at_word("nan");
  }

  // ---- parameters ----

  ParamValue parse_param_value() {
    skip_ws();
    size_t at = pos_;
    char c = peek();
    if (c == '{') {
      Jaxpr sub = parse_program();
      return JaxprRef(std::make_shared<const ClosedJaxpr>(ClosedJaxpr{std::move(sub), {}}));
    }
    if (c == '(') {
      ++pos_;
      std::vector<int64_t> ints;
      if (accept_char(')')) return ints;
      for (;;) {
        char d = peek();
        if (!is_digit(d) && d != '-' && d != '+') fail_expected("an integer or ')'");
        ints.push_back(to_int(read_number()));
        if (accept_char(')')) break;
        expect_char(',');
        if (accept_char(')')) break;
      }
      return ints;
    }
    if (c == '\'') {
      size_t close = text_.find('\'', pos_ + 1);
      if (close == std::string_view::npos) fail_at(at, "expected a closing ' for this string, got end of input");
      std::string s(text_.substr(pos_ + 1, close - pos_ - 1));
      pos_ = close + 1;
      return s;
    }
    if (at_word("True") || at_word("False")) {
      bool v = at_word("True");
      pos_ += v ? 4 : 5;
      return v;
    }
    if (is_digit(c) || c == '-' || c == '+' || at_word("inf") || at_word("nan")) {
      NumberToken tok = read_number();
      if (tok.is_float) return to_double(tok);
      return to_int(tok);
    }
    std::string_view word = peek_ident();
    if (!word.empty()) {
      try {
        DType d = dtype_from_name(word);
        pos_ += word.size();
        return d;
      } catch (const Error&) {
        fail_at(at, "expected a parameter value, got '" + std::string(word) + "', which is not a dtype name");
      }
    }
    fail_expected("a parameter value");
  }

  Params parse_params() {
    Params params;
    while (!accept_char(']')) {
      if (at_end()) fail_expected("']' closing the parameters");
      skip_ws();
      size_t at = pos_;
      std::string key = read_ident("a parameter name or ']'");
      if (params.has(key)) fail_at(at, "parameter '" + key + "' is given twice");
      expect_char('=');
      params.set(key, parse_param_value());
    }
    return params;
  }

  // ---- equations and programs ----

  // Whether the cursor is at the start of the next equation (`name:` or `_ =`).
  bool at_equation_start() {
    std::string_view id = peek_ident();
    // `inf:f32[]` and `True:bool[]` are literals, not binders.
    if (id.empty() || id == "inf" || id == "nan" || id == "True" || id == "False") return false;
    size_t p = pos_ + id.size();
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) ++p;
    if (p >= text_.size()) return false;
    return text_[p] == ':' || (id == "_" && text_[p] == '=');
  }

  Equation parse_equation(Scope& scope) {
    Equation eqn;
    std::vector<std::pair<std::string, size_t>> out_names;
    if (at_word("_")) {
      pos_ += 1;
    } else {
      if (!at_equation_start()) fail_expected("an equation 'name:type ... = primitive ...' or 'in'");
      do {
        if (!at_equation_start()) fail_expected("'=' or another output 'name:type'");
        auto [v, name] = parse_binder();
        eqn.outputs.push_back(v);
        out_names.push_back(name);
      } while (peek() != '=' && !at_end());
    }
    expect_char('=');
    skip_ws();
    size_t prim_at = pos_;
    std::string prim_name = read_ident("a primitive name");
    eqn.primitive = find_primitive(prim_name);
    if (!eqn.primitive) fail_at(prim_at, "unknown primitive '" + prim_name + "'");
    if (accept_char('[')) eqn.params = parse_params();
    for (;;) {
      if (at_word("in") || at_equation_start()) break;
      if (at_literal()) {
        eqn.inputs.emplace_back(parse_literal());
      } else if (!peek_ident().empty() && !detail::is_reserved_jaxpr_word(peek_ident())) {
        eqn.inputs.emplace_back(lookup(scope));
      } else {
        break;  // the caller reports what follows
      }
    }
    // Outputs come into scope after the operands: an equation cannot read its own results.
    for (size_t i = 0; i < eqn.outputs.size(); ++i) define(scope, eqn.outputs[i], out_names[i].first, out_names[i].second);
    return eqn;
  }

  Atom parse_atom(const Scope& scope) {
    if (at_literal()) return parse_literal();
    if (peek_ident().empty()) fail_expected("a variable or a literal");
    return lookup(scope);
  }

  Jaxpr parse_program() {
    Scope scope;
    Jaxpr j;
    expect_char('{');
    expect_word("lambda");
    while (!accept_char(';')) {
      if (!is_ident_start(peek())) fail_expected("a constvar 'name:type' or ';'");
      auto [v, name] = parse_binder();
      define(scope, v, name.first, name.second);
      j.constvars.push_back(v);
    }
    while (!accept_char('.')) {
      if (!is_ident_start(peek())) fail_expected("an input 'name:type' or '.'");
      auto [v, name] = parse_binder();
      define(scope, v, name.first, name.second);
      j.invars.push_back(v);
    }
    expect_word("let");
    while (!at_word("in")) {
      if (at_end()) fail_expected("an equation or 'in'");
      j.eqns.push_back(parse_equation(scope));
    }
    expect_word("in");
    expect_char('(');
    if (!accept_char(')')) {
      for (;;) {
        j.outvars.push_back(parse_atom(scope));
        if (accept_char(')')) break;
        expect_char(',');
        if (accept_char(')')) break;
      }
    }
    expect_char('}');
    return j;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int64_t next_id_ = 0;  // ids unique across the program and its sub-programs
};

}  // namespace

Jaxpr parse_jaxpr(std::string_view text) {
  Jaxpr j = Parser(text).parse_top();
  verify_jaxpr(j);
  return j;
}

}  // namespace jx
