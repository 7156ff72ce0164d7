#include "launcher/cli/spec_parsers.h"

#include <limits>

#include "common/quote.h"
#include "launcher/cli/number_parsers.h"

namespace muster::cli {
namespace {

constexpr int kIntMax = std::numeric_limits<int>::max();

}  // namespace

Result<NodeRange> ParseNnodes(std::string_view text) {
  const std::size_t colon = text.find(':');
  const std::string_view min_text = text.substr(0, colon);
  const std::string_view max_text =
      colon == std::string_view::npos ? min_text : text.substr(colon + 1);
  auto min = ParseIntInRange(min_text, 1, kIntMax, "");
  auto max = ParseIntInRange(max_text, 1, kIntMax, "");
  if (!min.ok() || !max.ok()) {
    return Status::InvalidArgument(Quote(text) + " must be N or MIN:MAX with positive integers");
  }
  if (*min > *max) return Status::InvalidArgument(Quote(text) + " has MIN greater than MAX");
  return NodeRange{*min, *max};
}

Result<ProcsPerNode> ParseProcsPerNode(std::string_view text) {
  if (text == "gpu") return ProcsPerNode{ProcsPerNode::Kind::kGpu, 1};
  if (text == "cpu") return ProcsPerNode{ProcsPerNode::Kind::kCpu, 1};
  if (text == "auto") return ProcsPerNode{ProcsPerNode::Kind::kAuto, 1};
  auto count = ParseIntInRange(text, 1, kIntMax, "");
  if (!count.ok()) {
    return Status::InvalidArgument(Quote(text) +
                                   " must be a positive integer, 'gpu', 'cpu' or 'auto'");
  }
  return ProcsPerNode{ProcsPerNode::Kind::kCount, *count};
}

Result<std::string> ParseRdzvBackend(std::string_view text) {
  if (text == "static" || text == "c10d" || text == "muster") return std::string(text);
  // torchrun users arrive with etcd command lines; say plainly it is absent
  // rather than "not a backend", and list what exists.
  if (text == "etcd" || text == "etcd-v2") {
    return Status::InvalidArgument(
        Quote(text) +
        " is not supported by muster; the rendezvous backends are 'static', 'c10d' and 'muster'");
  }
  return Status::InvalidArgument(Quote(text) +
                                 " is not a rendezvous backend; use 'static', 'c10d' or 'muster'");
}

Result<std::string> ParseEndpoint(std::string_view text) {
  if (text.empty()) return std::string();
  auto parts = SplitEndpointList(text);
  if (!parts.ok()) return parts.status();
  return std::string(text);
}

Result<StdSpec> ParseStdSpec(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument(Quote(text) +
                                   " must be 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or "
                                   "LOCAL_RANK:MASK pairs like '0:1,1:2'");
  };
  StdSpec spec;
  if (text.find(':') == std::string_view::npos) {
    auto mask = ParseIntInRange(text, kStdNone, kStdAll, "");
    if (!mask.ok()) return bad();
    spec.all = *mask;
    return spec;
  }
  std::string_view rest = text;
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) return bad();
    auto rank = ParseIntInRange(item.substr(0, colon), 0, kIntMax, "");
    auto mask = ParseIntInRange(item.substr(colon + 1), kStdNone, kStdAll, "");
    if (!rank.ok() || !mask.ok()) return bad();
    if (!spec.per_rank.emplace(*rank, *mask).second) {
      return Status::InvalidArgument(Quote(text) + " sets local rank " + std::to_string(*rank) +
                                     " twice");
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

}  // namespace muster::cli
