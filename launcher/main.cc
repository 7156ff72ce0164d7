// muster: the per-node launch agent, a drop-in replacement for torchrun.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "common/log_level.h"
#include "launcher/agent/agent.h"
#include "launcher/cli/command_line.h"
#include "launcher/output/console_log_sink.h"
#include "launcher/plan/dry_run.h"
#include "launcher/plan/launch_plan.h"
#include "launcher/plan/python_package.h"
#include "launcher/plan/worker_env.h"
#include "launcher/process/command_check.h"
#include "launcher/process/exit_status.h"
#include "launcher/process/posix_spawner.h"
#include "launcher/process/warm_process.h"
#include "launcher/report/status_command.h"

extern char** environ;

namespace {

void SetUpLogging(const muster::EnvLookup& env) {
  // Unsynchronized sink: muster logs from one thread only.
  auto logger =
      std::make_shared<spdlog::logger>("muster", std::make_shared<muster::ConsoleLogSink>());
  logger->set_pattern("muster: %l: %v");
  // Quiet by default, as a launcher should be: a successful run prints only
  // its workers' output; warnings and errors always show.
  // MUSTER_LOG_LEVEL=info tells each step (--help says so).
  muster::SetLogLevelFromEnv(*logger, env, spdlog::level::warn);
  spdlog::set_default_logger(logger);
}

}  // namespace

int main(int argc, char** argv) {
  const muster::EnvLookup env = muster::cli::SystemEnv();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "status") {
    return muster::RunStatusCommand(std::vector<std::string>(args.begin() + 1, args.end()), env);
  }
  // `muster launch`: torch.distributed.launch's interface (--local_rank=N).
  auto mode = muster::cli::CommandMode::kRun;
  if (!args.empty() && args[0] == "launch") {
    mode = muster::cli::CommandMode::kLaunch;
    args.erase(args.begin());
  }
  muster::cli::CliOutcome outcome = muster::cli::ParseLaunchCommandLine(args, env, mode);
  if (!outcome.options) {
    (outcome.exit_code == 0 ? std::cout : std::cerr)
        << outcome.text << (outcome.text.ends_with('\n') ? "" : "\n");
    return outcome.exit_code;
  }
  SetUpLogging(env);
  if (!outcome.extras.logs_specs.empty()) {
    spdlog::info("--logs-specs {}: no effect (a torchrun.logs_specs Python entry point)",
                 outcome.extras.logs_specs);
  }

  auto plan = muster::MakeLaunchPlan(*outcome.options, env, muster::ThisMachine(env));
  if (!plan.ok()) {
    std::cerr << "muster: error: " << plan.status().message() << "\n";
    return 2;
  }
  auto elastic = muster::MakeElasticConfig(*outcome.options);
  if (!elastic.ok()) {
    std::cerr << "muster: error: " << elastic.status().message() << "\n";
    return 2;
  }
  std::optional<muster::rdzv::Assignment> static_assignment;
  if (!*elastic) {
    auto assignment = muster::StaticAssignment(*outcome.options, plan->nproc_per_node);
    if (!assignment.ok()) {
      std::cerr << "muster: error: " << assignment.status().message() << "\n";
      return 2;
    }
    static_assignment = std::move(assignment).value();
  }
  if (outcome.extras.dry_run) {
    std::cout << muster::DryRunReport(*outcome.options, outcome.extras, outcome.given, *plan,
                                      *elastic);
    return 0;
  }
  // A command that cannot work fails here, with nothing started. Not under
  // --dry-run, which shows what would run wherever it is asked.
  std::error_code cwd_error;
  const std::string working_dir = std::filesystem::current_path(cwd_error).string();
  if (auto command = muster::CheckWorkerCommand(*outcome.options, *plan, working_dir,
                                                muster::ThisMachineProbe());
      !command.ok()) {
    std::cerr << "muster: error: " << command.message() << "\n";
    return 2;
  }
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) inherited.emplace_back(*e);
  // As torchrun sets them in its own environment: the signals its workers'
  // torch forwards, and where `import muster` finds this build's package.
  inherited = muster::MergeEnvironment(inherited,
                                       muster::AgentVariables(outcome.extras.signals_to_handle,
                                                              muster::ThisPythonPackageDir(), env));

  std::vector<int> handled_signals;
  for (const auto& name : outcome.extras.signals_to_handle) {
    if (int sig = muster::SignalNumber(name)) handled_signals.push_back(sig);
  }
  // The agent runs on this thread's loop; the spawner outlives it, so its
  // destructor, run after the agent's, kills any worker left behind.
  boost::asio::io_context io;
  muster::WarmProcess warm(io);
  muster::PosixSpawner spawner(io);
  spawner.SetWarmProcess(&warm);
  muster::Agent agent(io, spawner, std::move(*outcome.options), std::move(plan).value(),
                      std::move(static_assignment), std::move(*elastic), std::move(inherited), env,
                      std::move(handled_signals), &warm);
  return agent.Run();
}
