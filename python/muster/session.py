"""The protocol side of in-place recovery, without torch: what a worker says
to muster and when, and where it stands in each generation.

    session = Session.from_env(on_message=interrupt_collectives)
    session.in_place            # said hello: muster pauses it instead of killing it
    session.membership          # this generation's rank, world size, store...
    ...between steps:  if session.message_waiting(): session.take_pause()
    ...after a fault:  session.leave(pause)    # waits for the pause, says ready
                       session.await_join()    # the next membership
                       session.joined()        # once state is consistent

Contract:
- `from_env` says `hello 1 in-place` when muster offers a channel
  (MUSTER_CONTROL_FD) and hosts the store (TORCHELASTIC_USE_AGENT_STORE is
  true); otherwise `in_place` is False, nothing is ever said, and the worker
  behaves as under torchrun.
- While `in_place`, a thread of the session reads every agent line and
  queues it for the main thread; a pause, a stop or the channel's end first
  calls `on_message` (from that thread), a join does not. `message_waiting()` is a flag test, no system call.
- Every wait (`leave`, `await_join`) is bounded by `timeout` seconds. When
  muster stops the worker, closes the channel or does not answer in time,
  the session raises RecoveryExit: the process should exit with its `code`
  (75, muster-train's) and muster's restart path takes over.
- A `join` before any `pause` is refused with `failed G ...` (PROTOCOL.md).

Thread-safety: the main thread calls every method; `on_message` runs on the
reader thread. Standard library only.
"""
import faulthandler
import os
import queue
import sys
import threading
import time
from typing import Callable, NamedTuple, Optional

from muster.control import (Channel, ChannelClosed, Join, Pause, ProtocolError, Stop,
                            fd_from_env)

EXIT_RECOVERY_FAILED = 75  # muster-train's exit status for a communication failure


class RecoveryExit(SystemExit):
    """The worker leaves for muster's restart path; `code` is its exit status."""

    def __init__(self, why: str):
        super().__init__(EXIT_RECOVERY_FAILED)
        self.why = why

    def __str__(self):
        return self.why


def _silence_step_hooks():
    """The script reports its steps through this package, which knows the
    step it resumed from: muster's own step hooks (installed in a warm
    worker before the script ran) stop reporting, and never write to the
    progress pipe after finish() closed it."""
    hooks = sys.modules.get("_muster_step_hooks")
    if hooks is not None:
        hooks.disable()


class Membership(NamedTuple):
    """This worker's place in a generation (torchrun's variables)."""
    rank: int
    world_size: int
    local_rank: int
    group_rank: int
    master_addr: str
    master_port: int
    store_prefix: str        # the generation's store namespace, ends with "/"
    joining: Optional[int]   # the generation muster told it to join, if it did

    @classmethod
    def from_env(cls, environ):
        def number(name, default=None):
            text = environ.get(name)
            if text is None:
                if default is None:
                    raise ValueError(f"{name} is not set (not started by a launcher?)")
                return default
            if not text.isdigit():
                raise ValueError(f"{name}={text!r} is not a non-negative integer")
            return int(text)
        restart_count = number("TORCHELASTIC_RESTART_COUNT", 0)
        return cls(rank=number("RANK"), world_size=number("WORLD_SIZE"),
                   local_rank=number("LOCAL_RANK", 0), group_rank=number("GROUP_RANK", 0),
                   master_addr=environ.get("MASTER_ADDR", "127.0.0.1"),
                   master_port=number("MASTER_PORT"),
                   store_prefix=f"muster/{restart_count}/", joining=None)

    @classmethod
    def from_join(cls, join: Join):
        return cls(rank=join.rank, world_size=join.world_size, local_rank=join.local_rank,
                   group_rank=join.group_rank, master_addr=join.master_addr,
                   master_port=join.master_port, store_prefix=join.store_prefix,
                   joining=join.generation)

    def export(self, environ=None):
        """Sets torchrun's variables to this membership (code that reads
        RANK or WORLD_SIZE after a recovery sees the new values)."""
        environ = os.environ if environ is None else environ
        environ.update(RANK=str(self.rank), WORLD_SIZE=str(self.world_size),
                       LOCAL_RANK=str(self.local_rank), GROUP_RANK=str(self.group_rank),
                       MASTER_ADDR=self.master_addr, MASTER_PORT=str(self.master_port))


def _agent_stores(environ):
    return environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() in ("true", "1")


# A paused worker whose main thread has not answered muster's pause this
# long prints every thread's Python stack (half of muster's default
# --recovery-timeout, so they come before muster gives up on the worker):
# where a recovery is stuck says why.
STUCK_REPORT_S = 5.0


def log(message):
    sys.stderr.write(f"muster: {message}\n")
    sys.stderr.flush()


class Session:
    def __init__(self, channel: Optional[Channel], membership: Membership, timeout: float,
                 on_message: Callable[[], None] = lambda: None,
                 progress_fd: Optional[int] = None):
        self.membership = membership
        self._progress_fd = channel.to_agent if channel is not None else progress_fd
        self._last_progress = float("-inf")
        if self._progress_fd is not None:
            _silence_step_hooks()
        self.timeout = timeout
        self._channel = channel
        self._on_message = on_message
        self._messages = queue.Queue()
        self._waiting = threading.Event()
        self._pause: Optional[Pause] = None  # the pause answered, until a join
        self._answered = threading.Event()   # clear from a pause until ready is said
        self._answered.set()
        self.in_place = False
        if channel is not None:
            channel.say_hello()
            self.in_place = True
            threading.Thread(target=self._read, name="muster-control", daemon=True).start()

    @classmethod
    def from_env(cls, timeout: float, on_message=lambda: None, environ=None):
        environ = os.environ if environ is None else environ
        channel = Channel.from_env(environ) if _agent_stores(environ) else None
        return cls(channel, Membership.from_env(environ), timeout, on_message,
                   progress_fd=fd_from_env(environ, "MUSTER_PROGRESS_FD"))

    # --- the reader thread ---------------------------------------------------
    def _read(self):
        while True:
            try:
                message = self._channel.receive(None)
            except ProtocolError as e:
                log(f"ignored: {e}")
                continue
            except ChannelClosed as e:
                message = e
            if message is None:
                continue
            # A message that ends the generation interrupts its collectives,
            # before the main thread can see it. A join does not: the main
            # thread forms the new group as soon as it takes the join, and
            # an interrupt then would cut that group's sockets.
            if not isinstance(message, Join):
                if isinstance(message, Pause):
                    self._watch_answer(message)
                try:
                    self._on_message()
                except Exception as e:  # the interrupt is best effort
                    log(f"interrupting the process group failed: {e}")
            self._messages.put(message)
            self._waiting.set()
            if isinstance(message, ChannelClosed):
                return

    def _next(self, deadline):
        """The next agent message before `deadline`, or RecoveryExit."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise RecoveryExit("muster did not recover this worker in place in time")
        try:
            message = self._messages.get(timeout=left)
        except queue.Empty:
            raise RecoveryExit("muster did not recover this worker in place in time") from None
        self._waiting.clear()  # then set again when more came (no lost wake-up)
        if not self._messages.empty():
            self._waiting.set()
        if isinstance(message, ChannelClosed):
            raise RecoveryExit(str(message))
        if isinstance(message, Stop):
            raise RecoveryExit("stopped by muster")
        return message

    # --- the main thread -----------------------------------------------------
    def message_waiting(self) -> bool:
        return self.in_place and self._waiting.is_set()

    def take_pause(self) -> Optional[Pause]:
        """Between steps, with message_waiting(): the pause muster sent, or
        None (anything else is logged and dropped). RecoveryExit on stop."""
        while not self._messages.empty():
            message = self._next(time.monotonic() + self.timeout)
            if isinstance(message, Pause):
                return message
            log(f"ignored {message!r} while training")
        return None

    def leave(self, pause: Optional[Pause] = None):
        """Out of the current generation: waits for muster's pause when none
        came yet (a collective failed first) and answers ready."""
        deadline = time.monotonic() + self.timeout
        while pause is None:
            message = self._next(deadline)
            if isinstance(message, Pause):
                pause = message
            else:
                log(f"ignored {message!r} while waiting for the pause")
        self._ready(pause)

    def _ready(self, pause: Pause):
        try:
            self._channel.say_ready(pause.generation)
        except ChannelClosed as e:
            raise RecoveryExit(str(e)) from None
        self._answered.set()
        self._pause = pause

    def _watch_answer(self, pause: Pause):
        """After STUCK_REPORT_S without ready, prints every thread's stack."""
        self._answered.clear()

        def report():
            if self._answered.is_set():
                return
            log(f"rank {os.environ.get('RANK', '?')}: no answer to muster's pause "
                f"{pause.generation} after {STUCK_REPORT_S:.0f} s: the main thread is still "
                f"blocked; every thread's stack follows")
            try:
                faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
            except (OSError, ValueError, RuntimeError) as e:  # no real stderr
                log(f"could not print the stacks: {e}")

        timer = threading.Timer(STUCK_REPORT_S, report)
        timer.daemon = True
        timer.start()

    def await_join(self) -> Membership:
        """After leave(): the membership of the generation muster joins this
        worker to. Pauses that come meanwhile are answered."""
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._next(deadline)
            if isinstance(message, Pause):
                self._ready(message)
                continue
            if self._pause is None:
                self._channel.say_failed(message.generation, "join before pause")
                raise RecoveryExit("muster sent join before pause")
            self._pause = None
            self.membership = Membership.from_join(message)
            return self.membership

    def joined(self):
        """The generation this worker was told to join is formed, its state
        consistent: says joined (nothing for a process started into it)."""
        if self.membership.joining is not None:
            try:
                self._channel.say_joined(self.membership.joining)
            except ChannelClosed as e:
                raise RecoveryExit(str(e)) from None

    def finish(self):
        """Training is done: closes the progress pipe, so that muster stops
        watching this worker for hangs (interpreter teardown can take
        seconds). Nothing is said after it."""
        fd, self._progress_fd = self._progress_fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    # At most one progress line per interval: each wakes muster, and a
    # millisecond step would pay for a wake-up per step. Hang timeouts are
    # seconds; a step-triggered --inject fires on the first report at or
    # past its step.
    PROGRESS_INTERVAL_S = 0.05

    def report_progress(self, step: int):
        """Tells muster the steps done (its --hang-timeout and step-triggered
        --inject read them), in place or not, when it offers the pipe; at
        most once per PROGRESS_INTERVAL_S."""
        if self._progress_fd is None:
            return
        now = time.monotonic()
        if now - self._last_progress < self.PROGRESS_INTERVAL_S:
            return
        self._last_progress = now
        try:
            os.write(self._progress_fd, f"{int(step)}\n".encode())
        except OSError:
            self._progress_fd = None  # muster is gone; its pdeath signal follows
