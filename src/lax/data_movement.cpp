#include "lax/data_movement.h"

#include <algorithm>

#include "backend/cpu/strided.h"
#include "backend/cpu/thread_pool.h"

namespace jx::lax::movement {
namespace {

// Edge of the square tiles a transposing copy walks, so both sides stay in L1.
constexpr int64_t kTile = 32;

template <class W>
void copy_row(W* dst, int64_t dst_stride, const W* src, int64_t src_stride, int64_t n) {
  if (dst_stride == 1 && src_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(W));
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i * dst_stride] = src[i * src_stride];
}

// The element offsets of outer index `o` of a collapsed loop (dims [0, nd_outer)).
template <size_t K>
std::array<int64_t, K> outer_offsets(const cpu::StridedLoop<K>& loop, int nd_outer, int64_t o) {
  std::array<int64_t, K> off{};
  for (int d = nd_outer - 1; d >= 0; --d) {
    int64_t i = o % loop.shape[d];
    o /= loop.shape[d];
    for (size_t k = 0; k < K; ++k) off[k] += i * loop.strides[k][d];
  }
  return off;
}

// dst[i][j] = src[i][j] where dst is row-major in the last dim and src is row-major in
// the one before: a transpose. Walked in kTile x kTile tiles.
template <class W>
void copy_tiled(const cpu::StridedLoop<2>& loop, W* dst, const W* src) {
  const int nd = loop.ndim();
  const int64_t rows = loop.shape[nd - 2], cols = loop.shape[nd - 1];
  const int64_t d_row = loop.strides[0][nd - 2], s_col = loop.strides[1][nd - 1];
  const int64_t slabs = shape_size(Shape(loop.shape.begin(), loop.shape.end() - 2));
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / (kTile * std::max<int64_t>(cols, 1)));
  cpu::parallel_for(slabs * row_tiles, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      auto off = outer_offsets(loop, nd - 2, t / row_tiles);
      const int64_t r0 = (t % row_tiles) * kTile, r1 = std::min(rows, r0 + kTile);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(cols, c0 + kTile);
        for (int64_t r = r0; r < r1; ++r) {
          W* d = dst + off[0] + r * d_row;
          const W* s = src + off[1] + r;
          for (int64_t c = c0; c < c1; ++c) d[c] = s[c * s_col];
        }
      }
    }
  });
}

}  // namespace

void copy_strided(int64_t width, const Shape& shape, const void* src, const std::vector<int64_t>& src_strides,
                  void* dst, const std::vector<int64_t>& dst_strides) {
  if (shape_size(shape) == 0) return;
  cpu::StridedLoop<2> loop(shape, {&dst_strides, &src_strides});
  const int nd = loop.ndim();
  dispatch_width(width, [&]<class W>() {
    W* d = static_cast<W*>(dst);
    const W* s = static_cast<const W*>(src);
    if (nd >= 2 && loop.strides[0][nd - 1] == 1 && loop.strides[1][nd - 1] != 1 && loop.strides[1][nd - 1] != 0 &&
        loop.strides[1][nd - 2] == 1 && loop.strides[0][nd - 2] != 0) {
      copy_tiled<W>(loop, d, s);
      return;
    }
    const int64_t inner = loop.inner_size();
    const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / inner);
    cpu::parallel_for(loop.outer_size(), grain, [&](int64_t begin, int64_t end) {
      loop.for_rows(begin, end, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
        copy_row<W>(d + off[0], st[0], s + off[1], st[1], n);
      });
    });
  });
}

void fill_contiguous(int64_t width, void* dst, int64_t n, const void* value) {
  dispatch_width(width, [&]<class W>() {
    W v;
    std::memcpy(&v, value, sizeof(W));
    std::fill_n(static_cast<W*>(dst), n, v);
  });
}

void fill_strided(int64_t width, const Shape& shape, void* dst, const std::vector<int64_t>& dst_strides,
                  const void* value) {
  if (shape_size(shape) == 0) return;
  cpu::StridedLoop<1> loop(shape, {&dst_strides});
  dispatch_width(width, [&]<class W>() {
    W v;
    std::memcpy(&v, value, sizeof(W));
    W* d = static_cast<W*>(dst);
    loop.for_rows(0, loop.outer_size(), [&](const std::array<int64_t, 1>& off, int64_t n,
                                            const std::array<int64_t, 1>& st) {
      W* row = d + off[0];
      if (st[0] == 1) std::fill_n(row, n, v);
      else for (int64_t i = 0; i < n; ++i) row[i * st[0]] = v;
    });
  });
}

Array copy_to_fresh(const Array& x, const Aval& aval) {
  Array out = jx::detail::alloc_array(aval);
  copy_strided(x.itemsize(), x.shape(), jx::detail::raw_data(x), jx::detail::strides(x),
               jx::detail::mutable_data<void>(out), jx::detail::strides(out));
  return out;
}

bool reshape_strides(const Shape& old_shape, const std::vector<int64_t>& old_strides, const Shape& new_shape,
                     std::vector<int64_t>& new_strides) {
  new_strides.assign(new_shape.size(), 0);
  if (shape_size(old_shape) == 0) {  // no element is ever read: any strides do
    new_strides = jx::detail::contiguous_strides(new_shape);
    return true;
  }
  // Size-1 dims carry no layout; drop them from the old shape.
  std::vector<int64_t> od, os;
  for (size_t i = 0; i < old_shape.size(); ++i) {
    if (old_shape[i] == 1) continue;
    od.push_back(old_shape[i]);
    os.push_back(old_strides[i]);
  }
  const size_t on = od.size(), nn = new_shape.size();
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  // Match groups of old dims to groups of new dims with equal products; each old group
  // must be contiguous within itself for the new group to be a view of it.
  while (ni < nn && oi < on) {
    int64_t np = new_shape[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= nn) return false;
        np *= new_shape[nj++];
      } else {
        if (oj >= on) return false;
        op *= od[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    new_strides[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) new_strides[k - 1] = new_strides[k] * new_shape[k];
    ni = nj++;
    oi = oj++;
  }
  for (size_t k = ni; k < nn; ++k) new_strides[k] = 1;  // trailing size-1 dims
  return true;
}

int64_t scalar_index(const Array& x) { return x.item<int64_t>(); }

}  // namespace jx::lax::movement
