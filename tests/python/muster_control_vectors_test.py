"""The control channel's shared test vectors (control/test_vectors.txt, its
format at its top) against the muster Python package: every agent line
through Channel.receive over a real pipe, and every worker message the
package can say through Channel.say_*. No torch, no muster process.
tests/unit/control_vectors_test.cc checks the C++ codec against the same file.

Run: python3 tests/python/muster_control_vectors_test.py (stdlib unittest; exit 0 on success).
"""
import os
import re
import sys
import unittest
from typing import NamedTuple

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))

from muster import control  # noqa: E402
from muster.control import Join, Pause, ProtocolError, Stop  # noqa: E402

VECTORS = os.path.join(ROOT, "control", "test_vectors.txt")

# Words of the package's errors for each refusal category of the file.
CATEGORY_WORDS = {
    "length": ("over 4096 bytes",),
    "verb": ("unknown verb",),
    "count": ("takes one field", "takes no field", "names no generation"),
    "byte": ("is not printable ASCII without spaces", "not ASCII"),
    "number": ("is not a decimal number",),
    "range": ("must be below WORLD_SIZE", "is outside 1-65535"),
    "join-field": ("is not NAME=VALUE", "unknown field", "given twice", "missing "),
}
NUMBER_FIELDS = {"version", "generation", "rank", "world_size", "group_rank", "local_rank",
                 "master_port"}
_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]{2})|\{(\d+):([^\\])\}|(\\))")


class Vector(NamedTuple):
    number: int  # its line in the file
    sender: str  # FROM
    line: bytes
    kind: str
    type: str  # TYPE, or the categories of a refusal
    fields: dict


def unescape(text):
    """The bytes `text` stands for: \\\\, \\xHH and \\{N:C} (the file's header)."""
    if "\\" in _ESCAPE.sub("", text):
        raise ValueError(f"a backslash that is no escape in {text!r}")

    def one(match):
        hex_byte, count, char, _ = match.groups()
        if hex_byte:
            return chr(int(hex_byte, 16))
        return char * int(count) if count else "\\"
    return _ESCAPE.sub(one, text).encode("latin-1")


def read_vectors(sender):
    """The vectors of lines that `sender` writes."""
    vectors = []
    with open(VECTORS, encoding="ascii") as f:
        for number, text in enumerate(f, start=1):
            text = text.rstrip("\n")
            if not text or text.startswith("#"):
                continue
            columns = text.split("\t")
            fields = {}
            for column in columns[4:]:
                name, _, value = column.partition("=")
                value = unescape(value).decode("latin-1")
                fields[name] = int(value) if name in NUMBER_FIELDS else value
            vector = Vector(number, columns[0], unescape(columns[1]), columns[2], columns[3],
                            fields)
            if vector.sender == sender:
                vectors.append(vector)
    return vectors


class PipeTest(unittest.TestCase):
    def setUp(self):
        self.read_end, self.write_end = os.pipe()

    def tearDown(self):
        os.close(self.read_end)
        os.close(self.write_end)


class AgentLinesTest(PipeTest):
    def test_every_agent_line_means_what_the_file_says(self):
        vectors = read_vectors("agent")
        self.assertTrue(vectors)
        for v in vectors:
            with self.subTest(vector=f"test_vectors.txt:{v.number}"):
                self.check(v)

    def check(self, v):
        channel = control.Channel(self.read_end, -1)
        os.write(self.write_end, v.line + b"\n")
        if v.kind != "refused":
            self.assertEqual(channel.receive(1.0), self.meaning(v))
            return
        with self.assertRaises(ProtocolError) as caught:
            channel.receive(1.0)
        error = str(caught.exception)
        words = [w for category in v.type.split("|") for w in CATEGORY_WORDS[category]]
        self.assertTrue(any(w in error for w in words), f"{error!r} says none of {words}")
        self.assertNotIn("\n", error)
        if len(v.line) + 1 <= control.MAX_LINE_BYTES:  # an over-long line is not named
            try:
                named = repr(v.line.decode("ascii"))
            except UnicodeDecodeError:
                named = repr(v.line)
            self.assertIn(named, error)
        # What an over-long line left in the pipe is not the next vector's.
        os.set_blocking(self.read_end, False)
        try:
            while os.read(self.read_end, 65536):
                pass
        except BlockingIOError:
            pass
        os.set_blocking(self.read_end, True)

    @staticmethod
    def meaning(v):
        message = {"pause": Pause, "join": Join, "stop": Stop}[v.type]
        return message(**v.fields)


class WorkerLinesTest(PipeTest):
    def test_every_worker_message_the_package_says_is_its_line(self):
        said = 0
        for v in read_vectors("worker"):
            if v.kind != "round-trip":
                continue
            with self.subTest(vector=f"test_vectors.txt:{v.number}"):
                if self.say(control.Channel(-1, self.write_end), v):
                    self.assertEqual(os.read(self.read_end, 65536), v.line + b"\n")
                    said += 1
        self.assertGreater(said, 0)

    @staticmethod
    def say(channel, v):
        """Says `v`'s message, or returns False when the package cannot say it
        (say_hello says only "hello 1 in-place"; say_failed writes "?" for an
        empty reason)."""
        f = v.fields
        if v.type == "hello":
            if (f["version"], f["capabilities"]) != (1, control.IN_PLACE):
                return False
            channel.say_hello()
        elif v.type == "failed":
            if not f["reason"]:
                return False
            channel.say_failed(f["generation"], f["reason"])
        else:
            {"ready": channel.say_ready, "joined": channel.say_joined}[v.type](f["generation"])
        return True


if __name__ == "__main__":
    unittest.main(verbosity=1)
