// The command line as a source of flag values: splits argv[1..] into flag
// settings and SCRIPT [SCRIPT_ARGS...], torchrun style. Values are not parsed
// here (see command_line.h); only the shape is checked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cli/command_mode.h"
#include "launcher/cli/raw_settings.h"

namespace muster::cli {

struct ArgvSettings {
  RawSettings settings;  // origins are the flags as typed: "--nproc_per_node", "-r"
  bool help = false;     // -h/--help seen before SCRIPT
  bool version = false;  // --version seen before SCRIPT
  std::optional<std::string> script;
  std::vector<std::string> script_args;  // everything after SCRIPT, untouched
};

// Reads flags up to the first token that is not a flag (SCRIPT) or up to
// "--" (the token after it is SCRIPT). Accepts "--flag VALUE", "--flag=VALUE",
// "-r VALUE", "-rVALUE", "-r=VALUE", bare switches and "--switch=0|1|true|false",
// with dashes or underscores in long names. A value may not look like a flag
// ("--nnodes --standalone"), except a negative number.
//
// A long flag may be abbreviated as argparse allows (common/flag_match.h):
// an exact name wins, a unique prefix among the flags of `mode` stands for
// its flag ("--nproc 4", "--nproc_per_nod=4", "--stand"), an ambiguous one
// is refused naming the candidates. Single-dash tokens are never
// abbreviations: "-nnodes" is unknown, as in argparse.
//
// Stops at -h/--help or --version and returns with help/version set.
// Fails (InvalidArgument, one line) on an unknown flag, with a "did you mean"
// when one is close, on an ambiguous abbreviation, on a missing value, and
// on a value given to --help.
// A missing SCRIPT is not an error here: script stays nullopt.
Result<ArgvSettings> ReadArgv(const std::vector<std::string>& args,
                              CommandMode mode = CommandMode::kRun);

}  // namespace muster::cli
