#include "rendezvous/daemon/daemon_http.h"

namespace muster::rdzv {

HttpResponse AnswerDaemonHttp(const RendezvousServer& server, const HttpRequest& request) {
  if (request.path == "/metrics") {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", server.MetricsText()};
  }
  return HttpResponse{404, "text/plain; charset=utf-8", "not found: try /metrics\n"};
}

}  // namespace muster::rdzv
