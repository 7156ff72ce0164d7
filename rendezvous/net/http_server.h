// HttpServer: a small HTTP/1.0 server for read-only endpoints (musterd's
// status page and metrics, the agent's health probe). Each connection sends
// one request and gets one answer, then is closed. Boost.Beast's parser
// reads the request head and its serializer writes the answer
// (http_message.h), over the socket or TlsStream.
//
// - With `tls`, it speaks only HTTPS, with the same certificate (and, with a
//   client CA, the same demand for client certificates) as the rendezvous
//   port; a plain-text client is answered "400, this endpoint speaks HTTPS".
// - With `token`, a request must present it (http_request.h: Bearer, or
//   Basic with the token as password); otherwise 401, and the handler is not
//   called.
// - Bounded: a request head of at most 8 KiB, read within 5 s, and at most
//   128 connections at once (more are closed at accept). GET and HEAD only
//   (others get 405); a body is never read. A head past 8 KiB, or one that
//   is not HTTP/1.x with a path, gets 400. Nothing a client sends can stop
//   the server.
//
// Not thread-safe: runs on `io`'s one thread; the handler runs there too.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/accept_retry.h"
#include "common/status.h"
#include "rendezvous/net/http_request.h"
#include "rendezvous/net/tls_context.h"

namespace muster::rdzv {

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string host;                       // an address to listen on: "0.0.0.0", "::", "127.0.0.1"
  uint16_t port = 0;                      // 0: any free port (port() says which)
  std::string flag;                       // names the setting in errors: "--metrics-port"
  std::shared_ptr<const TlsContext> tls;  // null: plain HTTP
  std::string token;                      // empty: no token asked
};

class HttpServer {
 public:
  // Listens at once. Errors name options.flag, the address and the reason.
  static Result<std::unique_ptr<HttpServer>> Start(boost::asio::io_context& io,
                                                   HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const { return port_; }
  // How many accepts failed and were retried after a pause.
  uint64_t accept_pauses() const { return retry_.pauses(); }
  // Stops accepting; requests in flight are answered.
  void Stop();

  struct Shared;  // what connections in flight share with the server

 private:
  HttpServer(boost::asio::io_context& io, std::shared_ptr<Shared> shared);
  void Accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  AcceptRetry retry_;  // paces accepts after a failure (out of descriptors)
  std::shared_ptr<Shared> shared_;
  uint16_t port_ = 0;
};

}  // namespace muster::rdzv
