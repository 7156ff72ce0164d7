// ControlChannel: a worker's end of the agent<->worker control channel
// (control/PROTOCOL.md). muster names the agent -> worker pipe in
// MUSTER_CONTROL_FD and the worker -> agent one (the progress pipe) in
// MUSTER_PROGRESS_FD; with either missing or not a pipe there is no channel,
// and the worker keeps today's behaviour (it exits, the agent restarts it).
//
//   auto channel = ControlChannel::FromProcessEnv();
//   if (channel.enabled()) channel.Say(control::Hello{1, {"in-place"}});
//   std::optional<control::AgentMessage> message;
//   channel.Receive(std::chrono::milliseconds(0), message);  // between steps
//
// Contract: Say writes one whole line (the agent reads the pipe all the
// time, so it waits at most `kWriteTimeout` for room). Receive returns the
// next complete line's message, waiting up to `wait` for one, and leaves
// `out` empty when none arrived; lines may arrive in pieces. Errors: IoError
// when the agent closed its end (it is gone) or a read or write failed;
// InvalidArgument, naming the line, for a line that does not parse (the
// channel stays usable). The descriptors are the process's, not owned.
//
// Thread-safety: one thread at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "common/env_lookup.h"
#include "common/status.h"
#include "control/control_message.h"

namespace muster::runtime {

class ControlChannel {
 public:
  static constexpr std::chrono::milliseconds kWriteTimeout{1000};

  // No channel: enabled() is false, Say and Receive fail.
  ControlChannel() = default;
  // Reads MUSTER_CONTROL_FD and MUSTER_PROGRESS_FD through `env`.
  static ControlChannel FromEnv(const EnvLookup& env);
  static ControlChannel FromProcessEnv();

  bool enabled() const { return from_agent_ >= 0 && to_agent_ >= 0; }
  // The agent -> worker descriptor, for a ControlWatch; -1 without a channel.
  int from_agent_fd() const { return from_agent_; }
  Status Say(const control::WorkerMessage& message);
  Status Receive(std::chrono::milliseconds wait, std::optional<control::AgentMessage>& out);

 private:
  ControlChannel(int from_agent, int to_agent) : from_agent_(from_agent), to_agent_(to_agent) {}
  // Parses the first complete line of `pending_`, if any, into `out`.
  Status TakeLine(std::optional<control::AgentMessage>& out);

  int from_agent_ = -1;
  int to_agent_ = -1;
  std::string pending_;  // bytes read past the last complete line
};

// ControlWatch: while it lives, a thread of its own calls `on_message` once
// when the agent's end of the channel has something to read (it reads
// nothing: Receive still gets the message). A worker blocked in a
// collective cannot look at the channel; the watch lets a pause interrupt
// the collective (Communicator::Interrupt). Nothing without a channel.
//
// Thread-safety: `on_message` runs on the watch's thread; the destructor
// stops and joins it.
class ControlWatch {
 public:
  ControlWatch(const ControlChannel& channel, std::function<void()> on_message);
  ~ControlWatch();
  ControlWatch(const ControlWatch&) = delete;
  ControlWatch& operator=(const ControlWatch&) = delete;

  // Whether the agent has written since the watch began (then `on_message`
  // ran or is running): a cheap test for a hot loop, no system call.
  bool fired() const { return fired_.load(std::memory_order_acquire); }

 private:
  int stop_fd_ = -1;  // an eventfd the destructor signals
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

}  // namespace muster::runtime
