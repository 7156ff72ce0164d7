#include "launcher/report/status_table.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/printable.h"

namespace muster {
namespace {

using nlohmann::json;

// A field of the wrong type: what FormatStatusTable reports instead of the
// table. Thrown and caught inside this file only.
class MalformedDocument : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string TypeName(const json& value) {
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "null";
}

[[noreturn]] void Malformed(const std::string& where, const json& value, const char* expected) {
  throw MalformedDocument(where + " is " + TypeName(value) + ", not " + expected);
}

// Typed reads of one object's fields, naming `where` ("runs[0]") in what
// they throw. A missing (or null) field reads as the fallback.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) Malformed(where_, object_, "an object");
  }
  const std::string& where() const { return where_; }
  const json* Find(const char* key) const {
    // null reads as missing: a rate the daemon could not compute (NaN) is null.
    const auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  // The string, escaped for a terminal.
  std::string Text(const char* key, const char* fallback = "?") const {
    const json* value = Find(key);
    if (value == nullptr) return fallback;
    if (!value->is_string()) Malformed(Path(key), *value, "a string");
    return EscapeControlCharacters(value->get<std::string>());
  }
  long long Integer(const char* key, long long fallback = 0) const {
    const json* value = Find(key);
    if (value == nullptr) return fallback;
    if (!value->is_number_integer()) Malformed(Path(key), *value, "an integer");
    return value->get<long long>();
  }
  std::optional<double> Number(const char* key) const {
    const json* value = Find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number()) Malformed(Path(key), *value, "a number");
    return value->get<double>();
  }
  bool Flag(const char* key, bool fallback) const {
    const json* value = Find(key);
    if (value == nullptr) return fallback;
    if (!value->is_boolean()) Malformed(Path(key), *value, "a boolean");
    return value->get<bool>();
  }
  // The array, or an empty one when missing.
  const json& Array(const char* key) const {
    static const json kEmpty = json::array();
    const json* value = Find(key);
    if (value == nullptr) return kEmpty;
    if (!value->is_array()) Malformed(Path(key), *value, "an array");
    return *value;
  }
  std::string Path(const std::string& key) const {
    return where_.empty() ? key : where_ + "." + key;
  }

 private:
  const json& object_;
  std::string where_;
};

// A steps-per-second figure for the table: "12.5", "0.04".
std::string RateText(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", rate);
  return text;
}

// The run's progress in one line: its median step rate and stragglers, or
// that no worker reports steps (a script that does not use the progress
// pipe: docs/operations.md, "Stragglers").
// Then, when the workers report them: the median compute time per step,
// the ranks flagged slow by it, and the run's goodput.
std::string ProgressSummary(const Fields& run) {
  const auto median = run.Number("median_steps_per_second");
  if (!median) return "no step reports";
  const long long stragglers = run.Integer("stragglers", 0);
  std::string text = "median " + RateText(*median) + " steps/s, " + std::to_string(stragglers) +
                     (stragglers == 1 ? " straggler" : " stragglers");
  if (const auto compute = run.Number("median_compute_ms")) {
    text += ", median compute " + RateText(*compute) + " ms/step";
  }
  const json& slow = run.Array("slow_ranks");
  for (size_t i = 0; i < slow.size(); ++i) {
    const Fields rank(slow[i], run.Path("slow_ranks[" + std::to_string(i) + "]"));
    const auto compute = rank.Number("compute_ms");
    text += (i == 0 ? ", slow: rank " : ", rank ") + std::to_string(rank.Integer("rank", -1)) +
            " on " + rank.Text("host") + (compute ? " (" + RateText(*compute) + " ms)" : "");
  }
  if (const json* goodput = run.Find("goodput")) {
    const Fields g(*goodput, run.Path("goodput"));
    if (const auto ratio = g.Number("ratio")) text += ", goodput " + RateText(100 * *ratio) + " %";
  }
  return text;
}

std::string ReplicaLine(const Fields& replica) {
  std::string standbys;
  const json& list = replica.Array("standbys");
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) {
      Malformed(replica.Path("standbys[" + std::to_string(i) + "]"), list[i], "a string");
    }
    if (!standbys.empty()) standbys += ", ";
    standbys += EscapeControlCharacters(list[i].get<std::string>());
  }
  return "leader " + replica.Text("leader") + " (epoch " +
         std::to_string(replica.Integer("epoch", 0)) +
         "), standbys: " + (standbys.empty() ? "none" : standbys) + "\n";
}

std::string NodeLine(const Fields& node) {
  std::string ranks = "-";
  std::string group = "-";
  if (const json* global = node.Find("global_ranks")) {
    if (!global->is_array() || global->size() != 2 || !(*global)[0].is_number_integer() ||
        !(*global)[1].is_number_integer()) {
      throw MalformedDocument(node.Path("global_ranks") + " is not [first, last]");
    }
    ranks = std::to_string((*global)[0].get<long long>()) + ".." +
            std::to_string((*global)[1].get<long long>());
    group = std::to_string(node.Integer("group_rank", -1));
  }
  const auto rate = node.Number("steps_per_second");
  // Fields may be long: the line grows rather than cuts them.
  const std::string node_id = node.Text("node_id");
  const std::string host = node.Text("host");
  const std::string state = node.Text("state");
  const std::string rate_text = rate ? RateText(*rate) : "-";
  char line[512];
  std::snprintf(line, sizeof line, "  %-28s %-16s %-8s %-7s %-12s %-6lld %-9s %.2fs%s%s\n",
                node_id.c_str(), host.c_str(), state.c_str(), group.c_str(), ranks.c_str(),
                node.Integer("local_world_size", 0), rate_text.c_str(),
                static_cast<double>(node.Integer("heartbeat_age_ms", 0)) / 1000.0,
                node.Flag("connected", true) ? "" : " (disconnected)",
                node.Flag("straggler", false) ? " (straggler)" : "");
  std::string text = line;
  if (text.empty() || text.back() != '\n') {
    // Longer than the buffer: the same columns, unpadded, in full.
    text = "  " + node_id + " " + host + " " + state + " " + group + " " + ranks + " " +
           std::to_string(node.Integer("local_world_size", 0)) + " " + rate_text + "\n";
  }
  return text;
}

std::string Table(const json& doc) {
  std::ostringstream out;
  const Fields top(doc, "");  // an object: FormatStatusTable checked
  if (const json* replica = top.Find("replica"); replica != nullptr && replica->is_object()) {
    out << ReplicaLine(Fields(*replica, "replica"));
  }
  const json& runs = top.Array("runs");
  if (runs.empty()) out << "no runs\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    const Fields run(runs[r], "runs[" + std::to_string(r) + "]");
    const json& nodes = run.Array("nodes");
    out << "run " << run.Text("run_id") << ": " << run.Text("state") << ", generation "
        << run.Integer("generation", 0) << ", nodes " << nodes.size() << " (min "
        << run.Integer("min_nodes", 0) << ", max " << run.Integer("max_nodes", 0) << "), restarts "
        << run.Integer("restart_count", 0) << "/" << run.Integer("max_restarts", 0) << "\n";
    if (run.Find("message") != nullptr) out << "  " << run.Text("message", "") << "\n";
    out << "  " << ProgressSummary(run) << "\n";
    char line[256];
    std::snprintf(line, sizeof(line), "  %-28s %-16s %-8s %-7s %-12s %-6s %-9s %s\n", "NODE",
                  "HOST", "STATE", "GROUP", "RANKS", "LOCAL", "STEPS/S", "HEARTBEAT AGE");
    out << line;
    for (size_t n = 0; n < nodes.size(); ++n) {
      out << NodeLine(Fields(nodes[n], run.Path("nodes[" + std::to_string(n) + "]")));
    }
  }
  return out.str();
}

}  // namespace

std::string FormatStatusTable(const std::string& status_json) {
  const auto doc = json::parse(status_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("runs")) {
    return "unreadable status document\n";
  }
  try {
    return Table(doc);
  } catch (const MalformedDocument& malformed) {
    return std::string("malformed status document: ") + malformed.what() + "\n";
  } catch (const json::exception& error) {
    // Every read above checks its type first; this is a last guard.
    return "malformed status document: " + EscapeControlCharacters(error.what()) + "\n";
  }
}

std::string StatusJsonForTerminal(const std::string& status_json) {
  const auto doc = json::parse(status_json, nullptr, false);
  if (doc.is_discarded()) return "unreadable status document";
  // ensure_ascii escapes C0 and everything past ASCII; DEL, the one control
  // it keeps, can only stand inside a string, where \u007f means the same.
  std::string text = doc.dump(-1, ' ', true, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\x7f') {
      out += "\\u007f";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace muster
