// SamplerState: where a job stands in its data, small enough to store in a
// checkpoint and read back after a restart (possibly with another world size,
// as long as the position divides evenly; see DistributedSampler::Resume).
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::runtime {

struct SamplerState {
  uint64_t epoch = 0;
  // Samples consumed in `epoch` by all ranks together (per-rank position times
  // the world size), padding included.
  uint64_t global_position = 0;

  bool operator==(const SamplerState&) const = default;

  // {"epoch":E,"global_position":P}
  std::string ToJson() const;
  // Parses ToJson's output. Errors quote the text or name the missing or
  // malformed field.
  static Result<SamplerState> FromJson(std::string_view json);
};

}  // namespace muster::runtime
