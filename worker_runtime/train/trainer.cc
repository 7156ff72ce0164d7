#include "worker_runtime/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/checkpoint/checkpoint_directory.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/fault/worker_faults.h"
#include "worker_runtime/progress/progress_reporter.h"
#include "worker_runtime/recovery/in_place_worker.h"
#include "worker_runtime/store/hosted_store.h"
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
using runtime::Context;
using runtime::InPlaceWorker;
using runtime::Verdict;

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;

// The exit status of an error that is not a collective's (trainer.h):
// the input is at fault (flags, environment, a checkpoint of another model)
// or something else failed (I/O, ...).
int ExitCodeFor(const Status& status) {
  return status.IsInvalidArgument() ? kExitBadInput : kExitFailure;
}

void LogLine(const std::string& line) { std::fprintf(stderr, "muster-train: %s\n", line.c_str()); }

int Fail(int code, const std::string& message) {
  LogLine(message);
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

// The training loop of one generation, alike for every replica (replica.h):
// the sample order, resume, checkpoints, logging and --out are host-side and
// written once. `state` outlives the generation: a worker that recovers in
// place carries it into the next one.
class Trainer {
 public:
  // `worker`: this process's side of in-place recovery; its generation is
  // formed (the replica is over its communicator).
  Trainer(const TrainOptions& o, const Context& ctx, ModelReplica& replica,
          runtime::WorkerFaults& faults, InPlaceWorker& worker, TrainState& state)
      : o_(o),
        ctx_(ctx),
        data_(o.seed, o.dataset_size, o.features, o.classes),
        order_(o.seed, o.dataset_size),
        share_(ShareOf(static_cast<size_t>(o.global_batch), ctx.world_size, ctx.rank)),
        replica_(replica),
        faults_(faults),
        worker_(worker),
        state_(state) {}

  // `holds_live_state`: `state` holds this process's training state from
  // the generation it left. A generation the worker was told to join is
  // answered (joined) once the state agreement is done.
  // Sets `state_consistent` once the replica holds the generation's state
  // (from then on a pause keeps the replica's state, not the old copy).
  Verdict Run(bool holds_live_state, bool& state_consistent) {
    auto point = AgreeOnStart(o_, ctx_.rank, ctx_.world_size, replica_, state_, holds_live_state);
    if (!point.ok()) return Verdict::Exit(Fail(point.status()));
    state_consistent = true;
    if (Verdict v = worker_.Joined(); !v.goes_on()) return v;
    if (ctx_.rank == 0) PrintStart(*point);
    if (Status s = CheckpointMissedSave(*point); !s.ok()) return Verdict::Exit(Fail(s));

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
      // Between steps: a pause leaves, a stop exits.
      if (Verdict v = worker_.Poll(); !v.goes_on()) return v;
      const auto started = Clock::now();
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
        if (Status s = Save(last_loss); !s.ok()) return Verdict::Exit(Fail(s));
        if (faults_.CorruptsCheckpointAt(state_.step, progress_reporter_)) {
          const std::string path =
              o_.checkpoint_dir + "/" + runtime::CheckpointFileName(state_.step);
          if (Status s = runtime::DamageFile(path); !s.ok()) return Verdict::Exit(Fail(s));
        }
      }
      if (o_.step_sleep_ms > 0) {
        // A paused worker must not sleep through its pause: the sleep is a
        // wait for the agent's next message (a plain sleep when not in place).
        const std::chrono::milliseconds sleep(o_.step_sleep_ms);
        if (Verdict v = worker_.Poll(sleep); !v.goes_on()) return v;
      }
      step_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - started).count());
    }
    progress.Done();

    if (ctx_.rank == 0 && !o_.out_path.empty()) {
      replica_.GetState(state_.params, state_.momentum);
      if (Status s = WriteParameters(o_.out_path, replica_.layout().TorchOrder(state_.params));
          !s.ok()) {
        return Verdict::Exit(Fail(s));
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
    return Verdict::Exit(0);
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
    if (s.ok() || !worker_.in_place()) return s;
    std::fprintf(
        stderr,
        "muster-train: %s; training goes on in place, the next checkpoint is due at "
        "step %llu\n",
        s.message().c_str(),
        static_cast<unsigned long long>(state_.step + static_cast<uint64_t>(o_.checkpoint_every)));
    return Status::Ok();
  }

  const TrainOptions& o_;
  const Context& ctx_;
  SyntheticDataset data_;
  SampleOrder order_;
  const Share share_;  // of every global batch, this rank's
  ModelReplica& replica_;
  runtime::WorkerFaults& faults_;
  InPlaceWorker& worker_;
  TrainState& state_;
  // Each finished step tells muster's hang detection this rank still moves.
  const runtime::ProgressReporter progress_reporter_ = runtime::ProgressReporter::FromProcessEnv();
};

// What a process carries from one generation into the next (in place).
struct Carried {
  TrainState state;
  bool holds_live_state = false;
};

// Runs the generation `worker` forms and tears down what is its own: the
// replica (the worker frees the communicator and its store connection).
Verdict RunGeneration(const TrainOptions& o, runtime::WorkerFaults& faults, InPlaceWorker& worker,
                      Carried& carried) {
  if (Verdict v = worker.Form(); !v.goes_on()) return v;
  const Context& ctx = worker.context();
  std::unique_ptr<ModelReplica> replica;
  bool state_consistent = false;
  // On leaving, the replica's state is kept for the next generation: it is
  // consistent whenever no step is half applied (an update follows every
  // bucket's sum, so a failed step changed nothing).
  const auto keep_state = [&] {
    if (!replica || !state_consistent) return;
    replica->GetState(carried.state.params, carried.state.momentum);
    carried.holds_live_state = true;
  };
  try {
    // The replica follows the backend the worker's communicator got.
    auto made = CreateReplica(worker.comm(), ReplicaOptionsFor(o));
    if (!made.ok()) return Verdict::Exit(Fail(made.status()));
    replica = std::move(made).value();
    if (carried.state.params.empty()) {
      carried.state.params.resize(replica->parameter_count());
      carried.state.momentum.assign(replica->parameter_count(), 0.0f);
    }
    Trainer trainer(o, ctx, *replica, faults, worker, carried.state);
    Verdict v = trainer.Run(carried.holds_live_state, state_consistent);
    if (v.leaves()) keep_state();
    return v;
  } catch (const CommError& e) {
    // A bad argument exits (the worker says so); any other failure leaves
    // in place, or exits when not.
    if (e.kind() != CommError::Kind::kInvalidArgument) keep_state();
    return worker.LeaveAfter(e);
  } catch (const DeviceError& e) {
    // The peers' collectives fail or time out without this rank; aborting
    // first keeps the communicator's teardown from waiting on them.
    worker.comm().Abort();
    return Verdict::Exit(Fail(kExitFailure, std::string("a GPU call failed (rank ") +
                                                std::to_string(ctx.rank) + "): " + e.what()));
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

  // Says hello to muster when it recovers in place (in_place_worker.h).
  InPlaceWorker worker = InPlaceWorker::Start(
      *ctx,
      {.backend = *backend, .timeout = timeout, .store_key_prefix = "train/", .log = LogLine});
  Carried carried;
  while (true) {
    Verdict v = RunGeneration(o, *faults, worker, carried);
    if (v.exits()) return v.exit_code();
    if (v = worker.AwaitJoin(); v.exits()) return v.exit_code();
  }
}

}  // namespace muster::train
