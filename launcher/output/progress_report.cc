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
    if (line == "stacks") {
      report.dumps_stacks = true;
    } else if (line.starts_with("inject ")) {
      if (const auto index = ParseDecimal(line.substr(7), std::numeric_limits<int>::max())) {
        report.injected.push_back(static_cast<int>(*index));
      }
    } else if (const auto step = ParseDecimal(line, std::numeric_limits<int64_t>::max())) {
      report.step = static_cast<int64_t>(*step);
    }
  }
  return report;
}

}  // namespace muster
