#include "launcher/plan/console_streams.h"

#include <algorithm>

namespace muster {

bool ShownOnConsole(const LaunchOptions& options, int local_rank) {
  if (!options.local_ranks_filter) return true;
  const auto& ranks = *options.local_ranks_filter;
  return std::find(ranks.begin(), ranks.end(), local_rank) != ranks.end();
}

bool TeedToConsole(const LaunchOptions& options, int local_rank, int stream) {
  return (options.tee.For(local_rank) & stream) && !(options.redirects.For(local_rank) & stream) &&
         ShownOnConsole(options, local_rank);
}

}  // namespace muster
