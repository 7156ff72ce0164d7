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

Result<std::shared_ptr<FilteredCopy>> FilteredCopy::Open(const std::string& path,
                                                         std::vector<std::string> filters) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("cannot open log file '" + path + "': " + std::strerror(errno));
  }
  return std::shared_ptr<FilteredCopy>(new FilteredCopy(fd, std::move(filters)));
}

FilteredCopy::~FilteredCopy() { close(fd_); }

bool FilteredCopy::Matches(const std::vector<std::string>& filters, std::string_view line) {
  for (const auto& filter : filters) {
    if (line.find(filter) != std::string_view::npos) return true;
  }
  return false;
}

void FilteredCopy::Offer(std::string_view prefix, std::string_view line) {
  if (!Matches(filters_, line)) return;
  // One write per line: lines of different workers never mix.
  batch_.assign(prefix);
  batch_.append(line);
  WriteAll(fd_, batch_);
}

Result<std::unique_ptr<WorkerOutput>> WorkerOutput::Open(std::string prefix, const StreamRoute& out,
                                                         const StreamRoute& err) {
  std::unique_ptr<WorkerOutput> output(new WorkerOutput(std::move(prefix)));
  const StreamRoute* routes[2] = {&out, &err};
  for (int i = 0; i < 2; ++i) {
    Sink& sink = output->sinks_[i];
    sink.to_console = routes[i]->to_console;
    sink.console_fd = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
    if (sink.to_console) sink.filtered_copy = routes[i]->filtered_copy;
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
  sink.filtered_copy.reset();
  if (sink.file_fd >= 0) {
    close(sink.file_fd);
    sink.file_fd = -1;
  }
}

void WorkerOutput::WriteConsole(Sink& sink, std::string_view bytes, bool flush) {
  // All complete lines of this chunk go out in one write(), each with its
  // prefix, so lines from different workers never mix within a line.
  batch_.clear();
  auto append = [this, &sink](std::string_view line) {
    batch_.append(prefix_);
    batch_.append(line);
    if (sink.filtered_copy) sink.filtered_copy->Offer(prefix_, line);
  };
  sink.splitter.Feed(bytes, append);
  if (flush) sink.splitter.Flush(append);
  if (!batch_.empty()) WriteAll(sink.console_fd, batch_);
}

}  // namespace muster
