#include "worker_runtime/store/store_client.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/clock.h"
#include "worker_runtime/store/store_wire.h"
#include "worker_runtime/store/tcp_connection.h"

namespace muster::runtime {
namespace {

using store_wire::ReplyDecoder;
using store_wire::ReplyType;

// Joins what was being done with a transport error. A timeout gets the
// budget that expired right after "timed out", and its name when that is not
// the call's own timeout: "...: timed out after 1000 ms; last error: ...",
// "...: timed out after 500 ms (connect_timeout); last error: ...".
Status Explained(const std::string& what, const Status& cause, StoreClient::Timeout timeout,
                 std::string_view budget_name = {}) {
  std::string detail = cause.message();
  if (!cause.IsTimeout()) return Status::IoError(what + ": " + detail);
  std::string budget = " after " + std::to_string(timeout.count()) + " ms";
  if (!budget_name.empty()) budget += " (" + std::string(budget_name) + ")";
  const std::string_view head = "timed out";
  if (detail.starts_with(head)) {
    detail.insert(head.size(), budget);
  } else {
    detail += budget;
  }
  return Status::Timeout(what + ": " + detail);
}

// The client of one store endpoint. Holds at most one connection; any
// failure mid-call drops it, because the position in the reply stream is
// then unknown, and the next call reconnects.
class TcpStoreClient final : public StoreClient {
 public:
  TcpStoreClient(Options options, TcpConnection connection)
      : options_(std::move(options)),
        endpoint_(options_.host + ":" + std::to_string(options_.port)),
        connection_(std::move(connection)) {}

  Status Set(std::string_view key, std::string_view value) override {
    const std::string full_key = Prefixed(key);
    Call call = Begin("SET", KeyText(full_key), options_.timeout);
    return Send(call, store_wire::EncodeSet(full_key, value));
  }

  Result<std::string> Get(std::string_view key, std::optional<Timeout> timeout) override {
    const std::string full_key = Prefixed(key);
    // As torch 1.13's client does: a GET of a missing key makes the server
    // drop the connection, so wait for the key first, under the same deadline.
    Call call = Begin("GET", KeyText(full_key), timeout.value_or(options_.timeout));
    Status waited = WaitFor(call, {full_key});
    if (!waited.ok()) return waited;
    return Exchange(call, store_wire::EncodeGet(full_key), ReplyType::kBytes, &Bytes);
  }

  Result<int64_t> Add(std::string_view key, int64_t delta) override {
    const std::string full_key = Prefixed(key);
    Call call = Begin("ADD", KeyText(full_key), options_.timeout);
    return Exchange(call, store_wire::EncodeAdd(full_key, delta), ReplyType::kInt64, &Number);
  }

  Status Wait(const std::vector<std::string>& keys, std::optional<Timeout> timeout) override {
    if (keys.empty()) return Status::Ok();
    std::vector<std::string> full_keys = PrefixedAll(keys);
    Call call = Begin("WAIT", KeysText(full_keys), timeout.value_or(options_.timeout));
    return WaitFor(call, full_keys);
  }

  Result<std::string> CompareSet(std::string_view key, std::string_view expected,
                                 std::string_view desired) override {
    const std::string full_key = Prefixed(key);
    Call call = Begin("COMPARE_SET", KeyText(full_key), options_.timeout);
    return Exchange(call, store_wire::EncodeCompareSet(full_key, expected, desired),
                    ReplyType::kBytes, &Bytes);
  }

  Result<bool> Check(const std::vector<std::string>& keys) override {
    if (keys.empty()) return true;
    std::vector<std::string> full_keys = PrefixedAll(keys);
    Call call = Begin("CHECK", KeysText(full_keys), options_.timeout);
    auto reply = Exchange(call, store_wire::EncodeCheck(full_keys), ReplyType::kByte, &Byte);
    if (!reply.ok()) return reply.status();
    if (*reply != muster::store::kCheckReady && *reply != muster::store::kCheckNotReady) {
      return Unexpected(call, "CHECK reply " + std::to_string(*reply));
    }
    return *reply == muster::store::kCheckReady;
  }

  Result<bool> DeleteKey(std::string_view key) override {
    const std::string full_key = Prefixed(key);
    Call call = Begin("DELETE_KEY", KeyText(full_key), options_.timeout);
    auto deleted =
        Exchange(call, store_wire::EncodeDeleteKey(full_key), ReplyType::kInt64, &Number);
    if (!deleted.ok()) return deleted.status();
    return *deleted > 0;
  }

  const Options& options() const override { return options_; }

 private:
  // What one public call is doing, for its deadline and its error messages.
  struct Call {
    const char* op;
    std::string keys_text;  // "key='...'" or "keys='a','b'"
    Timeout timeout;
    Time deadline;
  };

  Call Begin(const char* op, std::string keys_text, Timeout timeout) const {
    return {op, std::move(keys_text), timeout, Clock::now() + timeout};
  }

  std::string Prefixed(std::string_view key) const { return options_.prefix + std::string(key); }
  std::vector<std::string> PrefixedAll(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& key : keys) out.push_back(Prefixed(key));
    return out;
  }
  static std::string KeyText(const std::string& key) { return "key='" + key + "'"; }
  static std::string KeysText(const std::vector<std::string>& keys) {
    std::string out = "keys=";
    for (size_t i = 0; i < keys.size(); ++i) out += (i == 0 ? "'" : ",'") + keys[i] + "'";
    return out;
  }

  // "store WAIT keys='muster/0/x' at 10.0.0.1:29500: timed out after 1000 ms"
  Status Failed(const Call& call, const Status& cause) {
    return FailedWithin(call, cause, call.timeout, {});
  }
  // As Failed, for a step whose deadline was `budget` (named `budget_name`)
  // rather than the call's timeout.
  Status FailedWithin(const Call& call, const Status& cause, Timeout budget,
                      std::string_view budget_name) {
    connection_.reset();
    return Explained(std::string("store ") + call.op + " " + call.keys_text + " at " + endpoint_,
                     cause, budget, budget_name);
  }
  Status Unexpected(const Call& call, const std::string& what) {
    return Failed(call, Status::IoError("unexpected " + what));
  }

  Status EnsureConnected(const Call& call) {
    if (connection_) return Status::Ok();
    // connect_timeout bounds the reconnect when it ends before the call does;
    // a timeout then reports that budget, not the call's, since it expired.
    const Time connect_by = Clock::now() + options_.connect_timeout;
    const bool connect_budget_first = connect_by < call.deadline;
    auto connection = TcpConnection::Connect(options_.host, options_.port,
                                             connect_budget_first ? connect_by : call.deadline);
    if (!connection.ok()) {
      if (connect_budget_first) {
        return FailedWithin(call, connection.status(), options_.connect_timeout, "connect_timeout");
      }
      return Failed(call, connection.status());
    }
    connection_.emplace(std::move(*connection));
    return Status::Ok();
  }

  Status Send(const Call& call, const std::string& request) {
    Status connected = EnsureConnected(call);
    if (!connected.ok()) return connected;
    Status sent = connection_->SendAll(request, call.deadline);
    if (!sent.ok()) return Failed(call, sent);
    return Status::Ok();
  }

  template <typename T>
  Result<T> Exchange(const Call& call, const std::string& request, ReplyType type,
                     T (*extract)(ReplyDecoder&)) {
    Status sent = Send(call, request);
    if (!sent.ok()) return sent;
    ReplyDecoder reply(type);
    Status received = connection_->Receive(reply, call.deadline);
    if (!received.ok()) return Failed(call, received);
    return extract(reply);
  }

  Status WaitFor(const Call& call, const std::vector<std::string>& full_keys) {
    auto reply = Exchange(call, store_wire::EncodeWait(full_keys), ReplyType::kByte, &Byte);
    if (!reply.ok()) return reply.status();
    if (*reply != muster::store::kStopWaiting) {
      return Unexpected(call, "WAIT reply " + std::to_string(*reply));
    }
    return Status::Ok();
  }

  static std::string Bytes(ReplyDecoder& reply) { return reply.TakeBytes(); }
  static int64_t Number(ReplyDecoder& reply) { return reply.number(); }
  static int Byte(ReplyDecoder& reply) { return reply.byte(); }

  Options options_;
  std::string endpoint_;
  std::optional<TcpConnection> connection_;
};

}  // namespace

Result<std::unique_ptr<StoreClient>> StoreClient::Connect(Options options) {
  const std::string endpoint = options.host + ":" + std::to_string(options.port);
  if (options.host.empty() || options.port <= 0 || options.port > 65535) {
    return Status::InvalidArgument("store endpoint '" + endpoint + "' is not host:port");
  }
  auto connection =
      TcpConnection::Connect(options.host, options.port, Clock::now() + options.connect_timeout);
  if (!connection.ok()) {
    return Explained("store connect to " + endpoint, connection.status(), options.connect_timeout);
  }
  return std::unique_ptr<StoreClient>(
      std::make_unique<TcpStoreClient>(std::move(options), std::move(*connection)));
}

}  // namespace muster::runtime
