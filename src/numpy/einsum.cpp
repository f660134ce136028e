// einsum: parse the subscripts, take diagonals and sum out private labels per operand,
// then contract pairwise left to right with lax.dot_general (JAX's lowering, without
// opt_einsum's path search).
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "jx/numpy/products.h"
#include "numpy/core_util.h"

namespace jx::numpy {
namespace {

using detail::fail;
using detail::shape_str;

constexpr std::string_view kOp = "einsum";
// Letters are labelled by their character code (so implicit output sorts as NumPy);
// the dims an ellipsis covers get kEllipsisLabel + their right-aligned position.
constexpr int kEllipsisLabel = 256;
constexpr int kEllipsisMarker = -1;

using Labels = std::vector<int>;

std::string label_name(int label) {
  return label >= kEllipsisLabel ? "..." : std::string(1, static_cast<char>(label));
}

Labels parse_term(std::string_view term, std::string_view subscripts) {
  Labels out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size();) {
    if (term.substr(i, 3) == "...") {
      if (ellipsis) fail(kOp, "an ellipsis may appear only once per operand, in '", subscripts, "'");
      ellipsis = true;
      out.push_back(kEllipsisMarker);
      i += 3;
      continue;
    }
    char c = term[i++];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))  // ASCII only, whatever the locale
      fail(kOp, "invalid subscript '", c, "' in '", subscripts, "': subscripts must be letters");
    out.push_back(c);
  }
  return out;
}

// Replaces the ellipsis marker by the labels of the `count` dims it covers.
Labels expand_ellipsis(const Labels& term, int64_t count, int64_t total) {
  Labels out;
  for (int l : term) {
    if (l != kEllipsisMarker) {
      out.push_back(l);
      continue;
    }
    for (int64_t j = 0; j < count; ++j) out.push_back(kEllipsisLabel + static_cast<int>(total - count + j));
  }
  return out;
}

bool contains(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

// Sums x over the dims whose labels are not in `keep`.
void sum_out(Array& x, Labels& labels, const std::set<int>& keep) {
  std::vector<int64_t> axes;
  Labels rest;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (keep.count(labels[i])) rest.push_back(labels[i]);
    else axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.empty()) return;
  x = lax::reduce_sum(x, axes);
  labels = rest;
}

// Repeated labels in one operand select its diagonal: mask off-diagonal elements and sum
// over all but the first occurrence (JAX does the same).
void take_diagonals(Array& x, Labels& labels) {
  for (size_t i = 0; i < labels.size(); ++i) {
    std::vector<int64_t> dups;
    for (size_t j = i + 1; j < labels.size(); ++j)
      if (labels[j] == labels[i]) dups.push_back(static_cast<int64_t>(j));
    if (dups.empty()) continue;
    Array first = lax::broadcasted_iota(DType::Int32, x.shape(), static_cast<int>(i));
    Array mask;
    for (int64_t j : dups) {
      Array eq = lax::eq(first, lax::broadcasted_iota(DType::Int32, x.shape(), static_cast<int>(j)));
      mask = mask.valid() ? lax::bitwise_and(mask, eq) : eq;
    }
    x = lax::reduce_sum(lax::select_n(mask, {util::full_like_value(x, 0), x}), dups);
    for (auto it = dups.rbegin(); it != dups.rend(); ++it) labels.erase(labels.begin() + *it);
  }
}

}  // namespace

Array einsum(std::string_view subscripts, const std::vector<Array>& operands) {
  if (operands.empty()) fail(kOp, "at least one operand is required");
  std::string subs;
  for (char c : subscripts)
    if (!std::isspace(static_cast<unsigned char>(c))) subs.push_back(c);
  size_t arrow = subs.find("->");
  if (arrow != std::string::npos && subs.find("->", arrow + 2) != std::string::npos)
    fail(kOp, "subscripts '", subscripts, "' contain more than one '->'");
  std::string_view lhs = std::string_view(subs).substr(0, arrow);
  std::vector<Labels> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(lhs.substr(start, comma == std::string_view::npos ? lhs.npos : comma - start), subscripts));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    fail(kOp, "subscripts '", subscripts, "' name ", terms.size(), " operand(s) but ", operands.size(), " were given");

  // Ellipsis widths, then every operand's full label list.
  const size_t n_ops = operands.size();
  std::vector<int64_t> ell(n_ops, 0);
  int64_t ell_total = 0;
  for (size_t k = 0; k < n_ops; ++k) {
    const Labels& t = terms[k];
    bool has_ell = contains(t, kEllipsisMarker);
    int64_t named = static_cast<int64_t>(t.size()) - (has_ell ? 1 : 0), nd = operands[k].ndim();
    if (has_ell ? named > nd : named != nd)
      fail(kOp, "operand ", k, " has shape ", shape_str(operands[k].shape()), " (", nd, " dimensions) but its subscripts name ",
           named, has_ell ? "" : "; use '...' to broadcast the other dimensions");
    ell[k] = has_ell ? nd - named : 0;
    ell_total = std::max(ell_total, ell[k]);
  }
  std::vector<Labels> labels(n_ops);
  std::map<int, int64_t> sizes;  // broadcast size of each label
  std::map<int, int> occurrences;
  for (size_t k = 0; k < n_ops; ++k) {
    labels[k] = expand_ellipsis(terms[k], ell[k], ell_total);
    std::map<int, int64_t> own;
    for (size_t d = 0; d < labels[k].size(); ++d) {
      int l = labels[k][d];
      int64_t s = operands[k].shape()[d];
      ++occurrences[l];
      if (auto it = own.find(l); it != own.end() && it->second != s)
        fail(kOp, "dimensions in operand ", k, " for repeated subscript '", label_name(l), "' don't match (",
             it->second, " != ", s, ")");
      own[l] = s;
      auto [it, fresh] = sizes.emplace(l, s);
      if (fresh || it->second == s || s == 1) continue;
      if (it->second != 1)
        fail(kOp, "size of label '", label_name(l), "' for operand ", k, " (", s, ") does not match previous terms (",
             it->second, ")");
      it->second = s;
    }
  }

  Labels out;
  if (arrow != std::string::npos) {
    Labels t = parse_term(std::string_view(subs).substr(arrow + 2), subscripts);
    if (!contains(t, kEllipsisMarker) && ell_total > 0)
      fail(kOp, "output subscripts of '", subscripts, "' have no '...' for the ", ell_total,
           " dimension(s) the operands' ellipses cover");
    out = expand_ellipsis(t, ell_total, ell_total);
    for (size_t i = 0; i < out.size(); ++i) {
      if (!sizes.count(out[i]))
        fail(kOp, "output subscript '", label_name(out[i]), "' of '", subscripts, "' does not appear in the inputs");
      if (std::count(out.begin(), out.end(), out[i]) > 1)
        fail(kOp, "output subscript '", label_name(out[i]), "' appears more than once in '", subscripts, "'");
    }
  } else {  // implicit: broadcast dims, then labels seen once, in character order
    for (int64_t j = 0; j < ell_total; ++j) out.push_back(kEllipsisLabel + static_cast<int>(j));
    for (auto [l, n] : occurrences)
      if (l < kEllipsisLabel && n == 1) out.push_back(l);
  }

  std::vector<Array> ops = promote_dtypes(operands);
  // Per operand: diagonals, broadcast (size-1) dims, then labels no one else needs.
  for (size_t k = 0; k < n_ops; ++k) {
    take_diagonals(ops[k], labels[k]);
    std::vector<int64_t> unit;
    Labels kept;
    for (size_t d = 0; d < labels[k].size(); ++d) {
      if (ops[k].shape()[d] == 1 && sizes[labels[k][d]] != 1) unit.push_back(static_cast<int64_t>(d));
      else kept.push_back(labels[k][d]);
    }
    if (!unit.empty()) {
      ops[k] = lax::squeeze(ops[k], unit);
      labels[k] = kept;
    }
    std::set<int> keep(out.begin(), out.end());
    for (size_t j = 0; j < n_ops; ++j)
      if (j != k) keep.insert(labels[j].begin(), labels[j].end());
    sum_out(ops[k], labels[k], keep);
  }

  Array acc = ops[0];
  Labels acc_labels = labels[0];
  for (size_t k = 1; k < n_ops; ++k) {
    std::set<int> later(out.begin(), out.end());
    for (size_t j = k + 1; j < n_ops; ++j) later.insert(labels[j].begin(), labels[j].end());
    Array rhs = ops[k];
    Labels rhs_labels = labels[k];
    std::set<int> keep_acc = later, keep_rhs = later;
    keep_acc.insert(rhs_labels.begin(), rhs_labels.end());
    keep_rhs.insert(acc_labels.begin(), acc_labels.end());
    sum_out(acc, acc_labels, keep_acc);
    sum_out(rhs, rhs_labels, keep_rhs);
    lax::DotDimensionNumbers dn;
    Labels batch, acc_free, rhs_free;
    for (size_t i = 0; i < acc_labels.size(); ++i) {
      int l = acc_labels[i];
      auto pos = std::find(rhs_labels.begin(), rhs_labels.end(), l);
      if (pos == rhs_labels.end()) {
        acc_free.push_back(l);
        continue;
      }
      int64_t j = pos - rhs_labels.begin();
      if (later.count(l)) {
        dn.lhs_batch.push_back(static_cast<int64_t>(i));
        dn.rhs_batch.push_back(j);
        batch.push_back(l);
      } else {
        dn.lhs_contracting.push_back(static_cast<int64_t>(i));
        dn.rhs_contracting.push_back(j);
      }
    }
    for (int l : rhs_labels)
      if (!contains(acc_labels, l)) rhs_free.push_back(l);
    acc = lax::dot_general(acc, rhs, dn);
    acc_labels = batch;
    acc_labels.insert(acc_labels.end(), acc_free.begin(), acc_free.end());
    acc_labels.insert(acc_labels.end(), rhs_free.begin(), rhs_free.end());
  }
  sum_out(acc, acc_labels, std::set<int>(out.begin(), out.end()));
  std::vector<int64_t> perm;
  for (int l : out) perm.push_back(std::find(acc_labels.begin(), acc_labels.end(), l) - acc_labels.begin());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  return identity ? acc : lax::transpose(acc, perm);
}

}  // namespace jx::numpy
