// Between Boost.Beast's HTTP messages and muster's (http_request.h): Beast
// parses every request head and serializes every answer; this file says
// which heads muster takes, with what limits, and which headers each answer
// carries. HttpServer reads and writes with these; ParseHttpRequestHead and
// FormatHttpResponse (http_request.h) are the same rules on whole strings.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <optional>

#include "rendezvous/net/http_request.h"

namespace muster::rdzv {

// The most bytes a request head may take: request line, headers and the
// blank line. Beast's header_limit bounds the request line and the fields
// each on its own, so HttpServer counts what it reads and
// ParseHttpRequestHead what it parsed; a longer head is
// boost::beast::http::error::header_limit, or nullopt.
inline constexpr size_t kMaxHttpHeadBytes = 8192;

// Reads one request head; a body is never read: GET and HEAD carry none,
// and other methods are refused from their head alone.
using HttpHeadParser = boost::beast::http::request_parser<boost::beast::http::empty_body>;
// One answer, as Beast's serializer writes it.
using HttpAnswer = boost::beast::http::response<boost::beast::http::string_body>;

// Sets `parser`'s limits: Beast's header_limit to kMaxHttpHeadBytes, and no limit
// on a body's declared length (it is never read: "POST" with a body gets
// 405 like any other POST, not a complaint about its size).
// REQUIRES: `parser` has read nothing yet.
void LimitHttpHeadParser(HttpHeadParser& parser);

// What muster reads of a head Beast parsed: nullopt when it is not
// HTTP/1.x ("GET / HTTP/2.0") or its target is not a path ("GET x
// HTTP/1.1"). The first Authorization header is the one presented.
std::optional<HttpRequest> RequestFromHead(const boost::beast::http::request_header<>& head);

// `response` as HTTP/1.0 with Content-Type, Content-Length,
// Cache-Control: no-store and Connection: close, and WWW-Authenticate:
// Basic on a 401 (so a browser asks for the token). With `head_only` the
// body is left out and Content-Length still gives its size.
HttpAnswer MakeHttpAnswer(const HttpResponse& response, bool head_only);

}  // namespace muster::rdzv
