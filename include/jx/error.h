// jx::Error: the one exception type jx raises for bad input; jx::InternalError: jx broke
// one of its own invariants (a bug in jx, whatever the input).
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

// Raised when an invariant jx maintains does not hold (a shape rule and its kernel
// disagree, a pass made a cyclic graph): never the caller's fault, so it is not a
// jx::Error, and code that handles bad input does not catch it by accident.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
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

// Throws jx::InternalError with "[op] internal error: " followed by the streamed arguments.
template <class... Args>
[[noreturn]] void internal_fail(std::string_view op, const Args&... args) {
  throw InternalError(cat("[", op, "] internal error: ", args...));
}

}  // namespace detail
}  // namespace jx

// JX_CHECK(cond, op, details...): an invariant of jx itself; raises jx::InternalError
// naming op, the condition and the details when it does not hold (in every build type:
// the checks guard kernels against writing out of bounds).
#define JX_CHECK(cond, op, ...)                                                           \
  do {                                                                                    \
    if (!(cond)) ::jx::detail::internal_fail(op, "check failed: " #cond __VA_OPT__(, ": ", ) __VA_ARGS__); \
  } while (0)
