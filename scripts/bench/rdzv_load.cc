// rdzv_load: the load generator of the rendezvous "Scale" benchmark
// (scripts/bench/rdzv_scale.sh). It simulates N agents against a real musterd
// over loopback, speaking the real protocol through muster_rdzv_protocol's
// Encode/Decode/FrameDecoder, and prints one JSON line of results.
//
//   rdzv_load --host 127.0.0.1 --port P --nodes 10000 --musterd-pid PID
//             [--interval-ms 500] [--steady-seconds 10] [--warmup-seconds 1]
//             [--settle-seconds 60] [--timeout-seconds 300] [--run-id bench]
//             [--tls-ca F --tls-cert F --tls-key F] [--until-assigned]
//             [--progress-steps-per-second R]
//
// Phases, one connection per simulated agent:
//   1. connect (at most 256 connects and handshakes in flight) and say Hello
//      (version 1, empty token); wait for every Welcome. With --tls-ca each
//      agent first runs a TLS client handshake on its non-blocking socket (the
//      agent's own TLS settings: muster's TlsContext, presenting --tls-cert
//      when given, verifying the daemon's certificate against --host), then
//      speaks through SSL_read/SSL_write; a refused handshake ends the run,
//      naming the agent and OpenSSL's reason;
//   2. send every Join {node "n<i>", local_world_size 1, min=max=N} in one
//      burst; from then on each agent heart-beats every interval, agents
//      spread evenly over the interval (agent i at offset i*interval/N), with
//      generation 0 until its assignment arrives (as a real agent does while
//      waiting). Measured: last Join sent -> first / last AssignmentMessage
//      received (the round closes at MAX = N);
//   3. once every agent is assigned, `--warmup-seconds` of heart-beating, then
//      up to `--settle-seconds` until the daemon keeps up (below; it may still
//      be working off a backlog from the round), then `--steady-seconds`
//      during which the daemon's utime+stime (/proc/PID/stat) is sampled;
//      then its VmRSS/VmHWM (/proc/PID/status). With --until-assigned the
//      run ends when every agent has its assignment (the join benchmark,
//      scripts/bench/tls_join.sh). "Keeps up": 99% of the agents
//      have at most 2 heartbeats without an ack. musterd acks every heartbeat
//      when the interval is at least fence_timeout / 3 (the default 0.5 s
//      is), so a daemon running behind shows as a growing backlog; with a
//      shorter interval it acks only some heartbeats and the judgment does
//      not apply ("daemon_kept_up" is then false whatever the daemon does).
//
// With --progress-steps-per-second R > 0, an assigned agent's heartbeats
// carry its progress (Heartbeat::step) as real agents' do once their workers
// report steps: 1 + R x the seconds since its assignment, the same rate on
// every agent (so no straggler is flagged). Each such heartbeat is encoded
// anew, by hand in the form Encode() writes (checked against Encode() at the
// start), so the generator's own cost stays small.
//
// Per agent, the phases of its join are timed and their medians printed
// ("phase_ms"): tcp_connect (connect started -> connected), tls_handshake
// (-> the client's handshake done: it has sent its Finished; the daemon
// checks the client certificate when it reads it, which falls in the next
// phase), hello_to_welcome (Hello sent -> Welcome read), join_to_assignment
// (Join sent -> AssignmentMessage read), and connect_to_assignment (the
// whole join). With one agent they are its own.
//
// Exit status: 0 when every agent was assigned and none was refused or
// dropped; 1 otherwise (the JSON line says why in "error"); 2 on bad flags.
//
// Cost: single-threaded Asio. The daemon shares the machine's cores with this
// process, so the steady phase avoids per-message handlers: a 2 ms tick sends
// the heartbeats that are due with one non-blocking write each, and drains the
// agent's socket (its previous HeartbeatAck) with one non-blocking read just
// before. Async read waits are used only until an agent's assignment arrives;
// then the agent's socket leaves the reactor's epoll set and is only polled by
// the tick. On loopback the daemon's send runs this side's TCP receive in the
// daemon's system call, and with the socket in an epoll set that includes
// waking this process once per HeartbeatAck: a cost of the simulation (real
// agents are on other hosts), and 20,000 wake-ups a second at 10,000 agents.
// The rest of this side's receive path is still charged to the daemon.
// Under TLS a tick's drain reads until OpenSSL wants more bytes (one record
// per SSL_read), and every SSL object keeps buffers only while a record is in
// flight (release-buffers mode, as the agents' context): what stays is each
// client session, about 25 KiB (250 MiB at 10,000 agents).
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "rendezvous/net/tls_context.h"
#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/message_codec.h"
#include "rendezvous/protocol/messages.h"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using muster::rdzv::AssignmentMessage;
using muster::rdzv::Decode;
using muster::rdzv::Encode;
using muster::rdzv::FrameDecoder;
using muster::rdzv::FrameResult;
using muster::rdzv::Message;

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  int nodes = 1000;
  int interval_ms = 500;  // musterd's default keep_alive_interval
  double steady_seconds = 10;
  double warmup_seconds = 1;
  double settle_seconds = 60;
  double timeout_seconds = 300;
  int musterd_pid = 0;
  std::string run_id = "bench";
  muster::rdzv::TlsClientFiles tls{{"", "--tls-ca"}, {"", "--tls-cert"}, {"", "--tls-key"}};
  bool until_assigned = false;
  double progress_steps_per_second = 0;  // 0: heartbeats carry no step
  // With progress: every other heartbeat (once a second at the default
  // interval, as an agent whose workers report compute times sends them)
  // also carries this many ranks' compute times, off the fast path. 0: none.
  int compute_ranks = 0;
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct CpuTimes {
  double user = 0;    // seconds
  double system = 0;  // seconds
  double total() const { return user + system; }
};

// utime and stime of `pid`, from /proc/PID/stat; nullopt if unreadable.
std::optional<CpuTimes> ProcessCpu(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name may hold spaces: fields are counted after its ')'.
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size()) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Field 3 (state) is the first after ')'; utime and stime are fields 14, 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  return CpuTimes{static_cast<double>(utime) / tick, static_cast<double>(stime) / tick};
}

// A "VmRSS:"-style line of /proc/PID/status, in MiB; -1 if absent.
double StatusMiB(int pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      return std::stod(line.substr(key.size() + 1)) / 1024.0;  // the value is in kB
    }
  }
  return -1;
}

double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return sec(usage.ru_utime) + sec(usage.ru_stime);
}

class LoadGenerator {
 public:
  // `tls`: null for plain TCP.
  LoadGenerator(asio::io_context& io, Flags flags,
                std::shared_ptr<const muster::rdzv::TlsContext> tls)
      : io_(io),
        flags_(std::move(flags)),
        tls_(std::move(tls)),
        tick_(io),
        phase_timer_(io),
        deadline_(io) {}

  int Run() {
    tcp::resolver resolver(io_);
    boost::system::error_code ec;
    auto endpoints = resolver.resolve(flags_.host, std::to_string(flags_.port), ec);
    if (ec || endpoints.empty()) {
      return Finish("cannot resolve " + flags_.host + ": " + ec.message());
    }
    endpoint_ = endpoints.begin()->endpoint();
    agents_.reserve(static_cast<size_t>(flags_.nodes));
    for (int i = 0; i < flags_.nodes; ++i) {
      auto agent = std::make_unique<Agent>(io_, i);
      agent->heartbeat = Encode(muster::rdzv::Heartbeat{flags_.run_id, NodeId(i), 0, 0, {}});
      agents_.push_back(std::move(agent));
    }
    if (flags_.progress_steps_per_second > 0) {
      // The hand-made frame must be what a real agent sends.
      const muster::rdzv::Heartbeat sample{flags_.run_id, NodeId(0), 7, 12345, {}};
      if (ProgressFrame(0, 7, 12345) != Encode(sample)) {
        return Finish("the hand-encoded heartbeat differs from Encode(): run id '" + flags_.run_id +
                      "' needs escaping?");
      }
    }
    deadline_.expires_after(Seconds(flags_.timeout_seconds));
    deadline_.async_wait([this](const boost::system::error_code& e) {
      if (!e && !done_) Finish("timed out in phase '" + std::string(phase_) + "'");
    });
    t_start_ = Clock::now();
    phase_ = "connect";
    for (int i = 0; i < kConnectsInFlight && next_connect_ < flags_.nodes; ++i) ConnectNext();
    io_.run();
    return exit_code_;
  }

 private:
  static constexpr int kConnectsInFlight = 256;
  static constexpr auto kTickPeriod = std::chrono::milliseconds(2);

  struct Agent {
    Agent(asio::io_context& io, int i) : socket(io), index(i) {}
    ~Agent() {
      SSL_free(ssl);  // the fd is not its to close
      if (polled_fd >= 0) ::close(polled_fd);
    }
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;
    tcp::socket socket;
    int polled_fd = -1;  // once assigned: released from `socket`, polled by the tick
    SSL* ssl = nullptr;  // under TLS, from the handshake on
    FrameDecoder decoder;
    int index;
    bool open = false;
    bool assigned = false;  // after this, reads happen in the heartbeat tick
    uint64_t generation = 0;
    uint64_t heartbeats_sent = 0;
    uint64_t acks = 0;
    std::string heartbeat;  // the encoded frame for the current generation
    std::string unsent;     // bytes the socket did not take yet
    // The join's phases (see the header).
    Clock::time_point t_connect, t_connected, t_handshaken, t_hello, t_welcome, t_join, t_assigned;
  };

  static std::string NodeId(int i) { return "n" + std::to_string(i); }
  // Agent i's heartbeat of `generation` carrying `step`, as Encode() writes it
  // (keys in byte order, no spaces) for a run id that needs no escaping.
  // A heartbeat with compute times: 20-30 ms per rank, a little apart.
  std::string ComputeFrame(int i, uint64_t generation, uint64_t step) const {
    std::vector<uint64_t> compute_us;
    for (int r = 0; r < flags_.compute_ranks; ++r) {
      compute_us.push_back(20'000 + static_cast<uint64_t>((i * 7 + r * 13) % 10'000));
    }
    return Encode(muster::rdzv::Heartbeat{flags_.run_id, NodeId(i), generation, step, compute_us});
  }

  std::string ProgressFrame(int i, uint64_t generation, uint64_t step) const {
    const std::string payload = "{\"generation\":" + std::to_string(generation) +
                                ",\"node_id\":\"" + NodeId(i) + "\",\"run_id\":\"" + flags_.run_id +
                                "\",\"step\":" + std::to_string(step) + "}";
    return muster::rdzv::EncodeFrame(static_cast<uint8_t>(muster::rdzv::MessageType::kHeartbeat),
                                     payload);
  }
  static Clock::duration Seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  void ConnectNext() {
    Agent& agent = *agents_[static_cast<size_t>(next_connect_++)];
    agent.t_connect = Clock::now();
    agent.socket.async_connect(endpoint_, [this, &agent](const boost::system::error_code& ec) {
      if (done_) return;
      agent.t_connected = agent.t_handshaken = Clock::now();
      if (ec) {
        Finish("connect of agent " + std::to_string(agent.index) + " failed: " + ec.message());
        return;
      }
      agent.open = true;
      boost::system::error_code ignored;
      agent.socket.set_option(tcp::no_delay(true), ignored);
      agent.socket.non_blocking(true, ignored);
      if (!tls_) return Greet(agent);
      agent.ssl = SSL_new(tls_->native());
      if (agent.ssl == nullptr) {
        Finish("SSL_new failed: " + TlsReason(nullptr, 0));
        return;
      }
      SSL_set_fd(agent.ssl, agent.socket.native_handle());
      SSL_set_connect_state(agent.ssl);
      // As the agent does (TlsStream): an IP address is matched against the
      // certificate's IP entries, a name against its DNS names.
      boost::system::error_code not_ip;
      asio::ip::make_address(flags_.host, not_ip);
      if (!not_ip) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(agent.ssl), flags_.host.c_str());
      } else {
        SSL_set1_host(agent.ssl, flags_.host.c_str());
        SSL_set_tlsext_host_name(agent.ssl, flags_.host.c_str());
      }
      Handshake(agent);
    });
  }

  // One step of the client handshake; waits on the socket while OpenSSL
  // wants it, greets once done.
  void Handshake(Agent& agent) {
    ERR_clear_error();
    const int ret = SSL_do_handshake(agent.ssl);
    if (ret == 1) {
      agent.t_handshaken = Clock::now();
      return Greet(agent);
    }
    const int error = SSL_get_error(agent.ssl, ret);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
      ++tls_failures_;
      Finish("TLS handshake of agent " + std::to_string(agent.index) +
             " failed: " + TlsReason(agent.ssl, ret));
      return;
    }
    agent.socket.async_wait(
        error == SSL_ERROR_WANT_WRITE ? tcp::socket::wait_write : tcp::socket::wait_read,
        [this, &agent](const boost::system::error_code& ec) {
          if (done_ || !agent.open) return;
          if (ec) {
            Finish("TLS handshake of agent " + std::to_string(agent.index) + ": " + ec.message());
            return;
          }
          Handshake(agent);
        });
  }

  // Why OpenSSL refused: its latest error's reason, and the verification
  // result when the peer's certificate failed it.
  static std::string TlsReason(SSL* ssl, int ret) {
    if (ssl != nullptr && SSL_get_error(ssl, ret) == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      ERR_clear_error();
      return errno != 0 ? std::string("socket: ") + std::strerror(errno)
                        : std::string("the daemon closed the connection");
    }
    const unsigned long code = ERR_get_error();
    ERR_clear_error();
    char text[256] = "unknown TLS error";
    if (code != 0) ERR_error_string_n(code, text, sizeof text);
    std::string reason = text;
    // "error:0A000086:SSL routines::certificate verify failed": the reason is the last field.
    if (const size_t colon = reason.rfind(':');
        colon != std::string::npos && colon + 1 < reason.size())
      reason = reason.substr(colon + 1);
    if (ssl != nullptr && SSL_get_verify_result(ssl) != X509_V_OK) {
      reason += std::string(": ") + X509_verify_cert_error_string(SSL_get_verify_result(ssl));
    }
    return reason;
  }

  void Greet(Agent& agent) {
    muster::rdzv::Hello hello;
    hello.agent_id = "rdzv_load:" + std::to_string(getpid()) + ":" + std::to_string(agent.index);
    agent.t_hello = Clock::now();
    Send(agent, Encode(hello));
    WaitReadable(agent);
    if (next_connect_ < flags_.nodes) ConnectNext();
  }

  // Writes what the socket takes now; keeps the rest and flushes it when the
  // socket becomes writable.
  // Non-blocking I/O on either form of the agent's socket; would_block when
  // nothing could be moved.
  size_t WriteSome(Agent& agent, std::string_view bytes, boost::system::error_code& ec) {
    if (agent.ssl != nullptr) {
      ERR_clear_error();
      const int n = SSL_write(agent.ssl, bytes.data(), static_cast<int>(bytes.size()));
      return TlsResult(agent, n, ec);
    }
    if (agent.polled_fd < 0)
      return agent.socket.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
    return RawResult(
        ::send(agent.polled_fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL), ec);
  }
  size_t ReadSome(Agent& agent, boost::system::error_code& ec) {
    if (agent.ssl != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(agent.ssl, read_buffer_.data(), static_cast<int>(read_buffer_.size()));
      return TlsResult(agent, n, ec);
    }
    if (agent.polled_fd < 0) return agent.socket.read_some(asio::buffer(read_buffer_), ec);
    return RawResult(
        ::recv(agent.polled_fd, read_buffer_.data(), read_buffer_.size(), MSG_DONTWAIT), ec);
  }
  // SSL_read/SSL_write's result as RawResult's: would_block while OpenSSL
  // wants the socket; a TLS failure is protocol_error, its reason in
  // tls_failure_.
  size_t TlsResult(Agent& agent, int n, boost::system::error_code& ec) {
    if (n > 0) {
      ec = {};
      return static_cast<size_t>(n);
    }
    switch (SSL_get_error(agent.ssl, n)) {
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        ec = asio::error::would_block;
        return 0;
      case SSL_ERROR_ZERO_RETURN:
        ec = asio::error::eof;
        return 0;
      case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
          ec = errno == 0 ? boost::system::error_code(asio::error::eof)
                          : boost::system::error_code(errno, boost::system::system_category());
          return 0;
        }
        break;
      default:
        break;
    }
    tls_failure_ = TlsReason(agent.ssl, n);
    ec = boost::system::errc::make_error_code(boost::system::errc::protocol_error);
    return 0;
  }
  static size_t RawResult(ssize_t n, boost::system::error_code& ec) {
    if (n >= 0) {
      ec = {};
      if (n == 0) ec = asio::error::eof;
      return static_cast<size_t>(n);
    }
    ec = errno == EAGAIN || errno == EWOULDBLOCK
             ? boost::system::error_code(asio::error::would_block)
             : boost::system::error_code(errno, boost::system::system_category());
    return 0;
  }

  void Send(Agent& agent, std::string_view bytes) {
    if (!agent.open) return;
    if (!agent.unsent.empty()) {
      agent.unsent.append(bytes);
      return;
    }
    boost::system::error_code ec;
    while (!bytes.empty()) {
      const size_t n = WriteSome(agent, bytes, ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) break;
      if (ec) return Dropped(agent, "write: " + ec.message());
      bytes.remove_prefix(n);
    }
    if (bytes.empty()) return;
    agent.unsent.assign(bytes);
    if (agent.polled_fd >= 0) return;  // the tick retries
    agent.socket.async_wait(tcp::socket::wait_write,
                            [this, &agent](const boost::system::error_code& ec2) {
                              if (done_ || ec2 || !agent.open) return;
                              FlushUnsent(agent);
                            });
  }

  void FlushUnsent(Agent& agent) {
    std::string rest = std::move(agent.unsent);
    agent.unsent.clear();
    Send(agent, rest);
  }

  void WaitReadable(Agent& agent) {
    agent.socket.async_wait(tcp::socket::wait_read,
                            [this, &agent](const boost::system::error_code& ec) {
                              if (done_ || ec || !agent.open) return;
                              Drain(agent);
                              if (agent.open && !agent.assigned) WaitReadable(agent);
                            });
  }

  // Reads everything the socket holds now and handles each message.
  void Drain(Agent& agent) {
    for (;;) {
      boost::system::error_code ec;
      const size_t n = ReadSome(agent, ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) return;
      if (ec == boost::system::errc::protocol_error) return Dropped(agent, "TLS: " + tls_failure_);
      if (ec) return Dropped(agent, ec == asio::error::eof ? "closed by the daemon" : ec.message());
      agent.decoder.Feed(std::string_view(read_buffer_.data(), n));
      for (;;) {
        FrameResult frame = agent.decoder.Next();
        if (frame.state == FrameResult::kNeedMore) break;
        if (frame.state == FrameResult::kError) {
          return Dropped(agent, "bad frame: " + frame.message);
        }
        auto message = Decode(frame.type, frame.payload);
        if (!message.ok()) return Dropped(agent, "bad message: " + message.status().message());
        OnMessage(agent, *message);
        if (done_ || !agent.open) return;
      }
      // A short read took everything that was there: spare the EAGAIN read.
      // Not under TLS: SSL_read returns one record, and more may wait.
      if (agent.ssl == nullptr && n < read_buffer_.size()) return;
    }
  }

  // Agents with at most 2 heartbeats still unanswered (see the header).
  double KeptUpFraction() const {
    size_t kept_up = 0;
    for (const auto& agent : agents_) {
      if (agent->assigned && agent->heartbeats_sent <= agent->acks + 2) ++kept_up;
    }
    return agents_.empty() ? 0.0
                           : static_cast<double>(kept_up) / static_cast<double>(agents_.size());
  }

  void OnMessage(Agent& agent, const Message& message) {
    if (std::holds_alternative<muster::rdzv::HeartbeatAck>(message)) {
      ++agent.acks;
      ++acks_;
    } else if (std::holds_alternative<muster::rdzv::Welcome>(message)) {
      agent.t_welcome = Clock::now();
      if (++welcomed_ == flags_.nodes) asio::post(io_, [this] { JoinBurst(); });
    } else if (std::holds_alternative<muster::rdzv::Waiting>(message)) {
      ++waitings_;
    } else if (const auto* a = std::get_if<AssignmentMessage>(&message)) {
      OnAssignment(agent, a->assignment);
    } else if (const auto* e = std::get_if<muster::rdzv::Error>(&message)) {
      if (errors_++ == 0)
        first_error_ = NodeId(agent.index) + ": " + std::string(e->code_name()) + ": " + e->message;
    } else if (std::holds_alternative<muster::rdzv::RunEnded>(message)) {
      Finish("the daemon ended the run");
    }
  }

  void OnAssignment(Agent& agent, const muster::rdzv::Assignment& a) {
    const auto now = Clock::now();
    if (a.group_world_size != flags_.nodes && bad_assignments_++ == 0) {
      first_error_ = NodeId(agent.index) + ": assignment with group_world_size " +
                     std::to_string(a.group_world_size);
    }
    if (a.generation != agent.generation) {
      agent.generation = a.generation;
      agent.heartbeat =
          Encode(muster::rdzv::Heartbeat{flags_.run_id, NodeId(agent.index), a.generation, 0, {}});
    }
    if (agent.assigned) {
      ++repeated_assignments_;  // a later generation, or a repeat: counted, not timed
      return;
    }
    agent.assigned = true;
    agent.t_assigned = now;
    boost::system::error_code ec;
    const int fd = agent.socket.release(ec);  // cancels its waits; the tick polls it now
    if (!ec) agent.polled_fd = fd;
    if (assigned_++ == 0) t_first_assignment_ = now;
    if (assigned_ == flags_.nodes) {
      t_last_assignment_ = now;
      daemon_cpu_round_end_ = ProcessCpu(flags_.musterd_pid);
      if (flags_.until_assigned) {
        Finish("");
        return;
      }
      StartSteady();
    }
  }

  void JoinBurst() {
    phase_ = "join";
    t_connected_ = Clock::now();
    daemon_cpu_join_start_ = ProcessCpu(flags_.musterd_pid);
    t_first_join_ = Clock::now();
    for (auto& agent : agents_) {
      muster::rdzv::Join join;
      join.run_id = flags_.run_id;
      join.node_id = NodeId(agent->index);
      join.host = "sim-" + std::to_string(agent->index);
      join.local_world_size = 1;
      join.min_nodes = flags_.nodes;
      join.max_nodes = flags_.nodes;
      join.max_restarts = 0;
      join.store_addr = "127.0.0.1";
      join.store_port = 10000 + agent->index % 50000;
      agent->t_join = Clock::now();
      Send(*agent, Encode(join));
    }
    t_last_join_ = Clock::now();
    // Real agents heart-beat while they wait for the round to close.
    heartbeat_base_ = *t_last_join_;
    Tick();
  }

  // The heartbeat of agent i in cycle k is due at base + k*interval + i*interval/N.
  Clock::time_point DueAt(uint64_t slot) const {
    const uint64_t n = static_cast<uint64_t>(flags_.nodes);
    const auto interval =
        std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(flags_.interval_ms));
    return heartbeat_base_ + interval * static_cast<int64_t>(slot / n) +
           interval * static_cast<int64_t>(slot % n) / static_cast<int64_t>(n);
  }

  void Tick() {
    if (done_) return;
    const auto now = Clock::now();
    while (DueAt(next_slot_) <= now) {
      Agent& agent = *agents_[next_slot_ % static_cast<uint64_t>(flags_.nodes)];
      ++next_slot_;
      if (!agent.open) continue;
      if (agent.assigned) Drain(agent);  // the acks of earlier heartbeats
      if (done_) return;
      if (!agent.open) continue;
      if (agent.polled_fd >= 0 && !agent.unsent.empty()) FlushUnsent(agent);
      if (!agent.open) continue;
      if (!agent.unsent.empty()) {
        ++heartbeats_skipped_;  // the daemon is not reading this socket
        continue;
      }
      if (flags_.progress_steps_per_second > 0 && agent.assigned) {
        const double seconds = std::chrono::duration<double>(now - agent.t_assigned).count();
        const auto step =
            1 + static_cast<uint64_t>(std::max(0.0, seconds) * flags_.progress_steps_per_second);
        if (flags_.compute_ranks > 0 && agent.heartbeats_sent % 2 == 1) {
          Send(agent, ComputeFrame(agent.index, agent.generation, step));
        } else {
          Send(agent, ProgressFrame(agent.index, agent.generation, step));
        }
      } else {
        Send(agent, agent.heartbeat);
      }
      ++heartbeats_sent_;
      if (agent.assigned) ++agent.heartbeats_sent;
    }
    tick_.expires_after(kTickPeriod);
    tick_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) Tick();
    });
  }

  void StartSteady() {
    phase_ = "warmup";
    t_settle_start_ = Clock::now();
    phase_timer_.expires_after(Seconds(flags_.warmup_seconds));
    phase_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !done_) Settle();
    });
  }

  // Waits until the daemon keeps up, so the sampled window is the steady
  // state and not the daemon working off a backlog from the round; gives up
  // after --settle-seconds.
  void Settle() {
    phase_ = "settle";
    phase_timer_.expires_after(std::chrono::seconds(1));
    phase_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || done_) return;
      const bool caught_up = KeptUpFraction() >= 0.99;
      if (!caught_up && Clock::now() - t_settle_start_ < Seconds(flags_.settle_seconds)) {
        Settle();
      } else {
        Steady();
      }
    });
  }

  void Steady() {
    phase_ = "steady";
    t_steady_start_ = Clock::now();
    daemon_cpu_steady_start_ = ProcessCpu(flags_.musterd_pid);
    own_cpu_steady_start_ = OwnCpuSeconds();
    acks_steady_start_ = acks_;
    sent_steady_start_ = heartbeats_sent_;
    phase_timer_.expires_after(Seconds(flags_.steady_seconds));
    phase_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || done_) return;
      t_steady_end_ = Clock::now();
      daemon_cpu_steady_end_ = ProcessCpu(flags_.musterd_pid);
      own_cpu_steady_end_ = OwnCpuSeconds();
      acks_steady_end_ = acks_;
      sent_steady_end_ = heartbeats_sent_;
      Finish("");
    });
  }

  void Dropped(Agent& agent, std::string why) {
    if (!agent.open) return;
    // Under TLS, before its Welcome: the daemon refused the client
    // certificate (TLS 1.3 checks it after the client's handshake is done).
    // Its alert may wait behind a write that found the socket closed.
    const bool refused = tls_ && agent.t_welcome == Clock::time_point{};
    if (refused && agent.ssl != nullptr && why.rfind("TLS: ", 0) != 0) {
      boost::system::error_code ec;
      ReadSome(agent, ec);
      if (ec == boost::system::errc::protocol_error) why = "TLS: " + tls_failure_;
    }
    agent.open = false;
    boost::system::error_code ignored;
    SSL_free(agent.ssl);
    agent.ssl = nullptr;
    agent.socket.close(ignored);
    if (agent.polled_fd >= 0) ::close(agent.polled_fd);
    agent.polled_fd = -1;
    if (dropped_++ == 0) first_drop_ = NodeId(agent.index) + ": " + why;
    if (refused) {  // the run cannot complete
      ++tls_failures_;
      Finish("agent " + std::to_string(agent.index) + " refused before its Welcome: " + why);
    }
  }

  // Prints the JSON line and stops; `error` empty means the run completed.
  int Finish(const std::string& error) {
    if (done_) return exit_code_;
    done_ = true;
    nlohmann::json out;
    out["nodes"] = flags_.nodes;
    out["interval_ms"] = flags_.interval_ms;
    out["tls"] = tls_ != nullptr;
    out["progress"] = flags_.progress_steps_per_second > 0;
    out["compute_ranks"] = flags_.compute_ranks;
    if (flags_.progress_steps_per_second > 0) {
      out["progress_steps_per_second"] = flags_.progress_steps_per_second;
    }
    out["connected"] = welcomed_;
    out["assigned"] = assigned_;
    if (t_connected_) out["connect_s"] = Ms(*t_connected_ - t_start_) / 1000.0;
    out["phase_ms"] = PhaseMedians();
    if (tls_failures_ > 0) out["tls_failures"] = tls_failures_;
    if (t_last_join_) out["join_burst_ms"] = Ms(*t_last_join_ - *t_first_join_);
    if (t_first_assignment_) {
      out["last_join_to_first_assignment_ms"] = Ms(*t_first_assignment_ - *t_last_join_);
    }
    if (t_last_assignment_) {
      out["last_join_to_last_assignment_ms"] = Ms(*t_last_assignment_ - *t_last_join_);
      out["first_join_to_last_assignment_ms"] = Ms(*t_last_assignment_ - *t_first_join_);
      if (daemon_cpu_join_start_ && daemon_cpu_round_end_) {
        out["daemon_cpu_join_to_round_closed_s"] =
            daemon_cpu_round_end_->total() - daemon_cpu_join_start_->total();
      }
    }
    if (t_steady_end_) {
      const double wall = Ms(*t_steady_end_ - *t_steady_start_) / 1000.0;
      out["steady_s"] = wall;
      out["settle_s"] = Ms(*t_steady_start_ - t_settle_start_) / 1000.0;
      out["heartbeats_sent_per_s"] =
          static_cast<double>(sent_steady_end_ - sent_steady_start_) / wall;
      out["acks_per_s"] = static_cast<double>(acks_steady_end_ - acks_steady_start_) / wall;
      if (daemon_cpu_steady_start_ && daemon_cpu_steady_end_) {
        const CpuTimes& a = *daemon_cpu_steady_start_;
        const CpuTimes& b = *daemon_cpu_steady_end_;
        out["daemon_cpu_pct"] = 100.0 * (b.total() - a.total()) / wall;
        out["daemon_cpu_user_pct"] = 100.0 * (b.user - a.user) / wall;
        out["daemon_cpu_sys_pct"] = 100.0 * (b.system - a.system) / wall;
      }
      out["loadgen_cpu_pct"] = 100.0 * (own_cpu_steady_end_ - own_cpu_steady_start_) / wall;
      // When it did not keep up, its CPU share is a floor.
      out["daemon_kept_up"] = KeptUpFraction() >= 0.99;
    }
    if (flags_.musterd_pid > 0) {
      out["daemon_vmrss_mib"] = StatusMiB(flags_.musterd_pid, "VmRSS");
      out["daemon_vmhwm_mib"] = StatusMiB(flags_.musterd_pid, "VmHWM");
    }
    {
      std::ifstream loadavg("/proc/loadavg");
      double one_minute = -1;
      loadavg >> one_minute;
      out["loadavg_1m"] = one_minute;  // other work on the machine skews wall times
    }
    out["heartbeats_sent"] = heartbeats_sent_;
    out["heartbeats_skipped"] = heartbeats_skipped_;
    out["acks"] = acks_;
    out["waiting_msgs"] = waitings_;
    out["repeated_assignments"] = repeated_assignments_;
    out["errors"] = errors_ + bad_assignments_;
    out["dropped"] = dropped_;
    if (!first_error_.empty()) out["first_error"] = first_error_;
    if (!first_drop_.empty()) out["first_drop"] = first_drop_;
    std::string problem = error;
    if (problem.empty() && (errors_ > 0 || bad_assignments_ > 0 || dropped_ > 0)) {
      problem = "the daemon refused or dropped agents";
    }
    out["ok"] = problem.empty();
    if (!problem.empty()) out["error"] = problem;
    std::cout << out.dump() << std::endl;
    exit_code_ = problem.empty() ? 0 : 1;
    io_.stop();
    return exit_code_;
  }

  // Median over the agents that got through each phase (see the header).
  nlohmann::json PhaseMedians() const {
    auto median = [this](auto from, auto to, auto reached) -> nlohmann::json {
      std::vector<double> ms;
      for (const auto& agent : agents_) {
        if (reached(*agent)) ms.push_back(Ms(agent.get()->*to - agent.get()->*from));
      }
      if (ms.empty()) return nullptr;
      auto mid = ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2);
      std::nth_element(ms.begin(), mid, ms.end());
      return *mid;
    };
    auto connected = [](const Agent& a) { return a.t_connected != Clock::time_point{}; };
    auto greeted = [](const Agent& a) { return a.t_hello != Clock::time_point{}; };
    auto welcomed = [](const Agent& a) { return a.t_welcome != Clock::time_point{}; };
    auto assigned = [](const Agent& a) { return a.assigned; };
    nlohmann::json out;
    out["tcp_connect"] = median(&Agent::t_connect, &Agent::t_connected, connected);
    if (tls_) out["tls_handshake"] = median(&Agent::t_connected, &Agent::t_handshaken, greeted);
    out["hello_to_welcome"] = median(&Agent::t_hello, &Agent::t_welcome, welcomed);
    out["join_to_assignment"] = median(&Agent::t_join, &Agent::t_assigned, assigned);
    out["connect_to_assignment"] = median(&Agent::t_connect, &Agent::t_assigned, assigned);
    return out;
  }

  asio::io_context& io_;
  Flags flags_;
  std::shared_ptr<const muster::rdzv::TlsContext> tls_;
  tcp::endpoint endpoint_;
  asio::steady_timer tick_;
  asio::steady_timer phase_timer_;
  asio::steady_timer deadline_;
  std::vector<std::unique_ptr<Agent>> agents_;
  std::array<char, 65536> read_buffer_{};
  int next_connect_ = 0;
  int welcomed_ = 0;
  int assigned_ = 0;
  const char* phase_ = "start";
  bool done_ = false;
  int exit_code_ = 0;

  Clock::time_point t_start_;
  std::optional<Clock::time_point> t_connected_, t_first_join_, t_last_join_;
  std::optional<Clock::time_point> t_first_assignment_, t_last_assignment_;
  Clock::time_point t_settle_start_;
  std::optional<Clock::time_point> t_steady_start_, t_steady_end_;
  std::optional<CpuTimes> daemon_cpu_join_start_, daemon_cpu_round_end_;
  std::optional<CpuTimes> daemon_cpu_steady_start_, daemon_cpu_steady_end_;
  double own_cpu_steady_start_ = 0, own_cpu_steady_end_ = 0;

  Clock::time_point heartbeat_base_;
  uint64_t next_slot_ = 0;
  uint64_t heartbeats_sent_ = 0, heartbeats_skipped_ = 0, acks_ = 0;
  uint64_t sent_steady_start_ = 0, sent_steady_end_ = 0;
  uint64_t acks_steady_start_ = 0, acks_steady_end_ = 0;
  uint64_t waitings_ = 0, repeated_assignments_ = 0, errors_ = 0, bad_assignments_ = 0;
  uint64_t dropped_ = 0, tls_failures_ = 0;
  std::string first_error_, first_drop_;
  std::string tls_failure_;  // the latest TlsResult failure
};

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"rdzv_load: N simulated agents join one run on musterd and heart-beat"};
  app.add_option("--host", flags.host, "musterd address (default 127.0.0.1)");
  app.add_option("--port", flags.port, "musterd port")->required()->check(CLI::Range(1, 65535));
  app.add_option("--nodes", flags.nodes, "simulated agents (default 1000)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--interval-ms", flags.interval_ms,
                 "heartbeat period (default 500, the default keep_alive_interval)")
      ->check(CLI::Range(1, 600000));
  app.add_option("--steady-seconds", flags.steady_seconds, "CPU sampling window (default 10)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup-seconds", flags.warmup_seconds,
                 "heart-beating after the round closed, before sampling (default 1)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--settle-seconds", flags.settle_seconds,
                 "after the warm-up, wait at most this long for the daemon to answer every "
                 "heartbeat before sampling (default 60)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout-seconds", flags.timeout_seconds, "give up after this (default 300)")
      ->check(CLI::PositiveNumber);
  app.add_option("--musterd-pid", flags.musterd_pid, "daemon to sample in /proc")->required();
  app.add_option("--run-id", flags.run_id, "run id (default bench)");
  app.add_option("--tls-ca", flags.tls.ca.path,
                 "speak TLS, trusting this CA for the daemon's certificate (PEM)");
  app.add_option("--tls-cert", flags.tls.cert.path,
                 "with --tls-ca: each agent's client certificate (PEM), for mutual TLS");
  app.add_option("--tls-key", flags.tls.key.path, "the key of --tls-cert (PEM)");
  app.add_flag("--until-assigned", flags.until_assigned,
               "end once every agent has its assignment (no heart-beating phase)");
  app.add_option("--compute-ranks", flags.compute_ranks,
                 "with progress: ranks whose compute times every other heartbeat carries "
                 "(default 0: none)")
      ->check(CLI::Range(0, 1024));
  app.add_option("--progress-steps-per-second", flags.progress_steps_per_second,
                 "heartbeats carry a step growing at this rate once assigned (default 0: none)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  std::shared_ptr<const muster::rdzv::TlsContext> tls;
  if (flags.tls.any()) {
    if (!flags.tls.ca.given()) {
      std::cerr << "rdzv_load: --tls-cert and --tls-key need --tls-ca\n";
      return 2;
    }
    std::vector<std::string> warnings;
    auto context = muster::rdzv::TlsContext::ForClient(flags.tls, &warnings);
    if (!context.ok()) {
      std::cerr << "rdzv_load: " << context.status().message() << "\n";
      return 2;
    }
    tls = std::move(context).value();
  }
  // OpenSSL writes with write(2): a socket the daemon closed must not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io(1);
  LoadGenerator generator(io, flags, tls);
  return generator.Run();
}
