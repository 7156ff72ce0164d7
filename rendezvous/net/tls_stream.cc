#include "rendezvous/net/tls_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>

namespace muster::rdzv {
namespace asio = boost::asio;

namespace {

// Boost's error_category has a protected, non-virtual destructor by design
// (categories are static singletons, never deleted through a base pointer).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnon-virtual-dtor"
class TlsErrorCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "tls"; }
  std::string message(int value) const override {
    switch (static_cast<TlsErrc>(value)) {
      case TlsErrc::kFailed:
        return "TLS failed";
      case TlsErrc::kPlaintextPeer:
        return "the peer does not speak TLS";
    }
    return "TLS error";
  }
};
#pragma GCC diagnostic pop

// The TLS record type of a handshake: every ClientHello starts with it.
constexpr unsigned char kHandshakeRecord = 0x16;

}  // namespace

const boost::system::error_category& TlsCategory() {
  static const TlsErrorCategory category;
  return category;
}

boost::system::error_code MakeErrorCode(TlsErrc code) {
  return {static_cast<int>(code), TlsCategory()};
}

TlsStream::TlsStream(asio::ip::tcp::socket& socket, const TlsContext& context,
                     const std::string& verify_host)
    : socket_(socket),
      ssl_(SSL_new(context.native())),
      server_(context.side() == TlsContext::Side::kServer) {
  boost::system::error_code ignored;
  // OpenSSL reads and writes the descriptor itself: it must not block.
  socket_.native_non_blocking(true, ignored);
  SSL_set_fd(ssl_, socket_.native_handle());
  if (server_) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  // Each call below can refuse its input, and a refused one leaves nothing
  // to check against: the handshake would then accept any certificate of
  // the CA (another agent's included). OpenSSL refuses an address with a
  // zone (fe80::1%eth0), an empty host and other forms a certificate cannot
  // name; such an endpoint is refused rather than half checked.
  boost::system::error_code not_ip;
  asio::ip::make_address(verify_host, not_ip);
  bool identity_set = false;
  if (!not_ip) {
    identity_set = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), verify_host.c_str()) == 1;
  } else {
    identity_set = !verify_host.empty() && SSL_set1_host(ssl_, verify_host.c_str()) == 1 &&
                   SSL_set_tlsext_host_name(ssl_, verify_host.c_str()) == 1;
  }
  if (!identity_set) {
    ERR_clear_error();
    unverifiable_ = "cannot check the server's identity for endpoint '" + verify_host +
                    "': a certificate cannot name it (an IPv6 address with a zone such as "
                    "%eth0, or an empty host); dial a host name or an address without a zone";
  }
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

void TlsStream::Handshake(Handler handler) {
  if (!unverifiable_.empty()) {
    failure_ = unverifiable_;
    return Finish(std::move(handler), MakeErrorCode(TlsErrc::kFailed), 0);
  }
  Step(Op::kHandshake, {}, 0, std::move(handler));
}

void TlsStream::ReadSome(asio::mutable_buffer buffer, Handler handler) {
  if (server_ && !peeked_) return PeekFirstByte(buffer, std::move(handler));
  // OpenSSL holds no byte of the stream: the next record is still in the
  // socket, so wait for it rather than have SSL_read find it empty first
  // (a read that fails, and its record buffer allocated and released). A
  // connection that reads a heartbeat every half second saves that per
  // message.
  if (SSL_has_pending(ssl_) == 0) {
    return Wait(false, Op::kRead, buffer, 0, std::move(handler));
  }
  Step(Op::kRead, buffer, 0, std::move(handler));
}

void TlsStream::WriteAll(asio::const_buffer buffer, Handler handler) {
  // OpenSSL only reads from it (SSL_write).
  Step(Op::kWrite, asio::mutable_buffer(const_cast<void*>(buffer.data()), buffer.size()), 0,
       std::move(handler));
}

void TlsStream::PeekFirstByte(asio::mutable_buffer buffer, Handler handler) {
  unsigned char first = 0;
  const ssize_t n = ::recv(socket_.native_handle(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    socket_.async_wait(
        asio::ip::tcp::socket::wait_read,
        [this, buffer, handler = std::move(handler)](const boost::system::error_code& ec) mutable {
          if (ec) return handler(ec, 0);
          PeekFirstByte(buffer, std::move(handler));
        });
    return;
  }
  if (n < 0) return Finish(std::move(handler), {errno, boost::system::system_category()}, 0);
  if (n == 0) return Finish(std::move(handler), asio::error::eof, 0);
  if (first != kHandshakeRecord) {
    return Finish(std::move(handler), MakeErrorCode(TlsErrc::kPlaintextPeer), 0);
  }
  peeked_ = true;
  Step(Op::kRead, buffer, 0, std::move(handler));
}

void TlsStream::Step(Op op, asio::mutable_buffer buffer, size_t done, Handler handler) {
  for (;;) {
    // SSL_get_error needs an empty queue. It is empty all but always, and
    // peeking costs a fraction of clearing its every slot.
    if (ERR_peek_error() != 0) ERR_clear_error();
    int ret = 0;
    switch (op) {
      case Op::kHandshake:
        ret = SSL_do_handshake(ssl_);
        if (ret == 1) return Finish(std::move(handler), {}, 0);
        break;
      case Op::kRead:
        ret = SSL_read(ssl_, buffer.data(), static_cast<int>(buffer.size()));
        if (ret > 0) return Finish(std::move(handler), {}, static_cast<size_t>(ret));
        break;
      case Op::kWrite:
        ret = SSL_write(ssl_, static_cast<const char*>(buffer.data()) + done,
                        static_cast<int>(buffer.size() - done));
        if (ret > 0) {
          done += static_cast<size_t>(ret);
          if (done == buffer.size()) return Finish(std::move(handler), {}, done);
          continue;  // partial: write the rest
        }
        break;
    }
    bool want_write = false;
    const boost::system::error_code ec = ErrorOf(ret, &want_write);
    if (ec != asio::error::would_block) return Finish(std::move(handler), ec, 0);
    return Wait(want_write, op, buffer, done, std::move(handler));
  }
}

void TlsStream::Wait(bool want_write, Op op, asio::mutable_buffer buffer, size_t done,
                     Handler handler) {
  socket_.async_wait(
      want_write ? asio::ip::tcp::socket::wait_write : asio::ip::tcp::socket::wait_read,
      [this, op, buffer, done,
       handler = std::move(handler)](const boost::system::error_code& wait_ec) mutable {
        if (wait_ec) return handler(wait_ec, 0);
        Step(op, buffer, done, std::move(handler));
      });
}

boost::system::error_code TlsStream::ErrorOf(int ret, bool* want_write) {
  const int error = SSL_get_error(ssl_, ret);
  switch (error) {
    case SSL_ERROR_WANT_READ:
      return asio::error::would_block;
    case SSL_ERROR_WANT_WRITE:
      *want_write = true;
      return asio::error::would_block;
    case SSL_ERROR_ZERO_RETURN:
      return asio::error::eof;
    case SSL_ERROR_SYSCALL: {
      const int saved = errno;
      ERR_clear_error();
      if (saved == 0) return asio::error::eof;
      return {saved, boost::system::system_category()};
    }
    default:
      break;
  }
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  char text[256] = "TLS error";
  if (code != 0) {
    ERR_error_string_n(code, text, sizeof text);
  }
  // "error:0A000086:SSL routines::certificate verify failed": keep the reason.
  const char* reason = std::strrchr(text, ':');
  failure_ = reason != nullptr && reason[1] != '\0' ? std::string(reason + 1) : std::string(text);
  const long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) {
    failure_ += std::string(": ") + X509_verify_cert_error_string(verify);
  }
  return MakeErrorCode(TlsErrc::kFailed);
}

void TlsStream::Finish(Handler handler, const boost::system::error_code& ec, size_t n) {
  asio::post(socket_.get_executor(),
             [handler = std::move(handler), ec, n]() mutable { handler(ec, n); });
}

std::string TlsStream::Agreed() const {
  const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl_);
  return std::string(SSL_get_version(ssl_)) + " " +
         (cipher != nullptr ? SSL_CIPHER_get_name(cipher) : "?");
}

}  // namespace muster::rdzv
