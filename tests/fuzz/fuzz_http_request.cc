// Fuzzes the pure half of muster's HTTP endpoints (rendezvous/net/
// http_request.h): what a client on --metrics-port or --health-port sends
// before any handler runs. Boost.Beast parses the head and writes the answer
// (http_message.h); the token rule (Bearer, Basic's base64) and the query's
// percent-decoding are muster's own, so they are fed the input directly too,
// not only what Beast lets through.
//
// Input: a request head, as is; and the same bytes as an Authorization
// value and as a query string.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a parsed head has a non-empty method without spaces, a path that
//     starts with '/' and holds no '?', and a query without a '?' cut
//     wrongly (path + '?' + query is the request target);
//   - an Authorization value (the parsed one, and the input itself) is
//     admitted by an empty token, and never by a token it does not contain
//     in some form (a token of 40 'z' bytes that no input of this size can
//     present both as Bearer text and Basic);
//   - a query's values (the parsed one's, and the input's) are found
//     without reading past it;
//   - an answer carrying the input as its body says its length exactly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/net/http_request.h"
#include "tests/fuzz/fuzz_check.h"

using muster::fuzz::Printable;
using namespace muster::rdzv;

namespace {

// The token rule on `authorization`, against an empty token and a token it
// cannot present.
void CheckTokenRule(std::string_view authorization, std::string_view input) {
  FUZZ_CHECK(HttpAuthorized(authorization, ""), Printable(input));
  const std::string secret(40, 'z');
  if (authorization.find(secret) == std::string_view::npos &&
      authorization.find("enp6") == std::string_view::npos) {  // base64 of "zzz"
    FUZZ_CHECK(!HttpAuthorized(authorization, secret), Printable(input));
  }
}

void CheckQueryValues(std::string_view query, std::string_view input) {
  for (const char* name : {"run", "offset", "limit", ""}) {
    if (const auto value = HttpQueryValue(query, name)) {
      FUZZ_CHECK(value->size() <= query.size(), Printable(input));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (const auto request = ParseHttpRequestHead(input)) {
    FUZZ_CHECK(!request->method.empty() && request->method.find(' ') == std::string::npos,
               Printable(input));
    FUZZ_CHECK(!request->path.empty() && request->path.front() == '/', Printable(input));
    FUZZ_CHECK(request->path.find('?') == std::string::npos, Printable(input));
    CheckTokenRule(request->authorization, input);
    CheckQueryValues(request->query, input);
  }
  CheckTokenRule(input, input);
  CheckQueryValues(input, input);
  const std::string answer =
      FormatHttpResponse(HttpResponse{200, "text/plain", std::string(input)}, false);
  FUZZ_CHECK(answer.find("Content-Length: " + std::to_string(size) + "\r\n") != std::string::npos,
             Printable(input));
  FUZZ_CHECK(answer.ends_with(input), Printable(input));
  return 0;
}
