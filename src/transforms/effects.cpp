#include "transforms/effects.h"

#include <memory>
#include <mutex>
#include <unordered_map>

namespace jx::detail {
namespace {

enum Marks : uint8_t { kEffects = 1, kCollectives = 2 };

// Sub-program -> its marks. Keyed by address; the weak pointer tells a
// live entry from one whose program died and whose address was reused.
struct Memo {
  std::mutex mu;
  std::unordered_map<const ClosedJaxpr*, std::pair<std::weak_ptr<const ClosedJaxpr>, uint8_t>> known;
  size_t swept_size = 0;  // entries left by the last sweep of dead ones
};
Memo& memo() {
  static auto* m = new Memo;
  return *m;
}

uint8_t marks_of(const Jaxpr& j);

uint8_t body_marks(const JaxprRef& body) {
  if (!body) return 0;
  Memo& m = memo();
  {
    std::lock_guard lock(m.mu);
    auto it = m.known.find(body.get());
    if (it != m.known.end() && !it->second.first.expired() && it->second.first.lock() == body)
      return it->second.second;
  }
  const uint8_t marks = marks_of(body->jaxpr);
  std::lock_guard lock(m.mu);
  // Dead entries are dropped when the map has doubled since the last sweep, so an insert
  // costs amortized O(1) (a sweep at every insert past a fixed size made dce of a program
  // of 6000 live fusions quadratic: half its retrace).
  if (m.known.size() >= 2 * m.swept_size + 4096) {
    for (auto it = m.known.begin(); it != m.known.end();)
      it = it->second.first.expired() ? m.known.erase(it) : std::next(it);
    m.swept_size = m.known.size();
  }
  m.known[body.get()] = {body, marks};
  return marks;
}

uint8_t marks_of(const Equation& e) {
  if (!e.primitive) return 0;
  uint8_t marks = (e.primitive->has(kSideEffects) ? kEffects : 0) | (e.primitive->has(kCollective) ? kCollectives : 0);
  if (!e.primitive->has(kCallsSubprogram)) return marks;
  for (const auto& [name, value] : e.params.items())
    if (const auto* body = std::get_if<JaxprRef>(&value)) marks |= body_marks(*body);
  return marks;
}

uint8_t marks_of(const Jaxpr& j) {
  uint8_t marks = 0;
  for (const Equation& e : j.eqns) marks |= marks_of(e);
  return marks;
}

}  // namespace

bool has_effects(const Equation& e) { return (marks_of(e) & kEffects) != 0; }
bool has_effects(const Jaxpr& j) { return (marks_of(j) & kEffects) != 0; }
bool has_collectives(const Equation& e) { return (marks_of(e) & kCollectives) != 0; }
bool compile_time_evaluable(const Equation& e) { return e.primitive && marks_of(e) == 0; }

}  // namespace jx::detail
