"""A dependency-free PNG timeline of a chaos run (zlib + struct; no matplotlib here).

Three stacked panels share the x axis (seconds since the job started):
  top     the training step rank 0 reported (a dot per progress line): drops are
          resumes from an older checkpoint;
  middle  the world size of the running generation (a step line);
  bottom  generations as bands, alternating two shades, from their first worker's
          start to the next generation's.
Each fault is a vertical line across all panels in its kind's colour, with a
second, dashed line where it was undone (restore). The image has no text:
legend() returns the colour key and the axis ranges, which chaos.py prints.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "bench"))
from png_writer import write_png  # noqa: E402  (after the path, on purpose)

WIDTH, HEIGHT, MARGIN = 1200, 520, 30
PANELS = [(MARGIN, 250), (270, 390), (410, HEIGHT - MARGIN)]  # (top y, bottom y)

PALETTE = [(214, 39, 40), (31, 119, 180), (44, 160, 44), (148, 103, 189), (255, 127, 14),
           (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
           (0, 0, 0)]


def fault_colours(kinds):
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(sorted(kinds))}


def draw_timeline(path, t_end, steps, worlds, gens, faults, max_step, max_world):
    """steps: [(t, step)]; worlds: [(t, world)] (a step function);
    gens: [(t_start, t_end, gen)]; faults: [(t, t_restored or None, kind)]."""
    pixels = [bytearray(b"\xff" * (WIDTH * 3)) for _ in range(HEIGHT)]
    t_end = max(t_end, 1e-3)

    def put(x, y, colour):
        if 0 <= x < WIDTH and 0 <= y < HEIGHT:
            pixels[y][3 * x:3 * x + 3] = bytes(colour)

    def tx(t):
        return MARGIN + int(round(max(0.0, t) / t_end * (WIDTH - 2 * MARGIN)))

    def ty(panel, value, top):
        y0, y1 = PANELS[panel]
        return y1 - int(round(value / (top or 1) * (y1 - y0)))

    grey, black = (225, 225, 225), (0, 0, 0)
    # Grid: a vertical line every 10 s, panel frames.
    for s in range(0, int(t_end) + 1, 10):
        for y0, y1 in PANELS:
            for y in range(y0, y1):
                put(tx(s), y, grey)
    for y0, y1 in PANELS:
        for x in range(MARGIN, WIDTH - MARGIN + 1):
            put(x, y0, grey)
            put(x, y1, black)
        for y in range(y0, y1 + 1):
            put(MARGIN, y, black)
    # World size: horizontal grid at each possible value, then the step line.
    for w in range(1, max_world + 1):
        y = ty(1, w, max_world)
        for x in range(MARGIN, WIDTH - MARGIN, 4):
            put(x, y, grey)
    # Generation bands.
    shades = [(198, 219, 239), (253, 208, 162)]
    y0, y1 = PANELS[2]
    for i, (t0, t1, gen) in enumerate(gens):
        for x in range(tx(t0), tx(t1) + 1):
            for y in range(y0 + 1, y1):
                put(x, y, shades[i % 2])
        for y in range(y0 + 1, y1):
            put(tx(t0), y, (90, 90, 90))
    # Faults (under the data lines).
    colours = fault_colours({k for _, _, k in faults})
    for t, restored, kind in faults:
        for y0, y1 in PANELS:
            for y in range(y0, y1 + 1):
                put(tx(t), y, colours[kind])
                put(tx(t) + 1, y, colours[kind])
                if restored is not None and (y // 4) % 2 == 0:
                    put(tx(restored), y, colours[kind])
    # World size line.
    blue = (31, 119, 180)
    prev = None
    for t, w in worlds + [(t_end, worlds[-1][1] if worlds else 0)]:
        x, y = tx(t), ty(1, w, max_world)
        if prev:
            px, py = prev
            for xx in range(px, x + 1):
                put(xx, py, blue)
                put(xx, py - 1, blue)
            for yy in range(min(py, y), max(py, y) + 1):
                put(x, yy, blue)
        prev = (x, y)
    # Steps: one dot per progress line.
    for t, s in steps:
        x, y = tx(t), ty(0, s, max_step)
        for dx in (0, 1):
            for dy in (0, 1):
                put(x + dx, y - dy, black)
    write_png(path, WIDTH, HEIGHT, pixels)
    return colours


def legend(colours, t_end, max_step, max_world):
    lines = [f"  x axis: 0 .. {t_end:.1f} s since the job started (grey grid line every 10 s)",
             f"  top panel: rank 0's step (0 .. {max_step}), one black dot per progress line",
             f"  middle panel: world size of the running generation (0 .. {max_world}), blue",
             "  bottom panel: generations, alternating blue/orange bands from first worker start",
             "  vertical lines: faults (solid: injected, dashed: restored), by colour:"]
    names = {(214, 39, 40): "red", (31, 119, 180): "blue", (44, 160, 44): "green",
             (148, 103, 189): "purple", (255, 127, 14): "orange", (140, 86, 75): "brown",
             (227, 119, 194): "pink", (127, 127, 127): "grey", (188, 189, 34): "olive",
             (23, 190, 207): "cyan", (0, 0, 0): "black"}
    for kind, c in sorted(colours.items()):
        lines.append(f"    {names.get(c, str(c)):7s} {kind}")
    return "\n".join(lines)
