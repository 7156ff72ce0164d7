#include "store/store_server.h"

#include <array>
#include <chrono>
#include <map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/accept_retry.h"
#include "common/clock.h"
#include "store/refusal_log.h"

namespace muster::store {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
// How refusals name a peer whose address could not be read.
const std::string kUnnamedPeer = "unnamed";
}  // namespace

class StoreServer::Impl : public SessionHost, public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, SessionLimits limits)
      : acceptor_(io), accept_retry_(io.get_executor()), limits_(limits) {}

  Status Listen(const std::string& host, uint16_t port);
  void Accept();
  void Stop();
  void CloseSessions(std::string_view why);
  // Closes every connection and drops every key and queue.
  void DropGeneration(std::string_view why);
  void Seal();
  void Open(uint64_t generation);
  // Whether `socket`'s peer may stay; a refused one is closed and counted.
  bool Admit(tcp::socket& socket);

  KeyValueStore& store() override { return store_; }
  void DeliverReadyWaiters() override;
  void OnSessionClosed(uint64_t id) override { sessions_.erase(id); }
  std::span<uint8_t> ReadBuffer() override { return read_buffer_; }
  void AccountHeld(size_t before, size_t after) override { held_bytes_ += after - before; }
  size_t HeldBytes() const override { return held_bytes_; }
  // Refuses `socket` (reset, counted, a throttled warning naming `address`).
  void Refuse(tcp::socket& socket, const std::string& address, const std::string& rule);

  tcp::acceptor acceptor_;
  AcceptRetry accept_retry_;  // paces accept retries after an error
  const SessionLimits limits_;
  KeyValueStore store_;
  PeerAdmission admission_;
  RefusalLog refusals_;
  std::map<uint64_t, std::shared_ptr<StoreSession>> sessions_;
  std::array<uint8_t, 64 * 1024> read_buffer_;  // see ReadBuffer()
  size_t held_bytes_ = 0;                       // see HeldBytes()
  uint64_t next_id_ = 1;
  uint16_t port_ = 0;
  bool stopped_ = false;
  bool accepting_ = false;  // an async_accept is outstanding (or a retry pending)
  // Bumped by Seal(): a completion of an accept chain started before it is
  // dropped, so a quick Seal/Open never leaves two chains running.
  uint64_t accept_epoch_ = 0;
};

Status StoreServer::Impl::Listen(const std::string& host, uint16_t port) {
  const std::string where = "store: cannot listen on " + host + ":" + std::to_string(port) + ": ";
  boost::system::error_code ec;
  tcp::endpoint endpoint;
  auto address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, port);
  } else {
    // A host name: resolve synchronously. This runs once at start-up, before
    // the server has anything to serve.
    tcp::resolver resolver(acceptor_.get_executor());
    auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return Status::InvalidArgument(
          where + "cannot resolve host: " + (ec ? ec.message() : std::string("no addresses")));
    }
    endpoint = results.begin()->endpoint();
  }

  acceptor_.open(endpoint.protocol(), ec);
  if (ec) return Status::IoError(where + ec.message());
  // Lets a restarted launcher re-bind a port whose old connections linger in
  // TIME_WAIT; a port with a live listener is still refused.
  acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  acceptor_.bind(endpoint, ec);
  if (ec) return Status::IoError(where + ec.message());
  acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IoError(where + ec.message());
  port_ = acceptor_.local_endpoint(ec).port();
  if (ec) return Status::IoError(where + ec.message());
  return Status::Ok();
}

void StoreServer::Impl::Accept() {
  acceptor_.async_accept([weak = weak_from_this(), epoch = accept_epoch_](
                             const boost::system::error_code& ec, tcp::socket socket) {
    auto self = weak.lock();
    if (!self || self->stopped_ || !self->accepting_ || epoch != self->accept_epoch_) return;
    if (ec == asio::error::operation_aborted) return;
    if (AcceptRetry::Pauses(ec)) {
      // Transient (e.g. out of file descriptors): retry after a pause rather
      // than spinning on an error that is still there.
      spdlog::warn("store accept failed port={} error=\"{}\"", self->port_, ec.message());
      self->accept_retry_.After([weak, epoch] {
        auto again = weak.lock();
        if (again && !again->stopped_ && again->accepting_ && epoch == again->accept_epoch_) {
          again->Accept();
        }
      });
      return;
    }
    if (!self->Admit(socket)) {
      self->Accept();
      return;
    }
    const uint64_t id = self->next_id_++;
    auto session = std::make_shared<StoreSession>(id, std::move(socket),
                                                  std::weak_ptr<SessionHost>(self), self->limits_);
    spdlog::debug("store connection accepted conn={} peer={}", id, session->peer());
    self->sessions_.emplace(id, session);
    session->Start();
    self->Accept();
  });
}

bool StoreServer::Impl::Admit(tcp::socket& socket) {
  boost::system::error_code peer_ec;
  boost::system::error_code local_ec;
  const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
  const tcp::endpoint local = socket.local_endpoint(local_ec);
  // A peer that sent bytes and reset before accept() has no address to
  // judge (ENOTCONN), yet its bytes are still readable: admitting it would
  // let any host write blind whenever the acceptor lags (the agent stopped,
  // or busy forking). It is refused like a foreign host.
  if (peer_ec || local_ec) {
    Refuse(socket, kUnnamedPeer,
           "reason=\"the peer reset before it was accepted: no address to check\"");
    return false;
  }
  if (sessions_.size() >= limits_.max_connections) {
    Refuse(socket, Unmapped(peer.address()).to_string(),
           "reason=\"connection limit reached max_connections=" +
               std::to_string(limits_.max_connections) + " (--store-max-connections)\"");
    return false;
  }
  if (admission_.Admits(peer.address(), local.address())) return true;
  Refuse(socket, Unmapped(peer.address()).to_string(),
         RefusalLog::AdmissionReason(admission_.Describe()));
  return false;
}

void StoreServer::Impl::Refuse(tcp::socket& socket, const std::string& address,
                               const std::string& rule) {
  // Reset, not a graceful close: nothing is owed to the peer, and a host
  // that reconnects in a loop leaves no TIME_WAIT socket behind here.
  boost::system::error_code ignored;
  socket.set_option(asio::socket_base::linger(true, 0), ignored);
  socket.close(ignored);
  if (auto line = refusals_.OnRefused(address, rule, Clock::now())) {
    spdlog::warn("{} port={}", *line, port_);
  }
}

void StoreServer::Impl::DeliverReadyWaiters() {
  std::string stop_waiting(1, static_cast<char>(kStopWaiting));
  for (uint64_t owner : store_.TakeReadyWaiters()) {
    auto it = sessions_.find(owner);
    if (it == sessions_.end()) continue;
    auto session = it->second;  // Send may close it and erase the map entry
    session->Send(stop_waiting);
  }
}

void StoreServer::Impl::CloseSessions(std::string_view why) {
  auto sessions = std::move(sessions_);
  sessions_.clear();
  for (auto& [id, session] : sessions) {
    store_.CancelWaits(id);
    session->Close(why, /*warn=*/false, /*notify_host=*/false);
  }
}

void StoreServer::Impl::DropGeneration(std::string_view why) {
  CloseSessions(why);
  store_.Clear();
}

void StoreServer::Impl::Stop() {
  if (stopped_) return;
  stopped_ = true;
  accepting_ = false;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.Cancel();
  CloseSessions("server stopped");
  // Refusals are news at the end too: the warnings were throttled.
  spdlog::log(refusals_.total() > 0 ? spdlog::level::info : spdlog::level::debug,
              "event=store_stopped port={} keys={} bytes={} refused_total={}", port_,
              store_.NumEntries(), store_.Bytes(), refusals_.total());
}

void StoreServer::Impl::Seal() {
  if (stopped_) return;
  // cancel() aborts the outstanding async_accept only; the socket stays
  // bound and listening, so the port can not be taken and early clients of
  // the next generation queue in the backlog.
  if (accepting_) {
    accepting_ = false;
    ++accept_epoch_;
    boost::system::error_code ignored;
    acceptor_.cancel(ignored);
    accept_retry_.Cancel();
  }
  const size_t closed = sessions_.size();
  const size_t keys = store_.NumEntries();
  const size_t bytes = store_.Bytes();
  DropGeneration("generation sealed");
  spdlog::debug("event=store_sealed port={} closed={} keys_dropped={} bytes_dropped={}", port_,
                closed, keys, bytes);
}

void StoreServer::Impl::Open(uint64_t generation) {
  if (stopped_) return;
  // Sessions still open belong to an earlier generation that was not sealed.
  const size_t closed = sessions_.size();
  DropGeneration("new generation");
  if (!accepting_) {
    accepting_ = true;
    Accept();
  }
  spdlog::debug("event=store_open port={} gen={} closed={}", port_, generation, closed);
}

Result<std::unique_ptr<StoreServer>> StoreServer::Start(asio::io_context& io,
                                                        const std::string& host, uint16_t port,
                                                        SessionLimits limits) {
  auto impl = std::make_shared<Impl>(io, limits);
  if (Status s = impl->Listen(host, port); !s.ok()) return s;
  impl->accepting_ = true;
  impl->Accept();
  spdlog::info("store listening host={} port={}", host, impl->port_);
  return std::unique_ptr<StoreServer>(new StoreServer(std::move(impl)));
}

StoreServer::StoreServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

StoreServer::~StoreServer() { Stop(); }

uint16_t StoreServer::port() const { return impl_->port_; }

void StoreServer::Seal() { impl_->Seal(); }

void StoreServer::Open(uint64_t generation) { impl_->Open(generation); }

void StoreServer::Stop() { impl_->Stop(); }

void StoreServer::SetAdmission(PeerAdmission admission) {
  const std::string before = impl_->admission_.Describe();
  impl_->admission_ = std::move(admission);
  const std::string after = impl_->admission_.Describe();
  if (after != before) {
    spdlog::info("event=store_admission port={} admitted={} (and loopback, this host)",
                 impl_->port_, after);
  }
}

const PeerAdmission& StoreServer::admission() const { return impl_->admission_; }

uint64_t StoreServer::refused_connections() const { return impl_->refusals_.total(); }

uint64_t StoreServer::refused_connections_from(const std::string& address) const {
  return impl_->refusals_.RefusedFrom(address);
}

size_t StoreServer::num_bytes() const { return impl_->store_.Bytes(); }

uint64_t StoreServer::accept_pauses() const { return impl_->accept_retry_.pauses(); }

size_t StoreServer::num_connections() const { return impl_->sessions_.size(); }

size_t StoreServer::num_keys() const { return impl_->store_.NumKeys(); }

size_t StoreServer::num_pending_waits() const { return impl_->store_.TotalPendingWaits(); }

}  // namespace muster::store
