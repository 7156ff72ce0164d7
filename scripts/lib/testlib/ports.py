"""Ports for servers the tests and benchmarks start (musterd, an agent's rendezvous, a
store, etcd, torch's TCPStore).

The one rule: a port handed on is never a closed one. free_port() binds a socket to a port
the kernel chooses (bind to port 0, without SO_REUSEADDR, so it fails for a port anyone
holds), then sets SO_REUSEADDR on it and keeps it open, bound and not listening, until this
process exits. While it is held:

- the kernel hands the port to no one else: bind(0) and the implicit bind of connect()
  skip a port that has a bound socket;
- another free_port(), here or in another process, cannot take it: its bind without
  SO_REUSEADDR fails;
- the server it is meant for binds it: every server the suites start sets SO_REUSEADDR
  (Asio's acceptors in store/ and rendezvous/, etcd, torch's TCPStore), and Linux lets two
  SO_REUSEADDR sockets share a port while neither listens; the server's listen() then
  succeeds, and only one listener can hold the port, so a second server started on it
  fails as it would on any taken port.

Binding port 0 and closing the socket before the server binds (the race torch's tests
are known for) is what this replaces. Where a server can report the port it bound itself
(`musterd --port 0` prints "listening on HOST:PORT"), prefer that; free_port() is for a
port that must be known before the server starts (an endpoint several agents are given).

A server that binds without SO_REUSEADDR cannot use a free_port(): give it --port 0
instead.
"""
import re
import socket
import threading

_BOUND_RE = re.compile(r"listening on \S*:(\d+)")

_held = []  # the reserving sockets: open until the process exits
_lock = threading.Lock()


def free_port(host="0.0.0.0"):
    """A port on `host` (default every address) that is reserved for this process's servers
    until it exits, never the same twice. Raises OSError when none can be bound."""
    s = socket.socket()
    try:
        s.bind((host, 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    except OSError:
        s.close()
        raise
    with _lock:
        _held.append(s)
    return s.getsockname()[1]


def bound_port(text):
    """The port a server announced it bound, from its output: musterd prints "musterd
    listening on HOST:PORT" once bound (with --port 0, the kernel's choice). None when
    `text` holds no such line yet."""
    m = _BOUND_RE.search(text)
    return int(m.group(1)) if m else None
