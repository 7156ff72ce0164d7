// The local IP address Gloo should listen on: the one the kernel would use to
// reach the master (a connected UDP socket's source address; no packet is
// sent). A loopback master gives 127.0.0.1.
//
// MUSTER_GLOO_IFACE_ADDR, when set and non-empty, wins (multi-homed hosts).
//
// Thread-safety: no shared state.
#pragma once

#include <string>

#include "common/status.h"

namespace muster::runtime {

// Error when `master_addr` does not resolve or no route leads to it; the
// message names the address.
Result<std::string> LocalAddressToward(const std::string& master_addr, int master_port);

}  // namespace muster::runtime
