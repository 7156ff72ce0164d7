#include "common/option_parser.h"

#include "common/flag_match.h"
#include "common/help_layout.h"
#include "common/quote.h"

#include <optional>

namespace muster {
namespace {

// A token that starts a flag, not a value: negative numbers are values so
// that "--port -1" reports the bad number rather than a missing value.
std::vector<FlagName> LongNames(std::span<const OptionSpec> specs) {
  std::vector<FlagName> names;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    names.push_back({specs[i].name, i});
    if (!specs[i].alias.empty()) names.push_back({specs[i].alias, i});
  }
  return names;
}

Status UnknownShortFlag(std::string_view typed, std::span<const OptionSpec> specs) {
  std::vector<std::string> candidates;
  for (const OptionSpec& spec : specs) {
    candidates.push_back("--" + std::string(spec.name));
    if (spec.short_name != 0) candidates.push_back(std::string("-") + spec.short_name);
  }
  return UnknownFlag(typed, candidates);
}

}  // namespace

const std::string* ParsedOptions::Last(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? nullptr : &it->second.back();
}

std::vector<std::string> ParsedOptions::All(std::string_view name) const {
  auto it = values.find(name);
  return it == values.end() ? std::vector<std::string>() : it->second;
}

Result<ParsedOptions> ParseOptions(std::span<const std::string> args,
                                   std::span<const OptionSpec> specs) {
  const std::vector<FlagName> names = LongNames(specs);
  ParsedOptions out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (token == "--") {
      if (i + 1 < args.size()) {
        return Status::InvalidArgument("unexpected argument " + Quote(args[i + 1]));
      }
      break;
    }
    if (!LooksLikeFlag(token))
      return Status::InvalidArgument("unexpected argument " + Quote(token));

    const OptionSpec* spec = nullptr;
    std::string origin;  // the flag as typed, for messages
    std::optional<std::string> inline_value;
    if (token.starts_with("--")) {
      LongToken long_token = SplitLongToken(token);
      origin = std::move(long_token.typed);
      inline_value = std::move(long_token.value);
      auto option = MatchLongFlag(std::string_view(origin).substr(2), names);
      if (!option.ok()) return option.status();
      spec = &specs[*option];
    } else {
      origin = token.substr(0, token.find('='));
      for (const OptionSpec& candidate : specs) {
        if (candidate.short_name != 0 && origin.size() == 2 && origin[1] == candidate.short_name) {
          spec = &candidate;
        }
      }
      if (spec == nullptr) return UnknownShortFlag(origin, specs);
      if (origin.size() < token.size()) inline_value = token.substr(origin.size() + 1);
    }

    const std::string name(spec->name);
    switch (spec->kind) {
      case OptionKind::kHelp:
      case OptionKind::kVersion:
        if (inline_value) return Status::InvalidArgument(origin + " takes no value");
        (spec->kind == OptionKind::kHelp ? out.help : out.version) = true;
        return out;
      case OptionKind::kSwitch:
        if (inline_value) return Status::InvalidArgument(origin + " takes no value");
        out.values[name].push_back("1");
        break;
      case OptionKind::kValue:
        if (!inline_value) {
          if (i + 1 == args.size() || LooksLikeFlag(args[i + 1])) {
            return Status::InvalidArgument(origin + ": missing value (" +
                                           std::string(spec->metavar) + ")");
          }
          inline_value = args[++i];
        }
        auto& values = out.values[name];
        if (!spec->repeatable) values.clear();
        values.push_back(std::move(*inline_value));
        break;
    }
  }
  return out;
}

std::string OptionsHelp(std::string_view intro, std::span<const OptionSpec> specs) {
  std::string out(intro);
  out +=
      "Long flags take dashes or underscores (--token-file, --token_file), a unique\n"
      "prefix stands for the whole flag (--tok for --token-file), and values are\n"
      "given as --flag VALUE or --flag=VALUE.\n";
  std::string_view heading;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const OptionSpec& spec = specs[i];
    if (i == 0 || spec.heading != heading) {
      heading = spec.heading;
      out += '\n';
      out += heading;
      out += ":\n";
    }
    std::string names;
    if (spec.short_name != 0) {
      names += '-';
      names += spec.short_name;
      names += ", ";
    }
    names += BothSpellings(spec.name);
    if (!spec.alias.empty()) {
      names += ", ";
      names += BothSpellings(spec.alias);
    }
    if (!spec.metavar.empty()) {
      names += ' ';
      names += spec.metavar;
    }
    AppendOptionHelp(out, names, spec.help, spec.default_text);
  }
  if (!specs.empty()) out.pop_back();
  return out;
}

}  // namespace muster
