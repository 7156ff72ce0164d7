// WorkerOutput: where one worker's stdout and stderr go. Console copies are
// prefixed ("[rank3]:") and pass through as they come: whole lines at once,
// a partial line (a '\r'-redrawn progress bar) within ConsoleStream::kHold
// (console_stream.h has the prefix and release rules; console_line.h keeps
// two workers off one console line). File copies (--log-dir, --redirects,
// --tee) get the bytes exactly as the worker wrote them; a filtered copy
// (--duplicate-std*-filters) gets matching whole lines, prefixed.
//
// The console is this process's fds 1 and 2, so which stream left a console
// line open is recorded process-wide: one record per fd, one for both when
// they are the same file (a terminal). Single-threaded: every WorkerOutput
// of a process is used from one thread.
#pragma once

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "launcher/output/console_line.h"
#include "launcher/output/console_stream.h"
#include "launcher/output/line_splitter.h"
#include "launcher/process/process_spawner.h"

namespace muster {

// One file that collects, from several workers, the lines that contain any of
// a list of strings (torchrun's --duplicate-stdout-filters and
// --duplicate-stderr-filters). Each line is written whole, with the worker's
// console prefix. Shared by the WorkerOutputs of one attempt; single-threaded.
class FilteredCopy {
 public:
  // Creates (truncates) `path`. Returns an error naming the file.
  static Result<std::shared_ptr<FilteredCopy>> Open(const std::string& path,
                                                    std::vector<std::string> filters);
  ~FilteredCopy();
  FilteredCopy(const FilteredCopy&) = delete;
  FilteredCopy& operator=(const FilteredCopy&) = delete;

  // True when `line` contains any of `filters` (a plain substring test).
  static bool Matches(const std::vector<std::string>& filters, std::string_view line);
  // Appends prefix + line when `line` (ending in '\n') matches.
  void Offer(std::string_view prefix, std::string_view line);

 private:
  FilteredCopy(int fd, std::vector<std::string> filters) : fd_(fd), filters_(std::move(filters)) {}
  int fd_;
  std::vector<std::string> filters_;
  std::string batch_;
};

struct StreamRoute {
  StreamRoute() = default;
  // Not an aggregate, so "{console, path}" stays complete without a copy.
  StreamRoute(bool console, std::string path, std::shared_ptr<FilteredCopy> copy = nullptr)
      : to_console(console), file_path(std::move(path)), filtered_copy(std::move(copy)) {}

  bool to_console = true;
  std::string file_path;  // empty: no file
  // null: none. Fed the lines shown on the console, so only with to_console.
  std::shared_ptr<FilteredCopy> filtered_copy;
};

class WorkerOutput {
 public:
  // `prefix` is prepended to each console line ("" for none). Console stdout
  // goes to fd 1, stderr to fd 2. Files are created (truncated) now.
  // Returns an error naming the file that cannot be opened.
  static Result<std::unique_ptr<WorkerOutput>> Open(std::string prefix, const StreamRoute& out,
                                                    const StreamRoute& err);
  ~WorkerOutput();
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  // `bytes` of `stream`, read at `now`: to the file at once; to the console
  // by ConsoleStream's release rule (a partial line may be held: see
  // held_until()).
  void Write(Stream stream, std::string_view bytes, Time now = Clock::now());
  // Writes the held partial lines that are due at `now`. Call at
  // held_until(), or the console shows partial lines only when their line
  // ends.
  void ReleaseHeld(Time now = Clock::now());
  // When the earliest held partial line is due; nullopt when none is held.
  std::optional<Time> held_until() const;
  // Writes a held partial line (ending an open console line with '\n'),
  // closes the file.
  void Close(Stream stream);
  // Console segments begun from now on carry `prefix` (a worker that
  // rejoined in place under another rank).
  void SetPrefix(std::string prefix);

 private:
  struct Sink {
    explicit Sink(const std::string& prefix) : console(prefix) {}
    bool to_console = false;
    int console_fd = -1;
    ConsoleLine* console_line = nullptr;  // process-wide, for console_fd
    ConsoleStream console;
    int file_fd = -1;
    LineSplitter filter_lines;                    // whole lines for filtered_copy
    std::shared_ptr<FilteredCopy> filtered_copy;  // offered each console line
  };
  explicit WorkerOutput(std::string prefix)
      : prefix_(std::move(prefix)), sinks_{Sink(prefix_), Sink(prefix_)} {}
  // Writes `rendered_` (console bytes `sink` released) to the console.
  // The end of `sink`'s console copy: what it holds is shown, its open line
  // ended, its filtered copy given the last partial line (once; again adds nothing).
  void FinishConsole(Sink& sink);
  void WriteConsole(Sink& sink);
  void OfferFiltered(Sink& sink, std::string_view bytes, bool end_of_stream);

  std::string prefix_;
  std::array<Sink, 2> sinks_;
  std::string rendered_;
  std::string batch_;
};

// write(2) until all of `bytes` is written or an error other than EINTR.
void WriteAll(int fd, std::string_view bytes);

// Writes `line` (muster's own, ending in '\n') to `console_fd`, first ending
// a worker's line left open there (a progress bar), so the two never share
// a line.
void WriteOwnLine(int console_fd, std::string_view line);

}  // namespace muster
