#include "launcher/cli/list_parsers.h"

#include <algorithm>
#include <array>

#include "common/quote.h"
#include "launcher/cli/number_parsers.h"

namespace muster::cli {
namespace {

// Splits on ',' keeping empty items, so callers can reject them.
std::vector<std::string_view> Split(std::string_view text) {
  std::vector<std::string_view> items;
  while (true) {
    const std::size_t comma = text.find(',');
    items.push_back(text.substr(0, comma));
    if (comma == std::string_view::npos) return items;
    text = text.substr(comma + 1);
  }
}

bool IsGpuUuid(std::string_view id) {
  if (!id.starts_with("GPU-") && !id.starts_with("MIG-")) return false;
  if (id.size() == 4) return false;
  // MIG ids come as "MIG-<uuid>" and, from older drivers, "MIG-GPU-<uuid>/1/0".
  return std::all_of(id.begin() + 4, id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '/';
  });
}

Status EmptyItem(std::string_view text) {
  return Status::InvalidArgument(Quote(text) + " has an empty item");
}

}  // namespace

Result<std::vector<std::string>> ParseGpuList(std::string_view text) {
  if (text.empty()) {
    return Status::InvalidArgument("'' must list GPU ids, e.g. '0,1' or 'GPU-<uuid>'");
  }
  std::vector<std::string> ids;
  for (std::string_view item : Split(text)) {
    if (item.empty()) return EmptyItem(text);
    if (!ParseNonNegativeInt(item).ok() && !IsGpuUuid(item)) {
      return Status::InvalidArgument(Quote(text) + " has " + Quote(item) +
                                     ", which is neither a GPU index nor a GPU-/MIG- UUID");
    }
    if (std::find(ids.begin(), ids.end(), item) != ids.end()) {
      return Status::InvalidArgument(Quote(text) + " lists GPU " + Quote(item) + " twice");
    }
    ids.emplace_back(item);
  }
  return ids;
}

Result<std::optional<std::vector<int>>> ParseLocalRanks(std::string_view text) {
  if (text.empty()) return std::optional<std::vector<int>>();
  std::vector<int> ranks;
  for (std::string_view item : Split(text)) {
    if (item.empty()) return EmptyItem(text);
    auto rank = ParseNonNegativeInt(item);
    if (!rank.ok()) {
      return Status::InvalidArgument(Quote(text) + " must be local ranks like '0,2'; " +
                                     Quote(item) + " is not a non-negative integer");
    }
    ranks.push_back(*rank);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return std::optional<std::vector<int>>(std::move(ranks));
}

Result<std::vector<std::string>> ParseSignalList(std::string_view text) {
  // The catchable signals a launcher might forward; SIGKILL/SIGSTOP cannot be
  // caught, and fault signals (SIGSEGV...) are not requests to forward.
  static constexpr std::array<std::string_view, 12> kForwardable = {
      "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2",
      "SIGALRM", "SIGCONT", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGWINCH"};
  std::vector<std::string> names;
  for (std::string_view item : Split(text)) {
    if (item.empty()) return EmptyItem(text);
    if (std::find(kForwardable.begin(), kForwardable.end(), item) == kForwardable.end()) {
      return Status::InvalidArgument(Quote(text) + " has " + Quote(item) +
                                     ", which is not a signal muster can forward (e.g. SIGTERM, "
                                     "SIGUSR1)");
    }
    names.emplace_back(item);
  }
  return names;
}

Result<std::vector<std::string>> ParseLineFilters(std::string_view text) {
  std::vector<std::string> filters;
  if (text.empty()) return filters;
  std::string current;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] == ',' && i + 1 < text.size() && text[i + 1] == ',') {
      current.push_back(',');  // ",," is an escaped comma, as in torchrun
      ++i;
    } else if (i == text.size() || text[i] == ',') {
      if (current.empty()) {
        return Status::InvalidArgument(Quote(text) +
                                       " has an empty filter, which would match every line");
      }
      filters.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(text[i]);
    }
  }
  return filters;
}

Result<std::vector<std::string>> ParseModuleList(std::string_view text) {
  std::vector<std::string> modules;
  if (text.empty()) return modules;
  auto identifier_start = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  };
  auto identifier_char = [&](char c) { return identifier_start(c) || (c >= '0' && c <= '9'); };
  for (std::string_view item : Split(text)) {
    if (item.empty()) return EmptyItem(text);
    bool valid = true;
    bool at_start = true;
    for (char c : item) {
      if (c == '.') {
        valid = valid && !at_start;
        at_start = true;
      } else {
        valid = valid && (at_start ? identifier_start(c) : identifier_char(c));
        at_start = false;
      }
    }
    if (!valid || at_start) {
      return Status::InvalidArgument(
          Quote(text) + " has " + Quote(item) +
          ", which is not a Python module name (e.g. torch.distributed)");
    }
    modules.emplace_back(item);
  }
  return modules;
}

}  // namespace muster::cli
