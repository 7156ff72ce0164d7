// The public entry point of muster_cli: `muster [options] SCRIPT [ARGS...]`
// (or `muster launch ...`) into validated LaunchOptions.
//
//   auto outcome = muster::cli::ParseLaunchCommandLine({argv + 1, argv + argc},
//                                                      muster::cli::SystemEnv());
//   if (!outcome.options) {
//     (outcome.exit_code == 0 ? std::cout : std::cerr) << outcome.text << "\n";
//     return outcome.exit_code;
//   }
//
// Sources and precedence, per flag: command line > PET_<FLAG> environment
// variable > --config file (named by --config or PET_CONFIG) > SLURM's
// variables inside an srun step (slurm_source.h; not with --slurm off or
// --standalone) > default.
// Only the winning value of a flag is parsed, so a bad value that is
// overridden does no harm. Rules across flags (flag_rules.h) run on the
// merged result.
//
// Thread-safety: reentrant; reads the --config file and calls `env`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/command_mode.h"
#include "launcher/cli/env_source.h"
#include "launcher/cli/extra_options.h"
#include "launcher/cli/raw_settings.h"
#include "launcher/plan/launch_options.h"

namespace muster::cli {

struct CliOutcome {
  std::optional<LaunchOptions> options;  // set: go launch
  ExtraOptions extras;                   // meaningful when options is set
  RawSettings given;                     // the merged settings with their origins, for --dry-run
  int exit_code = 0;                     // when no options: 0 for --help/--version, 2 for errors
  std::string text;  // help/version text, or ONE line "muster: error: ..."; no trailing newline
};

// args: argv[1..]. env: where PET_* and MUSTER_PYTHON are read (SystemEnv()
// for the real process). Everything from SCRIPT on lands untouched in
// options->script and options->script_args. Errors name the flag as the user
// gave it (--nproc_per_node, PET_NNODES, "job.json: nnodes") and quote the
// bad value; the first error found is reported.
// `mode` kLaunch reads `muster launch`'s command line (args: what follows
// "launch"); see command_mode.h and ApplyCommandModeRules.
CliOutcome ParseLaunchCommandLine(const std::vector<std::string>& args, const EnvLookup& env,
                                  CommandMode mode = CommandMode::kRun);

}  // namespace muster::cli
