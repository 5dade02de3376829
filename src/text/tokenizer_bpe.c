/* BPE tokenizer: merge ranks from tokenizer.ggml.merges and the merge loop over each pre-tokenized
 * word (behaviour of llama.cpp src/llama-vocab.cpp: the merges part of llama_vocab::impl::load,
 * find_bpe_rank and llm_tokenizer_bpe_session::tokenize). */
#include "bigram_queue.h"
#include "vocab_internal.h"

#include "errors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* One merge "left right": its text in `text` at off, left = [off, off+split), right after the space. */
typedef struct {
    uint32_t off, split, len;
    int32_t rank;
} merge_entry;

struct oxl_bpe_ranks {
    char *text;
    merge_entry *e; /* open-addressing table; len == UINT32_MAX marks an empty slot */
    size_t mask;
};

static uint64_t pair_hash(const char *l, size_t nl, const char *r, size_t nr) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a over left, a separator, right */
    for (size_t i = 0; i < nl; i++)
        h = (h ^ (unsigned char)l[i]) * 1099511628211ull;
    h = (h ^ 0x100) * 1099511628211ull;
    for (size_t i = 0; i < nr; i++)
        h = (h ^ (unsigned char)r[i]) * 1099511628211ull;
    return h;
}

/* Slot of the pair (l, r): where it is stored, or the empty slot where it would go. */
static size_t rank_slot(const oxl_bpe_ranks *m, const char *l, size_t nl, const char *r, size_t nr) {
    for (size_t i = pair_hash(l, nl, r, nr) & m->mask;; i = (i + 1) & m->mask) {
        const merge_entry *e = &m->e[i];
        if (e->len == UINT32_MAX)
            return i;
        const char *t = m->text + e->off;
        size_t el = e->split, er = e->len - e->split - (e->len > e->split ? 1 : 0);
        if (el == nl && er == nr && memcmp(t, l, nl) == 0 && memcmp(t + e->len - er, r, nr) == 0)
            return i;
    }
}

/* Rank of merging l and r, or -1 (llama_vocab::find_bpe_rank). */
static int32_t find_rank(const oxl_bpe_ranks *m, const char *l, size_t nl, const char *r, size_t nr) {
    if (!m)
        return -1;
    const merge_entry *e = &m->e[rank_slot(m, l, nl, r, nr)];
    return e->len == UINT32_MAX ? -1 : e->rank;
}

void oxl_bpe_free(oxl_vocab *v) {
    if (v->ranks) {
        free(v->ranks->text);
        free(v->ranks->e);
        free(v->ranks);
        v->ranks = NULL;
    }
    oxl_pretok_free(v->pretok);
    v->pretok = NULL;
}

/* Reads tokenizer.ggml.merges: each entry splits at its first space after the first byte; an entry
 * without one is the pair ("", ""), which never applies. A pair listed twice keeps its first rank. */
static int load_merges(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err) {
    int64_t ki = oxl_gguf_find_key(g, "tokenizer.ggml.merges");
    if (ki < 0 && (v->pre_flags & OXL_PRE_NO_MERGES_OK))
        return 0;
    if (ki < 0)
        return oxl_err_set(err, "%s: tokenizer.ggml.merges is missing (tokenizer.ggml.model = 'gpt2' needs it)", path);
    if (oxl_gguf_kv_type(g, ki) != OXL_GGUF_ARRAY || oxl_gguf_arr_type(g, ki) != OXL_GGUF_STRING)
        return oxl_err_set(err, "%s: tokenizer.ggml.merges must be an array of strings", path);
    uint64_t n = oxl_gguf_arr_n(g, ki);
    if (n > (uint64_t)INT32_MAX / 4)
        return oxl_err_set(err, "%s: tokenizer.ggml.merges has %llu entries (at most %d)", path, (unsigned long long)n,
                           INT32_MAX / 4);
    size_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = 0;
        if (!oxl_gguf_arr_str(g, ki, i, &len) && len)
            return oxl_err_set(err, "%s: tokenizer.ggml.merges[%llu] is unreadable", path, (unsigned long long)i);
        if (len > UINT32_MAX / 2 || total > UINT32_MAX / 2)
            return oxl_err_set(err, "%s: tokenizer.ggml.merges[%llu] is %zu bytes long", path, (unsigned long long)i,
                               len);
        total += len;
    }
    oxl_bpe_ranks *m = calloc(1, sizeof *m);
    if (!m)
        return oxl_err_set(err, "%s: out of memory", path);
    v->ranks = m;
    size_t n_slots = 16;
    while (n_slots < 2 * (size_t)n)
        n_slots *= 2;
    m->mask = n_slots - 1;
    m->text = malloc(total ? total : 1);
    m->e = malloc(n_slots * sizeof *m->e);
    if (!m->text || !m->e)
        return oxl_err_set(err, "%s: out of memory for %llu merges", path, (unsigned long long)n);
    for (size_t i = 0; i < n_slots; i++)
        m->e[i].len = UINT32_MAX;
    size_t pos = 0;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *s = oxl_gguf_arr_str(g, ki, i, &len);
        const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
        size_t nl = sp ? (size_t)(sp - s) : 0, nr = sp ? len - nl - 1 : 0;
        if (!sp)
            len = 0; /* ("", "") */
        size_t slot = rank_slot(m, s, nl, sp ? sp + 1 : s, nr);
        if (m->e[slot].len != UINT32_MAX)
            continue;
        memcpy(m->text + pos, s, len);
        m->e[slot] = (merge_entry){(uint32_t)pos, (uint32_t)nl, (uint32_t)len, (int32_t)i};
        pos += len;
    }
    return 0;
}

int oxl_bpe_load(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err) {
    unsigned flags = 0;
    if (!(v->pretok = oxl_pretok_new(v->pre, &flags, path, err)))
        return -1;
    v->pre_flags = flags;
    v->ignore_merges = flags & OXL_PRE_IGNORE_MERGES;
    v->clean_spaces = !(flags & OXL_PRE_KEEP_SPACES);
    v->escape_whitespaces = flags & OXL_PRE_ESCAPE_WS;
    if (flags & OXL_PRE_ADD_BOS)
        v->add_bos = true;
    if (flags & OXL_PRE_ADD_SEP)
        v->add_sep = true;
    if (flags & OXL_PRE_NO_BOS)
        v->bos = -1;
    return load_merges(v, g, path, err);
}

// --- the merge loop --------------------------------------------------------------------------------

typedef struct {
    int32_t prev, next;
    size_t off, n; /* bytes of the word; n = 0 once merged away */
} bpe_symbol;

typedef struct {
    const oxl_vocab *v;
    const char *word;
    bpe_symbol *sym;
    size_t n_sym, cap_sym;
    oxl_bigram_queue queue;
} bpe_session;

static bool add_bigram(bpe_session *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0)
        return true;
    const bpe_symbol *l = &s->sym[left], *r = &s->sym[right];
    int32_t rank = find_rank(s->v->ranks, s->word + l->off, l->n, s->word + r->off, r->n);
    if (rank < 0)
        return true;
    return oxl_bigram_push(&s->queue, (oxl_bigram){left, right, -(double)rank, l->n + r->n});
}

/* Appends the ids of one word's symbols: the token of each, else a token per byte (the one-byte
 * text, or <0xXX> for raw UTF-8 vocabularies), bytes without a token dropped, as llama.cpp. */
static bool emit_symbols(bpe_session *s, oxl_tok_list *out) {
    const oxl_vocab *v = s->v;
    bool raw = v->pre_flags & OXL_PRE_RAW_UTF8;
    for (size_t i = 0; i < s->n_sym; i++) {
        const bpe_symbol *y = &s->sym[i];
        if (y->n == 0)
            continue;
        const char *p = s->word + y->off;
        oxl_token t = oxl_vocab_find(v, p, y->n);
        if (t >= 0) {
            if (!oxl_tok_push(out, t))
                return false;
            continue;
        }
        for (size_t j = 0; j < y->n; j++) {
            char hex[7];
            snprintf(hex, sizeof hex, "<0x%02X>", (unsigned char)p[j]);
            oxl_token bt = raw ? oxl_vocab_find(v, hex, 6) : oxl_vocab_find(v, p + j, 1);
            if (bt >= 0 && !oxl_tok_push(out, bt))
                return false;
        }
    }
    return true;
}

static bool merge_word(bpe_session *s, const char *word, size_t len, oxl_tok_list *out) {
    const oxl_vocab *v = s->v;
    s->word = word;
    s->n_sym = 0;
    s->queue.n = 0;
    bool whole = false;
    if (v->ignore_merges && oxl_vocab_find(v, word, len) >= 0) {
        whole = true;
    } else if (v->pre_flags & OXL_PRE_NEWLINE_WORDS) {
        size_t k = 0;
        while (k < len && word[k] == '\n')
            k++;
        whole = k == len && oxl_vocab_find(v, word, len) >= 0;
    }
    if (whole) {
        if (!oxl_grow((void **)&s->sym, &s->cap_sym, 0, 1, sizeof *s->sym))
            return false;
        s->sym[0] = (bpe_symbol){-1, -1, 0, len};
        s->n_sym = 1;
        return emit_symbols(s, out);
    }
    for (size_t off = 0; off < len;) {
        size_t n = oxl_utf8_len((unsigned char)word[off]);
        if (n > len - off)
            n = len - off;
        if (!oxl_grow((void **)&s->sym, &s->cap_sym, s->n_sym, 1, sizeof *s->sym))
            return false;
        int32_t i = (int32_t)s->n_sym++;
        s->sym[i] = (bpe_symbol){i - 1, off + n == len ? -1 : i + 1, off, n};
        off += n;
    }
    for (size_t i = 1; i < s->n_sym; i++)
        if (!add_bigram(s, (int32_t)i - 1, (int32_t)i))
            return false;
    while (s->queue.n) {
        oxl_bigram b = oxl_bigram_pop(&s->queue);
        bpe_symbol *l = &s->sym[b.left], *r = &s->sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue; /* outdated: one side has merged since */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = b.left;
        if (!add_bigram(s, l->prev, b.left) || !add_bigram(s, b.left, s->sym[b.left].next))
            return false;
    }
    return emit_symbols(s, out);
}

static bool bpe_segment(bpe_session *s, oxl_words *w, const char *text, size_t len, oxl_tok_list *out) {
    const oxl_vocab *v = s->v;
    bool ok = oxl_pretok_split(v->pretok, text, len, v->pre_flags & OXL_PRE_RAW_UTF8, w);
    for (size_t i = 0; ok && i < w->n; i++)
        ok = merge_word(s, w->buf + w->off[i], w->off[i + 1] - w->off[i], out);
    return ok;
}

/* tokenizer.ggml.model = "whitespace" (llm_tokenizer_whitespace_session): whitespace only separates,
 * each run of other characters (lowercased unless the normalizer keeps case) is tokenized alone. */
static bool whitespace_segments(bpe_session *s, oxl_words *w, const char *text, size_t len, oxl_tok_list *out) {
    char *seg = malloc(4 * len + 4);
    if (!seg)
        return false;
    size_t n = 0;
    bool ok = true;
    for (size_t off = 0; ok && off <= len;) {
        uint32_t c = ' '; /* the end flushes the last run */
        if (off == len) {
            off++;
        } else if (!oxl_utf8_decode(text, len, &off, &c)) {
            c = 0xFFFD;
            off++;
        }
        if (oxl_cpt_flags(c) & OXL_CPT_WHITESPACE) {
            if (n)
                ok = bpe_segment(s, w, seg, n, out);
            n = 0;
            continue;
        }
        if (s->v->lowercase && c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF))
            c = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
        n += oxl_utf8_encode(c, seg + n);
    }
    free(seg);
    return ok;
}

bool oxl_bpe_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out) {
    oxl_words w = {0};
    bpe_session s = {.v = v};
    bool ok = strcmp(v->model, "whitespace") == 0 ? whitespace_segments(&s, &w, text, len, out)
                                                  : bpe_segment(&s, &w, text, len, out);
    oxl_words_free(&w);
    free(s.sym);
    free(s.queue.heap);
    return ok;
}
