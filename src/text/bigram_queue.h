/* The merge queue of the SPM and BPE tokenizers (llama.cpp's llm_bigram_spm / llm_bigram_bpe
 * priority queues): candidate merges of two adjacent symbols, popped highest priority first and,
 * among equals, leftmost first. SPM's priority is the joined token's score, BPE's minus the merge
 * rank (both exact in a double, so the order is the tokenizers' own). */
#ifndef OXL_BIGRAM_QUEUE_H
#define OXL_BIGRAM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct oxl_bigram {
    int32_t left, right; /* symbol indices */
    double priority;
    size_t size; /* joined length when queued; stale when the symbols have changed since */
} oxl_bigram;

typedef struct oxl_bigram_queue {
    oxl_bigram *heap;
    size_t n, cap;
} oxl_bigram_queue;

/* false when memory runs out. */
bool oxl_bigram_push(oxl_bigram_queue *q, oxl_bigram b);
/* The best candidate; q must not be empty. */
oxl_bigram oxl_bigram_pop(oxl_bigram_queue *q);

#endif
