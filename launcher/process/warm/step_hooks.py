"""muster's step hooks: progress from an unmodified PyTorch script.

A warm-started worker (zygote.py) calls install_step_hooks() after it takes
its rank's environment and before the script runs. With torch imported and
MUSTER_PROGRESS_FD set, it registers a global optimizer step hook, so every
optimizer of the script reports its steps on the progress pipe, as the
`muster` package and libmuster_runtime do: one line "STEP\\n" per step.

What a step is (docs/usage.md, "Progress without code changes"):
  - one step of the script's optimizer; with several optimizers (a GAN's
    two, one per parameter group), a step ends when an optimizer steps that
    has already stepped since the step began, so one iteration that steps
    each optimizer once is one step;
  - an optimizer made anew (each epoch, after a restart) counts on from the
    step the old one reached, once the old one is gone;
  - a script that steps no optimizer (inference, evaluation) reports
    nothing, and muster treats it as one that does not report progress.

How each torch gets the hook:
  - torch >= 2.0: torch.optim.optimizer.register_optimizer_step_post_hook;
  - torch 1.13: Optimizer._optimizer_step_code, which 1.13 calls after
    every step of every optimizer (its profiler hook), is wrapped.
A script that reports its own steps through the `muster` package turns the
hooks off (disable()): the package knows the step it resumed from.

Compute time: each step's line also carries the rank's own time for the
step, "STEP COMPUTE_US\n": from the end of its previous step to the moment
its backward reached the model's first parameter (a tensor hook on it,
registered when a DistributedDataParallel is made). That is the data
loader, forward and backward, and not the wait for the other ranks in DDP's
all-reduce, which comes after: in lock-step training it tells the slow rank
from the ones that wait for it. Without DDP, or when that hook did not fire
in the step, the line is "STEP" alone. (On a GPU the time is the host's:
when the host waits for the device, the wait counts.)

Stacks: install_stack_dumps() registers faulthandler on MUSTER_STACK_SIGNAL,
writing every thread's stack into a memfd (no file anywhere), and says
"stacks FD" on the progress pipe (the agent reads /proc/PID/fd/FD); muster sends that signal only to a worker that said so, when
it suspects a hang (launcher/agent/hang_evidence.h). faulthandler's handler
runs in C: it answers while the script is blocked in C++.

Set MUSTER_STEP_HOOKS=off in the environment to leave a script alone (no
step reports, no stack dumps).
Cold-started workers (--no-warm-workers, or when the warm process is unfit)
get no hooks.
"""
import os
import sys
import time
import weakref

STEP_HOOKS_MODULE = "_muster_step_hooks"  # sys.modules entry the package looks for


class StepCounter:
    """Counts the script's steps from its optimizers' steps (the rule in the
    module's docstring). Pure: no clock, no I/O."""

    def __init__(self, start=0):
        self.step = start
        # The optimizers that stepped since the current step began; weak, so
        # an optimizer that is gone leaves the set.
        self._stepped = weakref.WeakSet()

    def optimizer_stepped(self, optimizer):
        """Returns the new step when this optimizer's step begins one, else
        None."""
        if optimizer in self._stepped or not self._stepped:
            self._stepped.clear()
            self._stepped.add(optimizer)
            self.step += 1
            return self.step
        self._stepped.add(optimizer)
        return None


class ComputeClock:
    """A rank's own time per step (the module's docstring). Pure but for
    the clock it is given."""

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self._step_end = None
        self._grads_ready = None

    def grads_ready(self):
        """Backward reached the model's first parameter (the last it reaches)."""
        self._grads_ready = self._clock()

    def step_ended(self):
        """A step ended now: its compute time in seconds, or None when it is
        not known (the first step, or no backward marked in it)."""
        now = self._clock()
        compute = None
        if (self._step_end is not None and self._grads_ready is not None
                and self._grads_ready > self._step_end):
            compute = self._grads_ready - self._step_end
        self._step_end = now
        self._grads_ready = None
        return compute


class ProgressPipe:
    """Writes steps to the agent's progress pipe; silent once the agent is
    gone (its pdeath signal ends the worker)."""

    def __init__(self, fd):
        self._fd = fd

    def report(self, step, compute=None):
        if self._fd is None:
            return
        line = b"%d\n" % step if compute is None else b"%d %d\n" % (step, int(compute * 1e6))
        try:
            os.write(self._fd, line)
        except OSError:
            self._fd = None


class StepHooks:
    """The installed hooks: a counter and where its steps go."""

    def __init__(self, pipe, counter=None, compute=None):
        self.counter = counter or StepCounter()
        self.compute = compute or ComputeClock()
        self.pipe = pipe
        self.enabled = True
        self._removers = []

    def on_optimizer_step(self, optimizer):
        if not self.enabled:
            return
        step = self.counter.optimizer_stepped(optimizer)
        if step is not None:
            self.pipe.report(step, self.compute.step_ended())

    def on_grads_ready(self):
        if self.enabled:
            self.compute.grads_ready()

    def disable(self):
        """The script reports its own steps: stop reporting (and counting)."""
        self.enabled = False
        for remove in self._removers:
            remove()
        self._removers.clear()


def _hook_optimizers(torch, hooks):
    """Registers hooks.on_optimizer_step after every optimizer step; returns
    how ("register_optimizer_step_post_hook" or "_optimizer_step_code"), or
    None when this torch offers neither."""
    optimizer_module = getattr(torch.optim, "optimizer", None)
    register = getattr(optimizer_module, "register_optimizer_step_post_hook", None)
    if register is not None:
        handle = register(lambda optimizer, args, kwargs: hooks.on_optimizer_step(optimizer))
        hooks._removers.append(handle.remove)
        return "register_optimizer_step_post_hook"
    optimizer_class = getattr(torch.optim, "Optimizer", None)
    original = getattr(optimizer_class, "_optimizer_step_code", None)
    if original is None:
        return None

    def _optimizer_step_code(self):
        original(self)
        hooks.on_optimizer_step(self)

    optimizer_class._optimizer_step_code = _optimizer_step_code
    hooks._removers.append(lambda: setattr(optimizer_class, "_optimizer_step_code", original))
    return "_optimizer_step_code"


def _hook_ddp(torch, hooks):
    """Marks, in every DistributedDataParallel made from now on, the moment
    backward reaches its module's first parameter that needs a gradient."""
    ddp = getattr(getattr(torch.nn, "parallel", None), "DistributedDataParallel", None)
    if ddp is None:
        return
    original = ddp.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        for parameter in self.module.parameters():
            if parameter.requires_grad:
                parameter.register_hook(lambda grad: hooks.on_grads_ready())
                break

    ddp.__init__ = __init__
    hooks._removers.append(lambda: setattr(ddp, "__init__", original))


def install_step_hooks(environ=None, modules=None):
    """Installs the hooks in this worker when it runs torch and muster
    offers a progress pipe; returns the StepHooks, or None."""
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    torch = modules.get("torch")
    fd_text = environ.get("MUSTER_PROGRESS_FD", "")
    if torch is None or not fd_text.isdigit() or environ.get("MUSTER_STEP_HOOKS") == "off":
        return None
    hooks = StepHooks(ProgressPipe(int(fd_text)))
    if _hook_optimizers(torch, hooks) is None:
        return None
    _hook_ddp(torch, hooks)
    # Where the `muster` package finds them (a plain object is enough: it
    # only calls disable()).
    modules[STEP_HOOKS_MODULE] = hooks
    return hooks


_stack_fd = None  # the memfd faulthandler writes to, open for the worker's life
STACK_MEMFD_NAME = "muster-stacks"  # /proc/self/fd/N reads /memfd:muster-stacks (deleted)
_STACK_FD_FLOOR = 100


def install_stack_dumps(environ=None):
    """Registers faulthandler on MUSTER_STACK_SIGNAL, dumping into a memfd,
    and tells muster which descriptor; returns True when installed."""
    global _stack_fd
    environ = os.environ if environ is None else environ
    signal_text = environ.get("MUSTER_STACK_SIGNAL", "")
    fd_text = environ.get("MUSTER_PROGRESS_FD", "")
    if (not signal_text.isdigit() or not fd_text.isdigit()
            or environ.get("MUSTER_STEP_HOOKS") == "off" or not hasattr(os, "memfd_create")):
        return False
    import faulthandler

    try:
        import fcntl

        # Close-on-exec, and above the descriptors a script opens first, so
        # that its own descriptors are numbered as in a cold start.
        created = os.memfd_create(STACK_MEMFD_NAME)
        _stack_fd = fcntl.fcntl(created, fcntl.F_DUPFD_CLOEXEC, _STACK_FD_FLOOR)
        os.close(created)
        faulthandler.register(int(signal_text), file=_stack_fd, all_threads=True, chain=False)
        os.write(int(fd_text), b"stacks %d\n" % _stack_fd)
    except (OSError, ValueError, RuntimeError):
        return False
    return True
