#include "launcher/report/status_command.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <csignal>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common/option_parser.h"
#include "common/printable.h"
#include "common/version.h"
#include "launcher/cli/spec_parsers.h"
#include "launcher/plan/launch_plan.h"
#include "launcher/report/status_endpoint.h"
#include "launcher/report/status_table.h"
#include "rendezvous/net/message_channel.h"
#include "rendezvous/net/token_file.h"
#include "rendezvous/protocol/frame_codec.h"

namespace muster {
namespace asio = boost::asio;

namespace {

constexpr auto kStatusTimeout = std::chrono::seconds(5);

struct StatusArgs {
  std::vector<std::pair<std::string, std::string>> endpoints;  // host, port; in order
  StatusEndpoint endpoint;                                     // what they came from
  std::string run_id;
  std::string token;
  std::shared_ptr<const rdzv::TlsContext> tls;  // null: plain TCP
  bool json = false;
};

constexpr const char* kGroup = "Options";
constexpr OptionSpec kStatusOptions[] = {
    {"rdzv-endpoint", "", 0, OptionKind::kValue, kGroup, "HOST[:PORT][,...]",
     "$PET_RDZV_ENDPOINT, else localhost:29400",
     "The rendezvous to ask: a musterd or an agent serving one (port 29400 unless given), "
     "or every replica of a replicated one, tried in order."},
    {"run-id", "rdzv-id", 0, OptionKind::kValue, kGroup, "ID", "every run", "Show only this run."},
    {"json", "", 0, OptionKind::kSwitch, kGroup, "", "",
     "Print the daemon's status document as JSON instead of a table."},
    {"token-file", "", 0, OptionKind::kValue, kGroup, "FILE",
     "--rdzv-conf's token_file, else PET_RDZV_CONF's, else none",
     "Read the shared secret the daemon requires from FILE."},
    {"rdzv-conf", "", 0, OptionKind::kValue, kGroup, "K=V,...", "$PET_RDZV_CONF",
     "The job's --rdzv-conf: status reads its token_file and TLS keys (tls_ca, and "
     "tls_cert with tls_key for a daemon that asks for client certificates)."},
    {"help", "", 'h', OptionKind::kHelp, kGroup, "", "", "Show this help and exit."},
    {"version", "", 0, OptionKind::kVersion, kGroup, "", "", "Show the version and exit."},
};

constexpr const char* kIntro =
    "usage: muster status [--rdzv-endpoint HOST:PORT[,...]] [--run-id ID] [--json]\n"
    "                     [--token-file FILE] [--rdzv-conf K=V,...]\n"
    "\n"
    "Prints the runs a rendezvous serves, with each node's state, ranks and\n"
    "heartbeat age (--json: the status document). Without --rdzv-endpoint it asks\n"
    "the rendezvous a job started here would use: $PET_RDZV_ENDPOINT, else\n"
    "localhost:29400 (musterd's default port, torchrun's c10d default). A\n"
    "--standalone job's rendezvous is on a free port of its own: name it.\n";

int Usage(const std::string& error) {
  std::cerr << "muster status: error: " << error << "\n";
  return 2;
}

// The arguments, with the defaults a job on this host would use; an error
// line (exit 2) when they are bad.
Result<StatusArgs> ReadStatusArgs(const ParsedOptions& parsed, const EnvLookup& env) {
  StatusArgs a;
  a.endpoint = ChooseStatusEndpoint(parsed.Last("rdzv-endpoint"), env);
  auto endpoints = cli::SplitEndpointList(a.endpoint.text);
  if (!endpoints.ok()) {
    return Status::InvalidArgument(
        (a.endpoint.origin == "default" ? "--rdzv-endpoint" : a.endpoint.origin) + ": " +
        endpoints.status().message());
  }
  for (const HostPort& e : *endpoints) {
    a.endpoints.emplace_back(e.host, std::to_string(e.port.value_or(kDefaultRendezvousPort)));
  }
  if (const std::string* run_id = parsed.Last("run-id")) a.run_id = *run_id;
  a.json = parsed.Given("json");
  const std::string* token_flag = parsed.Last("token-file");
  const std::string* conf_flag = parsed.Last("rdzv-conf");
  // --rdzv-conf stands in for PET_RDZV_CONF.
  const EnvLookup conf_env = [&env,
                              conf_flag](const std::string& name) -> std::optional<std::string> {
    if (conf_flag != nullptr && name == "PET_RDZV_CONF") return *conf_flag;
    return env(name);
  };
  // The TLS settings first: a conf that does not parse stops here, before
  // any token is read.
  auto tls_files = ChooseStatusTls(conf_flag, env);
  if (!tls_files.ok()) return tls_files.status();
  if (auto token_file = ChooseStatusTokenFile(token_flag, conf_env)) {
    const std::string origin = token_flag != nullptr  ? "--token-file"
                               : conf_flag != nullptr ? "--rdzv-conf token_file"
                                                      : "PET_RDZV_CONF token_file";
    auto token = rdzv::ReadTokenFile(*token_file);
    if (!token.ok()) return Status::InvalidArgument(origin + ": " + token.status().message());
    if (auto warning = StatusTokenFileWarning(origin, *token_file)) {
      std::cerr << "muster status: warning: " << *warning << "\n";
    }
    a.token = *token;
  }
  if (tls_files->any()) {
    auto tls = rdzv::TlsContext::ForClient(*tls_files, nullptr);
    if (!tls.ok()) return tls.status();
    a.tls = *tls;
  }
  return a;
}

// One StatusRequest to HOST:PORT: the document, the daemon's refusal, or why
// neither came.
struct Answer {
  std::optional<std::string> reply;
  std::optional<rdzv::Error> refusal;
  std::optional<std::string> failure;
};

// Greets the daemon on `channel` and asks for the status; `answer` gets the
// outcome and `io` stops once the channel closes.
void Converse(rdzv::MessageChannel& channel, Answer& answer, asio::io_context& io,
              const std::string& token, const std::string& run_id) {
  channel.Start({[&answer, &channel](rdzv::Message m) {
                   if (auto* s = std::get_if<rdzv::StatusReply>(&m)) {
                     answer.reply = s->json;
                     channel.Close("done");
                   } else if (auto* e = std::get_if<rdzv::Error>(&m)) {
                     answer.refusal = *e;
                     channel.Close("refused");
                   }
                 },
                 [&answer, &io](const std::string& why, rdzv::ChannelEnd) {
                   if (!answer.reply && !answer.refusal && !answer.failure) answer.failure = why;
                   io.stop();
                 },
                 {}});
  channel.Send(rdzv::Hello{rdzv::kProtocolVersion, token, "muster-status"});
  channel.Send(rdzv::StatusRequest{run_id});
}

Answer Ask(const std::string& host, const std::string& port, const StatusArgs& a) {
  const std::string& token = a.token;
  const std::string& run_id = a.run_id;
  asio::io_context io;
  Answer answer;
  std::shared_ptr<rdzv::MessageChannel> channel;
  asio::ip::tcp::resolver resolver(io);
  auto socket = std::make_shared<asio::ip::tcp::socket>(io);
  resolver.async_resolve(host, port, [&](const boost::system::error_code& ec, auto results) {
    if (ec) {
      answer.failure = "cannot resolve '" + host + "': " + ec.message();
      return;
    }
    asio::async_connect(*socket, results, [&](const boost::system::error_code& cec, const auto&) {
      if (cec) {
        answer.failure = "cannot connect to " + host + ":" + port + ": " + cec.message();
        return;
      }
      channel = std::make_shared<rdzv::MessageChannel>(
          std::move(*socket),
          rdzv::MessageChannel::Limits{rdzv::kMaxStatusReplyFrameBytes, 1u << 20},
          rdzv::MessageChannel::BadInput::kClose, a.tls, host);
      channel->Handshake([&](const std::string& tls_failure, rdzv::ChannelEnd) {
        if (!tls_failure.empty()) {
          answer.failure = "TLS with " + host + ":" + port + " failed: " + tls_failure;
          channel->Close("TLS failed");
          io.stop();
          return;
        }
        Converse(*channel, answer, io, token, run_id);
      });
    });
  });
  io.run_for(kStatusTimeout);
  return answer;
}

}  // namespace

std::string StatusHelpText() { return OptionsHelp(kIntro, kStatusOptions); }

int RunStatusCommand(const std::vector<std::string>& args, const EnvLookup& env) {
  auto parsed = ParseOptions(args, kStatusOptions);
  if (!parsed.ok()) return Usage(parsed.status().message());
  if (parsed->version) {
    std::cout << "muster " << kVersion << "\n";
    return 0;
  }
  if (parsed->help) {
    std::cout << StatusHelpText() << "\n";
    return 0;
  }
  // OpenSSL writes a TLS connection with write(2): a daemon that resets it
  // must not kill this process (tls_stream.h).
  std::signal(SIGPIPE, SIG_IGN);
  auto status_args = ReadStatusArgs(*parsed, env);
  if (!status_args.ok()) return Usage(status_args.status().message());
  const StatusArgs& a = *status_args;

  // Replicas are asked in order until one answers, as agents walk them.
  Answer answer;
  std::string asked;
  for (size_t i = 0; i < a.endpoints.size(); ++i) {
    const auto& [host, port] = a.endpoints[i];
    answer = Ask(host, port, a);
    asked = host + ":" + port;
    if (answer.reply || answer.refusal) break;
    if (i + 1 < a.endpoints.size()) {  // the last one's failure is the verdict below
      std::cerr << "muster status: " << answer.failure.value_or("no answer from " + asked) << "\n";
    }
  }
  if (answer.refusal && answer.refusal->code == rdzv::ErrorCode::kNotLeader &&
      !answer.refusal->leader.empty()) {
    // A standby of a replicated rendezvous: the runs are the leader's.
    std::cerr << "muster status: " << asked << " is a standby; asking the leader "
              << EscapeControlCharacters(answer.refusal->leader) << " (epoch "
              << answer.refusal->epoch << ")\n";
    auto leader = cli::SplitEndpoint(answer.refusal->leader);
    if (!leader.ok() || !leader->port) {
      std::cerr << "muster status: the standby named an unusable leader '"
                << EscapeControlCharacters(answer.refusal->leader) << "'\n";
      return 1;
    }
    answer = Ask(leader->host, std::to_string(*leader->port), a);
  }
  if (!answer.reply) {
    std::cerr << "muster status: "
              << (answer.refusal
                      ? "refused: " + EscapeControlCharacters(answer.refusal->message)
                      : answer.failure.value_or("no answer within " +
                                                std::to_string(kStatusTimeout.count()) + " s"));
    // Say where an endpoint the user did not type came from.
    if (a.endpoint.origin == "default") {
      std::cerr << " (the default endpoint; name the rendezvous with --rdzv-endpoint HOST:PORT)";
    } else if (a.endpoint.origin != "--rdzv-endpoint") {
      std::cerr << " (endpoint from " << a.endpoint.origin << ")";
    }
    std::cerr << "\n";
    return 1;
  }
  const std::optional<std::string>& reply = answer.reply;
  const std::string shown =
      a.json ? StatusJsonForTerminal(*reply) + "\n" : FormatStatusTable(*reply);
  // A document that cannot be shown is the daemon's fault: an error, not a table.
  if (shown.starts_with("unreadable status document") ||
      shown.starts_with("malformed status document")) {
    std::cerr << "muster status: " << shown;
    return 1;
  }
  std::cout << shown;
  return 0;
}

}  // namespace muster
