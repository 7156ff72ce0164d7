// MetricsHttpServer: a minimal HTTP/1.0 endpoint for Prometheus. GET /metrics
// returns `render()`; anything else gets 404. Requests are bounded (8 KiB of
// headers, 5 s) and each connection answers one request and closes.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace muster::rdzv {

class MetricsHttpServer {
 public:
  static Result<std::unique_ptr<MetricsHttpServer>> Start(boost::asio::io_context& io,
                                                          const std::string& host, uint16_t port,
                                                          std::function<std::string()> render);
  uint16_t port() const { return port_; }
  void Stop();

 private:
  MetricsHttpServer(boost::asio::io_context& io, std::function<std::string()> render);
  void Accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::function<std::string()> render_;
  uint16_t port_ = 0;
};

}  // namespace muster::rdzv
