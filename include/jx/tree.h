// jx::tree: pytrees for C++, JAX's jax.tree_util.
//
// A pytree is a nested value whose leaves are arrays. Transformations (grad, vmap) take
// and return pytrees: they flatten the arguments to a list of leaves plus a TreeDef (the
// structure), work on the leaves, and unflatten the results.
//
//   Leaves: jx::Array, and C++ arithmetic scalars (bool, integers, floating, complex64_t /
//           complex128_t), which flatten to weakly typed 0-d arrays as Array's constructors
//           make them (2.0 -> f64{weak}[]; unsigned 64-bit values go through int64).
//   Nodes:  std::tuple, std::pair (both "(a, b)"), std::vector, std::array (both
//           "[a, b]"), std::map<std::string, V> ("{'k': v}", key order), std::optional
//           (nullopt is "None", a node without leaves), and user structs registered at the
//           namespace scope of the struct (found by argument-dependent lookup):
//               struct Mlp { jx::Array w1, b1, w2, b2; };
//               JX_TREE_NODE(Mlp, w1, b1, w2, b2)       // prints Mlp(w1=*, b1=*, ...)
//           A registered struct must be default constructible; its listed fields, in the
//           listed order, are its children. Nesting is arbitrary.
//
//   auto [leaves, def] = jx::tree::flatten(params);
//   Mlp p2 = jx::tree::unflatten<Mlp>(def, leaves);
//   params = jx::tree::map([](const Array& p, const Array& g) { return p - 0.1 * g; },
//                          params, grads);
//
// The extension point is jx::tree::detail::Node<T>: one specialization per node kind, each
// saying how to visit its children (for_each_child), how to label its TreeDef node (keys,
// type name), how to rebuild itself from a TreeDef node (build), and the type it becomes when
// its leaves are replaced (with_leaves<X>: array_tree_t is with_leaves<Array>, a jacobian's
// type is the output's with_leaves<input type>).
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/array.h"
#include "jx/dtype.h"
#include "jx/error.h"

namespace jx::tree {

namespace detail {

enum class Kind { Leaf, Tuple, List, Dict, Optional, Struct };

// One node of a structure. Immutable once built and shared between TreeDefs.
struct DefNode {
  Kind kind = Kind::Leaf;
  std::string type_name;                               // Struct: the registered name
  std::vector<std::string> keys;                       // Dict keys / Struct field names
  std::vector<std::shared_ptr<const DefNode>> children;
  size_t num_leaves = 0;
};
using DefPtr = std::shared_ptr<const DefNode>;

inline const DefPtr& leaf_node() {
  static const DefPtr leaf = std::make_shared<const DefNode>(DefNode{Kind::Leaf, {}, {}, {}, 1});
  return leaf;
}

inline bool same_structure(const DefNode& a, const DefNode& b) {
  if (&a == &b) return true;
  if (a.kind != b.kind || a.type_name != b.type_name || a.keys != b.keys ||
      a.children.size() != b.children.size())
    return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!same_structure(*a.children[i], *b.children[i])) return false;
  return true;
}

inline std::string node_str(const DefNode& n) {
  auto joined = [&](auto&& item) {
    std::string s;
    for (size_t i = 0; i < n.children.size(); ++i) s += (i ? ", " : "") + item(i);
    return s;
  };
  auto child = [&](size_t i) { return node_str(*n.children[i]); };
  switch (n.kind) {
    case Kind::Leaf: return "*";
    case Kind::Tuple: return "(" + joined(child) + (n.children.size() == 1 ? ",)" : ")");
    case Kind::List: return "[" + joined(child) + "]";
    case Kind::Dict: return "{" + joined([&](size_t i) { return "'" + n.keys[i] + "': " + child(i); }) + "}";
    case Kind::Optional: return n.children.empty() ? "None" : child(0);  // present: as its value
    case Kind::Struct: return n.type_name + "(" + joined([&](size_t i) { return n.keys[i] + "=" + child(i); }) + ")";
  }
  return "?";
}

}  // namespace detail

// The structure of a pytree: node kinds, vector lengths, map keys, optional presence and
// struct type names. Cheap to copy (shares its nodes). Default constructed: a single leaf.
class TreeDef {
 public:
  TreeDef() : root_(detail::leaf_node()) {}
  explicit TreeDef(detail::DefPtr root) : root_(std::move(root)) {}

  size_t num_leaves() const { return root_->num_leaves; }
  // JAX's spelling: "PyTreeDef((*, {'b': *, 'w': *}))", structs as "Mlp(w1=*, b1=*)".
  std::string str() const { return "PyTreeDef(" + detail::node_str(*root_) + ")"; }
  bool operator==(const TreeDef& other) const { return detail::same_structure(*root_, *other.root_); }
  // The root node, for code that walks a structure (transformations, tests).
  const detail::DefNode& root() const { return *root_; }

 private:
  detail::DefPtr root_;
};

namespace detail {

template <class T>
concept Scalar = std::is_arithmetic_v<T> || is_complex_v<T>;

// A C++ scalar as the weak 0-d Array its constructor makes; integer types without their own
// constructor go through the nearest one (small types as int, as C++ promotes them).
template <Scalar T>
Array scalar_leaf(T v) {
  if constexpr (std::is_same_v<T, bool> || is_complex_v<T> || std::is_same_v<T, float> ||
                std::is_same_v<T, double>)
    return Array(v);
  else if constexpr (std::is_floating_point_v<T>) return Array(static_cast<double>(v));
  else if constexpr (sizeof(T) < 4 || (std::is_signed_v<T> && sizeof(T) == 4)) return Array(static_cast<int>(v));
  else if constexpr (sizeof(T) == 4) return Array(static_cast<unsigned>(v));
  else return Array(static_cast<long long>(v));
}

// The type Array::item reads a scalar leaf as (item accepts only jx element types).
template <class T>
using item_type_t = std::conditional_t<Element<T>, T, std::conditional_t<std::is_floating_point_v<T>, double, int64_t>>;

// Walks a TreeDef in step with the type being rebuilt, handing out leaves in order.
struct Builder {
  const TreeDef& def;
  std::span<const Array> leaves;
  size_t next = 0;
};

[[noreturn]] inline void mismatch(const Builder& b, const std::string& expected, const DefNode& at) {
  jx::detail::fail("tree::unflatten", "structure mismatch: the type expects ", expected, " but the def ",
                   b.def.str(), " has ", node_str(at), " there");
}

// Primary template: T is not a pytree (no `kind`).
template <class T>
struct Node {};

template <class T>
concept Tree = requires { Node<std::remove_cv_t<T>>::kind; };

// T with every leaf replaced by the type X (a registered struct, whose fields keep their
// declared types, only by Array: otherwise Unrepresentable).
template <class T, class X>
using with_leaves_t = typename Node<std::remove_cv_t<T>>::template with_leaves<X>;
template <class T>
using array_tree_t = with_leaves_t<T, Array>;

// What with_leaves_t gives where C++ cannot hold the replaced type.
struct Unrepresentable {};
template <class T>
struct mentions_unrepresentable : std::false_type {};
template <>
struct mentions_unrepresentable<Unrepresentable> : std::true_type {};
template <template <class...> class C, class... Ts>
struct mentions_unrepresentable<C<Ts...>> : std::disjunction<mentions_unrepresentable<Ts>...> {};
template <class V, size_t N>
struct mentions_unrepresentable<std::array<V, N>> : mentions_unrepresentable<V> {};

template <Tree T>
std::string pattern() { return Node<std::remove_cv_t<T>>::pattern(); }

template <Tree T>
T build(const DefNode& d, Builder& b) {
  return Node<std::remove_cv_t<T>>::build(d, b);
}

// Leaves.
template <class T>
  requires std::is_same_v<T, Array> || Scalar<T>
struct Node<T> {
  static constexpr Kind kind = Kind::Leaf;
  template <class X>
  using with_leaves = X;
  static std::string pattern() { return "*"; }
  static Array to_array(const T& x) {
    if constexpr (std::is_same_v<T, Array>) return x;
    else return scalar_leaf(x);
  }
  static T build(const DefNode& d, Builder& b) {
    if (d.kind != Kind::Leaf) mismatch(b, "a leaf *", d);
    const Array& leaf = b.leaves[b.next++];
    if constexpr (std::is_same_v<T, Array>) return leaf;
    else return static_cast<T>(leaf.item<item_type_t<T>>());
  }
};

// Fixed-size heterogeneous nodes: tuple and pair.
template <class T, class... Ts>
struct TupleLike {
  static constexpr Kind kind = Kind::Tuple;
  static std::string pattern() {
    std::string s;
    ((s += (s.empty() ? "" : ", ") + detail::pattern<Ts>()), ...);
    return "(" + s + (sizeof...(Ts) == 1 ? ",)" : ")");
  }
  template <class Fn>
  static void for_each_child(const T& x, Fn&& fn) {
    std::apply([&](const auto&... c) { (fn(c), ...); }, x);
  }
  static T build(const DefNode& d, Builder& b) {
    if (!(d.kind == Kind::Tuple && d.children.size() == sizeof...(Ts))) mismatch(b, pattern(), d);
    return build_children(d, b, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static T build_children(const DefNode& d, Builder& b, std::index_sequence<I...>) {
    return T{detail::build<Ts>(*d.children[I], b)...};  // braces: evaluated left to right
  }
};
template <Tree... Ts>
struct Node<std::tuple<Ts...>> : TupleLike<std::tuple<Ts...>, Ts...> {
  template <class X>
  using with_leaves = std::tuple<with_leaves_t<Ts, X>...>;
};
template <Tree A, Tree B>
struct Node<std::pair<A, B>> : TupleLike<std::pair<A, B>, A, B> {
  template <class X>
  using with_leaves = std::pair<with_leaves_t<A, X>, with_leaves_t<B, X>>;
};

// Homogeneous sequences: vector (any length) and std::array (length N).
template <Tree V, class Alloc>
struct Node<std::vector<V, Alloc>> {
  using T = std::vector<V, Alloc>;
  static constexpr Kind kind = Kind::List;
  template <class X>
  using with_leaves = std::vector<with_leaves_t<V, X>>;
  static std::string pattern() { return "[" + detail::pattern<V>() + ", ...]"; }
  template <class Fn>
  static void for_each_child(const T& x, Fn&& fn) {
    for (const auto& c : x) fn(static_cast<const V&>(c));  // vector<bool>: a bool, not a proxy
  }
  static T build(const DefNode& d, Builder& b) {
    if (!(d.kind == Kind::List)) mismatch(b, pattern(), d);
    T out;
    out.reserve(d.children.size());
    for (const auto& c : d.children) out.push_back(detail::build<V>(*c, b));
    return out;
  }
};
template <Tree V, size_t N>
struct Node<std::array<V, N>> {
  using T = std::array<V, N>;
  static constexpr Kind kind = Kind::List;
  template <class X>
  using with_leaves = std::array<with_leaves_t<V, X>, N>;
  static std::string pattern() { return "[" + detail::pattern<V>() + " x " + std::to_string(N) + "]"; }
  template <class Fn>
  static void for_each_child(const T& x, Fn&& fn) {
    for (const auto& c : x) fn(c);
  }
  static T build(const DefNode& d, Builder& b) {
    if (!(d.kind == Kind::List && d.children.size() == N)) mismatch(b, pattern(), d);
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return T{detail::build<V>(*d.children[I], b)...};
    }(std::make_index_sequence<N>{});
  }
};

// Dicts: string keys in the map's order (sorted for std::less).
template <Tree V, class Compare, class Alloc>
struct Node<std::map<std::string, V, Compare, Alloc>> {
  using T = std::map<std::string, V, Compare, Alloc>;
  static constexpr Kind kind = Kind::Dict;
  template <class X>
  using with_leaves = std::map<std::string, with_leaves_t<V, X>, Compare>;
  static std::string pattern() { return "{str: " + detail::pattern<V>() + ", ...}"; }
  template <class Fn>
  static void for_each_child(const T& x, Fn&& fn) {
    for (const auto& [k, v] : x) fn(v);
  }
  static void label(const T& x, DefNode& n) {
    for (const auto& kv : x) n.keys.push_back(kv.first);
  }
  static T build(const DefNode& d, Builder& b) {
    if (!(d.kind == Kind::Dict)) mismatch(b, pattern(), d);
    T out;
    for (size_t i = 0; i < d.children.size(); ++i) out.emplace(d.keys[i], detail::build<V>(*d.children[i], b));
    return out;
  }
};

// Optional: nullopt is a node without children; a value is its only child.
template <Tree V>
struct Node<std::optional<V>> {
  using T = std::optional<V>;
  static constexpr Kind kind = Kind::Optional;
  template <class X>
  using with_leaves = std::optional<with_leaves_t<V, X>>;
  static std::string pattern() { return "Optional[" + detail::pattern<V>() + "]"; }
  template <class Fn>
  static void for_each_child(const T& x, Fn&& fn) {
    if (x) fn(*x);
  }
  static T build(const DefNode& d, Builder& b) {
    if (!(d.kind == Kind::Optional)) mismatch(b, pattern(), d);
    if (d.children.empty()) return std::nullopt;
    return detail::build<V>(*d.children[0], b);
  }
};

// Registered structs. JX_TREE_NODE defines `jx_tree_fields(const S*)` next to S, returning
// the struct's name and one Field (name, member pointer) per listed member.
template <class S, class M>
struct Field {
  const char* name;
  M S::*member;
  using type = M;
};
template <class S, class M>
Field<S, M> field(const char* name, M S::*member) {
  return {name, member};
}
template <class... Fields>
struct StructFields {
  const char* type_name;
  std::tuple<Fields...> fields;
};
template <class... Fields>
StructFields(const char*, std::tuple<Fields...>) -> StructFields<Fields...>;

template <class T>
concept Registered = std::is_class_v<T> && requires(const T* p) { jx_tree_fields(p); };

template <Registered T>
struct Node<T> {
  static constexpr Kind kind = Kind::Struct;
  template <class X>
  using with_leaves = std::conditional_t<std::is_same_v<X, Array>, T, Unrepresentable>;  // fields keep their types
  static auto info() { return jx_tree_fields(static_cast<const T*>(nullptr)); }
  static std::string pattern() {
    auto s = info();
    std::string body;
    std::apply([&](const auto&... f) {
      ((body += (body.empty() ? "" : ", ") + std::string(f.name) + "=" +
                detail::pattern<typename std::remove_cvref_t<decltype(f)>::type>()), ...);
    }, s.fields);
    return std::string(s.type_name) + "(" + body + ")";
  }
  template <class Fn>
  static void for_each_child(const T& x, Fn&& fn) {
    std::apply([&](const auto&... f) { (fn(x.*(f.member)), ...); }, info().fields);
  }
  static void label(const T&, DefNode& n) {
    auto s = info();
    n.type_name = s.type_name;
    std::apply([&](const auto&... f) { (n.keys.push_back(f.name), ...); }, s.fields);
  }
  static T build(const DefNode& d, Builder& b) {
    auto s = info();
    bool fits = d.kind == Kind::Struct && d.type_name == s.type_name &&
                d.children.size() == std::tuple_size_v<decltype(s.fields)>;
    if (!fits) mismatch(b, pattern(), d);
    T out{};
    size_t i = 0;
    std::apply([&](const auto&... f) {
      ((out.*(f.member) = detail::build<typename std::remove_cvref_t<decltype(f)>::type>(*d.children[i++], b)), ...);
    }, s.fields);
    return out;
  }
};

// Types every value of which has one structure: leaves, and tuples and pairs of such
// (jit's argument packs). flatten builds their TreeDef once per type; lists, dicts,
// optionals and registered structs (names, keys) are built per call.
template <class T>
inline constexpr bool kFixedStructure = false;
template <class T>
  requires(Node<T>::kind == Kind::Leaf)
inline constexpr bool kFixedStructure<T> = true;
template <class... Ts>
inline constexpr bool kFixedStructure<std::tuple<Ts...>> = (kFixedStructure<Ts> && ...);
template <class A, class B>
inline constexpr bool kFixedStructure<std::pair<A, B>> = kFixedStructure<A> && kFixedStructure<B>;

template <Tree T>
size_t count_leaves(const T& x) {
  using N = Node<T>;
  if constexpr (N::kind == Kind::Leaf) {
    return 1;
  } else {
    size_t n = 0;
    N::for_each_child(x, [&](const auto& c) { n += count_leaves(c); });
    return n;
  }
}

template <Tree T>
void collect_leaves(const T& x, std::vector<Array>& out) {
  using N = Node<T>;
  if constexpr (N::kind == Kind::Leaf) out.push_back(N::to_array(x));
  else N::for_each_child(x, [&](const auto& c) { collect_leaves(c, out); });
}

template <Tree T>
DefPtr flatten_into(const T& x, std::vector<Array>& out) {
  using N = Node<T>;
  if constexpr (N::kind == Kind::Leaf) {
    out.push_back(N::to_array(x));
    return leaf_node();
  } else {
    auto node = std::make_shared<DefNode>();
    node->kind = N::kind;
    size_t num_children = 0;
    N::for_each_child(x, [&](const auto&) { ++num_children; });
    node->children.reserve(num_children);
    N::for_each_child(x, [&](const auto& c) {
      node->children.push_back(flatten_into(c, out));
      node->num_leaves += node->children.back()->num_leaves;
    });
    if constexpr (requires { N::label(x, *node); }) N::label(x, *node);  // keys, type name
    return node;
  }
}

}  // namespace detail

// T with every scalar leaf type replaced by Array, recursively through the std containers
// (vector<double> -> vector<Array>); registered structs map to themselves.
template <class T>
using array_tree_t = detail::array_tree_t<T>;

template <class T>
std::vector<Array> leaves(const T& tree) {
  static_assert(detail::Tree<T>, "jx::tree: not a pytree type (register structs with JX_TREE_NODE)");
  std::vector<Array> out;
  out.reserve(detail::count_leaves(tree));
  detail::collect_leaves(tree, out);
  return out;
}

template <class T>
std::pair<std::vector<Array>, TreeDef> flatten(const T& tree) {
  static_assert(detail::Tree<T>, "jx::tree: not a pytree type (register structs with JX_TREE_NODE)");
  std::vector<Array> out;
  out.reserve(detail::count_leaves(tree));
  if constexpr (detail::kFixedStructure<T>) {
    // One definition for the type, shared: no nodes allocated per call (a jitted call
    // flattens its arguments each time), and structures compare by address.
    detail::collect_leaves(tree, out);
    static const TreeDef def = [&] {
      std::vector<Array> unused;
      return TreeDef(detail::flatten_into(tree, unused));
    }();
    return {std::move(out), def};
  } else {
    TreeDef def(detail::flatten_into(tree, out));
    return {std::move(out), std::move(def)};
  }
}

template <class T>
TreeDef structure(const T& tree) {
  return flatten(tree).second;
}

// Rebuilds a T from a structure and its leaves. Scalar leaf types read their value with
// Array::item (so only from concrete arrays). Raises jx::Error("[tree::unflatten] ...") when
// the leaf count or the structure does not fit T.
template <class T>
T unflatten(const TreeDef& def, std::span<const Array> leaves) {
  static_assert(detail::Tree<T>, "jx::tree: not a pytree type (register structs with JX_TREE_NODE)");
  if (leaves.size() != def.num_leaves())
    jx::detail::fail("tree::unflatten", "the def ", def.str(), " has ", def.num_leaves(), " leaves but ",
                     leaves.size(), " were given");
  detail::Builder b{def, leaves};
  return detail::build<T>(def.root(), b);
}

// Applies f(leaf, leaf_of_rest...) leaf by leaf; every tree in `rest` must have the
// structure of `tree`. Returns the result as array_tree_t<T>.
template <class F, class T, class... Rest>
array_tree_t<T> map(F&& f, const T& tree, const Rest&... rest) {
  auto flat = flatten(tree);
  const std::vector<Array>& first = flat.first;
  const TreeDef& def = flat.second;
  std::array<std::vector<Array>, sizeof...(Rest)> others;
  size_t index = 0;
  [[maybe_unused]] auto add = [&](const auto& other) {
    auto other_flat = flatten(other);
    if (!(other_flat.second == def))
      jx::detail::fail("tree::map", "tree ", index + 1, " has structure ", other_flat.second.str(),
                       " but the first tree has ", def.str());
    others[index++] = std::move(other_flat.first);
  };
  (add(rest), ...);
  std::vector<Array> out;
  out.reserve(first.size());
  [&]<size_t... I>(std::index_sequence<I...>) {
    for (size_t k = 0; k < first.size(); ++k) out.push_back(Array(f(first[k], others[I][k]...)));
  }(std::index_sequence_for<Rest...>{});
  return unflatten<array_tree_t<T>>(def, out);
}

// The structure of a tree of trees: `outer` with each of its leaves replaced by `inner`
// (JAX's tree_util composition; a jacobian's structure is compose(output, input)).
inline TreeDef compose(const TreeDef& outer, const TreeDef& inner) {
  auto rec = [&](auto& self, const detail::DefPtr& n) -> detail::DefPtr {
    if (n->kind == detail::Kind::Leaf) return std::make_shared<const detail::DefNode>(inner.root());
    auto out = std::make_shared<detail::DefNode>(*n);
    out->num_leaves = 0;
    for (auto& c : out->children) {
      c = self(self, c);
      out->num_leaves += c->num_leaves;
    }
    return out;
  };
  detail::DefPtr root = rec(rec, std::make_shared<const detail::DefNode>(outer.root()));
  return TreeDef(std::move(root));
}

}  // namespace jx::tree

namespace jx {

// jax.block_until_ready: waits for every array leaf of `tree` and returns the tree.
template <class T>
T block_until_ready(const T& tree) {
  static_assert(tree::detail::Tree<T>, "jx::block_until_ready: not a pytree type (register structs with JX_TREE_NODE)");
  for (const Array& leaf : tree::leaves(tree)) leaf.block_until_ready();
  return tree;
}

}  // namespace jx

// JX_TREE_NODE(Type, field, ...): registers a struct as a pytree node. Write it at the
// namespace scope of Type (it defines a function found by argument-dependent lookup).
#define JX_TREE_NODE(Type, ...)                                                           \
  [[maybe_unused]] inline auto jx_tree_fields(const Type*) {                              \
    return ::jx::tree::detail::StructFields{                                              \
        #Type, std::make_tuple(JX_TREE_DETAIL_FOR_EACH(JX_TREE_DETAIL_FIELD, Type, __VA_ARGS__))}; \
  }

#define JX_TREE_DETAIL_FIELD(Type, member) ::jx::tree::detail::field(#member, &Type::member)

// A variadic for-each over up to 256 arguments (each EXPAND level multiplies the rescans).
#define JX_TREE_DETAIL_PARENS ()
#define JX_TREE_DETAIL_EXPAND(...) JX_TREE_DETAIL_EXPAND3(JX_TREE_DETAIL_EXPAND3(JX_TREE_DETAIL_EXPAND3(JX_TREE_DETAIL_EXPAND3(__VA_ARGS__))))
#define JX_TREE_DETAIL_EXPAND3(...) JX_TREE_DETAIL_EXPAND2(JX_TREE_DETAIL_EXPAND2(JX_TREE_DETAIL_EXPAND2(JX_TREE_DETAIL_EXPAND2(__VA_ARGS__))))
#define JX_TREE_DETAIL_EXPAND2(...) JX_TREE_DETAIL_EXPAND1(JX_TREE_DETAIL_EXPAND1(JX_TREE_DETAIL_EXPAND1(JX_TREE_DETAIL_EXPAND1(__VA_ARGS__))))
#define JX_TREE_DETAIL_EXPAND1(...) __VA_ARGS__
#define JX_TREE_DETAIL_FOR_EACH(macro, arg, ...) \
  __VA_OPT__(JX_TREE_DETAIL_EXPAND(JX_TREE_DETAIL_FOR_EACH_STEP(macro, arg, __VA_ARGS__)))
#define JX_TREE_DETAIL_FOR_EACH_STEP(macro, arg, first, ...) \
  macro(arg, first) __VA_OPT__(, JX_TREE_DETAIL_FOR_EACH_AGAIN JX_TREE_DETAIL_PARENS(macro, arg, __VA_ARGS__))
#define JX_TREE_DETAIL_FOR_EACH_AGAIN() JX_TREE_DETAIL_FOR_EACH_STEP
