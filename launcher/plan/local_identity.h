// Local identity: the facts about this machine that the host rules
// (host_rules.h) decide on, read from the system — its hostname and FQDN,
// its interface addresses, and what a name resolves to here. Every call may
// block on the resolver (/etc/hosts, DNS); call them once, at start.
#pragma once

#include <string>
#include <vector>

#include "launcher/plan/host_rules.h"

namespace muster {

// gethostname(), its canonical name (getaddrinfo AI_CANONNAME), every
// interface address (getifaddrs) and the hostname's resolved addresses. A
// source that fails contributes nothing: the result may be partial, never
// an error.
LocalIdentity ThisMachineIdentity();

// The addresses `host` resolves to here (getaddrinfo, TCP, any family), as
// text; empty when it does not resolve.
std::vector<std::string> ResolveAddresses(const std::string& host);

// EndpointIsLocal(host, ResolveAddresses(host), ThisMachineIdentity()).
bool EndpointIsThisMachine(const std::string& host);

}  // namespace muster
