# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""A small line chart written as PNG with the standard library only.

The benchmarks must run where nothing but Nova's own requirements is
installed (OpenStack's constraints have no plotting library), so the chart
is rasterised here: axes, one polyline and marker per series, a colour key.
"""

import struct
import zlib

WIDTH, HEIGHT, MARGIN = 640, 400, 50
#: One colour per series: the legend is the only key to the lines.
COLOURS = ((200, 40, 40), (30, 90, 200), (30, 150, 60), (150, 80, 180),
           (230, 140, 20), (90, 90, 90))

# 3x5 digits for the axis labels.
_DIGITS = {
    '0': '111101101101111', '1': '010110010010111', '2': '111001111100111',
    '3': '111001111001111', '4': '101101111001001', '5': '111100111001111',
    '6': '111100111101111', '7': '111001001001001', '8': '111101111101111',
    '9': '111101111001111', '.': '000000000000010',
}


class Canvas(object):

    def __init__(self):
        self.rows = [bytearray(b'\xff' * (WIDTH * 3)) for _ in range(HEIGHT)]

    def dot(self, x, y, colour, size=1):
        for dx in range(-size + 1, size):
            for dy in range(-size + 1, size):
                px, py = int(x) + dx, int(y) + dy
                if 0 <= px < WIDTH and 0 <= py < HEIGHT:
                    self.rows[py][px * 3:px * 3 + 3] = bytes(colour)

    def line(self, x0, y0, x1, y1, colour, size=1):
        steps = int(max(abs(x1 - x0), abs(y1 - y0), 1))
        for i in range(steps + 1):
            self.dot(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps,
                     colour, size)

    def text(self, x, y, text, colour=(0, 0, 0)):
        for n, char in enumerate(text):
            bits = _DIGITS.get(char)
            if bits:
                for i, bit in enumerate(bits):
                    if bit == '1':
                        self.dot(x + n * 5 + i % 3, y + i // 3, colour)

    def png(self):
        raw = b''.join(b'\x00' + bytes(row) for row in self.rows)

        def chunk(kind, data):
            return (struct.pack('>I', len(data)) + kind + data +
                    struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))
        return (b'\x89PNG\r\n\x1a\n' +
                chunk(b'IHDR', struct.pack('>IIBBBBB', WIDTH, HEIGHT, 8, 2,
                                           0, 0, 0)) +
                chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b''))


def chart(series, path):
    """Write ``{name: [(x, y)]}`` as a PNG line chart; returns the legend.

    The x axis is spaced by rank (cell counts 2, 8, 32 are evenly apart);
    the y axis starts at 0. Names are not drawn (no font): the returned
    legend maps each name to its colour, for the report.
    """
    if len(series) > len(COLOURS):
        # Two lines of one colour could not be told apart.
        raise ValueError('%d series, only %d colours' % (len(series),
                                                         len(COLOURS)))
    canvas = Canvas()
    xs = sorted({x for points in series.values() for x, _ in points})
    top = max(y for points in series.values() for _, y in points) or 1.0
    left, bottom = MARGIN, HEIGHT - MARGIN
    right, upper = WIDTH - MARGIN // 2, MARGIN // 2
    canvas.line(left, bottom, right, bottom, (0, 0, 0))
    canvas.line(left, bottom, left, upper, (0, 0, 0))

    def place(x, y):
        rank = xs.index(x) / max(len(xs) - 1, 1)
        return (left + rank * (right - left - 10) + 5,
                bottom - y / top * (bottom - upper))
    for x in xs:
        px, _ = place(x, 0)
        canvas.line(px, bottom, px, bottom + 4, (0, 0, 0))
        canvas.text(px - 4, bottom + 8, str(x))
    canvas.text(4, upper, '%.0f' % top)
    canvas.text(4, bottom - 4, '0')
    legend = {}
    for n, (name, points) in enumerate(sorted(series.items())):
        colour = COLOURS[n]
        legend[name] = 'rgb%s' % (colour,)
        placed = [place(x, y) for x, y in sorted(points)]
        for a, b in zip(placed, placed[1:]):
            canvas.line(a[0], a[1], b[0], b[1], colour, size=2)
        for point in placed:
            canvas.dot(point[0], point[1], colour, size=4)
    with open(path, 'wb') as f:
        f.write(canvas.png())
    return legend
