"""InPlace: data-parallel training that survives the loss of a peer without
leaving the process. It owns the process group and the DDP wrapper; the
script keeps its model, optimizer and loop.

    job = muster.InPlace(model, optimizer, state={"epoch": 0}, step=start)
    for step in job.steps(total):
        with job.guard():
            loss = loss_fn(job.model(x_of(step)), y_of(step))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    job.close()

Contract:
- Under muster with in-place recovery (control/PROTOCOL.md; the default,
  `--recovery auto`), the worker says `hello 1 in-place`. When a peer dies
  or goes silent, the collective blocked on it fails at once (the process
  group is interrupted: process_group.py), `guard()` swallows that failure,
  and the next turn of `steps()` recovers: it destroys the process group,
  answers muster's pause, waits for the join, forms the new generation's
  group under the rank and world size muster gives, agrees on the state
  (the rank with the most completed steps broadcasts the module, the
  optimizer and `state`: state_sync.py), wraps the module in a new DDP and
  resumes at that step. The process, the module and the optimizer stay.
- A process muster starts into a running generation (a replacement or a
  newcomer) constructs InPlace as at the start and gets the state from a
  peer instead of its checkpoint.
- A step counts as done when its body returns, or once the optimizer
  stepped in it (torch >= 2.0 tells: an optimizer step hook); a failed step
  is otherwise run again.
- Under torchrun, plain python or `muster --recovery restart` nothing of
  this runs: the group is torchrun's env:// one, an exception leaves the
  loop as it would without the module, and the job restarts as before. One
  line on stderr at the start says which applies.
- When in-place recovery cannot complete (muster falls back, stops the
  worker, or does not answer within `timeout`), the process exits with
  status 75 and muster's restart path takes over.
- Always use `job.model` inside the loop: the DDP wrapper is replaced on
  every recovery.

Thread-safety: one thread drives it; muster's messages are read on a
thread of its own (session.py).
"""
import contextlib
import datetime
import gc
import itertools
import os
import re
import time
import weakref

import torch
import torch.distributed as dist

from muster.process_group import AbortStuck, ProcessGroup
from muster.session import EXIT_RECOVERY_FAILED, RecoveryExit, Session, log
from muster.state_sync import StateTransferError, agree_on_state, check_transferable

# Words of the errors gloo, NCCL and the store raise when a peer is lost or
# the group was interrupted (torch 1.13 raises plain RuntimeErrors), matched
# as whole words: a script's own error that only contains one ("restore")
# is raised as it came.
_COLLECTIVE_ERROR = re.compile(r"\b(gloo|nccl|connection|socket|peer|timed out|timeout|"
                               r"processgroup|store|broken pipe)\b")


def is_collective_error(error: BaseException) -> bool:
    dist_error = getattr(dist, "DistError", None)
    if dist_error is not None and isinstance(error, dist_error):
        return True
    if not isinstance(error, RuntimeError):
        return False
    return _COLLECTIVE_ERROR.search(str(error).lower()) is not None


def _exit_stuck(stuck):
    """The group cannot be torn down (its NCCL abort hangs): this process
    cannot step again. It exits at once, without the interpreter's teardown
    (which would wait on the same threads); muster starts its rank again
    beside the others, which stay in place."""
    log(f"rank {os.environ.get('RANK', '?')}: {stuck}; exiting for muster to start this rank "
        f"again")
    os._exit(EXIT_RECOVERY_FAILED)


def _device_of(module):
    first = next(itertools.chain(module.parameters(), module.buffers()), None)
    return torch.device("cpu") if first is None else first.device


class InPlace:
    _wrap_phase = "ddp"  # what _wrap does, as the recovery's log line names it

    def __init__(self, model: torch.nn.Module, optimizer=None, *, state=None, step: int = 0,
                 backend: str = None, timeout: float = 60.0, ddp: bool = True, **ddp_kwargs):
        """`model`: the bare module (not yet DDP); `optimizer`: over its
        parameters; `state`: a dict of whatever else a joiner needs (epoch,
        sampler position, RNG states), kept equal on every rank, holding
        only what state_sync.py moves without pickle (None, bool, int,
        float, str, bytes, tensors, and lists, tuples and dicts of them:
        anything else raises StateTransferError here); `step`: the
        steps already done (a resumed checkpoint's); `timeout`: seconds for
        each wait on muster and for the process group's store and
        collectives; `ddp_kwargs` go to DistributedDataParallel."""
        self.module = model
        self.optimizer = optimizer
        self.state = {} if state is None else state
        check_transferable(self.state)
        self.step = int(step)
        self._device = _device_of(model)
        if backend is None:
            backend = "nccl" if self._device.type == "cuda" else "gloo"
        self._use_ddp = ddp
        self._ddp_kwargs = ddp_kwargs
        self._begin(backend, timeout)

    def _begin(self, backend, timeout):
        """Joins the job: the session with muster, the first generation's
        group and state (the rest of __init__, shared with subclasses)."""
        self._model = None
        self._fault = None        # the failure a guard swallowed, until recovered
        self._stepped = False     # the optimizer stepped during the current body
        self._form_phases = ""
        self._rank = int(os.environ.get("RANK", "0"))
        self._world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self._group = ProcessGroup(backend, datetime.timedelta(seconds=timeout))
        self._session = Session.from_env(timeout, on_message=self._interrupt)
        if backend == "nccl" and self._session.in_place:
            # The module aborts the group itself (torch's _abort_process_group
            # asks for this: with the watchdog's own handling on, both abort
            # and the second one hangs), and the process must outlive a
            # peer's death: muster's default, TearDown (1, torchrun's too),
            # ends it. A debug dump on the error would hold the group too.
            os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "0"
            os.environ.setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "0")
        self._watch_optimizer(self.optimizer)
        if self._rank == 0:
            if self._session.in_place:
                log("in-place recovery on: a lost peer pauses this job instead of restarting it")
            else:
                log("in-place recovery off (not started by muster with --recovery auto or "
                    "in-place): a fault restarts the job as under torchrun")
        source = self._form()
        if source not in (None, -1, self.rank):
            # A process started into a running generation: say where its state came from.
            log(f"rank {self.rank}: joined at step {self.step} with rank {source}'s state "
                f"(world size {self.world_size}){self._form_phases}")

    # --- the loop -----------------------------------------------------------
    @property
    def model(self):
        """The module wrapped for this generation (DDP unless ddp=False)."""
        return self._model

    @property
    def in_place(self) -> bool:
        return self._session.in_place

    @property
    def rank(self) -> int:
        """This process's rank in the generation last formed. Kept, not asked of
        torch: an aborted NCCL group is no longer the default group."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The world size of the generation last formed (kept, as `rank`)."""
        return self._world_size

    def steps(self, total: int):
        """Yields the index of each step to run, from the agreed step up to
        `total`; recovers in place between two steps."""
        while self.step < total:
            if self._fault is None and self._session.message_waiting():
                pause = self._session.take_pause()
                if pause is not None:
                    self._recover(pause)
                    continue
            if self._fault is not None:
                self._recover(None)
                continue
            self._stepped = False
            yield self.step
            if self._fault is None:
                self.step += 1
                self._after_step()
                self._session.report_progress(self.step)

    @contextlib.contextmanager
    def guard(self):
        """Around one step's body: a failure of a collective (or one that
        came with muster's pause) is kept for steps() to recover from
        instead of leaving the loop. Anything else, and everything when
        not in place, is raised as it came."""
        try:
            yield
        except Exception as error:
            if not (self._session.in_place and
                    (self._session.message_waiting() or is_collective_error(error))):
                raise
            log(f"rank {self.rank}: step {self.step} failed ({type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else ''}); recovering in place")
            self._fault = error
            if self._stepped:  # the update went in: the step is done
                self.step += 1

    def run(self, train_step, total: int):
        """Calls train_step(step) for every step up to `total`, guarded."""
        for step in self.steps(total):
            with self.guard():
                train_step(step)

    def close(self):
        """Destroys the process group (the job's last step is done) and tells
        muster that progress reports end here (its --hang-timeout stops
        watching this worker while the interpreter exits)."""
        self._model = None
        self._group.destroy(interrupt=False)
        self._session.finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # --- generations --------------------------------------------------------
    def _interrupt(self):
        """muster wrote (a pause, mostly): fail what waits on a peer."""
        began = time.monotonic()
        try:
            done = self._group.interrupt()
        except AbortStuck as stuck:
            _exit_stuck(stuck)
        log(f"rank {os.environ.get('RANK', '?')}: muster's message interrupted the process "
            f"group ({done}, {time.monotonic() - began:.3f} s)")

    def _watch_optimizer(self, optimizer):
        if optimizer is not None and hasattr(optimizer, "register_step_post_hook"):
            optimizer.register_step_post_hook(self._on_optimizer_step)

    def _on_optimizer_step(self, *args):
        self._stepped = True

    def _form(self):
        if not self._session.in_place:
            self._group.form_from_env()
            self._rank, self._world_size = dist.get_rank(), dist.get_world_size()
            self._model = self._wrap()
            return None
        began = time.monotonic()
        self._group.form(self._session.membership)
        self._rank, self._world_size = dist.get_rank(), dist.get_world_size()
        formed = time.monotonic()
        step, source = self._agree()
        agreed = time.monotonic()
        self.step = step
        self._model = self._wrap()
        self._session.joined()
        self._form_phases = (f": group {formed - began:.3f} s, state {agreed - formed:.3f} s, "
                             f"{self._wrap_phase} {time.monotonic() - agreed:.3f} s")
        return source

    def _agree(self):
        """(the step every rank resumes at, the rank whose state was taken or -1)."""
        return agree_on_state(self.step, self.module, self.optimizer, self.state, self._device)

    def _after_step(self):
        """A step's end, once it counted (a subclass's hook)."""

    def _wrap(self):
        if not self._use_ddp:
            return self.module
        kwargs = dict(self._ddp_kwargs)
        if self._device.type == "cuda" and "device_ids" not in kwargs:
            kwargs["device_ids"] = [self._device.index]
        return torch.nn.parallel.DistributedDataParallel(self.module, **kwargs)

    def _recover(self, pause):
        began = time.monotonic()
        failed_step = self.step
        self._leave(pause)
        left = time.monotonic()
        while True:
            membership = self._session.await_join()
            joined = time.monotonic()
            membership.export()
            try:
                source = self._form()
                break
            except (RecoveryExit, StateTransferError):
                # Not a peer lost while joining: the state cannot move (or a
                # peer sent one that was refused), and would not next time.
                raise
            except Exception as error:
                # The generation did not form (a peer lost while joining):
                # muster pauses again, out of it, into the next one.
                log(f"rank {membership.rank}: generation {membership.joining} did not form "
                    f"({type(error).__name__}: {error}); waiting for muster")
                self._leave(None)
        self._fault = None
        done = time.monotonic()
        origin = "its own" if source in (None, -1, self.rank) else f"rank {source}'s"
        # The phases, so the slowest is visible: leave (group destroyed,
        # ready said), wait (for muster's join), form (new group, state
        # agreed, DDP rebuilt).
        log(f"rank {self.rank}: recovered in place at step {self.step} (failed at {failed_step}; "
            f"state {origin}; world size {self.world_size}) in {done - began:.3f} s "
            f"[leave {left - began:.3f} s, wait {joined - left:.3f} s, form {done - joined:.3f} s"
            f"{self._form_phases}]")

    def _leave(self, pause):
        # The old DDP must go before its group: its reducer's autograd hooks
        # would reduce on the destroyed group. The failure's traceback holds
        # the frames that hold it; once they are dropped it goes at once.
        # A full collection (0.2 s with torch loaded) only when it did not.
        if self._fault is not None:
            self._fault.__traceback__ = None
        old = (weakref.ref(self._model)
               if self._model is not None and self._model is not self.module else None)
        self._model = None
        if old is not None and old() is not None:
            gc.collect()
        try:
            self._group.destroy(interrupt=True)
        except AbortStuck as stuck:
            _exit_stuck(stuck)
        except Exception as error:  # a group that failed half-formed
            log(f"destroying the process group: {type(error).__name__}: {error}")
        self.module.zero_grad(set_to_none=True)  # a failed step's partial gradients
        self._session.leave(pause)
