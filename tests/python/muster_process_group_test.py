"""Unit tests of python/muster/process_group.py's interruption, on CPU with
Debian's torch 1.13 and no process group: the sockets a group opened are
shut down (listeners and older sockets stay, a reused descriptor number is
left alone), and the NCCL path's abort is bounded (a hanging abort raises
AbortStuck once, however often it is asked again).

Run: /usr/bin/python3 tests/python/muster_process_group_test.py
"""
import datetime
import os
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from muster import process_group  # noqa: E402
from muster.process_group import AbortStuck, ProcessGroup  # noqa: E402


def connected_pair(listener):
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    return client, server


class SocketInterruptTest(unittest.TestCase):
    def setUp(self):
        self.opened = []
        self.addCleanup(lambda: [s.close() for s in self.opened])

    def keep(self, *sockets):
        self.opened.extend(sockets)
        return sockets

    def test_the_groups_connected_sockets_are_shut_down_and_nothing_else(self):
        older_listener = self.keep(socket.create_server(("127.0.0.1", 0)))[0]
        older, older_peer = self.keep(*connected_pair(older_listener))
        group = ProcessGroup("gloo", datetime.timedelta(seconds=5))
        made = {}

        def init():  # what init_process_group opens: a listener and connections
            made["listener"] = self.keep(socket.create_server(("127.0.0.1", 0)))[0]
            made["pair"] = self.keep(*connected_pair(made["listener"]))

        group._init(init)
        self.assertIn("shut down 2 socket(s)", group.interrupt())
        _, server = made["pair"]
        self.assertEqual(server.recv(10), b"", "the group's connection is still open")
        # The listener still accepts; the socket older than the group still talks.
        self.keep(socket.create_connection(made["listener"].getsockname()))
        older.sendall(b"x")
        self.assertEqual(older_peer.recv(1), b"x")

    def test_a_descriptor_number_reused_since_is_left_alone(self):
        group = ProcessGroup("gloo", datetime.timedelta(seconds=5))
        made = {}
        listener = self.keep(socket.create_server(("127.0.0.1", 0)))[0]

        def init():
            made["pair"] = connected_pair(listener)

        group._init(init)
        client, server = made["pair"]
        number = client.fileno()
        client.close()
        server.close()
        # Another socket takes the number: not the group's any more.
        other, other_peer = self.keep(*connected_pair(listener))
        if other.fileno() != number:
            os.dup2(other.fileno(), number)
            self.keep(socket.socket(fileno=number))
        self.assertIn("shut down 0 socket(s)", group.interrupt())
        other.sendall(b"y")
        self.assertEqual(other_peer.recv(1), b"y")

    def test_while_forming_the_sockets_opened_so_far_are_the_groups(self):
        group = ProcessGroup("gloo", datetime.timedelta(seconds=5))
        listener = self.keep(socket.create_server(("127.0.0.1", 0)))[0]
        interrupted = {}

        def init():  # blocked on the store, as for a dead peer
            _, server = self.keep(*connected_pair(listener))
            interrupted["what"] = group.interrupt()
            self.assertEqual(server.recv(10), b"")

        group._init(init)
        self.assertIn("shut down 2 socket(s)", interrupted["what"])


class CollectiveErrorTest(unittest.TestCase):
    def test_the_errors_of_a_lost_peer_are_collectives(self):
        from muster.in_place import is_collective_error
        for text in ["[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer",
                     "Read error [127.0.0.1]:10886: Connection reset by peer",
                     "NCCL error: remote process exited", "Socket Timeout",
                     "Timed out waiting 60000ms for recv operation to complete"]:
            self.assertTrue(is_collective_error(RuntimeError(text)), text)

    def test_a_scripts_own_errors_are_not(self):
        from muster.in_place import is_collective_error
        for error in [RuntimeError("cannot restore the optimizer: shapes differ"),
                      RuntimeError("mat1 and mat2 shapes cannot be multiplied"),
                      ValueError("Connection closed by peer")]:  # not a RuntimeError
            self.assertFalse(is_collective_error(error), str(error))


class NcclAbortTest(unittest.TestCase):
    def setUp(self):
        self.saved = (process_group._abort_nccl, process_group.ABORT_TIMEOUT_S)
        self.addCleanup(self.restore)
        process_group.ABORT_TIMEOUT_S = 0.2

    def restore(self):
        process_group._abort_nccl, process_group.ABORT_TIMEOUT_S = self.saved

    def formed_group(self):
        group = ProcessGroup("nccl", datetime.timedelta(seconds=5))
        group._init(lambda: None)
        return group

    def test_an_abort_that_returns_is_reported(self):
        calls = []
        process_group._abort_nccl = lambda: calls.append(1) or True
        group = self.formed_group()
        self.assertEqual(group.interrupt(), "aborted")
        self.assertEqual(group.interrupt(), "aborted")
        self.assertEqual(len(calls), 1, "the group was aborted twice")

    def test_a_hanging_abort_raises_once_the_bound_passes(self):
        release = threading.Event()
        self.addCleanup(release.set)
        process_group._abort_nccl = lambda: release.wait(30)
        group = self.formed_group()
        began = time.monotonic()
        with self.assertRaises(AbortStuck):
            group.interrupt()
        self.assertLess(time.monotonic() - began, 2.0)
        with self.assertRaises(AbortStuck):  # a second caller (the main thread) too
            group.interrupt()

    def test_nothing_formed_nothing_aborted(self):
        process_group._abort_nccl = lambda: self.fail("aborted a group that never formed")
        group = ProcessGroup("nccl", datetime.timedelta(seconds=5))
        self.assertEqual(group.interrupt(), "no group formed")


if __name__ == "__main__":
    unittest.main(verbosity=1)
