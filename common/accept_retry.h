// AcceptRetry: how every listener (the rendezvous, the worker store, the
// HTTP endpoints) goes on after a failed accept.
//
// An accept fails mostly for want of a descriptor (EMFILE, ENFILE) or of
// memory (ENOBUFS, ENOMEM), and the pending connection stays in the
// backlog: accepting again at once fails again at once, and a listener that
// did so would spin on its io_context, starving every connection served by
// the same thread. So a listener waits kPause before it accepts again; the
// connection is accepted once a descriptor is free.
//
//   acceptor_.async_accept([this](const error_code& ec, tcp::socket s) {
//     if (AcceptRetry::Pauses(ec)) return retry_.After([this] { Accept(); });
//     ...
//
// Not thread-safe: one executor. Destroying it (or Cancel()) drops a
// pending retry: its callback never runs.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <utility>

namespace muster {

class AcceptRetry {
 public:
  // Long enough that a listener out of descriptors costs nothing (10
  // failed accepts a second), short enough that a freed descriptor is used
  // at once for a person's eye.
  static constexpr std::chrono::milliseconds kPause{100};

  explicit AcceptRetry(const boost::asio::any_io_executor& executor) : timer_(executor) {}
  AcceptRetry(const AcceptRetry&) = delete;
  AcceptRetry& operator=(const AcceptRetry&) = delete;

  // Whether the result of an accept calls for a pause: every error but
  // operation_aborted (the acceptor was closed or cancelled: stop).
  static bool Pauses(const boost::system::error_code& ec) {
    return ec && ec != boost::asio::error::operation_aborted;
  }

  // Runs `again` once kPause has passed. REQUIRES: no retry pending.
  template <typename Again>
  void After(Again again) {
    ++pauses_;
    timer_.expires_after(kPause);
    timer_.async_wait([again = std::move(again)](const boost::system::error_code& ec) mutable {
      if (!ec) again();
    });
  }

  // Drops a pending retry.
  void Cancel() { timer_.cancel(); }

  // How many pauses there were (a failed accept each).
  uint64_t pauses() const { return pauses_; }

 private:
  boost::asio::steady_timer timer_;
  uint64_t pauses_ = 0;
};

}  // namespace muster
