#include "launcher/worker_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace muster {

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a closed console (EPIPE) must not stop supervision
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

Result<std::unique_ptr<WorkerOutput>> WorkerOutput::Open(std::string prefix, const StreamRoute& out,
                                                         const StreamRoute& err) {
  std::unique_ptr<WorkerOutput> output(new WorkerOutput(std::move(prefix)));
  const StreamRoute* routes[2] = {&out, &err};
  for (int i = 0; i < 2; ++i) {
    Sink& sink = output->sinks_[i];
    sink.to_console = routes[i]->to_console;
    sink.console_fd = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
    if (!routes[i]->file_path.empty()) {
      sink.file_fd =
          open(routes[i]->file_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (sink.file_fd < 0) {
        return Status::IoError("cannot open log file '" + routes[i]->file_path +
                               "': " + std::strerror(errno));
      }
    }
  }
  return output;
}

WorkerOutput::~WorkerOutput() {
  for (auto& sink : sinks_) {
    if (sink.file_fd >= 0) close(sink.file_fd);
  }
}

void WorkerOutput::Write(Stream stream, std::string_view bytes) {
  Sink& sink = sinks_[stream == Stream::kStdout ? 0 : 1];
  if (sink.file_fd >= 0) WriteAll(sink.file_fd, bytes);
  if (sink.to_console) WriteConsole(sink, bytes, false);
}

void WorkerOutput::Close(Stream stream) {
  Sink& sink = sinks_[stream == Stream::kStdout ? 0 : 1];
  if (sink.to_console) WriteConsole(sink, {}, true);
  if (sink.file_fd >= 0) {
    close(sink.file_fd);
    sink.file_fd = -1;
  }
}

void WorkerOutput::WriteConsole(Sink& sink, std::string_view bytes, bool flush) {
  // All complete lines of this chunk go out in one write(), each with its
  // prefix, so lines from different workers never mix within a line.
  batch_.clear();
  auto append = [this](std::string_view line) {
    batch_.append(prefix_);
    batch_.append(line);
  };
  sink.splitter.Feed(bytes, append);
  if (flush) sink.splitter.Flush(append);
  if (!batch_.empty()) WriteAll(sink.console_fd, batch_);
}

}  // namespace muster
