/* The ftype mixes of llama-quantize (llama.cpp src/llama-quant.cpp). The table, one row per ftype
 * with its default type and the rule it applies to each tensor category, is the spec's (gen/spec.py
 * FTYPES); the rules are named after what they do, and oxl_quant_choose_types applies them in
 * llama_tensor_get_type_impl's order. */
#include "quant_mix.h"

#include "errors.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ftypes and their rows of rules are the spec's (gen/spec.py FTYPES, generated/oxl_ftypes.c). */

static bool oxl_iequal(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) {
            return false;
        }
    }
    return *a == *b;
}

const oxl_ftype_mix *oxl_ftype_find(const char *name) {
    char *end = NULL;
    const long id = strtol(name, &end, 10);
    const bool numeric = end != name && *end == '\0';
    for (size_t i = 0; i < OXL_FTYPE_COUNT; i++) {
        const oxl_ftype_info *f = &oxl_ftype_infos[i];
        const bool match =
            numeric ? (long)f->id == id : oxl_iequal(name, f->name) || (f->alias != NULL && oxl_iequal(name, f->alias));
        if (match) {
            return f->quantize ? f : NULL;
        }
    }
    return NULL;
}

const char *oxl_ftype_name(const oxl_ftype_mix *f) { return f->name; }
uint32_t oxl_ftype_id(const oxl_ftype_mix *f) { return f->id; }

const char *oxl_ftype_describe(uint32_t id) {
    for (size_t i = 0; i < OXL_FTYPE_COUNT; i++) {
        if (oxl_ftype_infos[i].id == id) {
            return oxl_ftype_infos[i].desc;
        }
    }
    return NULL;
}

const char *const *oxl_ftype_names(void) {
    static const char *names[OXL_FTYPE_COUNT + 1];
    size_t n = 0;
    for (size_t i = 0; i < OXL_FTYPE_COUNT; i++) {
        if (oxl_ftype_infos[i].quantize) {
            names[n++] = oxl_ftype_infos[i].name;
        }
    }
    names[n] = NULL;
    return names;
}

/* ---- tensor order and categories ---- */

static int oxl_layer_of(const char *name) {
    int layer = -1;
    if (sscanf(name, "blk.%d.", &layer) != 1) {
        layer = -1;
    }
    return layer;
}

static int oxl_tensor_order(const void *pa, const void *pb) {
    const oxl_quant_tensor *a = pa, *b = pb;
    const int la = oxl_layer_of(a->name), lb = oxl_layer_of(b->name);
    if (la != lb) {
        return la < lb ? -1 : 1;
    }
    return strcmp(a->name, b->name);
}

void oxl_quant_sort(oxl_quant_tensor *t, int64_t n) { qsort(t, (size_t)n, sizeof *t, oxl_tensor_order); }

typedef enum oxl_category {
    OXL_CAT_TOKEN_EMBD,
    OXL_CAT_ATTN_Q,
    OXL_CAT_ATTN_V, /* attn_v, attn_qkv and attn_kv_b are all "attn_v-like" for the counters */
    OXL_CAT_ATTN_K,
    OXL_CAT_ATTN_QKV,
    OXL_CAT_ATTN_KV_B,
    OXL_CAT_ATTN_OUTPUT,
    OXL_CAT_FFN_UP,
    OXL_CAT_FFN_GATE,
    OXL_CAT_FFN_DOWN,
    OXL_CAT_OUTPUT,
    OXL_CAT_OTHER,
} oxl_category;

static bool oxl_is_token_embd(const char *name) {
    return strcmp(name, "token_embd.weight") == 0 || strcmp(name, "per_layer_token_embd.weight") == 0;
}

/* tensor_get_category: first match wins, in this order */
static oxl_category oxl_category_of(const char *name) {
    static const struct {
        const char *part;
        oxl_category cat;
    } parts[] = {
        {"attn_qkv.weight", OXL_CAT_ATTN_QKV},
        {"attn_kv_b.weight", OXL_CAT_ATTN_KV_B},
        {"attn_v.weight", OXL_CAT_ATTN_V},
        {"attn_k.weight", OXL_CAT_ATTN_K},
        {"attn_q.weight", OXL_CAT_ATTN_Q},
        {"attn_output.weight", OXL_CAT_ATTN_OUTPUT},
        {"ffn_up", OXL_CAT_FFN_UP},
        {"ffn_gate", OXL_CAT_FFN_GATE},
        {"ffn_down", OXL_CAT_FFN_DOWN},
    };
    if (strcmp(name, "output.weight") == 0) {
        return OXL_CAT_OUTPUT;
    }
    if (oxl_is_token_embd(name)) {
        return OXL_CAT_TOKEN_EMBD;
    }
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (strstr(name, parts[i].part) != NULL) {
            return parts[i].cat;
        }
    }
    return OXL_CAT_OTHER;
}

static bool oxl_is_attn_v_like(oxl_category c) {
    return c == OXL_CAT_ATTN_V || c == OXL_CAT_ATTN_QKV || c == OXL_CAT_ATTN_KV_B;
}

/* Dimensions up to the last that is not 1 (ggml_n_dims). */
static int oxl_n_dims(const oxl_quant_tensor *t) {
    for (int d = 3; d > 0; d--) {
        if (t->ne[d] != 1) {
            return d + 1;
        }
    }
    return 1;
}

static bool oxl_ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* tensor_allows_quantization: 2-D and larger weights, except norms, router inputs and the small
 * tensors of some architectures that llama.cpp keeps as they are. */
static bool oxl_allows_quantization(const oxl_quant_tensor *t) {
    static const char *const keep[] = {
        "_norm.weight",
        "ffn_gate_inp.weight",
        "ffn_gate_tid2eid.weight",
        "altup",
        "laurel",
        "per_layer_model_proj",
        "ssm_conv1d",
        "shortconv.conv.weight",
        "indexer.k_proj.weight",
        "indexer.q_proj.weight",
        "time_mix_first.weight",
        "time_mix_w0.weight",
        "time_mix_w1.weight",
        "time_mix_w2.weight",
        "time_mix_v0.weight",
        "time_mix_v1.weight",
        "time_mix_v2.weight",
        "time_mix_a0.weight",
        "time_mix_a1.weight",
        "time_mix_a2.weight",
        "time_mix_g1.weight",
        "time_mix_g2.weight",
        "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight",
        "attn_rel_b.weight",
        ".position_embd",
        "sam.pos_embd",
        "sam.neck.",
        "sam.net_",
        ".rel_pos",
        ".patch_embd",
        ".patch_merger",
        "a.rvq.codebook",
        "mm.a.code_embd",
    };
    /* llama.cpp tests name.rfind("weight") == name.size() - 6, which a 5-byte name also passes */
    if (oxl_n_dims(t) < 2 || !(oxl_ends_with(t->name, "weight") || strlen(t->name) == 5)) {
        return false;
    }
    /* LLM_TENSOR_POS_EMBD and LLM_TENSOR_TOKEN_TYPES have these names in every architecture */
    if (strcmp(t->name, "position_embd.weight") == 0 || strcmp(t->name, "token_types.weight") == 0) {
        return false;
    }
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        if (strstr(t->name, keep[i]) != NULL) {
            return false;
        }
    }
    return true;
}

/* use_more_bits: the first and last eighth of the layers and every third layer between */
static bool oxl_use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static bool oxl_is_quantized(oxl_type t) {
    return t != OXL_TYPE_F32 && t != OXL_TYPE_F16 && t != OXL_TYPE_BF16 && t != OXL_TYPE_F64 &&
           !(t >= OXL_TYPE_I8 && t <= OXL_TYPE_I64);
}

/* The running state of llama_tensor_get_type_impl across tensors. */
typedef struct oxl_mix_state {
    int n_attention_wv, i_attention_wv, i_ffn_down, i_ffn_gate, i_ffn_up;
    bool tied_embeddings;
} oxl_mix_state;

/* The ffn_down layer: its running index, or for mixture-of-experts models the N of "blk.N." */
static int oxl_ffn_layer(const oxl_quant_model *m, const oxl_quant_tensor *t, int running, int *layer, oxl_error *err) {
    *layer = running;
    if (m->n_expert > 1) {
        if (sscanf(t->name, "blk.%d.", layer) != 1) {
            return oxl_err_set(err, "tensor '%s': cannot determine its layer", t->name);
        }
        if (*layer < 0 || *layer >= m->n_layer) {
            return oxl_err_set(err, "tensor '%s': layer %d is not in [0, %d)", t->name, *layer, m->n_layer);
        }
    }
    return 0;
}

static oxl_type oxl_mix_attn_v(const oxl_ftype_mix *f, const oxl_quant_model *m, bool has_imatrix, int i, int n,
                               oxl_type type) {
    const bool gqa4 = m->n_head_kv > 0 && m->n_head / m->n_head_kv >= 4;
    switch (f->attn_v) {
    case OXL_V_KEEP: break;
    case OXL_V_GQA4_Q4_K_ELSE_Q3_K: type = gqa4 ? OXL_TYPE_Q4_K : OXL_TYPE_Q3_K; break;
    case OXL_V_GQA4_Q4_K: type = gqa4 ? OXL_TYPE_Q4_K : type; break;
    case OXL_V_FIRST2_Q5_K_ELSE_Q4_K: type = i < 2 ? OXL_TYPE_Q5_K : OXL_TYPE_Q4_K; break;
    case OXL_V_Q5_K: type = OXL_TYPE_Q5_K; break;
    case OXL_V_MORE_BITS_Q6_K: type = oxl_use_more_bits(i, n) ? OXL_TYPE_Q6_K : type; break;
    case OXL_V_FIRST4_Q5_K: type = i < 4 ? OXL_TYPE_Q5_K : type; break;
    case OXL_V_GQA4_Q5_K: type = gqa4 ? OXL_TYPE_Q5_K : type; break;
    /* the 1/2-bit I-quant ftypes' own branch of llama_tensor_get_type_impl: no 70B or 8-expert bump */
    case OXL_V_GQA4_OR_4EXP_Q4_K_ELSE_Q2_K: return gqa4 || m->n_expert >= 4 ? OXL_TYPE_Q4_K : OXL_TYPE_Q2_K;
    case OXL_V_GQA4_OR_4EXP_Q4_K_ELSE_IQ3_S: return gqa4 || m->n_expert >= 4 ? OXL_TYPE_Q4_K : OXL_TYPE_IQ3_S;
    case OXL_V_GQA4_Q4_K_ELSE_NO_IMATRIX_IQ3_S:
        type = gqa4 ? OXL_TYPE_Q4_K : !has_imatrix ? OXL_TYPE_IQ3_S : type;
        break;
    case OXL_V_Q4_K: type = OXL_TYPE_Q4_K; break;
    }
    /* 70B: attn_v is 8x smaller than attn_q, so more bits cost little */
    if (m->is_70b && (type == OXL_TYPE_Q3_K || type == OXL_TYPE_Q4_K)) {
        type = OXL_TYPE_Q5_K;
    }
    if (m->n_expert == 8) {
        type = OXL_TYPE_Q8_0;
    }
    return type;
}

static oxl_type oxl_mix_ffn_down(const oxl_ftype_mix *f, const oxl_quant_model *m, bool has_imatrix, int i, int n,
                                 oxl_type type) {
    const bool falcon = strcmp(m->arch, "falcon") == 0;
    switch (f->ffn_down) {
    case OXL_DOWN_KEEP: break;
    case OXL_DOWN_Q3_K: type = OXL_TYPE_Q3_K; break;
    case OXL_DOWN_FIRST8TH_Q4_K: type = i < n / 8 ? OXL_TYPE_Q4_K : type; break;
    case OXL_DOWN_Q3_K_M:
        type = i < n / 16 ? OXL_TYPE_Q5_K : !falcon || oxl_use_more_bits(i, n) ? OXL_TYPE_Q4_K : OXL_TYPE_Q3_K;
        break;
    case OXL_DOWN_Q3_K_L: type = falcon ? OXL_TYPE_Q4_K : OXL_TYPE_Q5_K; break;
    case OXL_DOWN_Q4_K_M:
        if (falcon) {
            type = i < n / 16 ? OXL_TYPE_Q6_K : oxl_use_more_bits(i, n) ? OXL_TYPE_Q5_K : OXL_TYPE_Q4_K;
        } else if (oxl_use_more_bits(i, n)) {
            type = OXL_TYPE_Q6_K;
        }
        break;
    case OXL_DOWN_MORE_BITS_Q6_K: type = oxl_use_more_bits(i, n) ? OXL_TYPE_Q6_K : type; break;
    case OXL_DOWN_FIRST8TH_Q5_K: type = !falcon && i < n / 8 ? OXL_TYPE_Q5_K : type; break;
    case OXL_DOWN_IMATRIX_FIRST8TH: type = has_imatrix && i < n / 8 ? f->down_type : type; break;
    case OXL_DOWN_NO_IMATRIX_FIRST8TH_Q5_K: type = !has_imatrix && i < n / 8 ? OXL_TYPE_Q5_K : type; break;
    case OXL_DOWN_RUNNING_FIRST8TH_Q2_K: type = i < n / 8 ? OXL_TYPE_Q2_K : type; break;
    case OXL_DOWN_RUNNING_FIRST8TH_IQ3_S: type = i < n / 8 ? OXL_TYPE_IQ3_S : type; break;
    case OXL_DOWN_NO_IMATRIX_FIRST8TH_Q4_K_ELSE_Q3_K:
        type = has_imatrix ? type : i < n / 8 ? OXL_TYPE_Q4_K : OXL_TYPE_Q3_K;
        break;
    case OXL_DOWN_FIRST8TH_OR_8EXP_MORE_BITS_Q4_K:
        type = i < n / 8 || (m->n_expert == 8 && oxl_use_more_bits(i, n)) ? OXL_TYPE_Q4_K : type;
        break;
    }
    return type;
}

/* The ffn_down rules that count ffn_down tensors by running index, even with experts (the 1/2-bit
 * I-quant ftypes' branch of llama_tensor_get_type_impl, which never looks at ffn_gate / ffn_up and
 * so never checks their layer either). */
static bool oxl_down_by_running_index(oxl_mix_down r) {
    return r == OXL_DOWN_RUNNING_FIRST8TH_Q2_K || r == OXL_DOWN_RUNNING_FIRST8TH_IQ3_S;
}

/* llama_tensor_get_type_impl for the ftypes of the table */
static int oxl_mix_type(const oxl_quant_model *m, const oxl_quant_options *o, oxl_mix_state *s,
                        const oxl_quant_tensor *t, oxl_category cat, oxl_type type, oxl_type *out, oxl_error *err) {
    const oxl_ftype_mix *f = o->ftype;
    const bool falcon = strcmp(m->arch, "falcon") == 0;
    if (cat == OXL_CAT_OUTPUT || (s->tied_embeddings && cat == OXL_CAT_TOKEN_EMBD)) {
        /* the output (and the token embeddings it shares weights with) */
        if (o->output_type != OXL_TYPE_COUNT) {
            type = o->output_type;
        } else if (f->experts_split_type != OXL_TYPE_COUNT) {
            type = f->experts_split_type;
        } else if (falcon || t->ne[0] % oxl_type_traits_get((uint32_t)type)->blck_size != 0) {
            type = OXL_TYPE_Q8_0;
        } else if (f->output != OXL_TYPE_COUNT) {
            type = f->output;
        } else if (type != OXL_TYPE_Q8_0) {
            type = OXL_TYPE_Q6_K;
        }
    } else if (f->experts_split_type != OXL_TYPE_COUNT) {
        /* MXFP4_MOE: the experts (3-D stacks) keep the ftype's type, every other matrix the split's */
        type = t->ne[2] > 1 ? type : f->experts_split_type;
    } else if (cat == OXL_CAT_TOKEN_EMBD) {
        if (o->token_embd_type != OXL_TYPE_COUNT) {
            type = o->token_embd_type;
        } else if (f->token_embd != OXL_TYPE_COUNT) {
            type = f->token_embd;
        }
    } else if (oxl_is_attn_v_like(cat)) {
        type = oxl_mix_attn_v(f, m, o->has_imatrix, s->i_attention_wv, s->n_attention_wv, type);
        s->i_attention_wv++;
    } else if (cat == OXL_CAT_ATTN_K) {
        if (m->n_expert == 8) {
            type = f->attn_k_8exp_q4_K ? OXL_TYPE_Q4_K : OXL_TYPE_Q8_0;
        } else if (f->attn_k != OXL_TYPE_COUNT) {
            type = f->attn_k;
        }
    } else if (cat == OXL_CAT_ATTN_Q) {
        if (f->attn_q != OXL_TYPE_COUNT) {
            type = f->attn_q;
        }
    } else if (cat == OXL_CAT_FFN_DOWN) {
        int layer = s->i_ffn_down;
        if (!oxl_down_by_running_index(f->ffn_down) && oxl_ffn_layer(m, t, s->i_ffn_down, &layer, err) < 0) {
            return -1;
        }
        type = oxl_mix_ffn_down(f, m, o->has_imatrix, layer, m->n_layer, type);
        s->i_ffn_down++;
    } else if (cat == OXL_CAT_ATTN_OUTPUT) {
        if (falcon) {
            type = f->attn_output_falcon != OXL_TYPE_COUNT ? f->attn_output_falcon : type;
        } else if (m->n_expert == 8) {
            type = f->attn_output_8exp_q5_K ? OXL_TYPE_Q5_K : type;
        } else if (f->attn_output != OXL_TYPE_COUNT) {
            type = f->attn_output;
        }
    }
    /* llama.cpp also has attn_qkv rules, but attn_qkv is attn_v-like and takes the attn_v branch
     * above first, so they never apply */
    /* ffn_gate / ffn_up: each has its own running index (the layer of MoE models); the 1/2-bit
     * I-quant ftypes' branch of llama_tensor_get_type_impl has no ffn_gate / ffn_up rules */
    if ((cat == OXL_CAT_FFN_GATE || cat == OXL_CAT_FFN_UP) && !oxl_down_by_running_index(f->ffn_down)) {
        int *running = cat == OXL_CAT_FFN_GATE ? &s->i_ffn_gate : &s->i_ffn_up;
        int layer;
        if (oxl_ffn_layer(m, t, *running, &layer, err) < 0) {
            return -1;
        }
        if (f->ffn_gate_up_middle != OXL_TYPE_COUNT && layer >= m->n_layer / 8 && layer < 7 * m->n_layer / 8) {
            type = f->ffn_gate_up_middle;
        }
        (*running)++;
    }
    *out = type;
    return 0;
}

/* tensor_type_fallback: a type whose block fits a row length that is not a multiple of 256 */
static int oxl_fallback(const oxl_quant_tensor *t, oxl_type type, oxl_type *out, bool *used, oxl_error *err) {
    *out = type;
    *used = false;
    if (t->ne[0] % oxl_type_traits_get((uint32_t)type)->blck_size == 0) {
        return 0;
    }
    *used = true;
    oxl_type fb = oxl_format_fallback(type); /* the spec's fallback */
    if (fb == OXL_TYPE_COUNT) {
        return oxl_err_set(
            err, "tensor '%s': row length %lld is not a multiple of %s's block size and %s has no fallback type",
            t->name, (long long)t->ne[0], oxl_type_traits_get((uint32_t)type)->name,
            oxl_type_traits_get((uint32_t)type)->name);
    }
    if (t->ne[0] % oxl_type_traits_get((uint32_t)fb)->blck_size != 0) {
        fb = OXL_TYPE_F16; /* not even a multiple of 32 */
    }
    *out = fb;
    return 0;
}

int oxl_quant_choose_types(const oxl_quant_model *m, const oxl_quant_options *o, oxl_quant_tensor *t, int64_t n,
                           oxl_error *err) {
    oxl_mix_state s = {.tied_embeddings = true};
    for (int64_t i = 0; i < n; i++) {
        const oxl_category c = oxl_category_of(t[i].name);
        s.n_attention_wv += oxl_is_attn_v_like(c);
        if (c == OXL_CAT_OUTPUT) {
            s.tied_embeddings = false;
        }
    }
    const oxl_type def = o->ftype->type;
    int n_fallback = 0;
    for (int64_t i = 0; i < n; i++) {
        oxl_quant_tensor *ti = &t[i];
        const oxl_category c = oxl_category_of(ti->name);
        ti->target = ti->type;
        ti->fallback = false;
        ti->requires_imatrix = false;
        ti->manual = false;
        if (!oxl_allows_quantization(ti) || (o->leave_output && strcmp(ti->name, "output.weight") == 0)) {
            continue;
        }
        if (o->token_embd_type != OXL_TYPE_COUNT && c == OXL_CAT_TOKEN_EMBD) {
            ti->target = o->token_embd_type;
        } else if (o->output_type != OXL_TYPE_COUNT && c == OXL_CAT_OUTPUT) {
            ti->target = o->output_type;
        } else if (!oxl_is_quantized(def)) {
            ti->target = def;
        } else {
            oxl_type type = def;
            ti->manual = o->override_type != NULL && o->override_type(o->override_ctx, ti->name, &type);
            if (!ti->manual && !o->pure && oxl_mix_type(m, o, &s, ti, c, type, &type, err) < 0) {
                return -1;
            }
            if (oxl_fallback(ti, type, &ti->target, &ti->fallback, err) < 0) {
                return -1;
            }
            n_fallback += ti->fallback;
        }
        /* tensor_requires_imatrix: the formats the spec marks file_imatrix_required (the 1- to 3-bit
         * I-quants) and the ftype's imatrix_type (q2_K in Q2_K_S), except the
         * embeddings and the output */
        const oxl_type tt = ti->target;
        ti->requires_imatrix = (oxl_format_file_needs_imatrix(tt) || tt == o->ftype->imatrix_type) &&
                               c != OXL_CAT_TOKEN_EMBD && c != OXL_CAT_OUTPUT;
        if (ti->requires_imatrix && !o->has_imatrix) {
            return oxl_err_set(err,
                               "this quantization requires an importance matrix (--imatrix): tensor '%s' gets %s "
                               "in %s",
                               ti->name, oxl_type_traits_get((uint32_t)tt)->name, o->ftype->name);
        }
    }
    return n_fallback;
}
