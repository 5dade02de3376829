#!/bin/sh
# `oxillama perplexity --kl-divergence-base FILE` (write mode) against the file llama-perplexity wrote
# for the same text and settings (golden/perplexity/stories260K.c128.kld, -c 128): the same size, the
# header (magic, n_ctx, n_vocab, n_chunk) and token section byte for byte, and per scored token the
# quantized log-probabilities (scale, minimum, 16-bit steps) decoding to within TOL nats of llama.cpp's,
# and the mean signed difference of the non-zero 16-bit steps (a systematic rounding error) within
# BIAS steps.
# usage: check_kld_write.sh OXILLAMA_BINARY MODEL DIR WORK_DIR TOL BIAS
set -u
bin=$1
model=$2
dir=$3
work=$4
tol=$5
bias=$6
ref=$dir/stories260K.c128.kld
out=$work/stories260K.c128.kld
mkdir -p "$work"
rm -f "$out"
"$bin" perplexity -m "$model" -f "$dir/stories.txt" -c 128 -t 2 --kl-divergence-base "$out" >/dev/null 2>&1
rc=$?
if [ "$rc" -ne 0 ] || [ ! -s "$out" ]; then
    echo "FAIL  oxillama perplexity exited with status $rc, wrote no file"
    exit 1
fi
if cmp -s "$out" "$ref"; then
    echo "PASS  byte-identical to llama.cpp's base file"
    exit 0
fi
size_ref=$(wc -c <"$ref")
size_out=$(wc -c <"$out")
if [ "$size_out" -ne "$size_ref" ]; then
    echo "FAIL  size $size_out bytes, llama.cpp's $size_ref"
    exit 1
fi
# "_logits_", then int32 n_ctx, n_vocab, n_chunk, then n_ctx * n_chunk int32 tokens
set -- $(od -An -v -t d4 -j 8 -N 12 "$ref")
n_ctx=$1 n_vocab=$2 n_chunk=$3
hdr=$((20 + 4 * n_ctx * n_chunk))
head -c "$hdr" "$out" >"$work/out.hdr"
head -c "$hdr" "$ref" >"$work/ref.hdr"
if ! cmp -s "$work/out.hdr" "$work/ref.hdr"; then
    echo "FAIL  header or token section ($hdr bytes) differs: $(cmp "$work/out.hdr" "$work/ref.hdr")"
    exit 1
fi
# per scored token: float scale, float minimum log-probability, n_vocab uint16 steps (padded to even)
nv=$((2 * ((n_vocab + 1) / 2) + 4))
rec=$((2 * nv))
n_rec=$(((size_ref - hdr) / rec))
if [ $((hdr + n_rec * rec)) -ne "$size_ref" ] || [ "$n_rec" -eq 0 ]; then
    echo "FAIL  the payload is not a whole number of $rec-byte records"
    exit 1
fi
for f in out ref; do
    eval "src=\$$f"
    od -An -v -w"$rec" -t f4 -j "$hdr" "$src" | awk '{ print $1, $2 }' >"$work/$f.sm"
    od -An -v -w"$rec" -t u2 -j "$hdr" "$src" >"$work/$f.q"
done
awk -v tol="$tol" -v bias="$bias" -v nvocab="$n_vocab" -v nrec="$n_rec" -v work="$work" '
BEGIN {
    while ((getline line < (work "/ref.sm")) > 0) { split(line, v, " "); rs[++n] = v[1]; rm[n] = v[2] }
    n = 0
    while ((getline line < (work "/out.sm")) > 0) { split(line, v, " "); os[++n] = v[1]; om[n] = v[2] }
    worst = 0; wq = 0; ndiff = 0; r = 0; nz = 0; sum = 0
    while ((getline lr < (work "/ref.q")) > 0 && (getline lo < (work "/out.q")) > 0) {
        r++
        split(lr, a, " "); split(lo, b, " ")
        for (i = 5; i < 5 + nvocab; i++) {
            d = (om[r] + os[r] * b[i]) - (rm[r] + rs[r] * a[i])
            if (d < 0) d = -d
            if (d > worst) { worst = d; wr = r; wi = i - 5 }
            q = b[i] - a[i]
            if (a[i] != 0 || b[i] != 0) { nz++; sum += q }
            if (q < 0) q = -q
            if (q > wq) wq = q
            if (q != 0) ndiff++
        }
    }
    printf "header and tokens byte-identical; %d of %d records read; log-probabilities: max |difference| %.6g nats (record %d, token %d), %d of %d steps differ, at most by %d, mean signed difference %.4f over %d non-zero steps; tolerances %s nats, %s steps\n", r, nrec, worst, wr - 1, wi, ndiff, nrec * nvocab, wq, nz ? sum / nz : 0, nz, tol, bias
    mean = nz ? sum / nz : 0; if (mean < 0) mean = -mean
    ok = (r == nrec) && (nz > 0) && (worst <= tol + 0) && (mean <= bias + 0)
    print (ok ? "PASS" : "FAIL") "  log-probability payload within tolerance"
    exit ok ? 0 : 1
}'
