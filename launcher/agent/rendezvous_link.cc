#include "launcher/agent/rendezvous_link.h"

namespace muster {
namespace {

class ClientLink final : public RendezvousLink {
 public:
  ClientLink(boost::asio::io_context& io, rdzv::ClientOptions options,
             rdzv::RendezvousClient::Callbacks callbacks,
             std::shared_ptr<const rdzv::TlsContext> tls)
      : client_(io, std::move(options), std::move(callbacks), std::move(tls)) {}

  void Start() override { client_.Start(); }
  void Stop() override { client_.Stop(); }
  void SetCurrent(std::optional<rdzv::Assignment> current) override {
    client_.SetCurrent(std::move(current));
  }
  void SetProgress(uint64_t step) override { client_.SetProgress(step); }
  void SetCompute(std::vector<uint64_t> compute_us) override {
    client_.SetCompute(std::move(compute_us));
  }
  void ReportWorkerFailure(uint64_t generation, int exit_code,
                           const std::string& message) override {
    client_.ReportWorkerFailure(generation, exit_code, message);
  }
  void ReportSucceeded(uint64_t generation) override { client_.ReportSucceeded(generation); }
  void Leave() override { client_.Leave(); }
  std::optional<Time> last_heard() const override { return client_.last_heard(); }
  std::chrono::milliseconds fence_after() const override { return client_.fence_after(); }
  void SuspendTraffic(std::chrono::milliseconds duration) override {
    client_.SuspendTraffic(duration);
  }
  void DelayHeartbeats(std::chrono::milliseconds delay, std::chrono::milliseconds window) override {
    client_.DelayHeartbeats(delay, window);
  }

 private:
  rdzv::RendezvousClient client_;
};

}  // namespace

std::unique_ptr<RendezvousLink> ConnectRendezvous(boost::asio::io_context& io,
                                                  rdzv::ClientOptions options,
                                                  rdzv::RendezvousClient::Callbacks callbacks,
                                                  std::shared_ptr<const rdzv::TlsContext> tls) {
  return std::make_unique<ClientLink>(io, std::move(options), std::move(callbacks), std::move(tls));
}

}  // namespace muster
