#include "rendezvous/replica/etcd_json.h"

#include <array>
#include <charconv>

#include <nlohmann/json.hpp>

#include "common/printable.h"
#include "common/quote.h"

namespace muster::rdzv::replica {
namespace {

using nlohmann::json;

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

Status Unreadable(const char* call, std::string_view body, const std::string& why) {
  return Status::IoError(std::string("etcd ") + call + ": " + why + " in " + Quote(body));
}

// An int64 etcd wrote as a JSON string (or, in requests we echo, a number).
std::optional<int64_t> Int64(const json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!value.is_string()) return std::nullopt;
  const std::string& text = value.get_ref<const std::string&>();
  int64_t out = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

// An int64 field that etcd leaves out when it is 0.
std::optional<int64_t> Int64Field(const json& object, const char* name) {
  if (!object.contains(name)) return 0;
  return Int64(object.at(name));
}

// The JSON of `body`, or the error etcd sent instead, or why it is unreadable.
Result<json> Parse(const char* call, std::string_view body) {
  if (std::optional<std::string> error = EtcdError(body)) {
    return Status::IoError(std::string("etcd ") + call + ": " + *error);
  }
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return Unreadable(call, body, "no JSON object");
  return parsed;
}

Result<KeyValue> ParseKeyValue(const char* call, std::string_view body, const json& kv) {
  if (!kv.is_object()) return Unreadable(call, body, "a key that is no object");
  KeyValue out;
  if (kv.contains("value")) {
    if (!kv.at("value").is_string()) return Unreadable(call, body, "a value that is no string");
    std::optional<std::string> value = Base64Decode(kv.at("value").get_ref<const std::string&>());
    if (!value) return Unreadable(call, body, "a value that is not base64");
    out.value = std::move(*value);
  }
  std::optional<int64_t> created = Int64Field(kv, "create_revision");
  std::optional<int64_t> lease = Int64Field(kv, "lease");
  if (!created || !lease) return Unreadable(call, body, "a revision or lease that is no integer");
  if (kv.contains("key")) {
    if (!kv.at("key").is_string()) return Unreadable(call, body, "a key that is no string");
    std::optional<std::string> key = Base64Decode(kv.at("key").get_ref<const std::string&>());
    if (!key) return Unreadable(call, body, "a key that is not base64");
    out.key = std::move(*key);
  }
  out.create_revision = *created;
  out.lease = *lease;
  return out;
}

// The first key of a range response's `kvs`, nullopt when there is none.
Result<std::optional<KeyValue>> FirstKey(const char* call, std::string_view body,
                                         const json& response) {
  if (!response.contains("kvs")) return std::optional<KeyValue>();
  const json& kvs = response.at("kvs");
  if (!kvs.is_array()) return Unreadable(call, body, "kvs that is no array");
  if (kvs.empty()) return std::optional<KeyValue>();
  Result<KeyValue> first = ParseKeyValue(call, body, kvs.front());
  if (!first.ok()) return first.status();
  return std::optional<KeyValue>(std::move(first).value());
}

json KeyOnly(std::string_view key) { return json{{"key", Base64Encode(key)}}; }

}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t j = 0; j < 3; ++j) {
      chunk = (chunk << 8) | (j < n ? static_cast<unsigned char>(bytes[i + j]) : 0);
    }
    for (size_t j = 0; j < 4; ++j) {
      out += j <= n ? kAlphabet[(chunk >> (18 - 6 * j)) & 63] : '=';
    }
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t chunk = 0;
    int padding = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      // '=' only at the end of the last group, at most two.
      if (c == '=') {
        if (i + 4 != text.size() || j < 2) return std::nullopt;
        ++padding;
        chunk <<= 6;
        continue;
      }
      if (padding > 0) return std::nullopt;
      const size_t index = kAlphabet.find(c);
      if (index == std::string_view::npos) return std::nullopt;
      chunk = (chunk << 6) | static_cast<uint32_t>(index);
    }
    for (int j = 0; j < 3 - padding; ++j) out += static_cast<char>((chunk >> (16 - 8 * j)) & 0xff);
  }
  return out;
}

std::optional<std::string> EtcdError(std::string_view body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || !parsed.contains("error")) return std::nullopt;
  const json& error = parsed.at("error");
  // Unary calls: {"error": "...", "code": N}; streams: {"error": {"message": ..., "grpc_code": N}}.
  const json& holder = error.is_object() ? error : parsed;
  // Each field is read only when it has the expected type: a reply is the
  // network's, and json::value throws on a "message" that is, say, a number.
  std::string message;
  if (holder.contains("message") && holder.at("message").is_string()) {
    message = holder.at("message").get<std::string>();
  } else if (error.is_string()) {
    message = error.get<std::string>();
  }
  const json code =
      holder.contains("grpc_code") ? holder.at("grpc_code") : holder.value("code", json());
  // etcd's text goes into one log line: a newline or escape in it must not
  // end the line or reach the terminal.
  message = EscapeControlCharacters(message);
  if (message.empty()) message = "an error with no message";
  if (code.is_number_integer()) message += " (code " + std::to_string(code.get<int>()) + ")";
  return message;
}

std::string LeaseGrantBody(int64_t ttl_seconds) {
  return json{{"TTL", std::to_string(ttl_seconds)}}.dump();
}

Result<GrantedLease> ParseLeaseGrant(std::string_view body) {
  Result<json> parsed = Parse("lease grant", body);
  if (!parsed.ok()) return parsed.status();
  std::optional<int64_t> id = Int64Field(*parsed, "ID");
  std::optional<int64_t> ttl = Int64Field(*parsed, "TTL");
  if (!id || !ttl || *id == 0 || *ttl <= 0) {
    return Unreadable("lease grant", body, "no lease ID and TTL");
  }
  return GrantedLease{.id = *id, .ttl_seconds = *ttl};
}

std::string LeaseKeepAliveBody(int64_t lease_id) {
  return json{{"ID", std::to_string(lease_id)}}.dump();
}

Result<int64_t> ParseLeaseKeepAlive(std::string_view body) {
  // One request object, one answer line: {"result": {...}}\n.
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.remove_suffix(1);
  Result<json> parsed = Parse("lease keepalive", body);
  if (!parsed.ok()) return parsed.status();
  if (!parsed->contains("result") || !parsed->at("result").is_object()) {
    return Unreadable("lease keepalive", body, "no result");
  }
  std::optional<int64_t> ttl = Int64Field(parsed->at("result"), "TTL");
  if (!ttl) return Unreadable("lease keepalive", body, "a TTL that is no integer");
  return *ttl > 0 ? *ttl : 0;
}

std::string LeaseRevokeBody(int64_t lease_id) {
  return json{{"ID", std::to_string(lease_id)}}.dump();
}

std::string CampaignBody(std::string_view key, std::string_view value, int64_t lease_id) {
  const std::string encoded_key = Base64Encode(key);
  json body{
      {"compare", json::array({{{"key", encoded_key},
                                {"target", "CREATE"},
                                {"result", "EQUAL"},
                                {"create_revision", "0"}}})},
      {"success", json::array({{{"request_put",
                                 {{"key", encoded_key},
                                  {"value", Base64Encode(value)},
                                  {"lease", std::to_string(lease_id)}}}}})},
      {"failure", json::array({{{"request_range", KeyOnly(key)}}})},
  };
  return body.dump();
}

Result<CampaignOutcome> ParseCampaign(std::string_view body) {
  constexpr const char* kCall = "campaign";
  Result<json> parsed = Parse(kCall, body);
  if (!parsed.ok()) return parsed.status();
  CampaignOutcome out;
  // etcd leaves "succeeded" out when it is false.
  const json succeeded = parsed->value("succeeded", json(false));
  if (!succeeded.is_boolean()) return Unreadable(kCall, body, "succeeded that is no bool");
  out.won = succeeded.get<bool>();
  if (out.won) {
    std::optional<int64_t> revision;
    if (parsed->contains("header") && parsed->at("header").is_object()) {
      revision = Int64Field(parsed->at("header"), "revision");
    }
    if (!revision || *revision <= 0) return Unreadable(kCall, body, "no revision");
    out.revision = *revision;
    return out;
  }
  const json& responses = parsed->value("responses", json::array());
  if (!responses.is_array() || responses.size() != 1 || !responses[0].is_object() ||
      !responses[0].contains("response_range")) {
    return Unreadable(kCall, body, "no read of the held key");
  }
  Result<std::optional<KeyValue>> held = FirstKey(kCall, body, responses[0].at("response_range"));
  if (!held.ok()) return held.status();
  out.held = std::move(held).value();
  return out;
}

std::string RangeBody(std::string_view key) { return KeyOnly(key).dump(); }

Result<std::optional<KeyValue>> ParseRange(std::string_view body) {
  Result<json> parsed = Parse("range", body);
  if (!parsed.ok()) return parsed.status();
  return FirstKey("range", body, *parsed);
}

std::string RangePrefixBody(std::string_view prefix) {
  // Every key that starts with `prefix` sorts below the prefix with its last
  // byte incremented (a 0xff byte carries into the one before it).
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) {
    end = std::string(1, '\0');  // etcd's "every key from `key` on"
  } else {
    end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  }
  return json{{"key", Base64Encode(prefix)}, {"range_end", Base64Encode(end)}}.dump();
}

Result<std::vector<KeyValue>> ParseRangePrefix(std::string_view body) {
  constexpr const char* kCall = "range";
  Result<json> parsed = Parse(kCall, body);
  if (!parsed.ok()) return parsed.status();
  std::vector<KeyValue> out;
  if (!parsed->contains("kvs")) return out;
  const json& kvs = parsed->at("kvs");
  if (!kvs.is_array()) return Unreadable(kCall, body, "kvs that is no array");
  for (const json& kv : kvs) {
    Result<KeyValue> one = ParseKeyValue(kCall, body, kv);
    if (!one.ok()) return one.status();
    out.push_back(std::move(one).value());
  }
  return out;
}

std::string PutBody(std::string_view key, std::string_view value, int64_t lease_id) {
  json body{{"key", Base64Encode(key)}, {"value", Base64Encode(value)}};
  if (lease_id != 0) body["lease"] = std::to_string(lease_id);
  return body.dump();
}

Status ParsePut(std::string_view body) {
  Result<json> parsed = Parse("put", body);
  return parsed.ok() ? Status::Ok() : parsed.status();
}

std::string GuardedPutBody(std::string_view guard_key, int64_t guard_revision, std::string_view key,
                           std::string_view value) {
  json body{
      {"compare", json::array({{{"key", Base64Encode(guard_key)},
                                {"target", "CREATE"},
                                {"result", "EQUAL"},
                                {"create_revision", std::to_string(guard_revision)}}})},
      {"success", json::array({{{"request_put",
                                 {{"key", Base64Encode(key)}, {"value", Base64Encode(value)}}}}})},
  };
  return body.dump();
}

Result<bool> ParseGuardedPut(std::string_view body) {
  Result<json> parsed = Parse("guarded put", body);
  if (!parsed.ok()) return parsed.status();
  const json& succeeded = parsed->value("succeeded", json(false));
  if (!succeeded.is_boolean()) return Unreadable("guarded put", body, "succeeded that is no bool");
  return succeeded.get<bool>();
}

}  // namespace muster::rdzv::replica
