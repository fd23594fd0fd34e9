#!/usr/bin/env python3
"""Plot the cost model's predicted all-reduce bus bandwidth as a PNG (standard library only).

Runs `weft-info table allreduce --ranks 8,64,512,4096 --ranks-per-node 8 --topo
tests/fixtures/topology/dgx_h100.xml` (or reads a saved copy of its output with --input) and
draws one panel per rank count: x is the message size on a log2 axis, y the predicted busbw in
GB/s (linear, from 0), one line per algorithm, the bandwidth ceiling dashed, the chosen
algorithm's points highlighted. The PNG is written by hand (zlib + struct), the text with an
embedded 5x7 bitmap font.
Usage: plot_busbw.py OUT.png [--build DIR] [--ranks 8,64,512,4096] [--ranks-per-node 8]
                     [--topo FILE] [--input TABLE.md]
"""
import argparse
import math
import os
import re
import struct
import subprocess
import sys
import zlib

# ---------------------------------------------------------------------------- 5x7 font
# Seven rows per glyph, top to bottom, five bits each (bit 4 is the leftmost column).
FONT = {
    " ": (0, 0, 0, 0, 0, 0, 0),
    "0": (0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E), "1": (0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "2": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F), "3": (0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E),
    "4": (0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02), "5": (0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E),
    "6": (0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E), "7": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08),
    "8": (0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E), "9": (0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C),
    "A": (0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11), "B": (0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E),
    "C": (0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E), "D": (0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C),
    "E": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F), "F": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10),
    "G": (0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F), "H": (0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11),
    "I": (0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E), "J": (0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C),
    "K": (0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11), "L": (0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F),
    "M": (0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11), "N": (0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11),
    "O": (0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E), "P": (0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10),
    "Q": (0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D), "R": (0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11),
    "S": (0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E), "T": (0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04),
    "U": (0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E), "V": (0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04),
    "W": (0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A), "X": (0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11),
    "Y": (0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04), "Z": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F),
    "a": (0, 0, 0x0E, 0x01, 0x0F, 0x11, 0x0F), "b": (0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E),
    "c": (0, 0, 0x0E, 0x10, 0x10, 0x11, 0x0E), "d": (0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F),
    "e": (0, 0, 0x0E, 0x11, 0x1F, 0x10, 0x0E), "f": (0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08),
    "g": (0, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E), "h": (0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11),
    "i": (0x04, 0, 0x0C, 0x04, 0x04, 0x04, 0x0E), "j": (0x02, 0, 0x06, 0x02, 0x02, 0x12, 0x0C),
    "k": (0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12), "l": (0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "m": (0, 0, 0x1A, 0x15, 0x15, 0x11, 0x11), "n": (0, 0, 0x16, 0x19, 0x11, 0x11, 0x11),
    "o": (0, 0, 0x0E, 0x11, 0x11, 0x11, 0x0E), "p": (0, 0, 0x1E, 0x11, 0x1E, 0x10, 0x10),
    "q": (0, 0, 0x0D, 0x13, 0x0F, 0x01, 0x01), "r": (0, 0, 0x16, 0x19, 0x10, 0x10, 0x10),
    "s": (0, 0, 0x0E, 0x10, 0x0E, 0x01, 0x1E), "t": (0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06),
    "u": (0, 0, 0x11, 0x11, 0x11, 0x13, 0x0D), "v": (0, 0, 0x11, 0x11, 0x11, 0x0A, 0x04),
    "w": (0, 0, 0x11, 0x11, 0x15, 0x15, 0x0A), "x": (0, 0, 0x11, 0x0A, 0x04, 0x0A, 0x11),
    "y": (0, 0, 0x11, 0x11, 0x0F, 0x01, 0x0E), "z": (0, 0, 0x1F, 0x02, 0x04, 0x08, 0x1F),
    ".": (0, 0, 0, 0, 0, 0x0C, 0x0C), ",": (0, 0, 0, 0, 0x0C, 0x04, 0x08),
    "-": (0, 0, 0, 0x1F, 0, 0, 0), "_": (0, 0, 0, 0, 0, 0, 0x1F),
    "/": (0, 0x01, 0x02, 0x04, 0x08, 0x10, 0), ":": (0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0),
    "(": (0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02), ")": (0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08),
    "=": (0, 0, 0x1F, 0, 0x1F, 0, 0), "+": (0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0),
    ";": (0, 0x0C, 0x0C, 0, 0x0C, 0x04, 0x08), "%": (0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03),
}
UNKNOWN = (0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F)


# ---------------------------------------------------------------------------- canvas
class Canvas:
    def __init__(self, width, height, background=(255, 255, 255)):
        self.w, self.h = width, height
        self.px = bytearray(bytes(background) * (width * height))

    def set(self, x, y, color):
        if 0 <= x < self.w and 0 <= y < self.h:
            i = 3 * (y * self.w + x)
            self.px[i:i + 3] = bytes(color)

    def rect(self, x0, y0, x1, y1, color):
        x0, x1 = max(0, min(x0, x1)), min(self.w - 1, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.h - 1, max(y0, y1))
        row = bytes(color) * (x1 - x0 + 1)
        for y in range(y0, y1 + 1):
            i = 3 * (y * self.w + x0)
            self.px[i:i + len(row)] = row

    def line(self, x0, y0, x1, y1, color, width=1, dash=None, phase=0):
        """Bresenham with a square brush; dash=(on, off) in steps. Returns the dash phase."""
        x0, y0, x1, y1 = int(round(x0)), int(round(y0)), int(round(x1)), int(round(y1))
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        lo, hi = -(width // 2), (width - 1) // 2 + 1
        while True:
            if dash is None or phase % (dash[0] + dash[1]) < dash[0]:
                for oy in range(lo, hi):
                    for ox in range(lo, hi):
                        self.set(x0 + ox, y0 + oy, color)
            phase += 1
            if x0 == x1 and y0 == y1:
                return phase
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, s, color=(0, 0, 0), scale=2):
        for ch in s:
            glyph = FONT.get(ch, UNKNOWN)
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (0x10 >> col):
                        self.rect(x + col * scale, y + row * scale, x + col * scale + scale - 1,
                                  y + row * scale + scale - 1, color)
            x += 6 * scale

    def vtext(self, x, y, s, color=(0, 0, 0), scale=2):
        """Text rotated 90 degrees counter-clockwise, reading bottom to top from (x, y)."""
        for ch in s:
            glyph = FONT.get(ch, UNKNOWN)
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (0x10 >> col):
                        px, py = x + row * scale, y - col * scale
                        self.rect(px, py - scale + 1, px + scale - 1, py, color)
            y -= 6 * scale

    def png(self):
        raw = b"".join(b"\x00" + bytes(self.px[3 * y * self.w:3 * (y + 1) * self.w]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def text_width(s, scale=2):
    return len(s) * 6 * scale - scale


# ---------------------------------------------------------------------------- data
def parse_size(text):
    m = re.fullmatch(r"([0-9.]+)([KMG]?)", text.strip())
    return float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def parse_table(text):
    """weft-info table output -> (links line, [(title, columns, rows)]); rows: (size, {col: value}, chosen)."""
    panels, columns, links = [], None, ""
    for line in text.splitlines():
        if line.startswith("# links:"):
            links = line[len("# links:"):].strip()
        elif line.startswith("## "):
            panels.append((line[3:].strip(), [], []))
            columns = None
        elif line.startswith("|") and panels:
            cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
            if cells[0] == "size":
                columns = cells
                panels[-1][1][:] = [c for c in cells[1:] if c not in ("chosen",)]
            elif columns and not cells[0].startswith("-") and not cells[0].startswith(":"):
                values = dict(zip(columns, cells))
                row = {c: float(values[c]) for c in panels[-1][1]}
                panels[-1][2].append((parse_size(cells[0]), row, values.get("chosen", "")))
    return links, panels


def size_label(exp):
    value = 1 << exp
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if exp >= shift:
            return f"{value >> shift}{unit}"
    return str(value)


def nice_max(value):
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000):
        top = step * math.ceil(value * 1.05 / step)
        if top / step <= 6:
            return top, step
    return value, value / 5


# ---------------------------------------------------------------------------- drawing
COLORS = {"ring": (31, 119, 180), "tree": (255, 127, 14), "rhd": (44, 160, 44), "hier": (214, 39, 40),
          "direct": (148, 103, 189), "ceiling": (110, 110, 110)}
STYLE = {"hier": ((10, 6), 2), "ceiling": ((6, 6), 2)}  # dash pattern, width; others solid, width 2
HIGHLIGHT = (255, 236, 140)
AXIS, GRID, TEXT = (0, 0, 0), (225, 225, 225), (20, 20, 20)


def draw_panel(c, x0, y0, w, h, title, columns, rows):
    left, right, top, bottom = 76, 16, 34, 58
    px0, py0, px1, py1 = x0 + left, y0 + top, x0 + w - right, y0 + h - bottom
    sizes = [r[0] for r in rows]
    emin, emax = math.floor(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))
    ymax, ystep = nice_max(max(v for _, row, _ in rows for v in row.values()))

    def X(size):
        return px0 + (math.log2(size) - emin) / (emax - emin) * (px1 - px0)

    def Y(v):
        return py1 - v / ymax * (py1 - py0)

    c.text(x0 + (w - text_width(title)) // 2, y0 + 8, title, TEXT)
    # grid and ticks
    v = 0.0
    while v <= ymax + 1e-9:
        y = int(round(Y(v)))
        c.line(px0, y, px1, y, GRID)
        c.line(px0 - 5, y, px0, y, AXIS)
        label = f"{v:g}"
        c.text(px0 - 9 - text_width(label), y - 7, label, TEXT)
        v += ystep
    for e in range(emin, emax + 1):
        x = int(round(X(2.0 ** e)))
        if e % 4 == 0:
            c.line(x, py0, x, py1, GRID)
            c.line(x, py1, x, py1 + 6, AXIS)
            label = size_label(e)
            c.text(x - text_width(label) // 2, py1 + 10, label, TEXT)
        else:
            c.line(x, py1, x, py1 + 3, AXIS)
    c.line(px0, py0, px0, py1, AXIS)
    c.line(px0, py1, px1, py1, AXIS)
    c.text(px0 + (px1 - px0 - text_width("message size (bytes, log2)")) // 2, py1 + 32,
           "message size (bytes, log2)", TEXT)
    c.vtext(x0 + 8, py0 + (py1 - py0 + text_width("busbw GB/s")) // 2, "busbw GB/s", TEXT)
    # chosen algorithm: a wide pale band under its points
    prev = None
    for size, row, chosen in rows:
        pt = (X(size), Y(row[chosen])) if chosen in row else None
        if prev and pt:
            c.line(prev[0], prev[1], pt[0], pt[1], HIGHLIGHT, width=10)
        prev = pt
    # ceiling first, then the algorithms (hier dashed so ring shows where they coincide)
    order = ["ceiling"] + [k for k in columns if k != "ceiling" and k != "hier"] + (["hier"] if "hier" in columns else [])
    for name in order:
        if name not in columns:
            continue
        dash, width = STYLE.get(name, (None, 2))
        phase, prev = 0, None
        for size, row, _ in rows:
            pt = (X(size), Y(row[name]))
            if prev:
                phase = c.line(prev[0], prev[1], pt[0], pt[1], COLORS.get(name, (0, 0, 0)), width, dash, phase)
            prev = pt


def draw(links, panels, subtitle):
    cols = 2 if len(panels) > 1 else 1
    nrows = (len(panels) + cols - 1) // cols
    pw, ph, head, legend_h = 620, 420, 64, 44
    c = Canvas(cols * pw, head + nrows * ph + legend_h)
    title = "weft all-reduce: predicted bus bandwidth (cost model)"
    c.text((c.w - text_width(title)) // 2, 10, title, TEXT)
    c.text((c.w - text_width(subtitle, 1)) // 2, 34, subtitle, TEXT, scale=1)
    c.text((c.w - text_width(links, 1)) // 2, 46, links, TEXT, scale=1)
    columns = []
    for i, (name, cols_here, rows) in enumerate(panels):
        draw_panel(c, (i % cols) * pw, head + (i // cols) * ph, pw, ph, name, cols_here, rows)
        columns += [k for k in cols_here if k not in columns]
    # legend
    y = head + nrows * ph + 14
    entries = [(k, COLORS.get(k, (0, 0, 0)), STYLE.get(k, (None, 2))) for k in columns]
    entries.append(("chosen", HIGHLIGHT, (None, 10)))
    widths = [44 + text_width(k) + 28 for k, _, _ in entries]
    x = (c.w - sum(widths)) // 2
    for (name, color, (dash, width)), wdt in zip(entries, widths):
        c.line(x, y + 7, x + 36, y + 7, color, width, dash)
        c.text(x + 44, y, name, TEXT)
        x += wdt
    return c


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--build", default=os.environ.get("WEFT_BUILD", "build"))
    parser.add_argument("--ranks", default="8,64,512,4096")
    parser.add_argument("--ranks-per-node", default="8")
    parser.add_argument("--topo", default="tests/fixtures/topology/dgx_h100.xml")
    parser.add_argument("--input", help="read weft-info table output from this file instead of running it")
    args = parser.parse_args()

    command = ["weft-info", "table", "allreduce", "--ranks", args.ranks, "--ranks-per-node", args.ranks_per_node,
               "--topo", args.topo]
    if args.input:
        with open(args.input) as f:
            text = f.read()
    else:
        exe = os.path.join(args.build, "tools", "weft-info")
        text = subprocess.run([exe] + command[1:], check=True, capture_output=True, text=True).stdout
    links, panels = parse_table(text)
    if not panels:
        sys.exit("plot_busbw: no tables in the weft-info output")
    canvas = draw(links, panels, " ".join(command))
    with open(args.out, "wb") as f:
        f.write(canvas.png())
    print(f"{args.out}: {canvas.w}x{canvas.h}, {len(panels)} panels, {os.path.getsize(args.out)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
