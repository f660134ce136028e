// A tour of jx: what a new user wants to see first. Run by the README's first command.
#include <jx/jx.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

namespace jnp = jx::numpy;

namespace {

void section(const char* title) { std::cout << "\n== " << title << " ==\n"; }

template <class F>
double best_ms(F&& f, int reps = 5) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

// Model parameters as a plain struct, registered as a pytree in one line.
struct Linear {
  jx::Array w, b;
};
JX_TREE_NODE(Linear, w, b)

}  // namespace

int main() {
  section("arrays: NumPy's names, JAX's dtypes");
  jx::Array a = {{1.0, 2.0}, {3.0, 4.0}};  // literals default to float32, as in JAX
  std::cout << "a = " << a << "\n";
  std::cout << "a * 2.0 keeps float32 (C++ scalars are weakly typed): " << a * 2.0 << "\n";
  auto x64 = jnp::arange(0.0, 1.0, 0.25, jx::float64);  // float64 whenever asked, no global switch
  std::cout << "arange(0, 1, 0.25, float64) = " << x64 << "\n";
  std::cout << "int32 + uint32 promotes to " << (jnp::ones({2}, jx::int32) + jnp::ones({2}, jx::uint32)).dtype()
            << "\n";

  section("broadcasting, reductions, indexing");
  auto m = jnp::arange(12).reshape({3, 4});
  std::cout << "m = " << m << "\n";
  std::cout << "m - m.mean(axis 0) = " << m - jnp::mean(m, 0, /*keepdims=*/true) << "\n";
  std::cout << "m(jx::all, jx::Slice{std::nullopt, std::nullopt, -1}) = "
            << m(jx::all, jx::Slice{std::nullopt, std::nullopt, -1}) << "\n";
  std::cout << "m.at(1, 2).set(100) = " << m.at(1, 2).set(100) << "  (m itself is unchanged: "
            << m(1, 2).item<int>() << ")\n";
  std::cout << "einsum(\"ij,kj->ik\", m, m) = " << jnp::einsum("ij,kj->ik", {m, m}) << "\n";

  section("linear algebra through LAPACK");
  jx::Array spd = {{4.0, 1.0}, {1.0, 3.0}};
  jx::Array rhs = {1.0, 2.0};
  std::cout << "solve(spd, rhs) = " << jnp::linalg::solve(spd, rhs) << "\n";
  std::cout << "eigvalsh(spd) = " << jnp::linalg::eigh(spd).eigenvalues << "\n";

  section("explicit, splittable random keys (bit-exact with jax.random)");
  auto key = jx::random::key(0);
  auto keys = jx::random::split(key);
  std::cout << "key(0) = " << key << "\n";
  std::cout << "uniform(split(key)[0], (3,)) = " << jx::random::uniform(keys(0), {3}) << "\n";

  section("NumPy files in and out");
  auto path = (std::filesystem::temp_directory_path() / "jx_tour.npy").string();
  jx::save(path, m);
  std::cout << "load(save(m)) == m: " << jnp::array_equal(jx::load(path), m) << "\n";

  section("transformations: grad, vmap, and any composition of them");
  {
    auto f = [](const jx::Array& x) { return jnp::sin(x) / x; };
    std::cout << "f(x) = sin(x) / x;  grad(f)(1.0f) = " << jx::grad(f)(jx::Array(1.0f)) << "\n";
    std::cout << "grad(grad(f))(1.0f) = " << jx::grad(jx::grad(f))(jx::Array(1.0f)) << "\n";
    std::cout << "vmap(grad(f))(arange(1, 4)) = " << jx::vmap(jx::grad(f))(jnp::arange(1.0f, 4.0f)) << "\n";
    // A least-squares model whose parameters are a struct: grad returns the same struct.
    auto loss = [](const Linear& p, const jx::Array& xs, const jx::Array& ys) {
      return jnp::mean(jnp::square(xs * p.w + p.b - ys));
    };
    Linear params{jx::Array(0.0f), jx::Array(0.0f)};
    auto xs = jnp::linspace(0.0f, 1.0f, 8), ys = 3.0f * xs + 1.0f;
    std::cout << "per-example gradients of w at the start, vmap(grad(loss), in_axes = (not_mapped, 0, 0)):\n  "
              << jx::vmap(jx::grad(loss), {.in_axes = {jx::not_mapped, 0, 0}})(params, xs, ys).w << "\n";
    for (int step = 0; step < 200; ++step) {
      auto grads = jx::grad(loss)(params, xs, ys);
      params = jx::tree::map([](const jx::Array& p, const jx::Array& g) { return p - 0.5 * g; }, params, grads);
    }
    std::cout << "fit y = 3x + 1 by gradient descent: w = " << params.w << ", b = " << params.b << "\n";
    std::cout << "make_jaxpr(grad(f))(1.0f) =\n" << jx::make_jaxpr(jx::grad(f))(jx::Array(1.0f)) << "\n";
  }

  section("differentiable physics: fit a launch through a whole simulation (lax::scan)");
  {
    // A projectile with air drag, 200 Euler steps of 10 ms in one scan. The launch
    // velocity is fitted by gradient descent, through all 200 steps, so that the
    // projectile is at x = 30 m, y = 0 after 2 s. Same numbers as JAX gives.
    auto landing = [](const jx::Array& v0) {
      const jx::Array gravity = jnp::asarray(std::vector<float>{0.0f, -9.81f});
      auto step = [&](const std::pair<jx::Array, jx::Array>& state, jx::None) {
        const auto& [pos, vel] = state;
        jx::Array acc = gravity - 0.02f * jnp::sqrt(jnp::sum(vel * vel)) * vel;
        jx::Array v = vel + 0.01f * acc;
        return std::pair(std::pair(pos + 0.01f * v, v), jx::none);
      };
      auto start = std::pair(jnp::zeros({2}), v0);
      return jx::lax::scan(step, start, jx::none, {.length = 200}).first.first;
    };
    const jx::Array target = jnp::asarray(std::vector<float>{30.0f, 0.0f});
    auto miss = [&](const jx::Array& v0) { return jnp::sum(jnp::square(landing(v0) - target)); };
    auto miss_and_grad = jx::jit(jx::value_and_grad(miss));
    jx::Array v0 = jnp::asarray(std::vector<float>{10.0f, 10.0f});
    std::cout << "launch " << v0 << ": squared miss " << miss(v0) << " m^2\n";
    for (int step = 0; step < 100; ++step) v0 = v0 - 0.03f * miss_and_grad(v0).second;
    std::cout << "after 100 gradient steps through the simulation: launch " << v0 << ", lands at " << landing(v0)
              << "\n";
  }

  section("errors name the operation and the shapes");
  try {
    auto bad = jnp::ones({3}) + jnp::ones({4});
    (void)bad;
  } catch (const jx::Error& e) {
    std::cout << "jx::Error: " << e.what() << "\n";
  }

  section("jit: trace once, optimize, fuse, run native code (LLVM)");
  {
    auto fn = jx::jit([](const jx::Array& x, const jx::Array& y) { return jnp::sin(x) + jnp::cos(y); });
    auto small = jnp::linspace(0.0f, 1.0f, 4);
    std::cout << "jit(sin(x) + cos(y))(v, v) = " << fn(small, small) << "\n";
    std::cout << "the optimized program: one fused kernel\n" << fn.lower(small, small).as_text() << "\n";
    // Transformations compose with jit in any order.
    auto f = [](const jx::Array& x) { return jnp::sum(jnp::tanh(x) * x); };
    std::cout << "jit(grad(f))(v) = " << jx::jit(jx::grad(f))(small) << "\n";
    std::cout << "grad(jit(f))(v) = " << jx::grad(jx::jit(f))(small) << "\n";
    std::cout << "vmap(jit(f))(ones(2, 4)) = " << jx::vmap(jx::jit(f))(jnp::ones({2, 4})) << "\n";
  }

  section("speed: sin(x) + cos(y) on 5000x5000 float32");
  auto k2 = jx::random::split(key);
  auto x = jx::random::uniform(k2(0), {5000, 5000});
  auto y = jx::random::uniform(k2(1), {5000, 5000});
  double eager_ms = best_ms([&] { (void)(jnp::sin(x) + jnp::cos(y)); });
  auto tutorial = jx::jit([](const jx::Array& a, const jx::Array& b) { return jnp::sin(a) + jnp::cos(b); });
  auto t0 = std::chrono::steady_clock::now();
  (void)tutorial(x, y);
  double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  double jit_ms = best_ms([&] { (void)tutorial(x, y); });
  std::printf("eager jx (each op a vectorized, threaded kernel): %.1f ms\n", eager_ms);
  std::printf("jit jx (one fused kernel): %.1f ms; first call incl. trace + compile: %.1f ms\n", jit_ms, first_ms);
  std::printf("(NumPy on this machine: about 55-70 ms)\n");
  return 0;
}
