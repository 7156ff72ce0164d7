// Whole agent runs for unit tests, with no process, and no network beyond
// loopback (the agent's worker store listens there).
//
// AgentRun builds an Agent over a FakeSpawner whose workers the test
// scripts (WorkerScript): each says hello when it recovers in place, exits
// with its code at once or runs until a signal or its join, and answers
// pause and join. Every answer is posted on the agent's io_context, as a
// real worker's pipe would deliver it. FakeRendezvous plays the rendezvous
// daemon through RendezvousLink: it records the agent's calls as lines and
// delivers the daemon's news (assignments, waiting, the run's end) when the
// test says.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/control_message.h"
#include "launcher/agent/agent.h"
#include "launcher/agent/rendezvous_link.h"
#include "tests/unit/launcher_fake_spawner.h"
#include "tests/unit/launcher_test_support.h"

namespace muster::testing {

// What one worker process does, by its attempt and local rank.
struct WorkerScript {
  bool in_place = false;  // says `hello 1 in-place` as it starts
  // Exits with this code as soon as it started; nullopt: runs until it is
  // signalled, or until it joined a recovery (then every worker exits 0).
  std::optional<int> exit_code = std::nullopt;
  bool refuses_pause = false;  // answers `pause G` with `failed G`
};

class FakeRendezvous final : public RendezvousLink {
 public:
  FakeRendezvous(boost::asio::io_context& io, int local_world_size = 2)
      : io_(io), local_world_size_(local_world_size) {}

  // The factory the agent is given: its link forwards to this object.
  RendezvousLinkFactory Factory() {
    return [this](boost::asio::io_context&, rdzv::ClientOptions options,
                  rdzv::RendezvousClient::Callbacks callbacks) -> std::unique_ptr<RendezvousLink> {
      join = std::move(options.join);
      callbacks_ = std::move(callbacks);
      return std::make_unique<Forward>(*this);
    };
  }

  // The daemon's news, delivered on the io_context in the order asked.
  // Assign: this node is group rank 0 of `nodes` in `generation`.
  void Assign(uint64_t generation, int nodes) {
    rdzv::Assignment a;
    a.run_id = "job";
    a.generation = generation;
    a.group_rank = 0;
    a.group_world_size = nodes;
    a.local_world_size = local_world_size_;
    a.global_rank_offset = 0;
    a.world_size = nodes * local_world_size_;
    a.master_addr = "127.0.0.1";
    a.master_port = 29500;
    a.max_restarts = 3;
    boost::asio::post(io_, [this, a] { callbacks_.on_assignment(a); });
  }
  void Waiting(const std::string& reason) {
    boost::asio::post(io_, [this, reason] { callbacks_.on_waiting(reason); });
  }
  void EndRun(bool succeeded) {
    boost::asio::post(io_, [this, succeeded] {
      callbacks_.on_run_ended(succeeded, succeeded ? "the run succeeded" : "the run failed");
    });
  }

  void Start() override {
    calls.push_back("start");
    if (on_start) boost::asio::post(io_, on_start);
  }
  void Stop() override { calls.push_back("stop"); }
  void SetCurrent(std::optional<rdzv::Assignment> current) override {
    calls.push_back(current ? "current gen=" + std::to_string(current->generation)
                            : "current none");
    if (!current && on_cleared) boost::asio::post(io_, on_cleared);
  }
  // Kept apart from `calls`: a stepping worker reports often.
  void SetProgress(uint64_t step) override { progress.push_back(step); }
  void SetCompute(std::vector<uint64_t> compute_us) override {
    compute.push_back(std::move(compute_us));
  }
  void ReportWorkerFailure(uint64_t generation, int exit_code,
                           const std::string& /*message*/) override {
    calls.push_back("failure gen=" + std::to_string(generation) +
                    " code=" + std::to_string(exit_code));
    if (on_failure) boost::asio::post(io_, [this, generation] { on_failure(generation); });
  }
  void ReportSucceeded(uint64_t generation) override {
    calls.push_back("succeeded gen=" + std::to_string(generation));
    if (on_succeeded) boost::asio::post(io_, [this, generation] { on_succeeded(generation); });
  }
  void Leave() override { calls.push_back("leave"); }
  std::optional<Time> last_heard() const override { return heard; }
  std::chrono::milliseconds fence_after() const override { return fence_after_ms; }
  void SuspendTraffic(std::chrono::milliseconds /*duration*/) override {
    calls.push_back("suspend");
  }
  void DelayHeartbeats(std::chrono::milliseconds /*delay*/,
                       std::chrono::milliseconds /*window*/) override {
    calls.push_back("delay");
  }

  std::vector<std::string> calls;                   // what the agent asked, in order
  std::vector<uint64_t> progress;                   // every SetProgress, in order
  std::vector<std::vector<uint64_t>> compute;       // every SetCompute, in order
  std::optional<Time> heard;                        // what last_heard() answers
  std::chrono::milliseconds fence_after_ms{1'000};  // what fence_after() answers
  rdzv::Join join;                                  // what the agent joins with
  std::function<void()> on_start;                   // after Start()
  std::function<void()> on_cleared;                 // after SetCurrent(nullopt)
  std::function<void(uint64_t)> on_succeeded;
  std::function<void(uint64_t)> on_failure;

 private:
  class Forward final : public RendezvousLink {
   public:
    explicit Forward(FakeRendezvous& to) : to_(to) {}
    void Start() override { to_.Start(); }
    void Stop() override { to_.Stop(); }
    void SetCurrent(std::optional<rdzv::Assignment> c) override { to_.SetCurrent(std::move(c)); }
    void SetProgress(uint64_t step) override { to_.SetProgress(step); }
    void SetCompute(std::vector<uint64_t> c) override { to_.SetCompute(std::move(c)); }
    void ReportWorkerFailure(uint64_t g, int code, const std::string& m) override {
      to_.ReportWorkerFailure(g, code, m);
    }
    void ReportSucceeded(uint64_t g) override { to_.ReportSucceeded(g); }
    void Leave() override { to_.Leave(); }
    std::optional<Time> last_heard() const override { return to_.last_heard(); }
    std::chrono::milliseconds fence_after() const override { return to_.fence_after(); }
    void SuspendTraffic(std::chrono::milliseconds d) override { to_.SuspendTraffic(d); }
    void DelayHeartbeats(std::chrono::milliseconds d, std::chrono::milliseconds w) override {
      to_.DelayHeartbeats(d, w);
    }

   private:
    FakeRendezvous& to_;
  };

  boost::asio::io_context& io_;
  int local_world_size_;
  rdzv::RendezvousClient::Callbacks callbacks_;
};

class AgentRun {
 public:
  AgentRun(int nproc, int max_restarts) : nproc_(nproc) {
    options.max_restarts = max_restarts;
    options.no_python = true;
    options.shutdown_timeout_s = 5;
    plan.nproc_per_node = nproc;
    plan.executable = "/bin/true";
    plan.argv = {"/bin/true"};
    plan.run_id = "job";
    spawner.on_spawn = [this](const SpawnRequest& r, pid_t pid) { Play(r, pid); };
    spawner.on_signal_group = [this](pid_t pid, int sig) {
      if (sig == SIGCONT || sig == 0) return;
      if (auto it = live_.find(pid); it != live_.end()) Exit(pid, sig);
    };
    spawner.on_control = [this](uint64_t tag, std::string_view line) { Answer(tag, line); };
  }

  // A static run of one node (group rank 0 of 1): muster's exit code.
  int RunStatic() {
    rdzv::Assignment node;
    node.group_rank = 0;
    node.group_world_size = 1;
    node.local_world_size = nproc_;
    node.world_size = nproc_;
    node.master_addr = "127.0.0.1";
    node.master_port = 0;
    Agent agent(io, spawner, options, plan, node, std::nullopt, {}, EnvOf({}), handled_signals);
    return Run(agent);
  }
  // An elastic run whose rendezvous `rendezvous` plays.
  int RunElastic(FakeRendezvous& rendezvous) {
    ElasticConfig elastic;
    elastic.host = "127.0.0.1";
    elastic.port = 29400;
    elastic.loopback_only = true;
    options.min_nodes = 1;
    options.max_nodes = 2;
    Agent agent(io, spawner, options, plan, std::nullopt, elastic, {}, EnvOf({}), handled_signals,
                nullptr, rendezvous.Factory());
    return Run(agent);
  }

  // "attempt=A rank=R" per spawn, from the environment each worker got.
  std::vector<std::string> Started() const {
    std::vector<std::string> lines;
    for (const auto& r : spawner.spawned) {
      lines.push_back("attempt=" + EnvValue(r, "TORCHELASTIC_RESTART_COUNT") +
                      " rank=" + EnvValue(r, "LOCAL_RANK"));
    }
    return lines;
  }
  std::vector<std::string> WorldSizes() const {
    std::vector<std::string> sizes;
    for (const auto& r : spawner.spawned) sizes.push_back(EnvValue(r, "WORLD_SIZE"));
    return sizes;
  }
  // The control lines sent to workers, without their '\n'.
  std::vector<std::string> ControlLines() const {
    std::vector<std::string> lines;
    for (const auto& [tag, line] : spawner.control)
      lines.push_back(line.substr(0, line.size() - 1));
    return lines;
  }

  // The worker of `attempt` and `local_rank`, which must run, exits with
  // `code` (its pipes close first, as a real one's do).
  void ExitWorker(int attempt, int local_rank, int code) {
    const uint64_t tag = WorkerGroup::MakeTag(static_cast<uint32_t>(attempt), local_rank);
    for (const auto& [pid, live_tag] : live_) {
      if (live_tag == tag) {
        Exit(pid, code << 8);
        return;
      }
    }
    FAIL("no running worker attempt=" << attempt << " local_rank=" << local_rank);
  }
  // The worker of `attempt` and `local_rank` writes `line` on its progress
  // pipe (a step: "42\n").
  void WriteProgress(int attempt, int local_rank, const std::string& line) {
    const uint64_t tag = WorkerGroup::MakeTag(static_cast<uint32_t>(attempt), local_rank);
    boost::asio::post(io, [this, tag, line] { spawner.events->OnProgress(tag, line); });
  }
  // The pid the spawner gave the `index`-th process it started.
  static pid_t PidOfSpawn(int index) { return static_cast<pid_t>(1000 + index); }

  boost::asio::io_context io;
  FakeSpawner spawner;
  // The signals the agent handles (muster stops the job on them).
  std::vector<int> handled_signals;
  // Each failure report the agent printed, as its follower asked for it.
  std::vector<ReportFailureLocally> reports;
  LaunchOptions options;
  LaunchPlan plan;
  std::function<WorkerScript(int attempt, int local_rank)> script;
  // Called once every local rank of an attempt was started.
  std::function<void(int attempt)> on_all_started;

 private:
  static std::string EnvValue(const SpawnRequest& r, const std::string& name) {
    for (const auto& entry : r.env) {
      if (entry.starts_with(name + "=")) return entry.substr(name.size() + 1);
    }
    return "?";
  }

  int Run(Agent& agent) {
    agent.ObserveFailureReports([this](const ReportFailureLocally& r) { reports.push_back(r); });
    boost::asio::steady_timer watchdog(io, std::chrono::seconds(20));
    bool timed_out = false;
    watchdog.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      timed_out = true;
      io.stop();
    });
    const int code = agent.Run();
    CHECK_FALSE(timed_out);
    return code;
  }

  void Play(const SpawnRequest& r, pid_t pid) {
    const int attempt = static_cast<int>(r.tag >> 32);
    const int local_rank = WorkerGroup::LocalRankOf(r.tag);
    const WorkerScript s = script(attempt, local_rank);
    live_[pid] = r.tag;
    scripts_[r.tag] = s;
    if (s.in_place) {
      Say(r.tag,
          control::Hello{.version = control::kProtocolVersion, .capabilities = {"in-place"}});
    }
    if (s.exit_code) Exit(pid, *s.exit_code << 8);
    if (++started_[attempt] == nproc_ && on_all_started) on_all_started(attempt);
  }

  void Say(uint64_t tag, const control::WorkerMessage& message) {
    const std::string line = control::FormatWorkerMessage(message) + "\n";
    boost::asio::post(io, [this, tag, line] { spawner.events->OnProgress(tag, line); });
  }

  // The process ends with raw wait status `wait_status`; its pipes close first.
  void Exit(pid_t pid, int wait_status) {
    const uint64_t tag = live_.at(pid);
    live_.erase(pid);
    boost::asio::post(io, [this, tag, pid, wait_status] {
      spawner.events->OnOutputClosed(tag, Stream::kStdout);
      spawner.events->OnOutputClosed(tag, Stream::kStderr);
      spawner.events->OnExit(tag, pid, wait_status);
    });
  }

  void Answer(uint64_t tag, std::string_view line) {
    control::AgentMessage message;
    REQUIRE(control::ParseAgentMessage(line.substr(0, line.size() - 1), message).ok());
    if (const auto* pause = std::get_if<control::Pause>(&message)) {
      if (scripts_[tag].refuses_pause) {
        Say(tag, control::Failed{pause->generation, "cannot"});
      } else {
        Say(tag, control::Ready{pause->generation});
      }
    } else if (const auto* join = std::get_if<control::Join>(&message)) {
      Say(tag, control::Joined{join->generation});
      // Once every survivor answered (their answers are queued first), the
      // training ends: every worker exits 0.
      boost::asio::post(io, [this] {
        boost::asio::post(io, [this] {
          while (!live_.empty()) Exit(live_.begin()->first, 0);
        });
      });
    }
  }

  int nproc_;
  std::map<pid_t, uint64_t> live_;  // processes that run, and their tags
  std::map<uint64_t, WorkerScript> scripts_;
  std::map<int, int> started_;  // processes started per attempt
};

}  // namespace muster::testing
