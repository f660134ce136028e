// jx::jit: trace a function once per input signature, optimize the whole program, fuse
// it into native kernels (LLVM), and run those on later calls.
//
//   auto f = jx::jit([](const Array& x, const Array& y) { return jnp::sin(x) + jnp::cos(y); });
//   Array z = f(x, y);                      // traces + compiles for (f32[5000,5000], f32[5000,5000])
//   z = f(x2, y2);                          // same signature: runs the cached executable
//   std::string text = f.lower(x, y).as_text();   // the optimized program
//   auto exe = f.lower(x, y).compile();  exe(x, y);
//
// Arguments are pytrees of arrays (C++ scalars become weak 0-d arrays, traced like
// JAX's Python scalars); arguments named by jx::static_argnums<...> are hashed into
// the cache key instead and passed to f as they are. Arrays a lambda captures are
// constants of the program. jit composes with every transformation: jit(grad(f)),
// grad(jit(f)), vmap(jit(f)), jit inside jit.
//
// Environment: JX_LOG_COMPILES=1 logs every compile to stderr with its time and the
// argument that caused it; JX_DUMP=<dir> writes the program after each pass, the fusion
// decisions and each kernel's LLVM IR and assembly; JX_CACHE_DIR / JX_DISABLE_DISK_CACHE
// steer the on-disk cache of compiled code.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "jx/transforms.h"

namespace jx {

struct JitOptions {
  // Names the function in compile logs, dumps and the program text.
  std::string name = "jit";
  // false: compile the traced program as it is, every equation its own kernel or runtime
  // call (the reference the differential tests compare the optimizer against).
  bool optimize = true;
  // Reuse compiled kernels from, and store them in, the on-disk cache (config's
  // cache_dir); config's disk_cache = false (JX_DISABLE_DISK_CACHE=1) also turns it off.
  bool disk_cache = true;
  // Positional arguments (every array of their pytrees) whose buffers the call may reuse
  // for its results, as JAX's donate_argnums: jx::jit(step, {.donate_argnums = {0}})
  // writes the updated parameters over the old ones, allocating nothing. A donated array
  // is deleted by the call (Array::is_deleted(); reading it raises jx::Error) whether or
  // not its buffer could be reused: one another array views, or that no result of its
  // size and layout can take, is simply freed. Ignored under other transformations
  // (grad, vmap, an enclosing jit), as in JAX. Static arguments cannot be donated.
  std::vector<int> donate_argnums;
};

// Positional arguments that are compile-time constants of the program:
// jx::jit(f, jx::static_argnums<1>). Their types need std::hash and operator==.
template <size_t... I>
struct StaticArgNums {};
template <size_t... I>
inline constexpr StaticArgNums<I...> static_argnums{};

template <class Result>
class Compiled;
template <class Result>
class Lowered;

namespace detail {

// The values of a call's static arguments, type-erased for the compile cache.
struct StaticValues {
  virtual ~StaticValues() = default;
  virtual size_t hash() const = 0;
  virtual bool equals(const StaticValues& other) const = 0;
  virtual std::string str() const = 0;  // for the compile log
};

template <class T>
std::string static_value_str(const T& v) {
  if constexpr (requires(std::ostream& os) { os << v; }) {
    std::ostringstream os;
    os << v;
    return os.str();
  } else {
    return std::string("<") + typeid(T).name() + ">";
  }
}

template <class... S>
struct StaticValuesOf final : StaticValues {
  std::tuple<S...> values;
  explicit StaticValuesOf(std::tuple<S...> v) : values(std::move(v)) {}
  size_t hash() const override {
    size_t h = 0x9e3779b97f4a7c15ull;
    std::apply([&](const auto&... v) { ((h = h * 31 + std::hash<std::decay_t<decltype(v)>>{}(v)), ...); }, values);
    return h;
  }
  bool equals(const StaticValues& other) const override {
    auto* o = dynamic_cast<const StaticValuesOf*>(&other);
    return o && o->values == values;
  }
  std::string str() const override {
    std::string s;
    std::apply([&](const auto&... v) { ((s += (s.empty() ? "" : ", ") + static_value_str(v)), ...); }, values);
    return s;
  }
};

// One traced signature of a jitted function: the program and how to rebuild outputs.
struct JitEntry;

// A callable passed down for the duration of one call, without copying it (a
// std::function of a capturing lambda allocates, on every jitted call).
template <class Sig>
class FunctionRef;
template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, A...>)
  FunctionRef(F& f) : object_(static_cast<void*>(&f)), call_([](void* o, A... a) -> R {
                        return (*static_cast<F*>(o))(std::forward<A>(a)...);
                      }) {}
  R operator()(A... a) const { return call_(object_, std::forward<A>(a)...); }

 private:
  void* object_;
  R (*call_)(void*, A...);
};

// Traces f on abstract leaves; records the structure of f's result in out_def.
using JitTraceFn = FunctionRef<std::vector<Array>(std::span<const Array>, tree::TreeDef& out_def)>;

// The compile cache of one jitted callable, shared by its copies (src/jit/jit.cpp).
class JitFunction {
 public:
  explicit JitFunction(JitOptions options);
  ~JitFunction();

  // The entry for this call's signature, tracing (and logging) on a miss. arg_positions
  // gives the argument each leaf belongs to (to name the one that changed).
  std::shared_ptr<const JitEntry> lookup(std::span<const Array> leaves, const tree::TreeDef& in_def,
                                         std::shared_ptr<const StaticValues> statics,
                                         FunctionRef<std::vector<size_t>()> arg_positions, JitTraceFn trace);
  // Runs an entry: natively when every leaf is concrete and no transformation is
  // active, else binds the `jit` primitive so the current trace sees one equation.
  std::vector<Array> call(const JitEntry& entry, std::span<const Array> leaves);
  // The optimized program of an entry (compiling it if needed).
  std::string optimized_text(const JitEntry& entry);
  // Compiles an entry now (Lowered::compile) and checks leaves against it at call time.
  std::vector<Array> call_checked(const JitEntry& entry, std::span<const Array> leaves);

  const JitOptions& options() const { return options_; }
  size_t cache_size() const;

 private:
  struct Cache;
  JitOptions options_;
  std::unique_ptr<Cache> cache_;
};

const tree::TreeDef& jit_entry_out_def(const JitEntry& entry);
// Raises jx::Error naming the function when donate_argnums names an argument past the
// call's `num_args` or a static one.
void check_donate_argnums(const JitOptions& options, size_t num_args, std::initializer_list<size_t> statics);
// The traced (unoptimized) program of an entry, JAX's make_jaxpr form.
std::string jit_entry_traced_text(const JitEntry& entry);

template <size_t I, size_t... S>
constexpr bool is_static_index = ((I == S) || ...);

// Argument I as jit sees it: static ones keep their type, others become array trees.
// (Selected lazily: a static argument need not be a pytree, e.g. a std::string.)
template <bool Static, class A>
struct JitArgType {
  using type = tree::array_tree_t<std::decay_t<A>>;
};
template <class A>
struct JitArgType<true, A> {
  using type = std::decay_t<A>;
};
template <size_t I, class A, size_t... S>
using jit_arg_t = typename JitArgType<is_static_index<I, S...>, A>::type;

// Whether every non-static argument type is a pytree (checked before anything else is
// instantiated, so asking whether a Jitted is callable with other types, as
// std::function's constructor does, is a clean "no").
template <class StaticSeq, class Seq, class... A>
struct JitArgsArePytrees;
template <size_t... S, size_t... I, class... A>
struct JitArgsArePytrees<std::index_sequence<S...>, std::index_sequence<I...>, A...> {
  static constexpr bool value = ((is_static_index<I, S...> || tree::detail::Tree<std::decay_t<A>>) && ...);
};

template <class StaticSeq, class Seq, class... A>
struct JitArgs;
template <size_t... S, size_t... I, class... A>
struct JitArgs<std::index_sequence<S...>, std::index_sequence<I...>, A...> {
  using type = std::tuple<jit_arg_t<I, A, S...>...>;
};

}  // namespace detail

// The callable jx::jit returns. Cheap to copy; copies share one compile cache.
template <class F, size_t... S>
class Jitted {
  // f's arguments as jit passes them: array trees, static arguments as they are.
  template <class... A>
  using Args = typename detail::JitArgs<std::index_sequence<S...>, std::index_sequence_for<A...>, A...>::type;
  template <class... A>
  using Result = detail::result_t<F, Args<A...>>;

 public:
  Jitted(F f, JitOptions options)
      : f_(std::make_shared<F>(std::move(f))), fn_(std::make_shared<detail::JitFunction>(std::move(options))) {}

  template <class... A>
  static constexpr bool accepts =
      detail::JitArgsArePytrees<std::index_sequence<S...>, std::index_sequence_for<A...>, A...>::value;

  template <class... A>
    requires accepts<A...>
  Result<A...> operator()(const A&... args) const {
    auto [entry, leaves] = prepare(args...);
    std::vector<Array> outs = fn_->call(*entry, leaves);
    return tree::unflatten<Result<A...>>(detail::jit_entry_out_def(*entry), outs);
  }

  // Traces for these arguments' signature without running: the staged program.
  template <class... A>
    requires accepts<A...>
  Lowered<Result<A...>> lower(const A&... args) const {
    auto [entry, leaves] = prepare(args...);
    return Lowered<Result<A...>>(fn_, entry);
  }

  // How many signatures have been traced.
  size_t cache_size() const { return fn_->cache_size(); }

 private:
  template <class... A>
  std::pair<std::shared_ptr<const detail::JitEntry>, std::vector<Array>> prepare(const A&... args) const {
    static_assert(((S < sizeof...(A)) && ...), "jx::jit: a static_argnums index is past the last argument");
    using All = Args<A...>;
    auto given = std::forward_as_tuple(args...);
    All all = [&]<size_t... I>(std::index_sequence<I...>) {
      return All{convert<std::tuple_element_t<I, All>>(std::get<I>(given))...};
    }(std::index_sequence_for<A...>{});
    return prepare_all(all, std::index_sequence_for<A...>{});
  }

  template <class T, class V>
  static T convert(const V& v) {
    if constexpr (std::is_same_v<T, std::decay_t<V>>) return v;
    else return detail::to_array_tree(v);
  }

  // Argument K of `all` if it is dynamic, else an empty tuple (contributing no leaves).
  template <size_t K, class All>
  static auto dynamic_part(const All& all) {
    if constexpr (detail::is_static_index<K, S...>) return std::tuple<>{};
    else return std::get<K>(all);
  }

  template <class All, size_t... I>
  std::pair<std::shared_ptr<const detail::JitEntry>, std::vector<Array>> prepare_all(const All& all,
                                                                                      std::index_sequence<I...>) const {
    using Dynamic = std::tuple<decltype(dynamic_part<I>(all))...>;
    // Without static arguments every argument is dynamic (Dynamic is All): flattened
    // where it is, not copied first (each Array copy updates its count atomically).
    auto [leaves, joint] = [&] {
      if constexpr (sizeof...(S) == 0) return tree::flatten(all);
      else return tree::flatten(Dynamic{dynamic_part<I>(all)...});
    }();
    // The argument each leaf belongs to (to name the one whose change caused a retrace);
    // computed only when tracing.
    auto positions = [&] {
      std::vector<size_t> p;
      auto count = [&]<size_t K>(std::integral_constant<size_t, K>) {
        if constexpr (!detail::is_static_index<K, S...>)
          p.insert(p.end(), tree::flatten(std::get<K>(all)).first.size(), K);
      };
      (count(std::integral_constant<size_t, I>{}), ...);
      (void)count;  // unused when f takes no arguments
      return p;
    };
    std::shared_ptr<const detail::StaticValues> statics;
    if constexpr (sizeof...(S) > 0)
      statics = std::make_shared<detail::StaticValuesOf<std::tuple_element_t<S, All>...>>(
          std::make_tuple(std::get<S>(all)...));
    const F& f = *f_;
    const tree::TreeDef& joint_def = joint;
    auto trace = [&](std::span<const Array> xs, tree::TreeDef& out_def) {
      Dynamic rebuilt = tree::unflatten<Dynamic>(joint_def, xs);
      All call_args = all;
      auto put = [&]<size_t K>(std::integral_constant<size_t, K>) {
        if constexpr (!detail::is_static_index<K, S...>) std::get<K>(call_args) = std::get<K>(rebuilt);
      };
      (put(std::integral_constant<size_t, I>{}), ...);
      (void)put;
      auto [outs, d] = tree::flatten(detail::to_array_tree(std::apply(f, call_args)));
      out_def = std::move(d);
      return outs;
    };
    if (!fn_->options().donate_argnums.empty())
      detail::check_donate_argnums(fn_->options(), sizeof...(I), {S...});
    auto entry = fn_->lookup(leaves, joint, std::move(statics), positions, trace);
    return {std::move(entry), std::move(leaves)};
  }

  std::shared_ptr<F> f_;
  std::shared_ptr<detail::JitFunction> fn_;
};

// A traced signature: its program text before and after optimization, and compile().
template <class Result>
class Lowered {
 public:
  Lowered(std::shared_ptr<detail::JitFunction> fn, std::shared_ptr<const detail::JitEntry> entry)
      : fn_(std::move(fn)), entry_(std::move(entry)) {}
  // The optimized program (after the pass pipeline and fusion), as text.
  std::string as_text() const { return fn_->optimized_text(*entry_); }
  // The traced program before optimization (what make_jaxpr prints).
  std::string traced_text() const { return detail::jit_entry_traced_text(*entry_); }
  Compiled<Result> compile() const {
    fn_->optimized_text(*entry_);  // compiles now
    return Compiled<Result>(fn_, entry_);
  }

 private:
  std::shared_ptr<detail::JitFunction> fn_;
  std::shared_ptr<const detail::JitEntry> entry_;
};

// An executable for one signature; called with the dynamic arguments only. Raises a
// jx::Error naming the mismatch when called with arrays of another signature.
template <class Result>
class Compiled {
 public:
  Compiled(std::shared_ptr<detail::JitFunction> fn, std::shared_ptr<const detail::JitEntry> entry)
      : fn_(std::move(fn)), entry_(std::move(entry)) {}
  template <class... A>
  Result operator()(const A&... args) const {
    auto [leaves, def] = tree::flatten(std::tuple<tree::array_tree_t<A>...>(detail::to_array_tree(args)...));
    std::vector<Array> outs = fn_->call_checked(*entry_, leaves);
    return tree::unflatten<Result>(detail::jit_entry_out_def(*entry_), outs);
  }
  std::string as_text() const { return fn_->optimized_text(*entry_); }

 private:
  std::shared_ptr<detail::JitFunction> fn_;
  std::shared_ptr<const detail::JitEntry> entry_;
};

// jx::jit(f), jx::jit(f, options), jx::jit(f, jx::static_argnums<1>[, options]).
template <class F>
Jitted<F> jit(F f, JitOptions options = {}) {
  return Jitted<F>(std::move(f), std::move(options));
}
template <class F, size_t... S>
Jitted<F, S...> jit(F f, StaticArgNums<S...>, JitOptions options = {}) {
  return Jitted<F, S...>(std::move(f), std::move(options));
}

}  // namespace jx
