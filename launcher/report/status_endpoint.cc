#include "launcher/report/status_endpoint.h"

#include <sys/stat.h>

#include <cstdio>

#include "common/quote.h"
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

Result<rdzv::TlsClientFiles> ChooseStatusTls(const std::string* conf_flag, const EnvLookup& env) {
  std::string origin = "--rdzv-conf";
  std::optional<std::string> text;
  if (conf_flag != nullptr) {
    text = *conf_flag;
  } else {
    text = env("PET_RDZV_CONF");
    origin = "PET_RDZV_CONF";
  }
  if (!text) return rdzv::TlsClientFiles{};
  auto conf = rdzv::Settings::ParseConfText(*text);
  if (!conf.ok()) {
    // Never a downgrade: asking in the clear would send the token, if any,
    // where the job's TLS keys say it must not go.
    return Status::InvalidArgument(origin + ": " + conf.status().message());
  }
  const auto file = [&](const char* key) {
    const auto it = conf->find(key);
    return rdzv::TlsFile{it == conf->end() ? "" : it->second, origin + " " + key};
  };
  return rdzv::TlsClientFiles{file("tls_ca"), file("tls_cert"), file("tls_key")};
}

bool TokenModeIsShared(unsigned mode) { return (mode & (S_IRWXG | S_IRWXO)) != 0; }

std::optional<std::string> StatusTokenFileWarning(const std::string& origin,
                                                  const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !TokenModeIsShared(st.st_mode)) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
  return origin + " " + Quote(path) + " is readable by users other than its owner (mode " + mode +
         "): whoever reads it joins the cluster; chmod go-rwx it";
}

}  // namespace muster
