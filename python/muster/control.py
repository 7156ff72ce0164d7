"""The worker's end of muster's agent<->worker control channel, version 1.

The protocol is control/PROTOCOL.md in muster's source tree: lines of ASCII
over two pipes. The worker -> agent pipe is the progress pipe, named by
MUSTER_PROGRESS_FD; the agent -> worker pipe is named by MUSTER_CONTROL_FD.
A launcher that sets no MUSTER_CONTROL_FD offers no channel (torchrun, plain
python, muster --recovery restart): `Channel.from_env` then returns None.

Contract: `parse_agent_line` takes one line without its newline and returns
a Pause, Join or Stop, or raises ProtocolError naming the line. The `say_*`
methods write one whole line each (a write of at most 4096 bytes to a pipe
is atomic); `receive` returns the next complete message, waiting up to
`timeout` seconds (None: for ever), or None when none came. It raises
ChannelClosed when the agent closed its end or a read failed, and
ProtocolError (naming the line; the channel stays usable) for a line that
does not parse.

Thread-safety: one reader and one writer thread at a time (they use
different descriptors). Standard library only.
"""
import os
import select
import stat
import time
from typing import NamedTuple, Optional, Union

PROTOCOL_VERSION = 1
IN_PLACE = "in-place"
MAX_LINE_BYTES = 4096  # the newline included
# The largest numbers (PROTOCOL.md "Framing"): a generation, a size, a rank.
_MAX_GENERATION = 2**64 - 1
_MAX_SIZE = 2**31 - 1
_MAX_RANK = _MAX_SIZE - 1

_JOIN_FIELDS = ("RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                "STORE_PREFIX")


class ProtocolError(ValueError):
    """A line that does not parse as version 1 of the protocol."""


class ChannelClosed(OSError):
    """The agent's end of the channel is gone (it exited) or broke."""


class Pause(NamedTuple):
    generation: int


class Join(NamedTuple):
    generation: int
    rank: int
    world_size: int
    group_rank: int
    local_rank: int
    master_addr: str
    master_port: int
    store_prefix: str


class Stop(NamedTuple):
    pass


AgentMessage = Union[Pause, Join, Stop]


def _bad(line, why):
    return ProtocolError(f"control line {line!r}: {why}")


def _number(line, text, what, largest):
    # Decimal, no sign, no leading zeros, at most `largest` (PROTOCOL.md
    # "Framing"); the length is checked first, as int() refuses 4300 digits.
    if (not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0")
            or len(text) > len(str(largest)) or int(text) > largest):
        raise _bad(line, f"{what} {text!r} is not a decimal number up to {largest}")
    return int(text)


def _printable(line, text, what):
    if not text or any(not 0x21 <= ord(c) <= 0x7E for c in text):
        raise _bad(line, f"{what} {text!r} is not printable ASCII without spaces")
    return text


def parse_agent_line(line: str) -> AgentMessage:
    """One agent -> worker line, without its newline, as its message."""
    fields = line.split(" ")
    verb = fields[0]
    if verb == "stop":
        if len(fields) != 1:
            raise _bad(line, "stop takes no field")
        return Stop()
    if verb == "pause":
        if len(fields) != 2:
            raise _bad(line, "pause takes one field, the generation")
        return Pause(_number(line, fields[1], "generation", _MAX_GENERATION))
    if verb == "join":
        if len(fields) < 2:
            raise _bad(line, "join names no generation")
        values = {}
        for field in fields[2:]:
            name, eq, value = field.partition("=")
            if not eq:
                raise _bad(line, f"field {field!r} is not NAME=VALUE")
            if name not in _JOIN_FIELDS:
                raise _bad(line, f"unknown field {name!r}")
            if name in values:
                raise _bad(line, f"field {name!r} given twice")
            values[name] = _printable(line, value, name)
        missing = [name for name in _JOIN_FIELDS if name not in values]
        if missing:
            raise _bad(line, "missing " + ", ".join(missing))
        join = Join(generation=_number(line, fields[1], "generation", _MAX_GENERATION),
                    rank=_number(line, values["RANK"], "RANK", _MAX_RANK),
                    world_size=_number(line, values["WORLD_SIZE"], "WORLD_SIZE", _MAX_SIZE),
                    group_rank=_number(line, values["GROUP_RANK"], "GROUP_RANK", _MAX_RANK),
                    local_rank=_number(line, values["LOCAL_RANK"], "LOCAL_RANK", _MAX_RANK),
                    master_addr=values["MASTER_ADDR"],
                    master_port=_number(line, values["MASTER_PORT"], "MASTER_PORT", _MAX_SIZE),
                    store_prefix=values["STORE_PREFIX"])
        if join.rank >= join.world_size or join.local_rank >= join.world_size:
            raise _bad(line, "RANK and LOCAL_RANK must be below WORLD_SIZE")
        if not 1 <= join.master_port <= 65535:
            raise _bad(line, f"MASTER_PORT {join.master_port} is outside 1-65535")
        return join
    raise _bad(line, f"unknown verb {verb!r}")


def fd_from_env(environ, name):
    """The pipe descriptor named by variable `name`, or None."""
    text = environ.get(name)
    if text is None or not text.isdigit():
        return None
    fd = int(text)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return None
    return fd if stat.S_ISFIFO(mode) else None


class Channel:
    """The two descriptors of the channel; the process owns them."""

    def __init__(self, from_agent: int, to_agent: int):
        self.from_agent = from_agent
        self.to_agent = to_agent
        self._pending = b""

    @classmethod
    def from_env(cls, environ=None) -> Optional["Channel"]:
        """The channel muster offers this process, or None (no launcher
        channel: MUSTER_CONTROL_FD or MUSTER_PROGRESS_FD unset or not a pipe)."""
        environ = os.environ if environ is None else environ
        from_agent = fd_from_env(environ, "MUSTER_CONTROL_FD")
        to_agent = fd_from_env(environ, "MUSTER_PROGRESS_FD")
        if from_agent is None or to_agent is None:
            return None
        return cls(from_agent, to_agent)

    # --- worker -> agent ---------------------------------------------------
    def _say(self, line: str):
        data = (line + "\n").encode("ascii")
        if len(data) > MAX_LINE_BYTES:
            raise ProtocolError(f"control line of {len(data)} bytes is over {MAX_LINE_BYTES}")
        try:
            written = os.write(self.to_agent, data)
        except OSError as e:
            raise ChannelClosed(f"cannot write to muster: {e}") from e
        if written != len(data):  # a pipe writes a line this short whole
            raise ChannelClosed(f"short write to muster ({written} of {len(data)} bytes)")

    def say_hello(self):
        self._say(f"hello {PROTOCOL_VERSION} {IN_PLACE}")

    def say_ready(self, generation: int):
        self._say(f"ready {generation}")

    def say_joined(self, generation: int):
        self._say(f"joined {generation}")

    def say_failed(self, generation: int, reason: str):
        # The reason is printable ASCII to the end of the line.
        text = "".join(c if 0x20 <= ord(c) <= 0x7E else "?" for c in reason) or "?"
        self._say(f"failed {generation} {text}"[:MAX_LINE_BYTES - 1])

    # --- agent -> worker ---------------------------------------------------
    def receive(self, timeout: Optional[float]) -> Optional[AgentMessage]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            newline = self._pending.find(b"\n")
            if newline >= 0:
                raw, self._pending = self._pending[:newline], self._pending[newline + 1:]
                try:
                    line = raw.decode("ascii")
                except UnicodeDecodeError:
                    raise _bad(raw, "not ASCII") from None
                return parse_agent_line(line)
            if len(self._pending) >= MAX_LINE_BYTES:
                self._pending = b""
                raise ProtocolError(f"control line over {MAX_LINE_BYTES} bytes")
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                readable, _, _ = select.select([self.from_agent], [], [], wait)
            except InterruptedError:  # pragma: no cover - Python retries EINTR itself
                continue
            if not readable:
                return None
            try:
                chunk = os.read(self.from_agent, MAX_LINE_BYTES)
            except OSError as e:
                raise ChannelClosed(f"cannot read from muster: {e}") from e
            if not chunk:
                raise ChannelClosed("muster closed the control channel")
            self._pending += chunk
