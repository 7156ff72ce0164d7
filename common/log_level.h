// SetLogLevelFromEnv: the spdlog level named by MUSTER_LOG_LEVEL, for muster
// and musterd (the worker runtime logs at spdlog's default level, info).
// spdlog's own from_str maps an unknown name to "off", which would hide every
// error: an unknown name keeps `fallback` and says so on `logger`.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "common/env_lookup.h"

namespace muster {

inline void SetLogLevelFromEnv(spdlog::logger& logger, const EnvLookup& env,
                               spdlog::level::level_enum fallback = spdlog::level::info) {
  logger.set_level(fallback);
  const auto name = env("MUSTER_LOG_LEVEL");
  if (!name) return;
  const auto parsed = spdlog::level::from_str(*name);
  if (parsed == spdlog::level::off && *name != "off") {
    logger.warn(
        "MUSTER_LOG_LEVEL: '{}' is not one of trace, debug, info, warning, error, critical, off; "
        "using {}",
        *name, spdlog::level::to_string_view(fallback));
    return;
  }
  logger.set_level(parsed);
}

}  // namespace muster
