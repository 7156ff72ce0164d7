#include "launcher/output/progress_report.h"

#include <limits>

#include "common/decimal.h"

namespace muster {

ProgressReport ParseProgressReport(std::string_view bytes) {
  ProgressReport report;
  const auto end = bytes.rfind('\n');
  if (end == std::string_view::npos) return report;
  std::string_view rest = bytes.substr(0, end + 1);
  while (!rest.empty()) {
    const auto newline = rest.find('\n');
    const std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline + 1);
    if (line.starts_with("stacks ")) {
      if (const auto fd = ParseDecimal(line.substr(7), std::numeric_limits<int>::max())) {
        report.stacks_fd = static_cast<int>(*fd);
      }
    } else if (line.starts_with("inject ")) {
      if (const auto index = ParseDecimal(line.substr(7), std::numeric_limits<int>::max())) {
        report.injected.push_back(static_cast<int>(*index));
      }
    } else {
      const auto space = line.find(' ');
      const auto step = ParseDecimal(line.substr(0, space), std::numeric_limits<int64_t>::max());
      if (!step) continue;
      std::optional<int64_t> compute;
      if (space != std::string_view::npos) {
        const auto us = ParseDecimal(line.substr(space + 1), std::numeric_limits<int64_t>::max());
        if (!us) continue;  // "N junk" is no step line
        compute = static_cast<int64_t>(*us);
      }
      report.step = static_cast<int64_t>(*step);
      report.compute_us = compute;
    }
  }
  return report;
}

}  // namespace muster
