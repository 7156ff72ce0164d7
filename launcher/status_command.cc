#include "launcher/status_command.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "common/version.h"
#include "launcher/cli/spec_parsers.h"
#include "launcher/launch_plan.h"
#include "rendezvous/net/message_channel.h"
#include "rendezvous/net/token_file.h"
#include "rendezvous/protocol/frame_codec.h"

namespace muster {
namespace asio = boost::asio;

namespace {

constexpr auto kStatusTimeout = std::chrono::seconds(5);

struct StatusArgs {
  std::string host;
  std::string port;
  std::string run_id;
  std::string token;
  bool json = false;
};

constexpr const char* kUsage =
    "usage: muster status --rdzv-endpoint HOST:PORT [--run-id ID] [--json] [--token-file FILE]\n";

int Usage(const std::string& error) {
  std::cerr << "muster status: error: " << error << "\n" << kUsage;
  return 2;
}

}  // namespace

std::string FormatStatusTable(const std::string& status_json) {
  const auto doc = nlohmann::json::parse(status_json, nullptr, false);
  if (doc.is_discarded() || !doc.contains("runs")) return "unreadable status document\n";
  std::ostringstream out;
  if (doc["runs"].empty()) out << "no runs\n";
  for (const auto& run : doc["runs"]) {
    out << "run " << run.value("run_id", "?") << ": " << run.value("state", "?") << ", generation "
        << run.value("generation", 0) << ", nodes " << run["nodes"].size() << " (min "
        << run.value("min_nodes", 0) << ", max " << run.value("max_nodes", 0) << "), restarts "
        << run.value("restart_count", 0) << "/" << run.value("max_restarts", 0) << "\n";
    if (run.contains("message")) out << "  " << run.value("message", "") << "\n";
    char line[256];
    std::snprintf(line, sizeof(line), "  %-28s %-16s %-8s %-7s %-12s %-6s %s\n", "NODE", "HOST",
                  "STATE", "GROUP", "RANKS", "LOCAL", "HEARTBEAT AGE");
    out << line;
    for (const auto& node : run["nodes"]) {
      std::string ranks = "-";
      std::string group = "-";
      if (node.contains("global_ranks")) {
        ranks = std::to_string(node["global_ranks"][0].get<int>()) + ".." +
                std::to_string(node["global_ranks"][1].get<int>());
        group = std::to_string(node.value("group_rank", -1));
      }
      std::snprintf(line, sizeof(line), "  %-28s %-16s %-8s %-7s %-12s %-6d %.2fs%s\n",
                    node.value("node_id", "?").c_str(), node.value("host", "?").c_str(),
                    node.value("state", "?").c_str(), group.c_str(), ranks.c_str(),
                    node.value("local_world_size", 0),
                    static_cast<double>(node.value("heartbeat_age_ms", 0)) / 1000.0,
                    node.value("connected", true) ? "" : " (disconnected)");
      out << line;
    }
  }
  return out.str();
}

int RunStatusCommand(const std::vector<std::string>& args) {
  StatusArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    const std::string& arg = args[i];
    if (arg == "--rdzv-endpoint" || arg == "--rdzv_endpoint") {
      auto v = value();
      if (!v) return Usage(arg + " needs HOST:PORT");
      auto endpoint = cli::SplitEndpoint(*v);
      if (!endpoint.ok()) return Usage("--rdzv-endpoint: " + endpoint.status().message());
      a.host = endpoint->host;
      a.port = std::to_string(endpoint->port.value_or(kDefaultRendezvousPort));
    } else if (arg == "--run-id" || arg == "--run_id" || arg == "--rdzv-id" || arg == "--rdzv_id") {
      auto v = value();
      if (!v) return Usage(arg + " needs a value");
      a.run_id = *v;
    } else if (arg == "--token-file" || arg == "--token_file") {
      auto v = value();
      if (!v) return Usage(arg + " needs a file");
      auto token = rdzv::ReadTokenFile(*v);
      if (!token.ok()) return Usage(token.status().message());
      a.token = *token;
    } else if (arg == "--json") {
      a.json = true;
    } else if (arg == "--version") {
      std::cout << "muster " << kVersion << "\n";
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << kUsage
                << "Prints the runs musterd at HOST:PORT serves, with each node's state, ranks\n"
                   "and heartbeat age (--json: the status document); --run-id: only that run.\n";
      return 0;
    } else {
      return Usage("unknown argument '" + arg + "'");
    }
  }
  if (a.host.empty()) return Usage("--rdzv-endpoint is required");

  asio::io_context io;
  std::optional<std::string> reply;
  std::optional<std::string> failure;  // why no reply came, once known
  std::shared_ptr<rdzv::MessageChannel> channel;
  asio::ip::tcp::resolver resolver(io);
  auto socket = std::make_shared<asio::ip::tcp::socket>(io);
  resolver.async_resolve(a.host, a.port, [&](const boost::system::error_code& ec, auto results) {
    if (ec) {
      failure = "cannot resolve '" + a.host + "': " + ec.message();
      return;
    }
    asio::async_connect(*socket, results, [&](const boost::system::error_code& cec, const auto&) {
      if (cec) {
        failure = "cannot connect to " + a.host + ":" + a.port + ": " + cec.message();
        return;
      }
      channel = std::make_shared<rdzv::MessageChannel>(
          std::move(*socket),
          rdzv::MessageChannel::Limits{rdzv::kMaxStatusReplyFrameBytes, 1u << 20}, false);
      channel->Start({[&](rdzv::Message m) {
                        if (auto* s = std::get_if<rdzv::StatusReply>(&m)) {
                          reply = s->json;
                          channel->Close("done");
                        } else if (auto* e = std::get_if<rdzv::Error>(&m)) {
                          failure = "refused: " + e->message;
                          channel->Close("refused");
                        }
                      },
                      [&](const std::string& why, bool) {
                        if (!reply && !failure) failure = why;
                        io.stop();
                      },
                      {}});
      channel->Send(rdzv::Hello{rdzv::kProtocolVersion, a.token, "muster-status"});
      channel->Send(rdzv::StatusRequest{a.run_id});
    });
  });
  io.run_for(kStatusTimeout);
  if (!reply) {
    std::cerr << "muster status: "
              << failure.value_or("no answer within " + std::to_string(kStatusTimeout.count()) +
                                  " s")
              << "\n";
    return 1;
  }
  std::cout << (a.json ? *reply + "\n" : FormatStatusTable(*reply));
  return 0;
}

}  // namespace muster
