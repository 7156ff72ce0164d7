// OptionParser: the command line of a command that takes options only
// (musterd, `muster status`), read by the rules muster's own flags follow
// (launcher/cli/argv_source.h), and its --help text in muster's layout
// (help_layout.h).
//
//   constexpr OptionSpec kOptions[] = {
//       {"port", "", 0, OptionKind::kValue, "Listening", "PORT", "29400", "Port to listen on."},
//       {"help", "", 'h', OptionKind::kHelp, "General", "", "", "Show this help and exit."}};
//   auto parsed = ParseOptions(args, kOptions);
//   if (!parsed.ok()) ...  // "unknown flag '--prot'; did you mean '--port'?"
//   if (const std::string* port = parsed->Last("port")) ...
//
// Rules: "--flag VALUE" or "--flag=VALUE"; dashes or underscores in long
// names; a unique prefix of a long name stands for it, as with argparse
// (flag_match.h); a value may not look like a flag, except a negative
// number; a value-taking flag given twice keeps the last value unless it is
// repeatable (then every value, in order); a switch takes no value.
// Anything that is not a flag is refused: these commands take no operands.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster {

enum class OptionKind {
  kValue,    // takes one value
  kSwitch,   // takes none
  kHelp,     // -h/--help: stops reading, ParsedOptions::help
  kVersion,  // --version: stops reading, ParsedOptions::version
};

struct OptionSpec {
  std::string_view name;   // canonical: dashes, without "--"
  std::string_view alias;  // a second name for the same option; empty: none
  char short_name;         // 0: none
  OptionKind kind;
  std::string_view heading;       // the help group it is listed under
  std::string_view metavar;       // for help; empty for switches
  std::string_view default_text;  // for help; empty: no default shown
  std::string_view help;
  bool repeatable = false;  // kValue: keep every value, not only the last
};

struct ParsedOptions {
  // Canonical name -> the values given, in order ("1" per switch given).
  // Holds only the options given.
  std::map<std::string, std::vector<std::string>, std::less<>> values;
  bool help = false;     // stopped at -h/--help
  bool version = false;  // stopped at --version

  bool Given(std::string_view name) const { return values.contains(name); }
  // The last value of `name`; nullptr when not given.
  const std::string* Last(std::string_view name) const;
  // Every value of `name`; empty when not given.
  std::vector<std::string> All(std::string_view name) const;
};

// args: argv[1..] (or what follows a subcommand). Fails with InvalidArgument,
// one line naming the flag as typed: an unknown flag (with "did you mean"),
// an ambiguous prefix (naming the candidates), a missing value
// ("--port: missing value (PORT)"), a value given to a switch, or an operand
// ("unexpected argument 'x'").
Result<ParsedOptions> ParseOptions(std::span<const std::string> args,
                                   std::span<const OptionSpec> specs);

// `intro` (usage line and description, ending in '\n'), a paragraph on the
// flag syntax, then every option under its heading, in `specs` order.
// No trailing newline.
std::string OptionsHelp(std::string_view intro, std::span<const OptionSpec> specs);

}  // namespace muster
