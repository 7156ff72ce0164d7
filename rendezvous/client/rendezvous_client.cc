#include "rendezvous/client/rendezvous_client.h"

#include <spdlog/spdlog.h>

#include <random>
#include <utility>

#include "common/clock.h"
#include "common/exhaustive_visit.h"

namespace muster::rdzv {
namespace asio = boost::asio;

namespace {
constexpr size_t kTimers = std::size(kClientTimers);
Time Now() { return Clock::now(); }
}  // namespace

RendezvousClient::RendezvousClient(asio::io_context& io, ClientOptions options, Callbacks callbacks,
                                   std::shared_ptr<const TlsContext> tls)
    : callbacks_(std::move(callbacks)),
      machine_(std::move(options), std::random_device{}()),
      tcp_(io, std::move(tls)),
      faults_(io, tcp_) {
  timers_.reserve(kTimers);
  for (size_t i = 0; i < kTimers; ++i) timers_.emplace_back(io);
  faults_.SetEvents({
      [this](LinkId link, const std::string& local_addr) {
        Carry(machine_.OnConnected(link, local_addr, Now()));
      },
      [this](LinkId link, ConnectError error, const std::string& cause) {
        Carry(machine_.OnConnectFailed(link, error, cause, Now()));
      },
      [this](LinkId link, const Message& message) {
        Carry(machine_.OnMessage(link, message, Now()));
      },
      [this](LinkId link, const std::string& why, ChannelEnd end) {
        Carry(machine_.OnClosed(link, why, end, Now()));
      },
  });
}

RendezvousClient::~RendezvousClient() { Stop(); }

void RendezvousClient::Start() { Carry(machine_.Start(Now())); }
void RendezvousClient::Stop() { Carry(machine_.Stop()); }

void RendezvousClient::SetCurrent(std::optional<Assignment> current) {
  Carry(machine_.SetCurrent(std::move(current)));
}

void RendezvousClient::SetProgress(uint64_t step) { machine_.SetProgress(step); }

void RendezvousClient::SetCompute(std::vector<uint64_t> compute_us) {
  machine_.SetCompute(std::move(compute_us));
}

void RendezvousClient::ReportWorkerFailure(uint64_t generation, int exit_code,
                                           const std::string& message) {
  Carry(machine_.ReportWorkerFailure(generation, exit_code, message));
}

void RendezvousClient::ReportSucceeded(uint64_t generation) {
  Carry(machine_.ReportSucceeded(generation));
}

void RendezvousClient::Leave() { Carry(machine_.Leave()); }

asio::steady_timer& RendezvousClient::TimerFor(ClientTimer timer) {
  return timers_[static_cast<size_t>(timer)];
}

void RendezvousClient::Carry(ClientActions actions) {
  for (const ClientAction& action : actions) Carry(action);
}

void RendezvousClient::Carry(const ClientAction& action) {
  VisitEvery(
      action, [this](const ConnectTo& a) { faults_.Connect(a.link, a.endpoint); },
      [this](const SendTo& a) { faults_.Send(a.link, a.message); },
      [this](const CloseLink& a) { faults_.Close(a.link, a.why); },
      [this](const ArmTimer& a) {
        // A callback carried out earlier in the same list may have stopped
        // the client (the agent stopping on a delivery).
        if (machine_.state() == ClientMachine::State::kStopped) return;
        asio::steady_timer& timer = TimerFor(a.timer);
        timer.expires_at(a.at);
        timer.async_wait([this, which = a.timer](const boost::system::error_code& ec) {
          if (!ec) Carry(machine_.OnTimer(which, Now()));
        });
      },
      [this](const CancelTimer& a) { TimerFor(a.timer).cancel(); },
      [this](const DeliverAssignment& a) {
        if (callbacks_.on_member_addrs) callbacks_.on_member_addrs(a.assignment, a.member_addrs);
        if (callbacks_.on_assignment) callbacks_.on_assignment(a.assignment);
      },
      [this](const DeliverWaiting& a) {
        if (callbacks_.on_waiting) callbacks_.on_waiting(a.reason);
      },
      [this](const DeliverRunEnded& a) {
        if (callbacks_.on_run_ended) callbacks_.on_run_ended(a.succeeded, a.message);
      },
      [this](const FenceWorkers& a) {
        if (callbacks_.on_fence) callbacks_.on_fence(a.why);
      },
      [this](const GiveUp& a) {
        if (callbacks_.on_fatal) callbacks_.on_fatal(a.message);
      },
      [](const ClientLog& a) {
        switch (a.level) {
          case ClientLog::Level::kDebug:
            spdlog::debug("{}", a.line);
            break;
          case ClientLog::Level::kInfo:
            spdlog::info("{}", a.line);
            break;
          case ClientLog::Level::kWarn:
            spdlog::warn("{}", a.line);
            break;
        }
      });
}

}  // namespace muster::rdzv
