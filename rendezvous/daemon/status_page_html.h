// StatusPageHtml: the status page musterd serves at `/` on its
// --metrics-port (rendezvous/daemon/status_page.html, embedded at build
// time). One self-contained document: inline style and script, nothing
// fetched but /status.json (status_page_json.h), which it polls every second.
#pragma once

#include <string_view>

namespace muster::rdzv {

// The whole HTML document. Static storage.
std::string_view StatusPageHtml();

}  // namespace muster::rdzv
