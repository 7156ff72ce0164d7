// DecideFence (rendezvous/client/fence_rule.h) as a table: each row a
// situation an agent meets, named by the rule that decides it.
#include <catch2/catch.hpp>

#include "rendezvous/client/fence_rule.h"

#include "common/clock.h"

namespace muster::rdzv {
namespace {

using std::chrono::milliseconds;
using Kind = FenceDecision::Kind;

TEST_CASE("self-fencing follows its three rules", "[rdzv][client][fence]") {
  Settings settings;  // fence_timeout 1 s, keep_alive_interval 0.5 s
  const Time heard{milliseconds(10'000)};
  struct Row {
    const char* situation;
    ContactFailure latest;
    milliseconds since_heard;
    Kind want;
    milliseconds want_next_check_after_heard;  // kWait rows only
  };
  const Row rows[] = {
      {"rule 1: connected and heard a moment ago", ContactFailure::kNone, milliseconds(200),
       Kind::kWait, milliseconds(1'000)},
      {"rule 1: a refusal inside fence_timeout waits for the deadline", ContactFailure::kRefused,
       milliseconds(999), Kind::kWait, milliseconds(1'000)},
      {"rule 1: a timeout inside fence_timeout waits for the deadline", ContactFailure::kSilent,
       milliseconds(600), Kind::kWait, milliseconds(1'000)},
      {"rule 2: daemon restarting (every attempt refused) keeps the workers",
       ContactFailure::kRefused, milliseconds(1'000), Kind::kWait, milliseconds(1'500)},
      {"rule 2: a long daemon restart is looked at again each interval", ContactFailure::kRefused,
       milliseconds(30'000), Kind::kWait, milliseconds(30'500)},
      {"rule 3: partition, connects time out",
       ContactFailure::kSilent,
       milliseconds(1'000),
       Kind::kFence,
       {}},
      {"rule 3: an open connection gone quiet (daemon stopped, packets dropped)",
       ContactFailure::kNone,
       milliseconds(1'000),
       Kind::kFence,
       {}},
      {"rule 3: refused during a restart, then the link went down",
       ContactFailure::kSilent,
       milliseconds(5'000),
       Kind::kFence,
       {}},
  };
  for (const Row& row : rows) {
    INFO(row.situation);
    const FenceDecision d = DecideFence(heard, row.latest, heard + row.since_heard, settings);
    CHECK(d.kind == row.want);
    CHECK(d.silent == row.since_heard);
    if (row.want == Kind::kWait) {
      CHECK(d.next_check == heard + row.want_next_check_after_heard);
      CHECK(d.why.empty());
    } else {
      CHECK(d.why ==
            "no word from the rendezvous for " + std::to_string(row.since_heard.count()) + " ms");
    }
  }
}

TEST_CASE("the kind of socket failure decides refused versus silent", "[rdzv][client][fence]") {
  CHECK(FailureOf(true) == ContactFailure::kRefused);
  CHECK(FailureOf(false) == ContactFailure::kSilent);
}

TEST_CASE("fence_timeout and keep_alive_interval come from the settings", "[rdzv][client][fence]") {
  auto settings = Settings::FromConf({{"heartbeat_timeout", "4"}, {"fence_timeout", "3"}});
  REQUIRE(settings.ok());
  const Time heard{milliseconds(0)};
  CHECK(DecideFence(heard, ContactFailure::kSilent, heard + milliseconds(2'999), *settings).kind ==
        Kind::kWait);
  CHECK(DecideFence(heard, ContactFailure::kSilent, heard + milliseconds(3'000), *settings).kind ==
        Kind::kFence);
  CHECK(DecideFence(heard, ContactFailure::kRefused, heard + milliseconds(3'000), *settings)
            .next_check == heard + milliseconds(3'500));
}

TEST_CASE("a replicated rendezvous keeps workers while replicas answer, up to failover_timeout",
          "[rdzv][client][fence]") {
  Settings settings;  // fence_timeout 1 s, failover_timeout 3.5 s
  const Time heard{milliseconds(10'000)};
  struct Row {
    const char* situation;
    std::optional<milliseconds> answered_after_heard;  // nullopt: no replica answered
    milliseconds since_heard;
    Kind want;
    milliseconds want_next_check_after_heard;  // kWait rows only
    const char* want_why_start;                // kFence rows only
  };
  const Row rows[] = {
      {"rule 1: heard the leader a moment ago", std::nullopt, milliseconds(300), Kind::kWait,
       milliseconds(1'000), ""},
      {"R2: the old leader's lease still runs, a standby names it", milliseconds(900),
       milliseconds(1'000), Kind::kWait, milliseconds(1'900), ""},
      {"R2: election in progress, the bound comes first", milliseconds(3'000), milliseconds(3'100),
       Kind::kWait, milliseconds(3'500), ""},
      {"R2: every replica refused just now (all down, hosts up)", milliseconds(1'400),
       milliseconds(1'500), Kind::kWait, milliseconds(2'400), ""},
      {"R1: replicas answer but none took this agent back in time",
       milliseconds(3'490),
       milliseconds(3'500),
       Kind::kFence,
       {},
       "no leader of the rendezvous took this agent back"},
      {"R1: all replicas down longer than the bound",
       milliseconds(9'900),
       milliseconds(10'000),
       Kind::kFence,
       {},
       "no leader of the rendezvous took this agent back"},
      {"R3: cut off from every replica",
       std::nullopt,
       milliseconds(1'000),
       Kind::kFence,
       {},
       "no word from any replica of the rendezvous for 1000 ms"},
      {"R3: a standby answered, then the link went down",
       milliseconds(500),
       milliseconds(1'600),
       Kind::kFence,
       {},
       "no word from any replica of the rendezvous for 1100 ms"},
  };
  for (const Row& row : rows) {
    INFO(row.situation);
    std::optional<Time> answered;
    if (row.answered_after_heard) answered = heard + *row.answered_after_heard;
    const FenceDecision d =
        DecideReplicatedFence(heard, answered, heard + row.since_heard, settings);
    CHECK(d.kind == row.want);
    CHECK(d.silent == row.since_heard);
    if (row.want == Kind::kWait) {
      CHECK(d.next_check == heard + row.want_next_check_after_heard);
      CHECK(d.why.empty());
    } else {
      CHECK_THAT(d.why, Catch::StartsWith(row.want_why_start));
    }
  }
}

TEST_CASE("the failover bound is a setting", "[rdzv][client][fence]") {
  auto settings = Settings::FromConf({{"failover_timeout", "5"}});
  REQUIRE(settings.ok());
  const Time heard{milliseconds(0)};
  const auto answered = heard + milliseconds(4'500);
  CHECK(DecideReplicatedFence(heard, answered, heard + milliseconds(4'999), *settings).kind ==
        Kind::kWait);
  CHECK(DecideReplicatedFence(heard, answered, heard + milliseconds(5'000), *settings).kind ==
        Kind::kFence);
}

TEST_CASE("only a standby answer that predates a takeover keeps workers", "[rdzv][client][fence]") {
  struct Row {
    const char* what;
    Error answer;
    uint64_t served_epoch;
    bool keeps;
  };
  auto not_leader = [](uint64_t epoch, bool current) {
    return Error{.code = ErrorCode::kNotLeader,
                 .message = "not the leader",
                 .leader = "10.0.0.2:29400",
                 .epoch = epoch,
                 .current = current};
  };
  const Error no_leader{.code = ErrorCode::kNoLeader, .message = "none", .current = true};
  const Error stale_no_leader{.code = ErrorCode::kNoLeader, .message = "etcd out of reach"};
  const Error other{.code = ErrorCode::kBadRequest, .message = "x", .current = true};
  const Row rows[] = {
      {"the leader that served it, its lease still running", not_leader(7, true), 7, true},
      {"an older leader (a standby's view behind by one election)", not_leader(5, true), 7, true},
      {"a newer leader: this agent must reach it", not_leader(9, true), 7, false},
      {"any leader, to an agent never served", not_leader(7, true), 0, false},
      {"the same leader read too long ago", not_leader(7, false), 7, false},
      {"no leader elected yet", no_leader, 7, true},
      {"no leader known: etcd out of reach", stale_no_leader, 7, false},
      {"another error", other, 7, false},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    CHECK(StandbyAnswerPredatesTakeover(row.answer, row.served_epoch) == row.keeps);
  }
}

TEST_CASE("while the fence clock runs, the endpoints left share the time before it",
          "[rdzv][client][fence]") {
  const Time now{milliseconds(10'000)};
  const milliseconds usual(500);
  struct Row {
    const char* situation;
    std::optional<Time> fence_check;
    size_t left_in_sweep;
    milliseconds want;
  };
  const Row rows[] = {
      {"no fence clock: the usual deadline", std::nullopt, 3, usual},
      {"plenty of time: the usual deadline", now + milliseconds(3'000), 2, usual},
      {"a leader quiet 833 ms of 1 s: two endpoints share 167 ms", now + milliseconds(167), 2,
       milliseconds(84)},
      {"the last endpoint of the sweep takes all that is left", now + milliseconds(90), 1,
       milliseconds(90)},
      {"the fence is due: an attempt still gets its minimum", now, 2, kMinAttempt},
      {"the fence is past: an attempt still gets its minimum", now - milliseconds(5), 1,
       kMinAttempt},
  };
  for (const Row& row : rows) {
    INFO(row.situation);
    CHECK(AttemptBound(usual, row.fence_check, now, row.left_in_sweep) == row.want);
  }
}

}  // namespace
}  // namespace muster::rdzv
