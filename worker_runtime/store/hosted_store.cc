#include "worker_runtime/store/hosted_store.h"

#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/clock.h"
#include "store/store_server.h"

namespace muster::runtime {

class HostedStore::Impl {
 public:
  explicit Impl(std::chrono::milliseconds linger) : linger_(linger), timer_(io_) {}

  Status Start(uint16_t port) {
    auto server = store::StoreServer::Start(io_, "0.0.0.0", port);
    if (!server.ok()) return server.status();
    server_ = std::move(server).value();
    thread_ = std::thread([this] { io_.run(); });
    return Status::Ok();
  }

  // Runs on the server's thread from here on: polling is the simplest way
  // to learn that the last client left, and 10 ms is nothing at exit.
  void StopWhenIdle() {
    const auto deadline = Clock::now() + linger_;
    boost::asio::post(io_, [this, deadline] { PollIdle(deadline); });
    if (thread_.joinable()) thread_.join();
  }

 private:
  void PollIdle(Time deadline) {
    if (server_->num_connections() == 0 || Clock::now() >= deadline) {
      server_->Stop();
      io_.stop();
      return;
    }
    timer_.expires_after(std::chrono::milliseconds(10));
    timer_.async_wait([this, deadline](const boost::system::error_code&) { PollIdle(deadline); });
  }

  std::chrono::milliseconds linger_;
  boost::asio::io_context io_;
  boost::asio::steady_timer timer_;
  std::unique_ptr<store::StoreServer> server_;
  std::thread thread_;
};

Result<std::unique_ptr<HostedStore>> HostedStore::Start(uint16_t port,
                                                        std::chrono::milliseconds linger) {
  auto impl = std::make_unique<Impl>(linger);
  if (Status status = impl->Start(port); !status.ok()) return status;
  return std::unique_ptr<HostedStore>(new HostedStore(std::move(impl)));
}

HostedStore::HostedStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HostedStore::~HostedStore() { impl_->StopWhenIdle(); }

}  // namespace muster::runtime
