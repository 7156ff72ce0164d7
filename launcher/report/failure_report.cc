#include "launcher/report/failure_report.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace muster {

std::string ReadErrorFileMessage(const std::string& path) {
  if (path.empty()) return "";
  std::ifstream in(path);
  if (!in) return "";
  // A half-written or foreign file must not break the report.
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("message")) return "";
  const auto& message = doc["message"];
  if (message.is_string()) return message.get<std::string>();
  if (message.is_object() && message.contains("message") && message["message"].is_string()) {
    return message["message"].get<std::string>();
  }
  return message.dump();
}

bool SaysTorchIsMissing(std::string_view worker_text) {
  // Python 3's ImportError for a top-level module; the closing quote keeps
  // 'torch.foo' (an older torch) and 'torchvision' out.
  return worker_text.find("No module named 'torch'") != std::string_view::npos;
}

std::string FormatWallTime(WallTime t) {
  const auto since_epoch = t.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
  const std::time_t tt = seconds.count();
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(millis));
  return buf;
}

namespace {

// `message`: what `f`'s error file says (ReadErrorFileMessage), read once.
void DescribeFailure(std::ostringstream& out, const WorkerFailure& f, const std::string& message,
                     const ReportContext& context, const char* indent) {
  out << indent << "rank       : " << f.global_rank << " (local_rank " << f.local_rank << ")\n"
      << indent << "host       : " << context.host << "\n"
      << indent << "pid        : " << f.pid << "\n"
      << indent << "exit       : " << f.status.Describe() << "\n";
  if (f.hung) {
    out << indent << "hung       : no progress for " << f.silent_for.count() / 1000.0
        << " s (--hang-timeout), last step "
        << (f.last_step >= 0 ? std::to_string(f.last_step) : std::string("unknown"))
        << "; killed by muster\n";
    if (!f.hang_summary.empty()) out << indent << "hang       : " << f.hang_summary << "\n";
    for (size_t i = 0; i < f.hang_frames.size(); ++i) {
      out << indent << (i == 0 ? "stuck at   : " : "             ")
          << DescribeFrame(f.hang_frames[i]) << "\n";
    }
    if (!f.stacks_file.empty()) out << indent << "stacks     : " << f.stacks_file << "\n";
  }
  out << indent << "time       : " << FormatWallTime(f.time) << "\n";
  // The worker's files sit beside its error file (<attempt dir>/<local rank>/).
  if (context.files_kept && !f.error_file.empty()) {
    out << indent << "logs       : " << std::filesystem::path(f.error_file).parent_path().string()
        << "\n";
  }
  if (!message.empty()) {
    // A path that is gone once muster exits would send the user looking for
    // nothing: the message below is all the file held.
    if (context.files_kept) out << indent << "error file : " << f.error_file << "\n";
    // Keep multi-line Python tracebacks readable under the indent.
    std::istringstream lines(message);
    std::string line;
    bool first = true;
    while (std::getline(lines, line)) {
      out << indent << (first ? "message    : " : "             ") << line << "\n";
      first = false;
    }
  }
}

// Whether `f`'s worker said its Python has no torch, in its error file or
// on stderr.
bool TorchWasMissing(const WorkerFailure& f, const std::string& message,
                     const ReportContext& context) {
  const auto tail = context.stderr_tails.find(f.local_rank);
  return SaysTorchIsMissing(message) ||
         (tail != context.stderr_tails.end() && SaysTorchIsMissing(tail->second));
}

}  // namespace

std::string FormatFailureReport(const std::vector<WorkerFailure>& failures,
                                const ReportContext& context) {
  std::ostringstream out;
  out << "muster: worker failure in attempt " << context.attempt << " (" << context.attempt
      << " of " << context.max_restarts << " restarts used); "
      << (!context.will_restart ? "no restarts left"
          : context.in_place    ? "starting the failed workers again; the others recover in place"
                                : "restarting all local workers")
      << "\n";
  std::vector<std::string> messages;
  bool torch_missing = false;
  for (const WorkerFailure& f : failures) {
    messages.push_back(ReadErrorFileMessage(f.error_file));
    torch_missing = torch_missing || TorchWasMissing(f, messages.back(), context);
  }
  out << "  root cause (first failure):\n";
  DescribeFailure(out, failures.front(), messages.front(), context, "    ");
  if (failures.size() > 1) {
    out << "  other failures:\n";
    for (size_t i = 1; i < failures.size(); ++i) {
      DescribeFailure(out, failures[i], messages[i], context, "    ");
      if (i + 1 < failures.size()) out << "    --\n";
    }
  }
  if (torch_missing && !context.interpreter.empty()) {
    out << "  hint: the workers' Python has no torch; they ran " << context.interpreter
        << ". Choose the interpreter with --python PATH or MUSTER_PYTHON=PATH\n";
  }
  return out.str();
}

}  // namespace muster
