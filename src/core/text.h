// Small text helpers for params and messages encoded as text.
#pragma once

#include <string>
#include <vector>

namespace jx::detail {

// s cut at every `sep` (an empty s gives one empty part).
inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

}  // namespace jx::detail
