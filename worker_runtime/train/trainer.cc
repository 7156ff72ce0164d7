#include "worker_runtime/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/checkpoint/checkpoint.h"
#include "worker_runtime/checkpoint/checkpoint_directory.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/data/distributed_sampler.h"
#include "worker_runtime/fault/worker_faults.h"
#include "worker_runtime/progress/progress_reporter.h"
#include "worker_runtime/store/hosted_store.h"
#include "worker_runtime/store/store_client.h"
#include "worker_runtime/train/mlp.h"
#include "worker_runtime/train/progress.h"
#include "worker_runtime/train/replica.h"
#include "worker_runtime/train/replica_factory.h"
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

// What a checkpoint must agree with to be resumed from.
nlohmann::json ModelIdentity(const TrainOptions& o) {
  return {{"hidden", o.hidden},
          {"depth", o.depth},
          {"features", o.features},
          {"classes", o.classes},
          {"seed", o.seed},
          {"global_batch", o.global_batch},
          {"dataset_size", o.dataset_size}};
}

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

// The host copy of the training state every rank holds identically: its
// replica's weights and momentum as last loaded or copied out (rank 0, for a
// checkpoint or --out), and the step.
struct State {
  std::vector<float> params;
  std::vector<float> momentum;
  uint64_t step = 0;
};

// Where a run starts, as rank 0 read it from the newest checkpoint.
struct ResumePoint {
  bool resumed = false;
  uint64_t step = 0;
  runtime::SamplerState data;  // the sampler's state after step `step`
  // The loss averaged over step `step`'s global batch; NaN when the
  // checkpoint predates this field.
  double last_loss = std::numeric_limits<double>::quiet_NaN();
};

// Loads the newest valid checkpoint, if any, into `state`, checking it
// belongs to this model. Rank 0 only: the others receive it by broadcast.
Result<ResumePoint> LoadNewest(const TrainOptions& o, State& state) {
  if (o.checkpoint_dir.empty()) return ResumePoint{};
  auto loaded = runtime::LoadNewestCheckpoint(o.checkpoint_dir);
  if (!loaded.ok()) return loaded.status();
  if (!loaded->has_value()) return ResumePoint{};
  const runtime::Checkpoint& ckpt = **loaded;
  const nlohmann::json identity = ModelIdentity(o);
  nlohmann::json saved = nlohmann::json::parse(ckpt.metadata, nullptr, false);
  if (!saved.is_object() || saved.value("model", nlohmann::json()) != identity) {
    return Status::InvalidArgument("checkpoint in '" + o.checkpoint_dir +
                                   "' is of another model or data (" + ckpt.metadata +
                                   "); use another --checkpoint-dir");
  }
  for (const auto& [name, values] : ckpt.tensors) {
    std::vector<float>* target = name == "params"     ? &state.params
                                 : name == "momentum" ? &state.momentum
                                                      : nullptr;
    if (target == nullptr) continue;
    if (values.size() != target->size()) {
      return Status::InvalidArgument("checkpoint tensor '" + name + "' has " +
                                     std::to_string(values.size()) + " values, expected " +
                                     std::to_string(target->size()));
    }
    *target = values;
  }
  ResumePoint point;
  point.resumed = true;
  point.step = ckpt.step;
  point.data = {.epoch = ckpt.epoch, .global_position = ckpt.sampler_position};
  const nlohmann::json& loss = saved["last_loss"];
  if (loss.is_number()) point.last_loss = loss.get<double>();
  return point;
}

Status Save(const TrainOptions& o, const State& state, const runtime::SamplerState& data,
            double last_loss) {
  runtime::Checkpoint ckpt;
  ckpt.step = state.step;
  ckpt.epoch = data.epoch;
  ckpt.sampler_position = data.global_position;
  ckpt.metadata = nlohmann::json{{"model", ModelIdentity(o)}, {"last_loss", last_loss}}.dump();
  ckpt.tensors = {{"params", state.params}, {"momentum", state.momentum}};
  return runtime::WriteCheckpoint(o.checkpoint_dir, ckpt);
}

std::vector<int> LayerSizes(const TrainOptions& o) {
  std::vector<int> sizes{o.features};
  for (int d = 0; d < o.depth; ++d) sizes.push_back(o.hidden);
  sizes.push_back(o.classes);
  return sizes;
}

ReplicaOptions ReplicaOptionsFor(const TrainOptions& o) {
  return {.sizes = LayerSizes(o),
          .lr = static_cast<float>(o.lr),
          .momentum = static_cast<float>(o.momentum),
          .bucket_bytes = static_cast<size_t>(o.bucket_mb * 1024 * 1024),
          .overlap = o.overlap};
}

// The training loop, alike for every replica (replica.h): the sampler,
// resume, checkpoints, logging and --out are host-side and written once.
class Trainer {
 public:
  Trainer(const TrainOptions& o, const Context& ctx, ModelReplica& replica,
          runtime::WorkerFaults faults)
      : o_(o),
        ctx_(ctx),
        data_(o.seed, o.dataset_size, o.features, o.classes),
        local_batch_(static_cast<size_t>(o.global_batch / ctx.world_size)),
        steps_per_epoch_(o.dataset_size / static_cast<size_t>(o.global_batch)),
        replica_(replica),
        faults_(std::move(faults)) {
    state_.params.resize(replica_.parameter_count());
    state_.momentum.assign(replica_.parameter_count(), 0.0f);
  }

  int Run() {
    auto sampler = runtime::DistributedSampler::Create({.dataset_size = o_.dataset_size,
                                                        .num_replicas = ctx_.world_size,
                                                        .rank = ctx_.rank,
                                                        .shuffle = true,
                                                        .seed = o_.seed,
                                                        .drop_last = false});
    if (!sampler.ok()) return Fail(sampler.status());

    auto point = AgreeOnResumePoint();
    if (!point.ok()) return Fail(point.status());
    state_.step = point->step;
    // Where this rank stands in the sampler's current epoch (per-rank samples).
    size_t position = 0;
    if (point->resumed) {
      auto start = sampler->Resume(point->data);
      if (!start.ok()) {
        return Fail(
            ExitCodeFor(start.status()),
            "checkpoint of step " + std::to_string(point->step) + ": " + start.status().message());
      }
      if (Status s = CheckDataPosition(point->step, sampler->epoch(), *start); !s.ok()) {
        return Fail(s);
      }
      position = *start;
      if (ctx_.rank == 0) {
        std::printf("resumed from step %llu of %d\n", static_cast<unsigned long long>(state_.step),
                    o_.steps);
      }
    }

    Progress progress(ctx_.rank == 0, o_.steps, o_.log_every);
    std::vector<float> x(local_batch_ * static_cast<size_t>(o_.features));
    std::vector<int> labels(local_batch_);
    std::vector<size_t> epoch_indices = sampler->Indices();
    // The epoch ends after its last full global batch; the rest is skipped.
    const size_t epoch_end = steps_per_epoch_ * local_batch_;
    double last_loss = point->last_loss;
    const uint64_t total_steps = static_cast<uint64_t>(o_.steps);
    std::vector<double> step_ms;
    step_ms.reserve(state_.step < total_steps ? total_steps - state_.step : 0);
    for (; state_.step < total_steps;) {
      const auto started = std::chrono::steady_clock::now();
      if (position == epoch_end) {
        sampler->SetEpoch(sampler->epoch() + 1);
        epoch_indices = sampler->Indices();
        position = 0;
      }
      for (size_t b = 0; b < local_batch_; ++b) {
        labels[b] = data_.Sample(epoch_indices[position + b],
                                 std::span<float>(x).subspan(b * static_cast<size_t>(o_.features),
                                                             static_cast<size_t>(o_.features)));
      }
      position += local_batch_;

      // Gradients of the sum of losses over 1/global batch: summed across
      // ranks they are the global batch's mean, whatever the world size.
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
        if (Status s = Save(o_, state_, sampler->StateAfter(position), last_loss); !s.ok()) {
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
        std::printf("step time median %.3f ms over %zu steps (world size %d, batch %zu per rank)\n",
                    step_ms[step_ms.size() / 2], step_ms.size(), ctx_.world_size, local_batch_);
      }
      std::printf("final loss %.6f\n", last_loss);
      std::fflush(stdout);
    }
    return 0;
  }

 private:
  // Rank 0 alone reads the checkpoint directory (or draws the initial
  // weights); every rank then receives its outcome, an error included, so
  // all ranks go on together or exit together. Then the weights and momentum.
  Result<ResumePoint> AgreeOnResumePoint() {
    Status loaded;
    ResumePoint point;
    if (ctx_.rank == 0) {
      auto read = LoadNewest(o_, state_);
      if (read.ok()) {
        point = *read;
        if (!point.resumed) replica_.layout().Initialize(o_.seed, state_.params);
      } else {
        loaded = read.status();
      }
    }
    // {exit status (0: ok), resumed, step, epoch, global position, last loss}:
    // every integer here stays far below 2^53, exact in a double.
    double header[6] = {static_cast<double>(loaded.ok() ? 0 : ExitCodeFor(loaded)),
                        point.resumed ? 1.0 : 0.0,
                        static_cast<double>(point.step),
                        static_cast<double>(point.data.epoch),
                        static_cast<double>(point.data.global_position),
                        point.last_loss};
    replica_.Broadcast(header, 0);
    if (header[0] != 0) {
      if (ctx_.rank == 0) return loaded;
      const std::string why =
          "rank 0 could not resume from --checkpoint-dir (its message says why)";
      return header[0] == kExitBadInput ? Status::InvalidArgument(why) : Status::IoError(why);
    }
    point.resumed = header[1] != 0;
    point.step = static_cast<uint64_t>(header[2]);
    point.data = {.epoch = static_cast<uint64_t>(header[3]),
                  .global_position = static_cast<uint64_t>(header[4])};
    point.last_loss = header[5];
    if (ctx_.rank == 0) replica_.SetState(state_.params, state_.momentum);
    replica_.BroadcastState(0);
    return point;
  }

  // The sampler's position is saved apart from the optimizer's step: a
  // checkpoint is only resumed when the position is where that step begins.
  Status CheckDataPosition(uint64_t step, uint64_t epoch, size_t start) const {
    const bool aligned = start % local_batch_ == 0 && start <= steps_per_epoch_ * local_batch_;
    if (aligned && epoch * steps_per_epoch_ + start / local_batch_ == step) return Status::Ok();
    return Status::InvalidArgument(
        "checkpoint of step " + std::to_string(step) + " records data position epoch " +
        std::to_string(epoch) + ", per-rank sample " + std::to_string(start) +
        ", which is not where that step begins (" + std::to_string(steps_per_epoch_) +
        " steps of " + std::to_string(local_batch_) +
        " samples per rank and epoch); use another --checkpoint-dir");
  }

  const TrainOptions& o_;
  const Context& ctx_;
  SyntheticDataset data_;
  size_t local_batch_;
  uint64_t steps_per_epoch_;
  State state_;
  ModelReplica& replica_;
  // Each finished step tells muster's hang detection this rank still moves.
  const runtime::ProgressReporter progress_reporter_ = runtime::ProgressReporter::FromProcessEnv();
  // --inject faults that fire in this worker (none unless muster injects).
  runtime::WorkerFaults faults_;
};

Status CheckOptions(const TrainOptions& o, const Context& ctx) {
  auto positive = [](const char* flag, double v) -> Status {
    if (v > 0) return Status::Ok();
    return Status::InvalidArgument(std::string(flag) + "=" + std::to_string(v) +
                                   " must be positive");
  };
  for (auto [flag, value] : {std::pair{"--steps", double(o.steps)},
                             {"--global-batch", double(o.global_batch)},
                             {"--hidden", double(o.hidden)},
                             {"--lr", o.lr},
                             {"--features", double(o.features)},
                             {"--bucket-mb", o.bucket_mb},
                             {"--collective-timeout", o.collective_timeout_s}}) {
    if (Status s = positive(flag, value); !s.ok()) return s;
  }
  if (o.depth < 0)
    return Status::InvalidArgument("--depth=" + std::to_string(o.depth) + " must be 0 or more");
  if (o.classes < 2)
    return Status::InvalidArgument("--classes=" + std::to_string(o.classes) +
                                   " must be at least 2");
  if (o.global_batch % ctx.world_size != 0) {
    return Status::InvalidArgument("--global-batch=" + std::to_string(o.global_batch) +
                                   " is not a multiple of the world size " +
                                   std::to_string(ctx.world_size));
  }
  if (o.dataset_size < static_cast<size_t>(o.global_batch)) {
    return Status::InvalidArgument(
        "--dataset-size=" + std::to_string(o.dataset_size) +
        " is smaller than --global-batch=" + std::to_string(o.global_batch));
  }
  if (o.dataset_size % static_cast<size_t>(ctx.world_size) != 0) {
    // Padding would make the epoch's sample order depend on the world size.
    return Status::InvalidArgument("--dataset-size=" + std::to_string(o.dataset_size) +
                                   " is not a multiple of the world size " +
                                   std::to_string(ctx.world_size));
  }
  if (o.momentum < 0 || o.momentum >= 1) {
    return Status::InvalidArgument("--momentum=" + std::to_string(o.momentum) +
                                   " must be in [0, 1)");
  }
  return Status::Ok();
}

}  // namespace

int RunTraining(const TrainOptions& o) {
  auto ctx = Context::FromProcessEnv();
  if (!ctx.ok()) return Fail(ctx.status());
  if (Status s = CheckOptions(o, *ctx); !s.ok()) return Fail(s);
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
