#include "common/suggest.h"

#include <algorithm>
#include <vector>

namespace muster {

std::size_t EditDistance(std::string_view a, std::string_view b) {
  // One row of the dynamic-programming table; names are short.
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> Suggest(std::string_view typed,
                                   std::span<const std::string> candidates) {
  const std::string* prefix_match = nullptr;
  int prefix_matches = 0;
  for (const std::string& candidate : candidates) {
    if (typed.size() >= 4 && candidate.size() > typed.size() && candidate.starts_with(typed)) {
      prefix_match = &candidate;
      ++prefix_matches;
    }
  }
  if (prefix_matches == 1) return *prefix_match;

  const std::string* best = nullptr;
  std::size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = EditDistance(typed, candidate);
    if (best == nullptr || distance < best_distance) {
      best = &candidate;
      best_distance = distance;
    }
  }
  if (best == nullptr) return std::nullopt;
  // A third of the length: one slip in "--tee", three in "--nproc-per-node",
  // none for "-m" (any two-letter flag is one edit from any other).
  if (best_distance > best->size() / 3) return std::nullopt;
  return *best;
}

}  // namespace muster
