#include "launcher/output/worker_output.h"

#include <fcntl.h>
#include <sys/stat.h>
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

namespace {

bool SameFile(int fd_a, int fd_b) {
  struct stat a {
  }, b{};
  if (fstat(fd_a, &a) != 0 || fstat(fd_b, &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The record of who left the console line of `console_fd` open: shared by
// stdout and stderr when they are the same file, where one's open line is
// the other's too.
ConsoleLine& ConsoleLineOf(int console_fd) {
  static ConsoleLine stdout_line;
  static ConsoleLine stderr_line;
  static const bool one_console = SameFile(STDOUT_FILENO, STDERR_FILENO);
  return console_fd == STDOUT_FILENO || one_console ? stdout_line : stderr_line;
}

}  // namespace

Result<std::unique_ptr<WorkerOutput>> WorkerOutput::Open(std::string prefix, const StreamRoute& out,
                                                         const StreamRoute& err) {
  std::unique_ptr<WorkerOutput> output(new WorkerOutput(std::move(prefix)));
  const StreamRoute* routes[2] = {&out, &err};
  for (int i = 0; i < 2; ++i) {
    Sink& sink = output->sinks_[i];
    sink.to_console = routes[i]->to_console;
    sink.console_fd = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
    sink.console_line = &ConsoleLineOf(sink.console_fd);
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
    // A stream dropped before its end (a grandchild still holds the pipe at
    // a restart): what it held is shown and its open line ended, as Close
    // does; after Close this adds nothing.
    if (sink.to_console && sink.console_line) FinishConsole(sink);
    if (sink.console_line) sink.console_line->Forget(sink.console);
    if (sink.file_fd >= 0) close(sink.file_fd);
  }
}

void WorkerOutput::Write(Stream stream, std::string_view bytes, Time now) {
  Sink& sink = sinks_[stream == Stream::kStdout ? 0 : 1];
  if (sink.file_fd >= 0) WriteAll(sink.file_fd, bytes);
  if (!sink.to_console) return;
  rendered_.clear();
  sink.console.Feed(bytes, now, rendered_);
  WriteConsole(sink);
  OfferFiltered(sink, bytes, false);
}

void WorkerOutput::ReleaseHeld(Time now) {
  for (auto& sink : sinks_) {
    if (!sink.to_console) continue;
    rendered_.clear();
    sink.console.ReleaseDue(now, rendered_);
    WriteConsole(sink);
  }
}

std::optional<Time> WorkerOutput::held_until() const {
  std::optional<Time> earliest;
  for (const auto& sink : sinks_) {
    const auto due = sink.console.held_until();
    if (due && (!earliest || *due < *earliest)) earliest = due;
  }
  return earliest;
}

void WorkerOutput::Close(Stream stream) {
  Sink& sink = sinks_[stream == Stream::kStdout ? 0 : 1];
  if (sink.to_console) FinishConsole(sink);
  sink.filtered_copy.reset();
  if (sink.file_fd >= 0) {
    close(sink.file_fd);
    sink.file_fd = -1;
  }
}

void WorkerOutput::SetPrefix(std::string prefix) {
  prefix_ = std::move(prefix);
  for (auto& sink : sinks_) sink.console.SetPrefix(prefix_);
}

void WorkerOutput::FinishConsole(Sink& sink) {
  rendered_.clear();
  sink.console.Finish(rendered_);
  WriteConsole(sink);
  OfferFiltered(sink, {}, true);
}

void WorkerOutput::WriteConsole(Sink& sink) {
  if (rendered_.empty()) return;
  // One write() for what this stream releases now, so lines from different
  // workers never mix within a line.
  batch_.clear();
  sink.console_line->BeforeWrite(sink.console, batch_);
  batch_.append(rendered_);
  WriteAll(sink.console_fd, batch_);
  sink.console_line->AfterWrite(sink.console);
}

void WorkerOutput::OfferFiltered(Sink& sink, std::string_view bytes, bool end_of_stream) {
  if (!sink.filtered_copy) return;
  auto offer = [this, &sink](std::string_view line) { sink.filtered_copy->Offer(prefix_, line); };
  sink.filter_lines.Feed(bytes, offer);
  if (end_of_stream) sink.filter_lines.Flush(offer);
}

void WriteOwnLine(int console_fd, std::string_view line) {
  std::string out;
  ConsoleLineOf(console_fd).BeforeOwnLine(out);
  out.append(line);
  WriteAll(console_fd, out);
}

}  // namespace muster
