#include "launcher/cli/env_source.h"

#include <cstdlib>

namespace muster::cli {

RawSettings ReadEnvSettings(const EnvLookup& env) {
  RawSettings settings;
  if (!env) return settings;
  for (const FlagSpec& flag : Flags()) {
    if (!(flag.sources & kFromEnv)) continue;
    std::string name = EnvName(flag);
    std::optional<std::string> value = env(name);
    if (value && !value->empty())
      settings.Set(flag, {std::move(*value), std::move(name), ValueSource::kEnv});
  }
  return settings;
}

}  // namespace muster::cli
