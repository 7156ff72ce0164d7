// Parsers for comma-separated lists: --gpus, --local-ranks-filter,
// --signals-to-handle, --duplicate-std{out,err}-filters and --warm-import. Same contract as
// number_parsers.h. An empty item ("0,,1") is an error: it is a typo, never a
// wish (in a filter list ",," is torchrun's escaped comma instead).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::cli {

// GPU ids: non-negative indices ("0,1") or UUIDs ("GPU-8f3c...", "MIG-..."),
// in the order given, each at most once, at least one.
Result<std::vector<std::string>> ParseGpuList(std::string_view text);

// "" means no filter (nullopt); otherwise non-negative local ranks, returned
// sorted without repeats (torchrun keeps a set).
Result<std::optional<std::vector<int>>> ParseLocalRanks(std::string_view text);

// Signal names such as "SIGTERM,SIGUSR1", each one muster can catch and
// forward (not SIGKILL/SIGSTOP), in the order given.
Result<std::vector<std::string>> ParseSignalList(std::string_view text);

// Substrings for --duplicate-std{out,err}-filters, as torchrun splits them:
// on ',', where ",," stands for a literal comma ("a,,b,c" is {"a,b", "c"}).
// Spaces are kept. "" means no filters ({}). An empty filter ("a," or ",a")
// is an error: it would match every line.
Result<std::vector<std::string>> ParseLineFilters(std::string_view text);

// Python module names for --warm-import: "torch.distributed,numpy", each a
// dotted name of identifiers ([A-Za-z_][A-Za-z0-9_]*), in the order given.
// "" means none ({}).
Result<std::vector<std::string>> ParseModuleList(std::string_view text);

}  // namespace muster::cli
