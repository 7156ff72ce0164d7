// TlsStream: TLS (OpenSSL) over a connected TCP socket, driven by the
// socket's readiness. OpenSSL reads and writes the descriptor itself; the
// stream waits with async_wait whenever OpenSSL wants the socket readable or
// writable, and retries. It holds no record buffers of its own (Asio's
// ssl::stream holds 34 KiB per connection), so a daemon with 10,000 TLS
// agents stays small (tls_context.h).
//
// Client side: Handshake() first; it checks the server's certificate chains
// to the trusted CAs and names `verify_host` (a DNS name, or an IP address
// matched against the certificate's IP entries). A `verify_host` that
// cannot be checked (an address with a zone, "fe80::1%eth0"; an empty one)
// fails the handshake before a byte is sent, with failure() naming it: a
// chain alone says only "some certificate of this CA". Server side: the handshake
// runs inside the first ReadSome. Before it, the server looks at the peer's
// first byte: a peer that does not start a TLS handshake fails with
// TlsErrc::kPlaintextPeer, so the caller can answer it in plain text.
//
// Errors: a TLS failure (certificate, alert, protocol) is TlsErrc::kFailed,
// with failure() saying why; a peer that closed is asio::error::eof; a
// broken socket is its system error. Handlers never run inside the call
// that started them (they are posted or come from a wait).
//
// Not thread-safe: one executor. REQUIRES: `socket` outlives the stream,
// and at most one ReadSome and one WriteAll are outstanding at a time; the
// process ignores SIGPIPE (OpenSSL writes with write(2), not with
// MSG_NOSIGNAL as Asio does: a peer's reset would kill the process).
#pragma once

#include <openssl/types.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <functional>
#include <string>

#include "rendezvous/net/tls_context.h"

namespace muster::rdzv {

enum class TlsErrc {
  kFailed = 1,         // handshake or record layer refused: see failure()
  kPlaintextPeer = 2,  // the peer spoke first, and not TLS
};
const boost::system::error_category& TlsCategory();
boost::system::error_code MakeErrorCode(TlsErrc code);

class TlsStream {
 public:
  using Handler = std::function<void(const boost::system::error_code&, size_t)>;

  // `verify_host`: the client's dialled host; ignored on a server context.
  TlsStream(boost::asio::ip::tcp::socket& socket, const TlsContext& context,
            const std::string& verify_host);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Client side: completes the handshake (size_t is 0).
  void Handshake(Handler handler);
  // Reads at least one byte into `buffer`.
  void ReadSome(boost::asio::mutable_buffer buffer, Handler handler);
  // Writes all of `buffer` (which must stay valid until the handler runs).
  void WriteAll(boost::asio::const_buffer buffer, Handler handler);

  // Why the latest TlsErrc::kFailed happened: "certificate verify failed:
  // Hostname mismatch", "tlsv13 alert certificate required", ...
  const std::string& failure() const { return failure_; }
  // The protocol and cipher agreed, once the handshake is done.
  std::string Agreed() const;

 private:
  enum class Op { kHandshake, kRead, kWrite };
  // One step of `op`: runs OpenSSL; on "want read/write" waits and steps
  // again; otherwise posts the handler.
  void Step(Op op, boost::asio::mutable_buffer buffer, size_t done, Handler handler);
  // Waits until the socket is readable (writable with `want_write`), then
  // steps `op`.
  void Wait(bool want_write, Op op, boost::asio::mutable_buffer buffer, size_t done,
            Handler handler);
  // The server's look at the first byte, before any TLS.
  void PeekFirstByte(boost::asio::mutable_buffer buffer, Handler handler);
  // The error for OpenSSL's result `ret` of a call, with failure_ set;
  // would_block when OpenSSL wants the socket (`want_write` says which way).
  boost::system::error_code ErrorOf(int ret, bool* want_write);
  void Finish(Handler handler, const boost::system::error_code& ec, size_t n);

  boost::asio::ip::tcp::socket& socket_;
  SSL* ssl_;
  bool server_;
  bool peeked_ = false;  // server: the first byte was a TLS handshake
  std::string failure_;
  // Client: why the dialled host cannot be checked; empty when it can.
  std::string unverifiable_;
};

}  // namespace muster::rdzv
