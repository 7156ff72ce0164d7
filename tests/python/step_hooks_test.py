"""Unit tests of the warm worker's step hooks (launcher/process/warm/step_hooks.py):
the step rule on plain objects, and the hooks on the torch of the interpreter
that runs this file (Debian's 1.13 on the host; the integration tests run
them on 2.6 and 2.14), over a real pipe.

Run: /usr/bin/python3 tests/python/step_hooks_test.py (stdlib unittest).
"""
import gc
import importlib.util
import os
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..", "launcher", "process", "warm", "step_hooks.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

spec = importlib.util.spec_from_file_location("step_hooks", SOURCE)
step_hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(step_hooks)


class Optimizer:
    """Stands for a torch optimizer: any object a weak set can hold."""


class StepRule(unittest.TestCase):
    def test_one_optimizer_counts_each_step(self):
        counter = step_hooks.StepCounter()
        opt = Optimizer()
        self.assertEqual([counter.optimizer_stepped(opt) for _ in range(3)], [1, 2, 3])

    def test_two_optimizers_stepped_once_each_make_one_step(self):
        counter = step_hooks.StepCounter()
        gen, disc = Optimizer(), Optimizer()
        seen = []
        for _ in range(3):
            seen.append(counter.optimizer_stepped(disc))
            seen.append(counter.optimizer_stepped(gen))
        self.assertEqual(seen, [1, None, 2, None, 3, None])

    def test_an_optimizer_made_anew_counts_on_once_the_old_is_gone(self):
        counter = step_hooks.StepCounter()
        opt = Optimizer()
        counter.optimizer_stepped(opt)
        counter.optimizer_stepped(opt)
        del opt
        gc.collect()
        self.assertEqual(counter.optimizer_stepped(Optimizer()), 3)

    def test_an_inner_and_an_outer_optimizer_make_one_step(self):
        # ZeroRedundancyOptimizer steps its local optimizer inside its own step.
        counter = step_hooks.StepCounter()
        inner, outer = Optimizer(), Optimizer()
        seen = [counter.optimizer_stepped(o) for o in (inner, outer, inner, outer)]
        self.assertEqual(seen, [1, None, 2, None])


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class ComputeTime(unittest.TestCase):
    def test_from_the_previous_step_end_to_the_gradients(self):
        clock = Clock()
        compute = step_hooks.ComputeClock(clock)
        self.assertIsNone(compute.step_ended())  # the first step: no start known
        clock.now = 0.030
        compute.grads_ready()
        clock.now = 0.100  # the all-reduce's wait and the optimizer: not counted
        self.assertAlmostEqual(compute.step_ended(), 0.030)
        clock.now = 0.200  # a step whose backward was not marked
        self.assertIsNone(compute.step_ended())

    def test_the_last_mark_of_a_step_counts(self):
        # Gradient accumulation: several backwards per optimizer step.
        clock = Clock()
        compute = step_hooks.ComputeClock(clock)
        compute.step_ended()
        for clock.now in (0.01, 0.02, 0.05):
            compute.grads_ready()
        clock.now = 0.06
        self.assertAlmostEqual(compute.step_ended(), 0.05)


class Install(unittest.TestCase):
    def setUp(self):
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.modules = {}

    def tearDown(self):
        hooks = self.modules.get(step_hooks.STEP_HOOKS_MODULE)
        if hooks is not None:
            hooks.disable()
        os.close(self.read_fd)
        os.close(self.write_fd)

    def heard(self):
        try:
            return os.read(self.read_fd, 1 << 16).decode()
        except BlockingIOError:
            return ""

    def install(self, **env):
        import torch

        self.modules["torch"] = torch
        environ = {"MUSTER_PROGRESS_FD": str(self.write_fd), **env}
        return step_hooks.install_step_hooks(environ, self.modules)

    def train(self, steps, optimizers=1):
        import torch

        model = torch.nn.Linear(4, 1)
        opts = [torch.optim.SGD(model.parameters(), lr=0.1) for _ in range(optimizers)]
        for _ in range(steps):
            model(torch.ones(2, 4)).sum().backward()
            for opt in opts:
                opt.step()

    def test_an_unmodified_training_loop_reports_each_step(self):
        self.assertIsNotNone(self.install())
        self.train(3)
        self.assertEqual(self.heard(), "1\n2\n3\n")

    def test_a_ddp_step_reports_its_compute_time(self):
        import tempfile

        import torch
        import torch.distributed as dist

        self.install()
        with tempfile.TemporaryDirectory() as tmp:
            dist.init_process_group("gloo", init_method=f"file://{tmp}/store", rank=0,
                                    world_size=1)
            try:
                model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for _ in range(3):
                    model(torch.ones(2, 4)).sum().backward()
                    opt.step()
            finally:
                dist.destroy_process_group()
        lines = self.heard().splitlines()
        self.assertEqual(lines[0], "1")  # the first step's start is not known
        for number, line in enumerate(lines[1:], start=2):
            step, compute_us = line.split()
            self.assertEqual(int(step), number)
            self.assertGreater(int(compute_us), 0)

    def test_two_optimizers_report_one_step_per_iteration(self):
        self.install()
        self.train(2, optimizers=2)
        self.assertEqual(self.heard(), "1\n2\n")

    def test_the_package_silences_them(self):
        from muster import session

        hooks = self.install()
        sys.modules[step_hooks.STEP_HOOKS_MODULE] = hooks
        try:
            session._silence_step_hooks()
        finally:
            del sys.modules[step_hooks.STEP_HOOKS_MODULE]
        self.train(2)
        self.assertEqual(self.heard(), "")

    def test_nothing_without_a_pipe_torch_or_with_the_switch_off(self):
        self.assertIsNone(step_hooks.install_step_hooks({}, {"torch": object()}))
        self.assertIsNone(step_hooks.install_step_hooks({"MUSTER_PROGRESS_FD": "3"}, {}))
        self.assertIsNone(self.install(MUSTER_STEP_HOOKS="off"))
        self.train(1)
        self.assertEqual(self.heard(), "")

    def test_stack_dumps_go_to_the_memfd_it_names(self):
        import signal

        sig = signal.SIGRTMIN + 6
        env = {"MUSTER_PROGRESS_FD": str(self.write_fd), "MUSTER_STACK_SIGNAL": str(int(sig))}
        self.assertTrue(step_hooks.install_stack_dumps(env))
        try:
            line = self.heard()
            self.assertRegex(line, r"^stacks \d+\n$")
            fd = int(line.split()[1])
            signal.pthread_kill(threading.main_thread().ident, sig)
            with open(f"/proc/self/fd/{fd}") as f:
                dump = f.read()
            self.assertIn("test_stack_dumps_go_to_the_memfd_it_names", dump)
        finally:
            import faulthandler

            faulthandler.unregister(sig)
        self.assertFalse(step_hooks.install_stack_dumps({"MUSTER_PROGRESS_FD": "3"}))

    def test_a_closed_pipe_stops_the_reports_without_an_error(self):
        self.install()
        os.close(self.read_fd)
        self.read_fd, spare = os.pipe()
        os.close(spare)
        self.train(2)  # EPIPE on the first report; the script goes on


if __name__ == "__main__":
    unittest.main()
