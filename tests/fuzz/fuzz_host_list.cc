// Fuzzes the SLURM host-list parser (common/host_list.h): what
// SLURM_JOB_NODELIST and the launcher's host options hold.
//
// Input: the list, as is.
//
// Invariants beyond "no crash, no sanitizer report":
//   - ExpandHostList and FirstHostOfList agree: both fail with the same
//     status, or the first host is the front of the expansion;
//   - a refusal is InvalidArgument, one line, "'<list>' is not a host list: ...";
//   - an expansion holds 1..kMaxHostListHosts hosts, each a non-empty name of
//     at most 255 bytes without separators, brackets or control bytes;
//   - the hosts joined by ',' are a host list that expands to themselves
//     (checked for expansions of up to 1000 hosts, to keep runs fast).
// Lists that may name more than kExpandLimit hosts (a crude bound from the
// numbers inside brackets) are only validated, by FirstHostOfList: under
// ASan a million-host expansion takes most of a second, and libFuzzer would
// spend its time there instead of on the parser. The limit check itself
// runs in the validation, which both functions share.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_list.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using muster::fuzz::Printable;

constexpr uint64_t kExpandLimit = 20000;

// An upper bound of the hosts `list` names, saturating above kExpandLimit:
// (items) x the product over bracket groups of the sum over their ranges of
// (the range's last number + 1). Crude but never below the truth.
uint64_t HostBound(std::string_view list) {
  auto saturate = [](uint64_t v) { return v > kExpandLimit ? kExpandLimit + 1 : v; };
  uint64_t items = 1, product = 1, group = 0, number = 0;
  bool in_group = false;
  for (char c : list) {
    if (c == ',' || c == ' ' || c == '\t' || c == ']' || c == '-') {
      if (in_group && c != '-') group = saturate(group + number + 1);
      if (!in_group && c != '-' && c != ']') items = saturate(items + 1);
      if (c == ']' && in_group) {
        product = saturate(product * group);
        in_group = false;
      }
      number = 0;
    } else if (c == '[') {
      in_group = true;
      group = number = 0;
    } else if (c >= '0' && c <= '9') {
      number = saturate(number * 10 + static_cast<uint64_t>(c - '0'));
    }
  }
  if (in_group) product = saturate(product * saturate(group + number + 1));
  return saturate(items * product);
}

bool PlainHost(std::string_view host) {
  if (host.empty() || host.size() > 255) return false;
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == ',' || c == ' ' || c == '[' || c == ']') return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view list(reinterpret_cast<const char*>(data), size);
  const auto first = muster::FirstHostOfList(list);
  if (HostBound(list) > kExpandLimit) {
    if (!first.ok()) {
      FUZZ_CHECK(first.status().IsInvalidArgument() && !first.status().message().empty(),
                 "not InvalidArgument: " + first.status().message());
    }
    return 0;
  }
  const auto hosts = muster::ExpandHostList(list);
  FUZZ_CHECK(first.ok() == hosts.ok(),
             "FirstHostOfList and ExpandHostList disagree on " + Printable(list));
  if (!hosts.ok()) {
    const std::string& message = hosts.status().message();
    FUZZ_CHECK(hosts.status().IsInvalidArgument(), "not InvalidArgument: " + message);
    FUZZ_CHECK(message == first.status().message(),
               "two errors for one list: " + message + " / " + first.status().message());
    FUZZ_CHECK(
        message.starts_with("'") && message.find("' is not a host list: ") != std::string::npos,
        "an error not of the documented form: " + Printable(message));
    FUZZ_CHECK(message.find('\n') == std::string::npos, "the error is not one line");
    return 0;
  }
  FUZZ_CHECK(!hosts->empty() && hosts->size() <= muster::kMaxHostListHosts,
             std::to_string(hosts->size()) + " hosts");
  FUZZ_CHECK(*first == hosts->front(),
             "first host " + *first + " but the expansion starts with " + hosts->front());
  for (const std::string& host : *hosts) {
    FUZZ_CHECK(PlainHost(host), "host " + Printable(host) + " from " + Printable(list));
  }
  if (hosts->size() <= 1000) {
    std::string joined;
    for (const std::string& host : *hosts) joined += (joined.empty() ? "" : ",") + host;
    const auto again = muster::ExpandHostList(joined);
    FUZZ_CHECK(again.ok() && *again == *hosts,
               "the joined hosts do not expand to themselves: " + Printable(joined));
  }
  return 0;
}
