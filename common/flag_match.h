// FlagMatch: which flag a long flag typed on a command line names, resolved
// as Python's argparse resolves it (allow_abbrev), so that torchrun command
// lines with abbreviated flags ("--nproc 4") run unchanged. Shared by
// muster, `muster launch`, `muster status` and musterd.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster {

// One name of a command's option. An option may have several names
// (aliases, e.g. --run-id and --rdzv-id): they share `option`.
struct FlagName {
  std::string_view name;  // canonical: dashes, without the leading "--"
  std::size_t option;     // the caller's index of the option it names
};

// The option that `typed` (a long flag without its leading "--" and without
// "=VALUE"; dashes and underscores in any mix) names among `names`:
//   - a name equal to it (underscores read as dashes) wins, even when it is
//     also the start of other names (--inject beside --inject-seed);
//   - else the options having a name that starts with it: exactly one is
//     that option (--nproc_per_nod, --nproc: --nproc-per-node);
//   - several: InvalidArgument naming each option once, in the user's
//     spelling: "ambiguous flag '--gpu' could match --gpus, --gpu-visibility"
//     (argparse names every spelling: "--nproc-per-node, --nproc_per_node");
//   - none: UnknownFlag(typed, every name).
// An empty `typed` matches nothing. Candidates are listed in `names` order.
Result<std::size_t> MatchLongFlag(std::string_view typed, std::span<const FlagName> names);

// A token that starts a flag, not a value: negative numbers are values, so
// "--max-restarts -1" reports the bad number rather than a missing value.
bool LooksLikeFlag(std::string_view token);

// "--name=value" or "--name": the flag as typed (for messages) and the value
// written inside the token, if any.
struct LongToken {
  std::string typed;
  std::optional<std::string> value;
};
LongToken SplitLongToken(std::string_view token);

// InvalidArgument "unknown flag '--x'", with "; did you mean '--y'?" when a
// candidate is close (Suggest). `typed` as the user wrote it ("--nproc_per_nde",
// "-nnodes"); `candidates` as written on the command line with dashes
// ("--nproc-per-node", "-r"). The suggestion takes underscores when `typed`
// has one.
Status UnknownFlag(std::string_view typed, std::span<const std::string> candidates);

// A flag's name with its dashes as underscores ("nproc-per-node" ->
// "nproc_per_node"): how a config file key or an environment name spells it.
std::string UnderscoredName(std::string_view dashed_name);

}  // namespace muster
