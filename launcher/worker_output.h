// WorkerOutput: where one worker's stdout and stderr go. Console copies are
// prefixed ("[rank3]:") and written a whole line at a time; file copies
// (--log-dir, --redirects, --tee) get the bytes exactly as the worker wrote them.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include "launcher/line_splitter.h"
#include "launcher/process_spawner.h"

namespace muster {

struct StreamRoute {
  bool to_console = true;
  std::string file_path;  // empty: no file
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

 private:
  struct Sink {
    bool to_console = false;
    int console_fd = -1;
    int file_fd = -1;
    LineSplitter splitter;
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
