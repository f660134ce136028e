#include "jx/primitive.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <sstream>

#include "backend/backend.h"
#include "core/array_internal.h"
#include "core/config_internal.h"
#include "core/eager_hook.h"
#include "jx/jaxpr.h"
#include "core/hot_tls.h"

namespace jx {

// ---- Params ----

Params::Params(std::initializer_list<std::pair<std::string, ParamValue>> items) {
  for (const auto& [k, v] : items) set(k, v);
}

Params& Params::set(std::string name, ParamValue value) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& kv, const std::string& n) { return kv.first < n; });
  if (it != items_.end() && it->first == name) it->second = std::move(value);
  else items_.insert(it, {std::move(name), std::move(value)});
  return *this;
}

bool Params::has(std::string_view name) const {
  for (const auto& kv : items_)
    if (kv.first == name) return true;
  return false;
}

const ParamValue& Params::get(std::string_view name) const {
  for (const auto& kv : items_)
    if (kv.first == name) return kv.second;
  detail::fail("params", "missing parameter '", name, "'");
}

namespace {
template <class T>
const T& get_as(const Params& p, std::string_view name, const char* what) {
  const ParamValue& v = p.get(name);
  if (auto* t = std::get_if<T>(&v)) return *t;
  detail::fail("params", "parameter '", name, "' is not ", what);
}
}  // namespace

int64_t Params::get_int(std::string_view name) const { return get_as<int64_t>(*this, name, "an integer"); }
double Params::get_double(std::string_view name) const { return get_as<double>(*this, name, "a float"); }
bool Params::get_bool(std::string_view name) const { return get_as<bool>(*this, name, "a bool"); }
DType Params::get_dtype(std::string_view name) const { return get_as<DType>(*this, name, "a dtype"); }
const std::vector<int64_t>& Params::get_ints(std::string_view name) const {
  return get_as<std::vector<int64_t>>(*this, name, "an integer tuple");
}
const std::string& Params::get_string(std::string_view name) const {
  return get_as<std::string>(*this, name, "a string");
}
const JaxprRef& Params::get_jaxpr(std::string_view name) const {
  return get_as<JaxprRef>(*this, name, "a jaxpr");
}

size_t Params::hash() const {
  size_t h = 0x9e3779b97f4a7c15ull;
  auto mix = [&](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  for (const auto& [k, v] : items_) {
    mix(std::hash<std::string>{}(k));
    mix(v.index());
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            for (int64_t e : x) mix(std::hash<int64_t>{}(e));
          } else if constexpr (std::is_same_v<T, DType>) {
            mix(static_cast<size_t>(x));
          } else if constexpr (std::is_same_v<T, JaxprRef>) {
            mix(std::hash<const void*>{}(x.get()));
          } else {
            mix(std::hash<T>{}(x));
          }
        },
        v);
  }
  return h;
}

std::string Params::str() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [k, v] : items_) {
    os << (first ? "" : " ") << k << "=";
    first = false;
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) os << (x ? "True" : "False");
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            os << "(";
            for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
            if (x.size() == 1) os << ",";
            os << ")";
          } else if constexpr (std::is_same_v<T, std::string>) os << "'" << x << "'";
          else if constexpr (std::is_same_v<T, JaxprRef>) os << (x ? detail::jaxpr_param_str(*x) : std::string("None"));
          else if constexpr (std::is_same_v<T, double>) {
            std::ostringstream d;
            d.precision(17);
            d << x;
            std::string s = d.str();
            if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
            os << s;
          } else os << x;
        },
        v);
  }
  return os.str();
}

// ---- registry ----

namespace {
std::map<std::string, const Primitive*, std::less<>>& registry() {
  static std::map<std::string, const Primitive*, std::less<>> r;
  return r;
}
}  // namespace

Primitive::Primitive(std::string name, Rules rules) : name_(std::move(name)), rules_(std::move(rules)) {
  auto [it, inserted] = registry().emplace(name_, this);
  if (!inserted) throw Error(detail::cat("[registry] primitive '", name_, "' defined twice"));
}

const Primitive* find_primitive(std::string_view name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second;
}

std::vector<const Primitive*> all_primitives() {
  std::vector<const Primitive*> out;
  for (const auto& kv : registry()) out.push_back(kv.second);
  return out;
}

std::vector<Aval> Primitive::abstract_eval(std::span<const Aval> in, const Params& params) const {
  if (!rules_.abstract_eval) detail::fail(name_, "has no shape rule");
  std::vector<Aval> out = rules_.abstract_eval(in, params);
  // Every aval jx makes passes here (eager, tracing, jit, the verifier), so no shape rule
  // can produce a negative dimension or a shape whose element or byte count wraps.
  for (const Aval& a : out) detail::checked_nbytes(a.shape, a.dtype, name_);
  return out;
}

namespace {

// The operands' avals of the eager evaluations in progress on this thread, a buffer per
// nesting level (an impl may evaluate primitives of its own), kept between calls:
// copying an aval over one a buffer held reuses its shape's storage. Of the 11
// allocations a 1-element add made, 3 were these. The deque (levels stay put as it
// grows) lives on the heap so that only a pointer and a depth take static TLS.
struct OperandAvalLevels {
  std::deque<std::vector<Aval>> levels;
  size_t depth = 0;
};
JX_INITIAL_EXEC_TLS thread_local OperandAvalLevels* t_operand_avals = nullptr;
struct OperandAvalsOwner {  // frees them at thread exit
  std::unique_ptr<OperandAvalLevels> levels;
  ~OperandAvalsOwner() { t_operand_avals = nullptr; }
};
thread_local OperandAvalsOwner t_operand_avals_owner;

class OperandAvals {
 public:
  OperandAvals() {
    OperandAvalLevels* s = t_operand_avals;
    if (!s) {
      t_operand_avals_owner.levels = std::make_unique<OperandAvalLevels>();
      s = t_operand_avals = t_operand_avals_owner.levels.get();
    }
    if (s->levels.size() <= s->depth) s->levels.emplace_back();
    avals_ = &s->levels[s->depth++];
  }
  ~OperandAvals() { --t_operand_avals->depth; }
  OperandAvals(const OperandAvals&) = delete;
  OperandAvals& operator=(const OperandAvals&) = delete;
  std::span<const Aval> of(std::span<const Array> in, std::string_view op) {
    avals_->resize(in.size());
    for (size_t i = 0; i < in.size(); ++i) (*avals_)[i] = detail::concrete_impl(in[i], op).aval;
    return *avals_;
  }

 private:
  std::vector<Aval>* avals_;
};

}  // namespace

std::vector<Array> Primitive::eval(std::span<const Array> in, const Params& params) const {
  OperandAvals operands;
  std::vector<Aval> out = abstract_eval(operands.of(in, name_), params);
  // Results live on the operands' device (committed operands must share one, as in JAX);
  // operations without operands use the thread's current device.
  const detail::Placement placement = detail::placement_of(name_, in);
  std::vector<Array> results;
  if (!placement.device) {
    results = run_impl(in, params, out);
  } else {
    detail::DeviceScope scope(placement);
    results = run_impl(in, params, out);
  }
  if (detail::NanCheck check = detail::active_nan_check()) check(*this, in, results);
  return results;
}

std::vector<Array> Primitive::run_impl(std::span<const Array> in, const Params& params,
                                       std::span<const Aval> out) const {
  const ImplRule& impl = detail::impl_for(*detail::current_device(), *this);
  detail::AllocScope scope(name_);
  // A large result keeps its page offset out of the operands' aliasing reach.
  std::optional<detail::OperandReadsScope> reads;
  if (detail::any_staggered(out)) reads.emplace(in);
  try {
    return impl(in, params, out);
  } catch (const std::bad_alloc&) {
    // A kernel's own workspace (a std::vector, a BLAS buffer) ran out of memory.
    std::string shapes;
    for (const Aval& a : out) shapes += (shapes.empty() ? "" : ", ") + a.str();
    detail::fail(name_, "out of memory computing a result of ", shapes);
  }
}

// ---- traces and bind ----

namespace detail {
namespace {
JX_INITIAL_EXEC_TLS thread_local Trace* t_current_trace = nullptr;
}

Trace::Trace()
    : parent_(t_current_trace),
      level_(t_current_trace ? t_current_trace->level() + 1 : 1),
      state_(std::make_shared<TraceState>()) {}
Trace::~Trace() { state_->alive = false; }

Trace* current_trace() { return t_current_trace; }
TraceScope::TraceScope(Trace* trace) : saved_(t_current_trace) { t_current_trace = trace; }
TraceScope::~TraceScope() { t_current_trace = saved_; }
int trace_stack_depth() { return t_current_trace ? t_current_trace->level() : 0; }

}  // namespace detail

namespace detail {
namespace {
// Atomic: the configuration installs it while other threads may be binding.
std::atomic<EagerHook> g_eager_hook{nullptr};
JX_INITIAL_EXEC_TLS thread_local bool t_in_eager_hook = false;
}  // namespace
void set_eager_hook(EagerHook hook) { g_eager_hook.store(hook, std::memory_order_release); }
}  // namespace detail

std::vector<Array> bind(const Primitive& p, std::span<const Array> in, const Params& params) {
  if (detail::Trace* t = detail::t_current_trace) return t->process(p, in, params);
  if (detail::EagerHook hook = detail::g_eager_hook.load(std::memory_order_acquire); hook && !detail::t_in_eager_hook) {
    detail::t_in_eager_hook = true;
    struct Reset {
      ~Reset() { detail::t_in_eager_hook = false; }
    } reset;
    return hook(p, in, params);
  }
  return p.eval(in, params);
}

Array bind1(const Primitive& p, std::initializer_list<Array> in, const Params& params) {
  std::vector<Array> out = bind(p, std::span<const Array>(in.begin(), in.size()), params);
  if (out.size() != 1)
    detail::fail(p.name(), "returns ", out.size(), " outputs where one was expected");
  return std::move(out[0]);
}

}  // namespace jx
