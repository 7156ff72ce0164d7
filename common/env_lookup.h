// EnvLookup: how code reads environment variables, injected so tests can
// supply any environment. nullopt: the variable is not set.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace muster {

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

}  // namespace muster
