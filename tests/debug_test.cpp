// jx/debug.h: debug::callback, debug::print, jx::check and debug_nans. Output is captured
// (callbacks into a vector, print into a stringstream sink) and compared, text and order,
// with what the program does eagerly, under jit (each call), in loop bodies (each
// iteration), under vmap (each lane, in order), under grad (primal values, once) and
// their compositions; the IR keeps the equation through DCE and the pass pipeline.
#include <sstream>

#include <gtest/gtest.h>

#include "jx/jx.h"
#include "test_util.h"
#include "transforms/jaxpr_transforms.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

bool contains(const std::string& s, std::string_view sub) { return s.find(sub) != std::string::npos; }

// Captures debug::print's lines for the test's extent.
class PrintCapture {
 public:
  PrintCapture() { debug::set_print_sink(&os_); }
  ~PrintCapture() { debug::set_print_sink(nullptr); }
  std::string text() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

using jx::testing::error_of;

// Turns debug_nans on for a test's extent.
struct DebugNans {
  DebugNans() { config::set_debug_nans(true); }
  ~DebugNans() { config::set_debug_nans(false); }
};

// ---- callback and print ----

TEST(DebugCallback, EagerRunsAtOnceWithTheValues) {
  std::vector<std::string> seen;
  Array x = Array(std::vector<double>{1.0, 2.0});
  debug::callback([&](const Array& a, const Array& b) { seen.push_back(str(a) + " " + str(b)); }, x, 3.0);
  debug::callback([&] { seen.push_back("no args"); });
  EXPECT_EQ(seen, (std::vector<std::string>{"[1. 2.] 3.0", "no args"}));
}

TEST(DebugPrint, EagerFormatsLikeStr) {
  PrintCapture cap;
  Array x = Array(std::vector<float>{1.5f, -2.0f});
  debug::print("x = {} y = {} {{literal}}", x, Array(int32_t{7}));
  debug::print("plain");
  EXPECT_EQ(cap.text(), "x = [ 1.5 -2. ] y = 7 {literal}\nplain\n");
}

TEST(DebugPrint, FormatErrors) {
  Array x(1.0);
  EXPECT_EQ(error_of([&] { debug::print("x = {} {}", x); }),
            "[debug.print] the format string 'x = {} {}' has 2 placeholder(s) but 1 argument(s) were given");
  EXPECT_EQ(error_of([&] { debug::print("x = {", x); }),
            "[debug.print] the format string 'x = {' has an unmatched '{' at position 4 (placeholders are {}, "
            "literal braces {{ and }})");
  EXPECT_EQ(error_of([&] { check(Array(true), "{}"); }),
            "[check] the format string '{}' has 1 placeholder(s) but 0 argument(s) were given");
  EXPECT_EQ(error_of([&] { detail::debug_callback_flat(nullptr, {}); }), "[debug.callback] the host function is empty");
}

TEST(DebugPrint, JitPrintsOnEveryCall) {
  PrintCapture cap;
  auto f = jit([](const Array& x) {
    Array y = x * 2.0;
    debug::print("x = {}", x);
    debug::print("y = {}", y);
    return y + 1.0;
  });
  Array x = Array(std::vector<double>{1.0, 2.0});
  Array out = f(x);
  EXPECT_EQ(cap.text(), "x = [1. 2.]\ny = [2. 4.]\n");
  f(x + 1.0);
  EXPECT_EQ(cap.text(), "x = [1. 2.]\ny = [2. 4.]\nx = [2. 3.]\ny = [4. 6.]\n");
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{3.0, 5.0}));
  // The optimized program keeps both (no outputs, kSideEffects), in order, fused around.
  const std::string text = f.lower(x).as_text();
  const size_t first = text.find("debug_callback"), second = text.find("debug_callback", first + 1);
  ASSERT_NE(second, std::string::npos) << text;
}

TEST(DebugPrint, JitKeepsAPrintOfAConstantAndAnUnusedValue) {
  // Constant folding and CSE must neither run nor merge them at compile time.
  PrintCapture cap;
  auto f = jit([](const Array& x) {
    debug::print("const {}", Array(2.0) * 3.0);
    debug::print("const {}", Array(2.0) * 3.0);
    debug::print("unused {}", jnp::sin(x));
    return x;
  });
  f(Array(0.0));
  f(Array(0.0));
  EXPECT_EQ(cap.text(), "const 6.0\nconst 6.0\nunused 0.0\nconst 6.0\nconst 6.0\nunused 0.0\n");
}

TEST(DebugPrint, TheIrShowsTheEquationAndDceKeepsIt) {
  auto f = [](const Array& x) {
    debug::print("x = {}", jnp::sin(x));
    return x * 2.0;
  };
  ClosedJaxpr j = make_jaxpr(f)(Array(1.0f));
  const std::string text = j.str();
  EXPECT_TRUE(contains(text, "_ = debug_callback[callback=")) << text;
  EXPECT_TRUE(contains(text, "sin")) << text;
  // Nothing reads the print or the sin feeding it, yet both survive DCE.
  detail::DcedJaxpr d = detail::dce_jaxpr(j.jaxpr, {true});
  EXPECT_TRUE(contains(d.jaxpr.str(), "debug_callback")) << d.jaxpr.str();
  EXPECT_TRUE(contains(d.jaxpr.str(), "sin")) << d.jaxpr.str();
}

TEST(DebugCallback, ParseRefusesAnUnregisteredCallback) {
  const std::string text =
      "{ lambda ; a:f32[]. let\n"
      "    _ = debug_callback[callback=987654321] a\n"
      "  in (a,) }";
  const std::string message = error_of([&] { parse_jaxpr(text); });
  EXPECT_TRUE(contains(message, "[debug_callback] callback=987654321 names no host function registered in this "
                                "process (a host callback cannot be rebuilt from IR text)"))
      << message;
  // A registered one (the same process) parses back to the same text.
  ClosedJaxpr j = make_jaxpr([](const Array& x) {
    debug::print("{}", x);
    return x;
  })(Array(1.0f));
  EXPECT_EQ(parse_jaxpr(j.str()).str(), j.str());
}

TEST(DebugPrint, ForiLoopAndScanBodiesPrintEachIteration) {
  PrintCapture cap;
  auto body = [](const Array& i, const Array& c) {
    debug::print("i = {} c = {}", i, c);
    return c * 2.0;
  };
  Array r = lax::fori_loop(0, 3, body, Array(1.0));
  EXPECT_EQ(r.item<double>(), 8.0);
  EXPECT_EQ(cap.text(), "i = 0 c = 1.0\ni = 1 c = 2.0\ni = 2 c = 4.0\n");

  auto scanned = jit([](const Array& xs) {
    return lax::scan(
               [](const Array& c, const Array& x) {
                 debug::print("x = {}", x);
                 return std::pair(c + x, c);
               },
               Array(0.0), xs)
        .first;
  });
  PrintCapture cap2;
  Array total = scanned(Array(std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_EQ(total.item<double>(), 6.0);
  scanned(Array(std::vector<double>{4.0, 5.0}));
  EXPECT_EQ(cap2.text(), "x = 1.0\nx = 2.0\nx = 3.0\nx = 4.0\nx = 5.0\n");
}

TEST(DebugPrint, ALoopWhoseResultsAreUnusedStillPrints) {
  // DCE, CSE and constant folding see the effect inside the body.
  PrintCapture cap;
  auto loop = [](const Array& x) {
    return lax::fori_loop(0, 2, [](const Array& i, const Array& c) {
      debug::print("i = {}", i);
      return c + 1.0;
    }, x);
  };
  auto f = jit([&](const Array& x) {
    loop(x);
    loop(x);        // the same loop again: not merged with the first
    loop(Array(0.0));  // constant operands: not folded at compile time
    return x;
  });
  f(Array(1.0));
  const std::string once = "i = 0\ni = 1\n";
  EXPECT_EQ(cap.text(), once + once + once);
  f(Array(1.0));
  EXPECT_EQ(cap.text(), once + once + once + once + once + once);
  ClosedJaxpr j = make_jaxpr([&](const Array& x) {
    loop(x);
    return x;
  })(Array(1.0));
  detail::DcedJaxpr d = detail::dce_jaxpr(j.jaxpr, {true});
  EXPECT_TRUE(contains(d.jaxpr.str(), "debug_callback")) << d.jaxpr.str();
}

TEST(DebugPrint, WhileLoopBodyPrintsEachIteration) {
  PrintCapture cap;
  using Carry = std::tuple<Array, Array>;
  auto f = jit([](const Array& x) {
    return std::get<1>(lax::while_loop([](const Carry& c) { return std::get<0>(c) < 3; },
                                       [](const Carry& c) {
                                         debug::print("k = {}", std::get<0>(c));
                                         return Carry{std::get<0>(c) + 1, std::get<1>(c) * 2.0};
                                       },
                                       Carry{Array(0), x}));
  });
  EXPECT_EQ(f(Array(1.0)).item<double>(), 8.0);
  EXPECT_EQ(cap.text(), "k = 0\nk = 1\nk = 2\n");
}

TEST(DebugPrint, CondPrintsTheTakenBranchOnly) {
  PrintCapture cap;
  auto f = jit([](const Array& x) {
    return lax::cond(
        x > 0.0,
        [](const Array& v) {
          debug::print("positive {}", v);
          return v;
        },
        [](const Array& v) {
          debug::print("negative {}", v);
          return -v;
        },
        x);
  });
  f(Array(2.0));
  f(Array(-3.0));
  EXPECT_EQ(cap.text(), "positive 2.0\nnegative -3.0\n");
}

TEST(DebugPrint, VmapRunsOncePerLaneInOrderWithUnbatchedValues) {
  auto f = [](const Array& x, const Array& y) {
    debug::print("x = {} y = {}", x, y);
    return x + y;
  };
  Array xs = jnp::arange(6.0).reshape({3, 2});
  Array y(10.0);
  // The oracle: the same function called lane by lane in a loop.
  std::string expected;
  {
    PrintCapture cap;
    for (int64_t i = 0; i < 3; ++i) f(xs(i), y);
    expected = cap.text();
  }
  EXPECT_EQ(expected, "x = [0. 1.] y = 10.0\nx = [2. 3.] y = 10.0\nx = [4. 5.] y = 10.0\n");
  {
    PrintCapture cap;
    vmap(f, {.in_axes = {0, not_mapped}})(xs, y);
    EXPECT_EQ(cap.text(), expected);
  }
  {
    PrintCapture cap;
    jit(vmap(f, {.in_axes = {0, not_mapped}}))(xs, y);
    EXPECT_EQ(cap.text(), expected);
  }
  {  // batch axis 1
    PrintCapture cap;
    vmap(f, {.in_axes = {1, not_mapped}})(jnp::transpose(xs), y);
    EXPECT_EQ(cap.text(), expected);
  }
}

TEST(DebugPrint, GradPrintsThePrimalsOnce) {
  auto f = [](const Array& x) {
    Array y = jnp::sin(x);
    debug::print("y = {}", y);
    return y * x;
  };
  Array x(0.5);
  std::string eager;
  {
    PrintCapture cap;
    f(x);
    eager = cap.text();
  }
  {
    PrintCapture cap;
    Array g = grad(f)(x);
    EXPECT_EQ(cap.text(), eager);
    EXPECT_NEAR(g.item<double>(), std::cos(0.5) * 0.5 + std::sin(0.5), 1e-12);
  }
  {
    PrintCapture cap;
    jvp(f, std::tuple{x}, std::tuple{Array(1.0)});
    EXPECT_EQ(cap.text(), eager);
  }
  {
    PrintCapture cap;
    grad(jit(f))(x);
    EXPECT_EQ(cap.text(), eager);
  }
  {  // a print in a loop body under grad: once per iteration, primal values
    PrintCapture cap;
    auto loop = [](const Array& x) {
      return lax::fori_loop(0, 2, [](const Array&, const Array& c) {
        debug::print("c = {}", c);
        return c * c;
      }, x);
    };
    Array g = grad(loop)(Array(3.0));
    EXPECT_EQ(cap.text(), "c = 3.0\nc = 9.0\n");
    EXPECT_EQ(g.item<double>(), 108.0);  // d/dx x^4 at 3
  }
}

TEST(DebugPrint, JitOfVmapOfGrad) {
  auto f = [](const Array& x) {
    debug::print("x = {}", x);
    return jnp::sin(x) * x;
  };
  Array xs = Array(std::vector<double>{0.0, 1.0, 2.0});
  PrintCapture cap;
  auto h = jit(vmap(grad(f)));
  Array g = h(xs);
  h(xs);
  EXPECT_EQ(cap.text(), "x = 0.0\nx = 1.0\nx = 2.0\nx = 0.0\nx = 1.0\nx = 2.0\n");
  for (int64_t i = 0; i < 3; ++i) {
    const double v = static_cast<double>(i);
    EXPECT_NEAR(g.to_vector<double>()[i], std::cos(v) * v + std::sin(v), 1e-12);
  }
}

// ---- debug_nans ----

TEST(DebugNans, OffByDefault) {
  EXPECT_FALSE(config::get().debug_nans);
  Array r = jnp::log(Array(-1.0));
  EXPECT_TRUE(std::isnan(r.item<double>()));
}

TEST(DebugNans, EagerNamesThePrimitive) {
  DebugNans on;
  EXPECT_TRUE(config::get().debug_nans);
  EXPECT_EQ(error_of([] { jnp::log(Array(std::vector<double>{1.0, -1.0})); }),
            "[log] produced a NaN (debug_nans is on): result f64[2] from f64[2]");
  Array zero = Array(std::vector<float>{0.0f});
  EXPECT_EQ(error_of([&] { lax::div(zero, zero); }),
            "[div] produced a NaN (debug_nans is on): result f32[1] from f32[1], f32[1]");
  // A NaN the operands already held is not produced here.
  Array nan(std::nan(""));
  EXPECT_EQ(error_of([&] { lax::add(nan, Array(1.0)); }), "<no error>");
  EXPECT_EQ(error_of([] { jnp::log(Array(2.0)); }), "<no error>");
}

TEST(DebugNans, JitRerunsAndNamesTheEquation) {
  auto f = jit([](const Array& x) {
    Array y = jnp::exp(x);
    Array z = jnp::log(x - 2.0);
    return y + z;
  });
  Array ok = Array(std::vector<double>{3.0}), bad = Array(std::vector<double>{1.0});
  EXPECT_TRUE(std::isnan(f(bad).to_vector<double>()[0]));  // off: no error
  DebugNans on;
  EXPECT_EQ(error_of([&] { f(ok); }), "<no error>");
  const std::string message = error_of([&] { f(bad); });
  EXPECT_TRUE(contains(message, "[jit] debug_nans: '") && contains(message, "' returned a NaN; re-run eagerly, it first "
                                                                            "comes from `log` in the equation\n  "))
      << message;
  EXPECT_TRUE(contains(message, ":f64[1] = log ")) << message;
  // NaN inputs pass through: nothing in the program produced them.
  EXPECT_EQ(error_of([&] { f(Array(std::vector<double>{std::nan("")})); }), "<no error>");
  auto g = jit([](const Array& x) { return x / x; });
  const std::string div = error_of([&] { g(Array(std::vector<float>{0.0f})); });
  EXPECT_TRUE(contains(div, "first comes from `div` in the equation\n  ")) << div;
  EXPECT_TRUE(contains(div, ":f32[1] = div a a")) << div;
}

// ---- check ----

TEST(Check, EagerRaisesAtOnceWithTheMessage) {
  EXPECT_EQ(error_of([] { check(Array(true), "fine"); }), "<no error>");
  EXPECT_EQ(error_of([] { check(Array(std::vector<double>{1.0, -2.0}) > 0.0, "x must be positive, got {}",
                               Array(std::vector<double>{1.0, -2.0})); }),
            "[check] x must be positive, got [ 1. -2.]");
  EXPECT_EQ(error_of([] { check(Array(std::vector<double>{1.0}), "m"); }),
            "[check] the predicate must be a bool array, got f64[1]");
  EXPECT_EQ(error_of([] { check(Array(), "m"); }), "[check] the predicate is a null jx::Array");
}

TEST(Check, JitRaisesOnceTheCallReturns) {
  std::vector<double> after;
  auto f = jit([&](const Array& x) {
    check(x > 0.0, "x = {} is not positive", x);
    debug::callback([&](const Array& v) { after.push_back(v.item<double>()); }, x * 2.0);
    return jnp::sqrt(x);
  });
  EXPECT_EQ(f(Array(4.0)).item<double>(), 2.0);
  EXPECT_EQ(error_of([&] { f(Array(-1.0)); }), "[check] x = -1.0 is not positive");
  // The program ran to its end before the call raised (the callback after the check ran).
  EXPECT_EQ(after, (std::vector<double>{8.0, -2.0}));
  EXPECT_EQ(f(Array(9.0)).item<double>(), 3.0);  // nothing left pending
}

TEST(Check, InsideALoopBody) {
  auto f = jit([](const Array& x) {
    return lax::fori_loop(0, 4, [](const Array& i, const Array& c) {
      check(c < 10.0, "step {}: c = {} too large", i, c);
      return c * 3.0;
    }, x);
  });
  EXPECT_EQ(f(Array(0.1)).item<double>() > 0.0, true);
  EXPECT_EQ(error_of([&] { f(Array(1.0)); }), "[check] step 3: c = 27.0 too large");
}

TEST(Check, VmapFailsIfAnyLaneFails) {
  auto f = [](const Array& x) {
    check(x != 2.0, "lane value {}", x);
    return x;
  };
  EXPECT_EQ(error_of([&] { vmap(f)(Array(std::vector<double>{0.0, 1.0})); }), "<no error>");
  EXPECT_EQ(error_of([&] { vmap(f)(Array(std::vector<double>{0.0, 2.0, 3.0})); }), "[check] lane value 2.0");
  EXPECT_EQ(error_of([&] { jit(vmap(f))(Array(std::vector<double>{0.0, 2.0, 3.0})); }), "[check] lane value 2.0");
}

TEST(Check, GradChecksPrimals) {
  auto f = [](const Array& x) {
    check(x > 0.0, "x = {}", x);
    return jnp::log(x);
  };
  EXPECT_NEAR(grad(f)(Array(2.0)).item<double>(), 0.5, 1e-12);
  EXPECT_EQ(error_of([&] { grad(f)(Array(-2.0)); }), "[check] x = -2.0");
  EXPECT_EQ(error_of([&] { jit(grad(f))(Array(-2.0)); }), "[check] x = -2.0");
}

}  // namespace
}  // namespace jx
