#include "launcher/cli/argv_source.h"

#include "common/flag_match.h"

namespace muster::cli {
namespace {

bool OnCommandLineOf(const FlagSpec& flag, CommandMode mode) {
  if (!(flag.sources & kFromCommandLine)) return false;
  return mode == CommandMode::kLaunch || flag.group != FlagGroup::kLaunch;
}

// The long flag named by `typed` (without "--"): its exact name, else a
// unique prefix among the flags of `mode` (a prefix never picks a flag only
// `muster launch` takes for plain `muster`; the exact name does, and the
// mode rule then explains).
// torchrun's own long flags (torch 2.14's argparse, torch 1.13's are among
// them). A prefix unique among these is what a torchrun command line means,
// even where flags only muster has make it ambiguous ("--re" is --redirects
// to torchrun, beside muster's --recovery).
constexpr std::string_view kTorchrunFlags[] = {
    "duplicate-stderr-filters",
    "duplicate-stdout-filters",
    "event-log-handler",
    "help",
    "local-addr",
    "local-ranks-filter",
    "log-dir",
    "logs-specs",
    "master-addr",
    "master-port",
    "max-restarts",
    "module",
    "monitor-interval",
    "nnodes",
    "no-python",
    "node-rank",
    "nproc-per-node",
    "numa-binding",
    "rdzv-backend",
    "rdzv-conf",
    "rdzv-endpoint",
    "rdzv-id",
    "redirects",
    "role",
    "run-path",
    "shutdown-timeout",
    "signals-to-handle",
    "standalone",
    "start-method",
    "tee",
    "virtual-local-rank",
};

Result<const FlagSpec*> LongFlag(std::string_view typed, CommandMode mode) {
  if (const FlagSpec* exact = FindFlag(typed); exact != nullptr) {
    if (exact->sources & kFromCommandLine) return exact;
  }
  // Not for `muster launch`: torch.distributed.launch has a --local-rank of
  // its own, which muster does not, so torchrun's list would mislead there.
  if (mode == CommandMode::kRun) {
    std::vector<FlagName> torchrun_names;
    for (std::string_view name : kTorchrunFlags) {
      if (const FlagSpec* flag = FindFlag(name); flag != nullptr) {
        torchrun_names.push_back({flag->name, FlagIndex(*flag)});
      }
    }
    if (auto torchrun = MatchLongFlag(typed, torchrun_names); torchrun.ok()) {
      return &Flags()[*torchrun];
    }
  }
  std::vector<FlagName> names;
  for (const FlagSpec& flag : Flags()) {
    if (OnCommandLineOf(flag, mode)) names.push_back({flag.name, FlagIndex(flag)});
  }
  auto index = MatchLongFlag(typed, names);
  if (!index.ok()) return index.status();
  return &Flags()[*index];
}

// An unknown single-dash token ("-x", "-nproc_per_node"), with the flag it
// may have meant.
Status UnknownShortFlag(std::string_view typed) {
  std::vector<std::string> candidates;
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromCommandLine)) continue;
    candidates.push_back("--" + std::string(flag.name));
    if (flag.short_name != 0) candidates.push_back(std::string("-") + flag.short_name);
  }
  return UnknownFlag(typed, candidates);
}

}  // namespace

Result<ArgvSettings> ReadArgv(const std::vector<std::string>& args, CommandMode mode) {
  ArgvSettings out;
  std::size_t i = 0;
  while (i < args.size()) {
    const std::string& token = args[i];
    if (token == "--") {
      ++i;
      break;
    }
    if (!LooksLikeFlag(token)) break;  // SCRIPT

    const FlagSpec* flag = nullptr;
    std::string origin;  // the flag as typed, for messages
    std::optional<std::string> inline_value;
    if (token.starts_with("--")) {
      LongToken long_token = SplitLongToken(token);
      origin = std::move(long_token.typed);
      inline_value = std::move(long_token.value);
      auto found = LongFlag(std::string_view(origin).substr(2), mode);
      if (!found.ok()) return found.status();
      flag = *found;
    } else {
      origin = token.substr(0, 2);
      flag = FindShortFlag(token[1]);
      if (flag != nullptr && token.size() > 2) {
        // "-r3" and "-r=3" carry the value; a switch takes no letters after it.
        if (flag->kind != ValueKind::kValue) return UnknownShortFlag(token);
        inline_value = token.substr(token[2] == '=' ? 3 : 2);
      }
      if (flag == nullptr) return UnknownShortFlag(token.substr(0, token.find('=')));
    }
    ++i;

    switch (flag->kind) {
      case ValueKind::kAction:
        if (inline_value) return Status::InvalidArgument(origin + " takes no value");
        (flag->name == "help" ? out.help : out.version) = true;
        return out;
      case ValueKind::kSwitch:
        out.settings.Set(*flag, {inline_value.value_or("1"), origin, ValueSource::kCommandLine});
        break;
      case ValueKind::kValue:
        if (!inline_value) {
          if (i == args.size() || LooksLikeFlag(args[i])) {
            return Status::InvalidArgument(origin + ": missing value (" +
                                           std::string(flag->metavar) + ")");
          }
          inline_value = args[i++];
        }
        out.settings.Set(*flag, {std::move(*inline_value), origin, ValueSource::kCommandLine});
        break;
    }
  }
  if (i < args.size()) {
    out.script = args[i];
    out.script_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  }
  return out;
}

}  // namespace muster::cli
