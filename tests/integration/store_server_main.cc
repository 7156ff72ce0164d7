// Test-only: serves a StoreServer for the Python integration tests.
// Usage: store_server_main [PORT [HOST]]   (defaults: 0 = any free port, 127.0.0.1)
//
// stdout: "port=N" once listening, then one line per stdin command.
// stdin commands, one per line:
//   stats  -> "connections=C keys=K waits=W refused=R"
//   seal   -> StoreServer::Seal(), then "sealed"
//   open N -> StoreServer::Open(N), then "opened"
// Exits 0 on SIGTERM, SIGINT or stdin EOF; exits 1 if the server cannot start.
// Logs (spdlog, level from SPDLOG_LEVEL, default info) go to stderr.
// MUSTER_STORE_SETTLE_MS, when set, replaces SessionLimits::settle_delay;
// MUSTER_STORE_MAX_CONNECTIONS, SessionLimits::max_connections;
// MUSTER_STORE_MAX_BUFFERED_BYTES, SessionLimits::max_buffered_bytes.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/streambuf.hpp>

#include "store/store_server.h"

namespace {

namespace asio = boost::asio;

struct StdinCommands {
  StdinCommands(asio::io_context& io, muster::store::StoreServer* s, std::function<void()> eof)
      : in(io), server(s), on_eof(std::move(eof)) {}

  asio::posix::stream_descriptor in;
  asio::streambuf buffer;
  muster::store::StoreServer* server;
  std::function<void()> on_eof;

  void Read() {
    asio::async_read_until(in, buffer, '\n', [this](boost::system::error_code ec, size_t) {
      if (ec) {
        on_eof();
        return;
      }
      std::istream lines(&buffer);
      std::string line;
      std::getline(lines, line);
      if (line == "stats") {
        std::cout << "connections=" << server->num_connections() << " keys=" << server->num_keys()
                  << " waits=" << server->num_pending_waits()
                  << " refused=" << server->refused_connections() << std::endl;
      } else if (line == "seal") {
        server->Seal();
        std::cout << "sealed" << std::endl;
      } else if (line.starts_with("open ")) {
        server->Open(std::stoull(line.substr(5)));
        std::cout << "opened" << std::endl;
      } else {
        std::cout << "unknown command" << std::endl;
      }
      Read();
    });
  }
};

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_logger_mt("store"));
  spdlog::cfg::load_env_levels();
  const uint16_t port = argc > 1 ? static_cast<uint16_t>(std::stoi(argv[1])) : 0;
  const std::string host = argc > 2 ? argv[2] : "127.0.0.1";

  muster::store::SessionLimits limits;
  if (const char* settle = std::getenv("MUSTER_STORE_SETTLE_MS")) {
    limits.settle_delay = std::chrono::milliseconds(std::stoi(settle));
  }
  if (const char* cap = std::getenv("MUSTER_STORE_MAX_CONNECTIONS")) {
    limits.max_connections = std::stoull(cap);
  }
  if (const char* buffered = std::getenv("MUSTER_STORE_MAX_BUFFERED_BYTES")) {
    limits.max_buffered_bytes = std::stoull(buffered);
  }

  asio::io_context io;
  auto server = muster::store::StoreServer::Start(io, host, port, limits);
  if (!server.ok()) {
    std::cerr << server.status().message() << std::endl;
    return 1;
  }
  std::cout << "port=" << (*server)->port() << std::endl;  // endl flushes

  auto stop = [&] {
    (*server)->Stop();
    io.stop();
  };
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code, int) { stop(); });

  StdinCommands commands(io, server->get(), stop);
  const int in_fd = ::dup(STDIN_FILENO);
  boost::system::error_code ec;
  commands.in.assign(in_fd, ec);
  if (!ec) {
    commands.Read();
  } else if (in_fd >= 0) {
    ::close(in_fd);  // stdin cannot be polled (a file, /dev/null): no commands
  }

  io.run();
  return 0;
}
