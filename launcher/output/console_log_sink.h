// ConsoleLogSink: muster's own log lines on stderr, written so that they
// never land on a worker's open console line (a progress bar drawn with
// '\r'): an open line is ended first (worker_output.h, WriteOwnLine).
// Single-threaded, as muster logs from one thread only.
#pragma once

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include "launcher/output/worker_output.h"

namespace muster {

class ConsoleLogSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    WriteOwnLine(STDERR_FILENO, std::string_view(formatted.data(), formatted.size()));
  }
  void flush_() override {}
};

}  // namespace muster
