#include "worker_runtime/train/train_options.h"

#include <sstream>
#include <string>
#include <utility>

namespace muster::train {
namespace {

// A value as the user wrote it: "0", "-1.5", not "0.000000".
std::string AsWritten(double v) {
  std::ostringstream quoted;
  quoted << v;
  return quoted.str();
}

}  // namespace

Status CheckOptions(const TrainOptions& o) {
  auto positive = [](const char* flag, double v) -> Status {
    if (v > 0) return Status::Ok();
    return Status::InvalidArgument(std::string(flag) + "=" + AsWritten(v) + " must be positive");
  };
  for (auto [flag, value] : {std::pair{"--steps", double(o.steps)},
                             {"--global-batch", double(o.global_batch)},
                             {"--hidden", double(o.hidden)},
                             {"--lr", o.lr},
                             {"--features", double(o.features)},
                             {"--dataset-size", double(o.dataset_size)},
                             {"--bucket-mb", o.bucket_mb},
                             {"--collective-timeout", o.collective_timeout_s}}) {
    if (Status s = positive(flag, value); !s.ok()) return s;
  }
  if (o.depth < 0)
    return Status::InvalidArgument("--depth=" + std::to_string(o.depth) + " must be 0 or more");
  if (o.classes < 2)
    return Status::InvalidArgument("--classes=" + std::to_string(o.classes) +
                                   " must be at least 2");
  if (o.momentum < 0 || o.momentum >= 1) {
    return Status::InvalidArgument("--momentum=" + AsWritten(o.momentum) + " must be in [0, 1)");
  }
  return Status::Ok();
}

ReplicaOptions ReplicaOptionsFor(const TrainOptions& o) {
  std::vector<int> sizes{o.features};
  for (int d = 0; d < o.depth; ++d) sizes.push_back(o.hidden);
  sizes.push_back(o.classes);
  return {.sizes = std::move(sizes),
          .lr = static_cast<float>(o.lr),
          .momentum = static_cast<float>(o.momentum),
          .bucket_bytes = static_cast<size_t>(o.bucket_mb * 1024 * 1024),
          .overlap = o.overlap};
}

}  // namespace muster::train
