#include "rendezvous/protocol/message_codec.h"

#include <array>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "rendezvous/protocol/frame_codec.h"

namespace muster::rdzv {
namespace {

using nlohmann::json;

constexpr size_t kPreviewBytes = 64;  // how much of a bad value an error quotes

// How a field is bounded beyond its C++ type.
enum class Bound {
  kDefault,   // strings: at most kMaxShortStringBytes; integers: >= 0
  kLongText,  // strings bounded only by the frame
  kSigned,    // integers of either sign
  kPort,      // integers in [0, 65535]
  kOptional,  // a short string, an unsigned integer or a flag that may be absent: left out
              // when empty or 0, and read as that when missing (older peers)
};

// Wire<T>: each message's type byte, name and field list. Both directions read
// the same Fields(), so the encoder and the decoder cannot disagree on a name;
// M is T or const T.
template <typename T>
struct Wire;

template <>
struct Wire<Assignment> {
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("generation", m.generation);
    v("group_rank", m.group_rank);
    v("group_world_size", m.group_world_size);
    v("local_world_size", m.local_world_size);
    v("global_rank_offset", m.global_rank_offset);
    v("world_size", m.world_size);
    v("master_addr", m.master_addr);
    v("master_port", m.master_port, Bound::kPort);
    v("restart_count", m.restart_count);
    v("max_restarts", m.max_restarts);
  }
};

template <>
struct Wire<Hello> {
  static constexpr MessageType kType = MessageType::kHello;
  static constexpr std::string_view kName = "Hello";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("protocol_version", m.protocol_version);
    v("token", m.token);
    v("agent_id", m.agent_id);
  }
};

template <>
struct Wire<Join> {
  static constexpr MessageType kType = MessageType::kJoin;
  static constexpr std::string_view kName = "Join";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("node_id", m.node_id);
    v("host", m.host);
    v("local_world_size", m.local_world_size);
    v("min_nodes", m.min_nodes);
    v("max_nodes", m.max_nodes);
    v("max_restarts", m.max_restarts);
    v("store_addr", m.store_addr);
    v("store_port", m.store_port, Bound::kPort);
    v("current", m.current);
    v("last_generation", m.last_generation, Bound::kOptional);
  }
};

template <>
struct Wire<Heartbeat> {
  static constexpr MessageType kType = MessageType::kHeartbeat;
  static constexpr std::string_view kName = "Heartbeat";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("node_id", m.node_id);
    v("generation", m.generation);
    v("step", m.step, Bound::kOptional);
    v("compute_us", m.compute_us, Bound::kOptional);
  }
};

template <>
struct Wire<WorkerFailed> {
  static constexpr MessageType kType = MessageType::kWorkerFailed;
  static constexpr std::string_view kName = "WorkerFailed";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("node_id", m.node_id);
    v("generation", m.generation);
    v("exit_code", m.exit_code, Bound::kSigned);
    v("message", m.message);
  }
};

template <>
struct Wire<WorkersSucceeded> {
  static constexpr MessageType kType = MessageType::kWorkersSucceeded;
  static constexpr std::string_view kName = "WorkersSucceeded";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("node_id", m.node_id);
    v("generation", m.generation);
  }
};

template <>
struct Wire<Leave> {
  static constexpr MessageType kType = MessageType::kLeave;
  static constexpr std::string_view kName = "Leave";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("node_id", m.node_id);
  }
};

template <>
struct Wire<StatusRequest> {
  static constexpr MessageType kType = MessageType::kStatusRequest;
  static constexpr std::string_view kName = "StatusRequest";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
  }
};

template <>
struct Wire<Welcome> {
  static constexpr MessageType kType = MessageType::kWelcome;
  static constexpr std::string_view kName = "Welcome";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("protocol_version", m.protocol_version);
    v("daemon_id", m.daemon_id);
    v("epoch", m.epoch, Bound::kOptional);
    v("keep_alive_interval_ms", m.timing.keep_alive_interval_ms);
    v("heartbeat_timeout_ms", m.timing.heartbeat_timeout_ms);
    v("fence_timeout_ms", m.timing.fence_timeout_ms);
    v("failover_timeout_ms", m.timing.failover_timeout_ms);
  }
};

template <>
struct Wire<Error> {
  static constexpr MessageType kType = MessageType::kError;
  static constexpr std::string_view kName = "Error";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    // One wire string, read into the enum and, when unknown, kept as it came.
    v("code", m.code, m.unknown_code);
    v("message", m.message, Bound::kLongText);
    v("fatal", m.fatal);
    v("leader", m.leader, Bound::kOptional);
    v("epoch", m.epoch, Bound::kOptional);
    v("current", m.current, Bound::kOptional);
  }
};

template <>
struct Wire<Waiting> {
  static constexpr MessageType kType = MessageType::kWaiting;
  static constexpr std::string_view kName = "Waiting";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("reason", m.reason);
  }
};

template <>
struct Wire<AssignmentMessage> {
  static constexpr MessageType kType = MessageType::kAssignment;
  static constexpr std::string_view kName = "Assignment";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("assignment", m.assignment);
    v("epoch", m.epoch, Bound::kOptional);
    v("member_addrs", m.member_addrs, Bound::kOptional);
  }
};

template <>
struct Wire<HeartbeatAck> {
  static constexpr MessageType kType = MessageType::kHeartbeatAck;
  static constexpr std::string_view kName = "HeartbeatAck";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("generation", m.generation);
  }
};

template <>
struct Wire<RunEnded> {
  static constexpr MessageType kType = MessageType::kRunEnded;
  static constexpr std::string_view kName = "RunEnded";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("run_id", m.run_id);
    v("succeeded", m.succeeded);
    v("message", m.message);
  }
};

template <>
struct Wire<StatusReply> {
  static constexpr MessageType kType = MessageType::kStatusReply;
  static constexpr std::string_view kName = "StatusReply";
  template <typename V, typename M>
  static void Fields(V& v, M& m) {
    v("json", m.json, Bound::kLongText);
  }
};

// --- quoting bad values --------------------------------------------------------

std::string Truncate(std::string text) {
  if (text.size() > kPreviewBytes) {
    text.resize(kPreviewBytes);
    text += "...";
  }
  return text;
}

// A JSON value as it would be written, ASCII only so logs stay readable.
std::string Preview(const json& value) {
  return Truncate(value.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace));
}

// Raw bytes (a payload that is not JSON) with non-printable bytes as \xNN.
std::string PreviewBytes(std::string_view bytes) {
  std::string out = "'";
  for (size_t i = 0; i < bytes.size() && i < kPreviewBytes; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  out += bytes.size() > kPreviewBytes ? "'..." : "'";
  return out;
}

// --- encoding ------------------------------------------------------------------

class JsonWriter {
 public:
  explicit JsonWriter(json& object) : object_(object) {}

  template <typename T>
  void operator()(const char* name, const T& value, Bound bound = Bound::kDefault) {
    if (bound == Bound::kOptional && value == T{}) return;
    object_[name] = value;
  }
  void operator()(const char* name, const Assignment& value, Bound = Bound::kDefault) {
    json nested = json::object();
    JsonWriter writer(nested);
    Wire<Assignment>::Fields(writer, value);
    object_[name] = std::move(nested);
  }
  void operator()(const char* name, const std::optional<Assignment>& value,
                  Bound bound = Bound::kDefault) {
    if (value) (*this)(name, *value, bound);
  }
  void operator()(const char* name, ErrorCode code, const std::string& unknown_code) {
    object_[name] = std::string(WireCodeName(code, unknown_code));
  }

 private:
  json& object_;
};

// --- decoding ------------------------------------------------------------------

// Reads fields out of one JSON object; keeps the first error and skips the
// rest, so the message names the first bad field in declaration order.
class JsonReader {
 public:
  JsonReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  void operator()(const char* name, std::string& out, Bound bound = Bound::kDefault) {
    if (Absent(name, bound)) return;
    const json* value = Find(name);
    if (value == nullptr) return;
    if (!value->is_string()) return Fail(name, "expected a string", *value);
    const auto& text = value->get_ref<const std::string&>();
    if (bound != Bound::kLongText && text.size() > kMaxShortStringBytes) {
      return Fail(name,
                  "expected a string of at most " + std::to_string(kMaxShortStringBytes) + " bytes",
                  std::to_string(text.size()) + " bytes " + Preview(*value));
    }
    out = text;
  }
  void operator()(const char* name, int& out, Bound bound = Bound::kDefault) {
    const int64_t low = bound == Bound::kSigned ? std::numeric_limits<int>::min() : 0;
    const uint64_t high = bound == Bound::kPort ? 65535 : std::numeric_limits<int>::max();
    if (auto v = ReadInteger(name, low, high)) out = static_cast<int>(*v);
  }
  void operator()(const char* name, uint32_t& out, Bound = Bound::kDefault) {
    if (auto v = ReadInteger(name, 0, std::numeric_limits<uint32_t>::max())) {
      out = static_cast<uint32_t>(*v);
    }
  }
  void operator()(const char* name, uint64_t& out, Bound bound = Bound::kDefault) {
    if (Absent(name, bound)) return;
    if (auto v = ReadInteger(name, 0, std::numeric_limits<uint64_t>::max())) {
      out = static_cast<uint64_t>(*v);
    }
  }
  void operator()(const char* name, bool& out, Bound bound = Bound::kDefault) {
    if (Absent(name, bound)) return;
    const json* value = Find(name);
    if (value == nullptr) return;
    if (!value->is_boolean()) return Fail(name, "expected true or false", *value);
    out = value->get<bool>();
  }
  // A list of short strings (kOptional: absent reads as empty).
  void operator()(const char* name, std::vector<std::string>& out, Bound bound = Bound::kDefault) {
    if (Absent(name, bound)) return;
    const json* value = Find(name);
    if (value == nullptr) return;
    if (!value->is_array()) return Fail(name, "expected an array of strings", *value);
    out.clear();
    out.reserve(value->size());
    for (const json& item : *value) {
      if (!item.is_string() || item.get_ref<const std::string&>().size() > kMaxShortStringBytes) {
        return Fail(
            name, "expected strings of at most " + std::to_string(kMaxShortStringBytes) + " bytes",
            item);
      }
      out.push_back(item.get<std::string>());
    }
  }
  // A list of unsigned integers, at most kMaxComputeRanks (kOptional:
  // absent reads as empty).
  void operator()(const char* name, std::vector<uint64_t>& out, Bound bound = Bound::kDefault) {
    if (Absent(name, bound)) return;
    const json* value = Find(name);
    if (value == nullptr) return;
    if (!value->is_array() || value->size() > kMaxComputeRanks) {
      return Fail(
          name,
          "expected an array of at most " + std::to_string(kMaxComputeRanks) + " unsigned integers",
          *value);
    }
    out.clear();
    out.reserve(value->size());
    for (const json& item : *value) {
      if (!item.is_number_unsigned() && !(item.is_number_integer() && item.get<int64_t>() >= 0)) {
        return Fail(name, "expected unsigned integers", item);
      }
      out.push_back(item.get<uint64_t>());
    }
  }
  void operator()(const char* name, Assignment& out, Bound = Bound::kDefault) {
    const json* value = Find(name);
    if (value != nullptr) ReadAssignment(name, *value, out);
  }
  void operator()(const char* name, std::optional<Assignment>& out, Bound = Bound::kDefault) {
    if (!status_.ok()) return;
    const auto it = object_.find(name);
    // null is accepted as "absent": other languages' encoders write None/nil so.
    if (it == object_.end() || it->is_null()) return;
    ReadAssignment(name, *it, out.emplace());
  }

  // A code this version does not know is no error: a later peer may send one.
  void operator()(const char* name, ErrorCode& code, std::string& unknown_code) {
    std::string text;
    (*this)(name, text);
    if (!status_.ok()) return;
    code = ParseErrorCode(text);
    if (code == ErrorCode::kUnknown) unknown_code = std::move(text);
  }

  const Status& status() const { return status_; }

 private:
  // An optional field that is missing (or null): the default stands.
  bool Absent(const char* name, Bound bound) const {
    if (bound != Bound::kOptional) return false;
    const auto it = object_.find(name);
    return it == object_.end() || it->is_null();
  }

  // The field's value, or null (and the error recorded) when it is missing or
  // an earlier field already failed.
  const json* Find(const char* name) {
    if (!status_.ok()) return nullptr;
    const auto it = object_.find(name);
    if (it == object_.end()) {
      status_ = Status::InvalidArgument(path_ + "." + name + ": missing");
      return nullptr;
    }
    return &*it;
  }

  void Fail(const char* name, const std::string& expected, const json& got) {
    Fail(name, expected, Preview(got));
  }
  void Fail(const char* name, const std::string& expected, const std::string& got) {
    status_ = Status::InvalidArgument(path_ + "." + name + ": " + expected + ", got " + got);
  }

  // An integer in [low, high]. JSON floats ("1.0", "1e3") and booleans are not
  // integers: a client that sends them has a bug worth hearing about.
  std::optional<uint64_t> ReadInteger(const char* name, int64_t low, uint64_t high) {
    const json* value = Find(name);
    if (value == nullptr) return std::nullopt;
    if (value->is_number_unsigned()) {
      const auto v = value->get<uint64_t>();
      if (v <= high) return v;
    } else if (value->is_number_integer()) {
      const auto v = value->get<int64_t>();
      if (v >= low && (v < 0 || static_cast<uint64_t>(v) <= high)) {
        return static_cast<uint64_t>(v);  // the caller casts back to its signed type
      }
    }
    Fail(name, "expected an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]",
         *value);
    return std::nullopt;
  }

  void ReadAssignment(const char* name, const json& value, Assignment& out) {
    if (!value.is_object()) return Fail(name, "expected an object", value);
    JsonReader nested(value, path_ + "." + name);
    Wire<Assignment>::Fields(nested, out);
    status_ = nested.status();
  }

  const json& object_;
  std::string path_;
  Status status_;
};

template <typename T>
Result<Message> DecodeAs(const json& object) {
  T message;
  JsonReader reader(object, std::string(Wire<T>::kName));
  Wire<T>::Fields(reader, message);
  if (!reader.status().ok()) return reader.status();
  return Message(std::move(message));
}

// --- dispatch by type byte -------------------------------------------------------

struct Entry {
  uint8_t type;
  std::string_view name;
  Result<Message> (*decode)(const json&);
};

template <size_t I>
using Alternative = std::variant_alternative_t<I, Message>;

// Indexed by Message's variant index; built from Wire<> so reordering the
// variant cannot silently renumber the wire.
template <size_t... I>
constexpr std::array<Entry, sizeof...(I)> MakeTable(std::index_sequence<I...>) {
  return {{Entry{static_cast<uint8_t>(Wire<Alternative<I>>::kType), Wire<Alternative<I>>::kName,
                 &DecodeAs<Alternative<I>>}...}};
}

constexpr auto kTable = MakeTable(std::make_index_sequence<std::variant_size_v<Message>>{});

constexpr bool TypeBytesUnique() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (kTable[i].type == 0) return false;
    for (size_t j = i + 1; j < kTable.size(); ++j) {
      if (kTable[i].type == kTable[j].type) return false;
    }
  }
  return true;
}
static_assert(TypeBytesUnique(), "every message needs its own non-zero type byte");

const Entry* FindEntry(uint8_t type) {
  for (const Entry& entry : kTable) {
    if (entry.type == type) return &entry;
  }
  return nullptr;
}

Result<Message> DecodePayload(const Entry& entry, std::string_view payload) {
  const std::string name(entry.name);
  // Depth is capped while parsing: deeper values are dropped unbuilt, so a
  // frame of a million '[' cannot become a million nested arrays.
  bool too_deep = false;
  const json::parser_callback_t limit_depth = [&too_deep](int depth, json::parse_event_t event,
                                                          json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      too_deep = true;
      return false;
    }
    return true;
  };
  const json document =
      json::parse(payload.begin(), payload.end(), limit_depth, /*allow_exceptions=*/false);
  if (too_deep) {
    return Status::InvalidArgument(name + ": payload nests deeper than " +
                                   std::to_string(kMaxJsonDepth) + " levels");
  }
  if (document.is_discarded()) {
    return Status::InvalidArgument(name + ": payload is not valid JSON: " + PreviewBytes(payload));
  }
  if (!document.is_object()) {
    return Status::InvalidArgument(name + ": payload is not a JSON object: " + Preview(document));
  }
  return entry.decode(document);
}

}  // namespace

MessageType TypeOf(const Message& message) {
  return static_cast<MessageType>(kTable[message.index()].type);
}

std::string_view MessageName(const Message& message) { return kTable[message.index()].name; }

std::string Encode(const Message& message) {
  return std::visit(
      [](const auto& m) {
        using W = Wire<std::decay_t<decltype(m)>>;
        json object = json::object();
        JsonWriter writer(object);
        W::Fields(writer, m);
        return EncodeFrame(
            static_cast<uint8_t>(W::kType),
            object.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace));
      },
      message);
}

Result<Message> Decode(uint8_t type, std::string_view payload) {
  const Entry* entry = FindEntry(type);
  if (entry == nullptr) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", type);
    return Status::InvalidArgument(std::string("unknown message type byte ") + hex);
  }
  // nlohmann::json throws on misuse; a bug here must close one connection,
  // never take the daemon down.
  try {
    return DecodePayload(*entry, payload);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string(entry->name) + ": " + e.what());
  }
}

}  // namespace muster::rdzv
