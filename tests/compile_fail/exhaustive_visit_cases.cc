// Compiled by tests/compile_fail/CMakeLists.txt once per case, -fsyntax-only:
// VisitEvery (common/exhaustive_visit.h) must refuse a visit that misses an
// alternative or hides it behind a catch-all, and take one that names each.
#include "common/exhaustive_visit.h"

#include <variant>

namespace {

struct StartWorkers {};
struct StopWorkers {};
struct ANewAction {};  // the action added without a handler
using Action = std::variant<StartWorkers, StopWorkers, ANewAction>;

[[maybe_unused]] int Execute(const Action& action) {
#if defined(CASE_EVERY_ALTERNATIVE_HANDLED)
  return muster::VisitEvery(
      action, [](const StartWorkers&) { return 1; }, [](const StopWorkers&) { return 2; },
      [](const ANewAction&) { return 3; });
#elif defined(CASE_ONE_ALTERNATIVE_WITHOUT_HANDLER)
  return muster::VisitEvery(
      action, [](const StartWorkers&) { return 1; }, [](const StopWorkers&) { return 2; });
#elif defined(CASE_A_CATCH_ALL_HANDLER)
  return muster::VisitEvery(
      action, [](const StartWorkers&) { return 1; }, [](const auto&) { return 0; });
#else
#error "no CASE_ given"
#endif
}

}  // namespace
