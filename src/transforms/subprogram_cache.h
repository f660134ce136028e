// A process-wide memo keyed on a sub-program's identity (and a small discriminator such
// as a mask of nonzero tangents): the transformed bodies of call primitives are made once
// per body, so their identities are stable and the executables compiled for them are
// found again (grad(jit(f)) called twice compiles nothing the second time).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "jx/jaxpr.h"

namespace jx::detail {

template <class V>
class SubprogramCache {
 public:
  // The value for (body, discriminator), made by make() on a miss. The body is held
  // weakly: an entry whose body was freed is recognised (and dropped), never reused for
  // a new body at the same address.
  template <class Make>
  V get(const JaxprRef& body, const std::string& discriminator, Make make) {
    std::lock_guard lock(mu_);  // recursive: making an entry may consult another cache
    auto key = std::make_pair(body.get(), discriminator);
    auto it = map_.find(key);
    if (it != map_.end() && it->second.first.lock() == body) return it->second.second;
    // Sweeping freed entries only when the map doubled keeps misses amortized O(1).
    if (map_.size() >= 2 * swept_size_ + 16) {
      for (auto i = map_.begin(); i != map_.end();) i = i->second.first.expired() ? map_.erase(i) : std::next(i);
      swept_size_ = map_.size();
    }
    V v = make();
    map_[key] = {body, v};
    return v;
  }

 private:
  std::recursive_mutex mu_;
  size_t swept_size_ = 0;
  std::map<std::pair<const ClosedJaxpr*, std::string>, std::pair<std::weak_ptr<const ClosedJaxpr>, V>> map_;
};

// "0110": a mask as a cache discriminator.
inline std::string mask_str(const std::vector<bool>& mask) {
  std::string s;
  s.reserve(mask.size());
  for (bool b : mask) s += b ? '1' : '0';
  return s;
}

}  // namespace jx::detail
