// The command-line syntax shared by muster, `muster status` and musterd:
// argparse-style abbreviations, "did you mean", the options-only parser and
// the --help layout.
#include <catch2/catch.hpp>

#include "common/flag_match.h"
#include "common/help_layout.h"
#include "common/option_parser.h"

namespace muster {
namespace {

// Options 0..3; "rdzv-id" is an alias of option 2.
const FlagName kNames[] = {
    {"rdzv-endpoint", 0}, {"run-id", 1}, {"rdzv-id", 1}, {"json", 2}, {"inject", 3}};

std::string Match(std::string_view typed) {
  auto found = MatchLongFlag(typed, kNames);
  return found.ok() ? std::to_string(*found) : found.status().message();
}

TEST_CASE("an exact name wins, a unique prefix stands for its flag, in either spelling") {
  CHECK(Match("json") == "2");
  CHECK(Match("js") == "2");
  CHECK(Match("rdzv_endp") == "0");
  CHECK(Match("rdzv-i") == "1");
  CHECK(Match("run_id") == "1");
}

TEST_CASE("aliases of one option are one candidate, and distinct options make a prefix ambiguous") {
  CHECK(Match("r") == "ambiguous flag '--r' could match --rdzv-endpoint, --run-id");
  CHECK(Match("rdzv") == "ambiguous flag '--rdzv' could match --rdzv-endpoint, --rdzv-id");
  CHECK(Match("rdzv_") == "ambiguous flag '--rdzv_' could match --rdzv_endpoint, --rdzv_id");
}

TEST_CASE("an unknown flag gets a suggestion only when one is close") {
  CHECK(Match("jsno") == "unknown flag '--jsno'; did you mean '--json'?");
  CHECK(Match("rnu_id") == "unknown flag '--rnu_id'; did you mean '--run_id'?");
  CHECK(Match("colour") == "unknown flag '--colour'");
  CHECK(Match("") == "unknown flag '--'");
}

constexpr OptionSpec kSpecs[] = {
    {"port", "", 0, OptionKind::kValue, "Listening", "PORT", "29400", "Port to listen on."},
    {"token-file", "", 0, OptionKind::kValue, "Listening", "FILE", "", "Secret."},
    {"inject", "", 0, OptionKind::kValue, "Faults", "SPEC", "", "Fault.", true},
    {"json", "", 0, OptionKind::kSwitch, "Faults", "", "", "JSON."},
    {"help", "", 'h', OptionKind::kHelp, "General", "", "", "Show this help and exit."},
};

std::string ErrorOf(std::vector<std::string> args) {
  auto parsed = ParseOptions(args, kSpecs);
  REQUIRE_FALSE(parsed.ok());
  return parsed.status().message();
}

TEST_CASE("options-only command lines: values, repeats, switches, prefixes") {
  const std::vector<std::string> args = {"--po",     "1", "--port=2", "--token_file", "t",
                                         "--inject", "a", "--inj=b",  "--json"};
  auto parsed = ParseOptions(args, kSpecs);
  REQUIRE(parsed.ok());
  CHECK(*parsed->Last("port") == "2");
  CHECK(*parsed->Last("token-file") == "t");
  CHECK(parsed->All("inject") == std::vector<std::string>{"a", "b"});
  CHECK(parsed->Given("json"));
  CHECK_FALSE(parsed->Given("help"));
  CHECK(ParseOptions(std::vector<std::string>{"-h"}, kSpecs)->help);
  CHECK(ParseOptions(std::vector<std::string>{"--he"}, kSpecs)->help);
}

TEST_CASE("bad options-only command lines get one line naming the flag or the value") {
  CHECK(ErrorOf({"--prot", "1"}) == "unknown flag '--prot'; did you mean '--port'?");
  CHECK(ErrorOf({"--port"}) == "--port: missing value (PORT)");
  CHECK(ErrorOf({"--port", "--json"}) == "--port: missing value (PORT)");
  CHECK(ErrorOf({"--json=1"}) == "--json takes no value");
  CHECK(ErrorOf({"serve"}) == "unexpected argument 'serve'");
  CHECK(ErrorOf({"--", "x"}) == "unexpected argument 'x'");
  CHECK(ErrorOf({"-x"}) == "unknown flag '-x'");
  CHECK(ErrorOf({"-port", "1"}) == "unknown flag '-port'; did you mean '--port'?");
  // A negative number is a value, so the range check can name it.
  auto negative = ParseOptions(std::vector<std::string>{"--port", "-1"}, kSpecs);
  REQUIRE(negative.ok());
  CHECK(*negative->Last("port") == "-1");
}

TEST_CASE("help lists options under their headings in muster's layout") {
  const std::string help = OptionsHelp("usage: x [options]\n", kSpecs);
  CHECK(help.starts_with("usage: x [options]\n"));
  CHECK(help.find("\nListening:\n  --port PORT\n      Port to listen on. Default: 29400.\n") !=
        std::string::npos);
  CHECK(help.find("  --token-file, --token_file FILE\n") != std::string::npos);
  CHECK(help.find("\nGeneral:\n  -h, --help\n      Show this help and exit.") != std::string::npos);
  CHECK(help.back() != '\n');
}

TEST_CASE("help text wraps at 80 columns with a 6-space indent") {
  std::string out;
  AppendOptionHelp(out, "--x N",
                   std::string(30, 'a') + " " + std::string(30, 'b') + " " + std::string(30, 'c'));
  CHECK(out == "  --x N\n      " + std::string(30, 'a') + " " + std::string(30, 'b') + "\n      " +
                   std::string(30, 'c') + "\n");
}

}  // namespace
}  // namespace muster
