// Fault plans (--inject): the spec grammar, what is refused and why, and the
// seeded draws that make a plan reproducible.
#include <catch2/catch.hpp>
#include <csignal>

#include "common/fault_spec.h"

namespace muster {
namespace {

using std::chrono::milliseconds;

FaultSpec ParseOne(const std::string& text, uint64_t seed = 0) {
  auto plan = ParseFaultPlan(text, seed);
  INFO("spec: " << text << " -> " << (plan.ok() ? "" : plan.status().message()));
  REQUIRE(plan.ok());
  REQUIRE(plan->faults.size() == 1);
  return plan->faults.front();
}

TEST_CASE("every fault kind parses with its argument, trigger and target") {
  FaultSpec kill = ParseOne("kill-worker:SIGTERM,rank=3,step=20");
  CHECK(kill.kind == FaultKind::kKillWorker);
  CHECK(kill.signal == SIGTERM);
  CHECK(kill.rank == 3);
  CHECK(kill.step == 20u);
  CHECK_FALSE(kill.after.has_value());
  CHECK(ParseOne("kill-worker,rank=0,after=1s").signal == SIGKILL);
  CHECK(ParseOne("kill-worker:9,rank=0,after=1s").signal == SIGKILL);
  CHECK(ParseOne("kill-worker:USR1,rank=0,after=1s").signal == SIGUSR1);

  FaultSpec hang = ParseOne("hang-worker,rank=any,after=250ms");
  CHECK(hang.kind == FaultKind::kHangWorker);
  CHECK(hang.any_rank);
  CHECK(hang.after == milliseconds(250));

  FaultSpec exit = ParseOne("exit-worker:7,rank=1,step=5");
  CHECK(exit.exit_code == 7);
  CHECK(FaultActorOf(exit.kind) == FaultActor::kWorker);
  CHECK(ParseOne("exit-worker,rank=1,step=5").exit_code == 1);

  FaultSpec agent = ParseOne("kill-agent,node=2,after=1.5m");
  CHECK(agent.node == 2);
  CHECK(agent.after == milliseconds(90'000));
  CHECK(ParseOne("kill-agent:TERM,after=2").signal == SIGTERM);
  CHECK(ParseOne("kill-agent:TERM,after=2").after == milliseconds(2000));

  FaultSpec drop = ParseOne("drop-heartbeats:5s,node=any,step=10");
  CHECK(drop.duration == milliseconds(5000));
  CHECK(drop.any_node);

  FaultSpec delay = ParseOne("delay-heartbeats:300ms,for=10s,after=0");
  CHECK(delay.duration == milliseconds(300));
  CHECK(delay.window == milliseconds(10'000));
  CHECK(delay.after == milliseconds(0));

  CHECK(FaultActorOf(ParseOne("crash-daemon,after=3s").kind) == FaultActor::kDaemon);
  CHECK(ParseOne("corrupt-checkpoint,step=4").kind == FaultKind::kCorruptCheckpoint);

  // slow is slow from the start unless given a trigger.
  FaultSpec slow = ParseOne("slow,rank=3,factor=2");
  CHECK(slow.kind == FaultKind::kSlowWorker);
  CHECK(slow.factor == 2.0);
  CHECK(slow.rank == 3);
  CHECK(slow.after == milliseconds(0));
  CHECK(ParseOne("slow,rank=any,factor=1.5,step=10").step == 10u);
}

TEST_CASE("a plan is several specs separated by semicolons, indexed in order") {
  auto plan = ParseFaultPlan(" kill-worker,rank=0,step=3 ;; crash-daemon,after=1s; ", 9);
  REQUIRE(plan.ok());
  REQUIRE(plan->faults.size() == 2);
  CHECK(plan->faults[0].index == 0);
  CHECK(plan->faults[1].index == 1);
  CHECK(plan->faults[1].kind == FaultKind::kCrashDaemon);
  CHECK(plan->seed == 9);
  // What workers are given parses to the same plan.
  CHECK(plan->text == "kill-worker,rank=0,step=3;crash-daemon,after=1s");
}

TEST_CASE("ranges and 'any' are drawn from the seed: same seed, same faults") {
  const std::string text =
      "kill-worker,rank=any,step=10..1000;hang-worker,rank=0,after=1s..100s;"
      "kill-agent,node=any,after=1s";
  auto a = ParseFaultPlan(text, 42);
  auto b = ParseFaultPlan(text, 42);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (size_t i = 0; i < a->faults.size(); ++i) {
    CHECK(a->faults[i].step == b->faults[i].step);
    CHECK(a->faults[i].after == b->faults[i].after);
    CHECK(a->faults[i].RankAmong(8) == b->faults[i].RankAmong(8));
  }
  const uint64_t step = *a->faults[0].step;
  CHECK(step >= 10);
  CHECK(step <= 1000);
  CHECK(a->faults[1].after >= milliseconds(1000));
  CHECK(a->faults[1].after <= milliseconds(100'000));
  const int rank = a->faults[0].RankAmong(8);
  CHECK(rank >= 0);
  CHECK(rank < 8);
  // Other seeds draw other values: over 20 seeds, more than one step.
  bool differs = false;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    differs = differs || *ParseFaultPlan(text, seed)->faults[0].step != step;
  }
  CHECK(differs);
  // A fixed target is not drawn.
  CHECK(ParseOne("hang-worker,rank=5,after=1s").RankAmong(8) == 5);
}

TEST_CASE("malformed specs are refused naming the spec and what is wrong") {
  const std::vector<std::pair<std::string, std::string>> table = {
      {"", "'': no fault given (e.g. kill-worker,rank=0,step=10)"},
      {" ; ", "' ; ': no fault given (e.g. kill-worker,rank=0,step=10)"},
      {"kill-wrker,rank=0,step=3",
       "'kill-wrker,rank=0,step=3': unknown fault kind 'kill-wrker' (known: kill-worker, "
       "hang-worker, exit-worker, kill-agent, drop-heartbeats, delay-heartbeats, crash-daemon, "
       "corrupt-checkpoint, slow)"},
      {"kill-worker:SIGNOPE,rank=0,step=3",
       "'kill-worker:SIGNOPE,rank=0,step=3': 'SIGNOPE' is not a signal (e.g. SIGKILL, TERM, 9)"},
      {"kill-worker,step=3",
       "'kill-worker,step=3': kill-worker needs a target: rank=N or rank=any"},
      {"kill-worker,rank=0",
       "'kill-worker,rank=0': kill-worker needs one trigger: "
       "after=DURATION or step=N"},
      {"kill-worker,rank=0,step=3,after=1s",
       "'kill-worker,rank=0,step=3,after=1s': kill-worker needs one trigger: after=DURATION or "
       "step=N"},
      {"kill-worker,rank=0,step=3,step=4", "'kill-worker,rank=0,step=3,step=4': step given twice"},
      {"kill-worker,rank=0,node=1,step=3",
       "'kill-worker,rank=0,node=1,step=3': kill-worker targets a rank, not a node"},
      {"kill-worker,rank=x,step=3",
       "'kill-worker,rank=x,step=3': rank='x' is not a number or 'any'"},
      {"kill-worker,rank=0,step=0",
       "'kill-worker,rank=0,step=0': step='0' is not a step >= 1 or LOW..HIGH range"},
      {"kill-worker,rank=0,step=9..3",
       "'kill-worker,rank=0,step=9..3': step='9..3' is not a step >= 1 or LOW..HIGH range"},
      {"kill-worker,rank=0,after=-1s",
       "'kill-worker,rank=0,after=-1s': after='-1s' is not a duration or LOW..HIGH range"},
      {"kill-worker,rank=0,after=5h",
       "'kill-worker,rank=0,after=5h': after='5h' is not a duration or LOW..HIGH range"},
      {"kill-worker,rank=0,after=1s,",
       "'kill-worker,rank=0,after=1s,': an empty item: a stray ','"},
      {"kill-worker,rank=0,when=1",
       "'kill-worker,rank=0,when=1': unknown key 'when' (keys: after, step, rank, node, for, "
       "factor)"},
      {"kill-worker,rank=0,soon",
       "'kill-worker,rank=0,soon': 'soon' is not key=value (keys: after, step, rank, node, for, "
       "factor)"},
      {"slow,rank=1",
       "'slow,rank=1': slow needs factor=F: how many times slower the rank runs "
       "(e.g. factor=2)"},
      {"slow,rank=1,factor=1",
       "'slow,rank=1,factor=1': factor='1' is not a number above 1 and at most 100"},
      {"slow,rank=1,factor=x2",
       "'slow,rank=1,factor=x2': factor='x2' is not a number above 1 and at most 100"},
      {"slow,factor=2", "'slow,factor=2': slow needs a target: rank=N or rank=any"},
      {"kill-worker,rank=0,step=3,factor=2",
       "'kill-worker,rank=0,step=3,factor=2': factor= applies to slow only"},
      {"hang-worker:1,rank=0,step=3",
       "'hang-worker:1,rank=0,step=3': hang-worker takes no "
       "argument after ':'"},
      {"exit-worker:256,rank=0,step=3",
       "'exit-worker:256,rank=0,step=3': exit code '256' is not a number in 0..255"},
      {"exit-worker,rank=0,after=2s",
       "'exit-worker,rank=0,after=2s': exit-worker fires inside "
       "the worker, at a step: use step=N"},
      {"kill-agent,rank=0,after=1s",
       "'kill-agent,rank=0,after=1s': kill-agent targets a node (node=N), not a rank"},
      {"drop-heartbeats,after=1s",
       "'drop-heartbeats,after=1s': drop-heartbeats needs a duration, e.g. drop-heartbeats:5s"},
      {"drop-heartbeats:0s,after=1s",
       "'drop-heartbeats:0s,after=1s': '0s' is not a positive duration (e.g. 500ms, 5s)"},
      {"delay-heartbeats:1s,after=1s",
       "'delay-heartbeats:1s,after=1s': delay-heartbeats needs for=DURATION: how long "
       "heartbeats are late"},
      {"drop-heartbeats:1s,for=3s,after=1s",
       "'drop-heartbeats:1s,for=3s,after=1s': for= applies to delay-heartbeats only"},
      {"crash-daemon,step=3",
       "'crash-daemon,step=3': crash-daemon fires on the daemon's clock "
       "(it sees no steps): use after=DURATION"},
      {"crash-daemon,node=0,after=1s",
       "'crash-daemon,node=0,after=1s': crash-daemon takes no rank= or node="},
      {"corrupt-checkpoint,after=1s",
       "'corrupt-checkpoint,after=1s': corrupt-checkpoint fires "
       "at a checkpoint's step: use step=N"},
      {"kill-worker,rank=0,step=3;bogus",
       "'bogus': unknown fault kind 'bogus' (known: kill-worker, hang-worker, exit-worker, "
       "kill-agent, drop-heartbeats, delay-heartbeats, crash-daemon, corrupt-checkpoint, slow)"},
  };
  for (const auto& [text, error] : table) {
    INFO("spec: " << text);
    auto plan = ParseFaultPlan(text, 0);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().IsInvalidArgument());
    CHECK(plan.status().message() == error);
  }
}

TEST_CASE("signals are read by name, short name or number") {
  CHECK(ParseSignal("SIGKILL") == SIGKILL);
  CHECK(ParseSignal("KILL") == SIGKILL);
  CHECK(ParseSignal("15") == SIGTERM);
  CHECK_FALSE(ParseSignal("0").has_value());
  CHECK_FALSE(ParseSignal("SIG").has_value());
  CHECK_FALSE(ParseSignal("-9").has_value());
}

}  // namespace
}  // namespace muster
