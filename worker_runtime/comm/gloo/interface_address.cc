#include "worker_runtime/comm/gloo/interface_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace muster::runtime {

Result<std::string> LocalAddressToward(const std::string& master_addr, int master_port) {
  if (const char* forced = std::getenv("MUSTER_GLOO_IFACE_ADDR"); forced && *forced) {
    return std::string(forced);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  // A UDP connect needs a non-zero port; any port gives the same route.
  const std::string port = std::to_string(master_port > 0 ? master_port : 9);
  if (int rc = getaddrinfo(master_addr.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status::IoError("gloo: MASTER_ADDR='" + master_addr +
                           "' does not resolve: " + gai_strerror(rc));
  }
  std::string error = "no address";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
      close(fd);
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw =
          local.ss_family == AF_INET
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      inet_ntop(local.ss_family, raw, text, sizeof(text));
      freeaddrinfo(found);
      return std::string(text);
    }
    error = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return Status::IoError("gloo: no route to MASTER_ADDR='" + master_addr + "': " + error);
}

}  // namespace muster::runtime
