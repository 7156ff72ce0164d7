// StoreClient: a blocking client of PyTorch's TCPStore wire protocol, in the
// torch 1.13 ("legacy") dialect, which both muster's worker store and the
// TCPStore server of Debian's python3-torch speak.
//
//   auto store = StoreClient::Connect({.host = "10.0.0.1", .port = 29500,
//                                      .prefix = ctx.StoreNamespace()});
//   store->Set("addr/3", "10.0.0.4:4000");
//   auto v = store->Get("addr/0");          // waits up to the timeout for the key
//
// Every key is sent as Options::prefix + key, nothing else added. torch's own
// TCPStore client sends "/" + key, so a key shared with torch clients needs a
// prefix that starts with "/": prefix "/muster/0/" reaches what
// PrefixStore("muster/0", TCPStore(...)) calls its keys.
//
// Every call has a deadline (Options::timeout unless given); no call blocks
// past it (resolving the host name excepted). A call that times out or fails
// mid-reply leaves the connection in an unknown state: the client closes it
// (the store then drops any WAIT of it) and reconnects on the next call,
// within that call's deadline and connect_timeout.
// Errors are Status values naming the operation, key(s) and endpoint:
//   Timeout  the deadline passed: "store WAIT keys='muster/0/a' at
//            10.0.0.1:29500: timed out after 1000 ms"; or a reconnect still
//            failed when connect_timeout, shorter than what was left of the
//            call, ran out: "...: timed out after 500 ms (connect_timeout);
//            last error: Connection refused";
//   IoError  connection closed or reset, malformed reply, unresolvable host.
//
// Thread-safety: none; one client per thread (Gloo's adapter serializes).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace muster::runtime {

class StoreClient {
 public:
  using Timeout = std::chrono::milliseconds;
  struct Options {
    std::string host = "127.0.0.1";
    int port = 0;
    std::string prefix;               // prepended to every key
    Timeout timeout{300'000};         // default deadline of every call
    Timeout connect_timeout{60'000};  // keeps retrying a refused connect until then
  };

  // Connects now (so a wrong endpoint fails early), retrying a refused
  // connection until connect_timeout: the store may start after the worker.
  // Errors: InvalidArgument (empty host, port outside 1..65535), Timeout,
  // IoError (unresolvable host, other connect errors).
  static Result<std::unique_ptr<StoreClient>> Connect(Options options);
  virtual ~StoreClient() = default;

  virtual Status Set(std::string_view key, std::string_view value) = 0;
  // Waits for the key to exist (as torch's get does), up to the timeout.
  virtual Result<std::string> Get(std::string_view key, std::optional<Timeout> timeout = {}) = 0;
  // Adds `delta` to the key's decimal value (a missing key counts as 0) and
  // returns the sum. The store drops the connection if the value is not a
  // number: that is an IoError.
  virtual Result<int64_t> Add(std::string_view key, int64_t delta) = 0;
  // Returns once every key exists; Status::Timeout after the deadline. An
  // empty list returns at once.
  virtual Status Wait(const std::vector<std::string>& keys,
                      std::optional<Timeout> timeout = {}) = 0;
  // Sets `desired` if the current value is `expected` (or the key is absent
  // and `expected` is empty); returns the value now stored.
  virtual Result<std::string> CompareSet(std::string_view key, std::string_view expected,
                                         std::string_view desired) = 0;
  // Whether every key exists, without waiting. An empty list is true.
  virtual Result<bool> Check(const std::vector<std::string>& keys) = 0;
  // Whether the key existed (and is now gone).
  virtual Result<bool> DeleteKey(std::string_view key) = 0;

  virtual const Options& options() const = 0;
};

}  // namespace muster::runtime
