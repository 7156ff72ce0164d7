// Fuzzes the pure half of muster's HTTP endpoints (rendezvous/net/
// http_request.h): what a client on --metrics-port or --health-port sends
// before any handler runs.
//
// Input: a request head, as is.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a parsed head has a non-empty method without spaces, a path that
//     starts with '/' and holds no '?', and a query without a '?' cut
//     wrongly (path + '?' + query is the request target);
//   - the Authorization value is admitted by an empty token, and never by a
//     token it does not contain in some form (a token of 40 'z' bytes that
//     no input of this size can present both as Bearer text and Basic);
//   - a query's values are found without reading past it;
//   - an answer carrying the input as its body says its length exactly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/net/http_request.h"
#include "tests/fuzz/fuzz_check.h"

using muster::fuzz::Printable;
using namespace muster::rdzv;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (const auto request = ParseHttpRequestHead(input)) {
    FUZZ_CHECK(!request->method.empty() && request->method.find(' ') == std::string::npos,
               Printable(input));
    FUZZ_CHECK(!request->path.empty() && request->path.front() == '/', Printable(input));
    FUZZ_CHECK(request->path.find('?') == std::string::npos, Printable(input));
    FUZZ_CHECK(HttpAuthorized(request->authorization, ""), Printable(input));
    const std::string secret(40, 'z');
    if (request->authorization.find(secret) == std::string::npos &&
        request->authorization.find("enp6") == std::string::npos) {  // base64 of "zzz"
      FUZZ_CHECK(!HttpAuthorized(request->authorization, secret), Printable(input));
    }
    for (const char* name : {"run", "offset", "limit", ""}) {
      if (const auto value = HttpQueryValue(request->query, name)) {
        FUZZ_CHECK(value->size() <= request->query.size(), Printable(input));
      }
    }
  }
  const std::string answer =
      FormatHttpResponse(HttpResponse{200, "text/plain", std::string(input)}, false);
  FUZZ_CHECK(answer.find("Content-Length: " + std::to_string(size) + "\r\n") != std::string::npos,
             Printable(input));
  FUZZ_CHECK(answer.ends_with(input), Printable(input));
  return 0;
}
