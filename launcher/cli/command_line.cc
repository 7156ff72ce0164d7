#include "launcher/cli/command_line.h"

#include "launcher/cli/argv_source.h"
#include "launcher/cli/config_source.h"
#include "launcher/cli/flag_rules.h"
#include "launcher/cli/help_text.h"
#include "launcher/cli/number_parsers.h"
#include "launcher/cli/slurm_source.h"

namespace muster::cli {
namespace {

// Exit code 2, as argparse and CLI11 use for usage errors.
constexpr int kUsageError = 2;

CliOutcome Fail(const std::string& message) {
  CliOutcome outcome;
  outcome.exit_code = kUsageError;
  outcome.text = "muster: error: " + message;
  return outcome;
}

CliOutcome Print(std::string text) {
  CliOutcome outcome;
  outcome.text = std::move(text);
  return outcome;
}

bool IsOn(const RawValue* value) {
  if (value == nullptr) return false;
  auto on = ParseBool(value->text);
  return on.ok() && *on;
}

// SLURM's settings, unless --slurm off or --standalone (one node, whatever
// the allocation) says to ignore them. --master-addr/--master-port ask for
// torchrun's static setup: then the backend and endpoint are not derived.
Result<SlurmSettings> ReadSlurmUnlessOff(const RawSettings& given, const EnvLookup& env) {
  const RawValue* mode = given.Get(*FindFlag("slurm"));
  if ((mode != nullptr && mode->text == "off") || IsOn(given.Get(*FindFlag("standalone")))) {
    return SlurmSettings{};
  }
  auto slurm = ReadSlurmSettings(env);
  if (!slurm.ok() || !slurm->in_step) return slurm;
  if (given.Get(*FindFlag("master-addr")) != nullptr ||
      given.Get(*FindFlag("master-port")) != nullptr) {
    slurm->settings.Clear(*FindFlag("rdzv-backend"));
    slurm->settings.Clear(*FindFlag("rdzv-endpoint"));
  }
  return slurm;
}

// As torchrun's c10d on the endpoint's host: the agent of the step's first
// node runs the rendezvous daemon when the endpoint is SLURM's and elastic.
void HostRendezvousOnFirstNode(const RawSettings& given, const SlurmSettings& slurm,
                               ParsedFlags& parsed) {
  const RawValue* endpoint = given.Get(*FindFlag("rdzv-endpoint"));
  LaunchOptions& options = parsed.options;
  const bool elastic =
      options.rdzv_backend != "static" && (options.min_nodes != 1 || options.max_nodes != 1);
  if (endpoint == nullptr || endpoint->source != ValueSource::kSlurm || !elastic ||
      options.rdzv_conf.contains("is_host")) {
    return;
  }
  options.rdzv_conf.emplace("is_host", slurm.node_id == 0 ? "1" : "0");
  parsed.extras.derived.push_back("rdzv-conf is_host=" + options.rdzv_conf["is_host"] +
                                  " (SLURM_NODEID=" + std::to_string(slurm.node_id) +
                                  (slurm.node_id == 0 ? ": this node hosts the rendezvous)"
                                                      : ": node 0 hosts the rendezvous)"));
}

}  // namespace

CliOutcome ParseLaunchCommandLine(const std::vector<std::string>& args, const EnvLookup& env,
                                  CommandMode mode) {
  auto command_line = ReadArgv(args, mode);
  if (!command_line.ok()) return Fail(command_line.status().message());
  if (command_line->help) return Print(HelpText(mode));
  if (command_line->version) return Print(VersionText());
  if (!command_line->script) {
    return Fail(
        mode == CommandMode::kLaunch
            ? "missing SCRIPT; usage: muster launch [options] [--use-env] SCRIPT "
              "[SCRIPT_ARGS...] (see muster launch --help)"
            : "missing SCRIPT; usage: muster [options] SCRIPT [SCRIPT_ARGS...] (see --help)");
  }

  // Lowest precedence first; each source overlays the one below it.
  const RawSettings env_settings = ReadEnvSettings(env);
  const FlagSpec& config_flag = *FindFlag("config");
  const RawValue* config = command_line->settings.Get(config_flag);
  if (config == nullptr) config = env_settings.Get(config_flag);
  RawSettings merged;
  if (config != nullptr) {
    if (config->text.empty()) return Fail(config->origin + ": '' must not be empty");
    auto from_file = ReadConfigFile(config->text);
    if (!from_file.ok()) return Fail(from_file.status().message());
    merged = std::move(*from_file);
  }
  merged.OverlayWith(env_settings);
  merged.OverlayWith(command_line->settings);

  // SLURM's values sit below every source the user writes.
  auto slurm = ReadSlurmUnlessOff(merged, env);
  if (!slurm.ok()) return Fail(slurm.status().message());
  if (slurm->in_step) {
    RawSettings with_slurm = std::move(slurm->settings);
    with_slurm.OverlayWith(merged);
    merged = std::move(with_slurm);
  }

  ParsedFlags parsed;
  for (const FlagSpec& flag : Flags()) {
    const RawValue* value = merged.Get(flag);
    if (value == nullptr || flag.apply == nullptr) continue;
    if (Status status = flag.apply(value->text, parsed); !status.ok()) {
      return Fail(value->origin + ": " + status.message());
    }
  }
  if (Status status = ApplyFlagRules(merged, env, parsed.options); !status.ok()) {
    return Fail(status.message());
  }
  if (Status status = ApplyCommandModeRules(merged, mode, parsed); !status.ok()) {
    return Fail(status.message());
  }
  if (slurm->in_step) HostRendezvousOnFirstNode(merged, *slurm, parsed);

  parsed.options.script = std::move(*command_line->script);
  parsed.options.script_args = std::move(command_line->script_args);
  CliOutcome outcome;
  outcome.options = std::move(parsed.options);
  outcome.extras = std::move(parsed.extras);
  outcome.given = std::move(merged);
  return outcome;
}

}  // namespace muster::cli
