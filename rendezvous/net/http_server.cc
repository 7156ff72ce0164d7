#include "rendezvous/net/http_server.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_prefix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <type_traits>

#include "rendezvous/net/http_message.h"
#include "rendezvous/net/tls_stream.h"

namespace muster::rdzv {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

constexpr size_t kMaxConnections = 128;
constexpr auto kRequestDeadline = std::chrono::seconds(5);

struct HttpServer::Shared {
  HttpServerOptions options;
  HttpHandler handler;
  size_t open_connections = 0;
};

namespace {

// What Beast reads and writes through: the socket, or TLS over it. An
// AsyncReadStream and AsyncWriteStream for handler callbacks (no other
// completion tokens). TlsStream takes one buffer and a copyable handler;
// Beast passes buffer sequences and move-only handlers.
//
// It reads at most kMaxHttpHeadBytes in all, and a read past them fails with
// http::error::header_limit: Beast's own header_limit bounds the request
// line and the fields each on its own, not the head.
// REQUIRES: `socket` and `tls` outlive it.
class HttpTransport {
 public:
  using executor_type = tcp::socket::executor_type;

  HttpTransport(tcp::socket& socket, TlsStream* tls) : socket_(socket), tls_(tls) {}
  executor_type get_executor() { return socket_.get_executor(); }

  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    const auto allowed = beast::buffers_prefix(unread_, buffers);
    auto counted = [this, handler = std::forward<Handler>(handler)](
                       const boost::system::error_code& ec, size_t n) mutable {
      unread_ -= n;
      handler(ec, n);
    };
    if (asio::buffer_size(allowed) == 0) {
      return asio::post(get_executor(), [counted = std::move(counted)]() mutable {
        counted(http::make_error_code(http::error::header_limit), 0);
      });
    }
    if (tls_ == nullptr) return socket_.async_read_some(allowed, std::move(counted));
    tls_->ReadSome(beast::buffers_front(allowed), Copyable(std::move(counted)));
  }

  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    if (tls_ == nullptr) return socket_.async_write_some(buffers, std::forward<Handler>(handler));
    // The serializer's pieces (status line, fields, body) in one TLS record
    // rather than one record each.
    out_.resize(asio::buffer_size(buffers));
    asio::buffer_copy(asio::buffer(out_), buffers);
    tls_->WriteAll(asio::buffer(out_), Copyable(std::forward<Handler>(handler)));
  }

 private:
  template <class Handler>
  static TlsStream::Handler Copyable(Handler&& handler) {
    auto held = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(handler));
    return [held](const boost::system::error_code& ec, size_t n) { (*held)(ec, n); };
  }

  tcp::socket& socket_;
  TlsStream* tls_;
  size_t unread_ = kMaxHttpHeadBytes;  // what reads may still take
  std::string out_;                    // what WriteAll is writing
};

// Beast's verdict that the bytes are no HTTP/1 head (a bad method, target,
// version or field), as against a peer that left or a socket that broke
// before a whole head came.
bool IsMalformedHead(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

// One connection: read the head, answer, close. Holds itself alive through
// the handlers it has outstanding.
class HttpExchange : public std::enable_shared_from_this<HttpExchange> {
 public:
  HttpExchange(tcp::socket socket, asio::io_context& io, std::shared_ptr<HttpServer::Shared> shared)
      : socket_(std::move(socket)),
        tls_(shared->options.tls
                 ? std::make_unique<TlsStream>(socket_, *shared->options.tls, std::string())
                 : nullptr),
        transport_(socket_, tls_.get()),
        deadline_(io),
        shared_(std::move(shared)) {
    ++shared_->open_connections;
    LimitHttpHeadParser(parser_);
  }
  ~HttpExchange() { --shared_->open_connections; }

  void Run() {
    deadline_.expires_after(kRequestDeadline);
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->Close();
    });
    http::async_read_header(transport_, buffer_, parser_,
                            [self = shared_from_this()](const boost::system::error_code& ec,
                                                        size_t) { self->OnHead(ec); });
  }

 private:
  void OnHead(const boost::system::error_code& ec) {
    if (ec == MakeErrorCode(TlsErrc::kPlaintextPeer)) {
      AnswerPlaintextPeer();
      return Close();
    }
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return Answer(HttpResponse{400, "text/plain; charset=utf-8", "request head too long\n"},
                    false);
    }
    if (ec && !IsMalformedHead(ec)) return Close();  // nobody left to answer
    const std::optional<HttpRequest> request = ec ? std::nullopt : RequestFromHead(parser_.get());
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
    answer_ = MakeHttpAnswer(response, head_only);
    http::async_write(
        transport_, answer_,
        [self = shared_from_this()](const boost::system::error_code&, size_t) { self->Close(); });
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
  HttpTransport transport_;         // after both
  asio::steady_timer deadline_;
  std::shared_ptr<HttpServer::Shared> shared_;
  beast::flat_buffer buffer_{kMaxHttpHeadBytes};
  HttpHeadParser parser_;
  HttpAnswer answer_;
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
