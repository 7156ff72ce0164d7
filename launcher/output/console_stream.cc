#include "launcher/output/console_stream.h"

namespace muster {
namespace {

// A '\r' redraws the line (a progress bar): there is no rest of the line to
// wait for, and every redraw should be seen as it happens.
bool IsRedraw(std::string_view partial) { return partial.find('\r') != std::string_view::npos; }

}  // namespace

void ConsoleStream::Feed(std::string_view bytes, Time now, std::string& out) {
  if (bytes.empty()) return;
  if (!held_.empty()) {
    const size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      // Still the same partial line: its deadline stays the one of its first
      // byte, so a stream that never pauses is still shown every kHold.
      held_.append(bytes);
      if (held_.size() >= kMaxHeld || IsRedraw(bytes)) ReleaseHeld(out);
      return;
    }
    held_.append(bytes.substr(0, newline + 1));
    Render(held_, out);
    held_.clear();
    held_since_.reset();
    bytes.remove_prefix(newline + 1);
  }
  // Common case: whole lines, rendered straight from the read buffer.
  const size_t last_newline = bytes.rfind('\n');
  if (last_newline != std::string_view::npos) {
    Render(bytes.substr(0, last_newline + 1), out);
    bytes.remove_prefix(last_newline + 1);
  }
  if (bytes.empty()) return;
  if (bytes.size() >= kMaxHeld || IsRedraw(bytes)) {
    Render(bytes, out);
    return;
  }
  held_.assign(bytes);
  held_since_ = now;
}

void ConsoleStream::ReleaseDue(Time now, std::string& out) {
  if (held_since_ && now >= *held_since_ + kHold) ReleaseHeld(out);
}

void ConsoleStream::ReleaseHeld(std::string& out) {
  Render(held_, out);
  held_.clear();
  held_since_.reset();
}

void ConsoleStream::Finish(std::string& out) {
  ReleaseHeld(out);
  if (line_open()) {
    // As a line cut off by the end of its stream always was: ended, so the
    // next writer starts on a line of its own.
    out.push_back('\n');
    position_ = Position::kLineStart;
  }
}

std::optional<Time> ConsoleStream::held_until() const {
  if (!held_since_) return std::nullopt;
  return *held_since_ + kHold;
}

bool ConsoleStream::CarriesPrefix(std::string_view line) const {
  // torch 2.x prefixes its own warnings and tracebacks with "[rankN]:" (no
  // space after it): the same rank's mark twice says nothing more.
  std::string_view mark = prefix_;
  while (!mark.empty() && mark.back() == ' ') mark.remove_suffix(1);
  return !mark.empty() && line.substr(0, mark.size()) == mark;
}

void ConsoleStream::Render(std::string_view text, std::string& out) {
  while (!text.empty()) {
    const char first = text.front();
    if (position_ != Position::kMidLine) {
      // A '\r' before any text redraws nothing; "\r\n" just ends the line.
      const bool no_text_yet =
          first == '\r' || (first == '\n' && position_ == Position::kAfterCarriageReturn);
      if (no_text_yet) {
        out.push_back(first);
        if (first == '\n') position_ = Position::kLineStart;
        text.remove_prefix(1);
        continue;
      }
      if (!CarriesPrefix(text)) out.append(prefix_);
      position_ = Position::kMidLine;
    }
    const size_t end = text.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      out.append(text);
      return;
    }
    out.append(text.substr(0, end + 1));
    position_ = text[end] == '\n' ? Position::kLineStart : Position::kAfterCarriageReturn;
    text.remove_prefix(end + 1);
  }
}

}  // namespace muster
