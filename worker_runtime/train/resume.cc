#include "worker_runtime/train/resume.h"

#include <nlohmann/json.hpp>
#include <string>

#include "worker_runtime/checkpoint/checkpoint.h"
#include "worker_runtime/train/sample_order.h"

namespace muster::train {
namespace {

// What a checkpoint must agree with to be resumed from: the flags that change
// the model or the data. The world size is not one of them.
nlohmann::json ModelIdentity(const TrainOptions& o) {
  return {{"hidden", o.hidden},
          {"depth", o.depth},
          {"features", o.features},
          {"classes", o.classes},
          {"seed", o.seed},
          {"global_batch", o.global_batch},
          {"dataset_size", o.dataset_size}};
}

// The data position is saved apart from the optimizer's step: a checkpoint
// is only resumed when the position is where that step begins.
Status CheckDataPosition(const TrainOptions& o, const runtime::Checkpoint& ckpt) {
  const uint64_t n = o.dataset_size;
  const runtime::SamplerState want = PositionAfterStep(ckpt.step, o.global_batch, n);
  // The end of an epoch may also be written as that epoch at position n.
  const bool at_step =
      (ckpt.epoch == want.epoch && ckpt.sampler_position == want.global_position) ||
      (want.global_position == 0 && want.epoch > 0 && ckpt.epoch == want.epoch - 1 &&
       ckpt.sampler_position == n);
  if (at_step) return Status::Ok();
  return Status::InvalidArgument(
      "checkpoint of step " + std::to_string(ckpt.step) + " in '" + o.checkpoint_dir +
      "' records data position epoch " + std::to_string(ckpt.epoch) + ", sample " +
      std::to_string(ckpt.sampler_position) + ", which is not where that step begins (epoch " +
      std::to_string(want.epoch) + ", sample " + std::to_string(want.global_position) + " with " +
      std::to_string(o.global_batch) + " samples per step and " + std::to_string(n) +
      " per epoch); use another --checkpoint-dir");
}

// Loads the newest valid checkpoint, if any, into `state`, checking it
// belongs to this model and data. Rank 0 only.
Result<ResumePoint> LoadNewest(const TrainOptions& o, TrainState& state) {
  if (o.checkpoint_dir.empty()) return ResumePoint{};
  auto loaded = runtime::LoadNewestCheckpoint(o.checkpoint_dir);
  if (!loaded.ok()) return loaded.status();
  if (!loaded->has_value()) return ResumePoint{};
  const runtime::Checkpoint& ckpt = **loaded;
  const nlohmann::json saved = nlohmann::json::parse(ckpt.metadata, nullptr, false);
  if (!saved.is_object() || saved.value("model", nlohmann::json()) != ModelIdentity(o)) {
    return Status::InvalidArgument("checkpoint in '" + o.checkpoint_dir +
                                   "' is of another model or data (" + ckpt.metadata +
                                   "); use another --checkpoint-dir");
  }
  if (Status s = CheckDataPosition(o, ckpt); !s.ok()) return s;
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
  ResumePoint point{.resumed = true, .step = ckpt.step};
  if (const auto loss = saved.find("last_loss"); loss != saved.end() && loss->is_number()) {
    point.last_loss = loss->get<double>();
  }
  if (const auto world = saved.find("world_size");
      world != saved.end() && world->is_number_integer()) {
    point.written_world_size = world->get<int>();
  }
  return point;
}

// The first value of the header rank 0 broadcasts: how loading went.
constexpr double kLoaded = 0;
constexpr double kBadInput = 1;
constexpr double kFailed = 2;

}  // namespace

Result<ResumePoint> AgreeOnResumePoint(const TrainOptions& o, int rank, ModelReplica& replica,
                                       TrainState& state) {
  Status loaded;
  ResumePoint point;
  if (rank == 0) {
    auto read = LoadNewest(o, state);
    if (read.ok()) {
      point = *read;
      if (!point.resumed) replica.layout().Initialize(o.seed, state.params);
    } else {
      loaded = read.status();
    }
  }
  // {outcome, resumed, step, last loss, written world size}: every integer
  // here stays far below 2^53, exact in a double.
  const double outcome = loaded.ok() ? kLoaded : loaded.IsInvalidArgument() ? kBadInput : kFailed;
  double header[5] = {outcome, point.resumed ? 1.0 : 0.0, static_cast<double>(point.step),
                      point.last_loss, static_cast<double>(point.written_world_size)};
  replica.Broadcast(header, 0);
  if (header[0] != kLoaded) {
    if (rank == 0) return loaded;
    const std::string why = "rank 0 could not resume from --checkpoint-dir (its message says why)";
    return header[0] == kBadInput ? Status::InvalidArgument(why) : Status::IoError(why);
  }
  point.resumed = header[1] != 0;
  point.step = static_cast<uint64_t>(header[2]);
  point.last_loss = header[3];
  point.written_world_size = static_cast<int>(header[4]);
  state.step = point.step;
  if (rank == 0) replica.SetState(state.params, state.momentum);
  replica.BroadcastState(0);
  return point;
}

Status SaveCheckpoint(const TrainOptions& o, int world_size, const TrainState& state,
                      double last_loss) {
  const runtime::SamplerState position =
      PositionAfterStep(state.step, o.global_batch, o.dataset_size);
  runtime::Checkpoint ckpt;
  ckpt.step = state.step;
  ckpt.epoch = position.epoch;
  ckpt.sampler_position = position.global_position;
  ckpt.metadata = nlohmann::json{
      {"model", ModelIdentity(o)},
      {"last_loss", last_loss},
      {"world_size",
       world_size}}.dump();
  ckpt.tensors = {{"params", state.params}, {"momentum", state.momentum}};
  return runtime::WriteCheckpoint(o.checkpoint_dir, ckpt);
}

}  // namespace muster::train
