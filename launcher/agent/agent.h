// Agent: runs this node's part of a job. It joins the rendezvous, hosts the
// worker store when this is the master node, starts one attempt of the
// workers after another (restarts), routes their output, forwards signals,
// and turns the outcome into muster's exit code.
//
// Single-threaded: everything happens on one Asio io_context, on the thread
// that calls Run() (which must be the thread that lives longest: workers are
// tied to it with PR_SET_PDEATHSIG). Every process it starts or signals goes
// through the ProcessSpawner it is given.
//
// What the run does next is never the agent's own decision: NodeMachine
// (node_machine.h) decides every start, restart, recovery in place and the
// exit code, in both modes; the agent feeds it every event and carries out
// what it returns (Carry, agent_actions.cc), keeping only the mechanics
// (processes, pipes, timers, the store, the run directory).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent/fault_rehearsal.h"
#include "launcher/agent/hang_evidence.h"
#include "launcher/agent/health_endpoint.h"
#include "launcher/agent/rendezvous_link.h"
#include "launcher/agent/run_directory.h"
#include "launcher/agent/straggler_watch.h"
#include "launcher/agent/worker_store_host.h"
#include "launcher/decide/node_machine.h"
#include "launcher/output/line_splitter.h"
#include "launcher/output/output_routes.h"
#include "launcher/output/output_tail.h"
#include "launcher/output/progress_report.h"
#include "launcher/output/worker_outputs.h"
#include "launcher/plan/launch_options.h"
#include "launcher/plan/launch_plan.h"
#include "launcher/process/process_spawner.h"
#include "launcher/process/worker_group.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/goodput.h"

namespace muster {
class WarmProcess;
namespace rdzv {
class RendezvousServer;
}

class Agent final : public SpawnEvents {
 public:
  // `handled_signals`: the signals that stop the job; each is forwarded to
  // every worker's process group (torchrun's --signals-to-handle).
  // Exactly one of `static_assignment` and `elastic` is set. Static: this
  // node's one assignment, and local failures restart local workers.
  // Elastic: the rendezvous daemon decides every generation.
  // `io` runs everything (Run() runs it); `spawner` starts and signals the
  // workers and delivers their events to this agent (the agent calls
  // SetEvents). REQUIRES: both outlive the agent, and `spawner` delivers
  // events only from `io`, so none arrives outside Run(). `warm`, when
  // given, is the spawner's warm process (warm_process.h): the agent starts
  // it (unless --no-python or --no-warm-workers) and starts workers once it
  // is ready or unusable. REQUIRES: it outlives the agent.
  // `connect_rendezvous` makes the elastic mode's rendezvous client
  // (ConnectRendezvous when empty; tests give a fake).
  Agent(boost::asio::io_context& io, ProcessSpawner& spawner, LaunchOptions options,
        LaunchPlan plan, std::optional<rdzv::Assignment> static_assignment,
        std::optional<ElasticConfig> elastic, std::vector<std::string> inherited_env, EnvLookup env,
        std::vector<int> handled_signals, WarmProcess* warm = nullptr,
        RendezvousLinkFactory connect_rendezvous = {});
  ~Agent() override;

  // Runs the job to completion. Returns muster's exit code: 0 on success, the
  // root-cause worker's code (128+signal when killed) on failure, 128+signal
  // when muster itself was signalled, 1 when the job could not be set up.
  int Run();

  void OnOutput(uint64_t tag, Stream stream, std::string_view bytes) override;
  void OnOutputClosed(uint64_t tag, Stream stream) override;
  void OnExit(uint64_t tag, pid_t pid, int wait_status) override;
  void OnProgress(uint64_t tag, std::string_view bytes) override;
  void OnProgressClosed(uint64_t tag) override;

  // Calls `observer` with each failure report this agent prints to stderr
  // (ReportFailureLocally with a failed worker to report), after printing it.
  void ObserveFailureReports(std::function<void(const ReportFailureLocally&)> observer) {
    failure_report_observer_ = std::move(observer);
  }

 private:
  int RunStatic();
  int RunElastic();
  // Carries out `actions` in order (agent_actions.cc), each through one
  // handler per action type.
  void Carry(const NodeActions& actions);
  // The attempt (static_follower.h, "Counters") of the workers that run
  // here: NodeMachine::attempt().
  int attempt() const { return machine_.attempt(); }
  // ReportFailureLocally, in both modes: keeps the group's first failure as
  // this node's root cause and prints the failure report (nothing when no
  // worker failed on its own).
  void PrintFailureReport(const ReportFailureLocally& report);
  // Both modes: the outcome of the attempt whose output drained.
  WorkersOutcome OutcomeOfGroup() const;
  void StartGeneration(const LaunchGeneration& start);
  // Makes `assignment` this node's place (the client, attempt and store
  // follow it) and logs it; StartGeneration and RejoinGeneration go on from
  // there.
  void EnterGeneration(const rdzv::Assignment& assignment, bool in_place);
  void StopGroup(int sig);
  // ExplainNotInPlace: a failure restarts every worker although this node
  // recovers in place; says which workers never announced it.
  void LogWhyNotInPlace(const ExplainNotInPlace& explain) const;
  // Makes this run's directory (run_directory.h).
  Status PrepareRunDirectory();
  // Python workers are to fork from the warm process (they may still start
  // cold when it turns out unfit).
  bool WarmWorkersWanted() const;
  // Starts the warm process for Python workers, unless they start cold.
  void StartWarmProcess();
  // Runs `then` once the warm process is ready or unusable (at once without
  // one), unless the run finished meanwhile.
  void AfterWarmUp(std::function<void()> then);
  // Starts every local worker as attempt `attempt`, their recovery in place
  // armed as `in_place` says (unset: not armed).
  Status StartAttempt(int attempt, const std::optional<ArmInPlace>& in_place);
  // The specs of `local_ranks`' workers in attempt `attempt`, tagged.
  Result<std::vector<WorkerSpec>> MakeWorkerSpecs(int attempt, const std::string& attempt_dir,
                                                  const std::vector<int>& local_ranks);
  // The specs of `local_ranks`' workers in attempt `attempt`, their output
  // routes open (an attempt's processes may start in several batches: in
  // place, the failed ranks).
  Result<std::vector<WorkerSpec>> PrepareWorkers(int attempt, const std::vector<int>& local_ranks);

  // In-place recovery (agent_in_place.cc; both modes, when the machine
  // recovers in place): the group pauses the survivors of a failure; once
  // they are paused the agent renews the store, rejoins them (static: as the
  // next attempt; elastic: into the next generation) and starts the failed
  // ranks again. ArmInPlace: arms the group for the next failure.
  void ArmInPlaceRecovery(const ArmInPlace& arm);
  // The control messages among whole lines a worker wrote on its progress pipe.
  void OnWorkerControl(uint64_t tag, std::string_view lines);
  // The machine's steps for the group's state now (after any group event).
  void AdvanceRecovery();
  void AnnouncePauseBegan(const AnnouncePause& pause) const;
  void AnnounceEnd(const AnnounceRecoveryEnded& end) const;
  // Static: StaticFollower's StartReplacements and RejoinAttempt.
  void StartReplacementsEarly(int attempt);
  void RejoinAttemptInPlace(int attempt);
  // Elastic: the follower's RejoinWorkers.
  void RejoinGeneration(const rdzv::Assignment& assignment);
  // Both: tells each survivor its place in `generation` (node_ already set),
  // as attempt `attempt`, and starts the failed ranks again.
  void RejoinSurvivors(uint64_t generation, int attempt);
  void WaitForSignal();
  void ArmTimer();
  void AfterGroupEvent();
  // The group suspects a hang: gather the evidence (hang_evidence.h), then
  // give it the verdict (agent_hang.cc).
  void GatherHangEvidence();
  void Settle();
  void Finish(int exit_code);
  // The run's goodput (goodput.h), one line on stderr, when steps were
  // reported.
  void ReportGoodput();

  // The health endpoint (agent_health.cc, health_endpoint.h; --health-port):
  // nothing runs without one. An error names the setting and the address.
  Status StartHealthEndpoint();

  // Fault injection (agent_faults.cc): all idle when options_.fault_plan is
  // empty.
  void StartFaultInjection();
  // At the end of the run: a warning for each planned fault that never fired.
  void ReportUnfiredFaults() const;
  // Where this node's workers run now; nullopt when none do.
  std::optional<FaultPlacement> CurrentPlacement() const;

  LaunchOptions options_;
  LaunchPlan plan_;
  std::vector<std::string> inherited_env_;
  EnvLookup env_;
  std::string host_;

  boost::asio::io_context& io_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer timer_;
  ProcessSpawner& spawner_;
  WarmProcess* warm_;
  std::unique_ptr<WorkerStoreHost> store_;  // the worker store, where this node hosts one

  std::optional<ElasticConfig> elastic_;
  std::unique_ptr<rdzv::RendezvousServer> embedded_daemon_;
  RendezvousLinkFactory connect_rendezvous_;
  std::unique_ptr<RendezvousLink> client_;
  NodeMachine machine_;
  // This node's root-cause failure, if any: muster's exit code and the
  // launcher's TORCHELASTIC_ERROR_FILE come from it.
  std::optional<WorkerFailure> local_root_cause_;
  // This node's failure report said the job ends here (no restarts left):
  // the rendezvous's news of that end repeats it and is not printed again.
  bool reported_job_end_ = false;
  std::function<void(const ReportFailureLocally&)> failure_report_observer_;

  rdzv::Assignment node_;  // this node's place in the current generation
  std::unique_ptr<WorkerGroup> group_;
  WorkerOutputs outputs_;  // the workers' output routes and stderr tails
  bool settling_ = false;
  int received_signal_ = 0;
  int exit_code_ = 0;
  bool finished_ = false;  // Finish() ran: the loop is stopping

  RunDirectory run_dir_;
  // Each worker's progress pipe, cut into whole lines (steps, control messages).
  std::map<uint64_t, LineSplitter> control_lines_;

  std::unique_ptr<FaultRehearsal> faults_;  // null without --inject

  std::unique_ptr<HealthEndpoint> health_;  // null without --health-port
  HangEvidence hang_evidence_;              // gathered when the group suspects a hang
  StragglerWatch stragglers_;               // the slow rank among this node's, by compute time
  rdzv::GoodputMeter goodput_;              // how much of the run trained, for its summary
};

}  // namespace muster
