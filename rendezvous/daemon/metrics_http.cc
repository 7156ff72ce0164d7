#include "rendezvous/daemon/metrics_http.h"

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>

namespace muster::rdzv {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

struct HttpExchange : std::enable_shared_from_this<HttpExchange> {
  HttpExchange(tcp::socket s, asio::io_context& io) : socket(std::move(s)), deadline(io) {}
  tcp::socket socket;
  asio::streambuf request{8192};
  asio::steady_timer deadline;
  std::string response;
};

}  // namespace

MetricsHttpServer::MetricsHttpServer(asio::io_context& io, std::function<std::string()> render)
    : io_(io), acceptor_(io), render_(std::move(render)) {}

Result<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    asio::io_context& io, const std::string& host, uint16_t port,
    std::function<std::string()> render) {
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(io, std::move(render)));
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument("--metrics-port: bad address '" + host + "'");
  tcp::endpoint endpoint(address, port);
  server->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) server->acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) server->acceptor_.bind(endpoint, ec);
  if (!ec) server->acceptor_.listen(64, ec);
  if (ec) {
    return Status::IoError("--metrics-port: cannot listen on " + host + ":" + std::to_string(port) +
                           ": " + ec.message());
  }
  server->port_ = server->acceptor_.local_endpoint(ec).port();
  server->Accept();
  return server;
}

void MetricsHttpServer::Accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec) return;  // closed
    auto ex = std::make_shared<HttpExchange>(std::move(socket), io_);
    ex->deadline.expires_after(std::chrono::seconds(5));
    ex->deadline.async_wait([ex](const boost::system::error_code& wait_ec) {
      if (!wait_ec) {
        boost::system::error_code ignored;
        ex->socket.close(ignored);
      }
    });
    asio::async_read_until(
        ex->socket, ex->request, "\r\n\r\n",
        [this, ex](const boost::system::error_code& read_ec, size_t) {
          if (read_ec) {
            ex->deadline.cancel();
            return;
          }
          std::istream in(&ex->request);
          std::string method, path;
          in >> method >> path;
          if (method == "GET" && (path == "/metrics" || path.rfind("/metrics?", 0) == 0)) {
            const std::string body = render_();
            ex->response =
                "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
          } else {
            ex->response =
                "HTTP/1.0 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot "
                "found\n";
          }
          asio::async_write(ex->socket, asio::buffer(ex->response),
                            [ex](const boost::system::error_code&, size_t) {
                              boost::system::error_code ignored;
                              ex->socket.shutdown(tcp::socket::shutdown_both, ignored);
                              ex->socket.close(ignored);
                              ex->deadline.cancel();
                            });
        });
    Accept();
  });
}

void MetricsHttpServer::Stop() {
  boost::system::error_code ec;
  acceptor_.close(ec);
}

}  // namespace muster::rdzv
