#include "launcher/cli/help_text.h"

#include "common/version.h"
#include "launcher/cli/flag_table.h"

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
    case FlagGroup::kLaunch:
      return "muster launch only (torch.distributed.launch)";
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
      out += '\n';
      out.append(kIndent, ' ');
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

std::string HelpText(CommandMode mode) {
  std::string out =
      mode == CommandMode::kLaunch
          ? "usage: muster launch [options] [--use-env] SCRIPT [SCRIPT_ARGS...]\n"
            "\n"
            "Runs SCRIPT as python -m torch.distributed.launch does: as `muster`, and\n"
            "each worker also gets --local_rank=N (N = its LOCAL_RANK) between SCRIPT\n"
            "and SCRIPT_ARGS, unless --use-env is given; SCRIPT_ARGS are passed untouched.\n"
          : "usage: muster [options] SCRIPT [SCRIPT_ARGS...]\n"
            "       muster launch [options] [--use-env] SCRIPT [SCRIPT_ARGS...]\n"
            "       muster status --rdzv-endpoint HOST:PORT[,...] [--run-id ID] [--json]\n"
            "                     [--token-file FILE]\n"
            "\n"
            "Runs SCRIPT as worker processes on every node of a job; a drop-in torchrun.\n"
            "Everything from SCRIPT on is passed to it untouched.\n";
  out +=
      "Long flags take dashes or underscores (--nproc-per-node, --nproc_per_node),\n"
      "and --flag VALUE or --flag=VALUE. Flags can also be set as PET_<FLAG>\n"
      "(PET_NPROC_PER_NODE=4, PET_STANDALONE=1), most also as a key of the --config\n"
      "JSON file. The command line wins over PET_, PET_ over the file, the file\n"
      "over the defaults.\n";
  bool first = true;
  FlagGroup group{};
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromCommandLine)) continue;
    if (first || flag.group != group) {
      out += '\n';
      out += Heading(flag.group);
      out += ":\n";
      group = flag.group;
      first = false;
    }
    out += "  ";
    if (flag.short_name != 0) out += std::string("-") + flag.short_name + ", ";
    // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict in
    // libstdc++ for "literal" + std::string(...).
    out += "--";
    out += flag.name;
    if (flag.name.find('-') != std::string_view::npos) out += ", --" + UnderscoreName(flag);
    if (!flag.metavar.empty()) {
      out += ' ';
      out += flag.metavar;
    }
    std::string help(flag.help);
    if (!flag.default_text.empty()) {
      help += " Default: ";
      help += flag.default_text;
      help += '.';
    }
    AppendWrapped(out, help);
    out += "\n";
  }
  out.pop_back();
  return out;
}

std::string VersionText() { return std::string("muster ") + kVersion; }

}  // namespace muster::cli
