#include "rendezvous/net/http_request.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace muster::rdzv {
namespace {

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

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
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding's zero bytes too.
  size_t size = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;
  return std::string(reinterpret_cast<const char*>(out.data()), size);
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

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

}  // namespace

std::optional<HttpRequest> ParseHttpRequestHead(std::string_view head) {
  const size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  const size_t first_space = line.find(' ');
  const size_t last_space = line.rfind(' ');
  if (first_space == std::string_view::npos || last_space == first_space) return std::nullopt;
  if (!line.substr(last_space + 1).starts_with("HTTP/1.")) return std::nullopt;
  HttpRequest request;
  request.method = std::string(line.substr(0, first_space));
  std::string_view target = line.substr(first_space + 1, last_space - first_space - 1);
  if (request.method.empty() || target.empty() || target.front() != '/') return std::nullopt;
  const size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
  std::string_view rest = line_end == std::string_view::npos ? "" : head.substr(line_end + 2);
  while (!rest.empty()) {
    const size_t end = rest.find("\r\n");
    const std::string_view header = rest.substr(0, end);
    rest = end == std::string_view::npos ? "" : rest.substr(end + 2);
    const size_t colon = header.find(':');
    if (colon == std::string_view::npos) continue;
    if (EqualsIgnoringCase(Trim(header.substr(0, colon)), "authorization")) {
      request.authorization = std::string(Trim(header.substr(colon + 1)));
    }
  }
  return request;
}

bool HttpAuthorized(std::string_view authorization, std::string_view token) {
  if (token.empty()) return true;
  const size_t space = authorization.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view scheme = authorization.substr(0, space);
  const std::string_view credentials = Trim(authorization.substr(space + 1));
  if (EqualsIgnoringCase(scheme, "bearer")) return SameSecret(credentials, token);
  if (!EqualsIgnoringCase(scheme, "basic")) return false;
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

std::string FormatHttpResponse(const HttpResponse& response, bool head_only) {
  std::string out = "HTTP/1.0 " + std::to_string(response.status) + " " +
                    ReasonPhrase(response.status) + "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) +
                    "\r\nCache-Control: no-store\r\nConnection: close\r\n";
  if (response.status == 401) out += "WWW-Authenticate: Basic realm=\"musterd\"\r\n";
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

}  // namespace muster::rdzv
