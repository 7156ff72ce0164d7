#include "launcher/cli/help_text.h"

#include "launcher/cli/flag_table.h"

#ifndef MUSTER_VERSION_STRING
#error "muster_cli's CMakeLists.txt defines MUSTER_VERSION_STRING from the project version"
#endif

namespace muster::cli {
namespace {

std::string_view Heading(FlagGroup group) {
  switch (group) {
    case FlagGroup::kNodes:
      return "Nodes and workers per node";
    case FlagGroup::kRendezvous:
      return "Rendezvous";
    case FlagGroup::kWorkers:
      return "Workers";
    case FlagGroup::kOutput:
      return "Output";
    case FlagGroup::kGpus:
      return "GPUs";
    case FlagGroup::kCompat:
      return "Accepted for torchrun compatibility";
    case FlagGroup::kGeneral:
      return "General";
  }
  return "";
}

// Appends `text` as lines of at most 80 columns, each indented by 6 spaces.
void AppendWrapped(std::string& out, std::string_view text) {
  constexpr std::size_t kIndent = 6, kWidth = 80;
  std::size_t column = kWidth;  // forces a new line before the first word
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (column + 1 + word.size() > kWidth) {
      out += "\n" + std::string(kIndent, ' ');
      column = kIndent;
    } else {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
}

}  // namespace

std::string HelpText() {
  std::string out =
      "usage: muster [options] SCRIPT [SCRIPT_ARGS...]\n"
      "\n"
      "Runs SCRIPT as worker processes on every node of a job; a drop-in torchrun.\n"
      "Everything from SCRIPT on is passed to it untouched. Long flags take dashes\n"
      "or underscores (--nproc-per-node, --nproc_per_node), and --flag VALUE or\n"
      "--flag=VALUE. Each flag can also be set as PET_<FLAG> (PET_NPROC_PER_NODE=4,\n"
      "PET_STANDALONE=1) or as a key of the --config JSON file. The command line\n"
      "wins over PET_, PET_ over the file, the file over the defaults.\n";
  bool first = true;
  FlagGroup group{};
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromCommandLine)) continue;
    if (first || flag.group != group) {
      out += "\n" + std::string(Heading(flag.group)) + ":\n";
      group = flag.group;
      first = false;
    }
    out += "  ";
    if (flag.short_name != 0) out += std::string("-") + flag.short_name + ", ";
    out += "--" + std::string(flag.name);
    if (flag.name.find('-') != std::string_view::npos) out += ", --" + UnderscoreName(flag);
    if (!flag.metavar.empty()) out += " " + std::string(flag.metavar);
    std::string help(flag.help);
    if (!flag.default_text.empty()) help += " Default: " + std::string(flag.default_text) + ".";
    AppendWrapped(out, help);
    out += "\n";
  }
  out.pop_back();
  return out;
}

std::string VersionText() { return "muster " MUSTER_VERSION_STRING; }

}  // namespace muster::cli
