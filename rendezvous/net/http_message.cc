#include "rendezvous/net/http_message.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/write.hpp>
#include <sstream>
#include <string>
#include <string_view>

namespace muster::rdzv {
namespace http = boost::beast::http;

void LimitHttpHeadParser(HttpHeadParser& parser) {
  parser.header_limit(static_cast<uint32_t>(kMaxHttpHeadBytes));
  parser.body_limit(boost::none);
}

std::optional<HttpRequest> RequestFromHead(const http::request_header<>& head) {
  const std::string_view target = head.target();
  // Beast reads any "HTTP/d.d"; 11 is HTTP/1.1.
  if (head.version() / 10 != 1 || target.empty() || target.front() != '/') return std::nullopt;
  HttpRequest request;
  request.method = std::string(head.method_string());
  const size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));
  request.authorization = std::string(head[http::field::authorization]);
  return request;
}

HttpAnswer MakeHttpAnswer(const HttpResponse& response, bool head_only) {
  HttpAnswer answer(static_cast<http::status>(response.status), 10);
  answer.set(http::field::content_type, response.content_type);
  answer.content_length(response.body.size());
  answer.set(http::field::cache_control, "no-store");
  answer.set(http::field::connection, "close");
  if (response.status == 401) answer.set(http::field::www_authenticate, "Basic realm=\"musterd\"");
  if (!head_only) answer.body() = response.body;
  return answer;
}

std::optional<HttpRequest> ParseHttpRequestHead(std::string_view head) {
  // Callers may leave off the blank line (or the last line's CRLF) that
  // ends a head on the wire.
  std::string text(head);
  if (!text.ends_with("\r\n\r\n")) text += text.ends_with("\r\n") ? "\r\n" : "\r\n\r\n";
  HttpHeadParser parser;
  LimitHttpHeadParser(parser);
  boost::system::error_code ec;
  // Beast's header_limit bounds the request line and the fields each on
  // its own; the whole head is bounded here, as HttpServer bounds its reads.
  const size_t head_bytes = parser.put(boost::asio::buffer(text), ec);
  if (ec || !parser.is_header_done() || head_bytes > kMaxHttpHeadBytes) return std::nullopt;
  return RequestFromHead(parser.get());
}

std::string FormatHttpResponse(const HttpResponse& response, bool head_only) {
  std::ostringstream out;
  out << MakeHttpAnswer(response, head_only);  // Beast's serializer
  return out.str();
}

}  // namespace muster::rdzv
