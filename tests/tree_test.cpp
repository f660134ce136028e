// jx::tree: flatten/unflatten round trips for every node kind, leaf order, TreeDef printing
// and equality, tree::map, and the error messages of unflatten and map.
#include "jx/tree.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace jnp = jx::numpy;
namespace tree = jx::tree;
using jx::Array;

namespace models {
struct Mlp {
  Array w1, b1, w2, b2;
};
JX_TREE_NODE(Mlp, w1, b1, w2, b2)

// A second struct in the same TU, with non-Array fields and a nested registered struct.
struct Layer {
  std::vector<Array> weights;
  double scale = 1.0;
  std::optional<Array> bias;
};
JX_TREE_NODE(Layer, weights, scale, bias)

struct Net {
  Mlp head;
  std::map<std::string, Layer> layers;
};
JX_TREE_NODE(Net, head, layers)

// Registered with its fields in a different order than declared: the listed order wins.
struct Swapped {
  Array first, second;
};
JX_TREE_NODE(Swapped, second, first)
}  // namespace models

using models::Layer;
using models::Mlp;
using models::Net;

namespace {

// A distinct, recognizable value per leaf: a float32 array filled with v.
Array val(double v, jx::Shape shape = {2}) { return jnp::full(shape, v, jx::float32); }

// The first element of each leaf, in flatten order.
std::vector<double> firsts(const std::vector<Array>& leaves) {
  std::vector<double> out;
  for (const Array& a : leaves) out.push_back(a.to_vector<double>().at(0));
  return out;
}

bool same_array(const Array& a, const Array& b) { return a.id() == b.id(); }

Mlp make_mlp(double base) { return Mlp{val(base + 1), val(base + 2), val(base + 3), val(base + 4)}; }

}  // namespace

TEST(Tree, SingleArrayIsOneLeaf) {
  Array x = jnp::ones({2, 3});
  auto [leaves, def] = tree::flatten(x);
  ASSERT_EQ(leaves.size(), 1u);
  EXPECT_TRUE(same_array(leaves[0], x));
  EXPECT_EQ(def.num_leaves(), 1u);
  EXPECT_EQ(def.str(), "PyTreeDef(*)");
  EXPECT_TRUE(same_array(tree::unflatten<Array>(def, leaves), x));
}

// Tuples and pairs of leaves have one structure per type: flatten shares one definition
// (jit flattens its arguments on every call); containers of varying shape build theirs.
TEST(Tree, FixedStructuresShareOneDefinition) {
  static_assert(tree::detail::kFixedStructure<std::tuple<Array, Array>>);
  static_assert(tree::detail::kFixedStructure<std::pair<Array, std::tuple<double, Array>>>);
  static_assert(!tree::detail::kFixedStructure<std::tuple<Array, std::vector<Array>>>);
  static_assert(!tree::detail::kFixedStructure<Mlp>);
  Array a = val(1), b = val(2);
  auto [l1, d1] = tree::flatten(std::make_tuple(a, b));
  auto [l2, d2] = tree::flatten(std::make_tuple(b, a));
  EXPECT_EQ(&d1.root(), &d2.root());
  EXPECT_EQ(d1.str(), "PyTreeDef((*, *))");
  ASSERT_EQ(l2.size(), 2u);
  EXPECT_TRUE(same_array(l2[0], b) && same_array(l2[1], a));
  auto back = tree::unflatten<std::tuple<Array, Array>>(d2, l2);
  EXPECT_TRUE(same_array(std::get<0>(back), b));
  auto [l3, d3] = tree::flatten(std::vector<Array>{a});
  auto [l4, d4] = tree::flatten(std::vector<Array>{a, b});
  EXPECT_NE(d3, d4);
}

TEST(Tree, LeafOrderFollowsTupleVectorMapAndFieldOrder) {
  std::tuple<Array, std::vector<Array>, std::map<std::string, Array>> t{
      val(1), {val(2), val(3)}, {{"zeta", val(5)}, {"alpha", val(4)}}};
  EXPECT_EQ(firsts(tree::leaves(t)), (std::vector<double>{1, 2, 3, 4, 5}));  // map: sorted keys
  EXPECT_EQ(firsts(tree::leaves(make_mlp(0))), (std::vector<double>{1, 2, 3, 4}));
  models::Swapped s{val(1), val(2)};
  EXPECT_EQ(firsts(tree::leaves(s)), (std::vector<double>{2, 1}));
  EXPECT_EQ(tree::structure(s).str(), "PyTreeDef(Swapped(second=*, first=*))");
}

TEST(Tree, StrOfEveryNodeKind) {
  EXPECT_EQ(tree::structure(std::make_tuple(val(0), std::map<std::string, Array>{{"w", val(0)}, {"b", val(0)}})).str(),
            "PyTreeDef((*, {'b': *, 'w': *}))");
  EXPECT_EQ(tree::structure(std::make_pair(val(0), val(0))).str(), "PyTreeDef((*, *))");
  EXPECT_EQ(tree::structure(std::make_tuple(val(0))).str(), "PyTreeDef((*,))");
  EXPECT_EQ(tree::structure(std::tuple<>{}).str(), "PyTreeDef(())");
  EXPECT_EQ(tree::structure(std::vector<Array>{}).str(), "PyTreeDef([])");
  EXPECT_EQ(tree::structure(std::array<double, 3>{1, 2, 3}).str(), "PyTreeDef([*, *, *])");
  EXPECT_EQ(tree::structure(std::optional<Array>{}).str(), "PyTreeDef(None)");
  EXPECT_EQ(tree::structure(std::optional<Array>{val(0)}).str(), "PyTreeDef(*)");
  EXPECT_EQ(tree::structure(make_mlp(0)).str(), "PyTreeDef(Mlp(w1=*, b1=*, w2=*, b2=*))");
  Layer layer{{val(1), val(2)}, 0.5, std::nullopt};
  EXPECT_EQ(tree::structure(layer).str(), "PyTreeDef(Layer(weights=[*, *], scale=*, bias=None))");
}

TEST(Tree, RoundTripEveryNodeKind) {
  // tuple and pair
  auto tp = std::make_tuple(val(1), std::make_pair(val(2), val(3)));
  auto [tl, td] = tree::flatten(tp);
  auto tp2 = tree::unflatten<decltype(tp)>(td, tl);
  EXPECT_TRUE(same_array(std::get<0>(tp2), std::get<0>(tp)));
  EXPECT_TRUE(same_array(std::get<1>(tp2).second, std::get<1>(tp).second));
  // vector and std::array
  std::vector<Array> v{val(1), val(2), val(3)};
  auto v2 = tree::unflatten<std::vector<Array>>(tree::structure(v), tree::leaves(v));
  ASSERT_EQ(v2.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(same_array(v2[i], v[i]));
  std::array<Array, 2> a{val(1), val(2)};
  auto a2 = tree::unflatten<std::array<Array, 2>>(tree::structure(a), tree::leaves(a));
  EXPECT_TRUE(same_array(a2[1], a[1]));
  // map
  std::map<std::string, Array> m{{"b", val(1)}, {"a", val(2)}};
  auto m2 = tree::unflatten<decltype(m)>(tree::structure(m), tree::leaves(m));
  ASSERT_EQ(m2.size(), 2u);
  EXPECT_TRUE(same_array(m2.at("a"), m.at("a")));
  EXPECT_TRUE(same_array(m2.at("b"), m.at("b")));
  // registered struct
  Mlp mlp = make_mlp(0);
  Mlp mlp2 = tree::unflatten<Mlp>(tree::structure(mlp), tree::leaves(mlp));
  EXPECT_TRUE(same_array(mlp2.w1, mlp.w1));
  EXPECT_TRUE(same_array(mlp2.b2, mlp.b2));
}

TEST(Tree, DeepNestingRoundTrips) {
  using Deep = std::vector<std::map<std::string, std::pair<Array, Mlp>>>;
  Deep d{{{"x", {val(1), make_mlp(10)}}}, {{"y", {val(2), make_mlp(20)}}, {"a", {val(3), make_mlp(30)}}}};
  auto [leaves, def] = tree::flatten(d);
  EXPECT_EQ(def.num_leaves(), 15u);
  EXPECT_EQ(firsts(leaves), (std::vector<double>{1, 11, 12, 13, 14, 3, 31, 32, 33, 34, 2, 21, 22, 23, 24}));
  EXPECT_EQ(def.str(),
            "PyTreeDef([{'x': (*, Mlp(w1=*, b1=*, w2=*, b2=*))}, {'a': (*, Mlp(w1=*, b1=*, w2=*, b2=*)), "
            "'y': (*, Mlp(w1=*, b1=*, w2=*, b2=*))}])");
  Deep d2 = tree::unflatten<Deep>(def, leaves);
  EXPECT_TRUE(same_array(d2[1].at("y").second.w2, d[1].at("y").second.w2));
  EXPECT_TRUE(same_array(d2[1].at("a").first, d[1].at("a").first));
  EXPECT_TRUE(tree::structure(d2) == def);

  Net net{make_mlp(0), {{"enc", Layer{{val(5)}, 2.0, val(6)}}, {"dec", Layer{{}, 3.0, std::nullopt}}}};
  auto [nl, nd] = tree::flatten(net);
  EXPECT_EQ(nd.str(),
            "PyTreeDef(Net(head=Mlp(w1=*, b1=*, w2=*, b2=*), layers={'dec': Layer(weights=[], scale=*, "
            "bias=None), 'enc': Layer(weights=[*], scale=*, bias=*)}))");
  EXPECT_EQ(firsts(nl), (std::vector<double>{1, 2, 3, 4, 3, 5, 2, 6}));
  Net net2 = tree::unflatten<Net>(nd, nl);
  EXPECT_EQ(net2.layers.at("dec").scale, 3.0);
  EXPECT_FALSE(net2.layers.at("dec").bias.has_value());
  ASSERT_TRUE(net2.layers.at("enc").bias.has_value());
  EXPECT_TRUE(same_array(*net2.layers.at("enc").bias, *net.layers.at("enc").bias));
}

TEST(Tree, EqualityComparesStructureNotValues) {
  EXPECT_TRUE(tree::structure(make_mlp(0)) == tree::structure(make_mlp(5)));
  EXPECT_TRUE(tree::structure(std::vector<Array>{val(1), val(2)}) == tree::structure(std::vector<double>{1, 2}));
  EXPECT_FALSE(tree::structure(std::vector<Array>{val(1)}) == tree::structure(std::vector<Array>{val(1), val(2)}));
  std::map<std::string, Array> ma{{"a", val(1)}}, mb{{"b", val(1)}};
  EXPECT_FALSE(tree::structure(ma) == tree::structure(mb));
  EXPECT_FALSE(tree::structure(std::make_tuple(val(1))) == tree::structure(std::vector<Array>{val(1)}));
  // optional presence is part of the structure, and a present optional is not a bare leaf
  EXPECT_FALSE(tree::structure(std::optional<Array>{}) == tree::structure(std::optional<Array>{val(1)}));
  EXPECT_FALSE(tree::structure(std::optional<Array>{val(1)}) == tree::structure(val(1)));
  // struct types with the same shape of fields differ by name
  models::Swapped s{val(1), val(2)};
  EXPECT_FALSE(tree::structure(s) == tree::structure(std::make_pair(val(1), val(2))));
  // a TreeDef copy compares equal
  tree::TreeDef def = tree::structure(make_mlp(0));
  tree::TreeDef copy = def;
  EXPECT_TRUE(copy == def);
}

TEST(Tree, ScalarLeavesAreWeakArrays) {
  auto [leaves, def] = tree::flatten(std::make_tuple(2.0, 3, 1.5f, true));
  ASSERT_EQ(leaves.size(), 4u);
  EXPECT_EQ(leaves[0].dtype(), Array(2.0).dtype());
  EXPECT_TRUE(leaves[0].weak_type());
  EXPECT_EQ(leaves[0].ndim(), 0);
  EXPECT_EQ(leaves[0].item<double>(), 2.0);
  EXPECT_EQ(leaves[1].dtype(), Array(3).dtype());
  EXPECT_TRUE(leaves[1].weak_type());
  EXPECT_EQ(leaves[2].dtype(), Array(1.5f).dtype());
  EXPECT_EQ(leaves[3].dtype(), jx::bool_);
  EXPECT_EQ(def.str(), "PyTreeDef((*, *, *, *))");
  // Integer types without their own Array constructor still flatten (to weak integers).
  auto small = tree::leaves(std::make_tuple(static_cast<int8_t>(-3), static_cast<uint16_t>(7), 9ul));
  EXPECT_EQ(small[0].item<int64_t>(), -3);
  EXPECT_EQ(small[1].item<int64_t>(), 7);
  EXPECT_EQ(small[2].item<int64_t>(), 9);
  EXPECT_TRUE(small[2].weak_type());
}

TEST(Tree, UnflattenIntoScalarTypesReadsConcreteValues) {
  std::vector<Array> leaves{jnp::full({}, 2.5, jx::float32), jnp::full({}, 7, jx::int32), Array(true)};
  tree::TreeDef def = tree::structure(std::make_tuple(0.0, 0, false));
  auto [d, i, b] = tree::unflatten<std::tuple<double, int, bool>>(def, leaves);
  EXPECT_EQ(d, 2.5);
  EXPECT_EQ(i, 7);
  EXPECT_TRUE(b);
  Layer layer = tree::unflatten<Layer>(tree::structure(Layer{{val(0)}, 1.0, std::nullopt}),
                                       std::vector<Array>{val(4), jnp::full({}, 0.25)});
  EXPECT_EQ(layer.scale, 0.25);
  auto small = tree::unflatten<std::pair<uint16_t, long double>>(
      tree::structure(std::make_pair(0, 0.0)), std::vector<Array>{Array(9), Array(0.5)});
  EXPECT_EQ(small.first, 9);
  EXPECT_EQ(small.second, 0.5L);
}

TEST(Tree, OptionalPresentAndAbsent) {
  std::optional<Array> none, some = val(3);
  auto [nl, nd] = tree::flatten(none);
  EXPECT_TRUE(nl.empty());
  EXPECT_EQ(nd.num_leaves(), 0u);
  EXPECT_FALSE(tree::unflatten<std::optional<Array>>(nd, nl).has_value());
  auto [sl, sd] = tree::flatten(some);
  ASSERT_EQ(sl.size(), 1u);
  auto back = tree::unflatten<std::optional<Array>>(sd, sl);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(same_array(*back, *some));
  // A nested absent optional keeps the leaves around it in place.
  auto t = std::make_tuple(val(1), std::optional<Array>{}, val(2));
  EXPECT_EQ(tree::structure(t).str(), "PyTreeDef((*, None, *))");
  EXPECT_EQ(firsts(tree::leaves(t)), (std::vector<double>{1, 2}));
}

TEST(Tree, EmptyContainers) {
  auto [tl, td] = tree::flatten(std::tuple<>{});
  EXPECT_TRUE(tl.empty());
  EXPECT_EQ(td.num_leaves(), 0u);
  tree::unflatten<std::tuple<>>(td, tl);
  auto [vl, vd] = tree::flatten(std::vector<Array>{});
  EXPECT_TRUE(vl.empty());
  EXPECT_TRUE(tree::unflatten<std::vector<Array>>(vd, vl).empty());
  EXPECT_FALSE(td == vd);
  auto mapped = tree::map([](const Array& x) { return x; }, std::vector<double>{});
  EXPECT_TRUE(mapped.empty());
}

TEST(Tree, UnflattenWrongLeafCount) {
  tree::TreeDef def = tree::structure(make_mlp(0));
  std::vector<Array> three{val(1), val(2), val(3)};
  EXPECT_JX_ERROR(tree::unflatten<Mlp>(def, three), "[tree::unflatten]",
                  "PyTreeDef(Mlp(w1=*, b1=*, w2=*, b2=*)) has 4 leaves but 3 were given");
}

TEST(Tree, UnflattenMismatchedStructure) {
  std::vector<Array> two{val(1), val(2)};
  tree::TreeDef pair_def = tree::structure(std::make_pair(val(1), val(2)));
  tree::TreeDef vec_def = tree::structure(two);
  EXPECT_JX_ERROR(tree::unflatten<std::vector<Array>>(pair_def, two), "[tree::unflatten]",
                  "the type expects [*, ...]", "PyTreeDef((*, *))");
  EXPECT_JX_ERROR((tree::unflatten<std::tuple<Array, Array>>(vec_def, two)), "[tree::unflatten]",
                  "the type expects (*, *)", "PyTreeDef([*, *])");
  EXPECT_JX_ERROR((tree::unflatten<std::array<Array, 3>>(vec_def, two)),
                  "[tree::unflatten]", "the type expects [* x 3]", "has [*, *] there");
  // A struct of the right leaf count but the wrong type name.
  std::vector<Array> four{val(1), val(2), val(3), val(4)};
  tree::TreeDef tuple4 = tree::structure(std::make_tuple(val(1), val(2), val(3), val(4)));
  EXPECT_JX_ERROR(tree::unflatten<Mlp>(tuple4, four), "[tree::unflatten]",
                  "the type expects Mlp(w1=*, b1=*, w2=*, b2=*)", "PyTreeDef((*, *, *, *))");
  // A leaf where the def has a node, and a node where the def has a leaf.
  tree::TreeDef nested = tree::structure(std::make_tuple(std::make_tuple(val(1)), val(2)));
  EXPECT_JX_ERROR((tree::unflatten<std::tuple<Array, std::tuple<Array>>>(nested, two)), "[tree::unflatten]",
                  "the type expects a leaf *", "PyTreeDef(((*,), *))", "has (*,) there");
  EXPECT_JX_ERROR((tree::unflatten<std::map<std::string, std::optional<Array>>>(
                      tree::structure(std::map<std::string, Array>{{"a", val(1)}}), std::vector<Array>{val(1)})),
                  "[tree::unflatten]", "the type expects Optional[*]", "PyTreeDef({'a': *})");
}

TEST(Tree, UnflattenScalarFromNonScalarLeafRaises) {
  // item() needs a size-1 array: unflattening a double from a vector leaf raises jx::Error.
  EXPECT_JX_ERROR(tree::unflatten<double>(tree::TreeDef{}, std::vector<Array>{val(1, {3})}), "[item]", "size 1");
}

TEST(Tree, MapOneTree) {
  std::map<std::string, Array> m{{"a", val(1)}, {"b", val(2, {2, 2})}};
  auto doubled = tree::map([](const Array& x) { return x * 2.0; }, m);
  EXPECT_ALLCLOSE(doubled.at("a"), val(2));
  EXPECT_ALLCLOSE(doubled.at("b"), val(4, {2, 2}));
  // Scalar leaves become Arrays in the result type.
  std::tuple<float, std::vector<double>> t{1.5f, {2.0, 3.0}};
  std::tuple<Array, std::vector<Array>> r = tree::map([](const Array& x) { return x + 1.0; }, t);
  EXPECT_EQ(std::get<0>(r).item<float>(), 2.5f);
  EXPECT_EQ(std::get<1>(r)[1].item<double>(), 4.0);
  static_assert(std::is_same_v<tree::array_tree_t<std::tuple<float, Mlp>>, std::tuple<Array, Mlp>>);
  static_assert(std::is_same_v<tree::array_tree_t<std::vector<double>>, std::vector<Array>>);
  static_assert(std::is_same_v<tree::array_tree_t<std::map<std::string, std::optional<int>>>,
                               std::map<std::string, std::optional<Array>>>);
  static_assert(std::is_same_v<tree::array_tree_t<std::array<bool, 2>>, std::array<Array, 2>>);
  static_assert(std::is_same_v<tree::array_tree_t<Layer>, Layer>);
  // f may return something convertible to Array.
  auto sizes = tree::map([](const Array& x) { return static_cast<double>(x.size()); }, m);
  EXPECT_EQ(sizes.at("b").item<double>(), 4.0);
}

TEST(Tree, MapTwoTreesSgdStepOnRegisteredStruct) {
  Mlp params = make_mlp(0);  // leaves 1, 2, 3, 4
  Mlp grads{val(10), val(20), val(30), val(40)};
  params = tree::map([](const Array& p, const Array& g) { return p - 0.1 * g; }, params, grads);
  // 1 - 0.1*10 = 0, 2 - 2 = 0, ...: every leaf is zero, dtype kept (weak scalar 0.1).
  for (const Array& leaf : tree::leaves(params)) {
    EXPECT_EQ(leaf.dtype(), jx::float32);
    EXPECT_ALLCLOSE(leaf, jnp::zeros({2}));
  }
  // Three trees, mixed scalar and Array leaves of the same structure.
  auto sum = tree::map([](const Array& a, const Array& b, const Array& c) { return a + b + c; },
                       std::make_pair(val(1), 2.0), std::make_pair(val(3), Array(4.0)), std::make_pair(5.0, 6.0));
  EXPECT_ALLCLOSE(sum.first, val(9));
  EXPECT_EQ(sum.second.item<double>(), 12.0);
}

TEST(Tree, MapStructureMismatch) {
  Mlp params = make_mlp(0);
  std::vector<Array> grads{val(1), val(2), val(3), val(4)};
  EXPECT_JX_ERROR(tree::map([](const Array& p, const Array& g) { return p - g; }, params, grads), "[tree::map]",
                  "tree 1 has structure PyTreeDef([*, *, *, *])",
                  "first tree has PyTreeDef(Mlp(w1=*, b1=*, w2=*, b2=*))");
  std::map<std::string, Array> a{{"x", val(1)}}, b{{"y", val(1)}};
  EXPECT_JX_ERROR(tree::map([](const Array& p, const Array& q, const Array& r) { return p + q + r; }, a, a, b),
                  "[tree::map]", "tree 2 has structure PyTreeDef({'y': *})", "PyTreeDef({'x': *})");
}
