// The collectives' checksum test, shared by the in-process suite (collective_errors_test)
// and the one over MPI ranks (mpi/mpi_test): rounds of every collective over random
// sizes (0 elements up to 4 MB) and dtypes, each member's result compared byte for byte
// with the definition computed from every member's input. The inputs are a function of
// (seed, round, member), so every process regenerates all of them and the plan of
// rounds is the same everywhere without any message. Reductions fold in rank order with
// reduce_into, the fold the transports promise (its arithmetic is checked against jnp by
// pmap_test); what is under test here is the data movement: chunk and block boundaries,
// packing, aliasing and reuse of buffers from one round to the next.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "distributed/communicator.h"
#include "jx/error.h"

namespace jx::testing {

using detail::CollectiveSignature;
using detail::Communicator;
using detail::ReduceOp;

enum class ChecksumOp { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kPermute };
inline constexpr ChecksumOp kChecksumOps[] = {ChecksumOp::kAllReduce, ChecksumOp::kAllGather, ChecksumOp::kReduceScatter,
                                              ChecksumOp::kAllToAll, ChecksumOp::kPermute};

inline uint64_t mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// One round: the op, its dtype, the element count of each member's operand unit (the
// per-member block for the blockwise ops) and, for permute, the pairs.
struct ChecksumRound {
  ChecksumOp op;
  ReduceOp reduce = ReduceOp::kSum;
  DType dtype;
  size_t count = 0;
  std::vector<std::pair<int, int>> pairs;
};

inline ChecksumRound checksum_round(uint64_t seed, int round, int size) {
  static constexpr DType kDtypes[] = {DType::Float32, DType::Float64, DType::Int32,    DType::Int64,
                                      DType::UInt8,   DType::Float16, DType::BFloat16, DType::Complex64};
  uint64_t h = mix(seed * 1000003u + static_cast<uint64_t>(round));
  ChecksumRound r;
  r.op = kChecksumOps[round % 5];
  r.dtype = kDtypes[h % 8];
  h = mix(h);
  if (r.dtype != DType::Complex64) r.reduce = static_cast<ReduceOp>(h % 3);
  h = mix(h);
  // Log-uniform bytes from 1 to 4 MB of the whole operand, one round in 16 empty.
  const size_t w = static_cast<size_t>(itemsize(r.dtype));
  const bool blockwise = r.op == ChecksumOp::kReduceScatter || r.op == ChecksumOp::kAllToAll;
  if (h % 16 != 0) {
    const double bytes = std::exp2(static_cast<double>(mix(h) % 22001) / 1000.0);  // 1 .. 4 Mi
    r.count = std::max<size_t>(1, static_cast<size_t>(bytes) / w / (blockwise ? static_cast<size_t>(size) : 1));
  }
  if (r.op == ChecksumOp::kPermute) {  // a random permutation of a random subset of sources
    std::vector<int> targets(static_cast<size_t>(size));
    std::iota(targets.begin(), targets.end(), 0);
    for (int i = size - 1; i > 0; --i) std::swap(targets[i], targets[mix(h + static_cast<uint64_t>(i)) % (i + 1)]);
    for (int s = 0; s < size; ++s)
      if (mix(h ^ static_cast<uint64_t>(s * 7919)) % 4 != 0) r.pairs.push_back({s, targets[s]});
  }
  return r;
}

inline size_t checksum_input_elements(const ChecksumRound& r, int size) {
  const bool blockwise = r.op == ChecksumOp::kReduceScatter || r.op == ChecksumOp::kAllToAll;
  return r.count * (blockwise ? static_cast<size_t>(size) : 1);
}

// Finite values of the dtype (NaN would compare unequal with itself in max/min).
inline void fill_input(std::vector<char>& buf, DType dtype, uint64_t key) {
  uint64_t s = mix(key) | 1;
  auto next = [&] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
  };
  const size_t bytes = buf.size();
  switch (dtype) {
    case DType::Float32:
    case DType::Complex64:
      for (size_t k = 0; k + 4 <= bytes; k += 4) {
        const float v = static_cast<float>(static_cast<int64_t>(next() % 20001) - 10000) / 64.0f;
        std::memcpy(buf.data() + k, &v, 4);
      }
      break;
    case DType::Float64:
      for (size_t k = 0; k + 8 <= bytes; k += 8) {
        const double v = static_cast<double>(static_cast<int64_t>(next() % 2000001) - 1000000) / 1024.0;
        std::memcpy(buf.data() + k, &v, 8);
      }
      break;
    case DType::Float16:
    case DType::BFloat16:
      for (size_t k = 0; k + 2 <= bytes; k += 2) {
        // A random sign and mantissa with a small exponent: finite, sums stay finite.
        uint16_t v = static_cast<uint16_t>(next());
        v = dtype == DType::Float16 ? static_cast<uint16_t>((v & 0x83ff) | 0x3c00) : static_cast<uint16_t>((v & 0x807f) | 0x3f80);
        std::memcpy(buf.data() + k, &v, 2);
      }
      break;
    default:
      for (size_t k = 0; k < bytes; k += 8) {
        const uint64_t v = next();
        std::memcpy(buf.data() + k, &v, std::min<size_t>(8, bytes - k));
      }
  }
}

// What member `m` must hold after the round, from every member's input.
inline std::vector<char> checksum_expected(const ChecksumRound& r, const std::vector<std::vector<char>>& in, int m) {
  const int n = static_cast<int>(in.size());
  const size_t w = static_cast<size_t>(itemsize(r.dtype)), unit = r.count * w;
  std::vector<char> out;
  auto fold_block = [&](size_t block) {
    std::vector<char> acc(in[0].begin() + static_cast<std::ptrdiff_t>(block * unit),
                          in[0].begin() + static_cast<std::ptrdiff_t>((block + 1) * unit));
    for (int k = 1; k < n; ++k) detail::reduce_into(r.reduce, r.dtype, acc.data(), in[k].data() + block * unit, r.count);
    return acc;
  };
  switch (r.op) {
    case ChecksumOp::kAllReduce: out = fold_block(0); break;
    case ChecksumOp::kReduceScatter: out = fold_block(static_cast<size_t>(m)); break;
    case ChecksumOp::kAllGather:
      for (int k = 0; k < n; ++k) out.insert(out.end(), in[k].begin(), in[k].end());
      break;
    case ChecksumOp::kAllToAll:
      for (int k = 0; k < n; ++k)
        out.insert(out.end(), in[k].begin() + static_cast<std::ptrdiff_t>(m * unit),
                   in[k].begin() + static_cast<std::ptrdiff_t>((m + 1) * unit));
      break;
    case ChecksumOp::kPermute: {
      out.assign(unit, 0);
      for (auto [s, t] : r.pairs)
        if (t == m) out = in[s];
      break;
    }
  }
  return out;
}

inline const char* checksum_op_name(ChecksumOp op) {
  switch (op) {
    case ChecksumOp::kAllReduce: return "psum";
    case ChecksumOp::kAllGather: return "all_gather";
    case ChecksumOp::kReduceScatter: return "psum_scatter";
    case ChecksumOp::kAllToAll: return "all_to_all";
    case ChecksumOp::kPermute: return "ppermute";
  }
  return "?";
}

struct ChecksumReport {
  int rounds = 0;
  size_t bytes = 0;                   // of results checked on this process
  std::vector<std::string> failures;  // "round 17 (psum f32, 1234 elements) on member 2: ..."
};

// Runs `rounds` rounds on this process's members (members[i] is the communicator of
// rank ranks[i] of a group of `size`), one thread each, checking every result. Every
// process of the group runs the same call.
inline ChecksumReport run_checksum(std::vector<std::unique_ptr<Communicator>>& members, int size, int rounds,
                                   uint64_t seed) {
  ChecksumReport report;
  std::vector<std::vector<char>> in(static_cast<size_t>(size)), out(members.size());
  for (int round = 0; round < rounds; ++round) {
    const ChecksumRound r = checksum_round(seed, round, size);
    const size_t w = static_cast<size_t>(itemsize(r.dtype));
    for (int m = 0; m < size; ++m) {
      in[m].assign(checksum_input_elements(r, size) * w, 0);
      fill_input(in[m], r.dtype, seed ^ (static_cast<uint64_t>(round) << 20) ^ static_cast<uint64_t>(m));
    }
    const CollectiveSignature sig{.collective = checksum_op_name(r.op),
                                  .axis = "checksum",
                                  .dtype = r.dtype,
                                  .shape = {static_cast<int64_t>(checksum_input_elements(r, size))}};
    std::vector<std::string> errors(members.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < members.size(); ++i) {
      Communicator& c = *members[i];
      const int m = c.rank();
      const size_t out_bytes =
          r.op == ChecksumOp::kAllGather || r.op == ChecksumOp::kAllToAll ? static_cast<size_t>(size) * r.count * w
                                                                          : r.count * w;
      out[i].assign(out_bytes, static_cast<char>(0x5a));  // stale bytes a missed write would leave
      threads.emplace_back([&, i, m] {
        try {
          const void* src = in[m].data();
          void* dst = out[i].data();
          switch (r.op) {
            case ChecksumOp::kAllReduce: c.all_reduce(sig, r.reduce, src, dst, r.count); break;
            case ChecksumOp::kAllGather: c.all_gather(sig, src, dst, r.count * w); break;
            case ChecksumOp::kReduceScatter: c.reduce_scatter(sig, r.reduce, src, dst, r.count); break;
            case ChecksumOp::kAllToAll: c.all_to_all(sig, src, dst, r.count * w); break;
            case ChecksumOp::kPermute: c.permute(sig, r.pairs, src, dst, r.count * w); break;
          }
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < members.size(); ++i) {
      const int m = members[i]->rank();
      const std::string what = "round " + std::to_string(round) + " (" + checksum_op_name(r.op) + " " +
                               std::string(dtype_name(r.dtype)) + ", " + std::to_string(r.count) +
                               " elements) on member " + std::to_string(m) + ": ";
      if (!errors[i].empty()) {
        report.failures.push_back(what + errors[i]);
        continue;
      }
      const std::vector<char> want = checksum_expected(r, in, m);
      if (want != out[i]) {
        size_t first = 0;
        while (first < want.size() && first < out[i].size() && want[first] == out[i][first]) ++first;
        report.failures.push_back(what + "first wrong byte at " + std::to_string(first) + " of " +
                                  std::to_string(want.size()));
      }
      report.bytes += want.size();
    }
    ++report.rounds;
    if (report.failures.size() > 10) break;
  }
  return report;
}

}  // namespace jx::testing
