// Fuzzes the progress pipe's decoder (launcher/output/progress_report.h): what a
// worker writes on MUSTER_PROGRESS_FD, one read at a time.
//
// Input: the bytes of one read.
//
// Invariants beyond "no crash, no sanitizer report":
//   - bytes without a '\n' report nothing (a partial line waits);
//   - the step is -1 or the value of a complete line of digits, alone or
//     followed by one space and the step's compute time (the step hooks'
//     "STEP COMPUTE_US"), which the report then carries;
//   - a stacks descriptor comes from a complete "stacks FD" line;
//   - every injected index came from a complete "inject N" line, so there
//     are no more of them than complete lines;
//   - the bytes after the last '\n' change nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/decimal.h"
#include "launcher/output/progress_report.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const muster::ProgressReport report = muster::ParseProgressReport(bytes);
  const size_t end = bytes.rfind('\n');
  if (end == std::string_view::npos) {
    FUZZ_CHECK(report.step == -1 && report.injected.empty(), "a partial line reported");
    return 0;
  }
  const auto lines = static_cast<size_t>(std::count(bytes.begin(), bytes.end(), '\n'));
  FUZZ_CHECK(report.injected.size() <= lines, std::to_string(report.injected.size()) +
                                                  " injections from " + std::to_string(lines) +
                                                  " lines");
  for (const int index : report.injected) {
    FUZZ_CHECK(index >= 0, "a negative fault index " + std::to_string(index));
  }
  // The complete lines of the input.
  std::vector<std::string_view> lines_of_input;
  for (std::string_view rest = bytes.substr(0, end + 1); !rest.empty();) {
    const size_t newline = rest.find('\n');
    lines_of_input.push_back(rest.substr(0, newline));
    rest.remove_prefix(newline + 1);
  }
  // Whether a complete line reads as the decimal `first`, then (when
  // `second` is set) one space and the decimal `second`.
  auto has_line = [&](std::string_view prefix, uint64_t first, std::optional<uint64_t> second) {
    for (std::string_view line : lines_of_input) {
      if (!line.starts_with(prefix)) continue;
      line.remove_prefix(prefix.size());
      const size_t space = line.find(' ');
      if (muster::ParseDecimal(line.substr(0, space)) != first) continue;
      if (!second && space == std::string_view::npos) return true;
      if (second && space != std::string_view::npos &&
          muster::ParseDecimal(line.substr(space + 1)) == *second) {
        return true;
      }
    }
    return false;
  };
  if (report.step != -1) {
    FUZZ_CHECK(report.step >= 0, "a negative step " + std::to_string(report.step));
    std::optional<uint64_t> compute;
    if (report.compute_us) compute = static_cast<uint64_t>(*report.compute_us);
    FUZZ_CHECK(has_line("", static_cast<uint64_t>(report.step), compute),
               "step " + std::to_string(report.step) + " is no line of the input");
  } else {
    FUZZ_CHECK(!report.compute_us, "a compute time without a step");
  }
  if (report.stacks_fd) {
    FUZZ_CHECK(*report.stacks_fd >= 0 &&
                   has_line("stacks ", static_cast<uint64_t>(*report.stacks_fd), std::nullopt),
               "a stacks descriptor from no line of the input");
  }
  const muster::ProgressReport complete = muster::ParseProgressReport(bytes.substr(0, end + 1));
  FUZZ_CHECK(complete.step == report.step && complete.injected == report.injected &&
                 complete.compute_us == report.compute_us && complete.stacks_fd == report.stacks_fd,
             "the partial line after the last newline changed the report");
  return 0;
}
