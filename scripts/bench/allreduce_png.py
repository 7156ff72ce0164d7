"""A dependency-free PNG line plot for allreduce_bench.py, used where gnuplot
is not installed: log2 x axis (message size), linear y axis (GB/s), one
coloured line per series (solid for muster, dotted for torch), a grid line
per x point and per 0.5 GB/s. It draws no text; plot_lines prints the colour
legend and the axis ranges instead.
"""
import math

from png_writer import write_png

WIDTH, HEIGHT, MARGIN = 900, 600, 40
COLOURS = [(31, 119, 180), (214, 39, 40), (44, 160, 44), (148, 103, 189)]


def plot_lines(path, series):
    """series: [(name, [(size, gbps)], solid)]; writes a WIDTH x HEIGHT PNG."""
    pixels = [bytearray(b"\xff" * (WIDTH * 3)) for _ in range(HEIGHT)]

    def put(x, y, colour):
        if 0 <= x < WIDTH and 0 <= y < HEIGHT:
            pixels[y][3 * x:3 * x + 3] = bytes(colour)

    sizes = sorted({s for _, points, _ in series for s, _ in points})
    top = max(v for _, points, _ in series for _, v in points) * 1.1 or 1.0
    lo, hi = math.log2(sizes[0]), math.log2(sizes[-1]) if len(sizes) > 1 else 1

    def xy(size, value):
        x = MARGIN + (math.log2(size) - lo) / ((hi - lo) or 1) * (WIDTH - 2 * MARGIN)
        y = HEIGHT - MARGIN - value / top * (HEIGHT - 2 * MARGIN)
        return int(round(x)), int(round(y))

    grey, black = (225, 225, 225), (0, 0, 0)
    for size in sizes:
        x, _ = xy(size, 0)
        for y in range(MARGIN, HEIGHT - MARGIN):
            put(x, y, grey)
    step = 0.5
    value = step
    while value < top:
        _, y = xy(sizes[0], value)
        for x in range(MARGIN, WIDTH - MARGIN):
            put(x, y, grey)
        value += step
    for x in range(MARGIN, WIDTH - MARGIN):
        put(x, HEIGHT - MARGIN, black)
    for y in range(MARGIN, HEIGHT - MARGIN):
        put(MARGIN, y, black)

    print("plot legend (no text in the image):")
    for index, (name, points, solid) in enumerate(series):
        colour = COLOURS[(index // 2) % len(COLOURS)] if solid else \
            tuple(min(255, c + 90) for c in COLOURS[(index // 2) % len(COLOURS)])
        print(f"  {name}: rgb{colour} {'solid' if solid else 'dotted'}")
        corners = [xy(s, v) for s, v in points]
        for (x0, y0), (x1, y1) in zip(corners, corners[1:]):
            steps = max(abs(x1 - x0), abs(y1 - y0), 1)
            for i in range(steps + 1):
                if not solid and (i // 4) % 2:
                    continue
                x = x0 + (x1 - x0) * i // steps
                y = y0 + (y1 - y0) * i // steps
                for dx in (-1, 0, 1):
                    for dy in (-1, 0, 1):
                        put(x + dx, y + dy, colour)
        for x, y in corners:
            for dx in range(-3, 4):
                for dy in range(-3, 4):
                    put(x + dx, y + dy, colour)
    print(f"  x: {sizes[0]}..{sizes[-1]} bytes, log2; y: 0..{top:.2f} GB/s, "
          f"grid every {step} GB/s")
    write_png(path, WIDTH, HEIGHT, pixels)
