#include "launcher/cli/argv_source.h"

#include "common/quote.h"
#include "launcher/cli/suggest.h"

namespace muster::cli {
namespace {

std::string Dashed(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

// A token that starts a flag, not a value: negative numbers are values so that
// "--max-restarts -1" reports the bad number rather than a missing value.
bool LooksLikeFlag(const std::string& token) {
  if (token.size() < 2 || token[0] != '-') return false;
  return !((token[1] >= '0' && token[1] <= '9') || token[1] == '.');
}

Status UnknownFlag(std::string_view typed) {
  std::vector<std::string> candidates;
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromCommandLine)) continue;
    candidates.push_back("--" + std::string(flag.name));
    if (flag.short_name != 0) candidates.push_back(std::string("-") + flag.short_name);
  }
  std::string message = "unknown flag " + Quote(typed);
  if (auto best = Suggest(Dashed(typed), candidates)) {
    // Answer in the spelling the user writes: --nproc_per_nod -> --nproc_per_node.
    if (typed.find('_') != std::string_view::npos && best->starts_with("--")) {
      for (std::size_t i = 2; i < best->size(); ++i) {
        if ((*best)[i] == '-') (*best)[i] = '_';
      }
    }
    message += "; did you mean '" + *best + "'?";
  }
  return Status::InvalidArgument(message);
}

}  // namespace

Result<ArgvSettings> ReadArgv(const std::vector<std::string>& args) {
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
      const std::size_t eq = token.find('=');
      origin = token.substr(0, eq);
      if (eq != std::string::npos) inline_value = token.substr(eq + 1);
      flag = FindFlag(std::string_view(origin).substr(2));
      if (flag != nullptr && !(flag->sources & kFromCommandLine)) flag = nullptr;
    } else {
      origin = token.substr(0, 2);
      flag = FindShortFlag(token[1]);
      if (flag != nullptr && token.size() > 2) {
        // "-r3" and "-r=3" carry the value; a switch takes no letters after it.
        if (flag->kind != ValueKind::kValue) return UnknownFlag(token);
        inline_value = token.substr(token[2] == '=' ? 3 : 2);
      }
      if (flag == nullptr) return UnknownFlag(token.substr(0, token.find('=')));
    }
    if (flag == nullptr) return UnknownFlag(origin);
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
