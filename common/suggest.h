// Suggest: "did you mean" for unknown flags and config keys, shared by
// muster, `muster status` and musterd.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace muster {

// Levenshtein distance (insert, delete, substitute each cost 1).
std::size_t EditDistance(std::string_view a, std::string_view b);

// The candidate the user most likely meant by `typed`: a candidate that
// `typed` (4+ characters) is a prefix of, when exactly one is ("--nproc" -> "--nproc-per-node";
// torchrun users rely on argparse abbreviations), else the nearest by edit
// distance if it is within a third of the candidate's length.
// Ties go to the earlier candidate. nullopt when nothing is close.
// Callers pass one spelling per flag and normalise `typed` the same way
// (dashes), then show the answer in the user's spelling.
std::optional<std::string> Suggest(std::string_view typed, std::span<const std::string> candidates);

}  // namespace muster
