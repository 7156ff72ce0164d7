// The auto hang rule's pure parts: faulthandler's dumps parsed
// (stack_dump.h), the learned timeout and the verdict on the evidence
// (hang_judge.h).
#include <catch2/catch.hpp>

#include "launcher/process/hang_judge.h"
#include "launcher/process/stack_dump.h"

namespace muster {
namespace {

using std::chrono::milliseconds;

// A dump as CPython 3.11's faulthandler writes it: a loader thread, then
// the main thread blocked in `where` called from the script's line `line`.
std::string Dump(const std::string& where, int line) {
  return "Thread 0x00007f5e2f7fe640 (most recent call first):\n"
         "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
         "  File \"/usr/lib/python3.11/threading.py\", line 1002 in _bootstrap\n"
         "\n"
         "Current thread 0x00007f5e3a0b4740 (most recent call first):\n"
         "  File \"/usr/lib/python3/dist-packages/torch/" +
         where + "\", line 10 in " + where +
         "\n"
         "  File \"/job/train.py\", line " +
         std::to_string(line) +
         " in main\n"
         "  File \"/job/train.py\", line 90 in <module>\n";
}

TEST_CASE("a faulthandler dump gives each thread's frames, the main thread last") {
  const StackDump dump = ParseStackDump(Dump("autograd.py", 45));
  REQUIRE(dump.threads.size() == 2);
  CHECK(dump.threads[0].id == "0x00007f5e2f7fe640");
  CHECK(dump.threads[1].id == "0x00007f5e3a0b4740");
  REQUIRE(dump.MainFrames().size() == 3);
  CHECK(dump.MainFrames()[1] == StackFrame{"/job/train.py", 45, "main"});
  const StackFrame* script = InnermostScriptFrame(dump.MainFrames());
  REQUIRE(script != nullptr);
  CHECK(DescribeFrame(*script) == "File \"/job/train.py\", line 45 in main");
}

TEST_CASE("lines a dump may hold besides frames are skipped, and nonsense is no thread") {
  const StackDump dump = ParseStackDump(
      "Current thread 0x1 (most recent call first):\n  <no Python frame>\n  ...\n"
      "  File \"/a \\\"b.py\", line 7 in f\n  File \"/x.py\", line nope in g\n");
  REQUIRE(dump.threads.size() == 1);
  REQUIRE(dump.MainFrames().size() == 1);
  CHECK(dump.MainFrames()[0].file == "/a \\\"b.py");
  CHECK(ParseStackDump("garbage\n  File \"/x.py\", line 3 in f\n").empty());
  CHECK(ParseStackDump("").MainFrames().empty());
  CHECK(InnermostScriptFrame({}) == nullptr);
}

TEST_CASE("the learned timeout: the floor, then the steps, then the longest step seen") {
  const AutoHangRule rule;
  StepTimeLearner learner;
  const Time t0{};
  learner.OnStep(t0);
  CHECK(learner.Timeout(rule) == milliseconds(20'000));  // nothing learned: the floor
  Time t = t0;
  for (int i = 0; i < 50; ++i) learner.OnStep(t += milliseconds(100));
  CHECK(learner.Timeout(rule) == milliseconds(20'000));  // 100 ms steps: 20 x 0.1 s is under it
  StepTimeLearner slow;
  Time slow_t = t0;
  for (int i = 0; i < 10; ++i) slow.OnStep(slow_t += milliseconds(2'000));
  CHECK(slow.Timeout(rule) == milliseconds(40'000));  // 2 s steps: 20 x 2 s
  learner.OnStep(t += milliseconds(15'000));          // an all-rank save of 15 s
  CHECK(learner.longest_ms() == 15'000);
  CHECK(learner.Timeout(rule) >= milliseconds(30'000));  // 2 x the longest
}

RankEvidence Rank(int rank, const std::string& first, const std::string& second, bool cpu = false,
                  bool io = false) {
  return {rank, true, ParseStackDump(first), ParseStackDump(second), cpu, io};
}

TEST_CASE("the rank not where the others wait is the culprit, named with its line") {
  const std::string wait = Dump("autograd.py", 45);
  const std::string sleep = Dump("time.py", 40);
  const HangVerdict verdict =
      JudgeHang({Rank(0, wait, wait), Rank(1, wait, wait), Rank(2, sleep, sleep)});
  CHECK_FALSE(verdict.alive);
  CHECK(verdict.culprits == std::vector<int>{2});
  CHECK_THAT(verdict.summary, Catch::Contains("rank 2 at File \"/job/train.py\", line 40 in main"));
  CHECK_THAT(verdict.summary, Catch::Contains("the others at File \"/job/train.py\", line 45"));
}

TEST_CASE("a rank that answers no dump is a culprit, even among two") {
  const std::string wait = Dump("autograd.py", 45);
  const HangVerdict verdict = JudgeHang({Rank(0, wait, wait), Rank(1, "", "")});
  CHECK_FALSE(verdict.alive);
  CHECK(verdict.culprits == std::vector<int>{1});
  CHECK_THAT(verdict.summary, Catch::Contains("rank 1 at (no stack"));
}

TEST_CASE("a moving stack, or a culprit at work, is alive") {
  const std::string wait = Dump("autograd.py", 45);
  const std::string save = Dump("serialization.py", 70);
  // Rank 0 saves a checkpoint while the others wait at a barrier.
  CHECK(JudgeHang({Rank(0, save, save, false, true), Rank(1, wait, wait), Rank(2, wait, wait)})
            .alive);
  CHECK(JudgeHang(
            {Rank(0, save, Dump("serialization.py", 71)), Rank(1, wait, wait), Rank(2, wait, wait)})
            .alive);
  // The waiting ranks' CPU (a spinning wait) does not make a job alive.
  CHECK_FALSE(
      JudgeHang({Rank(0, save, save), Rank(1, wait, wait, true), Rank(2, wait, wait, true)}).alive);
}

TEST_CASE("every rank at one place names none, and two places of one rank each name none") {
  const std::string wait = Dump("autograd.py", 45);
  const HangVerdict same = JudgeHang({Rank(0, wait, wait), Rank(1, wait, wait)});
  CHECK_FALSE(same.alive);
  CHECK(same.culprits.empty());
  CHECK_THAT(same.summary, Catch::Contains("every rank waits at"));
  CHECK(JudgeHang({Rank(0, wait, wait), Rank(1, wait, wait, false, true)}).alive);
  const HangVerdict tie =
      JudgeHang({Rank(0, wait, wait), Rank(1, Dump("x.py", 3), Dump("x.py", 3))});
  CHECK(tie.culprits.empty());
  CHECK(tie.waiting_at.empty());
  CHECK_THAT(tie.summary, Catch::Contains("2 places"));
}

TEST_CASE("ranks that dump no stacks are judged by their activity alone") {
  RankEvidence stopped{0, false, {}, {}, false, false};
  RankEvidence waiting{1, false, {}, {}, false, false};
  HangVerdict verdict = JudgeHang({stopped, waiting});
  CHECK_FALSE(verdict.alive);
  CHECK(verdict.culprits.empty());
  waiting.used_cpu = true;
  CHECK(JudgeHang({stopped, waiting}).alive);
}

}  // namespace
}  // namespace muster
