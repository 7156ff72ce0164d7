#include "control/control_message.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>

#include "common/decimal.h"
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

// ParseDecimal, and no leading zeros: every number has one spelling, so
// formatting a parsed message gives back its line.
std::optional<uint64_t> Number(std::string_view text, uint64_t max) {
  if (text.size() > 1 && text[0] == '0') return std::nullopt;
  return ParseDecimal(text, max);
}

constexpr uint64_t kMaxInt = std::numeric_limits<int>::max();

Status CheckLength(std::string_view line) {
  if (line.size() + 1 <= kMaxLineBytes) return Status::Ok();
  return Bad(line.substr(0, 64), {"longer than ", std::to_string(kMaxLineBytes), " bytes"});
}

// The fields of `line`, after its length and, when given, their `count`
// (the verb included) are checked; then each field.
Result<std::vector<std::string_view>> CheckedFields(std::string_view line,
                                                    std::optional<size_t> count = std::nullopt) {
  if (auto s = CheckLength(line); !s.ok()) return s;
  std::vector<std::string_view> fields = Fields(line);
  if (count && fields.size() != *count) {
    return Bad(line, {"'", fields[0], "' takes ", std::to_string(*count - 1), " field(s), not ",
                      std::to_string(fields.size() - 1)});
  }
  for (std::string_view field : fields) {
    if (!IsField(field)) return Bad(line, {"empty field or a byte outside 0x21-0x7e"});
  }
  return fields;
}

Result<uint64_t> Generation(std::string_view line, std::string_view text) {
  if (auto g = Number(text, std::numeric_limits<uint64_t>::max())) return *g;
  return Bad(line, {"generation ", Quote(text), " is not a decimal number"});
}

// The generation of a "VERB G" line (ready, joined, pause).
Result<uint64_t> OnlyGeneration(std::string_view line) {
  auto fields = CheckedFields(line, 2);
  if (!fields.ok()) return fields.status();
  return Generation(line, fields.value()[1]);
}

Status ParseHello(std::string_view line, WorkerMessage& out) {
  auto all = CheckedFields(line);
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

// "failed G REASON...": the reason runs to the end of the line and may hold
// spaces, so only "failed G" is split into fields.
Status ParseFailed(std::string_view line, WorkerMessage& out) {
  if (auto s = CheckLength(line); !s.ok()) return s;
  const size_t generation_start = line.find(' ') + 1;
  const size_t reason_space = line.find(' ', generation_start);
  // Without a reason the line has too few fields: CheckedFields says so.
  if (reason_space == std::string_view::npos) return CheckedFields(line, 3).status();
  // The error names the whole line, not only "failed G".
  auto generation =
      Generation(line, line.substr(generation_start, reason_space - generation_start));
  if (!generation.ok()) return generation.status();
  const std::string_view reason = line.substr(reason_space + 1);
  if (!std::all_of(reason.begin(), reason.end(),
                   [](char c) { return c == ' ' || IsFieldByte(c); })) {
    return Bad(line, {"the reason holds a byte outside 0x20-0x7e"});
  }
  out.emplace<Failed>(Failed{generation.value(), std::string(reason)});
  return Status::Ok();
}

// The `join` fields, each required once; the value checks follow PROTOCOL.md.
Status ParseJoin(std::string_view line, AgentMessage& out) {
  auto all = CheckedFields(line);
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
  // Each known field is taken out of `values`; what is left is unknown.
  auto take = [&](std::string_view name) -> Result<std::string_view> {
    const auto it = values.find(name);
    if (it == values.end()) return Bad(line, {"field ", name, " is missing"});
    const std::string_view value = it->second;
    values.erase(it);
    return value;
  };
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
  for (const NumberField& f : numbers) {
    auto text = take(f.name);
    if (!text.ok()) return text.status();
    const auto value = Number(text.value(), f.max);
    if (!value || *value < f.min) {
      return Bad(line, {f.name, "=", Quote(text.value()), " is not a number from ",
                        std::to_string(f.min), " to ", std::to_string(f.max)});
    }
    *f.target = static_cast<int>(*value);
  }
  for (auto [name, target] :
       {std::pair<std::string_view, std::string*>{"MASTER_ADDR", &join.master_addr},
        {"STORE_PREFIX", &join.store_prefix}}) {
    auto text = take(name);
    if (!text.ok()) return text.status();
    *target = std::string(text.value());
  }
  if (!values.empty()) {
    return Bad(line, {"field ", Quote(values.begin()->first), " is not one of version 1's"});
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
  if (verb == "failed") return ParseFailed(line, out);
  if (verb == "ready" || verb == "joined") {
    auto generation = OnlyGeneration(line);
    if (!generation.ok()) return generation.status();
    if (verb == "ready") {
      out.emplace<Ready>(Ready{generation.value()});
    } else {
      out.emplace<Joined>(Joined{generation.value()});
    }
    return Status::Ok();
  }
  return Bad(line, {"not a worker message (hello, ready, joined, failed)"});
}

Status ParseAgentMessage(std::string_view line, AgentMessage& out) {
  const std::string_view verb = line.substr(0, line.find(' '));
  if (verb == "join") return ParseJoin(line, out);
  if (verb == "pause") {
    auto generation = OnlyGeneration(line);
    if (!generation.ok()) return generation.status();
    out.emplace<Pause>(Pause{generation.value()});
    return Status::Ok();
  }
  if (verb == "stop") {
    if (auto fields = CheckedFields(line, 1); !fields.ok()) return fields.status();
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
