// Fuzzes the fault-plan parser (common/fault_spec.h): what --inject and
// MUSTER_INJECT hold, read by the agent, the worker runtime and musterd.
//
// Input: the plan text, as is; parsed with two seeds (0 and a fixed other).
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is InvalidArgument with a non-empty, one-line message;
//     ResolveFaultPlan(text, "--inject", seed, empty env) refuses the same
//     plan with "--inject: " before the same message, and accepts the same;
//   - an accepted plan has at least one fault, numbered 0.. in order, each
//     with its trimmed text (no ';'), exactly one trigger (after= at most a
//     day, or step= >= 1), a rank or "any" exactly for the worker faults, and
//     RankAmong/NodeAmong within [0, count) for "any";
//   - plan.text, the form workers are given, parses (same seed) to the same
//     plan, field by field.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/fault_spec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using muster::FaultKind;
using muster::FaultPlan;
using muster::FaultSpec;
using muster::fuzz::Printable;

bool IsWorkerFault(FaultKind kind) {
  return kind == FaultKind::kKillWorker || kind == FaultKind::kHangWorker ||
         kind == FaultKind::kExitWorker;
}

void CheckSpec(const FaultSpec& spec, int index) {
  const std::string where = "spec " + std::to_string(index) + " " + Printable(spec.text);
  FUZZ_CHECK(spec.index == index, where + ": index " + std::to_string(spec.index));
  FUZZ_CHECK(!spec.text.empty() && spec.text.find(';') == std::string::npos &&
                 spec.text.front() != ' ' && spec.text.back() != ' ' && spec.text.front() != '\t' &&
                 spec.text.back() != '\t',
             where + ": text not trimmed or not one spec");
  FUZZ_CHECK(spec.after.has_value() != spec.step.has_value(), where + ": not exactly one trigger");
  if (spec.after) {
    FUZZ_CHECK(spec.after->count() >= 0 && *spec.after <= std::chrono::hours(24),
               where + ": after=" + std::to_string(spec.after->count()) + "ms");
  }
  if (spec.step) FUZZ_CHECK(*spec.step >= 1, where + ": step=0");
  const bool has_rank = spec.rank.has_value() || spec.any_rank;
  FUZZ_CHECK(has_rank == IsWorkerFault(spec.kind), where + ": rank= on the wrong kind");
  FUZZ_CHECK(!(spec.rank && spec.any_rank) && !(spec.node && spec.any_node),
             where + ": a number and 'any' at once");
  for (int count : {1, 3, 1000}) {
    if (spec.any_rank) {
      const int rank = spec.RankAmong(count);
      FUZZ_CHECK(rank >= 0 && rank < count, where + ": RankAmong " + std::to_string(rank));
    }
    if (spec.any_node) {
      const int node = spec.NodeAmong(count);
      FUZZ_CHECK(node >= 0 && node < count, where + ": NodeAmong " + std::to_string(node));
    }
  }
  FUZZ_CHECK(!(spec.kind == FaultKind::kDelayHeartbeats) || spec.window.count() > 0,
             where + ": delay-heartbeats without for=");
  FUZZ_CHECK(spec.exit_code >= 0 && spec.exit_code <= 255, where + ": exit code");
}

void CheckPlan(std::string_view text, uint64_t seed) {
  const auto plan = muster::ParseFaultPlan(text, seed);
  const auto resolved = muster::ResolveFaultPlan(text, "--inject", seed, muster::EnvLookup());
  if (!plan.ok()) {
    const std::string& message = plan.status().message();
    FUZZ_CHECK(plan.status().IsInvalidArgument(), "not InvalidArgument: " + message);
    FUZZ_CHECK(!message.empty() && message.find('\n') == std::string::npos,
               "an empty or multi-line error: " + Printable(message));
    if (!text.empty()) {
      FUZZ_CHECK(!resolved.ok() && resolved.status().message() == "--inject: " + message,
                 "ResolveFaultPlan disagrees on " + Printable(text));
    }
    return;
  }
  FUZZ_CHECK(resolved.ok() && resolved->has_value(),
             "ResolveFaultPlan refuses what ParseFaultPlan takes: " + Printable(text));
  FUZZ_CHECK(!plan->faults.empty(), "a plan without faults");
  for (size_t i = 0; i < plan->faults.size(); ++i) {
    CheckSpec(plan->faults[i], static_cast<int>(i));
  }
  const auto again = muster::ParseFaultPlan(plan->text, seed);
  FUZZ_CHECK(again.ok(),
             "plan.text " + Printable(plan->text) + " does not parse: " + again.status().message());
  FUZZ_CHECK(again->text == plan->text && again->faults.size() == plan->faults.size(),
             "plan.text parses to another plan: " + Printable(plan->text));
  for (size_t i = 0; i < plan->faults.size(); ++i) {
    FUZZ_CHECK(
        again->faults[i] == plan->faults[i],
        "plan.text parses to another spec " + std::to_string(i) + ": " + Printable(plan->text));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckPlan(text, 0);
  CheckPlan(text, 0x9e3779b97f4a7c15ull);
  (void)muster::ParseSignal(text);
  return 0;
}
