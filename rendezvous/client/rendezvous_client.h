// RendezvousClient: the agent's side of the rendezvous protocol, as a shell
// around ClientMachine (client_machine.h), which decides everything: when
// to connect and to whom, what to send, when to fence. The shell owns the
// sockets (through a ClientTransport), the timers and the clock; it feeds
// the machine what they report and carries out the actions it returns,
// handing the agent what the daemon decided through Callbacks.
//
// Self-fencing (PROTOCOL.md, "Daemon restart and self-fencing", and
// "Replicas"): when the machine decides this agent may have been left
// behind, on_fence() asks the agent to stop its workers now.
//
// Runs on the caller's io_context; not thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rendezvous/client/client_machine.h"
#include "rendezvous/client/client_transport.h"
#include "rendezvous/client/fault_injecting_transport.h"

namespace muster::rdzv {

class RendezvousClient {
 public:
  struct Callbacks {
    std::function<void(const Assignment&)> on_assignment;
    // Called just before on_assignment with the generation's member
    // addresses (AssignmentMessage::member_addrs): the master's worker store
    // admits them. Empty for every node but the master, and when the
    // rendezvous sent none.
    std::function<void(const Assignment&, const std::vector<std::string>& member_addrs)>
        on_member_addrs;
    std::function<void(const std::string& reason)> on_waiting;
    std::function<void(bool succeeded, const std::string& message)> on_run_ended;
    std::function<void(const std::string& message)> on_fatal;  // refused for good (token, version)
    std::function<void(const std::string& why)> on_fence;      // stop the workers now
  };

  // `tls`: connect over TLS with it (tls_context.h); null: plain TCP.
  RendezvousClient(boost::asio::io_context& io, ClientOptions options, Callbacks callbacks,
                   std::shared_ptr<const TlsContext> tls = nullptr);
  ~RendezvousClient();
  RendezvousClient(const RendezvousClient&) = delete;
  RendezvousClient& operator=(const RendezvousClient&) = delete;

  void Start();
  void Stop();
  // The assignment the workers run under now (nullopt: none running). When
  // workers that ran stop, a heartbeat tells the daemon at once (draining).
  void SetCurrent(std::optional<Assignment> current);
  // The node's progress (ClientMachine::SetProgress): carried by the next
  // heartbeats.
  void SetProgress(uint64_t step);
  // The workers' compute times (ClientMachine::SetCompute).
  void SetCompute(std::vector<uint64_t> compute_us);
  // Outcome reports are kept: the last one is sent again after every Join on
  // a reconnect, until an assignment of a newer generation arrives.
  void ReportWorkerFailure(uint64_t generation, int exit_code, const std::string& message);
  void ReportSucceeded(uint64_t generation);
  void Leave();
  // ClientMachine::last_heard(): when a leader serving this agent last sent
  // it anything; nullopt before the first Welcome.
  std::optional<Time> last_heard() const { return machine_.last_heard(); }
  // ClientMachine::FenceAfter(): the silence after which this agent fences,
  // by the rendezvous's timing once it was welcomed.
  std::chrono::milliseconds fence_after() const { return machine_.FenceAfter(); }

  // Fault injection (common/fault_spec.h; fault_injecting_transport.h).
  // SuspendTraffic: for `duration` nothing is sent, what arrives is ignored
  // and no connection is attempted, as if the network between this agent
  // and the daemon were cut; the fence timer runs on. DelayHeartbeats: for
  // `window`, each heartbeat leaves `delay` after its time.
  void SuspendTraffic(std::chrono::milliseconds duration) { faults_.SuspendTraffic(duration); }
  void DelayHeartbeats(std::chrono::milliseconds delay, std::chrono::milliseconds window) {
    faults_.DelayHeartbeats(delay, window);
  }

 private:
  // Carries out `actions` in order.
  void Carry(ClientActions actions);
  void Carry(const ClientAction& action);
  boost::asio::steady_timer& TimerFor(ClientTimer timer);

  Callbacks callbacks_;
  ClientMachine machine_;
  TcpClientTransport tcp_;
  FaultInjectingTransport faults_;  // wraps tcp_: the transport the machine's links use
  std::vector<boost::asio::steady_timer> timers_;  // by ClientTimer
};

}  // namespace muster::rdzv
