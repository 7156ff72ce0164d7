#include "worker_runtime/recovery/in_place_worker.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
#include <variant>

#include "common/clock.h"
#include "worker_runtime/comm/generation_communicator.h"

namespace muster::runtime {

struct InPlaceWorker::State {
  InPlaceOptions options;
  ControlChannel channel;
  bool in_place = false;  // said hello
  // In place with a backend whose communicators shrink (NCCL): every
  // generation agrees on shrinking the last one's or creating anew.
  bool shrinks = false;
  Membership membership;
  // The agent's pause out of the generation left; none after a failure
  // (the pause is then still to come).
  std::optional<control::Pause> pause;
  std::optional<KeptCommunicator> kept;  // the last generation's, to shrink
  // Members are destroyed in reverse: the watch (which interrupts the
  // communicator) stops first, the store client goes after the
  // communicator that may use it.
  std::unique_ptr<StoreClient> store;
  std::unique_ptr<Communicator> comm;  // null once kept
  Communicator* current = nullptr;     // the generation's, kept or not
  std::optional<ControlWatch> watch;

  void Log(const std::string& line) const {
    if (options.log) {
      options.log(line);
      return;
    }
    std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, line.c_str());
  }

  Verdict ExitWith(int code, const std::string& why) const {
    Log(why);
    return Verdict::Exit(code);
  }

  // Ends the generation for this worker. A communicator that can shrink
  // into the next one (a failed one was revoked, not freed) is kept; the
  // watch, which interrupts it, stops first. `failed`: a collective or the
  // forming failed, and the communicator is aborted unless kept.
  void EndGeneration(bool failed) {
    watch.reset();
    if (shrinks && comm && !kept) kept = KeepForShrink(comm, membership.store_prefix);
    if (failed && comm) comm->Abort();
  }

  // Frees what the generation left: the communicator (unless kept) and the
  // store client.
  void FreeGeneration() {
    watch.reset();
    current = nullptr;
    comm.reset();
    store.reset();
  }
};

InPlaceWorker::InPlaceWorker(std::unique_ptr<State> state) : state_(std::move(state)) {}
InPlaceWorker::InPlaceWorker(InPlaceWorker&&) noexcept = default;
InPlaceWorker& InPlaceWorker::operator=(InPlaceWorker&&) noexcept = default;
InPlaceWorker::~InPlaceWorker() = default;

InPlaceWorker InPlaceWorker::Start(const Context& ctx, InPlaceOptions options) {
  return Start(ctx, std::move(options), ControlChannel::FromProcessEnv());
}

InPlaceWorker InPlaceWorker::Start(const Context& ctx, InPlaceOptions options,
                                   ControlChannel channel) {
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->channel = std::move(channel);
  state->membership = Membership::Initial(ctx);
  // In place only where muster hosts the store it can renew per generation.
  if (state->channel.enabled() && !ctx.rank0_hosts_store) {
    state->in_place = state->channel
                          .Say(control::Hello{control::kProtocolVersion,
                                              {std::string(control::kInPlaceCapability)}})
                          .ok();
    state->shrinks = state->in_place && BackendCanShrink(state->options.backend);
  }
  return InPlaceWorker(std::move(state));
}

bool InPlaceWorker::in_place() const { return state_->in_place; }

const Membership& InPlaceWorker::membership() const { return state_->membership; }

Communicator& InPlaceWorker::comm() {
  if (state_->current == nullptr) {
    std::fprintf(stderr, "InPlaceWorker::comm() without a formed generation\n");
    std::abort();
  }
  return *state_->current;
}

StoreClient* InPlaceWorker::store() { return state_->store.get(); }

Verdict InPlaceWorker::Form() {
  State& s = *state_;
  s.FreeGeneration();  // nothing, unless Form() is called twice
  const Context& ctx = s.membership.ctx;
  // A generation this worker was told to join that cannot form (its store
  // closed, a peer gone) ended before every rank got there: a node died
  // while they joined. That is no failure of this worker's: it waits, as
  // after a failed collective, for muster's pause out of that generation
  // into the next (control/PROTOCOL.md); muster's join bound ends the wait
  // when none comes. A new process has no state to keep: it exits, and
  // muster starts its rank again.
  const auto not_formed = [&](const std::string& why) {
    if (!s.membership.joining) return s.ExitWith(kExitCommFailure, why);
    return Leave("generation " + std::to_string(*s.membership.joining) + " did not form (rank " +
                 std::to_string(ctx.rank) + "): " + why);
  };
  if (ctx.world_size > 1) {
    auto connected =
        StoreClient::Connect({.host = ctx.master_addr,
                              .port = ctx.master_port,
                              .prefix = s.membership.store_prefix + s.options.store_key_prefix,
                              .timeout = s.options.timeout});
    if (!connected.ok()) return not_formed(connected.status().message());
    s.store = std::move(connected).value();
  }
  // The request is resolved there (backend_choice.h): "nccl" in a build
  // without NCCL, or with no GPU visible, is refused as a bad request with
  // the reason.
  auto formed = FormGenerationCommunicator(
      ctx, s.store.get(),
      {.backend = s.options.backend, .timeout = s.options.timeout, .recoverable = s.shrinks},
      s.shrinks, std::exchange(s.kept, std::nullopt));
  if (!formed.ok()) {
    if (formed.status().IsInvalidArgument()) {
      return s.ExitWith(kExitBadRequest, formed.status().message());
    }
    return not_formed(formed.status().message());
  }
  if (s.shrinks) {
    const CommunicatorPlan& plan = formed->plan;
    s.Log("rank " + std::to_string(ctx.rank) + ": communicator " +
          (plan.kind == CommunicatorPlan::Kind::kShrink ? "shrunk" : "created") + " in " +
          std::to_string(formed->took.count()) + " ms" +
          (plan.why.empty() ? "" : " (" + plan.why + ")"));
  }
  s.comm = std::move(formed->comm);
  s.current = s.comm.get();
  // A pause that comes while a collective waits on a silent peer (a host
  // whose link is down) interrupts it; the collective then throws, and the
  // caller leaves (LeaveAfter).
  if (s.in_place) {
    Communicator* comm = s.current;
    s.watch.emplace(s.channel, [comm] { comm->Interrupt(); });
  }
  return Verdict::GoOn();
}

Verdict InPlaceWorker::Joined() {
  State& s = *state_;
  if (!s.membership.joining) return Verdict::GoOn();
  if (Status st = s.channel.Say(control::Joined{*s.membership.joining}); !st.ok()) {
    return s.ExitWith(kExitCommFailure, st.message());
  }
  s.membership.joining.reset();
  return Verdict::GoOn();
}

Verdict InPlaceWorker::Poll(std::chrono::milliseconds wait) {
  State& s = *state_;
  if (!s.in_place) {
    if (wait.count() > 0) std::this_thread::sleep_for(wait);
    return Verdict::GoOn();
  }
  // Between steps: only when muster wrote (no system call per step).
  if (wait.count() <= 0 && !(s.watch && s.watch->fired())) return Verdict::GoOn();
  std::optional<control::AgentMessage> message;
  if (Status st = s.channel.Receive(wait, message); !st.ok()) {
    s.Log(st.message());
    return Verdict::GoOn();
  }
  if (!message) return Verdict::GoOn();
  if (const auto* pause = std::get_if<control::Pause>(&*message)) {
    s.EndGeneration(/*failed=*/false);
    s.pause = *pause;
    return Verdict::Leave();
  }
  if (std::holds_alternative<control::Stop>(*message)) {
    return s.ExitWith(kExitCommFailure, "stopped by muster");
  }
  s.Log("ignored '" + control::FormatAgentMessage(*message) + "' while training");
  return Verdict::GoOn();
}

Verdict InPlaceWorker::Leave(const std::string& why) {
  State& s = *state_;
  s.EndGeneration(/*failed=*/true);
  if (!s.in_place) return s.ExitWith(kExitCommFailure, why);
  s.Log(why + "; waiting for muster to recover in place");
  return Verdict::Leave();
}

Verdict InPlaceWorker::LeaveAfter(const CommError& error) {
  State& s = *state_;
  const std::string rank = std::to_string(s.membership.ctx.rank);
  // A bad argument is the program's fault: a restart would repeat it.
  if (error.kind() == CommError::Kind::kInvalidArgument) {
    s.watch.reset();
    if (s.current != nullptr) s.current->Abort();
    return s.ExitWith(kExitWrongCall,
                      "a collective was called wrongly (rank " + rank + "): " + error.what());
  }
  return Leave("a collective failed (rank " + rank + "): " + error.what() +
               (s.in_place ? "" : "; exiting for the launcher to restart the job"));
}

Verdict InPlaceWorker::AwaitJoin() {
  State& s = *state_;
  s.FreeGeneration();
  const auto give_up = [&s](const std::string& why) {
    return s.ExitWith(kExitCommFailure, why + "; exiting for the launcher to restart it");
  };
  if (!s.in_place) return give_up("this worker does not recover in place");
  const auto deadline = Clock::now() + s.options.timeout;
  if (s.pause) {
    if (Status st = s.channel.Say(control::Ready{s.pause->generation}); !st.ok()) {
      return give_up(st.message());
    }
  }
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return give_up("muster did not recover this worker in place in time");
    std::optional<control::AgentMessage> message;
    if (Status st = s.channel.Receive(left, message); !st.ok()) {
      // A line that does not parse: the channel goes on.
      if (st.IsInvalidArgument()) {
        s.Log(st.message());
        continue;
      }
      return give_up(st.message());
    }
    if (!message) continue;
    if (const auto* pause = std::get_if<control::Pause>(&*message)) {
      // The first pause, or one out of the generation being joined (a node
      // died while the ranks joined): answered alike.
      s.pause = *pause;
      if (Status st = s.channel.Say(control::Ready{pause->generation}); !st.ok()) {
        return give_up(st.message());
      }
    } else if (const auto* join = std::get_if<control::Join>(&*message)) {
      if (!s.pause) {
        s.channel.Say(control::Failed{join->generation, "join before pause"}).ok();
        return give_up("muster sent join before pause");
      }
      s.membership = s.membership.Joining(*join);
      s.pause.reset();
      return Verdict::GoOn();
    } else {
      return s.ExitWith(kExitCommFailure, "stopped by muster");
    }
  }
}

}  // namespace muster::runtime
