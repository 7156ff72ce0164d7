#include "rendezvous/daemon/daemon_http.h"

#include <string>

#include "rendezvous/daemon/status_page_html.h"
#include "rendezvous/daemon/status_page_json.h"

namespace muster::rdzv {

HttpResponse AnswerDaemonHttp(const RendezvousServer& server, const HttpRequest& request) {
  if (request.path == "/") {
    return HttpResponse{200, "text/html; charset=utf-8", std::string(StatusPageHtml())};
  }
  if (request.path == "/status.json") {
    return HttpResponse{200, "application/json",
                        StatusPageJson(server.PageSnapshot(), ParseStatusPageQuery(request.query))};
  }
  if (request.path == "/metrics") {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", server.MetricsText()};
  }
  return HttpResponse{404, "text/plain; charset=utf-8",
                      "not found: try /, /status.json or /metrics\n"};
}

}  // namespace muster::rdzv
