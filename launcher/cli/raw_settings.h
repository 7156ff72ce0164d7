// RawSettings: flag values as text, before parsing, from one source (the
// command line, the environment, the config file or SLURM's variables).
// Keeping every source in this one shape is what makes precedence a simple
// per-flag overlay.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/cli/flag_table.h"

namespace muster::cli {

// Which kind of source set a value; --dry-run reports it.
enum class ValueSource { kCommandLine, kEnv, kConfigFile, kSlurm };

struct RawValue {
  std::string text;    // what the command line would carry; "1"/"0" for switches
  std::string origin;  // how errors name it: "--nproc_per_node", "PET_NNODES", "job.json: nnodes",
                       // "SLURM_NNODES"
  ValueSource source;
};

// "flag", "env", "file" or "SLURM", as --dry-run prints it.
std::string_view ValueSourceName(ValueSource source);

class RawSettings {
 public:
  RawSettings();

  // Records `value` for `flag`, replacing an earlier one (the last of a
  // repeated flag wins, as in torchrun), except --inject: repeated within
  // one source, its specs are joined with ';'.
  void Set(const FlagSpec& flag, RawValue value);

  // The value for `flag`, or nullptr when this source does not set it.
  const RawValue* Get(const FlagSpec& flag) const;

  // Forgets the value for `flag`.
  void Clear(const FlagSpec& flag);

  // Each flag takes the value of `higher` where `higher` sets it, else keeps
  // its own.
  void OverlayWith(const RawSettings& higher);

 private:
  std::vector<std::optional<RawValue>> slots_;  // indexed by FlagIndex
};

}  // namespace muster::cli
