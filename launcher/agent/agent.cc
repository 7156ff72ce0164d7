#include "launcher/agent/agent.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/clock.h"
#include "launcher/output/output_routes.h"
#include "launcher/output/worker_output.h"
#include "launcher/plan/worker_env.h"
#include "launcher/process/warm_process.h"
#include "launcher/report/failure_report.h"
#include "launcher/report/root_cause_file.h"
#include "rendezvous/daemon/rendezvous_server.h"

namespace muster {
namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace {

// After the last worker exits, how long to wait for grandchildren that still
// hold its stdout/stderr before closing the pipes anyway.
constexpr auto kOutputDrainTimeout = std::chrono::milliseconds(500);

NodeMachine MachineFor(const LaunchOptions& options, bool elastic, int static_nodes) {
  const RecoveryPath path = DecideRecovery(options.recovery, elastic, static_nodes);
  const bool asked = options.recovery == LaunchOptions::Recovery::kInPlace;
  if (elastic) return NodeMachine(path, asked, ElasticFollower());
  return NodeMachine(path, asked, StaticFollower(options.max_restarts));
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

}  // namespace

Agent::Agent(asio::io_context& io, ProcessSpawner& spawner, LaunchOptions options, LaunchPlan plan,
             std::optional<rdzv::Assignment> static_assignment,
             std::optional<ElasticConfig> elastic, std::vector<std::string> inherited_env,
             EnvLookup env, std::vector<int> handled_signals, WarmProcess* warm,
             RendezvousLinkFactory connect_rendezvous)
    : options_(std::move(options)),
      plan_(std::move(plan)),
      inherited_env_(std::move(inherited_env)),
      env_(std::move(env)),
      host_(HostName()),
      io_(io),
      signals_(io_),
      timer_(io_),
      spawner_(spawner),
      warm_(warm),
      elastic_(std::move(elastic)),
      connect_rendezvous_(connect_rendezvous
                              ? std::move(connect_rendezvous)
                              : RendezvousLinkFactory([this](boost::asio::io_context& link_io,
                                                             rdzv::ClientOptions link_options,
                                                             rdzv::RendezvousClient::Callbacks cb) {
                                  return ConnectRendezvous(
                                      link_io, std::move(link_options), std::move(cb),
                                      elastic_ ? elastic_->tls_client : nullptr);
                                })),
      machine_(MachineFor(options_, elastic_.has_value(),
                          static_assignment ? static_assignment->group_world_size : 0)),
      outputs_(io_, options_),
      // A fixed --hang-timeout is the user's rule: one quick dump, no
      // window, so the kill comes at the timeout and not seconds later.
      hang_evidence_(io_, StackDumpSignal(),
                     options_.hang_auto ? HangEvidence::Timing{}
                                        : HangEvidence::Timing{std::chrono::milliseconds(150),
                                                               std::chrono::milliseconds(0)}),
      stragglers_(io_, host_),
      goodput_(Clock::now()) {
  spawner_.SetEvents(*this);
  if (static_assignment) node_ = std::move(*static_assignment);
  for (int sig : handled_signals) signals_.add(sig);
}

Agent::~Agent() = default;

void Agent::ReportGoodput() {
  const std::optional<rdzv::Goodput> goodput = goodput_.Finish(Clock::now());
  if (!goodput) return;  // no step was reported: nothing says when it trained
  auto seconds = [](std::chrono::milliseconds ms) {
    return fmt::format("{:.1f}", static_cast<double>(ms.count()) / 1000.0);
  };
  // The run's summary: printed whatever the log level, as the failure
  // report is.
  WriteOwnLine(STDERR_FILENO,
               fmt::format("muster: event=goodput ratio={:.3f} wall_s={} productive_s={} "
                           "to_first_step_s={} downtime_s={} redone_s={} tail_s={} attempts={}\n",
                           goodput->ratio(), seconds(goodput->wall), seconds(goodput->productive),
                           seconds(goodput->to_first_step), seconds(goodput->downtime),
                           seconds(goodput->redone), seconds(goodput->tail), goodput->attempts));
}

int Agent::Run() {
  // A console that goes away must not kill the agent (and with it, the job).
  std::signal(SIGPIPE, SIG_IGN);
  for (const auto& warning : plan_.warnings) spdlog::warn("{}", warning);
  if (Status s = StartHealthEndpoint(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  // It imports while the rendezvous forms and the store starts.
  StartWarmProcess();
  if (elastic_) return RunElastic();  // starts fault injection once it knows its role
  StartFaultInjection();
  return RunStatic();
}

bool Agent::WarmWorkersWanted() const {
  return warm_ != nullptr && !options_.no_python && !options_.no_warm_workers;
}

void Agent::StartWarmProcess() {
  if (!WarmWorkersWanted()) return;
  WarmSettings settings;
  settings.python = plan_.executable;
  settings.command.assign(plan_.argv.begin() + 1, plan_.argv.end());
  settings.env = MergeEnvironment(inherited_env_, NodeVariables(plan_.nproc_per_node, env_));
  settings.imports = options_.warm_imports;
  warm_->Start(std::move(settings));
}

void Agent::AfterWarmUp(std::function<void()> then) {
  if (warm_ == nullptr) {
    then();
    return;
  }
  // Workers wait for the warm process (their imports are its imports); a
  // signal that ends the run meanwhile leaves nothing to start.
  warm_->WhenSettled([this, then = std::move(then)] {
    if (!finished_) then();
  });
}

Status Agent::PrepareRunDirectory() {
  auto directory = RunDirectory::Create(options_, plan_.run_id);
  if (!directory.ok()) return directory.status();
  run_dir_ = std::move(directory).value();
  return Status::Ok();
}

Result<std::vector<WorkerSpec>> Agent::MakeWorkerSpecs(int attempt, const std::string& attempt_dir,
                                                       const std::vector<int>& local_ranks) {
  std::vector<WorkerSpec> specs;
  // Where a hang's NCCL flight-recorder dumps are asked for and written:
  // one place for the run (survivors kept in place keep their pipes).
  const bool watches_hangs = options_.hang_auto || options_.hang_timeout_s > 0;
  FlightRecorderSetup flight_recorder;
  if (watches_hangs) {
    flight_recorder = SetUpFlightRecorder(run_dir_.path(), inherited_env_);
    hang_evidence_.SetFlightRecorder(flight_recorder.files);
  }
  for (const int local_rank : local_ranks) {
    const std::string rank_dir = attempt_dir + "/" + std::to_string(local_rank);
    std::error_code ec;
    fs::create_directories(rank_dir, ec);
    if (ec) return Status::IoError("cannot create '" + rank_dir + "': " + ec.message());

    WorkerIdentity id;
    id.local_rank = local_rank;
    id.restart_count = attempt;  // TORCHELASTIC_RESTART_COUNT: static_follower.h
    id.max_restarts = options_.max_restarts;
    id.run_id = plan_.run_id;
    id.role = options_.role;
    id.error_file = rank_dir + "/error.json";
    // A file left by an earlier run in the same --log-dir must not be
    // reported as this run's error.
    fs::remove(id.error_file, ec);
    const WorkerLaunch launch = PlanWorker(plan_, local_rank);
    id.cuda_visible_devices = launch.cuda_visible_devices;
    id.virtual_local_rank = launch.virtual_local_rank;
    id.control_channel = machine_.recovers_in_place();

    WorkerSpec spec;
    spec.local_rank = local_rank;
    spec.global_rank = node_.global_rank_offset + local_rank;
    spec.error_file = id.error_file;
    spec.request.executable = plan_.executable;
    spec.request.argv = launch.argv;
    auto variables = WorkerVariables(node_, id, env_);
    variables["MUSTER_STACK_SIGNAL"] = std::to_string(StackDumpSignal());
    variables.insert(flight_recorder.variables.begin(), flight_recorder.variables.end());
    if (faults_) faults_->AddVariables(variables);
    spec.request.env = MergeEnvironment(inherited_env_, variables);
    spec.request.tag = WorkerGroup::MakeTag(static_cast<uint32_t>(attempt), local_rank);
    specs.push_back(std::move(spec));
  }
  return specs;
}

Status Agent::StartAttempt(int attempt, const std::optional<ArmInPlace>& in_place) {
  // Static membership: each restart meets a store with no key or connection
  // of an earlier attempt (torch >= 2.6 no longer prefixes keys by attempt).
  // The first attempt's store is new already, and other nodes' workers may
  // be connected to it. With several nodes, restarts are not coordinated
  // (as with torchrun's static backend): node 0 renews the store when its own
  // workers restart. Elastic runs renew it per generation (StartGeneration).
  if (!elastic_ && store_ && attempt > 0) store_->RenewForAttempt(attempt);
  std::vector<int> local_ranks(static_cast<size_t>(node_.local_world_size));
  for (int lr = 0; lr < node_.local_world_size; ++lr) local_ranks[static_cast<size_t>(lr)] = lr;
  outputs_.Clear();
  control_lines_.clear();
  auto specs = PrepareWorkers(attempt, local_ranks);
  if (!specs.ok()) return specs.status();
  hang_evidence_.Cancel();  // for the group this one replaces
  stragglers_.Reset(node_.global_rank_offset, node_.local_world_size);
  group_ = std::make_unique<WorkerGroup>(
      spawner_, static_cast<uint32_t>(attempt),
      std::chrono::milliseconds(static_cast<int64_t>(options_.shutdown_timeout_s * 1000)),
      std::chrono::milliseconds(static_cast<int64_t>(options_.hang_timeout_s * 1000)));
  if (options_.hang_auto) group_->EnableAutoHang(AutoHangRule{});
  settling_ = false;
  if (in_place) ArmInPlaceRecovery(*in_place);
  auto status = group_->Start(std::move(specs).value(), Clock::now());
  if (!status.ok()) return status;
  if (faults_) faults_->OnWorkersStarted();
  goodput_.OnAttemptStarted(Clock::now());
  // The attempt is the job's, as its workers see it: a node that joins a
  // running job starts at the job's attempt, not at 0.
  spdlog::info("started {} workers ranks={}..{} attempt={} (TORCHELASTIC_RESTART_COUNT={})",
               node_.local_world_size, node_.global_rank_offset,
               node_.global_rank_offset + node_.local_world_size - 1, attempt, attempt);
  return Status::Ok();
}

Result<std::vector<WorkerSpec>> Agent::PrepareWorkers(int attempt,
                                                      const std::vector<int>& local_ranks) {
  const std::string attempt_dir = run_dir_.AttemptDir(attempt);
  auto specs = MakeWorkerSpecs(attempt, attempt_dir, local_ranks);
  if (!specs.ok()) return specs.status();
  if (Status s = outputs_.Open(*specs, attempt_dir); !s.ok()) return s;
  return specs;
}

void Agent::WaitForSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    received_signal_ = sig;
    spdlog::info("received {}; stopping workers", SignalName(sig));
    Carry(machine_.OnSignal(sig));
    if (!finished_) WaitForSignal();
  });
}

void Agent::OnOutput(uint64_t tag, Stream stream, std::string_view bytes) {
  outputs_.Write(tag, stream, bytes);
}

void Agent::OnOutputClosed(uint64_t tag, Stream stream) {
  outputs_.Closed(tag, stream);
  if (settling_ && outputs_.all_closed()) Settle();
}

void Agent::OnProgress(uint64_t tag, std::string_view bytes) {
  if (!group_ || settling_) return;
  // A worker's first report can bring the deadline in; later ones only move
  // its own out, which the armed timer finds when it fires.
  // Whole lines only: a line split across two reads ("123 4", "5\n") is
  // read once complete, not as step 5. Any write still counts as progress.
  std::string lines;
  control_lines_[tag].Feed(bytes, [&](std::string_view line) { lines.append(line); });
  const ProgressReport report = ParseProgressReport(lines);
  if (report.stacks_fd) group_->OnDumpsStacks(tag, *report.stacks_fd);
  if (report.step >= 0) goodput_.OnNodeStep(group_->EveryWorkerStep(), Clock::now());
  if (report.compute_us) {
    stragglers_.OnCompute(node_.global_rank_offset + WorkerGroup::LocalRankOf(tag),
                          *report.compute_us);
  }
  if (group_->OnProgress(tag, report.step, Clock::now())) {
    ArmTimer();
  }
  // Elastic runs: the node's step rides on its next heartbeats (the slowest
  // worker's, so a few bytes per heartbeat whatever the number of workers).
  if (client_ && report.step >= 0) {
    if (const std::optional<uint64_t> step = group_->NodeStep()) client_->SetProgress(*step);
  }
  if (faults_)
    faults_->OnProgress(node_.global_rank_offset + WorkerGroup::LocalRankOf(tag), report);
  OnWorkerControl(tag, lines);
}

void Agent::OnProgressClosed(uint64_t tag) {
  // Only moves a hang deadline out: the armed timer finds nothing due.
  if (group_ && !settling_) group_->OnProgressClosed(tag);
}

void Agent::OnExit(uint64_t tag, pid_t pid, int wait_status) {
  if (!group_) return;
  const ExitStatus status = ExitStatus::FromWaitStatus(wait_status);
  spdlog::debug("worker exited tag={} pid={} {}", tag, pid, status.Describe());
  group_->OnExit(tag, status, Clock::now(), std::chrono::system_clock::now());
  AfterGroupEvent();
}

void Agent::ArmTimer() {
  const auto deadline = settling_ ? std::optional<Time>() : group_->deadline();
  if (!deadline) return;
  timer_.expires_at(*deadline);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !group_) return;
    group_->OnTick(Clock::now(), std::chrono::system_clock::now());
    AfterGroupEvent();
  });
}

void Agent::AfterGroupEvent() {
  AdvanceRecovery();
  // Paused for a recovery in place: not training until every rank steps again.
  if (group_->state() == WorkerGroup::State::kRecovering) {
    goodput_.OnAttemptEnded(Clock::now(), false);
  }
  if (!settling_ && group_->hang_evidence_wanted() && !hang_evidence_.busy()) GatherHangEvidence();
  if (settling_ || !group_->finished()) {
    ArmTimer();
    return;
  }
  // The attempt is over. Take down grandchildren of failed or stopped
  // workers, then give their output a moment to drain before deciding.
  if (group_->state() != WorkerGroup::State::kSucceeded) group_->KillAllGroups();
  goodput_.OnAttemptEnded(Clock::now(), group_->state() == WorkerGroup::State::kSucceeded);
  settling_ = true;
  machine_.OnWorkersGone();
  timer_.cancel();
  if (outputs_.all_closed()) {
    Settle();
    return;
  }
  timer_.expires_after(kOutputDrainTimeout);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && settling_) Settle();
  });
}

void Agent::Settle() {
  settling_ = false;
  timer_.cancel();
  // A grandchild may still hold the pipes: stop reading them regardless.
  outputs_.CloseAll([this](uint64_t tag) { spawner_.CloseOutput(tag); });
  if (finished_) return;
  const WorkersOutcome outcome = OutcomeOfGroup();
  Carry(machine_.OnWorkersSettled(outcome));
}

WorkersOutcome Agent::OutcomeOfGroup() const {
  WorkersOutcome outcome;
  outcome.state = group_->state();
  if (const auto& failures = group_->failures(); !failures.empty()) {
    outcome.root_cause_exit_code = failures.front().status.ShellCode();
    outcome.root_cause = failures.front().status.Describe();
  }
  return outcome;
}

void Agent::PrintFailureReport(const ReportFailureLocally& report) {
  const auto& failures = group_->failures();
  if (failures.empty()) return;
  local_root_cause_ = failures.front();
  ReportContext context{host_, report.restart_count, report.max_restarts,
                        report.restart_count < report.max_restarts, report.in_place};
  context.files_kept = run_dir_.kept();
  if (!options_.no_python) {
    context.interpreter = InterpreterText(options_, plan_);
  }
  for (const WorkerFailure& failure : failures) {
    if (const auto tail = outputs_.StderrTail(group_->TagFor(failure.local_rank))) {
      context.stderr_tails[failure.local_rank] = std::string(*tail);
    }
  }
  reported_job_end_ = !context.will_restart;
  WriteOwnLine(STDERR_FILENO, FormatFailureReport(failures, context));
  if (failure_report_observer_) failure_report_observer_(report);
}

void Agent::Finish(int exit_code) {
  // As torchrun's @record on its main: a job that failed because of this
  // node's workers hands the root cause to whoever asked for it.
  if (exit_code != 0 && received_signal_ == 0 && local_root_cause_) {
    CopyRootCauseErrorFile(env_, *local_root_cause_);
  }
  // Stopped by a signal, the run was cut short: no fault was missed.
  if (received_signal_ == 0) ReportUnfiredFaults();
  ReportGoodput();
  exit_code_ = exit_code;
  finished_ = true;
  if (client_) client_->Stop();
  signals_.cancel();
  timer_.cancel();
  if (faults_) faults_->Stop();
  hang_evidence_.Cancel();
  stragglers_.Stop();
  if (health_) health_->Stop();
  if (store_) store_->Stop();
  io_.stop();
}

}  // namespace muster
