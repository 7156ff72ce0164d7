// The example configs in configs/ parse, and configs/schema.json describes
// exactly the keys the flag table accepts.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "launcher/cli/flag_table.h"
#include "tests/unit/cli_test_support.h"

namespace muster::cli {
namespace {

const std::filesystem::path kConfigs = std::filesystem::path(MUSTER_SOURCE_DIR) / "configs";

std::vector<std::filesystem::path> ExampleConfigs() {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(kConfigs)) {
    if (entry.path().extension() == ".json" && entry.path().filename() != "schema.json") {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json Load(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST_CASE("every example config parses") {
  const auto configs = ExampleConfigs();
  REQUIRE(configs.size() >= 2);
  for (const auto& path : configs) {
    INFO("config: " << path);
    auto outcome =
        ParseLaunchCommandLine({"--config", path.string(), "train.py"}, testing::EnvOf({}));
    INFO("text: " << outcome.text);
    CHECK(outcome.options.has_value());
  }
}

TEST_CASE("the schema lists every config key in both spellings, and nothing else") {
  const nlohmann::json schema = Load(kConfigs / "schema.json");
  REQUIRE(schema.at("type") == "object");
  REQUIRE(schema.at("additionalProperties") == false);
  std::set<std::string> in_schema;
  for (const auto& [key, value] : schema.at("properties").items()) in_schema.insert(key);
  std::set<std::string> in_table;
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromConfig)) continue;
    in_table.insert(std::string(flag.name));
    in_table.insert(UnderscoreName(flag));
  }
  CHECK(in_schema == in_table);
}

TEST_CASE("example configs use only keys the schema knows") {
  const nlohmann::json properties = Load(kConfigs / "schema.json").at("properties");
  for (const auto& path : ExampleConfigs()) {
    const nlohmann::json config = Load(path);  // kept alive: items() only refers to it
    for (const auto& [key, value] : config.items()) {
      INFO(path << ": " << key);
      CHECK(properties.contains(key));
    }
  }
}

}  // namespace
}  // namespace muster::cli
