// Fuzzes the launcher's command line (launcher/cli/command_line.h) end to
// end: argv through ReadArgv, the flag table's value parsers, PET_* and
// SLURM_* variables and the rules across flags, in both command modes
// (`muster ...` and `muster launch ...`).
//
// Input: NUL-separated tokens. A token that starts with the byte 0x01 is an
// environment variable "NAME=VALUE" (after the 0x01; the environment is
// otherwise empty, never the process's); every other token is the next
// argument. An input with a '/' anywhere is skipped: a --config value may
// then only name something in the working directory (run_fuzzers.sh runs
// each target in a temporary one), never /dev/zero or a file elsewhere.
//
// Invariants beyond "no crash, no sanitizer report, no exception":
//   - the outcome is options (exit code 0, no text), help or version text
//     (exit code 0, exactly HelpText(mode) or VersionText()), or an error
//     (exit code 2, one non-empty line "muster: error: ...");
//   - when ReadArgv refuses the arguments, the error is its message;
//   - accepted options hold their documented ranges (launch_options.h):
//     1 <= min_nodes <= max_nodes, 0 <= node_rank < max_nodes, a count of
//     processes >= 1, max_restarts >= 0, a master port within 0..65535;
//     SCRIPT and its arguments are the ones ReadArgv found, untouched.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/cli/argv_source.h"
#include "launcher/cli/command_line.h"
#include "launcher/cli/help_text.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace cli = muster::cli;
using muster::fuzz::Printable;

std::string Describe(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& arg : args) out += " '" + Printable(arg) + "'";
  return out;
}

void Check(const std::vector<std::string>& args, const muster::EnvLookup& env,
           cli::CommandMode mode) {
  const cli::CliOutcome outcome = cli::ParseLaunchCommandLine(args, env, mode);
  const std::string where = (mode == cli::CommandMode::kRun ? "run:" : "launch:") + Describe(args);
  const auto argv = cli::ReadArgv(args, mode);
  if (!outcome.options) {
    if (outcome.exit_code == 0) {
      FUZZ_CHECK(outcome.text == cli::HelpText(mode) || outcome.text == cli::VersionText(),
                 where + ": exit code 0 without options, help or version");
      FUZZ_CHECK(argv.ok() && (argv->help || argv->version), where + ": help text unasked");
      return;
    }
    FUZZ_CHECK(outcome.exit_code == 2, where + ": exit code " + std::to_string(outcome.exit_code));
    FUZZ_CHECK(outcome.text.starts_with("muster: error: ") &&
                   outcome.text.size() > sizeof("muster: error: ") - 1,
               where + ": error text " + Printable(outcome.text));
    FUZZ_CHECK(outcome.text.find('\n') == std::string::npos,
               where + ": the error is not one line: " + Printable(outcome.text));
    if (!argv.ok()) {
      FUZZ_CHECK(outcome.text == "muster: error: " + argv.status().message(),
                 where + ": not ReadArgv's error: " + Printable(outcome.text));
    }
    return;
  }
  FUZZ_CHECK(outcome.exit_code == 0 && outcome.text.empty(),
             where + ": options with exit code or text " + Printable(outcome.text));
  FUZZ_CHECK(argv.ok() && argv->script, where + ": options without ReadArgv's SCRIPT");
  const muster::LaunchOptions& o = *outcome.options;
  FUZZ_CHECK(o.script == *argv->script && o.script_args == argv->script_args,
             where + ": SCRIPT or its arguments changed");
  FUZZ_CHECK(1 <= o.min_nodes && o.min_nodes <= o.max_nodes,
             where + ": nodes " + std::to_string(o.min_nodes) + ":" + std::to_string(o.max_nodes));
  FUZZ_CHECK(0 <= o.node_rank && o.node_rank < o.max_nodes,
             where + ": node_rank " + std::to_string(o.node_rank));
  FUZZ_CHECK(
      o.nproc_per_node.kind != muster::ProcsPerNode::Kind::kCount || o.nproc_per_node.count >= 1,
      where + ": nproc_per_node " + std::to_string(o.nproc_per_node.count));
  FUZZ_CHECK(o.max_restarts >= 0, where + ": max_restarts " + std::to_string(o.max_restarts));
  FUZZ_CHECK(!o.master_port || (*o.master_port >= 0 && *o.master_port <= 65535),
             where + ": master_port " + std::to_string(*o.master_port));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input.find('/') != std::string_view::npos) return -1;
  std::vector<std::string> args;
  std::map<std::string, std::string> vars;
  for (size_t at = 0; at <= input.size();) {
    size_t end = input.find('\0', at);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view token = input.substr(at, end - at);
    if (token.starts_with('\x01')) {
      const size_t eq = token.find('=');
      if (eq != std::string_view::npos) {
        vars[std::string(token.substr(1, eq - 1))] = std::string(token.substr(eq + 1));
      }
    } else if (!(token.empty() && end == input.size())) {  // no empty argument from a final NUL
      args.emplace_back(token);
    }
    at = end + 1;
  }
  const muster::EnvLookup env = [&vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  Check(args, env, cli::CommandMode::kRun);
  Check(args, env, cli::CommandMode::kLaunch);
  return 0;
}
