/* A byte trie of token texts, for longest-prefix and every-prefix walks (llama.cpp's naive_trie in
 * src/llama-vocab.cpp, stored as one node array). */
#include "vocab_internal.h"

#include <stdlib.h>

int32_t oxl_trie_step(const oxl_trie *t, int32_t node, unsigned char b) {
    if (node < 0 || (size_t)node >= t->n)
        return -1;
    for (int32_t c = t->node[node].child; c >= 0; c = t->node[c].sibling)
        if (t->node[c].byte == b)
            return c;
    return -1;
}

bool oxl_trie_insert(oxl_trie *t, const char *s, size_t n, int32_t value) {
    if (t->n == 0) {
        if (!oxl_grow((void **)&t->node, &t->cap, 0, 1, sizeof *t->node))
            return false;
        t->node[t->n++] = (oxl_trie_node){-1, -1, -1, 0};
    }
    int32_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t next = oxl_trie_step(t, cur, (unsigned char)s[i]);
        if (next < 0) {
            if (t->n >= INT32_MAX || !oxl_grow((void **)&t->node, &t->cap, t->n, 1, sizeof *t->node))
                return false;
            next = (int32_t)t->n++;
            t->node[next] = (oxl_trie_node){-1, t->node[cur].child, -1, (unsigned char)s[i]};
            t->node[cur].child = next;
        }
        cur = next;
    }
    t->node[cur].value = value;
    return true;
}

void oxl_trie_free(oxl_trie *t) {
    free(t->node);
    *t = (oxl_trie){0};
}
