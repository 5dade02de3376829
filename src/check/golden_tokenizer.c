/* The tokenizer fixture checker: llama.cpp's conformance layout (tests/test-tokenizer-0.cpp), plus a
 * round trip (tokens back to text) for every string the vocabulary can represent. */
#include "golden_tokenizer.h"

#include "errors.h"
#include "file.h"
#include "vocab.h"

#include <stdlib.h>
#include <string.h>

/* Reads a whole file; NULL with err set. */
/* A printable one-line preview of s[0..n): at most 40 bytes, other bytes than printable ASCII as \xHH. */
static void preview(const char *s, size_t n, char *out, size_t cap) {
    size_t w = 0;
    for (size_t i = 0; i < n && i < 40 && w + 5 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        w += (size_t)(c >= 0x20 && c < 0x7f && c != '\\' ? snprintf(out + w, cap - w, "%c", c)
                                                         : snprintf(out + w, cap - w, "\\x%02x", c));
    }
    snprintf(out + w, cap - w, "%s", n > 40 ? "..." : "");
}

/* Round trip: the pieces of ids[0..n) (one leading space dropped where the vocabulary adds it) must
 * give back s[0..len) when s is valid UTF-8. Reports one line; -1 when out of memory. */
static int roundtrip(const oxl_vocab *v, const char *s, size_t len, const oxl_token *ids, int32_t n,
                     oxl_golden_report *r, int n_case, const char *shown) {
    for (size_t off = 0; off < len;) {
        unsigned char c = (unsigned char)s[off];
        size_t k = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0 || off + k > len)
            return 0; /* not UTF-8: byte-level tokenizers see U+FFFD, nothing to compare */
        for (size_t i = 1; i < k; i++)
            if (((unsigned char)s[off + i] & 0xC0) != 0x80)
                return 0;
        off += k;
    }
    size_t cap = len + 64, w = 0;
    char *text = malloc(cap);
    if (!text)
        return -1;
    for (int32_t i = 0; i < n; i++) {
        int32_t m = oxl_vocab_token_to_piece(v, ids[i], text + w, (int32_t)(cap - w), false);
        if (m < 0) {
            char *more = realloc(text, cap + (size_t)-m + 64);
            if (!more) {
                free(text);
                return -1;
            }
            text = more;
            cap += (size_t)-m + 64;
            m = oxl_vocab_token_to_piece(v, ids[i], text + w, (int32_t)(cap - w), false);
        }
        w += (size_t)(m > 0 ? m : 0);
    }
    size_t skip = oxl_vocab_adds_space_prefix(v) && w > 0 && text[0] == ' ' ? 1 : 0;
    bool same = w - skip == len && memcmp(text + skip, s, len) == 0;
    oxl_golden_line(r, same, "round trip case %d '%s'  %zu bytes back (of %zu)", n_case, shown, w - skip, len);
    free(text);
    return 0;
}

int oxl_golden_tokenizer(const char *vocab_path, oxl_golden_report *r, oxl_error *err) {
    char path[4096];
    size_t n_inp = 0, n_out = 0;
    char *inp = NULL, *out = NULL;
    oxl_token *got = NULL, *want = NULL;
    oxl_vocab *v = NULL;
    oxl_gguf *g = NULL;
    int status = -1;

    snprintf(path, sizeof path, "%s.inp", vocab_path);
    if (!(inp = oxl_read_file(path, &n_inp, err)))
        goto done;
    snprintf(path, sizeof path, "%s.out", vocab_path);
    if (!(out = oxl_read_file(path, &n_out, err)))
        goto done;
    if (!(g = oxl_gguf_open(vocab_path, err)) || !(v = oxl_vocab_load(g, err)))
        goto done;
    /* WordPiece lowercases, strips accents and drops whitespace: its text does not come back */
    bool lossless = strcmp(oxl_vocab_model_name(v), "bert") != 0;
    /* a line of .out cannot hold more ids than it has bytes; `got` grows when a string needs more */
    size_t cap = n_out + 1, cap_got = n_inp + 4;
    got = malloc(cap_got * sizeof *got);
    want = malloc(cap * sizeof *want);
    if (!got || !want) {
        oxl_err_set(err, "%s: out of memory", vocab_path);
        goto done;
    }

    /* Strings: everything before each "\n__ggml_vocab_test__\n" (and a last one without it); lines of
     * .out: the expected ids, one line per string. */
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    char *s = inp, *line = out, *out_end = out + n_out;
    for (int n_case = 0; s < inp + n_inp; n_case++) {
        char *e = memmem(s, (size_t)(inp + n_inp - s), sep, sep_len);
        size_t len = e ? (size_t)(e - s) : (size_t)(inp + n_inp - s);
        if (line >= out_end) {
            oxl_err_set(err, "%s.out: fewer lines than the %d strings of %s.inp", vocab_path, n_case + 1, vocab_path);
            goto done;
        }
        char *nl = memchr(line, '\n', (size_t)(out_end - line));
        char *line_end = nl ? nl : out_end;
        int32_t n_want = 0;
        for (char *q = line; q < line_end;) {
            if (*q == ' ' || *q == '\t' || *q == '\r') {
                q++;
                continue;
            }
            char *end;
            long id = strtol(q, &end, 10);
            if (end == q || end > line_end || id < 0 || id > INT32_MAX) {
                oxl_err_set(err, "%s.out: line %d is not a list of token ids", vocab_path, n_case + 1);
                goto done;
            }
            want[n_want++] = (oxl_token)id;
            q = end;
        }
        int32_t n_got = oxl_vocab_tokenize(v, s, len, got, (int32_t)cap_got, false, false);
        if (n_got < 0 && n_got != INT32_MIN) {
            oxl_token *more = realloc(got, (size_t)-n_got * sizeof *got);
            if (!more) {
                oxl_err_set(err, "%s: out of memory", vocab_path);
                goto done;
            }
            got = more;
            cap_got = (size_t)-n_got;
            n_got = oxl_vocab_tokenize(v, s, len, got, (int32_t)cap_got, false, false);
        }
        if (n_got < 0) {
            oxl_err_set(err, "%s.inp: string %d (%zu bytes) cannot be tokenized", vocab_path, n_case + 1, len);
            goto done;
        }
        int32_t n_same = 0;
        while (n_same < n_got && n_same < n_want && got[n_same] == want[n_same])
            n_same++;
        char shown[256];
        preview(s, len, shown, sizeof shown);
        oxl_golden_line(r, n_got == n_want && n_same == n_want,
                        "tokenize case %d '%s'  %d ids (llama.cpp %d), first %d equal", n_case + 1, shown, n_got,
                        n_want, n_same);
        if (lossless && roundtrip(v, s, len, got, n_got, r, n_case + 1, shown) < 0) {
            oxl_err_set(err, "%s: out of memory", vocab_path);
            goto done;
        }
        line = nl ? nl + 1 : out_end;
        if (!e)
            break;
        s = e + sep_len;
    }
    if (line < out_end) {
        oxl_err_set(err, "%s.out: more lines than %s.inp has strings", vocab_path, vocab_path);
        goto done;
    }
    status = 0;
done:
    oxl_vocab_free(v);
    oxl_gguf_close(g);
    free(got);
    free(want);
    free(inp);
    free(out);
    return status;
}
