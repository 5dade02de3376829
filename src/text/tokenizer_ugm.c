/* Unigram tokenizer for T5-style vocabularies (behaviour of llama.cpp src/llama-vocab.cpp
 * llm_tokenizer_ugm and llm_tokenizer_ugm_session): SentencePiece's precompiled normalizer (an
 * XOR-compressed double array over UTF-8 prefixes plus NUL-terminated replacement strings), space
 * handling, then the Viterbi search for the best-scoring segmentation. */
#include "vocab_internal.h"

#include "errors.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

struct oxl_ugm {
    uint8_t *charsmap;    /* tokenizer.ggml.precompiled_charsmap, copied */
    const uint32_t *xcda; /* into charsmap (4-byte aligned copy) */
    uint32_t *xcda_copy;
    size_t n_xcda;
    const char *repl; /* replacement strings */
    size_t n_repl;
    oxl_trie tokens; /* normal, user-defined and unused tokens */
    oxl_trie user;   /* user-defined tokens */
    double unknown_score;
};

void oxl_ugm_free(oxl_vocab *v) {
    if (!v->ugm)
        return;
    free(v->ugm->charsmap);
    free(v->ugm->xcda_copy);
    oxl_trie_free(&v->ugm->tokens);
    oxl_trie_free(&v->ugm->user);
    free(v->ugm);
    v->ugm = NULL;
}

int oxl_ugm_load(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err) {
    oxl_ugm *u = calloc(1, sizeof *u);
    if (!u)
        return oxl_err_set(err, "%s: out of memory", path);
    v->ugm = u;
    int64_t ki = oxl_gguf_find_key(g, "tokenizer.ggml.precompiled_charsmap");
    if (ki >= 0) {
        if (oxl_gguf_kv_type(g, ki) != OXL_GGUF_ARRAY ||
            (oxl_gguf_arr_type(g, ki) != OXL_GGUF_INT8 && oxl_gguf_arr_type(g, ki) != OXL_GGUF_UINT8))
            return oxl_err_set(err, "%s: tokenizer.ggml.precompiled_charsmap must be an array of int8 or uint8", path);
        uint64_t n = oxl_gguf_arr_n(g, ki);
        const uint8_t *d = oxl_gguf_arr_data(g, ki);
        if (n > 0) {
            if (!d || n < 4)
                return oxl_err_set(err, "%s: tokenizer.ggml.precompiled_charsmap has %llu bytes (needs a 4-byte size)",
                                   path, (unsigned long long)n);
            uint32_t blob = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
            if ((uint64_t)blob + 4 >= n || blob % 4)
                return oxl_err_set(
                    err,
                    "%s: tokenizer.ggml.precompiled_charsmap: double array size %u at byte 0 does not fit "
                    "its %llu bytes",
                    path, blob, (unsigned long long)n);
            if (!(u->charsmap = malloc(n)) || !(u->xcda_copy = malloc(blob ? blob : 4)))
                return oxl_err_set(err, "%s: out of memory for the precompiled charsmap", path);
            memcpy(u->charsmap, d, n);
            u->n_xcda = blob / 4;
            for (size_t i = 0; i < u->n_xcda; i++) {
                const uint8_t *p = d + 4 + 4 * i;
                u->xcda_copy[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            }
            u->xcda = u->xcda_copy;
            u->repl = (const char *)u->charsmap + 4 + blob;
            u->n_repl = n - 4 - blob;
        }
    }
    float min_score = FLT_MAX;
    for (int32_t i = 0; i < v->n; i++) {
        uint16_t a = v->attr[i];
        if ((a & OXL_ATTR_NORMAL) && v->score[i] < min_score)
            min_score = v->score[i];
        if ((a & (OXL_ATTR_NORMAL | OXL_ATTR_USER_DEFINED | OXL_ATTR_UNUSED)) &&
            !oxl_trie_insert(&u->tokens, oxl_tok_text(v, i), v->text_len[i], i))
            return oxl_err_set(err, "%s: out of memory for the token trie", path);
        if ((a & OXL_ATTR_USER_DEFINED) && !oxl_trie_insert(&u->user, oxl_tok_text(v, i), v->text_len[i], i))
            return oxl_err_set(err, "%s: out of memory for the token trie", path);
    }
    u->unknown_score = (double)min_score - 10.0;
    return 0;
}

// --- normalization --------------------------------------------------------------------------------

/* The bit-packed double array: BASE in bits 10-30 (shifted by 8 when bit 9 is set), LCHECK in bits
 * 0-7 (bit 31 kept), LEAF in bit 8, VALUE = bits 0-30. Out-of-range indices read as 0xFFFFFFFF, which
 * matches no LCHECK and so ends the walk. */
static uint32_t xcda_node(const oxl_ugm *u, size_t i) { return i < u->n_xcda ? u->xcda[i] : 0xFFFFFFFFu; }

/* Normalizes the prefix of in[off..n): returns the replacement (*rl bytes) and sets *used to the
 * input bytes it stands for (llm_tokenizer_ugm_session::normalize_prefix). */
static const char *normalize_prefix(const oxl_ugm *u, const char *in, size_t n, size_t off, size_t *rl, size_t *used) {
    /* the longest path through the user-defined tokens' trie, as llama.cpp's naive_trie walk */
    if (u->user.n) {
        int32_t node = 0;
        size_t k = off;
        while (k < n && (node = oxl_trie_step(&u->user, node, (unsigned char)in[k])) >= 0)
            k++;
        if (k > off) {
            *rl = *used = k - off;
            return in + off;
        }
    }
    size_t best_len = 0, best_off = 0;
    if (u->n_xcda) {
        uint32_t node = xcda_node(u, 0), idx;
        idx = (node >> 10) << ((node & (1u << 9)) >> 6);
        for (size_t k = off; k < n; k++) {
            unsigned char c = (unsigned char)in[k];
            if (c == 0)
                break;
            idx ^= c;
            uint32_t p = xcda_node(u, idx);
            if ((p & ((1u << 31) | 0xFF)) != c)
                break;
            bool leaf = (p >> 8) & 1;
            idx ^= (p >> 10) << ((p & (1u << 9)) >> 6);
            if (leaf) {
                best_len = k - off + 1;
                best_off = xcda_node(u, idx) & ((1u << 31) - 1);
            }
        }
    }
    if (best_len > 0 && best_off < u->n_repl) {
        const char *r = u->repl + best_off;
        const char *z = memchr(r, '\0', u->n_repl - best_off);
        if (z) { /* an unterminated replacement is ignored (llama.cpp stops with an error) */
            *rl = (size_t)(z - r);
            *used = best_len;
            return r;
        }
    }
    size_t k = off;
    uint32_t c;
    if (oxl_utf8_decode(in, n, &k, &c)) {
        *rl = *used = k - off;
        return in + off;
    }
    *rl = 3;
    *used = 1;
    return "\xef\xbf\xbd";
}

static bool put(char **buf, size_t *cap, size_t *n, const char *s, size_t len) {
    if (!oxl_grow((void **)buf, cap, *n, len, 1))
        return false;
    memcpy(*buf + *n, s, len);
    *n += len;
    return true;
}

/* The normalized text: replacements, spaces escaped, a leading (or trailing) space, runs of spaces
 * merged when remove_extra_whitespaces (llm_tokenizer_ugm_session::normalize). */
static bool normalize(const oxl_vocab *v, const char *in, size_t n, char **out, size_t *cap, size_t *on) {
    const oxl_ugm *u = v->ugm;
    const char *space = v->escape_whitespaces ? "\xe2\x96\x81" : " ";
    size_t sl = v->escape_whitespaces ? 3 : 1;
    bool prepend = !v->treat_whitespace_as_suffix && v->add_space_prefix;
    bool append = v->treat_whitespace_as_suffix && v->add_space_prefix;
    bool merge = v->remove_extra_whitespaces, prepended = false, in_word = false;
    *on = 0;
    /* Real normalizers expand a character at most a few times; a crafted charsmap could expand each
     * byte by its whole size, so the output stops at this bound (the rest of the text is dropped). */
    size_t limit = 64 * n + 4096;
    for (size_t off = 0; off < n && *on < limit;) {
        size_t rl, used;
        const char *r = normalize_prefix(u, in, n, off, &rl, &used);
        for (size_t i = 0; i < rl; i++) {
            if (r[i] != ' ') {
                if (!in_word) {
                    in_word = true;
                    if (((prepend && !prepended) || merge) && !put(out, cap, on, space, sl))
                        return false;
                    prepended = true;
                }
                if (!put(out, cap, on, r + i, 1))
                    return false;
            } else {
                in_word = false;
                if (!merge && !put(out, cap, on, space, sl))
                    return false;
            }
        }
        off += used;
    }
    return !append || put(out, cap, on, space, sl);
}

// --- Viterbi --------------------------------------------------------------------------------------------

typedef struct {
    oxl_token id;
    size_t from;
    double score;
} best_path;

bool oxl_ugm_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out) {
    const oxl_ugm *u = v->ugm;
    char *norm = NULL;
    size_t cap = 0, n = 0;
    if (!normalize(v, text, len, &norm, &cap, &n)) {
        free(norm);
        return false;
    }
    if (n == 0) {
        free(norm);
        return true;
    }
    best_path *best = malloc((n + 1) * sizeof *best);
    if (!best) {
        free(norm);
        return false;
    }
    for (size_t i = 0; i <= n; i++)
        best[i] = (best_path){v->unk, 0, -DBL_MAX};
    best[0].score = 0;
    for (size_t off = 0; off < n;) {
        size_t units = oxl_utf8_len((unsigned char)norm[off]);
        if (units > n - off)
            units = n - off;
        bool single = false;
        double base = best[off].score;
        int32_t node = u->tokens.n ? 0 : -1;
        for (size_t k = off; k < n && node >= 0;) {
            node = oxl_trie_step(&u->tokens, node, (unsigned char)norm[k++]);
            if (node < 0 || u->tokens.node[node].value < 0)
                continue;
            oxl_token id = u->tokens.node[node].value;
            if (k - off == units)
                single = true;
            double s = base + ((v->attr[id] & OXL_ATTR_USER_DEFINED) ? 0.0 : (double)v->score[id]);
            if (s > best[k].score)
                best[k] = (best_path){id, off, s};
        }
        if (!single) {
            double s = base + u->unknown_score;
            if (s > best[off + units].score)
                best[off + units] = (best_path){v->unk, off, s};
        }
        off += units;
    }
    /* back from the end; runs of unknown tokens become one */
    size_t start = out->n;
    bool ok = true, prev_unk = false;
    for (size_t at = n;;) {
        const best_path *b = &best[at];
        bool unk = b->id == v->unk;
        if (!(prev_unk && unk) && b->id >= 0)
            ok = ok && oxl_tok_push(out, b->id);
        if (b->from == 0)
            break;
        prev_unk = unk;
        at = b->from;
    }
    for (size_t i = start, j = out->n; ok && i + 1 < j; i++, j--) {
        oxl_token t = out->ids[i];
        out->ids[i] = out->ids[j - 1];
        out->ids[j - 1] = t;
    }
    free(best);
    free(norm);
    return ok;
}
