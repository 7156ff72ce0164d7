#include "launcher/status_endpoint.h"

#include "rendezvous/state/settings.h"

namespace muster {

StatusEndpoint ChooseStatusEndpoint(const std::string* flag, const EnvLookup& env) {
  if (flag != nullptr) return {*flag, "--rdzv-endpoint"};
  // An empty variable is treated as unset, as a job given it would have no
  // endpoint either.
  if (auto from_env = env("PET_RDZV_ENDPOINT"); from_env && !from_env->empty()) {
    return {*from_env, "PET_RDZV_ENDPOINT"};
  }
  return {kDefaultStatusEndpoint, "default"};
}

std::optional<std::string> ChooseStatusTokenFile(const std::string* flag, const EnvLookup& env) {
  if (flag != nullptr) return *flag;
  const auto conf_text = env("PET_RDZV_CONF");
  if (!conf_text) return std::nullopt;
  auto conf = rdzv::Settings::ParseConfText(*conf_text);
  if (!conf.ok()) return std::nullopt;
  auto token_file = conf->find("token_file");
  if (token_file == conf->end() || token_file->second.empty()) return std::nullopt;
  return token_file->second;
}

}  // namespace muster
