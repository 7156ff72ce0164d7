#include "launcher/cli/help_text.h"

#include "common/help_layout.h"
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
            "       muster status [--rdzv-endpoint HOST:PORT[,...]] [--run-id ID] [--json]\n"
            "                     [--token-file FILE]   (see muster status --help)\n"
            "\n"
            "Runs SCRIPT as worker processes on every node of a job; a drop-in torchrun.\n"
            "Everything from SCRIPT on is passed to it untouched.\n";
  out +=
      "Long flags take dashes or underscores (--nproc-per-node, --nproc_per_node),\n"
      "and --flag VALUE or --flag=VALUE; a unique prefix stands for the whole flag\n"
      "(--nproc for --nproc-per-node), as with torchrun. Flags can also be set as\n"
      "PET_<FLAG> (PET_NPROC_PER_NODE=4, PET_STANDALONE=1), most also as a key of\n"
      "the --config JSON file. The command line wins over PET_, PET_ over the file,\n"
      "the file over the defaults.\n"
      "A successful run prints only its workers' output; muster's warnings and\n"
      "errors always show. MUSTER_LOG_LEVEL=info logs each step (rendezvous,\n"
      "generations, workers started), debug every connection attempt.\n";
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
    std::string names;
    if (flag.short_name != 0) names = std::string("-") + flag.short_name + ", ";
    names += BothSpellings(flag.name);
    if (!flag.metavar.empty()) {
      names += ' ';
      names += flag.metavar;
    }
    AppendOptionHelp(out, names, flag.help, flag.default_text);
  }
  out.pop_back();
  return out;
}

std::string VersionText() { return std::string("muster ") + kVersion; }

}  // namespace muster::cli
