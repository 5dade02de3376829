/* SPM tokenizer: SentencePiece BPE by token score with byte fallback (behaviour of llama.cpp
 * src/llama-vocab.cpp llm_tokenizer_spm_session). */
#include "bigram_queue.h"
#include "vocab_internal.h"

#include <stdlib.h>
#include <string.h>

/* A run of text: one UTF-8 character at first, growing as its right neighbour merges into it. */
typedef struct {
    int32_t prev, next; /* neighbouring live symbols, -1 at the ends */
    size_t off, n;      /* bytes text[off .. off+n); n = 0 once merged away */
} spm_symbol;

typedef struct {
    const oxl_vocab *v;
    const char *text;
    spm_symbol *sym;
    size_t n_sym, cap_sym;
    oxl_bigram_queue queue;
} spm_session;

static bool try_add_bigram(spm_session *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0)
        return true;
    size_t size = s->sym[left].n + s->sym[right].n;
    oxl_token t = oxl_vocab_find(s->v, s->text + s->sym[left].off, size);
    if (t < 0)
        return true;
    return oxl_bigram_push(&s->queue, (oxl_bigram){left, right, s->v->score[t], size});
}

/* Tokenizes text[0..len) (spaces already escaped to U+2581) and appends the ids to out
 * (llm_tokenizer_spm_session::tokenize). */
static bool spm_run(spm_session *s, const char *text, size_t len, oxl_tok_list *out) {
    /* Character lengths by the lead byte, as llama.cpp's unicode_len_utf8: stray continuation bytes
     * are characters of their own, a truncated sequence ends at the text's end. */
    s->text = text;
    s->n_sym = 0;
    s->queue.n = 0;
    for (size_t off = 0; off < len;) {
        size_t n = oxl_utf8_len((unsigned char)text[off]);
        if (n > len - off)
            n = len - off;
        if (!oxl_grow((void **)&s->sym, &s->cap_sym, s->n_sym, 1, sizeof *s->sym))
            return false;
        int32_t i = (int32_t)s->n_sym++;
        s->sym[i] = (spm_symbol){i - 1, off + n == len ? -1 : i + 1, off, n};
        off += n;
    }
    for (size_t i = 1; i < s->n_sym; i++)
        if (!try_add_bigram(s, (int32_t)i - 1, (int32_t)i))
            return false;

    /* Merge the best pair until none is left; queue entries whose symbols changed are skipped. */
    while (s->queue.n) {
        oxl_bigram b = oxl_bigram_pop(&s->queue);
        spm_symbol *l = &s->sym[b.left], *r = &s->sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = b.left;
        if (!try_add_bigram(s, l->prev, b.left) || !try_add_bigram(s, b.left, s->sym[b.left].next))
            return false;
    }

    /* Every merged symbol is a token by construction; a single character that is not becomes its
     * bytes' fallback tokens (llama.cpp's resegment, whose merge map can never apply here). */
    for (int32_t i = s->n_sym ? 0 : -1; i >= 0; i = s->sym[i].next) {
        const char *p = text + s->sym[i].off;
        oxl_token t = oxl_vocab_find(s->v, p, s->sym[i].n);
        if (t >= 0) {
            if (!oxl_tok_push(out, t))
                return false;
            continue;
        }
        for (size_t j = 0; j < s->sym[i].n; j++) {
            oxl_token bt = s->v->byte_tok[(unsigned char)p[j]];
            if (bt >= 0 && !oxl_tok_push(out, bt))
                return false;
        }
    }
    return true;
}

bool oxl_spm_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_tok_list *out) {
    spm_session s = {.v = v};
    bool ok = spm_run(&s, text, len, out);
    free(s.sym);
    free(s.queue.heap);
    return ok;
}
