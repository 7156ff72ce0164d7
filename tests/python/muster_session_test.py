"""Unit tests of the muster Python package's protocol handling
(python/muster/control.py, session.py) against a fake agent: real pipes at
MUSTER_CONTROL_FD / MUSTER_PROGRESS_FD, no torch, no muster process.

Run: python3 tests/python/muster_session_test.py (stdlib unittest; exit 0 on success).
"""
import os
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from muster import control, session  # noqa: E402
from muster.control import Pause, ProtocolError, Stop, parse_agent_line  # noqa: E402
from muster.session import Membership, RecoveryExit, Session  # noqa: E402

JOIN_2 = ("join 2 RANK=1 WORLD_SIZE=3 GROUP_RANK=0 LOCAL_RANK=1 MASTER_ADDR=10.0.0.1 "
          "MASTER_PORT=29400 STORE_PREFIX=muster/2/")


def read_all(f):
    """What was written to `f` so far, read through a handle of its own (a
    seek on `f` would move where faulthandler writes)."""
    f.flush()
    with open(f.name) as again:
        return again.read()


class FakeAgent:
    """The agent's ends of the two pipes, and the worker's environment."""

    def __init__(self):
        self.to_worker_r, self.to_worker_w = os.pipe()
        self.from_worker_r, self.from_worker_w = os.pipe()
        self.env = {"MUSTER_CONTROL_FD": str(self.to_worker_r),
                    "MUSTER_PROGRESS_FD": str(self.from_worker_w),
                    "TORCHELASTIC_USE_AGENT_STORE": "True", "RANK": "2", "WORLD_SIZE": "3",
                    "LOCAL_RANK": "2", "GROUP_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": "29500", "TORCHELASTIC_RESTART_COUNT": "4"}
        os.set_blocking(self.from_worker_r, False)
        self._heard = b""

    def send(self, line):
        os.write(self.to_worker_w, (line + "\n").encode())

    def close(self):
        for fd in (self.to_worker_w, self.from_worker_r):
            try:
                os.close(fd)
            except OSError:
                pass

    def heard(self, timeout=2.0):
        """Every line the worker wrote so far (waiting up to `timeout` for one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = os.read(self.from_worker_r, 4096)
                self._heard += chunk
            except BlockingIOError:
                if self._heard.endswith(b"\n"):
                    break
                time.sleep(0.005)
        lines, self._heard = self._heard.decode().splitlines(), b""
        return lines


def new_session(agent, timeout=2.0, on_message=lambda: None):
    return Session.from_env(timeout, on_message=on_message, environ=agent.env)


# Each message's line and meaning: control/test_vectors.txt, read by
# muster_control_vectors_test.py. Here: the words of the errors.
class ParseTest(unittest.TestCase):
    def test_bad_lines_name_the_line(self):
        for line, why in [
                ("pause", "one field"), ("pause 07", "not a decimal"), ("pause -1", "not a decimal"),
                ("resume 1", "unknown verb"), ("stop now", "no field"),
                (JOIN_2.replace(" RANK=1", ""), "missing RANK"),
                (JOIN_2 + " RANK=1", "given twice"), (JOIN_2 + " COLOR=red", "unknown field"),
                (JOIN_2.replace("RANK=1 ", "RANK=3 "), "below WORLD_SIZE"),
                (JOIN_2.replace("29400", "70000"), "outside 1-65535"),
                (JOIN_2.replace("WORLD_SIZE=3", "WORLD_SIZE=x"), "WORLD_SIZE")]:
            with self.subTest(line=line):
                with self.assertRaises(ProtocolError) as caught:
                    parse_agent_line(line)
                self.assertIn(repr(line), str(caught.exception))
                self.assertIn(why, str(caught.exception))


class SessionTest(unittest.TestCase):
    def setUp(self):
        self.agent = FakeAgent()
        self.addCleanup(self.agent.close)

    def test_without_a_channel_nothing_is_said(self):
        env = dict(self.agent.env)
        del env["MUSTER_CONTROL_FD"]  # torchrun, plain python, --recovery restart
        s = Session.from_env(1.0, environ=env)
        self.assertFalse(s.in_place)
        self.assertFalse(s.message_waiting())
        self.assertEqual(self.agent.heard(timeout=0.1), [])

    def test_a_rank_0_store_means_no_hello(self):
        env = dict(self.agent.env, TORCHELASTIC_USE_AGENT_STORE="False")
        self.assertFalse(Session.from_env(1.0, environ=env).in_place)
        self.assertEqual(self.agent.heard(timeout=0.1), [])

    def test_a_descriptor_that_is_no_pipe_means_no_channel(self):
        env = dict(self.agent.env)
        with open(os.devnull) as f:
            env["MUSTER_CONTROL_FD"] = str(f.fileno())
            self.assertFalse(Session.from_env(1.0, environ=env).in_place)

    def test_hello_then_membership_from_the_environment(self):
        s = new_session(self.agent)
        self.assertTrue(s.in_place)
        self.assertEqual(self.agent.heard(), ["hello 1 in-place"])
        self.assertEqual(s.membership, Membership(2, 3, 2, 0, "127.0.0.1", 29500, "muster/4/", None))

    def test_pause_interrupts_then_ready_join_joined(self):
        interrupted = threading.Event()
        s = new_session(self.agent, on_message=interrupted.set)
        self.agent.heard()
        self.agent.send("pause 4")
        self.assertTrue(interrupted.wait(2.0), "the pause did not interrupt the process group")
        self.assertTrue(wait_until(s.message_waiting))  # queued right after the interrupt
        pause = s.take_pause()
        self.assertEqual(pause, Pause(4))
        s.leave(pause)
        self.assertEqual(self.agent.heard(), ["ready 4"])
        self.agent.send(JOIN_2.replace("join 2", "join 5"))
        m = s.await_join()
        self.assertEqual((m.rank, m.world_size, m.master_addr, m.master_port, m.store_prefix,
                          m.joining), (1, 3, "10.0.0.1", 29400, "muster/2/", 5))
        s.joined()
        self.assertEqual(self.agent.heard(), ["joined 5"])

    def test_a_pause_left_unanswered_prints_every_threads_stack(self):
        # A main thread still blocked (here: never answering) after
        # STUCK_REPORT_S says where every thread is, before muster gives up.
        stuck_after = session.STUCK_REPORT_S
        session.STUCK_REPORT_S = 0.2
        self.addCleanup(setattr, session, "STUCK_REPORT_S", stuck_after)
        err = tempfile.NamedTemporaryFile(mode="w")
        self.addCleanup(err.close)
        real_stderr, sys.stderr = sys.stderr, err
        self.addCleanup(setattr, sys, "stderr", real_stderr)
        quiet = session.log  # this file silences the package's notes; this one is the point
        session.log = lambda message: (err.write(f"muster: {message}\n"), err.flush())
        self.addCleanup(setattr, session, "log", quiet)
        s = new_session(self.agent)
        self.agent.heard()
        self.agent.send("pause 4")
        self.assertTrue(wait_until(s.message_waiting))
        self.assertTrue(wait_until(lambda: "Thread" in read_all(err), timeout=3.0),
                        read_all(err))
        text = read_all(err)
        self.assertIn("no answer to muster's pause 4 after 0 s", text)
        self.assertIn("File ", text)  # faulthandler's frames
        # Answered in time: nothing more is printed.
        s.leave(s.take_pause())
        self.agent.send("pause 5")
        self.assertTrue(wait_until(s.message_waiting))
        s.leave(s.take_pause())
        time.sleep(0.4)
        self.assertNotIn("pause 5", read_all(err))

    def test_a_join_interrupts_nothing(self):
        # The main thread forms the new group as soon as it takes the join:
        # an interrupt then would cut the new group's sockets.
        interrupts = []
        s = new_session(self.agent, on_message=lambda: interrupts.append(1))
        self.agent.send("pause 4")
        s.leave(None)
        self.assertEqual(interrupts, [1])
        self.agent.send(JOIN_2)
        s.await_join()
        time.sleep(0.05)  # the reader thread's turn after queueing
        self.assertEqual(interrupts, [1], "the join interrupted the process group")

    def test_a_failed_collective_waits_for_the_pause(self):
        s = new_session(self.agent)
        self.agent.heard()
        threading.Timer(0.2, self.agent.send, ["pause 4"]).start()
        began = time.monotonic()
        s.leave(None)
        self.assertGreaterEqual(time.monotonic() - began, 0.15)
        self.assertEqual(self.agent.heard(), ["ready 4"])

    def test_a_second_pause_during_the_join_is_answered(self):
        s = new_session(self.agent)
        self.agent.heard()
        self.agent.send("pause 4")
        s.leave(None)
        self.agent.send("pause 5")  # the generation being joined ended first
        self.agent.send(JOIN_2.replace("join 2", "join 6"))
        self.assertEqual(s.await_join().joining, 6)
        self.assertEqual(self.agent.heard(), ["ready 4", "ready 5"])

    def test_join_before_pause_is_refused(self):
        s = new_session(self.agent)
        self.agent.heard()
        self.agent.send(JOIN_2)
        with self.assertRaises(RecoveryExit) as caught:
            s.await_join()
        self.assertEqual(caught.exception.code, 75)
        self.assertEqual(self.agent.heard(), ["failed 2 join before pause"])

    def test_stop_exits(self):
        s = new_session(self.agent)
        self.agent.send("stop")
        with self.assertRaises(RecoveryExit) as caught:
            s.leave(None)
        self.assertIn("stopped by muster", str(caught.exception))

    def test_stop_between_steps_exits(self):
        s = new_session(self.agent)
        self.agent.send("stop")
        self.assertTrue(wait_until(s.message_waiting))
        with self.assertRaises(RecoveryExit):
            s.take_pause()

    def test_no_pause_in_time_exits_for_the_restart_path(self):
        s = new_session(self.agent, timeout=0.2)
        began = time.monotonic()
        with self.assertRaises(RecoveryExit) as caught:
            s.leave(None)
        self.assertLess(time.monotonic() - began, 1.5)
        self.assertIn("in time", str(caught.exception))

    def test_no_join_in_time_exits(self):
        s = new_session(self.agent, timeout=0.2)
        self.agent.send("pause 4")
        s.leave(None)
        with self.assertRaises(RecoveryExit):
            s.await_join()

    def test_agent_gone_exits(self):
        s = new_session(self.agent)
        os.close(self.agent.to_worker_w)
        with self.assertRaises(RecoveryExit) as caught:
            s.leave(None)
        self.assertIn("closed", str(caught.exception))

    def test_a_bad_line_is_ignored_and_the_next_one_read(self):
        s = new_session(self.agent)
        self.agent.send("pause x")
        self.agent.send("pause 4")
        s.leave(None)
        self.assertEqual(self.agent.heard()[-1], "ready 4")

    def test_other_messages_between_steps_are_dropped(self):
        s = new_session(self.agent)
        self.agent.send(JOIN_2)
        self.assertTrue(wait_until(s.message_waiting))
        self.assertIsNone(s.take_pause())
        self.assertFalse(s.message_waiting())

    def test_progress_lines_are_step_numbers_at_most_one_per_interval(self):
        s = new_session(self.agent)
        self.agent.heard()
        s.report_progress(12)
        s.report_progress(13)  # within the interval: not sent
        self.assertEqual(self.agent.heard(), ["12"])
        time.sleep(Session.PROGRESS_INTERVAL_S)
        s.report_progress(14)
        self.assertEqual(self.agent.heard(), ["14"])

    def test_progress_is_reported_without_a_channel_too(self):
        env = dict(self.agent.env)
        del env["MUSTER_CONTROL_FD"]  # --recovery restart: the progress pipe only
        s = Session.from_env(1.0, environ=env)
        s.report_progress(3)
        self.assertEqual(self.agent.heard(), ["3"])

    def test_finish_closes_the_progress_pipe(self):
        s = new_session(self.agent)
        self.agent.heard()
        s.finish()
        s.report_progress(4)  # nothing after finish
        # In this process the worker's descriptor is the pipe's only write end.
        self.assertEqual(os.read(self.agent.from_worker_r, 100), b"", "the pipe is not closed")

    def test_a_line_in_pieces(self):
        channel = control.Channel(self.agent.to_worker_r, self.agent.from_worker_w)
        os.write(self.agent.to_worker_w, b"pau")
        self.assertIsNone(channel.receive(0.05))
        os.write(self.agent.to_worker_w, b"se 9\nsto")
        self.assertEqual(channel.receive(1.0), Pause(9))
        os.write(self.agent.to_worker_w, b"p\n")
        self.assertEqual(channel.receive(1.0), Stop())

    def test_failed_reason_is_printable(self):
        channel = control.Channel(self.agent.to_worker_r, self.agent.from_worker_w)
        channel.say_failed(3, "peer\tgone\n")
        self.assertEqual(self.agent.heard(), ["failed 3 peer?gone?"])


class VersionTest(unittest.TestCase):
    def test_the_package_version_is_the_project_version(self):
        import re
        import muster
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with open(os.path.join(root, "CMakeLists.txt")) as f:
            project = re.search(r"project\(muster VERSION ([0-9.]+)", f.read()).group(1)
        self.assertEqual(muster.__version__, project)


def wait_until(predicate, timeout=2.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


if __name__ == "__main__":
    session.log = lambda message: None  # the ignored-line notes are expected here
    unittest.main(verbosity=1)
