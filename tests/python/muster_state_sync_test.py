"""Tests of python/muster/state_sync.py: the state a generation agrees on
moves as JSON and tensors, never as a pickle. Any torch (1.13, 2.6, 2.14):
tests/integration/torch_state_sync_test.py runs this file with each.

- the header's forms, one by one: what encode_payload writes, parse_header
  and decode give back (tuples, int keys, bytes, NaN, tensors of several
  dtypes); a value that cannot travel is refused naming its path and type;
  a pickle, or JSON the source never writes, is refused;
- two ranks over gloo (forked, a FileStore): an honest source's optimizer,
  module and state arrive whole; a source whose state cannot travel makes
  both ranks raise its message instead of hanging; a peer that broadcasts
  a pickle whose unpickling would create a file, where the state's header
  goes, is refused with a clear error and the file does not exist; one whose
  header announces a petabyte is refused.

Run: /usr/bin/python3 tests/python/muster_state_sync_test.py
"""
import datetime
import io
import json
import math
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
import traceback
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from muster import state_sync  # noqa: E402
from muster.state_sync import StateTransferError  # noqa: E402

MARKER_NAME = "unpickled-code-ran"


class Payload:
    """A value whose unpickling creates the file `marker`: what an attacker
    who reaches gloo's ports could broadcast."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


class Opaque:
    """A script's own object: it has no JSON form."""


def round_trip(optimizer_state, state):
    header, tensors = state_sync.encode_payload(optimizer_state, state)
    parsed = state_sync.parse_header(header)
    received = [t.detach().clone() for t in tensors]
    return (state_sync.decode(parsed.optimizer, received, "optimizer"),
            state_sync.decode(parsed.state, received, "state"))


def header_with(**fields):
    header = {"format": state_sync.FORMAT, "optimizer": None, "state": {"dict": []},
              "tensors": []}
    header.update(fields)
    return json.dumps(header).encode()


class TheHeaderTest(unittest.TestCase):
    def test_every_form_comes_back_as_it_left(self):
        state = {"epoch": 3, "lr": 0.5, "name": "run", "none": None, "flag": True,
                 "nan": float("nan"), "inf": -math.inf, "big": 2 ** 80, "blob": b"\x00\xff",
                 "rng": torch.get_rng_state(), "pair": (1, (2.5, "x")), "list": [1, [2]],
                 7: {"nested": {None: 1, 2.5: 2, False: 3}},
                 "half": torch.arange(4, dtype=torch.float16).reshape(2, 2),
                 "mask": torch.tensor([True, False]), "scalar": torch.tensor(4.25),
                 "empty": torch.zeros(0, 3)}
        optimizer_state = {"state": {0: {"step": torch.tensor(2.0),
                                         "exp_avg": torch.randn(3, dtype=torch.float64)}},
                           "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0]}]}
        got_optimizer, got = round_trip(optimizer_state, state)
        self.assertEqual(set(got), set(state))
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                self.assertEqual((got[key].dtype, got[key].shape), (value.dtype, value.shape), key)
                self.assertTrue(torch.equal(got[key], value), key)
            elif key == "nan":
                self.assertTrue(math.isnan(got[key]))
            else:
                self.assertEqual(got[key], value, key)
                self.assertIs(type(got[key]), type(value), key)
        self.assertIs(type(got["pair"][1]), tuple)
        self.assertEqual(got_optimizer["param_groups"], optimizer_state["param_groups"])
        self.assertEqual(list(got_optimizer["state"]), [0])
        self.assertTrue(torch.equal(got_optimizer["state"][0]["exp_avg"],
                                    optimizer_state["state"][0]["exp_avg"]))

    def test_a_value_that_cannot_travel_is_refused_naming_its_path_and_type(self):
        cases = [({"seen": {1, 2}}, "state['seen']: a set cannot move between ranks; "
                  "state may hold None, bool, int"),
                 ({"sampler": {"order": [1, Opaque()]}},
                  "state['sampler']['order'][1]: a __main__.Opaque cannot move"),
                 ({"counts": {(1, 2): 3}}, "state['counts']: a key of type tuple cannot move"),
                 ({"sparse": torch.eye(2).to_sparse()}, "state['sparse']: a torch.sparse_coo")]
        for state, expected in cases:
            with self.assertRaises(StateTransferError) as caught:
                state_sync.check_transferable(state)
            self.assertIn(expected, str(caught.exception))

    def test_a_pickle_is_refused_and_never_unpickled(self):
        with tempfile.TemporaryDirectory() as work:
            marker = os.path.join(work, MARKER_NAME)
            for name, data in [("pickle", pickle.dumps({"state": Payload(marker)})),
                               ("torch.save", saved({"extra": {"x": Payload(marker)}}))]:
                with self.assertRaises(StateTransferError, msg=name) as caught:
                    state_sync.parse_header(data)
                self.assertIn("not JSON", str(caught.exception))
            self.assertFalse(os.path.exists(marker), "unpickling ran the payload's code")

    def test_json_the_source_never_writes_is_refused(self):
        one_tensor = [{"dtype": "float32", "shape": [2], "device": "cpu"}]
        cases = [(b"[]", "not of the form"),
                 (json.dumps({"format": "other"}).encode(), "not of the form"),
                 (header_with(extra=1), "fields"),
                 (header_with(tensors=[{"dtype": "object", "shape": [1], "device": "cpu"}]),
                  "dtype 'object'"),
                 (header_with(tensors=[{"dtype": "float32", "shape": [-1], "device": "cpu"}]),
                  "shape '[-1]'"),
                 (header_with(tensors=[{"dtype": "float32", "shape": [True], "device": "cpu"}]),
                  "shape '[True]'"),
                 (header_with(state={"dict": [["w", {"tensor": 1}]]}, tensors=one_tensor),
                  "state['w']"),
                 (header_with(state={"dict": [["f", {"global": "os.system"}]]}), "state['f']"),
                 (header_with(state={"dict": [["b", {"bytes": "%%"}]]}), "not base64"),
                 (header_with(state=[1]), "state is not a dict"),
                 (header_with(optimizer={"tuple": 3}), "optimizer is"),
                 (b"[" * 100000 + b"]" * 100000, "not JSON"),
                 (b"x" * (state_sync.HEADER_LIMIT + 1), "more than")]
        for data, expected in cases:
            with self.assertRaises(StateTransferError, msg=data[:60]) as caught:
                state_sync.parse_header(data)
            self.assertIn(expected, str(caught.exception))

    def test_small_tensors_move_packed_and_large_ones_alone(self):
        large, limit = 3 << 20, state_sync.BUCKET_BYTES
        self.assertEqual(state_sync.buckets([0, 10, large, 5, limit - 10, 20]),
                         [(large, [(2, 0)]), (15, [(1, 0), (3, 10)]), (limit - 10, [(4, 0)]),
                          (20, [(5, 0)])])
        self.assertEqual(state_sync.buckets([0, 0]), [])

    def test_a_sources_error_is_what_the_receiver_raises(self):
        with self.assertRaises(StateTransferError) as caught:
            state_sync.parse_header(state_sync.error_header("state['x']: a set cannot move"))
        self.assertIn("could not send its state: state['x']: a set", str(caught.exception))


def saved(value):
    """`value` as torch.save writes it."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


# --- two ranks ---------------------------------------------------------------

def model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                                torch.nn.Linear(8, 1))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def train(model, optimizer, steps):
    for step in range(steps):
        torch.manual_seed(step)
        loss = model(torch.randn(6, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def run_rank(rank, store_path, role, out_path, work):
    try:
        torch.set_num_threads(1)
        store = dist.FileStore(store_path, 2)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=2,
                                timeout=datetime.timedelta(seconds=30))
        result = role(rank, work)
    except BaseException as error:  # reported to the parent, which decides
        result = {"error": type(error).__name__, "message": str(error),
                  "traceback": traceback.format_exc()}
    with open(out_path, "w") as out:
        json.dump(result, out)
    os._exit(0)


def on_two_ranks(test, role, timeout=60):
    """role(rank, work) on ranks 0 and 1 of a gloo group; returns both
    results (the role's dict, or {"error", "message"})."""
    work = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, work, True)
    context = multiprocessing.get_context("fork")
    outs = [os.path.join(work, f"rank{r}.json") for r in range(2)]
    procs = [context.Process(target=run_rank,
                             args=(r, os.path.join(work, "store"), role, outs[r], work))
             for r in range(2)]
    for proc in procs:
        proc.start()
    try:
        for proc in procs:
            proc.join(timeout)
        test.assertFalse(any(p.is_alive() for p in procs), f"a rank did not finish in {timeout} s")
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join()
    results = []
    for path in outs:
        with open(path) as f:
            results.append(json.load(f))
    return results, work


def honest_role(rank, work):
    model, optimizer = model_and_optimizer()
    state = {"epoch": 0}
    if rank == 0:
        train(model, optimizer, 5)
        state = {"epoch": 2, "rng": torch.get_rng_state(), "order": (3, 1, 2), 5: [b"k"],
                 "large": torch.arange(150000, dtype=torch.int64)}  # a broadcast of its own
    step, source = state_sync.agree_on_state(5 if rank == 0 else 0, model, optimizer, state,
                                             torch.device("cpu"))
    # Both ranks go on identically from here: one more step each.
    train(model, optimizer, 1)
    flat = torch.cat([p.detach().reshape(-1) for p in model.state_dict().values()
                      if p.is_floating_point()])
    return {"step": step, "source": source, "weights": flat.tolist(),
            "optimizer_step": float(torch.as_tensor(optimizer.state_dict()["state"][0]["step"])),
            "epoch": state["epoch"], "order": list(state["order"]),
            "order_type": type(state["order"]).__name__, "key_5": [b.hex() for b in state[5]],
            "rng": [str(state["rng"].dtype), state["rng"].tolist()],
            "large": [str(state["large"].dtype), int(state["large"].sum())]
            if "large" in state else None}


def bad_state_role(rank, work):
    model, optimizer = model_and_optimizer()
    state = {"epoch": 1, "sampler": Opaque()} if rank == 0 else {}
    state_sync.agree_on_state(3 if rank == 0 else 0, model, optimizer, state, torch.device("cpu"))
    return {"agreed": True}


def attacker_role(rank, work):
    """Rank 0 plays a peer that claims the most steps and sends, where the
    optimizer's and the state's header goes, the pickle that muster's
    earlier versions loaded with torch.load(weights_only=False)."""
    model, optimizer = model_and_optimizer()
    marker = os.path.join(work, MARKER_NAME)
    if rank == 1:
        state = {"epoch": 0}
        state_sync.agree_on_state(0, model, optimizer, state, torch.device("cpu"))
        return {"agreed": True, "state": repr(state)}
    every = [torch.zeros(1, dtype=torch.int64) for _ in range(2)]
    dist.all_gather(every, torch.tensor([1000]))
    for tensor in model.state_dict().values():
        dist.broadcast(tensor, 0)
    payload = saved({"optimizer": None, "extra": {"epoch": Payload(marker)}})
    dist.broadcast(torch.tensor([len(payload)], dtype=torch.int64), 0)
    dist.broadcast(torch.frombuffer(bytearray(payload), dtype=torch.uint8), 0)
    return {"sent": len(payload)}


def huge_header_role(rank, work):
    """Rank 0 plays a peer whose header, well formed, announces a tensor of a
    petabyte."""
    model, optimizer = model_and_optimizer()
    if rank == 1:
        state_sync.agree_on_state(0, model, optimizer, {}, torch.device("cpu"))
        return {"agreed": True}
    every = [torch.zeros(1, dtype=torch.int64) for _ in range(2)]
    dist.all_gather(every, torch.tensor([1000]))
    for tensor in model.state_dict().values():
        dist.broadcast(tensor, 0)
    header = header_with(state={"dict": [["w", {"tensor": 0}]]},
                         tensors=[{"dtype": "uint8", "shape": [1 << 50], "device": "cpu"}])
    dist.broadcast(torch.tensor([len(header)], dtype=torch.int64), 0)
    dist.broadcast(torch.frombuffer(bytearray(header), dtype=torch.uint8), 0)
    return {"sent": len(header)}


class TwoRanksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # torch 2.x imports its compiler stack when the first optimizer is
        # built (1.6 s in the 2.14 chroot): once here, not in every child.
        model_and_optimizer()

    def test_an_honest_sources_module_optimizer_and_state_arrive_whole(self):
        (source, receiver), _ = on_two_ranks(self, honest_role)
        for result in (source, receiver):
            self.assertNotIn("error", result, result.get("traceback"))
        self.assertEqual((receiver["step"], receiver["source"]), (5, 0))
        self.assertEqual(receiver["weights"], source["weights"])
        self.assertEqual(receiver["optimizer_step"], source["optimizer_step"])
        self.assertEqual(receiver["optimizer_step"], 6.0)
        self.assertEqual((receiver["epoch"], receiver["order"], receiver["order_type"]),
                         (2, [3, 1, 2], "tuple"))
        self.assertEqual(receiver["key_5"], [b"k".hex()])
        self.assertEqual(receiver["rng"], source["rng"])
        self.assertEqual(receiver["rng"][0], "torch.uint8")
        self.assertEqual(receiver["large"], source["large"])
        self.assertEqual(receiver["large"], ["torch.int64", sum(range(150000))])

    def test_a_source_whose_state_cannot_travel_fails_both_ranks_with_its_message(self):
        (source, receiver), _ = on_two_ranks(self, bad_state_role)
        self.assertEqual(source.get("error"), "StateTransferError", source)
        self.assertIn("state['sampler']: a __main__.Opaque cannot move", source["message"])
        self.assertEqual(receiver.get("error"), "StateTransferError", receiver)
        self.assertIn("rank 1: rank 0's state refused: the source could not send its state: "
                      "state['sampler']: a __main__.Opaque", receiver["message"])

    def test_a_peer_broadcasting_a_pickle_runs_no_code_on_the_receiver(self):
        (attacker, receiver), work = on_two_ranks(self, attacker_role)
        self.assertNotIn("error", attacker, attacker.get("traceback"))
        self.assertFalse(os.path.exists(os.path.join(work, MARKER_NAME)),
                         "the peer's pickle ran code on the receiver")
        self.assertEqual(receiver.get("error"), "StateTransferError", receiver)
        self.assertIn("rank 1: rank 0's state refused: the peer's state header was refused: it "
                      "is not JSON", receiver["message"])

    def test_a_peer_announcing_a_petabyte_is_refused(self):
        (_, receiver), _ = on_two_ranks(self, huge_header_role)
        self.assertEqual(receiver.get("error"), "StateTransferError", receiver)
        self.assertIn(f"rank 1: rank 0's state refused: {1 << 50} bytes announced",
                      receiver["message"])


if __name__ == "__main__":
    print(f"torch {torch.__version__}", flush=True)
    unittest.main()
