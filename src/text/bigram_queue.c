#include "bigram_queue.h"

#include "vocab_internal.h"

static bool before(const oxl_bigram *a, const oxl_bigram *b) {
    return a->priority > b->priority || (a->priority == b->priority && a->left < b->left);
}

bool oxl_bigram_push(oxl_bigram_queue *q, oxl_bigram b) {
    if (!oxl_grow((void **)&q->heap, &q->cap, q->n, 1, sizeof *q->heap)) {
        return false;
    }
    size_t i = q->n++;
    while (i > 0 && before(&b, &q->heap[(i - 1) / 2])) {
        q->heap[i] = q->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->heap[i] = b;
    return true;
}

oxl_bigram oxl_bigram_pop(oxl_bigram_queue *q) {
    oxl_bigram top = q->heap[0], last = q->heap[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n) {
            break;
        }
        if (c + 1 < q->n && before(&q->heap[c + 1], &q->heap[c])) {
            c++;
        }
        if (!before(&q->heap[c], &last)) {
            break;
        }
        q->heap[i] = q->heap[c];
        i = c;
    }
    if (q->n) {
        q->heap[i] = last;
    }
    return top;
}
