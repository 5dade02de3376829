/* Token lookup by text and the token list: what the tokenizers use of the vocabulary, apart from
 * the loader (vocab.c), which calls the tokenizers. */
#include "vocab_internal.h"

#include <string.h>

uint64_t oxl_vocab_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

oxl_token oxl_vocab_find(const oxl_vocab *v, const char *s, size_t n) {
    for (size_t i = oxl_vocab_hash(s, n) & v->slot_mask;; i = (i + 1) & v->slot_mask) {
        int32_t id = v->slot[i] - 1;
        if (id < 0)
            return -1;
        if (v->text_len[id] == n && memcmp(v->text + v->text_off[id], s, n) == 0)
            return id;
    }
}

bool oxl_tok_push(oxl_tok_list *l, oxl_token t) {
    if (!oxl_grow((void **)&l->ids, &l->cap, l->n, 1, sizeof *l->ids))
        return false;
    l->ids[l->n++] = t;
    return true;
}
