#include "launcher/plan/store_policy.h"

#include <utility>

#include <boost/asio/ip/address.hpp>

namespace muster {
namespace {

store::PeerAdmission Override(const LaunchOptions& options) {
  std::string text;
  for (const std::string& cidr : options.store_allow) {
    if (!text.empty()) text += ',';
    text += cidr;
  }
  // Validated when the flag was parsed (flag_table.cc).
  auto cidrs = store::ParseCidrList(text);
  return store::PeerAdmission::Override(cidrs.ok() ? std::move(cidrs).value()
                                                   : std::vector<store::Cidr>{});
}

// Only other hosts can reach a store on an address that is not loopback.
bool ReachableFromOtherHosts(const std::string& bind_host) {
  if (bind_host == "localhost") return false;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(bind_host, ec);
  return ec || !store::IsLoopback(address);
}

}  // namespace

StoreAdmissionChoice ElasticStoreAdmission(const LaunchOptions& options,
                                           const std::vector<std::string>& member_addrs) {
  if (!options.store_allow.empty()) return {Override(options), ""};
  if (!member_addrs.empty()) return {store::PeerAdmission::Members(member_addrs), ""};
  return {store::PeerAdmission::Everyone(),
          "event=store_admits_everyone why=\"the rendezvous named no member addresses (an older "
          "musterd, or more members than one message holds)\"; --store-allow CIDR,... limits the "
          "worker store to the job's hosts"};
}

StoreAdmissionChoice StaticStoreAdmission(const LaunchOptions& options,
                                          const std::string& bind_host, int port) {
  if (!options.store_allow.empty()) return {Override(options), ""};
  if (!ReachableFromOtherHosts(bind_host)) return {store::PeerAdmission::Everyone(), ""};
  return {store::PeerAdmission::Everyone(),
          "the worker store on " + bind_host + ":" + std::to_string(port) +
              " accepts connections from every host (a static run has no membership list); "
              "--store-allow CIDR,... limits it to the job's hosts"};
}

store::SessionLimits StoreLimits(const LaunchOptions& options) {
  store::SessionLimits limits;
  if (options.store_max_keys) limits.handler.max_keys = *options.store_max_keys;
  if (options.store_max_bytes) limits.handler.max_bytes = *options.store_max_bytes;
  if (options.store_max_connections) limits.max_connections = *options.store_max_connections;
  return limits;
}

}  // namespace muster
