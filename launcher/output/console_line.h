// ConsoleLine: which worker stream left the console's current line open.
// A stream whose partial line went out early (console_stream.h) leaves the
// line open; when another stream then writes to the same console, the open
// line is ended with '\n' first and its owner starts its next bytes on a new
// line, with its prefix. So two workers' text never shares a console line,
// even while one of them draws a progress bar. Pure; single-threaded.
#pragma once

#include <string>

#include "launcher/output/console_stream.h"

namespace muster {

class ConsoleLine {
 public:
  ConsoleLine() = default;
  ConsoleLine(const ConsoleLine&) = delete;
  ConsoleLine& operator=(const ConsoleLine&) = delete;

  // Call before appending `writer`'s bytes to `out` for this console: when
  // another stream left the line open, appends the '\n' that ends it and
  // tells that stream (LineEndedElsewhere).
  void BeforeWrite(const ConsoleStream& writer, std::string& out);
  // Call after: `writer` owns the line while it leaves it open.
  void AfterWrite(ConsoleStream& writer);
  // Someone other than a worker stream (muster's own log) is about to write
  // a whole line: appends the '\n' that ends an open line, as BeforeWrite.
  void BeforeOwnLine(std::string& out);
  // `stream` goes away: it no longer owns the line (which stays as it is).
  void Forget(const ConsoleStream& stream);

 private:
  ConsoleStream* open_by_ = nullptr;  // not owned; null: the line is ended
};

}  // namespace muster
