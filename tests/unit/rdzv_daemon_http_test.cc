// What musterd answers on its --metrics-port (daemon_http.h): the status
// page, its JSON, the metrics, and 404 for the rest.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rendezvous/daemon/daemon_http.h"

namespace muster::rdzv {
namespace {

std::unique_ptr<RendezvousServer> StartHttpServer(boost::asio::io_context& io) {
  ServerOptions options;
  options.host = "127.0.0.1";
  auto server = RendezvousServer::Start(io, options);
  REQUIRE(server.ok());
  return std::move(server).value();
}

TEST_CASE("each path of the metrics port gets its answer", "[rdzv][daemon_http]") {
  boost::asio::io_context io;
  auto server = StartHttpServer(io);
  struct Case {
    std::string path;
    std::string query;
    int status;
    std::string content_type;
    std::string body_has;
  };
  const std::vector<Case> cases = {
      {"/", "", 200, "text/html; charset=utf-8", "<!DOCTYPE html>"},
      {"/status.json", "", 200, "application/json", "{\"events\":[],\"runs\":[]}"},
      {"/status.json", "run=job&limit=5", 200, "application/json", "\"runs\":[]"},
      {"/metrics", "", 200, "text/plain; version=0.0.4; charset=utf-8", "muster_runs 0"},
      {"/index.htm", "", 404, "text/plain; charset=utf-8", "/status.json"},
  };
  for (const Case& k : cases) {
    INFO(k.path << "?" << k.query);
    const HttpResponse response =
        AnswerDaemonHttp(*server, HttpRequest{"GET", k.path, k.query, ""});
    CHECK(response.status == k.status);
    CHECK(response.content_type == k.content_type);
    CHECK_THAT(response.body, Catch::Contains(k.body_has));
  }
  server->Stop();
}

TEST_CASE("the status page is self-contained: it refers to nothing but status.json",
          "[rdzv][daemon_http]") {
  boost::asio::io_context io;
  auto server = StartHttpServer(io);
  std::string page = AnswerDaemonHttp(*server, HttpRequest{"GET", "/", "", ""}).body;
  // The SVG namespace is a name, not an address anything is fetched from.
  const std::string svg_namespace = "\"http://www.w3.org/2000/svg\"";
  for (size_t at; (at = page.find(svg_namespace)) != std::string::npos;) {
    page.erase(at, svg_namespace.size());
  }
  for (const char* outside :
       {"src=", "href=", "<link", "@import", "url(", "<img", "http://", "https://"}) {
    INFO(outside);
    CHECK(page.find(outside) == std::string::npos);
  }
  CHECK(page.find("fetch(\"status.json\"") != std::string::npos);
  server->Stop();
}

}  // namespace
}  // namespace muster::rdzv
