#include "transforms/effects.h"

#include <memory>
#include <mutex>
#include <unordered_map>

namespace jx::detail {
namespace {

// Sub-program -> whether it has effects. Keyed by address; the weak pointer tells a
// live entry from one whose program died and whose address was reused.
struct Memo {
  std::mutex mu;
  std::unordered_map<const ClosedJaxpr*, std::pair<std::weak_ptr<const ClosedJaxpr>, bool>> known;
};
Memo& memo() {
  static auto* m = new Memo;
  return *m;
}

bool body_has_effects(const JaxprRef& body) {
  if (!body) return false;
  Memo& m = memo();
  {
    std::lock_guard lock(m.mu);
    auto it = m.known.find(body.get());
    if (it != m.known.end() && !it->second.first.expired() && it->second.first.lock() == body)
      return it->second.second;
  }
  const bool effects = has_effects(body->jaxpr);
  std::lock_guard lock(m.mu);
  if (m.known.size() > 4096) {  // drop dead entries now and then
    for (auto it = m.known.begin(); it != m.known.end();)
      it = it->second.first.expired() ? m.known.erase(it) : std::next(it);
  }
  m.known[body.get()] = {body, effects};
  return effects;
}

}  // namespace

bool has_effects(const Equation& e) {
  if (!e.primitive) return false;
  if (e.primitive->has(kSideEffects)) return true;
  if (!e.primitive->has(kCallsSubprogram)) return false;
  for (const auto& [name, value] : e.params.items())
    if (const auto* body = std::get_if<JaxprRef>(&value); body && body_has_effects(*body)) return true;
  return false;
}

bool has_effects(const Jaxpr& j) {
  for (const Equation& e : j.eqns)
    if (has_effects(e)) return true;
  return false;
}

}  // namespace jx::detail
