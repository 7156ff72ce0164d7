#include "control/control_message.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>

#include "common/quote.h"

namespace muster::control {
namespace {

// Printable ASCII without the space: what every field but a reason may hold,
// so a field can never smuggle a separator or a second line.
bool IsFieldByte(char c) { return c > ' ' && c <= '~'; }

bool IsField(std::string_view field) {
  return !field.empty() && std::all_of(field.begin(), field.end(), IsFieldByte);
}

// Appends instead of `"text" + string`: g++ 12 at -O3 reports a false
// -Wrestrict inside libstdc++ for the latter.
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out.append(part);
  return out;
}

Status Bad(std::string_view line, std::initializer_list<std::string_view> what) {
  std::string message = Cat({"control line ", Quote(line), ": "});
  message += Cat(what);
  return Status::InvalidArgument(std::move(message));
}

// Splits on single spaces. Empty fields (two spaces, a leading or trailing
// one) are refused by the callers through IsField.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t space = line.find(' ', start);
    fields.push_back(line.substr(start, space - start));
    if (space == std::string_view::npos) return fields;
    start = space + 1;
  }
}

// A decimal without sign or leading zeros, at most `max`. Leading zeros are
// refused so that every number has one spelling and formatting round-trips.
std::optional<uint64_t> Number(std::string_view text, uint64_t max) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

constexpr uint64_t kMaxInt = std::numeric_limits<int>::max();
constexpr uint64_t kMaxGeneration = std::numeric_limits<uint64_t>::max();

Status CheckLength(std::string_view line) {
  if (line.size() + 1 <= kMaxLineBytes) return Status::Ok();
  return Bad(line.substr(0, 64), {"longer than ", std::to_string(kMaxLineBytes), " bytes"});
}

// The fields of a line of a variable count, each checked.
Result<std::vector<std::string_view>> AllFields(std::string_view line) {
  if (auto s = CheckLength(line); !s.ok()) return s;
  std::vector<std::string_view> fields = Fields(line);
  for (std::string_view field : fields) {
    if (!IsField(field)) return Bad(line, {"empty field or a byte outside 0x21-0x7e"});
  }
  return fields;
}

// The fields of a line of `exact_fields` fields, each checked; with
// `rest_is_text` the last runs to the end of the line and may hold spaces.
Result<std::vector<std::string_view>> Split(std::string_view line, size_t exact_fields,
                                            bool rest_is_text) {
  if (auto s = CheckLength(line); !s.ok()) return s;
  std::vector<std::string_view> fields = Fields(line);
  if (rest_is_text && fields.size() > exact_fields) {
    // The reason of `failed` runs to the end of the line: join it back.
    const size_t reason_start = fields[exact_fields - 1].data() - line.data();
    fields.resize(exact_fields);
    fields.back() = line.substr(reason_start);
  }
  if (fields.size() != exact_fields) {
    return Bad(line, {"'", fields[0], "' takes ", std::to_string(exact_fields - 1),
                      " field(s), not ", std::to_string(fields.size() - 1)});
  }
  const size_t checked = rest_is_text ? exact_fields - 1 : exact_fields;
  for (size_t i = 0; i < checked; ++i) {
    if (!IsField(fields[i])) return Bad(line, {"empty field or a byte outside 0x21-0x7e"});
  }
  if (rest_is_text && !std::all_of(fields.back().begin(), fields.back().end(),
                                   [](char c) { return c == ' ' || IsFieldByte(c); })) {
    return Bad(line, {"the text holds a byte outside 0x20-0x7e"});
  }
  return fields;
}

Result<uint64_t> Generation(std::string_view line, std::string_view text) {
  if (auto g = Number(text, kMaxGeneration)) return *g;
  return Bad(line, {"generation ", Quote(text), " is not a decimal number"});
}

Status ParseHello(std::string_view line, WorkerMessage& out) {
  auto all = AllFields(line);
  if (!all.ok()) return all.status();
  const std::vector<std::string_view>& fields = all.value();
  if (fields.size() < 2) return Bad(line, {"'hello' needs a version"});
  const auto version = Number(fields[1], kMaxInt);
  if (!version || *version == 0) {
    return Bad(line, {"version ", Quote(fields[1]), " is not a number from 1"});
  }
  Hello hello{static_cast<int>(*version), {}};
  for (size_t i = 2; i < fields.size(); ++i) hello.capabilities.emplace_back(fields[i]);
  out.emplace<Hello>(std::move(hello));
  return Status::Ok();
}

// The `join` fields, each required once; the value checks follow PROTOCOL.md.
Status ParseJoin(std::string_view line, AgentMessage& out) {
  auto all = AllFields(line);
  if (!all.ok()) return all.status();
  const std::vector<std::string_view>& fields = all.value();
  if (fields.size() < 2) return Bad(line, {"'join' needs a generation"});
  Join join;
  auto generation = Generation(line, fields[1]);
  if (!generation.ok()) return generation.status();
  join.generation = generation.value();

  std::map<std::string_view, std::string_view> values;
  for (size_t i = 2; i < fields.size(); ++i) {
    const size_t eq = fields[i].find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == fields[i].size()) {
      return Bad(line, {"field ", Quote(fields[i]), " is not NAME=VALUE"});
    }
    if (!values.emplace(fields[i].substr(0, eq), fields[i].substr(eq + 1)).second) {
      return Bad(line, {"field ", Quote(fields[i].substr(0, eq)), " is given twice"});
    }
  }
  struct NumberField {
    std::string_view name;
    int* target;
    uint64_t min;
    uint64_t max;
  };
  const NumberField numbers[] = {
      {"RANK", &join.rank, 0, kMaxInt - 1},
      {"WORLD_SIZE", &join.world_size, 1, kMaxInt},
      {"GROUP_RANK", &join.group_rank, 0, kMaxInt - 1},
      {"LOCAL_RANK", &join.local_rank, 0, kMaxInt - 1},
      {"MASTER_PORT", &join.master_port, 1, 65535},
  };
  size_t known = 0;
  for (const NumberField& f : numbers) {
    const auto it = values.find(f.name);
    if (it == values.end()) return Bad(line, {"field ", f.name, " is missing"});
    const auto value = Number(it->second, f.max);
    if (!value || *value < f.min) {
      return Bad(line, {f.name, "=", Quote(it->second), " is not a number from ",
                        std::to_string(f.min), " to ", std::to_string(f.max)});
    }
    *f.target = static_cast<int>(*value);
    ++known;
  }
  for (auto [name, target] :
       {std::pair<std::string_view, std::string*>{"MASTER_ADDR", &join.master_addr},
        {"STORE_PREFIX", &join.store_prefix}}) {
    const auto it = values.find(name);
    if (it == values.end()) return Bad(line, {"field ", name, " is missing"});
    *target = std::string(it->second);
    ++known;
  }
  if (values.size() != known) {
    for (const auto& [name, value] : values) {
      const bool is_known = name == "MASTER_ADDR" || name == "STORE_PREFIX" ||
                            std::any_of(std::begin(numbers), std::end(numbers),
                                        [&](const NumberField& f) { return f.name == name; });
      if (!is_known) return Bad(line, {"field ", Quote(name), " is not one of version 1's"});
    }
  }
  if (join.rank >= join.world_size || join.local_rank >= join.world_size) {
    return Bad(line, {"RANK and LOCAL_RANK must be below WORLD_SIZE"});
  }
  out.emplace<Join>(std::move(join));
  return Status::Ok();
}

}  // namespace

std::string FormatWorkerMessage(const WorkerMessage& message) {
  struct Formatter {
    std::string operator()(const Hello& m) const {
      std::string line = Cat({"hello ", std::to_string(m.version)});
      for (const std::string& capability : m.capabilities) line += Cat({" ", capability});
      return line;
    }
    std::string operator()(const Ready& m) const {
      return Cat({"ready ", std::to_string(m.generation)});
    }
    std::string operator()(const Joined& m) const {
      return Cat({"joined ", std::to_string(m.generation)});
    }
    std::string operator()(const Failed& m) const {
      return Cat({"failed ", std::to_string(m.generation), " ", m.reason});
    }
  };
  return std::visit(Formatter{}, message);
}

std::string FormatAgentMessage(const AgentMessage& message) {
  struct Formatter {
    std::string operator()(const Pause& m) const {
      return Cat({"pause ", std::to_string(m.generation)});
    }
    std::string operator()(const Join& m) const {
      return Cat({"join ", std::to_string(m.generation), " RANK=", std::to_string(m.rank),
                  " WORLD_SIZE=", std::to_string(m.world_size), " GROUP_RANK=",
                  std::to_string(m.group_rank), " LOCAL_RANK=", std::to_string(m.local_rank),
                  " MASTER_ADDR=", m.master_addr, " MASTER_PORT=", std::to_string(m.master_port),
                  " STORE_PREFIX=", m.store_prefix});
    }
    std::string operator()(const Stop&) const { return "stop"; }
  };
  return std::visit(Formatter{}, message);
}

Status ParseWorkerMessage(std::string_view line, WorkerMessage& out) {
  const std::string_view verb = line.substr(0, line.find(' '));
  if (verb == "hello") return ParseHello(line, out);
  if (verb == "ready" || verb == "joined") {
    auto fields = Split(line, 2, false);
    if (!fields.ok()) return fields.status();
    auto generation = Generation(line, fields.value()[1]);
    if (!generation.ok()) return generation.status();
    if (verb == "ready") {
      out.emplace<Ready>(generation.value());
    } else {
      out.emplace<Joined>(generation.value());
    }
    return Status::Ok();
  }
  if (verb == "failed") {
    auto fields = Split(line, 3, true);
    if (!fields.ok()) return fields.status();
    auto generation = Generation(line, fields.value()[1]);
    if (!generation.ok()) return generation.status();
    out.emplace<Failed>(generation.value(), std::string(fields.value()[2]));
    return Status::Ok();
  }
  return Bad(line, {"not a worker message (hello, ready, joined, failed)"});
}

Status ParseAgentMessage(std::string_view line, AgentMessage& out) {
  const std::string_view verb = line.substr(0, line.find(' '));
  if (verb == "pause") {
    auto fields = Split(line, 2, false);
    if (!fields.ok()) return fields.status();
    auto generation = Generation(line, fields.value()[1]);
    if (!generation.ok()) return generation.status();
    out.emplace<Pause>(generation.value());
    return Status::Ok();
  }
  if (verb == "join") return ParseJoin(line, out);
  if (verb == "stop") {
    auto fields = Split(line, 1, false);
    if (!fields.ok()) return fields.status();
    out.emplace<Stop>();
    return Status::Ok();
  }
  return Bad(line, {"not an agent message (pause, join, stop)"});
}

bool CanRecoverInPlace(const Hello& hello) {
  return hello.version >= 1 && std::find(hello.capabilities.begin(), hello.capabilities.end(),
                                         kInPlaceCapability) != hello.capabilities.end();
}

}  // namespace muster::control
