// Parsers for the structured values torchrun defines: --nnodes,
// --nproc-per-node, --rdzv-backend, --rdzv-endpoint, --rdzv-conf and the Std
// spec of --redirects/--tee. Same contract as number_parsers.h: the typed
// value, or InvalidArgument whose message starts with the quoted value and
// says what was expected.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/host_port.h"
#include "common/status.h"
#include "launcher/plan/launch_options.h"

namespace muster::cli {

struct NodeRange {
  int min = 1;
  int max = 1;
};

// "N" or "MIN:MAX" with 1 <= MIN <= MAX.
Result<NodeRange> ParseNnodes(std::string_view text);

// A positive count, or "gpu", "cpu", "auto".
Result<ProcsPerNode> ParseProcsPerNode(std::string_view text);

// "static", "c10d" or "muster". torchrun's etcd backends get their own line
// saying muster does not have them.
Result<std::string> ParseRdzvBackend(std::string_view text);

// "" (not given), HOST, HOST:PORT, [IPV6] or [IPV6]:PORT, or a comma-separated
// list of them (replicas of a replicated musterd); returns it as given.
Result<std::string> ParseEndpoint(std::string_view text);

// The parts of an endpoint ParseEndpoint accepts (common/host_port.h).
using muster::HostPort;
using muster::SplitEndpoint;
using muster::SplitEndpointList;

// torchrun's Std: "0".."3" for every local rank, or "RANK:MASK,..." per local
// rank (each local rank at most once).
Result<StdSpec> ParseStdSpec(std::string_view text);

}  // namespace muster::cli
