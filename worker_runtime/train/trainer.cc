#include "worker_runtime/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/checkpoint/checkpoint.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/data/distributed_sampler.h"
#include "worker_runtime/store/store_client.h"
#include "worker_runtime/train/bucketed_reducer.h"
#include "worker_runtime/train/mlp.h"
#include "worker_runtime/train/progress.h"
#include "worker_runtime/train/solo_communicator.h"
#include "worker_runtime/train/synthetic_dataset.h"

namespace muster::train {
namespace {

using runtime::CommError;
using runtime::Communicator;
using runtime::Context;

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "muster-train: %s\n", message.c_str());
  return code;
}

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

// The training state every rank holds identically.
struct State {
  std::vector<float> params;
  std::vector<float> momentum;
  uint64_t step = 0;
};

// Loads the newest valid checkpoint, if any, checking it belongs to this model.
Result<bool> Resume(const TrainOptions& o, State& state) {
  if (o.checkpoint_dir.empty()) return false;
  auto loaded = runtime::LoadNewestCheckpoint(o.checkpoint_dir);
  if (!loaded.ok()) return loaded.status();
  if (!loaded->has_value()) return false;
  const runtime::Checkpoint& ckpt = **loaded;
  const nlohmann::json identity = ModelIdentity(o);
  nlohmann::json saved = nlohmann::json::parse(ckpt.metadata, nullptr, false);
  if (saved.is_discarded() || saved.value("model", nlohmann::json()) != identity) {
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
  state.step = ckpt.step;
  return true;
}

Status Save(const TrainOptions& o, const State& state, uint64_t steps_per_epoch) {
  runtime::Checkpoint ckpt;
  ckpt.step = state.step;
  ckpt.epoch = state.step / steps_per_epoch;
  ckpt.sampler_position = (state.step % steps_per_epoch) * static_cast<uint64_t>(o.global_batch);
  ckpt.metadata = nlohmann::json{{"model", ModelIdentity(o)}}.dump();
  ckpt.tensors = {{"params", state.params}, {"momentum", state.momentum}};
  return runtime::WriteCheckpoint(o.checkpoint_dir, ckpt);
}

class Trainer {
 public:
  Trainer(const TrainOptions& o, const Context& ctx, Communicator& comm)
      : o_(o),
        ctx_(ctx),
        data_(o.seed, o.dataset_size, o.features, o.classes),
        model_(LayerSizes(o)),
        local_batch_(static_cast<size_t>(o.global_batch / ctx.world_size)),
        steps_per_epoch_(o.dataset_size / static_cast<size_t>(o.global_batch)),
        grads_(model_.parameter_count()),
        reducer_(comm, grads_, model_.tensors(), static_cast<size_t>(o.bucket_mb * 1024 * 1024),
                 o.overlap) {
    state_.params.resize(model_.parameter_count());
    state_.momentum.assign(model_.parameter_count(), 0.0f);
  }

  int Run() {
    auto resumed = Resume(o_, state_);
    if (!resumed.ok()) return Fail(kExitBadInput, resumed.status().message());
    if (!*resumed) model_.Initialize(o_.seed, state_.params);
    // Every rank starts from rank 0's state, whatever it loaded or drew.
    double step = static_cast<double>(state_.step);
    reducer_.Run([&](Communicator& c) {
      c.Broadcast(state_.params.data(), state_.params.size(), runtime::DataType::kFloat32, 0);
      c.Broadcast(state_.momentum.data(), state_.momentum.size(), runtime::DataType::kFloat32, 0);
      c.Broadcast(&step, 1, runtime::DataType::kFloat64, 0);
    });
    state_.step = static_cast<uint64_t>(step);
    if (ctx_.rank == 0 && *resumed) {
      std::printf("resumed from step %llu of %d\n", static_cast<unsigned long long>(state_.step),
                  o_.steps);
    }

    auto sampler = runtime::DistributedSampler::Create({.dataset_size = o_.dataset_size,
                                                        .num_replicas = ctx_.world_size,
                                                        .rank = ctx_.rank,
                                                        .shuffle = true,
                                                        .seed = o_.seed,
                                                        .drop_last = false});
    if (!sampler.ok()) return Fail(kExitBadInput, sampler.status().message());

    Progress progress(ctx_.rank == 0, o_.steps, o_.log_every);
    std::vector<float> x(local_batch_ * static_cast<size_t>(o_.features));
    std::vector<int> labels(local_batch_);
    std::vector<size_t> epoch_indices;
    uint64_t indexed_epoch = UINT64_MAX;
    double last_loss = 0;
    std::vector<double> step_ms;
    for (; state_.step < static_cast<uint64_t>(o_.steps);) {
      const auto started = std::chrono::steady_clock::now();
      const uint64_t epoch = state_.step / steps_per_epoch_;
      if (epoch != indexed_epoch) {
        sampler->SetEpoch(epoch);
        epoch_indices = sampler->Indices();
        indexed_epoch = epoch;
      }
      const size_t first = (state_.step % steps_per_epoch_) * local_batch_;
      for (size_t b = 0; b < local_batch_; ++b) {
        labels[b] = data_.Sample(epoch_indices[first + b],
                                 std::span<float>(x).subspan(b * static_cast<size_t>(o_.features),
                                                             static_cast<size_t>(o_.features)));
      }

      std::fill(grads_.begin(), grads_.end(), 0.0);
      reducer_.BeginStep();
      // Gradients of the sum of losses over 1/global batch: summed across
      // ranks they are the global batch's mean, whatever the world size.
      const BatchStats stats = model_.ForwardBackward(
          state_.params, x, labels, 1.0f / static_cast<float>(o_.global_batch), grads_,
          [this](size_t tensor) { reducer_.TensorReady(tensor); });
      reducer_.Finish();
      double totals[2] = {stats.loss_sum, stats.correct};
      reducer_.Run([&](Communicator& c) {
        c.AllReduce(totals, 2, runtime::DataType::kFloat64, runtime::ReduceOp::kSum);
      });
      ApplySgd();
      ++state_.step;
      last_loss = totals[0] / o_.global_batch;
      progress.Step(state_.step, last_loss, totals[1] / o_.global_batch);

      if (ctx_.rank == 0 && !o_.checkpoint_dir.empty() && o_.checkpoint_every > 0 &&
          state_.step % static_cast<uint64_t>(o_.checkpoint_every) == 0) {
        if (Status s = Save(o_, state_, steps_per_epoch_); !s.ok()) {
          return Fail(kExitFailure, s.message());
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
      if (Status s = WriteParameters(o_.out_path, model_.TorchOrder(state_.params)); !s.ok()) {
        return Fail(kExitFailure, s.message());
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
  static std::vector<int> LayerSizes(const TrainOptions& o) {
    std::vector<int> sizes{o.features};
    for (int d = 0; d < o.depth; ++d) sizes.push_back(o.hidden);
    sizes.push_back(o.classes);
    return sizes;
  }

  // SGD with momentum as torch.optim.SGD (dampening 0): v = m v + g; p -= lr v.
  void ApplySgd() {
    const float lr = static_cast<float>(o_.lr);
    const float m = static_cast<float>(o_.momentum);
    for (size_t k = 0; k < grads_.size(); ++k) {
      state_.momentum[k] = m * state_.momentum[k] + static_cast<float>(grads_[k]);
      state_.params[k] -= lr * state_.momentum[k];
    }
  }

  const TrainOptions& o_;
  const Context& ctx_;
  SyntheticDataset data_;
  Mlp model_;
  size_t local_batch_;
  uint64_t steps_per_epoch_;
  std::vector<double> grads_;
  State state_;
  BucketedReducer reducer_;
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
  if (!ctx.ok()) return Fail(kExitBadInput, ctx.status().message());
  if (Status s = CheckOptions(o, *ctx); !s.ok()) return Fail(kExitBadInput, s.message());
  auto backend = runtime::ParseBackend(o.backend);
  if (!backend.ok()) return Fail(kExitBadInput, backend.status().message());

  std::unique_ptr<runtime::StoreClient> store;
  std::unique_ptr<Communicator> comm;
  if (ctx->world_size == 1) {
    comm = std::make_unique<SoloCommunicator>();
  } else {
    const auto timeout =
        std::chrono::milliseconds(static_cast<int64_t>(o.collective_timeout_s * 1000));
    auto connected = runtime::StoreClient::Connect({.host = ctx->master_addr,
                                                    .port = ctx->master_port,
                                                    .prefix = ctx->StoreNamespace() + "train/",
                                                    .timeout = timeout});
    if (!connected.ok()) return Fail(runtime::kExitCommFailure, connected.status().message());
    store = std::move(connected).value();
    auto created =
        runtime::CreateCommunicator(*ctx, *store, {.backend = *backend, .timeout = timeout});
    if (!created.ok()) {
      const bool bad_flag = created.status().IsInvalidArgument();
      return Fail(bad_flag ? kExitBadInput : runtime::kExitCommFailure, created.status().message());
    }
    comm = std::move(created).value();
  }

  try {
    Trainer trainer(o, *ctx, *comm);
    return trainer.Run();
  } catch (const CommError& e) {
    comm->Abort();
    return Fail(runtime::kExitCommFailure, std::string("a collective failed (rank ") +
                                               std::to_string(ctx->rank) + "): " + e.what() +
                                               "; exiting for the launcher to restart the job");
  }
}

}  // namespace muster::train
