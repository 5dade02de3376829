/* GBNF grammars: the parser and the matcher of llama.cpp's src/llama-grammar.cpp
 * (llama_grammar_parser, llama_grammar_advance_stack, llama_grammar_accept_token,
 * llama_grammar_reject_candidates, llama_grammar_apply_impl), with bounded work (grammar.h). */
#include "grammar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    G_END,       /* end of a rule */
    G_ALT,       /* start of another alternative */
    G_REF,       /* rule reference */
    G_CHAR,      /* a code point (the first of a class) */
    G_CHAR_NOT,  /* the first of a negated class */
    G_RNG_UPPER, /* makes the preceding char a range up to this one */
    G_CHAR_ALT,  /* another char of the class */
    G_CHAR_ANY,  /* . */
    G_TOKEN,     /* <[id]> */
    G_TOKEN_NOT, /* !<[id]> */
};

typedef struct {
    uint32_t type, value;
} gel;

typedef struct {
    uint32_t value;
    int32_t n_remain; /* bytes still to come; -1: invalid sequence */
} gpartial;

/* A list of stacks (each a sequence of element indices, the top last), with a hash index for
 * finding equal stacks. */
typedef struct {
    int32_t *d;
    size_t nd, capd;
    size_t *off;
    int32_t *len;
    size_t n, cap;
    int32_t *ht; /* index + 1, 0: free */
    size_t hcap;
} gstacks;

/* The pieces of the vocabulary, decoded from a clean UTF-8 state (valid whenever the state has no
 * bytes pending), built at the first oxl_grammar_apply. */
typedef struct {
    int32_t n;
    uint32_t *cps;  /* every token's code points, each list ending with 0 */
    size_t *cp_off; /* (n) */
    gpartial *part; /* (n) the state after the piece */
    uint8_t *flag;  /* (n) 1: end of generation, 2: empty or NUL-led piece */
    char **piece;   /* (n) the raw piece (special tokens rendered) */
    int32_t *pl;    /* (n) its length */
} gcache;

typedef struct {
    int32_t index;
    const uint32_t *cp;
    gpartial partial;
    int32_t id;
    bool moved; /* cp has advanced past the piece's first code point */
} gcand;

typedef struct {
    gcand *v;
    size_t n, cap;
} gcands;

struct oxl_grammar {
    gel *el; /* every rule, each ending with G_END */
    size_t n_el;
    size_t *rule_start; /* (n_rules) */
    size_t n_rules;
    const oxl_vocab *vocab;
    gstacks stacks;
    gpartial partial;
    gcache cache;
    bool cache_built;
    const char *err; /* bound passed or memory */
    char errbuf[160];
    /* scratch kept between calls, so a pass over the vocabulary does not map and unmap pages */
    gcands pool[32]; /* candidate lists, their capacity kept */
    int n_pool;
    gcand *cbuf; /* the candidates of oxl_grammar_apply */
    size_t cbuf_cap;
    /* lazy grammars (oxl_grammar_set_lazy) */
    bool awaiting;            /* no trigger seen yet: everything is allowed */
    oxl_trigger_re **trig_re; /* (n_trig_re) full-match patterns */
    size_t n_trig_re;
    int32_t *trig_tok; /* (n_trig_tok) trigger tokens */
    size_t n_trig_tok;
    char *tbuf; /* the text generated while awaiting */
    size_t tbuf_len, tbuf_cap;
};

// --- stack lists ------------------------------------------------------------------------------------

static void gs_free(gstacks *s) {
    free(s->d);
    free(s->off);
    free(s->len);
    free(s->ht);
    memset(s, 0, sizeof *s);
}

static void gs_clear(gstacks *s) {
    s->nd = 0;
    s->n = 0;
    if (s->ht)
        memset(s->ht, 0, s->hcap * sizeof *s->ht);
}

static uint64_t gs_hash(const int32_t *a, int32_t n) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int32_t i = 0; i < n; i++) {
        h ^= (uint32_t)a[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static bool gs_eq(const gstacks *s, size_t i, const int32_t *a, int32_t n) {
    return s->len[i] == n && (n == 0 || !memcmp(s->d + s->off[i], a, (size_t)n * sizeof *a));
}

/* Index of a stack equal to a[0..n), or -1. */
static long gs_find(const gstacks *s, const int32_t *a, int32_t n) {
    if (!s->hcap)
        return -1;
    for (size_t h = gs_hash(a, n) & (s->hcap - 1);; h = (h + 1) & (s->hcap - 1)) {
        if (!s->ht[h])
            return -1;
        if (gs_eq(s, (size_t)s->ht[h] - 1, a, n))
            return s->ht[h] - 1;
    }
}

static void gs_index(gstacks *s, size_t i) {
    for (size_t h = gs_hash(s->d + s->off[i], s->len[i]) & (s->hcap - 1);; h = (h + 1) & (s->hcap - 1)) {
        if (!s->ht[h]) {
            s->ht[h] = (int32_t)i + 1;
            return;
        }
    }
}

/* Appends a copy of a[0..n) (a must not point into s). Returns -1 when memory runs out. The
 * element buffer is allocated at the first push, so a list holding stacks never has d NULL. */
static int gs_push(gstacks *s, const int32_t *a, int32_t n, bool indexed) {
    if (!s->d || s->nd + (size_t)n > s->capd) {
        size_t c = s->capd ? s->capd : 64;
        while (c < s->nd + (size_t)n)
            c *= 2;
        int32_t *d = realloc(s->d, c * sizeof *d);
        if (!d)
            return -1;
        s->d = d;
        s->capd = c;
    }
    if (s->n == s->cap) {
        size_t c = s->cap ? 2 * s->cap : 16;
        size_t *off = realloc(s->off, c * sizeof *off);
        if (!off)
            return -1;
        s->off = off;
        int32_t *len = realloc(s->len, c * sizeof *len);
        if (!len)
            return -1;
        s->len = len;
        s->cap = c;
    }
    if (n)
        memmove(s->d + s->nd, a, (size_t)n * sizeof *a);
    s->off[s->n] = s->nd;
    s->len[s->n] = n;
    s->nd += (size_t)n;
    s->n++;
    if (indexed) {
        if (2 * s->n > s->hcap) {
            size_t c = s->hcap ? 2 * s->hcap : 64;
            while (c < 2 * s->n)
                c *= 2;
            int32_t *ht = calloc(c, sizeof *ht);
            if (!ht)
                return -1;
            free(s->ht);
            s->ht = ht;
            s->hcap = c;
            for (size_t i = 0; i < s->n; i++)
                gs_index(s, i);
        } else {
            gs_index(s, s->n - 1);
        }
    }
    return 0;
}

static void gs_swap(gstacks *a, gstacks *b) {
    gstacks t = *a;
    *a = *b;
    *b = t;
}

// --- matcher ----------------------------------------------------------------------------------------

static bool is_end_of_seq(const gel *e) { return e->type == G_END || e->type == G_ALT; }

static int fail(oxl_grammar *g, const char *fmt, ...) {
    if (!g->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->errbuf, sizeof g->errbuf, fmt, ap);
        va_end(ap);
        g->err = g->errbuf;
    }
    return -1;
}

static int oom(oxl_grammar *g) { return fail(g, "out of memory"); }

/* Adds a[0..n) to out unless an equal stack is there. */
static int add_unique(oxl_grammar *g, gstacks *out, const int32_t *a, int32_t n) {
    if (gs_find(out, a, n) >= 0)
        return 0;
    if (out->n >= OXL_GRAMMAR_MAX_STACKS)
        return fail(g, "the grammar is too ambiguous: more than %d parse stacks at once", OXL_GRAMMAR_MAX_STACKS);
    return gs_push(out, a, n, true) == 0 ? 0 : oom(g);
}

/* llama_grammar_advance_stack: the stacks reachable from a[0..n) through rule references, each
 * ending at a terminal (or empty), added to out. */
static int advance_stack(oxl_grammar *g, const int32_t *a, int32_t n, gstacks *out) {
    gstacks todo = {0}, seen = {0};
    int32_t *cur = NULL;
    size_t cur_cap = 0;
    int rc = 0;
    if (gs_push(&todo, a, n, false) != 0) {
        rc = oom(g);
        goto done;
    }
    long work = 0;
    while (todo.n > 0) {
        todo.n--;
        int32_t len = todo.len[todo.n];
        if ((size_t)len + 2 > cur_cap) {
            size_t c = (size_t)len + 64;
            int32_t *t = realloc(cur, c * sizeof *t);
            if (!t) {
                rc = oom(g);
                goto done;
            }
            cur = t;
            cur_cap = c;
        }
        if (len)
            memcpy(cur, todo.d + todo.off[todo.n], (size_t)len * sizeof *cur);
        todo.nd = todo.off[todo.n];
        if (gs_find(&seen, cur, len) >= 0)
            continue;
        if (++work > OXL_GRAMMAR_MAX_WORK || seen.nd > (1u << 22)) {
            rc = fail(g, "the grammar is too ambiguous: more than %d stacks visited in one step", OXL_GRAMMAR_MAX_WORK);
            goto done;
        }
        if (gs_push(&seen, cur, len, true) != 0) {
            rc = oom(g);
            goto done;
        }
        if (len == 0) {
            if ((rc = add_unique(g, out, cur, 0)) != 0)
                goto done;
            continue;
        }
        const int32_t pos = cur[len - 1];
        const gel *e = &g->el[pos];
        switch (e->type) {
        case G_REF: {
            if (len + 1 > OXL_GRAMMAR_MAX_DEPTH) {
                rc = fail(g, "the grammar nests too deep: a parse stack of more than %d positions",
                          OXL_GRAMMAR_MAX_DEPTH);
                goto done;
            }
            size_t sub = g->rule_start[e->value];
            for (;;) {
                int32_t m = len - 1;
                if (!is_end_of_seq(e + 1))
                    cur[m++] = pos + 1;
                if (!is_end_of_seq(&g->el[sub]))
                    cur[m++] = (int32_t)sub;
                if (gs_push(&todo, cur, m, false) != 0) {
                    rc = oom(g);
                    goto done;
                }
                cur[len - 1] = pos; /* restore the top for the next alternative */
                while (!is_end_of_seq(&g->el[sub]))
                    sub++;
                if (g->el[sub].type == G_ALT)
                    sub++;
                else
                    break;
            }
            break;
        }
        case G_CHAR:
        case G_CHAR_NOT:
        case G_CHAR_ANY:
        case G_TOKEN:
        case G_TOKEN_NOT:
            if ((rc = add_unique(g, out, cur, len)) != 0)
                goto done;
            break;
        default: rc = fail(g, "internal error: a stack stopped inside a character class"); goto done;
        }
    }
done:
    gs_free(&todo);
    gs_free(&seen);
    free(cur);
    return rc;
}

/* llama_grammar_match_char: whether chr is in the class at pos; *next: the element after it. */
static bool match_char(const gel *el, size_t pos, uint32_t chr, size_t *next) {
    bool found = false;
    const bool positive = el[pos].type == G_CHAR || el[pos].type == G_CHAR_ANY;
    do {
        if (el[pos + 1].type == G_RNG_UPPER) {
            found = found || (el[pos].value <= chr && chr <= el[pos + 1].value);
            pos += 2;
        } else if (el[pos].type == G_CHAR_ANY) {
            found = true;
            pos += 1;
        } else {
            found = found || el[pos].value == chr;
            pos += 1;
        }
    } while (el[pos].type == G_CHAR_ALT);
    if (next)
        *next = pos;
    return found == positive;
}

/* llama_grammar_match_partial_char: whether some completion of the partial sequence can be in the
 * class at pos. */
static bool match_partial_char(const gel *el, size_t pos, gpartial p) {
    const bool positive = el[pos].type == G_CHAR || el[pos].type == G_CHAR_ANY;
    if (p.n_remain < 0 || (p.n_remain == 1 && p.value < 2))
        return false;
    uint32_t low = p.value << (p.n_remain * 6);
    uint32_t high = low | ((1u << (p.n_remain * 6)) - 1);
    if (low == 0) {
        if (p.n_remain == 2)
            low = 1u << 11;
        else if (p.n_remain == 3)
            low = 1u << 16;
    }
    do {
        if (el[pos + 1].type == G_RNG_UPPER) {
            if (el[pos].value <= high && low <= el[pos + 1].value)
                return positive;
            pos += 2;
        } else if (el[pos].type == G_CHAR_ANY) {
            return true;
        } else {
            if (low <= el[pos].value && el[pos].value <= high)
                return positive;
            pos += 1;
        }
    } while (el[pos].type == G_CHAR_ALT);
    return !positive;
}

static bool match_token(const gel *e, int32_t tok) {
    return e->type == G_TOKEN ? e->value == (uint32_t)tok : e->value != (uint32_t)tok;
}

/* decode_utf8 of llama-grammar.cpp over s[0..len) (stopping at a NUL byte, as on a C string),
 * continuing the state start: the complete code points into out (room for len + 1), a 0 after
 * them; returns the state after the text. An invalid byte gives the single code point 0 and state
 * n_remain -1. */
static gpartial decode_utf8(const char *s, size_t len, gpartial start, uint32_t *out, size_t *count) {
    static const int lookup[] = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4};
    size_t i = 0, n = 0;
    uint32_t value = start.value;
    int n_remain = start.n_remain;
    while (i < len && s[i] && n_remain > 0) {
        uint8_t b = (uint8_t)s[i];
        if ((b >> 6) != 2) {
            out[0] = 0;
            *count = 0;
            return (gpartial){0, -1};
        }
        value = (value << 6) + (b & 0x3F);
        i++;
        n_remain--;
    }
    if (start.n_remain > 0 && n_remain == 0)
        out[n++] = value;
    while (i < len && s[i]) {
        uint8_t b = (uint8_t)s[i];
        n_remain = lookup[b >> 4] - 1;
        if (n_remain < 0) {
            out[0] = 0;
            *count = 0;
            return (gpartial){0, n_remain};
        }
        uint8_t mask = (uint8_t)((1u << (7 - n_remain)) - 1);
        value = b & mask;
        i++;
        while (i < len && s[i] && n_remain > 0) {
            value = (value << 6) + ((uint8_t)s[i] & 0x3F);
            i++;
            n_remain--;
        }
        if (n_remain == 0)
            out[n++] = value;
    }
    out[n] = 0;
    *count = n;
    return (gpartial){value, n_remain};
}

/* llama_grammar_accept_chr: the stacks after stack a[0..n) takes chr, added to out. */
static int accept_chr(oxl_grammar *g, const int32_t *a, int32_t n, uint32_t chr, gstacks *out, int32_t *tmp) {
    if (n == 0)
        return 0;
    const int32_t pos = a[n - 1];
    const uint32_t t = g->el[pos].type;
    if (t == G_TOKEN || t == G_TOKEN_NOT)
        return 0;
    size_t next;
    if (!match_char(g->el, (size_t)pos, chr, &next))
        return 0;
    memcpy(tmp, a, (size_t)(n - 1) * sizeof *tmp);
    int32_t m = n - 1;
    if (!is_end_of_seq(&g->el[next]))
        tmp[m++] = (int32_t)next;
    return advance_stack(g, tmp, m, out);
}

static size_t max_len(const gstacks *s) {
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++)
        if ((size_t)s->len[i] > m)
            m = (size_t)s->len[i];
    return m;
}

int oxl_grammar_accept_piece(oxl_grammar *g, int32_t tok, const char *piece, size_t len) {
    if (!g || g->err)
        return -1;
    uint32_t *cps = malloc((len + 2) * sizeof *cps);
    int32_t *tmp = malloc((max_len(&g->stacks) + 2) * sizeof *tmp);
    gstacks next = {0}, cur = {0}, nxt2 = {0};
    int rc = 0;
    if (!cps || !tmp) {
        rc = oom(g);
        goto done;
    }
    size_t n_cps;
    gpartial after = decode_utf8(piece ? piece : "", piece ? len : 0, g->partial, cps, &n_cps);
    for (size_t i = 0; i < g->stacks.n && rc == 0; i++) {
        const int32_t n = g->stacks.len[i];
        if (n == 0)
            continue;
        const int32_t *a = g->stacks.d + g->stacks.off[i];
        const gel *e = &g->el[a[n - 1]];
        if (e->type == G_TOKEN || e->type == G_TOKEN_NOT) {
            if (match_token(e, tok)) {
                memcpy(tmp, a, (size_t)(n - 1) * sizeof *tmp);
                int32_t m = n - 1;
                if (!is_end_of_seq(e + 1))
                    tmp[m++] = a[n - 1] + 1;
                rc = advance_stack(g, tmp, m, &next);
            }
            continue;
        }
        gs_clear(&cur);
        if (gs_push(&cur, a, n, true) != 0) {
            rc = oom(g);
            break;
        }
        /* up to a code point 0, where the filter (reject_for_stack) also stops: an overlong NUL
         * (C0 80) finishing a partial sequence would otherwise kill every stack after the filter
         * allowed the token (llama.cpp then throws) */
        for (const uint32_t *c = cps; c < cps + n_cps && *c && cur.n > 0 && rc == 0; c++) {
            gs_clear(&nxt2);
            int32_t *t2 = malloc((max_len(&cur) + 2) * sizeof *t2);
            if (!t2) {
                rc = oom(g);
                break;
            }
            for (size_t k = 0; k < cur.n && rc == 0; k++)
                rc = accept_chr(g, cur.d + cur.off[k], cur.len[k], *c, &nxt2, t2);
            free(t2);
            gs_swap(&cur, &nxt2);
        }
        for (size_t k = 0; k < cur.n && rc == 0; k++)
            rc = add_unique(g, &next, cur.d + cur.off[k], cur.len[k]);
    }
    if (rc == 0) {
        gs_swap(&g->stacks, &next);
        g->partial = after;
        if (g->stacks.n == 0)
            rc = -1;
    } else {
        gs_clear(&g->stacks); /* a bound passed: the grammar is dead */
    }
done:
    if (rc != 0 && !g->err)
        gs_clear(&g->stacks);
    free(cps);
    free(tmp);
    gs_free(&next);
    gs_free(&cur);
    gs_free(&nxt2);
    return rc;
}

bool oxl_grammar_can_end(const oxl_grammar *g) {
    if (!g || g->err)
        return false;
    for (size_t i = 0; i < g->stacks.n; i++)
        if (g->stacks.len[i] == 0)
            return true;
    return false;
}

bool oxl_grammar_dead(const oxl_grammar *g) { return !g || g->err || g->stacks.n == 0; }

const char *oxl_grammar_error(const oxl_grammar *g) { return g ? g->err : NULL; }

// --- candidates -------------------------------------------------------------------------------------

/* An empty candidate list from the pool (or a new one). */
static gcands gc_take(oxl_grammar *g) {
    if (g->n_pool > 0) {
        gcands c = g->pool[--g->n_pool];
        c.n = 0;
        return c;
    }
    return (gcands){0};
}

/* Hands a list back to the pool (or frees it). */
static void gc_give(oxl_grammar *g, gcands *c) {
    if (c->v && g->n_pool < (int)(sizeof g->pool / sizeof g->pool[0]))
        g->pool[g->n_pool++] = *c;
    else
        free(c->v);
    memset(c, 0, sizeof *c);
}

static int gc_push(gcands *c, gcand x) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        gcand *v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = x;
    return 0;
}

static int reject_candidates(oxl_grammar *g, const gstacks *stacks, const gcand *cands, size_t n, gcands *out);

/* llama_grammar_reject_candidates_for_stack: the candidates that stack a[0..len) rejects, into out. */
static int reject_for_stack(oxl_grammar *g, const int32_t *a, int32_t len, const gcand *cands, size_t n, gcands *out) {
    if (len == 0) {
        for (size_t i = 0; i < n; i++)
            if (*cands[i].cp != 0 || cands[i].partial.n_remain != 0)
                if (gc_push(out, cands[i]) != 0)
                    return oom(g);
        return 0;
    }
    const int32_t pos = a[len - 1];
    const gel *e = &g->el[pos];
    if (e->type == G_TOKEN || e->type == G_TOKEN_NOT) {
        for (size_t i = 0; i < n; i++) {
            /* a token element matches a whole token: one whose piece is partly consumed by the
             * characters before it is rejected, as oxl_grammar_accept_piece cannot match it
             * (llama.cpp's filter lets it through by id and its accept then throws) */
            bool rej =
                *cands[i].cp == 0 ? cands[i].partial.n_remain != 0 : cands[i].moved || !match_token(e, cands[i].id);
            if (rej && gc_push(out, cands[i]) != 0)
                return oom(g);
        }
        return 0;
    }
    gcands nextc = gc_take(g);
    int rc = 0;
    int8_t memo[128]; /* the class's verdict per ASCII code point, -1: not asked yet */
    memset(memo, -1, sizeof memo);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const gcand *c = &cands[i];
        const uint32_t chr = *c->cp;
        bool in_class = false;
        if (chr != 0) {
            if (chr < 128) {
                if (memo[chr] < 0)
                    memo[chr] = match_char(g->el, (size_t)pos, chr, NULL);
                in_class = memo[chr];
            } else {
                in_class = match_char(g->el, (size_t)pos, chr, NULL);
            }
        }
        if (chr == 0) {
            if (c->partial.n_remain != 0 && !match_partial_char(g->el, (size_t)pos, c->partial))
                rc = gc_push(out, *c);
        } else if (in_class) {
            rc = gc_push(&nextc, (gcand){c->index, c->cp + 1, c->partial, c->id, true});
        } else {
            rc = gc_push(out, *c);
        }
    }
    if (rc != 0) {
        gc_give(g, &nextc);
        return oom(g);
    }
    if (nextc.n == 0) { /* nothing goes on: the next position rejects nothing more */
        gc_give(g, &nextc);
        return 0;
    }
    size_t after;
    match_char(g->el, (size_t)pos, 0, &after);
    int32_t *tmp = malloc(((size_t)len + 1) * sizeof *tmp);
    gstacks next = {0};
    if (!tmp) {
        rc = oom(g);
        goto done;
    }
    memcpy(tmp, a, (size_t)(len - 1) * sizeof *tmp);
    int32_t m = len - 1;
    if (!is_end_of_seq(&g->el[after]))
        tmp[m++] = (int32_t)after;
    if ((rc = advance_stack(g, tmp, m, &next)) != 0)
        goto done;
    { /* the next position's rejects go straight to out, each pointing back at its code point */
        const size_t n0 = out->n;
        if ((rc = reject_candidates(g, &next, nextc.v, nextc.n, out)) != 0)
            goto done;
        for (size_t i = n0; i < out->n; i++)
            out->v[i].cp--;
    }
done:
    free(tmp);
    gs_free(&next);
    gc_give(g, &nextc);
    return rc;
}

/* llama_grammar_reject_candidates: the candidates every stack rejects. */
static int reject_candidates(oxl_grammar *g, const gstacks *stacks, const gcand *cands, size_t n, gcands *out) {
    if (n == 0 || stacks->n == 0) {
        for (size_t i = 0; i < n; i++) /* no stack: everything is rejected */
            if (gc_push(out, cands[i]) != 0)
                return oom(g);
        return 0;
    }
    gcands cur = gc_take(g), nxt = gc_take(g);
    int rc = reject_for_stack(g, stacks->d + stacks->off[0], stacks->len[0], cands, n, &cur);
    for (size_t i = 1; i < stacks->n && rc == 0 && cur.n > 0; i++) {
        nxt.n = 0;
        rc = reject_for_stack(g, stacks->d + stacks->off[i], stacks->len[i], cur.v, cur.n, &nxt);
        gcands t = cur;
        cur = nxt;
        nxt = t;
    }
    if (rc == 0 && out->n == 0) { /* hand the list over instead of copying it */
        gcands t = *out;
        *out = cur;
        cur = t;
    } else {
        for (size_t i = 0; i < cur.n && rc == 0; i++)
            if (gc_push(out, cur.v[i]) != 0)
                rc = oom(g);
    }
    gc_give(g, &cur);
    gc_give(g, &nxt);
    return rc;
}

static void cache_free(gcache *c) {
    if (c->piece)
        for (int32_t i = 0; i < c->n; i++)
            free(c->piece[i]);
    free(c->piece);
    free(c->pl);
    free(c->cps);
    free(c->cp_off);
    free(c->part);
    free(c->flag);
    memset(c, 0, sizeof *c);
}

/* Every token's piece (llama_vocab::token_to_piece: special tokens rendered), decoded from a clean
 * state, and whether it ends generation. */
static int cache_build(oxl_grammar *g) {
    gcache *c = &g->cache;
    const int32_t n = oxl_vocab_n_tokens(g->vocab);
    c->n = n;
    c->piece = calloc((size_t)n, sizeof *c->piece);
    c->pl = calloc((size_t)n, sizeof *c->pl);
    c->cp_off = calloc((size_t)n, sizeof *c->cp_off);
    c->part = calloc((size_t)n, sizeof *c->part);
    c->flag = calloc((size_t)n, sizeof *c->flag);
    if (!c->piece || !c->pl || !c->cp_off || !c->part || !c->flag)
        return oom(g);
    size_t total = 0, cap = 0;
    char buf[256];
    for (int32_t t = 0; t < n; t++) {
        int32_t w = oxl_vocab_token_to_piece(g->vocab, t, buf, (int32_t)sizeof buf, true);
        char *p;
        if (w < 0) {
            p = malloc((size_t)-w);
            if (!p)
                return oom(g);
            w = oxl_vocab_token_to_piece(g->vocab, t, p, -w, true);
            if (w < 0)
                w = 0;
        } else {
            p = malloc((size_t)w + 1);
            if (!p)
                return oom(g);
            memcpy(p, buf, (size_t)w);
        }
        c->piece[t] = p;
        c->pl[t] = w;
        if (oxl_vocab_is_eog(g->vocab, t))
            c->flag[t] = 1;
        else if (w == 0 || p[0] == 0)
            c->flag[t] = 2;
        if (total + (size_t)w + 2 > cap) {
            size_t nc = cap ? 2 * cap : 4096;
            while (nc < total + (size_t)w + 2)
                nc *= 2;
            uint32_t *cps = realloc(c->cps, nc * sizeof *cps);
            if (!cps)
                return oom(g);
            c->cps = cps;
            cap = nc;
        }
        c->cp_off[t] = total;
        size_t k;
        c->part[t] = decode_utf8(p, (size_t)w, (gpartial){0, 0}, c->cps + total, &k);
        total += k + 1;
    }
    g->cache_built = true;
    return 0;
}

int oxl_grammar_apply(oxl_grammar *g, const int32_t *ids, int32_t n, bool *allowed) {
    if (!g || !ids || !allowed || n < 0)
        return -1;
    if (g->err)
        return -1;
    if (g->awaiting) {
        for (int32_t i = 0; i < n; i++)
            allowed[i] = true;
        return 0;
    }
    if (!g->vocab)
        return fail(g, "no vocabulary to match tokens against");
    if (!g->cache_built && cache_build(g) != 0)
        return -1;
    const gcache *c = &g->cache;
    const bool allow_eog = oxl_grammar_can_end(g);
    const bool fresh = g->partial.n_remain <= 0;
    if ((size_t)n + 1 > g->cbuf_cap) {
        gcand *b = realloc(g->cbuf, ((size_t)n + 1) * sizeof *b);
        if (!b)
            return oom(g);
        g->cbuf = b;
        g->cbuf_cap = (size_t)n + 1;
    }
    gcand *cands = g->cbuf;
    uint32_t **own = fresh ? NULL : calloc((size_t)n + 1, sizeof *own);
    gcands rej = gc_take(g);
    int rc = 0;
    if (!fresh && !own) {
        rc = oom(g);
        goto done;
    }
    size_t nc = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t id = ids[i];
        allowed[i] = true;
        if (id < 0 || id >= c->n) {
            allowed[i] = false;
            continue;
        }
        if (c->flag[id] == 1) {
            allowed[i] = allow_eog;
            continue;
        }
        if (c->flag[id] == 2) {
            allowed[i] = false;
            continue;
        }
        if (fresh) {
            cands[nc++] = (gcand){i, c->cps + c->cp_off[id], c->part[id], id, false};
        } else {
            uint32_t *cp = malloc(((size_t)c->pl[id] + 2) * sizeof *cp);
            if (!cp) {
                rc = oom(g);
                goto done;
            }
            own[i] = cp;
            size_t k;
            gpartial p = decode_utf8(c->piece[id], (size_t)c->pl[id], g->partial, cp, &k);
            cands[nc++] = (gcand){i, cp, p, id, false};
        }
    }
    if ((rc = reject_candidates(g, &g->stacks, cands, nc, &rej)) != 0)
        goto done;
    for (size_t i = 0; i < rej.n; i++)
        allowed[rej.v[i].index] = false;
done:
    if (own)
        for (int32_t i = 0; i < n; i++)
            free(own[i]);
    free(own);
    gc_give(g, &rej);
    return rc;
}

/* llama_grammar_accept_impl while awaiting a trigger: a trigger token starts the grammar with
 * itself; else the piece joins the buffer, and the first pattern matching all of it starts the
 * grammar with the buffer's text from the pattern's first non-empty capture. */
static int accept_awaiting(oxl_grammar *g, int32_t tok, const char *piece, size_t len) {
    for (size_t i = 0; i < g->n_trig_tok; i++) {
        if (g->trig_tok[i] == tok) {
            g->awaiting = false;
            g->tbuf_len = 0;
            return oxl_grammar_accept_piece(g, tok, piece, len);
        }
    }
    if (g->tbuf_len + len + 1 > g->tbuf_cap) {
        size_t cap = (g->tbuf_len + len + 1) * 2;
        char *b = realloc(g->tbuf, cap);
        if (!b)
            return oom(g);
        g->tbuf = b;
        g->tbuf_cap = cap;
    }
    memcpy(g->tbuf + g->tbuf_len, piece, len);
    g->tbuf_len += len;
    g->tbuf[g->tbuf_len] = 0;
    for (size_t i = 0; i < g->n_trig_re; i++) {
        long at = oxl_trigger_re_match(g->trig_re[i], g->tbuf, g->tbuf_len);
        if (at >= 0) {
            g->awaiting = false;
            size_t n = g->tbuf_len - (size_t)at;
            g->tbuf_len = 0;
            return oxl_grammar_accept_piece(g, -1, g->tbuf + at, n);
        }
    }
    return 0;
}

int oxl_grammar_accept_token(oxl_grammar *g, int32_t tok) {
    if (!g || g->err || !g->vocab)
        return -1;
    if (!g->awaiting && oxl_vocab_is_eog(g->vocab, tok))
        return 0;
    char buf[256];
    char *p = buf;
    int32_t w = oxl_vocab_token_to_piece(g->vocab, tok, buf, (int32_t)sizeof buf, true);
    if (w < 0) {
        if (!(p = malloc((size_t)-w)))
            return oom(g);
        w = oxl_vocab_token_to_piece(g->vocab, tok, p, -w, true);
    }
    size_t n = w > 0 ? (size_t)w : 0;
    int rc = g->awaiting ? accept_awaiting(g, tok, p, n) : oxl_grammar_accept_piece(g, tok, p, n);
    if (p != buf)
        free(p);
    return rc;
}

int oxl_grammar_set_lazy(oxl_grammar *g, const char *const *patterns, size_t n_patterns, const int32_t *tokens,
                         size_t n_tokens, char *err, size_t err_len) {
    if (!g || (n_patterns && !patterns) || (n_tokens && !tokens) || n_patterns + n_tokens == 0) {
        if (err && err_len)
            snprintf(err, err_len, "a lazy grammar needs at least one trigger");
        return -1;
    }
    oxl_trigger_re **re = calloc(n_patterns ? n_patterns : 1, sizeof *re);
    int32_t *tok = malloc((n_tokens ? n_tokens : 1) * sizeof *tok);
    if (!re || !tok) {
        free(re);
        free(tok);
        if (err && err_len)
            snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n_patterns; i++) {
        if (!patterns[i] || !(re[i] = oxl_trigger_re_new(patterns[i], err, err_len))) {
            if (!patterns[i] && err && err_len)
                snprintf(err, err_len, "trigger pattern %zu is missing", i);
            for (size_t k = 0; k < i; k++)
                oxl_trigger_re_free(re[k]);
            free(re);
            free(tok);
            return -1;
        }
    }
    if (n_tokens)
        memcpy(tok, tokens, n_tokens * sizeof *tok);
    g->trig_re = re;
    g->n_trig_re = n_patterns;
    g->trig_tok = tok;
    g->n_trig_tok = n_tokens;
    g->awaiting = true;
    return 0;
}

bool oxl_grammar_awaiting(const oxl_grammar *g) { return g && g->awaiting; }

void oxl_grammar_free(oxl_grammar *g) {
    if (!g)
        return;
    free(g->el);
    free(g->rule_start);
    gs_free(&g->stacks);
    cache_free(&g->cache);
    for (int i = 0; i < g->n_pool; i++)
        free(g->pool[i].v);
    free(g->cbuf);
    for (size_t i = 0; i < g->n_trig_re; i++)
        oxl_trigger_re_free(g->trig_re[i]);
    free(g->trig_re);
    free(g->trig_tok);
    free(g->tbuf);
    free(g);
}

// --- parser -----------------------------------------------------------------------------------------

typedef struct {
    gel *v;
    size_t n, cap;
} gvec;

typedef struct {
    char *name;
    uint32_t id;
    size_t first; /* offset of the first occurrence in the source */
    size_t def;   /* offset of its definition (+ 1; 0: none yet) */
} gsym;

typedef struct {
    const char *src;
    const oxl_vocab *vocab;
    gsym *sym;
    size_t n_sym, cap_sym;
    size_t *sh; /* hash of names: symbol index + 1 */
    size_t shcap;
    gvec *rules; /* by id; .v NULL: not defined */
    size_t n_rules;
    size_t total; /* elements added */
    int depth;
    const char *err_at;
    char err[200];
} gparser;

/* Records the first error at p; returns NULL for the caller to pass up. */
static const char *perr(gparser *P, const char *p, const char *fmt, ...) {
    if (!P->err_at) {
        P->err_at = p;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(P->err, sizeof P->err, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static int gv_push(gvec *v, uint32_t type, uint32_t value) {
    if (v->n == v->cap) {
        size_t c = v->cap ? 2 * v->cap : 16;
        gel *n = realloc(v->v, c * sizeof *n);
        if (!n)
            return -1;
        v->v = n;
        v->cap = c;
    }
    v->v[v->n++] = (gel){type, value};
    return 0;
}

static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* The symbol named s[0..n), or -1. */
static long sym_find(const gparser *P, const char *s, size_t n) {
    if (!P->shcap)
        return -1;
    for (size_t h = name_hash(s, n) & (P->shcap - 1);; h = (h + 1) & (P->shcap - 1)) {
        if (!P->sh[h])
            return -1;
        const gsym *y = &P->sym[P->sh[h] - 1];
        if (strlen(y->name) == n && !memcmp(y->name, s, n))
            return (long)P->sh[h] - 1;
    }
}

static void sym_index(gparser *P, size_t i) {
    const char *s = P->sym[i].name;
    for (size_t h = name_hash(s, strlen(s)) & (P->shcap - 1);; h = (h + 1) & (P->shcap - 1)) {
        if (!P->sh[h]) {
            P->sh[h] = i + 1;
            return;
        }
    }
}

/* Adds a new name with id; returns its index or -1. */
static long sym_add(gparser *P, const char *s, size_t n, uint32_t id, size_t first) {
    if (P->n_sym >= OXL_GRAMMAR_MAX_SYMBOLS) {
        perr(P, P->src + first, "more than %d rules (repetitions included)", OXL_GRAMMAR_MAX_SYMBOLS);
        return -1;
    }
    if (P->n_sym == P->cap_sym) {
        size_t c = P->cap_sym ? 2 * P->cap_sym : 32;
        gsym *y = realloc(P->sym, c * sizeof *y);
        if (!y)
            goto oom;
        P->sym = y;
        P->cap_sym = c;
    }
    char *name = malloc(n + 1);
    if (!name)
        goto oom;
    memcpy(name, s, n);
    name[n] = 0;
    P->sym[P->n_sym] = (gsym){name, id, first, 0};
    P->n_sym++;
    if (2 * P->n_sym > P->shcap) {
        size_t c = P->shcap ? 2 * P->shcap : 64;
        size_t *sh = calloc(c, sizeof *sh);
        if (!sh)
            goto oom;
        free(P->sh);
        P->sh = sh;
        P->shcap = c;
        for (size_t i = 0; i < P->n_sym; i++)
            sym_index(P, i);
    } else {
        sym_index(P, P->n_sym - 1);
    }
    return (long)P->n_sym - 1;
oom:
    perr(P, P->src + first, "out of memory");
    return -1;
}

/* llama_grammar_parser::get_symbol_id: the id of a name, a new one (the count of names) if new. */
static long get_symbol_id(gparser *P, const char *s, size_t n) {
    long i = sym_find(P, s, n);
    if (i >= 0)
        return (long)P->sym[i].id;
    i = sym_add(P, s, n, (uint32_t)P->n_sym, (size_t)(s - P->src));
    return i < 0 ? -1 : (long)P->sym[i].id;
}

/* llama_grammar_parser::generate_symbol_id: base_N with N the count of names (an existing name
 * base_N is re-pointed, as std::map's operator[] does). */
static long generate_symbol_id(gparser *P, const char *base, const char *at) {
    const uint32_t id = (uint32_t)P->n_sym;
    char name[160];
    int w = snprintf(name, sizeof name, "%.120s_%u", base, id);
    long i = sym_find(P, name, (size_t)w);
    if (i >= 0) {
        P->sym[i].id = id;
        return id;
    }
    return sym_add(P, name, (size_t)w, id, (size_t)(at - P->src)) < 0 ? -1 : (long)id;
}

/* add_rule: rules[id] = rule (taking its elements). */
static int add_rule(gparser *P, uint32_t id, gvec *rule, const char *at) {
    P->total += rule->n;
    if (P->total > OXL_GRAMMAR_MAX_ELEMENTS) {
        perr(P, at, "the grammar is too large: more than %d elements (repetitions expanded)", OXL_GRAMMAR_MAX_ELEMENTS);
        return -1;
    }
    if (id >= P->n_rules) {
        size_t n = (size_t)id + 1;
        gvec *r = realloc(P->rules, n * sizeof *r);
        if (!r) {
            perr(P, at, "out of memory");
            return -1;
        }
        memset(r + P->n_rules, 0, (n - P->n_rules) * sizeof *r);
        P->rules = r;
        P->n_rules = n;
    }
    free(P->rules[id].v);
    P->rules[id] = *rule;
    memset(rule, 0, sizeof *rule);
    return 0;
}

static bool is_digit(char c) { return '0' <= c && c <= '9'; }

static bool is_word(char c) { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '-' || is_digit(c); }

static const char *parse_space(const char *p, bool newline_ok) {
    while (*p == ' ' || *p == '\t' || *p == '#' || (newline_ok && (*p == '\r' || *p == '\n'))) {
        if (*p == '#') {
            while (*p && *p != '\r' && *p != '\n')
                p++;
        } else {
            p++;
        }
    }
    return p;
}

/* A char of a literal or class: an escape or one UTF-8 sequence (llama.cpp's parse_char). */
static const char *parse_char(gparser *P, const char *p, uint32_t *out) {
    if (*p == '\\') {
        int size = 0;
        switch (p[1]) {
        case 'x': size = 2; break;
        case 'u': size = 4; break;
        case 'U': size = 8; break;
        case 't': *out = '\t'; return p + 2;
        case 'r': *out = '\r'; return p + 2;
        case 'n': *out = '\n'; return p + 2;
        case '\\':
        case '"':
        case '[':
        case ']': *out = (uint8_t)p[1]; return p + 2;
        default:
            if (!p[1])
                return perr(P, p, "unexpected end of input after '\\'");
            return perr(P, p, "unknown escape '\\%c'", p[1]);
        }
        uint32_t v = 0;
        const char *q = p + 2;
        for (int i = 0; i < size; i++, q++) {
            char c = *q;
            v <<= 4;
            if ('a' <= c && c <= 'f')
                v += (uint32_t)(c - 'a' + 10);
            else if ('A' <= c && c <= 'F')
                v += (uint32_t)(c - 'A' + 10);
            else if ('0' <= c && c <= '9')
                v += (uint32_t)(c - '0');
            else
                return perr(P, p, "expecting %d hex digits after '\\%c'", size, p[1]);
        }
        *out = v;
        return q;
    }
    if (!*p)
        return perr(P, p, "unexpected end of input");
    /* one UTF-8 sequence, as llama.cpp's decode_utf8 (no validation, stops at the end) */
    static const int lookup[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    uint8_t b = (uint8_t)*p;
    int len = lookup[b >> 4];
    uint32_t v = b & ((1u << (8 - len)) - 1);
    const char *q = p + 1;
    for (; q < p + len && *q; q++)
        v = (v << 6) + ((uint8_t)*q & 0x3F);
    *out = v;
    return q;
}

/* Digits into *out, saturating. */
static const char *parse_int(gparser *P, const char *p, uint64_t *out) {
    const char *q = p;
    uint64_t v = 0;
    while (is_digit(*q)) {
        uint64_t d = (uint64_t)(*q - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
        q++;
    }
    if (q == p)
        return perr(P, p, "expecting an integer");
    *out = v;
    return q;
}

/* <[id]> or <piece>; p at '<'. */
static const char *parse_token(gparser *P, const char *p, uint32_t *out) {
    const char *s = p;
    if (*p != '<')
        return perr(P, p, "expecting '<' after '!'");
    p++;
    if (*p == '[') {
        p++;
        uint64_t id = 0;
        const char *q = parse_int(P, p, &id);
        if (!q)
            return NULL;
        if (id > INT32_MAX)
            return perr(P, p, "token id %.*s out of range", (int)(q - p > 24 ? 24 : q - p), p);
        if (*q != ']')
            return perr(P, q, "expecting ']' after the token id");
        if (q[1] != '>')
            return perr(P, q + 1, "expecting '>' after ']'");
        *out = (uint32_t)id;
        return q + 2;
    }
    if (!P->vocab)
        return perr(P, s, "no vocabulary to resolve the token reference");
    while (*p && *p != '>')
        p++;
    if (*p != '>')
        return perr(P, s, "unterminated token reference: expecting '>'");
    p++;
    oxl_token toks[2];
    int32_t n = oxl_vocab_tokenize(P->vocab, s, (size_t)(p - s), toks, 2, false, true);
    if (n != 1)
        return perr(P, s, "'%.*s' is not a single token of the vocabulary", (int)(p - s > 60 ? 60 : p - s), s);
    *out = (uint32_t)toks[0];
    return p;
}

static const char *parse_alternates(gparser *P, const char *src, const char *rule_name, uint32_t rule_id, bool nested);

#define MAX_REPETITION 2000 /* llama.cpp's MAX_REPETITION_THRESHOLD */

/* handle_repetitions of llama_grammar_parser::parse_sequence: S{m,n} becomes m copies of S then
 * n - m nested optional rules (or one recursive rule without a maximum). */
static int repeat(gparser *P, gvec *rule, size_t last_sym_start, uint64_t *n_prev_rules, uint64_t min_t, uint64_t max_t,
                  const char *rule_name, const char *at) {
    const bool no_max = max_t == UINT64_MAX;
    if (last_sym_start == rule->n) {
        perr(P, at, "expecting an item before the repetition operator");
        return -1;
    }
    if (!no_max && max_t < min_t) {
        perr(P, at, "repetition {%llu,%llu}: the maximum is below the minimum", (unsigned long long)min_t,
             (unsigned long long)max_t);
        return -1;
    }
    uint64_t total = 1;
    if (!no_max && max_t > 0)
        total = max_t;
    else if (min_t > 0)
        total = min_t;
    if (*n_prev_rules * total >= MAX_REPETITION) {
        perr(P, at, "the repetition makes %llu copies of rules, more than %d",
             (unsigned long long)(*n_prev_rules * total), MAX_REPETITION);
        return -1;
    }
    const size_t plen = rule->n - last_sym_start;
    gel *prev = malloc(plen * sizeof *prev);
    if (!prev) {
        perr(P, at, "out of memory");
        return -1;
    }
    memcpy(prev, rule->v + last_sym_start, plen * sizeof *prev);
    int rc = 0;
    if (min_t == 0) {
        rule->n = last_sym_start;
    } else {
        if (P->total + rule->n + plen * min_t > OXL_GRAMMAR_MAX_ELEMENTS) {
            perr(P, at, "the grammar is too large: more than %d elements (repetitions expanded)",
                 OXL_GRAMMAR_MAX_ELEMENTS);
            rc = -1;
            goto done;
        }
        for (uint64_t i = 1; i < min_t && rc == 0; i++)
            for (size_t k = 0; k < plen && rc == 0; k++)
                rc = gv_push(rule, prev[k].type, prev[k].value);
        if (rc != 0) {
            perr(P, at, "out of memory");
            goto done;
        }
    }
    uint32_t last_rec = 0;
    const uint64_t n_opt = no_max ? 1 : max_t - min_t;
    for (uint64_t i = 0; i < n_opt; i++) {
        gvec rec = {0};
        for (size_t k = 0; k < plen && rc == 0; k++)
            rc = gv_push(&rec, prev[k].type, prev[k].value);
        long id = generate_symbol_id(P, rule_name, at);
        if (id < 0) {
            free(rec.v);
            rc = -1;
            goto done;
        }
        if (rc == 0 && (i > 0 || no_max))
            rc = gv_push(&rec, G_REF, no_max ? (uint32_t)id : last_rec);
        if (rc == 0)
            rc = gv_push(&rec, G_ALT, 0);
        if (rc == 0)
            rc = gv_push(&rec, G_END, 0);
        if (rc != 0) {
            free(rec.v);
            perr(P, at, "out of memory");
            goto done;
        }
        if (add_rule(P, (uint32_t)id, &rec, at) != 0) {
            free(rec.v);
            rc = -1;
            goto done;
        }
        last_rec = (uint32_t)id;
    }
    if (n_opt > 0 && gv_push(rule, G_REF, last_rec) != 0) {
        perr(P, at, "out of memory");
        rc = -1;
        goto done;
    }
    *n_prev_rules *= total;
done:
    free(prev);
    return rc;
}

static const char *parse_sequence(gparser *P, const char *src, const char *rule_name, gvec *rule, bool nested) {
    size_t last_sym_start = rule->n;
    const char *pos = src;
    uint64_t n_prev_rules = 1;
    while (*pos) {
        if (P->total + rule->n > OXL_GRAMMAR_MAX_ELEMENTS)
            return perr(P, pos, "the grammar is too large: more than %d elements", OXL_GRAMMAR_MAX_ELEMENTS);
        if (*pos == '"') {
            const char *open = pos++;
            last_sym_start = rule->n;
            n_prev_rules = 1;
            while (*pos != '"') {
                if (!*pos)
                    return perr(P, open, "unterminated string literal: expecting '\"'");
                uint32_t c;
                if (!(pos = parse_char(P, pos, &c)))
                    return NULL;
                if (gv_push(rule, G_CHAR, c) != 0)
                    return perr(P, pos, "out of memory");
            }
            pos = parse_space(pos + 1, nested);
        } else if (*pos == '[') {
            const char *open = pos++;
            uint32_t start_type = G_CHAR;
            if (*pos == '^') {
                pos++;
                start_type = G_CHAR_NOT;
            }
            last_sym_start = rule->n;
            n_prev_rules = 1;
            while (*pos != ']') {
                if (!*pos)
                    return perr(P, open, "unterminated character class: expecting ']'");
                uint32_t c;
                if (!(pos = parse_char(P, pos, &c)))
                    return NULL;
                if (gv_push(rule, last_sym_start < rule->n ? G_CHAR_ALT : start_type, c) != 0)
                    return perr(P, pos, "out of memory");
                if (pos[0] == '-' && pos[1] != ']') {
                    if (!pos[1])
                        return perr(P, open, "unterminated character class: expecting ']'");
                    if (!(pos = parse_char(P, pos + 1, &c)))
                        return NULL;
                    if (gv_push(rule, G_RNG_UPPER, c) != 0)
                        return perr(P, pos, "out of memory");
                }
            }
            pos = parse_space(pos + 1, nested);
        } else if (*pos == '<' || *pos == '!') {
            uint32_t type = G_TOKEN;
            if (*pos == '!') {
                type = G_TOKEN_NOT;
                pos++;
            }
            uint32_t id = 0;
            if (!(pos = parse_token(P, pos, &id)))
                return NULL;
            last_sym_start = rule->n;
            n_prev_rules = 1;
            if (gv_push(rule, type, id) != 0)
                return perr(P, pos, "out of memory");
            pos = parse_space(pos, nested);
        } else if (is_word(*pos)) {
            const char *end = pos;
            while (is_word(*end))
                end++;
            long id = get_symbol_id(P, pos, (size_t)(end - pos));
            if (id < 0)
                return NULL;
            pos = parse_space(end, nested);
            last_sym_start = rule->n;
            n_prev_rules = 1;
            if (gv_push(rule, G_REF, (uint32_t)id) != 0)
                return perr(P, pos, "out of memory");
        } else if (*pos == '(') {
            const char *open = pos;
            if (P->depth >= OXL_GRAMMAR_MAX_NESTING)
                return perr(P, pos, "groups nested deeper than %d", OXL_GRAMMAR_MAX_NESTING);
            pos = parse_space(pos + 1, true);
            size_t before = P->n_sym;
            long sub = generate_symbol_id(P, rule_name, open);
            if (sub < 0)
                return NULL;
            P->depth++;
            pos = parse_alternates(P, pos, rule_name, (uint32_t)sub, true);
            P->depth--;
            if (!pos)
                return NULL;
            n_prev_rules = P->n_sym - before > 1 ? P->n_sym - before : 1;
            last_sym_start = rule->n;
            if (gv_push(rule, G_REF, (uint32_t)sub) != 0)
                return perr(P, pos, "out of memory");
            if (*pos != ')')
                return perr(P, open, "unclosed group: expecting ')' (found %s)",
                            *pos ? "another character" : "the end of the input");
            pos = parse_space(pos + 1, nested);
        } else if (*pos == '.') {
            last_sym_start = rule->n;
            n_prev_rules = 1;
            if (gv_push(rule, G_CHAR_ANY, 0) != 0)
                return perr(P, pos, "out of memory");
            pos = parse_space(pos + 1, nested);
        } else if (*pos == '*' || *pos == '+' || *pos == '?') {
            const char *at = pos;
            uint64_t mn = *pos == '+' ? 1 : 0, mx = *pos == '?' ? 1 : UINT64_MAX;
            pos = parse_space(pos + 1, nested);
            if (repeat(P, rule, last_sym_start, &n_prev_rules, mn, mx, rule_name, at) != 0)
                return NULL;
        } else if (*pos == '{') {
            const char *at = pos;
            pos = parse_space(pos + 1, nested);
            if (!is_digit(*pos))
                return perr(P, pos, "expecting an integer after '{'");
            uint64_t mn = 0, mx = UINT64_MAX;
            if (!(pos = parse_int(P, pos, &mn)))
                return NULL;
            pos = parse_space(pos, nested);
            if (*pos == '}') {
                mx = mn;
                pos = parse_space(pos + 1, nested);
            } else if (*pos == ',') {
                pos = parse_space(pos + 1, nested);
                if (is_digit(*pos)) {
                    if (!(pos = parse_int(P, pos, &mx)))
                        return NULL;
                    pos = parse_space(pos, nested);
                }
                if (*pos != '}')
                    return perr(P, pos, "expecting '}' to close the repetition");
                pos = parse_space(pos + 1, nested);
            } else {
                return perr(P, pos, "expecting ',' or '}' in the repetition");
            }
            if (mn > MAX_REPETITION)
                return perr(P, at, "repetition minimum %llu exceeds %d", (unsigned long long)mn, MAX_REPETITION);
            if (mx != UINT64_MAX && mx > MAX_REPETITION)
                mx = UINT64_MAX;
            if (repeat(P, rule, last_sym_start, &n_prev_rules, mn, mx, rule_name, at) != 0)
                return NULL;
        } else {
            break;
        }
    }
    return pos;
}

static const char *parse_alternates(gparser *P, const char *src, const char *rule_name, uint32_t rule_id, bool nested) {
    gvec rule = {0};
    const char *pos = parse_sequence(P, src, rule_name, &rule, nested);
    while (pos && *pos == '|') {
        if (gv_push(&rule, G_ALT, 0) != 0) {
            pos = perr(P, pos, "out of memory");
            break;
        }
        pos = parse_space(pos + 1, true);
        pos = parse_sequence(P, pos, rule_name, &rule, nested);
    }
    if (pos && gv_push(&rule, G_END, 0) != 0)
        pos = perr(P, pos, "out of memory");
    if (pos && add_rule(P, rule_id, &rule, src) != 0)
        pos = NULL;
    free(rule.v);
    return pos;
}

static const char *parse_rule(gparser *P, const char *src) {
    const char *end = src;
    while (is_word(*end))
        end++;
    if (end == src)
        return perr(P, src, "expecting a rule name");
    const char *pos = parse_space(end, false);
    long id = get_symbol_id(P, src, (size_t)(end - src));
    if (id < 0)
        return NULL;
    long si = sym_find(P, src, (size_t)(end - src));
    if (si >= 0 && !P->sym[si].def)
        P->sym[si].def = (size_t)(src - P->src) + 1;
    if (!(pos[0] == ':' && pos[1] == ':' && pos[2] == '='))
        return perr(P, pos, "expecting '::=' after the rule name '%.*s'", (int)(end - src > 60 ? 60 : end - src), src);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(end - src > 100 ? 100 : end - src), src);
    pos = parse_space(pos + 3, true);
    if (!(pos = parse_alternates(P, pos, name, (uint32_t)id, false)))
        return NULL;
    if (*pos == '\r')
        pos += pos[1] == '\n' ? 2 : 1;
    else if (*pos == '\n')
        pos++;
    else if (*pos)
        return perr(P, pos, "expecting a newline or the end after the rule (unexpected '%c')", *pos);
    return parse_space(pos, true);
}

static const char *sym_name(const gparser *P, uint32_t id, size_t *first) {
    for (size_t i = 0; i < P->n_sym; i++) {
        if (P->sym[i].id == id) {
            if (first)
                *first = P->sym[i].first;
            return P->sym[i].name;
        }
    }
    return "?";
}

/* llama_grammar_detect_left_recursion: whether rule i can reach itself without consuming input. */
static int left_recursion(const gparser *P, size_t i, uint8_t *visited, uint8_t *in_progress, uint8_t *may_be_empty,
                          int depth, size_t *culprit) {
    if (in_progress[i]) {
        *culprit = i;
        return 1;
    }
    if (depth > 10000)
        return -1; /* bound: treated as an error by the caller */
    in_progress[i] = 1;
    const gvec *r = &P->rules[i];
    bool at_start = true;
    for (size_t k = 0; k < r->n; k++) {
        if (is_end_of_seq(&r->v[k])) {
            if (at_start) {
                may_be_empty[i] = 1;
                break;
            }
            at_start = true;
        } else {
            at_start = false;
        }
    }
    bool recurse = true;
    for (size_t k = 0; k < r->n; k++) {
        if (r->v[k].type == G_REF && recurse) {
            int rc = left_recursion(P, r->v[k].value, visited, in_progress, may_be_empty, depth + 1, culprit);
            if (rc != 0)
                return rc;
            if (!may_be_empty[r->v[k].value])
                recurse = false;
        } else if (is_end_of_seq(&r->v[k])) {
            recurse = true;
        } else {
            recurse = false;
        }
    }
    in_progress[i] = 0;
    visited[i] = 1;
    return 0;
}

/* "LINE:COL: msg" for the byte offset off of src. */
static void report(char *err, size_t err_len, const char *src, size_t off, const char *msg) {
    if (!err || !err_len)
        return;
    int line = 1, col = 1;
    for (size_t i = 0; i < off && src[i]; i++) {
        if (src[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(err, err_len, "%d:%d: %s", line, col, msg);
}

static void parser_free(gparser *P) {
    for (size_t i = 0; i < P->n_sym; i++)
        free(P->sym[i].name);
    free(P->sym);
    free(P->sh);
    for (size_t i = 0; i < P->n_rules; i++)
        free(P->rules[i].v);
    free(P->rules);
}

oxl_grammar *oxl_grammar_parse(const char *src, const char *root, const oxl_vocab *vocab, char *err, size_t err_len) {
    if (err && err_len)
        err[0] = 0;
    if (!src) {
        report(err, err_len, "", 0, "no grammar text");
        return NULL;
    }
    if (!root)
        root = "root";
    gparser P = {.src = src, .vocab = vocab};
    oxl_grammar *g = NULL;
    uint8_t *flags = NULL;
    char msg[300];
    const char *pos = parse_space(src, true);
    while (pos && *pos)
        pos = parse_rule(&P, pos);
    if (!pos) {
        report(err, err_len, src, (size_t)(P.err_at - src), P.err);
        goto fail;
    }
    if (P.n_rules == 0) {
        report(err, err_len, src, (size_t)(pos - src), "empty grammar: no rule defined");
        goto fail;
    }
    /* every rule used is defined */
    for (size_t i = 0; i < P.n_rules; i++) {
        size_t first = 0;
        if (!P.rules[i].v) {
            const char *name = sym_name(&P, (uint32_t)i, &first);
            snprintf(msg, sizeof msg, "undefined rule '%.100s'", name);
            report(err, err_len, src, first, msg);
            goto fail;
        }
        for (size_t k = 0; k < P.rules[i].n; k++) {
            const gel *e = &P.rules[i].v[k];
            if (e->type == G_REF && (e->value >= P.n_rules || !P.rules[e->value].v)) {
                const char *name = sym_name(&P, e->value, &first);
                snprintf(msg, sizeof msg, "undefined rule '%.100s'", name);
                report(err, err_len, src, first, msg);
                goto fail;
            }
        }
    }
    long ri = sym_find(&P, root, strlen(root));
    if (ri < 0) {
        snprintf(msg, sizeof msg, "the grammar has no rule named '%.100s'", root);
        report(err, err_len, src, 0, msg);
        goto fail;
    }
    const uint32_t root_id = P.sym[ri].id;
    if (root_id >= P.n_rules || !P.rules[root_id].v) {
        snprintf(msg, sizeof msg, "undefined rule '%.100s'", root);
        report(err, err_len, src, P.sym[ri].first, msg);
        goto fail;
    }
    flags = calloc(3 * P.n_rules, 1);
    if (!flags) {
        report(err, err_len, src, 0, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < P.n_rules; i++) {
        if (flags[i])
            continue;
        size_t culprit = i;
        int rc = left_recursion(&P, i, flags, flags + P.n_rules, flags + 2 * P.n_rules, 0, &culprit);
        if (rc != 0) {
            size_t first = 0;
            const char *name = sym_name(&P, (uint32_t)culprit, &first);
            for (size_t k = 0; k < P.n_sym; k++) /* point at the rule's definition */
                if (P.sym[k].id == (uint32_t)culprit && P.sym[k].def)
                    first = P.sym[k].def - 1;
            if (rc > 0)
                snprintf(msg, sizeof msg, "left recursion: rule '%.100s' can reach itself without consuming input",
                         name);
            else
                snprintf(msg, sizeof msg, "rules chained more than 10000 deep at the left (from '%.100s')", name);
            report(err, err_len, src, first, msg);
            goto fail;
        }
    }
    g = calloc(1, sizeof *g);
    if (!g)
        goto oom;
    g->vocab = vocab;
    g->n_rules = P.n_rules;
    g->rule_start = malloc(P.n_rules * sizeof *g->rule_start);
    size_t total = 0;
    for (size_t i = 0; i < P.n_rules; i++)
        total += P.rules[i].n;
    g->el = malloc((total + 1) * sizeof *g->el);
    if (!g->rule_start || !g->el)
        goto oom;
    for (size_t i = 0; i < P.n_rules; i++) {
        g->rule_start[i] = g->n_el;
        memcpy(g->el + g->n_el, P.rules[i].v, P.rules[i].n * sizeof *g->el);
        g->n_el += P.rules[i].n;
    }
    if (total > INT32_MAX)
        goto oom;
    /* the start stacks: each alternative of the root, advanced */
    size_t p = g->rule_start[root_id];
    for (;;) {
        int32_t st = (int32_t)p;
        if (advance_stack(g, &st, is_end_of_seq(&g->el[p]) ? 0 : 1, &g->stacks) != 0) {
            snprintf(msg, sizeof msg, "%s", g->err);
            report(err, err_len, src, P.sym[ri].first, msg);
            goto fail;
        }
        while (!is_end_of_seq(&g->el[p]))
            p++;
        if (g->el[p].type == G_ALT)
            p++;
        else
            break;
    }
    free(flags);
    parser_free(&P);
    return g;
oom:
    report(err, err_len, src, 0, "out of memory");
fail:
    free(flags);
    parser_free(&P);
    oxl_grammar_free(g);
    return NULL;
}
