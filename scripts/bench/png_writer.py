"""A dependency-free PNG writer (zlib + struct), for the plots of the benchmarks
and the chaos suite's timeline: no matplotlib or gnuplot is needed."""
import struct
import zlib


def write_png(path, width, height, pixels):
    """Writes an 8-bit RGB PNG; pixels: `height` rows of width*3 bytes."""
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data +
                struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))
