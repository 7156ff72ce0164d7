#include "rendezvous/state/member_addresses.h"

#include <arpa/inet.h>

#include <algorithm>

namespace muster::rdzv {
namespace {

bool IsIpLiteral(const std::string& text) {
  unsigned char buffer[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

}  // namespace

std::vector<std::string> MemberAddressList(
    const std::vector<std::pair<std::string, std::string>>& seen_and_advertised) {
  std::vector<std::string> out;
  out.reserve(seen_and_advertised.size() * 2);
  for (const auto& [seen, advertised] : seen_and_advertised) {
    if (IsIpLiteral(seen)) out.push_back(seen);
    if (IsIpLiteral(advertised)) out.push_back(advertised);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  size_t bytes = 0;
  for (const std::string& address : out) bytes += address.size() + 3;  // "...",
  if (bytes > kMaxMemberAddrBytes) out.clear();
  return out;
}

}  // namespace muster::rdzv
