// jx::Error: the one exception type jx raises for bad input.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace jx {

// Raised for every user error: bad shapes, dtypes, axes, files, traced values used
// concretely. The message starts with the operation in brackets: "[reshape] ...".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// Formats a shape the way NumPy does: (), (3,), (3, 4).
std::string shape_str(const std::vector<int64_t>& shape);

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Throws jx::Error with "[op] " followed by the streamed arguments.
template <class... Args>
[[noreturn]] void fail(std::string_view op, const Args&... args) {
  throw Error(cat("[", op, "] ", args...));
}

}  // namespace detail
}  // namespace jx
