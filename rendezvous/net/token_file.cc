#include "rendezvous/net/token_file.h"

#include <fstream>
#include <sstream>

namespace muster::rdzv {

Result<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("--token-file: cannot read '" + path + "'");
  std::ostringstream content;
  content << in.rdbuf();
  std::string token = content.str();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) return Status::InvalidArgument("--token-file: '" + path + "' is empty");
  if (token.size() > 4096) {
    return Status::InvalidArgument("--token-file: '" + path + "' holds more than 4096 bytes");
  }
  return token;
}

}  // namespace muster::rdzv
