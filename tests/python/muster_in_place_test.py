"""Unit tests of python/muster/in_place.py's InPlace outside a muster in-place
run, on CPU with Debian's torch 1.13: a one-process gloo group formed from
torchrun's environment over a store this test serves.

- the rank and world size stay known once the group is gone (an NCCL abort
  removes the default group, and the failure is then logged with the rank);
- a `state` holding a value that cannot move between ranks without a
  pickle is refused at construction, naming its key and type.

Run: /usr/bin/python3 tests/python/muster_in_place_test.py
"""
import datetime
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import muster  # noqa: E402


class RankAfterTheGroupTest(unittest.TestCase):
    def setUp(self):
        # The store serves port 0's pick; the group joins it as a client, as
        # torchrun's workers join the agent's store.
        self.store = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=10))
        saved = dict(os.environ)
        self.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
        for name in [n for n in os.environ if n.startswith("MUSTER_")]:
            del os.environ[name]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(self.store.port), TORCHELASTIC_USE_AGENT_STORE="True",
                          TORCHELASTIC_RESTART_COUNT="0")

    def test_rank_and_world_size_outlive_the_default_group(self):
        model = torch.nn.Linear(2, 2)
        job = muster.InPlace(model, torch.optim.SGD(model.parameters(), lr=0.1), timeout=10)
        self.assertFalse(job.in_place)
        self.assertEqual((job.rank, job.world_size), (0, 1))
        dist.destroy_process_group()
        self.assertEqual((job.rank, job.world_size), (0, 1))

    def test_a_state_that_cannot_travel_is_refused_at_construction(self):
        model = torch.nn.Linear(2, 2)
        with self.assertRaises(muster.StateTransferError) as caught:
            muster.InPlace(model, state={"epoch": 1, "seen": {3, 4}}, timeout=10)
        self.assertIn("state['seen']: a set cannot move between ranks", str(caught.exception))
        self.assertFalse(dist.is_initialized(), "a group was formed for a refused state")


if __name__ == "__main__":
    unittest.main()
