// InPlaceWorker: the worker's side of in-place recovery (control/PROTOCOL.md)
// as one object, so a C++ trainer writes its training loop and not the
// protocol. It says `hello`, forms each generation's store client and
// communicator, watches the control channel, answers `pause` with `ready`
// and `join` with `joined`, and says when to leave a generation and when to
// exit. State agreement (which rank's weights every rank takes after a join)
// stays the caller's: it has the state (muster-train's is
// worker_runtime/train/live_state.h).
//
//   auto worker = InPlaceWorker::Start(ctx, {.backend = Backend::kGloo});
//   while (true) {
//     Verdict v = worker.Form();                    // store + communicator
//     if (v.goes_on()) v = Train(worker);           // the caller's, below
//     if (v.exits()) return v.exit_code();
//     if (v = worker.AwaitJoin(); v.exits()) return v.exit_code();
//   }
//   Verdict Train(InPlaceWorker& worker) {
//     try {
//       AgreeOnState(worker.comm());                // the caller's
//       if (Verdict v = worker.Joined(); !v.goes_on()) return v;
//       for (...) {
//         if (Verdict v = worker.Poll(); !v.goes_on()) return v;
//         Step(worker.comm());
//       }
//       return Verdict::Exit(0);
//     } catch (const CommError& e) {
//       return worker.LeaveAfter(e);                // a peer died: keep the state
//     }
//   }
//
// In place or not: the worker recovers in place only when muster offers the
// control channel (MUSTER_CONTROL_FD: muster's default `--recovery auto`) and hosts
// the store (!ctx.rank0_hosts_store: a store served by rank 0 dies with it,
// and no launcher renews it per generation); Start() then says `hello 1
// in-place`. Otherwise the same loop runs one generation: a failed collective
// exits with kExitCommFailure, and the launcher restarts the job.
//
// clang-format off
// Calls and what they do, by phase (a "formed" worker holds a generation's
// store client and communicator):
//
//   Start ------------------------------> not formed; says `hello` when in place
//   Form, not formed -------------------> formed: kGoOn
//     store or communicator fails:
//       joining G (in place) -----------> kLeave: G ended before it formed; the agent's
//                                         `pause` follows (AwaitJoin waits for it)
//       first generation ---------------> kExit(kExitCommFailure)
//     a bad request (InvalidArgument) --> kExit(kExitBadRequest)
//   Joined, formed ---------------------> says `joined G` when joining G: kGoOn; the
//                                         answer cannot be written: kExit(kExitCommFailure)
//   Poll, formed, not in place ---------> sleeps `wait`: kGoOn
//   Poll, formed, in place -------------> reads the agent's messages:
//     nothing, a bad line, a `join`,
//     a failed read --------------------> kGoOn (logged and ignored)
//     `pause G` ------------------------> kLeave, remembering G; the communicator is
//                                         kept to shrink when it can
//     `stop` ---------------------------> kExit(kExitCommFailure)
//   Leave / LeaveAfter(CommError) ------> the communicator is aborted (kept to shrink
//                                         when it can):
//     in place -------------------------> kLeave: the `pause` is still to come
//     not in place ---------------------> kExit(kExitCommFailure)
//     LeaveAfter, a wrong call ---------> kExit(kExitWrongCall), in place or not
//   AwaitJoin, not in place ------------> kExit(kExitCommFailure)
//   AwaitJoin, after kLeave ------------> not formed; says `ready G` for the pause it
//                                         has, then reads until the deadline:
//     `pause G` ------------------------> says `ready G`, reads on
//     `join G ...` after a pause -------> membership() is G's: kGoOn (then Form)
//     `join G ...` before any pause ----> says `failed G join before pause`:
//                                         kExit(kExitCommFailure)
//     a bad line -----------------------> logged, reads on
//     `stop`, the channel fails, the
//     deadline (options.timeout) -------> kExit(kExitCommFailure)
// clang-format on
//
// Every kExit, and every kLeave but a pause's, is logged (one line, through
// options.log) before it is returned ("a collective failed (rank 1): ...;
// waiting for muster to recover in place"); so are the agent's messages
// ignored, and each communicator formed in place with a backend that shrinks
// ("rank 1: communicator shrunk in 40 ms").
//
// Ownership: the worker owns the channel, the generation's store client and
// communicator (and the one kept to shrink). comm() and store() stay valid
// from a kGoOn Form() until the next AwaitJoin() or the worker's end, even
// after a kLeave. A moved-from worker may only be destroyed or assigned to.
//
// Thread-safety: one thread at a time; the control channel's watch (a
// thread of the worker's own while a generation is formed in place) calls
// only comm().Interrupt(), so a collective blocked on a silent peer fails
// when the agent writes (a `pause`). options.log runs on the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "worker_runtime/bootstrap/context.h"
#include "worker_runtime/comm/communicator.h"
#include "worker_runtime/control/control_channel.h"
#include "worker_runtime/recovery/membership.h"
#include "worker_runtime/recovery/verdict.h"
#include "worker_runtime/store/store_client.h"

namespace muster::runtime {

// Exit statuses of a Verdict::Exit besides kExitCommFailure (75: the
// channel, the store, a collective, or muster said stop) and the caller's.
inline constexpr int kExitBadRequest = 2;  // Form: the backend cannot be had, a bad timeout
inline constexpr int kExitWrongCall = 1;   // LeaveAfter: a collective was called wrongly

struct InPlaceOptions {
  // The communicators' backend (CommOptions::backend).
  Backend backend = Backend::kAuto;
  // The deadline of every collective and store call, and the longest wait
  // for the agent's `pause` and `join` in AwaitJoin(). Must be positive.
  std::chrono::milliseconds timeout{300'000};
  // Added to the generation's store prefix for this program's keys and the
  // communicator's rendezvous: "<store_prefix><store_key_prefix>..."
  // (muster-train: "train/"). Every rank must use the same.
  std::string store_key_prefix{};
  // One line per event, without a newline. Null: "<program>: <line>" on
  // stderr, <program> being the process's short name.
  std::function<void(const std::string& line)> log{};
};

class InPlaceWorker {
 public:
  // Says `hello 1 in-place` when `channel` is enabled and
  // !ctx.rank0_hosts_store; a hello that cannot be written leaves the worker
  // not in place. Never fails. The first overload reads the process's
  // channel (ControlChannel::FromProcessEnv()).
  static InPlaceWorker Start(const Context& ctx, InPlaceOptions options);
  static InPlaceWorker Start(const Context& ctx, InPlaceOptions options, ControlChannel channel);

  InPlaceWorker(InPlaceWorker&&) noexcept;
  InPlaceWorker& operator=(InPlaceWorker&&) noexcept;
  InPlaceWorker(const InPlaceWorker&) = delete;
  InPlaceWorker& operator=(const InPlaceWorker&) = delete;
  // Stops the watch, then frees the communicators and the store client.
  ~InPlaceWorker();

  // Whether it said `hello`: the agent pauses it instead of restarting it.
  bool in_place() const;
  // The generation it is in (or, after a kLeave, the one it left).
  const Membership& membership() const;
  const Context& context() const { return membership().ctx; }

  // Forms the generation membership() names: connects its store client
  // (world size > 1; prefix store_prefix + options.store_key_prefix) and
  // forms its communicator (FormGenerationCommunicator: with a backend that
  // shrinks, in place, every rank agrees on shrinking the communicator kept
  // from the last generation or creating a new one). In place, it then
  // watches the channel: the agent's next message interrupts the
  // communicator. Verdicts: the table above.
  // REQUIRES: not formed (the first call, or after AwaitJoin's kGoOn).
  Verdict Form();

  // The generation's communicator and store client (null with one rank).
  // REQUIRES: a Form() returned kGoOn, and no AwaitJoin() since.
  Communicator& comm();
  StoreClient* store();

  // Answers `joined G` when this worker was told to join G, once its state
  // is consistent (after the caller's state agreement); nothing otherwise.
  // kGoOn, or kExit(kExitCommFailure) when the answer cannot be written.
  Verdict Joined();

  // Between steps: reads what the agent wrote, waiting up to `wait` for a
  // message (a step's pause, e.g. to slow steps down: not in place, it
  // sleeps `wait`). With `wait` 0 it makes no system call unless the agent
  // wrote since Form(). kGoOn, kLeave on `pause`, kExit on `stop`.
  Verdict Poll(std::chrono::milliseconds wait = std::chrono::milliseconds(0));

  // Leaves the generation because something of it failed (`why`, logged):
  // the watch stops, the communicator is kept to shrink when it can, else
  // aborted. In place: kLeave ("<why>; waiting for muster to recover in
  // place"); otherwise kExit(kExitCommFailure).
  // REQUIRES: the caller took what it keeps of its state first.
  Verdict Leave(const std::string& why);
  // Leave() after a collective threw `error`, naming it and this rank; a
  // CommError::Kind::kInvalidArgument is the program's bug, which a restart
  // would repeat: it aborts the communicator and exits (kExitWrongCall).
  Verdict LeaveAfter(const CommError& error);

  // After a kLeave: frees the generation (the communicator unless it is
  // kept to shrink, the store client), answers the agent's `pause` with
  // `ready` and waits for its `join`, at most options.timeout. kGoOn when
  // joined: membership() is the new generation, Form() next. Otherwise
  // kExit(kExitCommFailure): the agent stopped it, went away, or said
  // nothing in time (the restart path takes over).
  // REQUIRES: nothing that uses comm() or store() lives on (a replica over
  // the communicator is destroyed first).
  Verdict AwaitJoin();

 private:
  struct State;
  explicit InPlaceWorker(std::unique_ptr<State> state);

  std::unique_ptr<State> state_;
};

}  // namespace muster::runtime
