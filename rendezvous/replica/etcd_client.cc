#include "rendezvous/replica/etcd_client.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fstream>
#include <optional>

#include "common/host_port.h"
#include "common/quote.h"

namespace muster::rdzv::replica {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string Name(const EtcdEndpoint& e) {
  const bool v6 = e.host.find(':') != std::string::npos;
  return (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
}

// OpenSSL's own message says little of which file failed: check that the
// file can be read first, and name it either way.
Status CheckReadable(const char* flag, const std::string& path) {
  std::ifstream file(path);
  if (!file)
    return Status::InvalidArgument(std::string(flag) + " " + Quote(path) + ": cannot read it");
  return Status::Ok();
}

}  // namespace

// The TLS settings every https:// connection shares: the trusted CAs and
// this client's certificate, loaded once.
class EtcdClient::TlsContext {
 public:
  // The context `endpoints` need: null when none is https://; an error when
  // `tls` does not fit them or a file does not load (CheckEtcdTls).
  static Result<std::shared_ptr<TlsContext>> For(const EtcdTls& tls,
                                                 const std::vector<EtcdEndpoint>& endpoints) {
    if (tls.cert.empty() != tls.key.empty()) {
      return Status::InvalidArgument(tls.cert.empty()
                                         ? "--etcd-key " + Quote(tls.key) + " needs --etcd-cert"
                                         : "--etcd-cert " + Quote(tls.cert) + " needs --etcd-key");
    }
    if (std::none_of(endpoints.begin(), endpoints.end(),
                     [](const EtcdEndpoint& e) { return e.tls; })) {
      if (tls == EtcdTls{}) return std::shared_ptr<TlsContext>();
      // Files given for a connection that would not use them: say so rather
      // than talk to etcd in the clear.
      return Status::InvalidArgument(
          "--etcd-cacert, --etcd-cert and --etcd-key need an https:// endpoint in --etcd");
    }
    return Load(tls);
  }

 private:
  static Result<std::shared_ptr<TlsContext>> Load(const EtcdTls& tls) {
    auto made = std::make_shared<TlsContext>();
    asio::ssl::context& ctx = made->context;
    boost::system::error_code ec;
    if (tls.cacert.empty()) {
      ctx.set_default_verify_paths(ec);
      if (ec) return Status::IoError("the system's trusted CAs: " + ec.message());
    } else {
      if (Status s = CheckReadable("--etcd-cacert", tls.cacert); !s.ok()) return s;
      ctx.load_verify_file(tls.cacert, ec);
      if (ec) {
        return Status::InvalidArgument("--etcd-cacert " + Quote(tls.cacert) +
                                       ": not a PEM certificate (" + ec.message() + ")");
      }
    }
    if (!tls.cert.empty()) {
      if (Status s = CheckReadable("--etcd-cert", tls.cert); !s.ok()) return s;
      if (Status s = CheckReadable("--etcd-key", tls.key); !s.ok()) return s;
      ctx.use_certificate_chain_file(tls.cert, ec);
      if (ec) {
        return Status::InvalidArgument("--etcd-cert " + Quote(tls.cert) +
                                       ": not a PEM certificate (" + ec.message() + ")");
      }
      ctx.use_private_key_file(tls.key, asio::ssl::context::pem, ec);
      if (ec) {
        return Status::InvalidArgument("--etcd-key " + Quote(tls.key) +
                                       ": not the PEM key of --etcd-cert (" + ec.message() + ")");
      }
    }
    ctx.set_verify_mode(asio::ssl::verify_peer);
    return made;
  }

 public:
  asio::ssl::context context{asio::ssl::context::tls_client};
};

Status CheckEtcdTls(const EtcdTls& tls, const std::vector<EtcdEndpoint>& endpoints) {
  return EtcdClient::TlsContext::For(tls, endpoints).status();
}

Result<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view text) {
  std::vector<EtcdEndpoint> out;
  if (text.empty()) return Status::InvalidArgument("'' names no etcd endpoint");
  while (true) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    const auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("etcd endpoint " + Quote(item) + ": " + why);
    };
    std::string_view address = item;
    const bool tls = address.starts_with("https://");
    if (tls) address.remove_prefix(8);
    if (address.starts_with("http://")) address.remove_prefix(7);
    if (address.ends_with("/")) address.remove_suffix(1);
    Result<HostPort> parts = SplitEndpoint(address);
    if (!parts.ok()) return bad("must be [http://|https://]HOST:PORT");
    if (!parts->port || *parts->port == 0) return bad("needs a port (etcd's is usually 2379)");
    out.push_back({parts->host, static_cast<uint16_t>(*parts->port), tls});
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// One kept-alive HTTP connection to one endpoint, on a private io_context:
// each exchange runs it until the operation ends or the stream's deadline
// cancels it, so the blocking calls are bounded. Over TLS when the endpoint
// is https:// (`tls` set).
class EtcdClient::Connection {
 public:
  Connection(size_t endpoint_index, std::shared_ptr<TlsContext> tls)
      : index(endpoint_index), tls_(std::move(tls)) {
    Reset();
  }

  Result<std::string> Exchange(const EtcdEndpoint& endpoint, std::string_view path,
                               const std::string& body, std::chrono::milliseconds timeout) {
    beast::error_code ec;
    Lowest().expires_after(timeout);
    if (!open_) {
      tcp::resolver resolver(io_);
      auto resolved = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
      if (ec) return Status::IoError("cannot resolve: " + ec.message());
      Lowest().async_connect(resolved, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
      Run();
      if (ec) return Failed("connect", ec);
      if (secure_) {
        if (Status s = Handshake(endpoint.host); !s.ok()) return s;
      }
      open_ = true;
    }
    http::request<http::string_body> request{http::verb::post, std::string(path), 11};
    request.set(http::field::host, Name(endpoint));
    request.set(http::field::content_type, "application/json");
    request.keep_alive(true);
    request.body() = body;
    request.prepare_payload();
    http::response<http::string_body> response;
    const auto exchange = [&](auto& stream) -> Status {
      http::async_write(stream, request, [&](beast::error_code e, size_t) { ec = e; });
      Run();
      if (ec) return Failed("send", ec);
      http::async_read(stream, buffer_, response, [&](beast::error_code e, size_t) { ec = e; });
      Run();
      if (ec) return Failed("receive", ec);
      return Status::Ok();
    };
    if (Status s = secure_ ? exchange(*secure_) : exchange(*plain_); !s.ok()) return s;
    if (!response.keep_alive()) Close();
    // 5xx: this member cannot serve (no leader, overloaded): try another.
    // Below that the answer is etcd's, refusal included.
    if (response.result_int() >= 500) {
      std::optional<std::string> error = EtcdError(response.body());
      return Status::IoError("HTTP " + std::to_string(response.result_int()) +
                             (error ? ": " + *error : ""));
    }
    return std::move(response.body());
  }

  const size_t index;

 private:
  Status Handshake(const std::string& host) {
    beast::error_code ec;
    boost::system::error_code not_ip;
    asio::ip::make_address(host, not_ip);
    // SNI carries a host name only; the certificate must name the host
    // either way (a DNS or an IP address SAN).
    if (not_ip && !SSL_set_tlsext_host_name(secure_->native_handle(), host.c_str())) {
      return Failed("TLS handshake", beast::error_code(static_cast<int>(::ERR_get_error()),
                                                       asio::error::get_ssl_category()));
    }
    secure_->set_verify_callback(asio::ssl::host_name_verification(host));
    secure_->async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
    Run();
    if (ec) return Failed("TLS handshake", ec);
    return Status::Ok();
  }
  beast::tcp_stream& Lowest() { return secure_ ? beast::get_lowest_layer(*secure_) : *plain_; }
  void Run() {
    io_.restart();
    io_.run();
  }
  Status Failed(const char* what, const beast::error_code& ec) {
    Close();
    const bool timed_out = ec == beast::error::timeout;
    return Status::IoError(std::string(what) + ": " + (timed_out ? "timed out" : ec.message()));
  }
  void Close() {
    beast::error_code ignored;
    Lowest().socket().close(ignored);
    buffer_.clear();
    open_ = false;
    // A TLS session does not outlive its connection: the next one starts afresh.
    Reset();
  }
  void Reset() {
    if (tls_) {
      secure_.emplace(io_, tls_->context);
    } else if (!plain_) {
      plain_.emplace(io_);
    }
  }

  std::shared_ptr<TlsContext> tls_;
  asio::io_context io_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure_;
  beast::flat_buffer buffer_;
  bool open_ = false;
};

EtcdClient::EtcdClient(std::vector<EtcdEndpoint> endpoints, std::chrono::milliseconds timeout,
                       const EtcdTls& tls)
    : endpoints_(std::move(endpoints)), timeout_(timeout) {
  auto made = TlsContext::For(tls, endpoints_);
  if (made.ok()) {
    tls_ = *made;
  } else {
    tls_status_ = made.status();
  }
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::current_endpoint() const {
  return endpoints_.empty() ? "" : Name(endpoints_[current_]);
}

Result<std::string> EtcdClient::Post(const char* call, std::string_view path,
                                     const std::string& body) {
  std::string tried;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const size_t index = (current_ + i) % endpoints_.size();
    if (endpoints_[index].tls && !tls_status_.ok()) {
      tried += (tried.empty() ? "" : "; ") + Name(endpoints_[index]) + ": " + tls_status_.message();
      continue;
    }
    if (!connection_ || connection_->index != index) {
      connection_ = std::make_unique<Connection>(index, endpoints_[index].tls ? tls_ : nullptr);
    }
    Result<std::string> answer = connection_->Exchange(endpoints_[index], path, body, timeout_);
    if (answer.ok()) {
      current_ = index;
      return answer;
    }
    connection_.reset();
    tried +=
        (tried.empty() ? "" : "; ") + Name(endpoints_[index]) + ": " + answer.status().message();
  }
  return Status::IoError(std::string("etcd ") + call + ": no endpoint answered (" + tried + ")");
}

Result<GrantedLease> EtcdClient::GrantLease(int64_t ttl_seconds) {
  Result<std::string> body = Post("lease grant", "/v3/lease/grant", LeaseGrantBody(ttl_seconds));
  if (!body.ok()) return body.status();
  return ParseLeaseGrant(*body);
}

Result<int64_t> EtcdClient::KeepAlive(int64_t lease_id) {
  Result<std::string> body =
      Post("lease keepalive", "/v3/lease/keepalive", LeaseKeepAliveBody(lease_id));
  if (!body.ok()) return body.status();
  return ParseLeaseKeepAlive(*body);
}

Status EtcdClient::RevokeLease(int64_t lease_id) {
  Result<std::string> body = Post("lease revoke", "/v3/lease/revoke", LeaseRevokeBody(lease_id));
  if (!body.ok()) return body.status();
  // An unknown lease (already expired) is what revoking wants.
  if (std::optional<std::string> error = EtcdError(*body);
      error && error->find("lease not found") == std::string::npos) {
    return Status::IoError("etcd lease revoke: " + *error);
  }
  return Status::Ok();
}

Result<CampaignOutcome> EtcdClient::Campaign(std::string_view key, std::string_view value,
                                             int64_t lease_id) {
  Result<std::string> body = Post("campaign", "/v3/kv/txn", CampaignBody(key, value, lease_id));
  if (!body.ok()) return body.status();
  return ParseCampaign(*body);
}

Result<std::optional<KeyValue>> EtcdClient::Read(std::string_view key) {
  Result<std::string> body = Post("range", "/v3/kv/range", RangeBody(key));
  if (!body.ok()) return body.status();
  return ParseRange(*body);
}

Result<std::vector<KeyValue>> EtcdClient::ReadPrefix(std::string_view prefix) {
  Result<std::string> body = Post("range", "/v3/kv/range", RangePrefixBody(prefix));
  if (!body.ok()) return body.status();
  return ParseRangePrefix(*body);
}

Status EtcdClient::Put(std::string_view key, std::string_view value, int64_t lease_id) {
  Result<std::string> body = Post("put", "/v3/kv/put", PutBody(key, value, lease_id));
  if (!body.ok()) return body.status();
  return ParsePut(*body);
}

Result<bool> EtcdClient::GuardedPut(std::string_view guard_key, int64_t guard_revision,
                                    std::string_view key, std::string_view value) {
  Result<std::string> body =
      Post("guarded put", "/v3/kv/txn", GuardedPutBody(guard_key, guard_revision, key, value));
  if (!body.ok()) return body.status();
  return ParseGuardedPut(*body);
}

}  // namespace muster::rdzv::replica
