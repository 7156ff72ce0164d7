// EnvLookup: how code reads environment variables, injected so tests can
// supply any environment. nullopt: the variable is not set.
#pragma once

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace muster {

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The real process environment (getenv).
inline EnvLookup SystemEnv() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

}  // namespace muster
