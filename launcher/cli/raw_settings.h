// RawSettings: flag values as text, before parsing, from one source (the
// command line, the environment or the config file). Keeping every source in
// this one shape is what makes precedence a simple per-flag overlay.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/flag_table.h"

namespace muster::cli {

struct RawValue {
  std::string text;    // what the command line would carry; "1"/"0" for switches
  std::string origin;  // how errors name it: "--nproc_per_node", "PET_NNODES", "job.json: nnodes"
};

class RawSettings {
 public:
  RawSettings();

  // Records `value` for `flag`, replacing an earlier one (the last of a
  // repeated flag wins, as in torchrun).
  void Set(const FlagSpec& flag, RawValue value);

  // The value for `flag`, or nullptr when this source does not set it.
  const RawValue* Get(const FlagSpec& flag) const;

  // Each flag takes the value of `higher` where `higher` sets it, else keeps
  // its own.
  void OverlayWith(const RawSettings& higher);

 private:
  std::vector<std::optional<RawValue>> slots_;  // indexed by FlagIndex
};

}  // namespace muster::cli
