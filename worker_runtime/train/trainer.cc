#include "worker_runtime/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/checkpoint/checkpoint_directory.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/comm/generation_communicator.h"
#include "worker_runtime/control/control_channel.h"
#include "worker_runtime/fault/worker_faults.h"
#include "worker_runtime/progress/progress_reporter.h"
#include "worker_runtime/store/hosted_store.h"
#include "worker_runtime/store/store_client.h"
#include "worker_runtime/train/live_state.h"
#include "worker_runtime/train/mlp.h"
#include "worker_runtime/train/progress.h"
#include "worker_runtime/train/replica.h"
#include "worker_runtime/train/replica_factory.h"
#include "worker_runtime/train/resume.h"
#include "worker_runtime/train/sample_order.h"
#include "worker_runtime/train/synthetic_dataset.h"

namespace muster::train {
namespace {

using runtime::CommError;
using runtime::Communicator;
using runtime::Context;

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;

// The exit status of an error that is not a collective's (trainer.h):
// the input is at fault (flags, environment, a checkpoint of another model)
// or something else failed (I/O, ...).
int ExitCodeFor(const Status& status) {
  return status.IsInvalidArgument() ? kExitBadInput : kExitFailure;
}

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "muster-train: %s\n", message.c_str());
  return code;
}

int Fail(const Status& status) { return Fail(ExitCodeFor(status), status.message()); }

Status WriteParameters(const std::string& path, const std::vector<float>& values) {
  // Raw little-endian float32; this machine's float is IEEE-754 little-endian.
  static_assert(sizeof(float) == 4);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  out.close();
  if (!out) return Status::IoError("--out '" + path + "': cannot write");
  return Status::Ok();
}

// How one generation of training ended.
struct GenerationEnd {
  enum class Kind {
    kExit,   // the process exits with `exit_code` (done, or failed for good)
    kLeave,  // leave the generation and wait for the next (in place)
  };
  Kind kind = Kind::kExit;
  int exit_code = 0;
  // kLeave: the agent's pause, when it asked; none when a collective failed
  // (the agent's pause is then still to come).
  std::optional<control::Pause> pause;
};

GenerationEnd Exit(int code) {
  return {.kind = GenerationEnd::Kind::kExit, .exit_code = code, .pause = std::nullopt};
}

// The training loop of one generation, alike for every replica (replica.h):
// the sample order, resume, checkpoints, logging and --out are host-side and
// written once. `state` outlives the generation: a worker that recovers in
// place carries it into the next one.
class Trainer {
 public:
  // `watch`: set when this worker told muster it recovers in place; it
  // says when muster has written on `channel`.
  Trainer(const TrainOptions& o, const Context& ctx, ModelReplica& replica,
          runtime::WorkerFaults& faults, runtime::ControlChannel& channel, TrainState& state,
          const runtime::ControlWatch* watch)
      : o_(o),
        ctx_(ctx),
        data_(o.seed, o.dataset_size, o.features, o.classes),
        order_(o.seed, o.dataset_size),
        share_(ShareOf(static_cast<size_t>(o.global_batch), ctx.world_size, ctx.rank)),
        replica_(replica),
        faults_(faults),
        channel_(channel),
        state_(state),
        watch_(watch) {}

  // `holds_live_state`: `state` holds this process's training state from
  // the generation it left. `joining`: the generation the agent told it to
  // join, answered with joined once the state agreement is done.
  // Sets `state_consistent` once the replica holds the generation's state
  // (from then on a pause keeps the replica's state, not the old copy).
  GenerationEnd Run(bool holds_live_state, std::optional<uint64_t> joining,
                    bool& state_consistent) {
    auto point = AgreeOnStart(o_, ctx_.rank, ctx_.world_size, replica_, state_, holds_live_state);
    if (!point.ok()) return Exit(Fail(point.status()));
    state_consistent = true;
    if (joining) {
      if (Status s = channel_.Say(control::Joined{*joining}); !s.ok()) {
        return Exit(Fail(runtime::kExitCommFailure, s.message()));
      }
    }
    if (ctx_.rank == 0) PrintStart(*point);
    if (Status s = CheckpointMissedSave(*point); !s.ok()) return Exit(Fail(s));

    Progress progress(ctx_.rank == 0, o_.steps, o_.log_every);
    const size_t features = static_cast<size_t>(o_.features);
    std::vector<float> x(share_.count * features);
    std::vector<int> labels(share_.count);
    std::vector<size_t> indices;
    double last_loss = point->last_loss;
    const uint64_t total_steps = static_cast<uint64_t>(o_.steps);
    std::vector<double> step_ms;
    step_ms.reserve(state_.step < total_steps ? total_steps - state_.step : 0);
    for (; state_.step < total_steps;) {
      // Between steps: only when muster wrote (no system call per step).
      if (watch_ != nullptr && watch_->fired()) {
        if (std::optional<GenerationEnd> end = Listen(std::chrono::milliseconds(0))) return *end;
      }
      const auto started = std::chrono::steady_clock::now();
      // This rank's share of the step's global positions (sample_order.h).
      order_.StepIndices(state_.step, static_cast<size_t>(o_.global_batch), share_, indices);
      for (size_t j = 0; j < share_.count; ++j) {
        labels[j] = data_.Sample(indices[j], std::span<float>(x).subspan(j * features, features));
      }

      // Each rank's gradient is the SUM of its samples' gradients over the
      // global batch (not its own average): summed across ranks it is the
      // global batch's mean however unevenly the batch is split, a rank with
      // no sample adding zero.
      const BatchStats stats = replica_.Step(x, labels, 1.0f / static_cast<float>(o_.global_batch));
      // The update is applied: the step is done, whatever fails after it
      // (the live-state agreement counts on it).
      ++state_.step;

      // Loss and accuracy cost a collective of their own: averaged only on
      // steps that are reported, the last one, and those checkpointed (whose
      // checkpoint keeps the loss). The choice depends on flags and the step
      // only, so every rank makes it alike.
      const uint64_t done = state_.step;
      const bool checkpoint = !o_.checkpoint_dir.empty() && o_.checkpoint_every > 0 &&
                              done % static_cast<uint64_t>(o_.checkpoint_every) == 0;
      const bool report = progress.Reports(done);
      if (report || checkpoint || done == total_steps) {
        double totals[2] = {stats.loss_sum, stats.correct};
        replica_.AllReduceSum(totals);
        last_loss = totals[0] / o_.global_batch;
        if (report) progress.Report(done, last_loss, totals[1] / o_.global_batch);
      }
      progress_reporter_.Report(static_cast<int64_t>(state_.step));
      faults_.AtStep(state_.step, progress_reporter_);

      if (checkpoint && ctx_.rank == 0) {
        if (Status s = Save(last_loss); !s.ok()) return Exit(Fail(s));
        if (faults_.CorruptsCheckpointAt(state_.step, progress_reporter_)) {
          const std::string path =
              o_.checkpoint_dir + "/" + runtime::CheckpointFileName(state_.step);
          if (Status s = runtime::DamageFile(path); !s.ok()) return Exit(Fail(s));
        }
      }
      if (o_.step_sleep_ms > 0) {
        // A paused worker must not sleep through its pause: the sleep is a
        // wait for the agent's next message.
        const std::chrono::milliseconds sleep(o_.step_sleep_ms);
        if (watch_ == nullptr) {
          std::this_thread::sleep_for(sleep);
        } else if (std::optional<GenerationEnd> end = Listen(sleep)) {
          return *end;
        }
      }
      step_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
              .count());
    }
    progress.Done();

    if (ctx_.rank == 0 && !o_.out_path.empty()) {
      replica_.GetState(state_.params, state_.momentum);
      if (Status s = WriteParameters(o_.out_path, replica_.layout().TorchOrder(state_.params));
          !s.ok()) {
        return Exit(Fail(s));
      }
    }
    if (ctx_.rank == 0) {
      if (!step_ms.empty()) {
        std::nth_element(step_ms.begin(), step_ms.begin() + step_ms.size() / 2, step_ms.end());
        std::printf(
            "step time median %.3f ms over %zu steps (world size %d, batch %zu on rank 0)\n",
            step_ms[step_ms.size() / 2], step_ms.size(), ctx_.world_size, share_.count);
      }
      std::printf("final loss %.6f\n", last_loss);
      std::fflush(stdout);
    }
    return Exit(0);
  }

 private:
  void PrintStart(const ResumePoint& point) const {
    if (point.live_source >= 0) {
      std::printf("recovered in place at step %llu of %d (state from rank %d, world size %d)\n",
                  static_cast<unsigned long long>(state_.step), o_.steps, point.live_source,
                  ctx_.world_size);
      std::fflush(stdout);
      return;
    }
    std::printf("world size %d, global batch %d: %s\n", ctx_.world_size, o_.global_batch,
                DescribeSplit(static_cast<size_t>(o_.global_batch), ctx_.world_size).c_str());
    if (point.resumed) {
      std::printf("resumed from step %llu of %d", static_cast<unsigned long long>(state_.step),
                  o_.steps);
      if (point.written_world_size > 0) {
        std::printf(" (checkpoint written at world size %d)", point.written_world_size);
      }
      std::printf("\n");
    }
  }

  // A generation formed in place at a checkpoint step may be going on after
  // the save of that step failed (rank 0 died in it, or its disk was full):
  // rank 0 saves it now, so a whole-job loss still loses at most one
  // interval. Resumed or fresh starts need nothing (the step was read back).
  Status CheckpointMissedSave(const ResumePoint& point) {
    if (point.live_source < 0 || ctx_.rank != 0 || o_.checkpoint_dir.empty() ||
        o_.checkpoint_every <= 0 || state_.step == 0 ||
        state_.step % static_cast<uint64_t>(o_.checkpoint_every) != 0) {
      return Status::Ok();
    }
    return Save(point.last_loss);
  }

  // Writes the checkpoint of the steps done (rank 0). A worker that
  // recovers in place keeps training when the write fails (a full disk, say):
  // its state is alive, and the next interval writes again; otherwise the
  // failure is the process's, and the restart resumes from an older one.
  Status Save(double last_loss) {
    replica_.GetState(state_.params, state_.momentum);
    Status s = SaveCheckpoint(o_, ctx_.world_size, state_, last_loss);
    if (s.ok() || watch_ == nullptr) return s;
    std::fprintf(
        stderr,
        "muster-train: %s; training goes on in place, the next checkpoint is due at "
        "step %llu\n",
        s.message().c_str(),
        static_cast<unsigned long long>(state_.step + static_cast<uint64_t>(o_.checkpoint_every)));
    return Status::Ok();
  }

  // Reads the agent's messages for up to `wait`: a pause ends the
  // generation; a stop exits; anything else is logged and ignored.
  std::optional<GenerationEnd> Listen(std::chrono::milliseconds wait) {
    std::optional<control::AgentMessage> message;
    if (Status s = channel_.Receive(wait, message); !s.ok()) {
      std::fprintf(stderr, "muster-train: %s\n", s.message().c_str());
      return std::nullopt;
    }
    if (!message) return std::nullopt;
    if (const auto* pause = std::get_if<control::Pause>(&*message)) {
      return GenerationEnd{.kind = GenerationEnd::Kind::kLeave, .exit_code = 0, .pause = *pause};
    }
    if (std::holds_alternative<control::Stop>(*message)) {
      return Exit(Fail(runtime::kExitCommFailure, "stopped by muster"));
    }
    std::fprintf(stderr, "muster-train: ignored '%s' while training\n",
                 control::FormatAgentMessage(*message).c_str());
    return std::nullopt;
  }

  const TrainOptions& o_;
  const Context& ctx_;
  SyntheticDataset data_;
  SampleOrder order_;
  const Share share_;  // of every global batch, this rank's
  ModelReplica& replica_;
  runtime::WorkerFaults& faults_;
  runtime::ControlChannel& channel_;
  TrainState& state_;
  const runtime::ControlWatch* const watch_;  // null: not in place
  // Each finished step tells muster's hang detection this rank still moves.
  const runtime::ProgressReporter progress_reporter_ = runtime::ProgressReporter::FromProcessEnv();
};

// What a generation is formed from: this worker's place in it and the store
// namespace of its keys. After a join, ctx's own generation (a restart
// count) is left as it was: nothing reads it but StoreNamespace(), which
// `store_prefix` replaces.
struct Membership {
  Context ctx;
  std::string store_prefix;         // ends with '/'
  std::optional<uint64_t> joining;  // set when the agent told this worker to join
};

// Everything one generation needs that lives outside it.
struct WorkerLife {
  const TrainOptions& options;
  runtime::Backend backend;
  std::chrono::milliseconds timeout;
  runtime::WorkerFaults& faults;
  runtime::ControlChannel& channel;
  bool in_place = false;  // told the agent it recovers in place
  // In place with a backend whose communicators shrink (NCCL): every
  // generation agrees on shrinking the last one's or creating anew.
  bool shrinks_communicators = false;
  std::optional<runtime::KeptCommunicator> kept_comm;  // the last generation's
  TrainState state;
  bool holds_live_state = false;
};

GenerationEnd LeaveAfter(WorkerLife& life, const std::string& why) {
  if (!life.in_place) return Exit(Fail(runtime::kExitCommFailure, why));
  std::fprintf(stderr, "muster-train: %s; waiting for muster to recover in place\n", why.c_str());
  return {.kind = GenerationEnd::Kind::kLeave, .exit_code = 0, .pause = std::nullopt};
}

// Forms the generation `m` describes, runs it and tears it down: the
// communicator, its store connection and the replica are the generation's.
GenerationEnd RunGeneration(WorkerLife& life, const Membership& m) {
  const Context& ctx = m.ctx;
  // A generation this worker was told to join that cannot form (its store
  // closed, a peer gone) ended before every rank got there: a node died
  // while they joined. That is no failure of this worker's: it waits, as
  // after a failed collective, for muster's pause out of that generation
  // into the next (control/PROTOCOL.md); muster's join bound ends the wait
  // when none comes. A new process has no state to keep: it exits, and
  // muster starts its rank again.
  const auto not_formed = [&](const std::string& why) {
    if (!m.joining) return Exit(Fail(runtime::kExitCommFailure, why));
    return LeaveAfter(life, "generation " + std::to_string(*m.joining) + " did not form (rank " +
                                std::to_string(ctx.rank) + "): " + why);
  };
  std::unique_ptr<runtime::StoreClient> store;  // one rank needs none
  if (ctx.world_size > 1) {
    auto connected = runtime::StoreClient::Connect({.host = ctx.master_addr,
                                                    .port = ctx.master_port,
                                                    .prefix = m.store_prefix + "train/",
                                                    .timeout = life.timeout});
    if (!connected.ok()) return not_formed(connected.status().message());
    store = std::move(connected).value();
  }
  // The request is resolved there (backend_choice.h): "nccl" in a build
  // without NCCL, or with no GPU visible, is refused as a bad flag with the
  // reason. The replica then follows the backend it got.
  auto formed = runtime::FormGenerationCommunicator(
      ctx, store.get(),
      {.backend = life.backend, .timeout = life.timeout, .recoverable = life.shrinks_communicators},
      life.shrinks_communicators, std::exchange(life.kept_comm, std::nullopt));
  if (!formed.ok()) {
    const Status& s = formed.status();
    if (s.IsInvalidArgument()) return Exit(Fail(s));
    return not_formed(s.message());
  }
  if (life.shrinks_communicators) {
    const runtime::CommunicatorPlan& plan = formed->plan;
    std::fprintf(stderr, "muster-train: rank %d: communicator %s in %lld ms%s%s\n", ctx.rank,
                 plan.kind == runtime::CommunicatorPlan::Kind::kShrink ? "shrunk" : "created",
                 static_cast<long long>(formed->took.count()), plan.why.empty() ? "" : " (",
                 plan.why.empty() ? "" : (plan.why + ")").c_str());
  }
  std::unique_ptr<Communicator> comm = std::move(formed->comm);

  // A pause that comes while a collective waits on a silent peer (a host
  // whose link is down) interrupts it; the generation then ends as below.
  std::optional<runtime::ControlWatch> watch;
  if (life.in_place) watch.emplace(life.channel, [&comm] { comm->Interrupt(); });
  std::unique_ptr<ModelReplica> replica;
  bool state_consistent = false;
  // On leaving in place, the replica's state is kept for the next
  // generation: it is consistent whenever no step is half applied (an
  // update follows every bucket's sum, so a failed step changed nothing).
  // So is a communicator that can shrink into the next one (a failed one
  // was revoked, not freed); the watch, which interrupts it, stops first.
  const auto keep_state = [&] {
    if (life.shrinks_communicators) {
      watch.reset();
      life.kept_comm = runtime::KeepForShrink(comm, m.store_prefix);
    }
    if (!replica || !state_consistent) return;
    replica->GetState(life.state.params, life.state.momentum);
    life.holds_live_state = true;
  };
  try {
    auto made = CreateReplica(*comm, ReplicaOptionsFor(life.options));
    if (!made.ok()) return Exit(Fail(made.status()));
    replica = std::move(made).value();
    if (life.state.params.empty()) {
      life.state.params.resize(replica->parameter_count());
      life.state.momentum.assign(replica->parameter_count(), 0.0f);
    }
    Trainer trainer(life.options, ctx, *replica, life.faults, life.channel, life.state,
                    watch ? &*watch : nullptr);
    GenerationEnd end = trainer.Run(life.holds_live_state, m.joining, state_consistent);
    if (end.kind == GenerationEnd::Kind::kLeave) keep_state();
    return end;
  } catch (const CommError& e) {
    // A bad argument is this program's fault: a restart would repeat it.
    if (e.kind() == CommError::Kind::kInvalidArgument) {
      comm->Abort();
      return Exit(Fail(kExitFailure, std::string("a collective was called wrongly (rank ") +
                                         std::to_string(ctx.rank) + "): " + e.what()));
    }
    keep_state();
    if (comm) comm->Abort();
    return LeaveAfter(life,
                      std::string("a collective failed (rank ") + std::to_string(ctx.rank) +
                          "): " + e.what() +
                          (life.in_place ? "" : "; exiting for the launcher to restart the job"));
  } catch (const DeviceError& e) {
    // The peers' collectives fail or time out without this rank; aborting
    // first keeps the communicator's teardown from waiting on them.
    comm->Abort();
    return Exit(Fail(kExitFailure, std::string("a GPU call failed (rank ") +
                                       std::to_string(ctx.rank) + "): " + e.what()));
  }
}

// Between generations, in place: answers the agent's pause (waiting for it
// when a failed collective came first) and waits for its join. Returns the
// next membership, or the exit code when the agent stops this worker, goes
// away or says nothing within the timeout (the restart path takes over).
std::variant<Membership, int> AwaitJoin(WorkerLife& life, const Membership& left,
                                        std::optional<control::Pause> pause) {
  const auto give_up = [](const std::string& why) {
    return Fail(runtime::kExitCommFailure, why + "; exiting for the launcher to restart it");
  };
  const auto deadline = std::chrono::steady_clock::now() + life.timeout;
  if (pause) {
    if (Status s = life.channel.Say(control::Ready{pause->generation}); !s.ok()) {
      return give_up(s.message());
    }
  }
  while (true) {
    const auto left_ms =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left_ms.count() <= 0) return give_up("muster did not recover this worker in place in time");
    std::optional<control::AgentMessage> message;
    if (Status s = life.channel.Receive(left_ms, message); !s.ok()) {
      if (s.IsInvalidArgument()) {
        std::fprintf(stderr, "muster-train: %s\n", s.message().c_str());
        continue;
      }
      return give_up(s.message());
    }
    if (!message) continue;
    if (const auto* p = std::get_if<control::Pause>(&*message)) {
      pause = *p;
      if (Status s = life.channel.Say(control::Ready{p->generation}); !s.ok()) {
        return give_up(s.message());
      }
    } else if (const auto* join = std::get_if<control::Join>(&*message)) {
      if (!pause) {
        life.channel.Say(control::Failed{join->generation, "join before pause"}).ok();
        return give_up("muster sent join before pause");
      }
      Membership next = left;
      next.ctx.rank = join->rank;
      next.ctx.world_size = join->world_size;
      next.ctx.local_rank = join->local_rank;
      next.ctx.master_addr = join->master_addr;
      next.ctx.master_port = join->master_port;
      next.store_prefix = join->store_prefix;
      next.joining = join->generation;
      return next;
    } else {
      return Fail(runtime::kExitCommFailure, "stopped by muster");
    }
  }
}

}  // namespace

int RunTraining(const TrainOptions& o) {
  auto ctx = Context::FromProcessEnv();
  if (!ctx.ok()) return Fail(ctx.status());
  if (Status s = CheckOptions(o); !s.ok()) return Fail(s);
  auto faults = runtime::WorkerFaults::FromProcessEnv(ctx->rank, ctx->world_size);
  if (!faults.ok()) return Fail(faults.status());
  auto backend = runtime::ParseBackend(o.backend);
  if (!backend.ok()) return Fail(backend.status());

  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(o.collective_timeout_s * 1000));
  // Declared before the generations' clients, so they disconnect first and
  // the store's linger only waits for the other ranks.
  std::unique_ptr<runtime::HostedStore> hosted_store;
  if (ctx->world_size > 1 && ctx->rank == 0 && ctx->rank0_hosts_store) {
    auto hosted = runtime::HostedStore::Start(static_cast<uint16_t>(ctx->master_port));
    if (!hosted.ok()) {
      return Fail(runtime::kExitCommFailure,
                  "rank 0 cannot serve the store: " + hosted.status().message());
    }
    hosted_store = std::move(hosted).value();
  }

  runtime::ControlChannel channel = runtime::ControlChannel::FromProcessEnv();
  WorkerLife life{.options = o,
                  .backend = *backend,
                  .timeout = timeout,
                  .faults = *faults,
                  .channel = channel,
                  .in_place = false,
                  .shrinks_communicators = false,
                  .kept_comm = std::nullopt,
                  .state = {},
                  .holds_live_state = false};
  // In place only where muster hosts the store it can renew per generation.
  if (channel.enabled() && !ctx->rank0_hosts_store) {
    life.in_place = channel
                        .Say(control::Hello{control::kProtocolVersion,
                                            {std::string(control::kInPlaceCapability)}})
                        .ok();
    life.shrinks_communicators = life.in_place && runtime::BackendCanShrink(*backend);
  }
  Membership membership{
      .ctx = *ctx, .store_prefix = ctx->StoreNamespace(), .joining = std::nullopt};
  while (true) {
    GenerationEnd end = RunGeneration(life, membership);
    if (end.kind == GenerationEnd::Kind::kExit) return end.exit_code;
    auto next = AwaitJoin(life, membership, end.pause);
    if (const int* code = std::get_if<int>(&next)) return *code;
    membership = std::get<Membership>(std::move(next));
  }
}

}  // namespace muster::train
