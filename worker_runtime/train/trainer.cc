#include "worker_runtime/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/checkpoint/checkpoint_directory.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/fault/worker_faults.h"
#include "worker_runtime/progress/progress_reporter.h"
#include "worker_runtime/store/hosted_store.h"
#include "worker_runtime/store/store_client.h"
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

// The training loop, alike for every replica (replica.h): the sample order,
// resume, checkpoints, logging and --out are host-side and written once.
class Trainer {
 public:
  Trainer(const TrainOptions& o, const Context& ctx, ModelReplica& replica,
          runtime::WorkerFaults faults)
      : o_(o),
        ctx_(ctx),
        data_(o.seed, o.dataset_size, o.features, o.classes),
        order_(o.seed, o.dataset_size),
        share_(ShareOf(static_cast<size_t>(o.global_batch), ctx.world_size, ctx.rank)),
        replica_(replica),
        faults_(std::move(faults)) {
    state_.params.resize(replica_.parameter_count());
    state_.momentum.assign(replica_.parameter_count(), 0.0f);
  }

  int Run() {
    auto point = AgreeOnResumePoint(o_, ctx_.rank, replica_, state_);
    if (!point.ok()) return Fail(point.status());
    if (ctx_.rank == 0) {
      std::printf("world size %d, global batch %d: %s\n", ctx_.world_size, o_.global_batch,
                  DescribeSplit(static_cast<size_t>(o_.global_batch), ctx_.world_size).c_str());
      if (point->resumed) {
        std::printf("resumed from step %llu of %d", static_cast<unsigned long long>(state_.step),
                    o_.steps);
        if (point->written_world_size > 0) {
          std::printf(" (checkpoint written at world size %d)", point->written_world_size);
        }
        std::printf("\n");
      }
    }

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

      // Loss and accuracy cost a collective of their own: averaged only on
      // steps that are reported, the last one, and those checkpointed (whose
      // checkpoint keeps the loss). The choice depends on flags and the step
      // only, so every rank makes it alike.
      const uint64_t done = state_.step + 1;
      const bool checkpoint = !o_.checkpoint_dir.empty() && o_.checkpoint_every > 0 &&
                              done % static_cast<uint64_t>(o_.checkpoint_every) == 0;
      const bool report = progress.Reports(done);
      if (report || checkpoint || done == total_steps) {
        double totals[2] = {stats.loss_sum, stats.correct};
        replica_.AllReduceSum(totals);
        last_loss = totals[0] / o_.global_batch;
        if (report) progress.Report(done, last_loss, totals[1] / o_.global_batch);
      }
      ++state_.step;
      progress_reporter_.Report(static_cast<int64_t>(state_.step));
      faults_.AtStep(state_.step, progress_reporter_);

      if (checkpoint && ctx_.rank == 0) {
        replica_.GetState(state_.params, state_.momentum);
        if (Status s = SaveCheckpoint(o_, ctx_.world_size, state_, last_loss); !s.ok()) {
          return Fail(s);
        }
        if (faults_.CorruptsCheckpointAt(state_.step, progress_reporter_)) {
          const std::string path =
              o_.checkpoint_dir + "/" + runtime::CheckpointFileName(state_.step);
          if (Status s = runtime::DamageFile(path); !s.ok()) return Fail(s);
        }
      }
      if (o_.step_sleep_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(o_.step_sleep_ms));
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
        return Fail(s);
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
    return 0;
  }

 private:
  const TrainOptions& o_;
  const Context& ctx_;
  SyntheticDataset data_;
  SampleOrder order_;
  const Share share_;  // of every global batch, this rank's
  TrainState state_;
  ModelReplica& replica_;
  // Each finished step tells muster's hang detection this rank still moves.
  const runtime::ProgressReporter progress_reporter_ = runtime::ProgressReporter::FromProcessEnv();
  // --inject faults that fire in this worker (none unless muster injects).
  runtime::WorkerFaults faults_;
};

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
  // Declared before the client, so the client disconnects first and the
  // store's linger only waits for the other ranks.
  std::unique_ptr<runtime::HostedStore> hosted_store;
  if (ctx->world_size > 1 && ctx->rank == 0 && ctx->rank0_hosts_store) {
    auto hosted = runtime::HostedStore::Start(static_cast<uint16_t>(ctx->master_port));
    if (!hosted.ok()) {
      return Fail(runtime::kExitCommFailure,
                  "rank 0 cannot serve the store: " + hosted.status().message());
    }
    hosted_store = std::move(hosted).value();
  }
  std::unique_ptr<runtime::StoreClient> store;  // one rank needs none
  if (ctx->world_size > 1) {
    auto connected = runtime::StoreClient::Connect({.host = ctx->master_addr,
                                                    .port = ctx->master_port,
                                                    .prefix = ctx->StoreNamespace() + "train/",
                                                    .timeout = timeout});
    if (!connected.ok()) return Fail(runtime::kExitCommFailure, connected.status().message());
    store = std::move(connected).value();
  }
  // The request is resolved there (backend_choice.h): "nccl" in a build
  // without NCCL, or with no GPU visible, is refused as a bad flag with the
  // reason. The replica then follows the backend it got.
  auto created =
      runtime::CreateCommunicator(*ctx, store.get(), {.backend = *backend, .timeout = timeout});
  if (!created.ok()) {
    const Status& s = created.status();
    return s.IsInvalidArgument() ? Fail(s) : Fail(runtime::kExitCommFailure, s.message());
  }
  std::unique_ptr<Communicator> comm = std::move(created).value();

  try {
    auto replica = CreateReplica(*comm, ReplicaOptionsFor(o));
    if (!replica.ok()) return Fail(replica.status());
    Trainer trainer(o, *ctx, **replica, std::move(faults).value());
    return trainer.Run();
  } catch (const CommError& e) {
    comm->Abort();
    // A bad argument is this program's fault: a restart would repeat it.
    if (e.kind() == CommError::Kind::kInvalidArgument) {
      return Fail(kExitFailure, std::string("a collective was called wrongly (rank ") +
                                    std::to_string(ctx->rank) + "): " + e.what());
    }
    return Fail(runtime::kExitCommFailure, std::string("a collective failed (rank ") +
                                               std::to_string(ctx->rank) + "): " + e.what() +
                                               "; exiting for the launcher to restart the job");
  } catch (const DeviceError& e) {
    // The peers' collectives fail or time out without this rank; aborting
    // first keeps the communicator's teardown from waiting on them.
    comm->Abort();
    return Fail(kExitFailure, std::string("a GPU call failed (rank ") + std::to_string(ctx->rank) +
                                  "): " + e.what());
  }
}

}  // namespace muster::train
