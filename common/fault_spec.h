// Fault plans: what `muster --inject SPEC` (or MUSTER_INJECT) asks to break,
// when, and where. One text format, parsed here, is read by the agent, the
// worker runtime and musterd; each carries out the faults that are its own
// (FaultActorOf) and ignores the rest.
//
// A plan is specs separated by ';'. A spec is a kind, an optional argument
// after ':', then comma-separated key=value pairs:
//
//   kill-worker[:SIGNAL],rank=R,TRIGGER     signal a worker (default SIGKILL)
//   hang-worker,rank=R,TRIGGER              SIGSTOP a worker
//   exit-worker[:CODE],rank=R,step=N        the worker exits with CODE (default 1)
//   kill-agent[:SIGNAL][,node=N],TRIGGER    the agent signals itself (default SIGKILL)
//   drop-heartbeats:DURATION[,node=N],TRIGGER
//                                           the agent neither sends to nor hears
//                                           from the daemon for DURATION
//   delay-heartbeats:DELAY,for=DURATION[,node=N],TRIGGER
//                                           each heartbeat leaves DELAY late
//   crash-daemon,after=T                    the daemon's process is SIGKILLed
//   corrupt-checkpoint,step=N               the first checkpoint written at a
//                                           step >= N is damaged on disk
//
//   TRIGGER  after=T (time since the process started) or step=N (a worker
//            reported step N: the target worker, or any of the agent's own)
//   R, N     a number, or "any": drawn from the seed among the ranks or
//            nodes of the generation running when the trigger fires
//   T        a duration: 250ms, 5s, 1.5m; a bare number is seconds
//   ranges   after=5s..20s and step=10..30 draw one value from the seed
//
// Agent faults without node= apply to every agent given the plan. Each spec
// fires at most once per process that carries it out (the agent tells its
// workers which worker faults already fired). The same plan and seed give
// the same faults: every draw is SplitMix64 of the seed and the spec's index.
//
// Thread-safety: pure functions; a FaultPlan is a value.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/env_lookup.h"
#include "common/status.h"

namespace muster {

enum class FaultKind {
  kKillWorker,
  kHangWorker,
  kExitWorker,
  kKillAgent,
  kDropHeartbeats,
  kDelayHeartbeats,
  kCrashDaemon,
  kCorruptCheckpoint,
  kSlowWorker,
};

// The process that carries a fault out.
enum class FaultActor { kAgent, kWorker, kDaemon };

FaultActor FaultActorOf(FaultKind kind);
std::string_view FaultKindName(FaultKind kind);

struct FaultSpec {
  int index = 0;     // position in the plan; names the spec in logs
  std::string text;  // as written, trimmed
  FaultKind kind = FaultKind::kKillWorker;
  int signal = 0;     // kill-worker, kill-agent
  int exit_code = 1;  // exit-worker
  // drop-heartbeats: how long; delay-heartbeats: the delay of each heartbeat.
  std::chrono::milliseconds duration{0};
  std::chrono::milliseconds window{0};  // delay-heartbeats: for how long (for=)
  double factor = 0;                    // slow: how many times slower (factor=)

  // The trigger, already drawn from its range: exactly one is set.
  std::optional<std::chrono::milliseconds> after;
  std::optional<uint64_t> step;

  // The target. Worker faults name a rank, agent faults may name a node;
  // `any` is resolved by TargetAmong() once the world is known.
  std::optional<int> rank;
  std::optional<int> node;
  bool any_rank = false;
  bool any_node = false;
  uint64_t draw = 0;  // the random number "any" is resolved with

  // The rank (or node) among `count` that "any" picks; the given one
  // otherwise. REQUIRES: count >= 1.
  int RankAmong(int count) const;
  int NodeAmong(int count) const;

  bool operator==(const FaultSpec&) const = default;
};

struct FaultPlan {
  uint64_t seed = 0;
  std::vector<FaultSpec> faults;
  std::string text;  // every spec, ';'-separated, as parsed: what workers are given
};

// Parses `text`. Errors: InvalidArgument naming the offending spec and what
// is wrong with it ("'kill-wrker,step=3': unknown fault kind 'kill-wrker'
// (known: ...)"). An empty plan is an error too.
Result<FaultPlan> ParseFaultPlan(std::string_view text, uint64_t seed);

// The signal for "SIGKILL", "KILL" or "9"; nullopt for anything else.
std::optional<int> ParseSignal(std::string_view text);

// The environment variables that carry a plan to workers and musterd.
inline constexpr const char* kInjectEnv = "MUSTER_INJECT";
inline constexpr const char* kInjectSeedEnv = "MUSTER_INJECT_SEED";

// The plan a program runs with: `text` (given as `origin`, e.g. "--inject"),
// or MUSTER_INJECT when `text` is empty; seeded by `seed`, else
// MUSTER_INJECT_SEED, else 0 (an empty `env` is an empty environment).
// nullopt when neither names a fault. Errors:
// InvalidArgument that starts with where the bad value came from
// ("MUSTER_INJECT_SEED: 'x' must be a non-negative integer").
Result<std::optional<FaultPlan>> ResolveFaultPlan(std::string_view text, std::string_view origin,
                                                  std::optional<uint64_t> seed,
                                                  const EnvLookup& env);
// Indices of worker faults that already fired on this node, ','-separated.
inline constexpr const char* kInjectFiredEnv = "MUSTER_INJECT_FIRED";

}  // namespace muster
