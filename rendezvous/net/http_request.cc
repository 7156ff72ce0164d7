#include "rendezvous/net/http_request.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <boost/beast/core/string.hpp>
#include <vector>

namespace muster::rdzv {
namespace beast = boost::beast;
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// Length is not secret (tokens are long random strings); the bytes are.
bool SameSecret(std::string_view presented, std::string_view token) {
  return presented.size() == token.size() &&
         CRYPTO_memcmp(presented.data(), token.data(), token.size()) == 0;
}

std::optional<std::string> DecodeBase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0 || text.size() > 8192) return std::nullopt;
  std::vector<unsigned char> out(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  // EVP_DecodeBlock counts the padding's zero bytes too. Base64 pads with
  // at most two: "====" would take more bytes off than were decoded.
  size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  if (n < 0 || padding > 2 || static_cast<size_t>(n) < padding) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(out.data()), static_cast<size_t>(n) - padding);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && HexDigit(text[i + 1]) >= 0 &&
               HexDigit(text[i + 2]) >= 0) {
      out += static_cast<char>(HexDigit(text[i + 1]) * 16 + HexDigit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

bool HttpAuthorized(std::string_view authorization, std::string_view token) {
  if (token.empty()) return true;
  const size_t space = authorization.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view scheme = authorization.substr(0, space);
  const std::string_view credentials = Trim(authorization.substr(space + 1));
  if (beast::iequals(scheme, "bearer")) return SameSecret(credentials, token);
  if (!beast::iequals(scheme, "basic")) return false;
  const std::optional<std::string> decoded = DecodeBase64(credentials);
  if (!decoded) return false;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  return SameSecret(std::string_view(*decoded).substr(colon + 1), token);
}

std::optional<std::string> HttpQueryValue(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    const size_t equals = pair.find('=');
    if (PercentDecode(pair.substr(0, equals)) != name) continue;
    return equals == std::string_view::npos ? std::string()
                                            : PercentDecode(pair.substr(equals + 1));
  }
  return std::nullopt;
}

}  // namespace muster::rdzv
