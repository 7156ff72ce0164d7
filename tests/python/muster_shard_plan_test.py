"""Tests of python/muster/shard_plan.py, the pure decision of where each
rank's shard comes from after a fault (no torch): the first generation; an
HSDP replacement served by its replica; a rank that stepped once more
rolled back; FSDP without replicas served by the held copy, with the
survivors' snapshots; a lost shard held nowhere, a held copy one step too
old, a shard count changed and a world the shard count does not divide,
each refused with a reason; an elastic shrink and a renumbering; senders'
load spread; the offers' wire rows.

Run: python3 tests/python/muster_shard_plan_test.py
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from muster.shard_plan import (HELD, LIVE, ROW, SNAPSHOT, NoPlan, Offer, Source,  # noqa: E402
                               from_row, plan, to_row)

NEW = Offer(-1, -1, -1, (), None)


def live(shard, shards, step, snapshots=(), held=None):
    return Offer(shard, shards, step, snapshots, held)


class ShardPlanTest(unittest.TestCase):
    def test_the_first_generation_keeps_what_every_rank_built_at_the_start_step(self):
        decided = plan([NEW._replace(start=5)] * 4, 2)
        self.assertEqual(decided.step, 5)
        self.assertEqual(decided.sources, [Source(LIVE, r) for r in range(4)])
        self.assertEqual(decided.sends, [[], [], [], []])

    def test_hsdp_a_replacement_takes_its_shard_from_the_other_replica_group(self):
        offers = [live(0, 2, 8), NEW, live(0, 2, 8), live(1, 2, 8)]
        decided = plan(offers, 2)
        self.assertEqual(decided.step, 8)
        self.assertEqual(decided.sources[1], Source(LIVE, 3))
        self.assertEqual(decided.sends[3], [(1, LIVE)])
        for rank in (0, 2, 3):
            self.assertEqual(decided.sources[rank], Source(LIVE, rank))

    def test_a_rank_one_step_ahead_is_rolled_back_by_a_replica(self):
        # Rank 0 finished step 9 before the fault; shard 1 is only at 8.
        offers = [live(0, 2, 9), NEW, live(0, 2, 8), live(1, 2, 8)]
        decided = plan(offers, 2)
        self.assertEqual(decided.step, 8)
        self.assertEqual(decided.sources[0], Source(LIVE, 2))
        self.assertEqual(decided.sources[1], Source(LIVE, 3))

    def test_fsdp_the_held_copy_serves_the_lost_shard_and_snapshots_roll_back(self):
        # Ring: rank r holds rank r-1's copy. Rank 1 lost; rank 2 holds shard 1 at 7.
        offers = [live(0, 4, 8, (7, 8), (3, 7)), NEW, live(2, 4, 8, (7, 8), (1, 7)),
                  live(3, 4, 8, (7, 8), (2, 7))]
        decided = plan(offers, 4)
        self.assertEqual(decided.step, 7)
        self.assertEqual(decided.sources[1], Source(HELD, 2))
        for rank in (0, 2, 3):
            self.assertEqual(decided.sources[rank], Source(SNAPSHOT, rank))

    def test_live_state_is_preferred_to_a_snapshot(self):
        offers = [live(0, 2, 8, (7, 8), (1, 8)), live(1, 2, 8, (7, 8), (0, 8))]
        decided = plan(offers, 2)
        self.assertEqual(decided.sources, [Source(LIVE, 0), Source(LIVE, 1)])

    def test_a_lost_shard_held_nowhere_is_refused_with_the_shard(self):
        decided = plan([live(0, 4, 8), NEW, live(2, 4, 8), live(3, 4, 8)], 4)
        self.assertIsInstance(decided, NoPlan)
        self.assertIn("shard(s) [1]", decided.reason)

    def test_a_held_copy_older_than_every_snapshot_is_refused(self):
        offers = [live(0, 2, 9, (8, 9), (1, 7)), NEW]
        decided = plan(offers, 2)
        self.assertIsInstance(decided, NoPlan)
        self.assertIn("no step at which every shard is held", decided.reason)

    def test_a_changed_shard_count_is_refused(self):
        decided = plan([live(0, 4, 8), live(1, 4, 8), live(2, 4, 8)], 3)
        self.assertIsInstance(decided, NoPlan)
        self.assertIn("[4]", decided.reason)
        self.assertIn("3 shards", decided.reason)

    def test_a_world_the_shard_count_does_not_divide_is_refused(self):
        decided = plan([live(0, 2, 8)] * 3, 2)
        self.assertIsInstance(decided, NoPlan)
        self.assertIn("3 ranks", decided.reason)

    def test_an_elastic_shrink_keeps_the_surviving_replica_group(self):
        # HSDP 2x2 lost ranks 2 and 3 (a node): ranks 0 and 1 go on as FSDP over 2.
        decided = plan([live(0, 2, 12), live(1, 2, 12)], 2)
        self.assertEqual(decided.step, 12)
        self.assertEqual(decided.sources, [Source(LIVE, 0), Source(LIVE, 1)])

    def test_renumbered_survivors_swap_their_shards(self):
        decided = plan([live(1, 2, 5), live(0, 2, 5)], 2)
        self.assertEqual(decided.sources, [Source(LIVE, 1), Source(LIVE, 0)])
        self.assertEqual(decided.sends, [[(1, LIVE)], [(0, LIVE)]])

    def test_newcomers_are_spread_over_the_ranks_holding_their_shard(self):
        # 4x1 replicas of one shard: three newcomers, two live holders.
        offers = [live(0, 1, 3), live(0, 1, 3), NEW, NEW, NEW]
        decided = plan(offers, 1)
        senders = [decided.sources[r].rank for r in (2, 3, 4)]
        self.assertEqual(senders, [0, 1, 0])

    def test_offers_survive_their_wire_rows(self):
        for offer in (NEW, live(3, 4, 9, (8, 9), (2, 8)), live(0, 1, 0, (5,), None)):
            row = to_row(offer)
            self.assertEqual(len(row), ROW)
            self.assertEqual(from_row(row), offer)
        with self.assertRaisesRegex(ValueError, "not of this version"):
            from_row([0] * ROW)


if __name__ == "__main__":
    unittest.main()
