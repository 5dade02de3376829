#!/usr/bin/env python3
"""Writes the PNG files of tests/unit/test_image_decode.c into tests/unit/images/.

Each file is written by hand with zlib (PNG specification: signature, chunks of length, type, data and
CRC-32; IDAT = zlib stream of the rows, each a filter byte 0 and the packed samples; Adam7 passes for
interlaced files). The pixel values are the formulas below, which the C test computes again to
know what stb_image (with 3 channels forced) gives for each file. Rerunning rewrites the same bytes.

Valid files (W x H = 13 x 11, x = column, y = row):
  grey8.png      colour type 0, 8 bits        g = (13x + 7y) & 255
  grey4.png      colour type 0, 4 bits        g = (x + y) & 15
  grey16.png     colour type 0, 16 bits       v = (4099x + 1031y + 77) & 65535
  greya8.png     colour type 4, 8 bits        g as grey8, alpha = (x * y * 9) & 255
  palette.png    colour type 3, 8 bits, tRNS  index = (x + 2y) & 15, entry i = (16i, 255 - 16i, 5i)
  palette2.png   colour type 3, 2 bits        index = (x + y) & 3, same palette
  rgb8.png       colour type 2, 8 bits, gAMA 0.2, sRGB, tRNS   rgb8(x, y, c) (below)
  rgba8.png      colour type 6, 8 bits        rgb8(x, y, c), alpha = (x * 31 + y) & 255
  rgba16.png     colour type 6, 16 bits       rgb16(x, y, c), alpha = (x * 5000) & 65535
  adam7.png      colour type 2, 8 bits, interlaced (Adam7)   rgb8(x, y, c)
Damaged files:
  huge.png       IHDR of 100000 x 100000 pixels (valid CRC) and a small IDAT
  big.png        IHDR of 20000 x 20000 pixels (sides within libpng's limits set, too many pixels)
  short.png      IHDR of 8000 x 8000 RGB pixels, whose rows a file this short cannot hold
  zero.png       IHDR of 0 x 11 pixels
  bomb.png       an 8 x 8 RGB image whose IDAT inflates to 16 MiB (the rows, then zeros)
  badcrc.png     grey8.png with the IDAT CRC's last byte flipped
  noiend.png     grey8.png without its IEND chunk
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "images")
W, H = 13, 11


def rgb8(x, y, c):
    return ((x * 19 + y * 7) * (c + 1) + 40 * c) & 255


def rgb16(x, y, c):
    return ((x * 3001 + y * 517) * (c + 2) + 12345 * c) & 65535


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def pack_row(samples, depth):
    """samples of one row (ints) packed at depth bits, most significant bits first"""
    if depth == 8:
        return bytes(samples)
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    out, acc, n = bytearray(), 0, 0
    for s in samples:
        acc = (acc << depth) | s
        n += depth
        if n == 8:
            out.append(acc)
            acc, n = 0, 0
    if n:
        out.append(acc << (8 - n))
    return bytes(out)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def raw_rows(w, h, pixel, depth, interlace):
    """the filtered (filter 0) scanlines; pixel(x, y) is the list of samples of one pixel"""
    out = bytearray()
    passes = ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        xs = range(x0, w, dx)
        if not xs:
            continue
        for y in range(y0, h, dy):
            out += b"\0" + pack_row([s for x in xs for s in pixel(x, y)], depth)
    return bytes(out)


def png(w, h, depth, colour, pixel, extra=b"", interlace=0, idat=None, iend=True):
    ihdr = struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, interlace)
    if idat is None:
        idat = zlib.compress(raw_rows(w, h, pixel, depth, interlace), 9)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra + chunk(b"IDAT", idat)
            + (chunk(b"IEND", b"") if iend else b""))


def palette_chunks():
    plte = b"".join(bytes([16 * i, 255 - 16 * i, 5 * i]) for i in range(16))
    return chunk(b"PLTE", plte) + chunk(b"tRNS", bytes(range(0, 256, 16)))


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {
        "grey8.png": png(W, H, 8, 0, lambda x, y: [(13 * x + 7 * y) & 255]),
        "grey4.png": png(W, H, 4, 0, lambda x, y: [(x + y) & 15]),
        "grey16.png": png(W, H, 16, 0, lambda x, y: [(4099 * x + 1031 * y + 77) & 65535]),
        "greya8.png": png(W, H, 8, 4, lambda x, y: [(13 * x + 7 * y) & 255, (x * y * 9) & 255]),
        "palette.png": png(W, H, 8, 3, lambda x, y: [(x + 2 * y) & 15], extra=palette_chunks()),
        "palette2.png": png(W, H, 2, 3, lambda x, y: [(x + y) & 3], extra=palette_chunks()),
        "rgb8.png": png(W, H, 8, 2, lambda x, y: [rgb8(x, y, c) for c in range(3)],
                        extra=chunk(b"gAMA", struct.pack(">I", 20000)) + chunk(b"sRGB", b"\0")
                        + chunk(b"tRNS", struct.pack(">HHH", rgb8(0, 0, 0), rgb8(0, 0, 1), rgb8(0, 0, 2)))),
        "rgba8.png": png(W, H, 8, 6, lambda x, y: [rgb8(x, y, c) for c in range(3)] + [(x * 31 + y) & 255]),
        "rgba16.png": png(W, H, 16, 6, lambda x, y: [rgb16(x, y, c) for c in range(3)] + [(x * 5000) & 65535]),
        "adam7.png": png(W, H, 8, 2, lambda x, y: [rgb8(x, y, c) for c in range(3)], interlace=1),
        "huge.png": png(100000, 100000, 8, 2, None, idat=zlib.compress(b"\0" * 1000)),
        "big.png": png(20000, 20000, 8, 2, None, idat=zlib.compress(b"\0" * 1000)),
        "short.png": png(8000, 8000, 8, 2, None, idat=zlib.compress(b"\0" * 1000)),
        "zero.png": png(0, H, 8, 0, None, idat=zlib.compress(b"")),
        "bomb.png": png(8, 8, 8, 2, None, idat=zlib.compress(b"\0" * (16 << 20), 9)),
    }
    grey8 = files["grey8.png"]
    at = grey8.index(b"IDAT")
    n = struct.unpack(">I", grey8[at - 4:at])[0]
    crc_end = at + 4 + n + 4
    files["badcrc.png"] = grey8[:crc_end - 1] + bytes([grey8[crc_end - 1] ^ 0x5A]) + grey8[crc_end:]
    files["noiend.png"] = grey8[:-12]
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
