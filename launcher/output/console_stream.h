// ConsoleStream: one worker stream (stdout or stderr) as the console shows
// it. Pure and single-threaded: it neither reads clocks nor writes; the
// caller passes the time and writes what it appends.
//
// Prefix rule: the prefix ("[rank3]: ") goes before the first byte of each
// console line, and again after a carriage return that starts a new segment
// of the same line, so a progress bar redrawn with '\r' reads
// "\r[rank0]:  40%|████      | 4/10" on every redraw. A '\r' at the start of a
// line, or one directly followed by '\n' ("\r\n"), adds no prefix. A line
// released in pieces is prefixed once: the state carries over between pieces.
// A line that already begins with the prefix's mark ("[rank3]:", as torch
// 2.x marks its own warnings and tracebacks) gets none.
//
// Release rule: everything up to the last '\n' of what has arrived goes out at
// once. The partial line after it is held, so that a line written in several
// pieces still reaches the console in one piece (lines of different workers
// meet only at line ends), but never longer than kHold after its first byte
// arrived, nor beyond kMaxHeld bytes. A partial line with a '\r' in it (a
// progress bar redrawn) goes out at once: it has no rest to wait for, and each
// redraw shows as it is written.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace muster {

class ConsoleStream {
 public:
  // How long a partial line may wait for the rest of its line.
  static constexpr std::chrono::milliseconds kHold{50};
  // A held partial line this long goes out at once.
  static constexpr size_t kMaxHeld = 64 * 1024;

  explicit ConsoleStream(std::string prefix) : prefix_(std::move(prefix)) {}

  // Console segments begun from now on carry `prefix`.
  void SetPrefix(std::string prefix) { prefix_ = std::move(prefix); }

  // Takes `bytes`, written by the worker and read at `now`. Appends to `out`
  // the console bytes to write now; holds the rest (see the release rule).
  void Feed(std::string_view bytes, Time now, std::string& out);
  // Appends the held partial line when it is due (held_until() <= now).
  void ReleaseDue(Time now, std::string& out);
  // End of stream: appends what is held and, when the console line is left
  // open, a '\n' that ends it.
  void Finish(std::string& out);

  // When the held partial line must go out; nullopt when nothing is held.
  std::optional<Time> held_until() const;
  // Whether the bytes released so far leave a console line open (not ended
  // by '\n'): another writer's bytes would land on the same line.
  bool line_open() const { return position_ != Position::kLineStart; }
  // Another writer ended the console line this stream left open: its next
  // byte starts a new console line, with the prefix.
  void LineEndedElsewhere() { position_ = Position::kLineStart; }

 private:
  // Where the released bytes left the console line.
  enum class Position {
    kLineStart,            // nothing of this line yet: prefix before the next byte but '\r'
    kMidLine,              // prefix written, text under way
    kAfterCarriageReturn,  // a '\r' ended a segment: prefix before the next byte but '\r', '\n'
  };
  void ReleaseHeld(std::string& out);
  // The line starting with `line` already carries this stream's mark.
  bool CarriesPrefix(std::string_view line) const;
  // Appends `text` to `out` with the prefix inserted by the prefix rule.
  void Render(std::string_view text, std::string& out);

  std::string prefix_;
  Position position_ = Position::kLineStart;
  std::string held_;                // the partial line not yet released
  std::optional<Time> held_since_;  // when held_'s first byte arrived
};

}  // namespace muster
