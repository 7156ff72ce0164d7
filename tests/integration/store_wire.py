"""TCPStore wire encoders for tests: the little-endian integers and the
length-prefixed strings of store/tcpstore_protocol.h. Pure (no
processes, no environment), so the fuzz seed generator uses them too."""
import struct


def u8(v):
    return struct.pack("<B", v)


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def i64(v):
    return struct.pack("<q", v)


def s(b):
    """A length-prefixed string (u64 length, then the bytes); str is UTF-8."""
    if isinstance(b, str):
        b = b.encode()
    return u64(len(b)) + b
