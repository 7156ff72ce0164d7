// The control channel's shared test vectors (control/test_vectors.txt, its
// format at its top), checked against the C++ codec: every worker line
// through ParseWorkerMessage, every agent line through ParseAgentMessage,
// and every round-trip message through the formatter of its direction. The
// Python package is checked against the same file by
// tests/python/muster_control_vectors_test.py.
#include <catch2/catch.hpp>
#include <exception>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/quote.h"
#include "control/control_message.h"

namespace muster::control {
namespace {

// One vector: FROM, LINE, KIND and what follows KIND (TYPE and its fields, or
// the refusal's categories), unescaped where the format escapes.
struct Vector {
  int number = 0;  // its line in the file
  std::string from;
  std::string line;
  std::string kind;
  std::string type;
  std::map<std::string, std::string> fields;
  std::vector<std::string> categories;
};

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    const size_t end = text.find(separator, begin);
    parts.emplace_back(text.substr(begin, end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

// The bytes `text` stands for: \\, \xHH and \{N:C} (the file's header).
std::string Unescape(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    const std::string_view rest = text.substr(i + 1);
    if (rest.starts_with('\\')) {
      out += '\\';
      i += 1;
    } else if (rest.starts_with('x') && rest.size() >= 3) {
      out += static_cast<char>(std::stoi(std::string(rest.substr(1, 2)), nullptr, 16));
      i += 3;
    } else {
      const size_t colon = rest.find(':');
      REQUIRE((rest.starts_with('{') && colon != std::string_view::npos &&
               rest.substr(colon + 2, 1) == "}" && rest[colon + 1] != '\\'));
      out.append(std::stoul(std::string(rest.substr(1, colon - 1))), rest[colon + 1]);
      i += colon + 3;
    }
  }
  return out;
}

std::vector<Vector> ReadVectors() {
  std::ifstream in(MUSTER_CONTROL_TEST_VECTORS);
  INFO("reading " << MUSTER_CONTROL_TEST_VECTORS);
  REQUIRE(in.good());
  std::vector<Vector> vectors;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (text.empty() || text[0] == '#') continue;
    INFO("test_vectors.txt:" << number << ": " << text);
    const std::vector<std::string> columns = Split(text, '\t');
    REQUIRE(columns.size() >= 4);
    Vector v{number, columns[0], Unescape(columns[1]), columns[2], columns[3], {}, {}};
    REQUIRE((v.from == "worker" || v.from == "agent"));
    if (v.kind == "refused") {
      REQUIRE(columns.size() == 4);
      v.categories = Split(columns[3], '|');
    } else {
      REQUIRE((v.kind == "round-trip" || v.kind == "parse-only"));
      for (size_t i = 4; i < columns.size(); ++i) {
        const size_t eq = columns[i].find('=');
        REQUIRE(eq != std::string::npos);
        REQUIRE(
            v.fields.emplace(columns[i].substr(0, eq), Unescape(columns[i].substr(eq + 1))).second);
      }
    }
    vectors.push_back(std::move(v));
  }
  return vectors;
}

// Words of this codec's errors for each refusal category of the file.
const std::map<std::string, std::vector<std::string>>& CategoryWords() {
  static const auto* words = new std::map<std::string, std::vector<std::string>>{
      {"length", {"longer than 4096 bytes"}},
      {"verb", {"not a worker message", "not an agent message"}},
      {"count", {"field(s), not", "needs a"}},
      {"byte",
       {"empty field or a byte outside 0x21-0x7e", "the reason holds a byte outside 0x20-0x7e"}},
      {"number", {"is not a decimal number", "is not a number from"}},
      {"range", {"is not a number from", "must be below WORLD_SIZE"}},
      {"join-field",
       {"is not NAME=VALUE", "is given twice", "is missing", "is not one of version 1's"}},
  };
  return *words;
}

bool SaysCategory(const std::string& error, const std::vector<std::string>& categories) {
  for (const std::string& category : categories) {
    const auto it = CategoryWords().find(category);
    REQUIRE(it != CategoryWords().end());
    for (const std::string& words : it->second) {
      if (error.find(words) != std::string::npos) return true;
    }
  }
  return false;
}

// The vector's fields, each taken once: Take() fails on a missing one, and
// the destructor on one that no Take() asked for.
class Fields {
 public:
  explicit Fields(const Vector& v) : fields_(v.fields) {}
  ~Fields() {
    if (std::uncaught_exceptions() == 0) CHECK(fields_.empty());
  }
  std::string Take(const std::string& name) {
    const auto it = fields_.find(name);
    INFO("field " << name);
    REQUIRE(it != fields_.end());
    std::string value = it->second;
    fields_.erase(it);
    return value;
  }
  uint64_t Generation() { return std::stoull(Take("generation")); }
  int Int(const std::string& name) { return std::stoi(Take(name)); }

 private:
  std::map<std::string, std::string> fields_;
};

WorkerMessage WorkerMeaning(const Vector& v) {
  Fields f(v);
  if (v.type == "hello") {
    const int version = f.Int("version");
    const std::string capabilities = f.Take("capabilities");
    if (capabilities.empty()) return Hello{version, {}};
    return Hello{version, Split(capabilities, ' ')};
  }
  if (v.type == "ready") return Ready{f.Generation()};
  if (v.type == "joined") return Joined{f.Generation()};
  REQUIRE(v.type == "failed");
  const uint64_t generation = f.Generation();
  return Failed{generation, f.Take("reason")};
}

AgentMessage AgentMeaning(const Vector& v) {
  Fields f(v);
  if (v.type == "pause") return Pause{f.Generation()};
  if (v.type == "stop") return Stop{};
  REQUIRE(v.type == "join");
  Join join;
  join.generation = f.Generation();
  join.rank = f.Int("rank");
  join.world_size = f.Int("world_size");
  join.group_rank = f.Int("group_rank");
  join.local_rank = f.Int("local_rank");
  join.master_addr = f.Take("master_addr");
  join.master_port = f.Int("master_port");
  join.store_prefix = f.Take("store_prefix");
  return join;
}

// One direction's parser, formatter, and the message a vector means.
template <typename Message>
struct Codec {
  Status (*parse)(std::string_view, Message&);
  std::string (*format)(const Message&);
  Message (*meaning)(const Vector&);
};

template <typename Message>
void Check(const Vector& v, const Codec<Message>& codec) {
  INFO("test_vectors.txt:" << v.number << ": " << v.from << " " << Quote(v.line));
  Message parsed;
  const Status status = codec.parse(v.line, parsed);
  if (v.kind == "refused") {
    REQUIRE_FALSE(status.ok());
    const std::string& error = status.message();
    INFO("error: " << error);
    CHECK(SaysCategory(error, v.categories));
    CHECK(error.find('\n') == std::string::npos);
    const bool too_long = v.line.size() + 1 > kMaxLineBytes;
    CHECK_THAT(error, Catch::Contains(Quote(too_long ? v.line.substr(0, 64) : v.line)));
    return;
  }
  INFO(status.message());
  REQUIRE(status.ok());
  const Message meaning = codec.meaning(v);
  INFO("parsed as " << Quote(codec.format(parsed)));
  CHECK(parsed == meaning);
  if (v.kind == "round-trip") CHECK(codec.format(meaning) == v.line);
}

// Checks every vector written by `from`, of which there is at least one.
template <typename Message>
void CheckEvery(std::string_view from, const Codec<Message>& codec) {
  int checked = 0;
  for (const Vector& v : ReadVectors()) {
    if (v.from != from) continue;
    Check(v, codec);
    ++checked;
  }
  CHECK(checked > 0);
}

TEST_CASE("every worker line of the test vectors means what the file says") {
  CheckEvery<WorkerMessage>("worker", {ParseWorkerMessage, FormatWorkerMessage, WorkerMeaning});
}

TEST_CASE("every agent line of the test vectors means what the file says") {
  CheckEvery<AgentMessage>("agent", {ParseAgentMessage, FormatAgentMessage, AgentMeaning});
}

}  // namespace
}  // namespace muster::control
