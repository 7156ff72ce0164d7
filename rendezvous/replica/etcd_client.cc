#include "rendezvous/replica/etcd_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

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

}  // namespace

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
    if (address.starts_with("https://")) return bad("TLS to etcd is not supported");
    if (address.starts_with("http://")) address.remove_prefix(7);
    if (address.ends_with("/")) address.remove_suffix(1);
    Result<HostPort> parts = SplitEndpoint(address);
    if (!parts.ok()) return bad("must be [http://]HOST:PORT");
    if (!parts->port || *parts->port == 0) return bad("needs a port (etcd's is usually 2379)");
    out.push_back({parts->host, static_cast<uint16_t>(*parts->port)});
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// One kept-alive HTTP connection to one endpoint, on a private io_context:
// each exchange runs it until the operation ends or the stream's deadline
// cancels it, so the blocking calls are bounded.
class EtcdClient::Connection {
 public:
  explicit Connection(size_t endpoint_index) : index(endpoint_index), stream(io) {}

  Result<std::string> Exchange(const EtcdEndpoint& endpoint, std::string_view path,
                               const std::string& body, std::chrono::milliseconds timeout) {
    beast::error_code ec;
    stream.expires_after(timeout);
    if (!open) {
      tcp::resolver resolver(io);
      auto resolved = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
      if (ec) return Status::IoError("cannot resolve: " + ec.message());
      stream.async_connect(resolved, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
      Run();
      if (ec) return Failed("connect", ec);
      open = true;
    }
    http::request<http::string_body> request{http::verb::post, std::string(path), 11};
    request.set(http::field::host, Name(endpoint));
    request.set(http::field::content_type, "application/json");
    request.keep_alive(true);
    request.body() = body;
    request.prepare_payload();
    http::async_write(stream, request, [&](beast::error_code e, size_t) { ec = e; });
    Run();
    if (ec) return Failed("send", ec);
    http::response<http::string_body> response;
    http::async_read(stream, buffer, response, [&](beast::error_code e, size_t) { ec = e; });
    Run();
    if (ec) return Failed("receive", ec);
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
  void Run() {
    io.restart();
    io.run();
  }
  Status Failed(const char* what, const beast::error_code& ec) {
    Close();
    const bool timed_out = ec == beast::error::timeout;
    return Status::IoError(std::string(what) + ": " + (timed_out ? "timed out" : ec.message()));
  }
  void Close() {
    beast::error_code ignored;
    stream.socket().close(ignored);
    buffer.clear();
    open = false;
  }

  asio::io_context io;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool open = false;
};

EtcdClient::EtcdClient(std::vector<EtcdEndpoint> endpoints, std::chrono::milliseconds timeout)
    : endpoints_(std::move(endpoints)), timeout_(timeout) {}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::current_endpoint() const {
  return endpoints_.empty() ? "" : Name(endpoints_[current_]);
}

Result<std::string> EtcdClient::Post(const char* call, std::string_view path,
                                     const std::string& body) {
  std::string tried;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const size_t index = (current_ + i) % endpoints_.size();
    if (!connection_ || connection_->index != index) {
      connection_ = std::make_unique<Connection>(index);
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
