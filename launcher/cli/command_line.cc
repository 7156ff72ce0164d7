#include "launcher/cli/command_line.h"

#include "launcher/cli/argv_source.h"
#include "launcher/cli/config_source.h"
#include "launcher/cli/flag_rules.h"
#include "launcher/cli/help_text.h"

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

}  // namespace

CliOutcome ParseLaunchCommandLine(const std::vector<std::string>& args, const EnvLookup& env) {
  auto command_line = ReadArgv(args);
  if (!command_line.ok()) return Fail(command_line.status().message());
  if (command_line->help) return Print(HelpText());
  if (command_line->version) return Print(VersionText());
  if (!command_line->script) {
    return Fail("missing SCRIPT; usage: muster [options] SCRIPT [SCRIPT_ARGS...] (see --help)");
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

  parsed.options.script = std::move(*command_line->script);
  parsed.options.script_args = std::move(command_line->script_args);
  CliOutcome outcome;
  outcome.options = std::move(parsed.options);
  outcome.extras = std::move(parsed.extras);
  return outcome;
}

}  // namespace muster::cli
