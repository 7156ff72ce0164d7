// The flag table: the one list of muster's flags. The command line, the
// PET_* environment variables, the --config file keys and the --help text
// are all derived from it, so they cannot drift apart.
//
// A flag has a canonical name with dashes ("nproc-per-node"). Derived names:
//   command line  --nproc-per-node and --nproc_per_node (and -X if it has one)
//   environment   PET_NPROC_PER_NODE
//   config key    nproc_per_node or nproc-per-node
//
// Thread-safety: the table is constant data; every function here is pure.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/json_type.h"
#include "common/status.h"
#include "launcher/cli/extra_options.h"
#include "launcher/plan/launch_options.h"

namespace muster::cli {

// What the apply functions write into.
struct ParsedFlags {
  LaunchOptions options;
  ExtraOptions extras;
};

enum class ValueKind {
  kSwitch,  // boolean: bare on the command line; "1"/"0"/"true"/"false" otherwise
  kValue,   // takes one value: "--flag VALUE" or "--flag=VALUE"
  kAction,  // -h/--help, --version: command line only, stops parsing
};

// Where a flag may be set (bit set).
enum Source : unsigned { kFromCommandLine = 1, kFromEnv = 2, kFromConfig = 4, kFromAll = 7 };

// Which JSON types a config-file key accepts: common/json_type.h. Numbers
// and booleans are turned into the text the command line would carry.

// Headings of the --help text, in order.
enum class FlagGroup { kNodes, kRendezvous, kWorkers, kOutput, kGpus, kCompat, kGeneral, kLaunch };

// Parses `value` into `out`. On failure returns InvalidArgument whose message
// starts with the quoted value; the caller adds where the value came from.
using ApplyFn = Status (*)(std::string_view value, ParsedFlags& out);

struct FlagSpec {
  std::string_view name;  // canonical, with dashes, without the leading "--"
  char short_name;        // 0 when none
  ValueKind kind;
  unsigned sources;     // Source bits
  unsigned json_types;  // JsonType bits; 0 when not a config key
  FlagGroup group;
  std::string_view metavar;       // for help; empty for switches
  std::string_view default_text;  // for help; empty: no default shown
  std::string_view help;
  ApplyFn apply;  // nullptr for kAction flags
};

// Every flag, in help order.
std::span<const FlagSpec> Flags();

// Position of `flag` in Flags(). REQUIRES: flag points into Flags().
std::size_t FlagIndex(const FlagSpec& flag);

// The flag with this long name, dashes or underscores in any mix, without the
// leading "--"; nullptr when none.
const FlagSpec* FindFlag(std::string_view name);

// The flag with this one-letter name ("m" for -m); nullptr when none.
const FlagSpec* FindShortFlag(char name);

// "nproc_per_node" for "nproc-per-node".
std::string UnderscoreName(const FlagSpec& flag);

// "PET_NPROC_PER_NODE" for "nproc-per-node".
std::string EnvName(const FlagSpec& flag);

}  // namespace muster::cli
