/* The architecture interface: what a family of arch/ supplies to load a model's weights and run its
 * forward pass. The model layer owns this interface and the lookup; arch/registry.c supplies the
 * table (dependency inversion: src/ never includes a header of arch/). */
#ifndef OXL_ARCH_IFACE_H
#define OXL_ARCH_IFACE_H

#include "context.h"
#include "model.h"
#include "rope.h"

#include <stddef.h>
#include <stdio.h>

typedef struct oxl_arch {
    const char *name; /* general.architecture */
    /* Reads hyper-parameters (m->hp) and binds and shape-checks every tensor (m->weights).
     * Returns 0, or -1 with err naming the missing key, tensor or shape. */
    int (*load)(oxl_model *m, oxl_error *err);
    void (*free_weights)(void *weights);
    /* Bytes of activations one forward pass of up to n_batch tokens needs with n_threads threads. */
    size_t (*work_size)(const oxl_model *m, int32_t n_batch, int32_t n_ctx, int n_threads);
    /* Runs one pass of ub->n tokens (each at its sequence and position), appends them to the KV
     * cache, and writes the logits (n_vocab floats each) of the tokens ub->out_ids to logits. */
    void (*forward)(oxl_ctx *ctx, const oxl_ubatch *ub, float *logits);
    /* Optional: prints the hyper-parameters the graph actually uses (oxillama info), one per line. */
    void (*describe)(const oxl_model *m, FILE *out);
    /* Optional: repacks the weights the forward pass multiplies into the CPU's interleaved layout
     * (oxl_tensor_repack), handing each buffer to oxl_model_own; evict as oxl_tensor_repack's. */
    void (*repack)(oxl_model *m, bool evict);
    /* An encoder without an output head (llama_model_has_decoder false): it makes embeddings, not
     * logits, and a decode's tokens must fit one pass (llama_encode's n_ubatch >= n_tokens). */
    bool encoder_only;
    /* Optional: the RoPE of layer il's cached keys, for a position shift (oxl_seq_add): returns 1
     * with *rope set (factors included) when the keys are cached rotated, 0 when they carry no
     * rotation (moved unchanged), -1 with err naming why the layer's cache cannot be shifted.
     * NULL: the family's cache cannot be shifted. */
    int (*k_rope)(const oxl_ctx *ctx, int il, oxl_rope *rope, oxl_error *err);
    /* forward takes a pass's input as embeddings (oxl_ubatch.inp_embd) as well as token ids; false:
     * token ids only (an encoder, or per-layer inputs computed from the ids, as gemma3n's) */
    bool embd_input;
    /* Optional: puts the last n_gpu_layers repeating layers (negative or more than the layers: all,
     * and the output head) on Vulkan device `device` (-1: the default one): uploads their weights and
     * sets m->gpu_layers; it prints the line naming the device. -1 with err naming what the device
     * path does not cover (the model then runs on the CPU). NULL: the family's forward has no device
     * path. */
    int (*offload)(oxl_model *m, int32_t n_gpu_layers, int32_t device, oxl_error *err);
} oxl_arch;

/* The registry: declared here, defined by arch/registry.c (one entry per family file of arch/), so the
 * model layer finds an architecture without including anything of arch/. */
extern const oxl_arch *const oxl_arch_registry[];
extern const size_t oxl_arch_registry_len;

/* NULL when the architecture is not in the registry. */
const oxl_arch *oxl_arch_find(const char *name);
/* Comma-separated list of supported architecture names, for error messages. */
const char *oxl_arch_names(void);

#endif
