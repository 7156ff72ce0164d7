#include "store/peer_admission.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "common/quote.h"

namespace muster::store {
namespace {

namespace ip = boost::asio::ip;

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// The address's bytes, most significant first: 4 for IPv4, 16 for IPv6.
std::vector<uint8_t> Bytes(const ip::address& address) {
  if (address.is_v4()) {
    const auto b = address.to_v4().to_bytes();
    return {b.begin(), b.end()};
  }
  const auto b = address.to_v6().to_bytes();
  return {b.begin(), b.end()};
}

ip::address FromBytes(const std::vector<uint8_t>& bytes) {
  if (bytes.size() == 4) {
    ip::address_v4::bytes_type b{};
    std::copy(bytes.begin(), bytes.end(), b.begin());
    return ip::address_v4(b);
  }
  ip::address_v6::bytes_type b{};
  std::copy(bytes.begin(), bytes.end(), b.begin());
  return ip::address_v6(b);
}

// `bytes` with every bit past the first `prefix_length` cleared.
std::vector<uint8_t> Masked(std::vector<uint8_t> bytes, int prefix_length) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int bits_here = prefix_length - static_cast<int>(i) * 8;
    if (bits_here >= 8) continue;
    bytes[i] = bits_here <= 0 ? 0 : static_cast<uint8_t>(bytes[i] & (0xff << (8 - bits_here)));
  }
  return bytes;
}

std::string Prefix(std::string_view flag) {
  return flag.empty() ? std::string() : std::string(flag) + ": ";
}

Status NotCidr(std::string_view flag, std::string_view entry, std::string_view why) {
  // Quoted: the entry comes from the command line or the environment, and
  // the error must stay one printable line whatever its bytes.
  return Status::InvalidArgument(Prefix(flag) + Quote(entry) + " is not a CIDR (" +
                                 std::string(why) + ")");
}

Result<Cidr> ParseCidr(std::string_view entry, std::string_view flag) {
  const size_t slash = entry.find('/');
  const std::string address_text(entry.substr(0, slash));
  boost::system::error_code ec;
  const ip::address parsed = ip::make_address(address_text, ec);
  if (ec) return NotCidr(flag, entry, "ADDRESS/BITS with an IPv4 or IPv6 ADDRESS");
  const ip::address address = Unmapped(parsed);
  // A v4-mapped block (::ffff:10.0.0.0/104) is the IPv4 block it maps.
  const int mapped_bits = parsed.is_v6() && address.is_v4() ? 96 : 0;
  const int max_bits = parsed.is_v4() ? 32 : 128;
  int bits = max_bits;
  if (slash != std::string_view::npos) {
    const std::string_view text = entry.substr(slash + 1);
    auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), bits);
    if (text.empty() || err != std::errc() || end != text.data() + text.size() || bits < 0 ||
        bits > max_bits) {
      return NotCidr(flag, entry,
                     "ADDRESS/BITS, BITS at most " + std::to_string(max_bits) +
                         (parsed.is_v4() ? " for IPv4" : " for IPv6"));
    }
    if (bits < mapped_bits) {
      return NotCidr(flag, entry, "a v4-mapped block needs at least 96 bits");
    }
  }
  Cidr cidr;
  cidr.prefix_length = bits - mapped_bits;
  cidr.network = FromBytes(Masked(Bytes(address), cidr.prefix_length));
  return cidr;
}

}  // namespace

ip::address Unmapped(const ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, address.to_v6());
  }
  return address;
}

bool IsLoopback(const ip::address& address) { return Unmapped(address).is_loopback(); }

bool Cidr::Contains(const ip::address& address) const {
  const ip::address plain = Unmapped(address);
  if (plain.is_v4() != network.is_v4()) return false;
  return Masked(Bytes(plain), prefix_length) == Bytes(network);
}

std::string Cidr::Text() const { return network.to_string() + "/" + std::to_string(prefix_length); }

Result<std::vector<Cidr>> ParseCidrList(std::string_view text, std::string_view flag) {
  std::vector<Cidr> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string_view::npos ? text.size() : comma;
    const std::string_view entry = Trim(text.substr(start, end - start));
    if (entry.empty()) {
      return Status::InvalidArgument(Prefix(flag) + "empty entry in " + Quote(text) +
                                     " (expected CIDR,CIDR,..., e.g. 10.0.0.0/8)");
    }
    auto cidr = ParseCidr(entry, flag);
    if (!cidr.ok()) return cidr.status();
    out.push_back(*cidr);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

PeerAdmission PeerAdmission::Members(const std::vector<std::string>& addresses) {
  PeerAdmission admission;
  admission.mode_ = Mode::kMembers;
  for (const std::string& text : addresses) {
    boost::system::error_code ec;
    const ip::address address = ip::make_address(text, ec);
    if (!ec) admission.members_.insert(Unmapped(address));
  }
  return admission;
}

PeerAdmission PeerAdmission::Override(std::vector<Cidr> allowed) {
  PeerAdmission admission;
  admission.mode_ = Mode::kOverride;
  admission.allowed_ = std::move(allowed);
  return admission;
}

bool PeerAdmission::Admits(const ip::address& peer, const ip::address& local) const {
  const ip::address plain = Unmapped(peer);
  if (plain.is_loopback() || plain == Unmapped(local)) return true;
  switch (mode_) {
    case Mode::kEveryone:
      return true;
    case Mode::kMembers:
      return members_.contains(plain);
    case Mode::kOverride:
      for (const Cidr& cidr : allowed_) {
        if (cidr.Contains(plain)) return true;
      }
      return false;
  }
  return false;
}

std::string PeerAdmission::Describe() const {
  switch (mode_) {
    case Mode::kEveryone:
      return "everyone";
    case Mode::kMembers:
      return "members=" + std::to_string(members_.size());
    case Mode::kOverride: {
      std::string text = "store_allow=";
      for (size_t i = 0; i < allowed_.size(); ++i) {
        if (i > 0) text += ',';
        text += allowed_[i].Text();
      }
      return text;
    }
  }
  return "?";
}

}  // namespace muster::store
