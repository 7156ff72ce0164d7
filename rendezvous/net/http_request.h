// The pure half of muster's small HTTP/1.0 endpoints (http_server.h): the
// request head read from a client, who may see the answer, and the bytes of
// an answer. No sockets here. Boost.Beast parses heads and writes answers
// (http_message.h holds the rules it applies); the token rule and query
// decoding are muster's own (http_request.cc).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace muster::rdzv {

struct HttpRequest {
  std::string method;         // "GET", "HEAD", ...
  std::string path;           // the target without its query: "/status.json"
  std::string query;          // after '?', undecoded; empty when none
  std::string authorization;  // the Authorization header's value; empty when none
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Reads a request head (the request line and headers; the blank line that
// ends it may be left off) with Beast's parser and HttpServer's limits.
// nullopt: not an HTTP/1.x request whose target is a path, a malformed
// header, or a head over 8 KiB.
std::optional<HttpRequest> ParseHttpRequestHead(std::string_view head);

// True when `authorization` presents `token`: "Bearer TOKEN", or "Basic" with
// base64 of "ANY-USER:TOKEN" (what a browser sends after its password
// prompt). An empty `token` admits everyone. Compared in constant time.
bool HttpAuthorized(std::string_view authorization, std::string_view token);

// The value of `name` in a query string ("run=a&offset=10"), percent- and
// plus-decoded; nullopt when absent.
std::optional<std::string> HttpQueryValue(std::string_view query, std::string_view name);

// The whole answer, as HttpServer writes it (Beast's serializer): status
// line, Content-Type, Content-Length, Cache-Control: no-store, Connection:
// close, and the body unless `head_only`. A 401 carries WWW-Authenticate:
// Basic, so a browser asks for the token.
std::string FormatHttpResponse(const HttpResponse& response, bool head_only);

}  // namespace muster::rdzv
