// WorkerOutput: where one worker's stdout and stderr go. Console copies are
// prefixed ("[rank3]:") and written a whole line at a time; file copies
// (--log-dir, --redirects, --tee) get the bytes exactly as the worker wrote
// them; a filtered copy (--duplicate-std*-filters) gets matching lines, prefixed.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/line_splitter.h"
#include "launcher/process_spawner.h"

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

  void Write(Stream stream, std::string_view bytes);
  void Close(Stream stream);  // flushes a trailing partial line, closes the file
  // Console lines completed from now on carry `prefix` (a worker that
  // rejoined in place under another rank).
  void SetPrefix(std::string prefix) { prefix_ = std::move(prefix); }

 private:
  struct Sink {
    bool to_console = false;
    int console_fd = -1;
    int file_fd = -1;
    LineSplitter splitter;
    std::shared_ptr<FilteredCopy> filtered_copy;  // offered each console line
  };
  explicit WorkerOutput(std::string prefix) : prefix_(std::move(prefix)) {}
  void WriteConsole(Sink& sink, std::string_view bytes, bool flush);

  std::string prefix_;
  std::array<Sink, 2> sinks_;
  std::string batch_;
};

// write(2) until all of `bytes` is written or an error other than EINTR.
void WriteAll(int fd, std::string_view bytes);

}  // namespace muster
