#!/bin/sh
# Writes the seeds of fuzz_image into tests/fuzz/corpus/image/: golden/mm/image.png, the valid PNGs
# of tests/unit/images/ (tests/unit/make_images.py: every colour type, 2 to 16 bits, interlaced),
# and a 13 x 11 picture as baseline, progressive and greyscale JPEGs (cjpeg, Debian
# libjpeg-turbo-progs) and as lossy and lossless WebP (cwebp, Debian webp). The encoders' outputs
# depend on their versions; the committed seeds were made with libjpeg-turbo 2.1.5 and libwebp 1.2.4.
# usage: tests/fuzz/make_image_corpus.sh
set -eu
cd "$(dirname "$0")/../.."
out=tests/fuzz/corpus/image
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cat golden/mm/image.png >"$out/golden.png"
for f in grey8 grey4 grey16 greya8 palette palette2 rgb8 rgba8 rgba16 adam7; do
    cp "tests/unit/images/$f.png" "$out/$f.png"
done
# the rgb8 picture of make_images.py as a binary PPM
python3 -c '
import sys
w, h = 13, 11
px = bytes(((x * 19 + y * 7) * (c + 1) + 40 * c) & 255 for y in range(h) for x in range(w) for c in range(3))
sys.stdout.buffer.write(b"P6\n%d %d\n255\n" % (w, h) + px)' >"$tmp/rgb8.ppm"
cjpeg -quality 90 "$tmp/rgb8.ppm" >"$out/baseline.jpg"
cjpeg -quality 75 -progressive "$tmp/rgb8.ppm" >"$out/progressive.jpg"
cjpeg -quality 90 -grayscale -optimize "$tmp/rgb8.ppm" >"$out/grey.jpg"
cjpeg -quality 90 -sample 1x1 -restart 1 "$tmp/rgb8.ppm" >"$out/444-restart.jpg"
cwebp -quiet -q 80 "tests/unit/images/rgb8.png" -o "$out/lossy.webp"
cwebp -quiet -lossless "tests/unit/images/rgba8.png" -o "$out/lossless.webp"
