// How a generation formed in place gets its communicator: the plan (pure),
// its encodings, the agreement through an in-memory store with threads as
// ranks, and FormGenerationCommunicator with a communicator that shrinks
// like NCCL's (ranks keep their order) on CPU. (Over a real store the
// agreement runs in the trainer only with NCCL, so only on a GPU.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "worker_runtime/comm/communicator_agreement.h"
#include "worker_runtime/comm/communicator_plan.h"
#include "worker_runtime/comm/generation_communicator.h"
#include "worker_runtime/store/store_client.h"

using muster::Result;
using muster::Status;
using muster::runtime::AgreeOnCommunicatorPlan;
using muster::runtime::Backend;
using muster::runtime::Communicator;
using muster::runtime::CommunicatorPlan;
using muster::runtime::Context;
using muster::runtime::DataType;
using muster::runtime::DecodeCommunicatorPlan;
using muster::runtime::DecodePreviousMembership;
using muster::runtime::EncodeCommunicatorPlan;
using muster::runtime::EncodePreviousMembership;
using muster::runtime::FormGenerationCommunicator;
using muster::runtime::KeepForShrink;
using muster::runtime::KeptCommunicator;
using muster::runtime::PlanCommunicator;
using muster::runtime::PreviousMembership;
using muster::runtime::ReduceOp;
using Kind = CommunicatorPlan::Kind;

namespace {

using Members = std::vector<std::optional<PreviousMembership>>;

PreviousMembership Was(int rank, int world_size, std::string id = "gen/1/") {
  return {.communicator_id = std::move(id), .rank = rank, .world_size = world_size};
}

// Shrinks as ncclCommShrink does: the remaining ranks keep their order.
class ShrinkingCommunicator final : public Communicator {
 public:
  // A non-empty `fail_with` makes Shrink() fail with that IoError, as an
  // NCCL shrink whose child could not be proved good does.
  ShrinkingCommunicator(int rank, int world_size, std::string fail_with = {})
      : rank_(rank), world_size_(world_size), fail_with_(std::move(fail_with)) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Backend backend() const override { return Backend::kNccl; }
  void AllReduce(void*, size_t, DataType, ReduceOp) override {}
  void Broadcast(void*, size_t, DataType, int) override {}
  void AllGather(const void*, void*, size_t, DataType) override {}
  void ReduceScatter(const void*, void*, size_t, DataType, ReduceOp) override {}
  void Barrier() override {}
  void Abort() override { spent_ = true; }
  bool CanShrink() const override { return !spent_; }
  Result<std::unique_ptr<Communicator>> Shrink(const std::vector<int>& excluded) override {
    spent_ = true;
    if (!fail_with_.empty()) return Status::IoError(fail_with_);
    const auto below =
        std::count_if(excluded.begin(), excluded.end(), [this](int r) { return r < rank_; });
    return std::unique_ptr<Communicator>(new ShrinkingCommunicator(
        rank_ - static_cast<int>(below), world_size_ - static_cast<int>(excluded.size())));
  }

 private:
  int rank_;
  int world_size_;
  std::string fail_with_;
  bool spent_ = false;
};

// The keys every rank's client sees.
struct Keys {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string, std::less<>> values;
};

// An in-memory StoreClient with the real one's Set, waiting Get and Wait
// (the calls the agreement and Gloo's rendezvous make); the others are not
// needed and fail.
class MemoryStore final : public muster::runtime::StoreClient {
 public:
  explicit MemoryStore(Keys& keys) : keys_(keys) {}
  Status Set(std::string_view key, std::string_view value) override {
    {
      std::lock_guard lock(keys_.mutex);
      keys_.values[std::string(key)] = std::string(value);
    }
    keys_.changed.notify_all();
    return Status::Ok();
  }
  Result<std::string> Get(std::string_view key, std::optional<Timeout> timeout) override {
    std::unique_lock lock(keys_.mutex);
    const Timeout wait = timeout.value_or(options_.timeout);
    if (!keys_.changed.wait_for(lock, wait, [&] { return keys_.values.contains(key); })) {
      return Status::Timeout("store GET key='" + std::string(key) + "': timed out after " +
                             std::to_string(wait.count()) + " ms");
    }
    return keys_.values.find(key)->second;
  }
  Result<int64_t> Add(std::string_view, int64_t) override { return Unused(); }
  Status Wait(const std::vector<std::string>& wanted, std::optional<Timeout> timeout) override {
    std::unique_lock lock(keys_.mutex);
    const Timeout wait = timeout.value_or(options_.timeout);
    const bool all = keys_.changed.wait_for(lock, wait, [&] {
      return std::all_of(wanted.begin(), wanted.end(),
                         [&](const std::string& k) { return keys_.values.contains(k); });
    });
    if (!all)
      return Status::Timeout("store WAIT: timed out after " + std::to_string(wait.count()) + " ms");
    return Status::Ok();
  }
  Result<std::string> CompareSet(std::string_view, std::string_view, std::string_view) override {
    return Unused();
  }
  Result<bool> Check(const std::vector<std::string>&) override { return Unused(); }
  Result<bool> DeleteKey(std::string_view) override { return Unused(); }
  const Options& options() const override { return options_; }

 private:
  static Status Unused() { return Status::IoError("not in the in-memory store"); }
  Keys& keys_;
  Options options_;
};

Context Rank(int rank, int world_size) {
  Context ctx;
  ctx.master_addr = "127.0.0.1";  // Gloo's address toward the "master": loopback
  ctx.master_port = 29500;
  ctx.rank = rank;
  ctx.world_size = world_size;
  ctx.local_rank = rank;
  ctx.local_world_size = world_size;
  return ctx;
}

// Runs `per_rank(rank)` on one thread per rank and returns the results by rank.
template <typename F>
auto OnEveryRank(int world_size, F per_rank) {
  std::vector<std::future<decltype(per_rank(0))>> running;
  for (int r = 0; r < world_size; ++r)
    running.push_back(std::async(std::launch::async, per_rank, r));
  std::vector<decltype(per_rank(0))> results;
  for (auto& f : running) results.push_back(f.get());
  return results;
}

// The agreement with one thread per rank; rank r kept kept[r].
std::vector<Result<CommunicatorPlan>> AgreeOnEveryRank(const Members& kept) {
  Keys keys;
  const int world_size = static_cast<int>(kept.size());
  return OnEveryRank(world_size, [&](int rank) {
    MemoryStore client(keys);
    return AgreeOnCommunicatorPlan(client, rank, world_size, kept[rank], std::chrono::seconds(10));
  });
}

}  // namespace

TEST_CASE("the plan shrinks when the world only lost ranks, in order", "[comm][plan]") {
  SECTION("the last node's ranks are gone") {
    CommunicatorPlan plan = PlanCommunicator(Members{Was(0, 4), Was(1, 4)});
    CHECK(plan.kind == Kind::kShrink);
    CHECK(plan.excluded == std::vector<int>{2, 3});
  }
  SECTION("a rank in the middle is gone") {
    CommunicatorPlan plan = PlanCommunicator(Members{Was(0, 4), Was(2, 4), Was(3, 4)});
    CHECK(plan.kind == Kind::kShrink);
    CHECK(plan.excluded == std::vector<int>{1});
  }
  SECTION("the first ranks are gone") {
    CommunicatorPlan plan = PlanCommunicator(Members{Was(2, 3)});
    CHECK(plan.kind == Kind::kShrink);
    CHECK(plan.excluded == std::vector<int>{0, 1});
  }
}

TEST_CASE("the plan creates anew otherwise, saying why", "[comm][plan]") {
  const auto creates = [](const Members& members, const std::string& why_part) {
    CommunicatorPlan plan = PlanCommunicator(members);
    CHECK(plan.kind == Kind::kCreate);
    CHECK(plan.excluded.empty());
    CHECK_THAT(plan.why, Catch::Contains(why_part));
  };
  creates(Members{Was(0, 3), std::nullopt}, "rank 1 is a new process");
  creates(Members{Was(0, 2), Was(1, 2)}, "does not shrink (2 -> 2");
  creates(Members{Was(0, 2), Was(1, 2), std::nullopt}, "rank 2 is a new process");
  creates(Members{Was(1, 3), Was(0, 3)}, "rank 1 was rank 0, out of the old order");
  creates(Members{Was(0, 4), Was(1, 4, "gen/7/")}, "different communicators");
  creates(Members{Was(0, 4), Was(1, 3)}, "different communicators");
  creates(Members{Was(0, 3), Was(5, 3)}, "out of the old order");
  creates(Members{}, "empty");
}

TEST_CASE("memberships and plans survive their encodings", "[comm][plan]") {
  for (const std::optional<PreviousMembership>& m :
       {std::optional<PreviousMembership>(), std::optional(Was(2, 5, "muster/x 1/gen 3/"))}) {
    auto decoded = DecodePreviousMembership(EncodePreviousMembership(m));
    REQUIRE(decoded.ok());
    CHECK(*decoded == m);
  }
  for (const CommunicatorPlan& plan : {PlanCommunicator(Members{Was(0, 8), Was(3, 8), Was(7, 8)}),
                                       PlanCommunicator(Members{Was(0, 2), std::nullopt})}) {
    auto decoded = DecodeCommunicatorPlan(EncodeCommunicatorPlan(plan));
    REQUIRE(decoded.ok());
    CHECK(*decoded == plan);
  }
}

TEST_CASE("a bad encoding is refused, quoting it", "[comm][plan]") {
  for (const char* text : {"", "x", "1 2", "1 2 ", "3 2 id", "-1 2 id", "1 0 id", "a 2 id"}) {
    auto decoded = DecodePreviousMembership(text);
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.status().IsInvalidArgument());
    CHECK_THAT(decoded.status().message(), Catch::Contains(std::string("'") + text + "'"));
  }
  for (const char* text : {"", "shrink", "shrink ", "shrink 2,1", "shrink 1,1", "shrink 1,",
                           "shrink -1", "grow 1", "create"}) {
    auto decoded = DecodeCommunicatorPlan(text);
    REQUIRE_FALSE(decoded.ok());
    CHECK_THAT(decoded.status().message(), Catch::Contains(std::string("'") + text + "'"));
  }
}

TEST_CASE("every rank gets rank 0's plan through the store", "[comm][plan]") {
  SECTION("all kept the same communicator: shrink") {
    auto plans = AgreeOnEveryRank(Members{Was(0, 4), Was(1, 4), Was(3, 4)});
    for (auto& plan : plans) {
      REQUIRE(plan.ok());
      CHECK(plan->kind == Kind::kShrink);
      CHECK(plan->excluded == std::vector<int>{2});
    }
  }
  SECTION("one rank is new: create") {
    auto plans = AgreeOnEveryRank(Members{Was(0, 3), std::nullopt, Was(2, 3)});
    for (auto& plan : plans) {
      REQUIRE(plan.ok());
      CHECK(plan->kind == Kind::kCreate);
      CHECK_THAT(plan->why, Catch::Contains("rank 1 is a new process"));
    }
  }
}

TEST_CASE("a rank that never publishes times the agreement out", "[comm][plan]") {
  Keys keys;
  MemoryStore client(keys);
  auto plan = AgreeOnCommunicatorPlan(client, 0, 2, Was(0, 3), std::chrono::milliseconds(50));
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().IsTimeout());
  CHECK_THAT(plan.status().message(), Catch::Contains("comm_plan/member/1"));
}

TEST_CASE("a generation that lost a rank shrinks the kept communicators", "[comm][plan]") {
  Keys keys;
  // Old world of 3; old rank 1 died; the survivors are new ranks 0 and 1.
  const int old_rank_of[] = {0, 2};
  auto formed = OnEveryRank(2, [&](int rank) {
    MemoryStore client(keys);
    std::unique_ptr<Communicator> old(new ShrinkingCommunicator(old_rank_of[rank], 3));
    std::optional<KeptCommunicator> kept = KeepForShrink(old, "gen/1/");
    REQUIRE(kept);
    CHECK(old == nullptr);
    return FormGenerationCommunicator(Rank(rank, 2), &client, {.backend = Backend::kNccl}, true,
                                      std::move(kept));
  });
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(formed[rank].ok());
    CHECK(formed[rank]->plan.kind == Kind::kShrink);
    CHECK(formed[rank]->plan.excluded == std::vector<int>{1});
    CHECK(formed[rank]->comm->rank() == rank);
    CHECK(formed[rank]->comm->world_size() == 2);
  }
}

TEST_CASE("a shrink that gives another rank than the generation's is not kept", "[comm][plan]") {
  Keys keys;
  // Old ranks 1 and 0 as new ranks 0 and 1 would reorder; every rank lies
  // about its old rank the same way, so the plan shrinks, and the shrunk
  // ranks then disagree with the generation's: every rank creates anew.
  const int claimed_old_rank[] = {0, 2};
  const int real_old_rank[] = {2, 0};
  auto formed = OnEveryRank(2, [&](int rank) {
    MemoryStore client(keys);
    KeptCommunicator kept{.comm = std::make_unique<ShrinkingCommunicator>(real_old_rank[rank], 3),
                          .membership = Was(claimed_old_rank[rank], 3, "gen/1/")};
    return FormGenerationCommunicator(Rank(rank, 2), &client, {.backend = Backend::kGloo}, true,
                                      std::move(kept));
  });
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(formed[rank].ok());
    CHECK(formed[rank]->plan.kind == Kind::kCreate);
    CHECK_THAT(
        formed[rank]->plan.why,
        Catch::Contains("rank 0: the shrunk communicator made this rank 1 of 2, not 0 of 2") &&
            Catch::Contains("(and 1 other rank(s))"));
    CHECK(formed[rank]->comm->backend() == Backend::kGloo);
    CHECK(formed[rank]->comm->rank() == rank);
  }
}

TEST_CASE("a shrink that fails on one rank makes every rank create anew", "[comm][plan]") {
  Keys keys;
  // Old world of 3; old rank 2 died; old rank 1's shrink fails (as an NCCL
  // shrink whose child init failed), old rank 0's succeeds: rank 0 must not
  // keep a child that rank 1 lacks.
  auto formed = OnEveryRank(2, [&](int rank) {
    MemoryStore client(keys);
    auto old =
        std::make_unique<ShrinkingCommunicator>(rank, 3, rank == 1 ? "bootstrap refused" : "");
    KeptCommunicator kept{.comm = std::move(old), .membership = Was(rank, 3, "gen/1/")};
    return FormGenerationCommunicator(Rank(rank, 2), &client, {.backend = Backend::kGloo}, true,
                                      std::move(kept));
  });
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(formed[rank].ok());
    CHECK(formed[rank]->plan.kind == Kind::kCreate);
    CHECK(formed[rank]->plan.why == "shrink refused by rank 1: bootstrap refused");
    CHECK(formed[rank]->comm->backend() == Backend::kGloo);
    CHECK(formed[rank]->comm->world_size() == 2);
  }
  // The new communicators work together.
  std::vector<float> sums = OnEveryRank(2, [&](int rank) {
    float value = static_cast<float>(rank + 1);
    formed[rank]->comm->AllReduce(&value, 1, DataType::kFloat32, ReduceOp::kSum);
    return value;
  });
  CHECK(sums == std::vector<float>{3.0f, 3.0f});
}

TEST_CASE("the shrink outcome: ok only when every rank says so", "[comm][plan]") {
  Keys keys;
  auto outcome = OnEveryRank(3, [&](int rank) {
    MemoryStore client(keys);
    return muster::runtime::AgreeOnShrinkOutcome(client, rank, 3, "", std::chrono::seconds(10));
  });
  for (auto& o : outcome) {
    REQUIRE(o.ok());
    CHECK(o->empty());
  }
  Keys silent;
  MemoryStore client(silent);
  auto waited =
      muster::runtime::AgreeOnShrinkOutcome(client, 0, 2, "", std::chrono::milliseconds(50));
  REQUIRE_FALSE(waited.ok());
  CHECK(waited.status().IsTimeout());
}

TEST_CASE("without the agreement a generation creates its communicator", "[comm][plan]") {
  std::unique_ptr<Communicator> old(new ShrinkingCommunicator(0, 2));
  auto formed = FormGenerationCommunicator(Rank(0, 1), nullptr, {.backend = Backend::kGloo}, false,
                                           KeepForShrink(old, "gen/1/"));
  REQUIRE(formed.ok());
  CHECK(formed->plan.kind == Kind::kCreate);
  CHECK(formed->comm->backend() == Backend::kGloo);
  CHECK(formed->comm->world_size() == 1);
}

TEST_CASE("a communicator that cannot shrink is not kept", "[comm][plan]") {
  auto solo = muster::runtime::CreateCommunicator(Rank(0, 1), nullptr, {.backend = Backend::kGloo});
  REQUIRE(solo.ok());
  std::unique_ptr<Communicator> comm = std::move(solo).value();
  CHECK_FALSE(comm->CanShrink());
  CHECK_FALSE(KeepForShrink(comm, "gen/1/"));
  CHECK(comm != nullptr);
  auto shrunk = comm->Shrink({});
  REQUIRE_FALSE(shrunk.ok());
  CHECK(shrunk.status().IsInvalidArgument());
  CHECK_THAT(shrunk.status().message(), Catch::Contains("cannot shrink"));
}
