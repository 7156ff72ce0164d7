// What musterd answers on its --metrics-port (net/http_server.h serves it),
// read-only:
//   GET /             the status page (status_page_html.h), HTML
//   GET /status.json  the document it is drawn from (status_page_json.h), for
//                     the query ?run=R&offset=O&limit=L
//   GET /metrics      Prometheus text format (RendezvousServer::MetricsText)
// Anything else: 404 naming the paths there are.
//
// Thread-safety: call on the server's thread.
#pragma once

#include "rendezvous/daemon/rendezvous_server.h"
#include "rendezvous/net/http_request.h"

namespace muster::rdzv {

HttpResponse AnswerDaemonHttp(const RendezvousServer& server, const HttpRequest& request);

}  // namespace muster::rdzv
