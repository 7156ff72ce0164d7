#include "common/flag_match.h"

#include <vector>

#include "common/quote.h"
#include "common/suggest.h"

namespace muster {
namespace {

std::string Dashed(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

// "--nproc-per-node" in the spelling of `typed`: underscores when the user
// wrote one, so the answer can be pasted back into the same command line.
std::string InUserSpelling(std::string_view typed, std::string flag) {
  if (typed.find('_') == std::string_view::npos || !flag.starts_with("--")) return flag;
  for (std::size_t i = 2; i < flag.size(); ++i) {
    if (flag[i] == '-') flag[i] = '_';
  }
  return flag;
}

}  // namespace

Result<std::size_t> MatchLongFlag(std::string_view typed, std::span<const FlagName> names) {
  const std::string wanted = Dashed(typed);
  std::vector<const FlagName*> starts_with;
  for (const FlagName& name : names) {
    if (wanted.empty()) break;
    if (name.name == wanted) return name.option;
    if (!name.name.starts_with(wanted)) continue;
    // Aliases of one option are one candidate: argparse (before Python
    // 3.12.7) would refuse --nproc for naming --nproc-per-node and
    // --nproc_per_node, which is one flag.
    bool seen = false;
    for (const FlagName* earlier : starts_with) seen = seen || earlier->option == name.option;
    if (!seen) starts_with.push_back(&name);
  }
  if (starts_with.size() == 1) return starts_with.front()->option;
  const std::string shown = "--" + std::string(typed);
  if (starts_with.empty()) {
    std::vector<std::string> candidates;
    for (const FlagName& name : names) candidates.push_back("--" + std::string(name.name));
    return UnknownFlag(shown, candidates);
  }
  std::string list;
  for (const FlagName* name : starts_with) {
    if (!list.empty()) list += ", ";
    list += InUserSpelling(typed, "--" + std::string(name->name));
  }
  return Status::InvalidArgument("ambiguous flag " + Quote(shown) + " could match " + list);
}

Status UnknownFlag(std::string_view typed, std::span<const std::string> candidates) {
  std::string message = "unknown flag " + Quote(typed);
  if (auto best = Suggest(Dashed(typed), candidates)) {
    message += "; did you mean '" + InUserSpelling(typed, *best) + "'?";
  }
  return Status::InvalidArgument(message);
}

bool LooksLikeFlag(std::string_view token) {
  if (token.size() < 2 || token[0] != '-') return false;
  return !((token[1] >= '0' && token[1] <= '9') || token[1] == '.');
}

LongToken SplitLongToken(std::string_view token) {
  const std::size_t eq = token.find('=');
  LongToken out{std::string(token.substr(0, eq)), std::nullopt};
  if (eq != std::string_view::npos) out.value = std::string(token.substr(eq + 1));
  return out;
}

std::string UnderscoredName(std::string_view dashed_name) {
  std::string out(dashed_name);
  for (char& c : out) {
    if (c == '-') c = '_';
  }
  return out;
}

}  // namespace muster
