#include "rendezvous/net/http_server.h"

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "rendezvous/net/tls_stream.h"

namespace muster::rdzv {
namespace asio = boost::asio;
using asio::ip::tcp;

constexpr size_t kMaxHeadBytes = 8192;
constexpr size_t kMaxConnections = 128;
constexpr auto kRequestDeadline = std::chrono::seconds(5);

struct HttpServer::Shared {
  HttpServerOptions options;
  HttpHandler handler;
  size_t open_connections = 0;
};

namespace {

// One connection: read the head, answer, close. Holds itself alive through
// the handlers it has outstanding.
class HttpExchange : public std::enable_shared_from_this<HttpExchange> {
 public:
  HttpExchange(tcp::socket socket, asio::io_context& io, std::shared_ptr<HttpServer::Shared> shared)
      : socket_(std::move(socket)), deadline_(io), shared_(std::move(shared)) {
    ++shared_->open_connections;
    if (shared_->options.tls) {
      tls_ = std::make_unique<TlsStream>(socket_, *shared_->options.tls, std::string());
    }
  }
  ~HttpExchange() { --shared_->open_connections; }

  void Run() {
    deadline_.expires_after(kRequestDeadline);
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->Close();
    });
    Read();
  }

 private:
  void Read() {
    auto on_read = [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
      self->OnRead(ec, n);
    };
    if (tls_) {
      tls_->ReadSome(asio::buffer(chunk_), std::move(on_read));
    } else {
      socket_.async_read_some(asio::buffer(chunk_), std::move(on_read));
    }
  }

  void OnRead(const boost::system::error_code& ec, size_t n) {
    if (ec) {
      if (ec == MakeErrorCode(TlsErrc::kPlaintextPeer)) AnswerPlaintextPeer();
      Close();
      return;
    }
    head_.append(chunk_.data(), n);
    const size_t end = head_.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (head_.size() > kMaxHeadBytes) {
        Answer(HttpResponse{400, "text/plain; charset=utf-8", "request head too long\n"}, false);
      } else {
        Read();
      }
      return;
    }
    const std::optional<HttpRequest> request = ParseHttpRequestHead(head_.substr(0, end + 2));
    if (!request) {
      Answer(HttpResponse{400, "text/plain; charset=utf-8", "not an HTTP/1 request\n"}, false);
      return;
    }
    const bool head_only = request->method == "HEAD";
    if (request->method != "GET" && !head_only) {
      Answer(HttpResponse{405, "text/plain; charset=utf-8", "read-only: GET or HEAD\n"}, false);
    } else if (!HttpAuthorized(request->authorization, shared_->options.token)) {
      Answer(HttpResponse{401, "text/plain; charset=utf-8", "this endpoint needs the token\n"},
             head_only);
    } else {
      Answer(shared_->handler(*request), head_only);
    }
  }

  void Answer(const HttpResponse& response, bool head_only) {
    response_ = FormatHttpResponse(response, head_only);
    auto on_written = [self = shared_from_this()](const boost::system::error_code&, size_t) {
      self->Close();
    };
    if (tls_) {
      tls_->WriteAll(asio::buffer(response_), std::move(on_written));
    } else {
      asio::async_write(socket_, asio::buffer(response_), std::move(on_written));
    }
  }

  // A browser pointed at http:// on an HTTPS port: say so in its language.
  // One small write into an empty socket buffer, without waiting.
  void AnswerPlaintextPeer() {
    const std::string answer = FormatHttpResponse(
        HttpResponse{400, "text/plain; charset=utf-8", "this endpoint speaks HTTPS\n"}, false);
    boost::system::error_code ignored;
    socket_.native_non_blocking(true, ignored);
    socket_.write_some(asio::buffer(answer), ignored);
  }

  void Close() {
    boost::system::error_code ignored;
    deadline_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

  tcp::socket socket_;
  std::unique_ptr<TlsStream> tls_;  // after socket_: it refers to it
  asio::steady_timer deadline_;
  std::shared_ptr<HttpServer::Shared> shared_;
  std::array<char, 2048> chunk_{};
  std::string head_;
  std::string response_;
};

}  // namespace

HttpServer::HttpServer(asio::io_context& io, std::shared_ptr<Shared> shared)
    : io_(io), acceptor_(io), retry_(io.get_executor()), shared_(std::move(shared)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(asio::io_context& io,
                                                      HttpServerOptions options,
                                                      HttpHandler handler) {
  auto shared = std::make_shared<Shared>();
  shared->options = std::move(options);
  shared->handler = std::move(handler);
  const HttpServerOptions& o = shared->options;
  std::unique_ptr<HttpServer> server(new HttpServer(io, shared));
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(o.host, ec);
  if (ec) return Status::InvalidArgument(o.flag + ": bad address '" + o.host + "'");
  const tcp::endpoint endpoint(address, o.port);
  server->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) server->acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) server->acceptor_.bind(endpoint, ec);
  if (!ec) server->acceptor_.listen(64, ec);
  if (ec) {
    return Status::IoError(o.flag + ": cannot listen on " + o.host + ":" + std::to_string(o.port) +
                           ": " + ec.message());
  }
  server->port_ = server->acceptor_.local_endpoint(ec).port();
  server->Accept();
  return server;
}

void HttpServer::Accept() {
  acceptor_.async_accept(
      [this, shared = shared_](const boost::system::error_code& ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        // Out of descriptors: the connection waits in the backlog, and an
        // accept at once would fail at once, spinning the daemon's loop.
        if (AcceptRetry::Pauses(ec)) return retry_.After([this] { Accept(); });
        if (!ec) {
          if (shared->open_connections >= kMaxConnections) {
            boost::system::error_code ignored;
            socket.close(ignored);
          } else {
            std::make_shared<HttpExchange>(std::move(socket), io_, shared)->Run();
          }
        }
        Accept();
      });
}

void HttpServer::Stop() {
  boost::system::error_code ignored;
  retry_.Cancel();
  acceptor_.close(ignored);
}

}  // namespace muster::rdzv
