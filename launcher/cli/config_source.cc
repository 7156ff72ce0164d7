#include "launcher/cli/config_source.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/quote.h"
#include "common/suggest.h"

namespace muster::cli {
namespace {

using Json = nlohmann::json;

std::string DescribeTypes(unsigned types) {
  std::vector<std::string> names;
  if (types & kJsonString) names.push_back("a string");
  if (types & kJsonNumber) {
    names.push_back("a number");
  } else if (types & kJsonInteger) {
    names.push_back("an integer");
  }
  if (types & kJsonBool) names.push_back("true or false");
  if (types & kJsonArray) names.push_back("an array");
  if (types & kJsonObject) names.push_back("an object");
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : (i + 1 == names.size() ? " or " : ", ")) + names[i];
  }
  return out;
}

std::string Shown(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

// A scalar inside an array or object, as text; nullopt for other types.
std::optional<std::string> ScalarText(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  return std::nullopt;
}

// The command-line text for `value`, or the reason it has the wrong type.
Result<std::string> ToText(const Json& value, unsigned types, const std::string& where) {
  const auto wrong = [&] {
    return Status::InvalidArgument(where + ": expected " + DescribeTypes(types) + ", got " +
                                   Shown(value));
  };
  if (value.is_string() && (types & kJsonString)) return value.get<std::string>();
  if (value.is_boolean() && (types & kJsonBool)) return std::string(value.get<bool>() ? "1" : "0");
  if (value.is_number_integer() && (types & (kJsonInteger | kJsonNumber))) return value.dump();
  if (value.is_number_float() && (types & kJsonNumber)) return value.dump();
  if (value.is_array() && (types & kJsonArray)) {
    // Joined with ',' and split again by the flag's parser: an item holding a
    // ',' would silently become two, so it is refused.
    std::string joined;
    for (const Json& item : value) {
      auto text = item.is_boolean() ? std::nullopt : ScalarText(item);
      if (!text || text->find(',') != std::string::npos) {
        return Status::InvalidArgument(where + ": array item " + Shown(item) +
                                       " must be a string or number without ','");
      }
      joined += (joined.empty() ? "" : ",") + *text;
    }
    return joined;
  }
  if (value.is_object() && (types & kJsonObject)) {
    std::string joined;
    for (const auto& [key, item] : value.items()) {
      auto text = ScalarText(item);
      if (!text || key.empty() || key.find_first_of(",=") != std::string::npos ||
          text->find(',') != std::string::npos) {
        return Status::InvalidArgument(where + ": entry " + Quote(key) + ": " + Shown(item) +
                                       " must be a key without ',' or '=' and a scalar "
                                       "value without ','");
      }
      joined += (joined.empty() ? "" : ",") + key + "=" + *text;
    }
    return joined;
  }
  return wrong();
}

Status UnknownKey(const std::string& name, const std::string& key) {
  std::vector<std::string> candidates;
  for (const FlagSpec& flag : Flags()) {
    if (flag.sources & kFromConfig) candidates.emplace_back(flag.name);
  }
  std::string dashed = key;
  for (char& c : dashed) {
    if (c == '_') c = '-';
  }
  std::string message = name + ": unknown key " + Quote(key);
  if (auto best = Suggest(dashed, candidates)) {
    // Config files mostly use underscores; answer in dashes only to a dashed key.
    if (key.find('-') == std::string::npos) {
      for (char& c : *best) {
        if (c == '-') c = '_';
      }
    }
    message += "; did you mean '" + *best + "'?";
  }
  return Status::InvalidArgument(message);
}

}  // namespace

Result<RawSettings> ParseConfigText(std::string_view text, const std::string& name) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    // what() reads "[json.exception.parse_error.101] parse error at line 3, ...".
    std::string what = e.what();
    if (const std::size_t end = what.find("] ");
        what.starts_with("[") && end != std::string::npos) {
      what = what.substr(end + 2);
    }
    return Status::InvalidArgument(name + ": not valid JSON: " + what);
  }
  if (!root.is_object()) {
    return Status::InvalidArgument(name + ": must hold a JSON object of flag settings, e.g. " +
                                   "{\"nproc_per_node\": 4}, not " + Shown(root));
  }
  RawSettings settings;
  std::vector<std::string> key_of(Flags().size());  // the key that set each flag, "" if none
  for (const auto& [key, value] : root.items()) {
    const FlagSpec* flag = FindFlag(key);
    if (flag == nullptr) return UnknownKey(name, key);
    if (!(flag->sources & kFromConfig)) {
      return Status::InvalidArgument(name + ": key " + Quote(key) +
                                     " cannot be set in a config file");
    }
    std::string& earlier = key_of[FlagIndex(*flag)];
    if (!earlier.empty()) {
      return Status::InvalidArgument(name + ": keys " + Quote(earlier) + " and " + Quote(key) +
                                     " set the same flag");
    }
    earlier = key;
    std::string where = name + ": " + key;
    auto converted = ToText(value, flag->json_types, where);
    if (!converted.ok()) return converted.status();
    settings.Set(*flag, {std::move(*converted), std::move(where), ValueSource::kConfigFile});
  }
  return settings;
}

Result<RawSettings> ReadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument("--config: cannot read " + Quote(path) + ": " +
                                   std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Status::InvalidArgument("--config: cannot read " + Quote(path) + ": " +
                                   std::strerror(errno));
  }
  return ParseConfigText(text.str(), path);
}

}  // namespace muster::cli
