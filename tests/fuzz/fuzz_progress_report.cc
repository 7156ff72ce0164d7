// Fuzzes the progress pipe's decoder (launcher/output/progress_report.h): what a
// worker writes on MUSTER_PROGRESS_FD, one read at a time.
//
// Input: the bytes of one read.
//
// Invariants beyond "no crash, no sanitizer report":
//   - bytes without a '\n' report nothing (a partial line waits);
//   - the step is -1 or the value of a complete line of digits;
//   - every injected index came from a complete "inject N" line, so there
//     are no more of them than complete lines;
//   - the bytes after the last '\n' change nothing.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

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
  if (report.step != -1) {
    const std::string text = std::to_string(report.step) + "\n";
    FUZZ_CHECK(report.step >= 0, "a negative step " + std::to_string(report.step));
    FUZZ_CHECK(bytes.find(text) != std::string_view::npos,
               "step " + std::to_string(report.step) + " is no line of the input");
  }
  const muster::ProgressReport complete = muster::ParseProgressReport(bytes.substr(0, end + 1));
  FUZZ_CHECK(complete.step == report.step && complete.injected == report.injected,
             "the partial line after the last newline changed the report");
  return 0;
}
