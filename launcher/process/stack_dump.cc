#include "launcher/process/stack_dump.h"

#include <limits>

#include "common/decimal.h"

namespace muster {

namespace {

// `  File "PATH", line N in FUNC`; false for any other line.
bool ParseFrameLine(std::string_view line, StackFrame& frame) {
  constexpr std::string_view kFile = "  File \"";
  if (!line.starts_with(kFile)) return false;
  line.remove_prefix(kFile.size());
  // A path may hold a quote; the line number follows the last `", line `.
  constexpr std::string_view kLine = "\", line ";
  const auto at = line.rfind(kLine);
  if (at == std::string_view::npos) return false;
  std::string_view rest = line.substr(at + kLine.size());
  const auto space = rest.find(' ');
  const auto number = ParseDecimal(rest.substr(0, space), std::numeric_limits<int>::max());
  if (!number) return false;
  frame.file = std::string(line.substr(0, at));
  frame.line = static_cast<int>(*number);
  frame.function.clear();
  constexpr std::string_view kIn = " in ";
  if (space != std::string_view::npos && rest.substr(space).starts_with(kIn)) {
    frame.function = std::string(rest.substr(space + kIn.size()));
  }
  return true;
}

// "Thread 0x... (most recent call first):" or "Current thread 0x... (...)";
// the id, or empty for any other line.
std::string_view ThreadHeader(std::string_view line) {
  for (std::string_view prefix :
       {std::string_view("Thread "), std::string_view("Current thread ")}) {
    if (line.starts_with(prefix) && line.ends_with("(most recent call first):")) {
      line.remove_prefix(prefix.size());
      return line.substr(0, line.find(' '));
    }
  }
  return {};
}

}  // namespace

const std::vector<StackFrame>& StackDump::MainFrames() const {
  static const std::vector<StackFrame> kNone;
  return threads.empty() ? kNone : threads.back().frames;
}

StackDump ParseStackDump(std::string_view text) {
  StackDump dump;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const std::string_view id = ThreadHeader(line); !id.empty()) {
      dump.threads.push_back(ThreadStack{std::string(id), {}});
      continue;
    }
    StackFrame frame;
    if (!dump.threads.empty() && ParseFrameLine(line, frame)) {
      dump.threads.back().frames.push_back(std::move(frame));
    }
  }
  return dump;
}

const StackFrame* InnermostScriptFrame(const std::vector<StackFrame>& frames) {
  if (frames.empty()) return nullptr;
  for (const StackFrame& frame : frames) {
    const std::string& f = frame.file;
    const bool library = f.find("/lib/python3") != std::string::npos ||
                         f.find("site-packages") != std::string::npos ||
                         f.find("dist-packages") != std::string::npos || f.starts_with("<");
    if (!library) return &frame;
  }
  return &frames.front();
}

std::string DescribeFrame(const StackFrame& frame) {
  return "File \"" + frame.file + "\", line " + std::to_string(frame.line) + " in " +
         frame.function;
}

}  // namespace muster
