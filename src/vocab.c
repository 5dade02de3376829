/* Vocabulary, SPM tokenizer and detokenizer (behaviour of llama.cpp src/llama-vocab.cpp). */
#include "vocab.h"

#include "error.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// --- token attributes ----------------------------------------------------------------------------

/* Attribute bits, as llama.cpp's llama_token_attr. */
enum {
    OXL_ATTR_UNKNOWN = 1 << 0,
    OXL_ATTR_UNUSED = 1 << 1,
    OXL_ATTR_NORMAL = 1 << 2,
    OXL_ATTR_CONTROL = 1 << 3,
    OXL_ATTR_USER_DEFINED = 1 << 4,
    OXL_ATTR_BYTE = 1 << 5,
    OXL_ATTR_LSTRIP = 1 << 7,
    OXL_ATTR_RSTRIP = 1 << 8,
};

/* tokenizer.ggml.token_type values (GGUF / SentencePiece numbering) → attribute; other values are
 * "undefined" (no bit), which renders as an empty piece. */
static const uint16_t k_type_attr[] = {
    [1] = OXL_ATTR_NORMAL, [2] = OXL_ATTR_UNKNOWN,  [3] = OXL_ATTR_CONTROL,
    [4] = OXL_ATTR_USER_DEFINED, [5] = OXL_ATTR_UNUSED, [6] = OXL_ATTR_BYTE,
};

// --- the vocabulary ------------------------------------------------------------------------------

struct oxl_vocab {
    int32_t n;             /* number of tokens */
    char *text;            /* token texts, each followed by a NUL */
    size_t *text_off;      /* (n) byte offset of token i's text in `text` */
    uint32_t *text_len;    /* (n) its length in bytes */
    float *score;          /* (n) merge priority (tokenizer.ggml.scores; 0 when absent) */
    uint16_t *attr;        /* (n) OXL_ATTR_* bits */
    uint8_t *eog;          /* (n) 1 for end-of-generation tokens */
    char *piece;           /* rendered pieces (special = true), concatenated */
    size_t *piece_off;     /* (n) */
    uint32_t *piece_len;   /* (n) */
    int32_t *slot;         /* open-addressing hash of texts: token id + 1, 0 = empty */
    size_t slot_mask;      /* number of slots - 1 (a power of two) */
    int32_t *special;      /* control / user-defined / unknown ids, longest text first */
    int32_t n_special;
    oxl_token byte_tok[256]; /* byte fallback token of each byte value, -1 when none */

    oxl_token bos, eos, eot, eom, unk, sep, pad, mask;
    oxl_token fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
    bool add_bos, add_eos, add_space_prefix;
    char model[16];
};

/* Special-token keys and the field each sets; the deprecated prefix/suffix/middle keys come last so
 * they override the fim_* keys, as in llama.cpp. */
static const struct {
    const char *key;
    size_t field;
} k_special_keys[] = {
    {"tokenizer.ggml.bos_token_id", offsetof(oxl_vocab, bos)},
    {"tokenizer.ggml.eos_token_id", offsetof(oxl_vocab, eos)},
    {"tokenizer.ggml.eot_token_id", offsetof(oxl_vocab, eot)},
    {"tokenizer.ggml.eom_token_id", offsetof(oxl_vocab, eom)},
    {"tokenizer.ggml.unknown_token_id", offsetof(oxl_vocab, unk)},
    {"tokenizer.ggml.seperator_token_id", offsetof(oxl_vocab, sep)},
    {"tokenizer.ggml.padding_token_id", offsetof(oxl_vocab, pad)},
    {"tokenizer.ggml.mask_token_id", offsetof(oxl_vocab, mask)},
    {"tokenizer.ggml.fim_pre_token_id", offsetof(oxl_vocab, fim_pre)},
    {"tokenizer.ggml.fim_suf_token_id", offsetof(oxl_vocab, fim_suf)},
    {"tokenizer.ggml.fim_mid_token_id", offsetof(oxl_vocab, fim_mid)},
    {"tokenizer.ggml.fim_pad_token_id", offsetof(oxl_vocab, fim_pad)},
    {"tokenizer.ggml.fim_rep_token_id", offsetof(oxl_vocab, fim_rep)},
    {"tokenizer.ggml.fim_sep_token_id", offsetof(oxl_vocab, fim_sep)},
    {"tokenizer.ggml.prefix_token_id", offsetof(oxl_vocab, fim_pre)},
    {"tokenizer.ggml.suffix_token_id", offsetof(oxl_vocab, fim_suf)},
    {"tokenizer.ggml.middle_token_id", offsetof(oxl_vocab, fim_mid)},
};

/* Special tokens llama.cpp recognises by their text when the file does not name them
 * (llama_vocab::impl::load, "auto-detect special tokens by text"). Among several matches the
 * byte-wise smallest text wins, as llama.cpp walks its sorted text→id map. */
static const char *const k_eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",
    "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
    "<end_of_utterance>", NULL};
static const char *const k_eom_texts[] = {"<|eom_id|>", NULL};
static const char *const k_fim_pre_texts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL};
static const char *const k_fim_suf_texts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>",
    "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL};
static const char *const k_fim_mid_texts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL};
static const char *const k_fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const k_fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                              "<reponame>", NULL};
static const char *const k_fim_sep_texts[] = {"<|file_sep|>", NULL};

static const struct {
    size_t field;
    const char *const *texts;
} k_detect[] = {
    {offsetof(oxl_vocab, eot), k_eot_texts},         {offsetof(oxl_vocab, eom), k_eom_texts},
    {offsetof(oxl_vocab, fim_pre), k_fim_pre_texts}, {offsetof(oxl_vocab, fim_suf), k_fim_suf_texts},
    {offsetof(oxl_vocab, fim_mid), k_fim_mid_texts}, {offsetof(oxl_vocab, fim_pad), k_fim_pad_texts},
    {offsetof(oxl_vocab, fim_rep), k_fim_rep_texts}, {offsetof(oxl_vocab, fim_sep), k_fim_sep_texts},
};

/* Texts that end generation (llama.cpp's EOG list). */
static const char *const k_eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[", NULL};

static oxl_token *vocab_field(oxl_vocab *v, size_t off) { return (oxl_token *)((char *)v + off); }

// --- text → id hash ------------------------------------------------------------------------------

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Id of the token whose text is exactly s[0..n), or -1. */
static oxl_token vocab_find(const oxl_vocab *v, const char *s, size_t n) {
    for (size_t i = hash_bytes(s, n) & v->slot_mask;; i = (i + 1) & v->slot_mask) {
        int32_t id = v->slot[i] - 1;
        if (id < 0)
            return -1;
        if (v->text_len[id] == n && memcmp(v->text + v->text_off[id], s, n) == 0)
            return id;
    }
}

static const char *tok_text(const oxl_vocab *v, oxl_token id) { return v->text + v->text_off[id]; }

/* v->n as a size (it is positive once loading has checked the token count). */
static size_t n_tok(const oxl_vocab *v) { return (uint32_t)v->n; }

// --- loading ---------------------------------------------------------------------------------------

void oxl_vocab_free(oxl_vocab *v) {
    if (!v)
        return;
    free(v->text);
    free(v->text_off);
    free(v->text_len);
    free(v->score);
    free(v->attr);
    free(v->eog);
    free(v->piece);
    free(v->piece_off);
    free(v->piece_len);
    free(v->slot);
    free(v->special);
    free(v);
}

/* Reads the token texts into v->text (empty ones become "[EMPTY_<i>]", as llama.cpp) and builds the
 * hash; a text seen twice is an error (llama.cpp's map would silently lose an id). */
static int load_texts(oxl_vocab *v, const oxl_gguf *g, int64_t ki, const char *path, oxl_error *err) {
    size_t total = 0;
    for (int32_t i = 0; i < v->n; i++) {
        size_t len = 0;
        if (!oxl_gguf_arr_str(g, ki, (uint64_t)i, &len) && len)
            return oxl_err_set(err, "%s: tokenizer.ggml.tokens[%d] is unreadable", path, i);
        if (len > UINT32_MAX - 32)
            return oxl_err_set(err, "%s: tokenizer.ggml.tokens[%d] is %zu bytes long", path, i, len);
        total += (len ? len : 32) + 1;
    }
    v->text = malloc(total);
    v->text_off = malloc(n_tok(v) * sizeof *v->text_off);
    v->text_len = malloc(n_tok(v) * sizeof *v->text_len);
    size_t n_slots = 16;
    while (n_slots < 2 * (size_t)v->n)
        n_slots *= 2;
    v->slot = calloc(n_slots, sizeof *v->slot);
    v->slot_mask = n_slots - 1;
    if (!v->text || !v->text_off || !v->text_len || !v->slot)
        return oxl_err_set(err, "%s: out of memory for %d token texts (%zu bytes)", path, v->n, total);

    size_t pos = 0;
    for (int32_t i = 0; i < v->n; i++) {
        size_t len = 0;
        const char *s = oxl_gguf_arr_str(g, ki, (uint64_t)i, &len);
        if (len) {
            memcpy(v->text + pos, s, len);
        } else {
            len = (size_t)snprintf(v->text + pos, 32, "[EMPTY_%d]", i);
        }
        v->text[pos + len] = '\0';
        v->text_off[i] = pos;
        v->text_len[i] = (uint32_t)len;
        pos += len + 1;

        size_t h = hash_bytes(tok_text(v, i), len) & v->slot_mask;
        for (; v->slot[h]; h = (h + 1) & v->slot_mask) {
            int32_t other = v->slot[h] - 1;
            if (v->text_len[other] == len && memcmp(tok_text(v, other), tok_text(v, i), len) == 0)
                return oxl_err_set(err, "%s: tokenizer.ggml.tokens[%d] = '%.*s' repeats token %d", path, i,
                                   (int)(len < 64 ? len : 64), tok_text(v, i), other);
        }
        v->slot[h] = i + 1;
    }
    return 0;
}

/* Scores (FLOAT32) and token types (INT32): optional, but when present one per token. */
static int load_scores_types(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err) {
    v->score = calloc(n_tok(v), sizeof *v->score);
    v->attr = malloc(n_tok(v) * sizeof *v->attr);
    if (!v->score || !v->attr)
        return oxl_err_set(err, "%s: out of memory for %d tokens", path, v->n);
    for (int32_t i = 0; i < v->n; i++)
        v->attr[i] = OXL_ATTR_NORMAL;

    static const char *const keys[2] = {"tokenizer.ggml.scores", "tokenizer.ggml.token_type"};
    static const oxl_gguf_vtype types[2] = {OXL_GGUF_FLOAT32, OXL_GGUF_INT32};
    for (int k = 0; k < 2; k++) {
        int64_t ki = oxl_gguf_find_key(g, keys[k]);
        if (ki < 0)
            continue;
        if (oxl_gguf_kv_type(g, ki) != OXL_GGUF_ARRAY || oxl_gguf_arr_type(g, ki) != types[k])
            return oxl_err_set(err, "%s: %s must be an array of %s", path, keys[k], oxl_gguf_vtype_name(types[k]));
        uint64_t n = oxl_gguf_arr_n(g, ki);
        if (n != (uint64_t)v->n)
            return oxl_err_set(err, "%s: %s has %llu entries but tokenizer.ggml.tokens has %d", path, keys[k],
                               (unsigned long long)n, v->n);
        const unsigned char *data = oxl_gguf_arr_data(g, ki);
        if (!data)
            return oxl_err_set(err, "%s: %s is unreadable", path, keys[k]);
        for (int32_t i = 0; i < v->n; i++) {
            if (k == 0) {
                memcpy(&v->score[i], data + 4 * (size_t)i, 4);
                if (isnan(v->score[i]))
                    return oxl_err_set(err, "%s: %s[%d] is NaN", path, keys[k], i);
            } else {
                int32_t t;
                memcpy(&t, data + 4 * (size_t)i, 4);
                v->attr[i] = t >= 0 && t < (int32_t)(sizeof k_type_attr / sizeof *k_type_attr) ? k_type_attr[t] : 0;
            }
        }
    }
    return 0;
}

/* Byte tokens must read "<0xHH>" (their byte is parsed from it); the byte → token table follows
 * llama.cpp's byte_to_token: "<0xHH>", else the one-byte text, else the unknown token. */
static int load_bytes(oxl_vocab *v, const char *path, oxl_error *err) {
    for (int32_t i = 0; i < v->n; i++) {
        if (!(v->attr[i] & OXL_ATTR_BYTE))
            continue;
        const char *s = tok_text(v, i);
        if (v->text_len[i] != 6 || memcmp(s, "<0x", 3) != 0 || !isxdigit((unsigned char)s[3]) ||
            !isxdigit((unsigned char)s[4]) || s[5] != '>')
            return oxl_err_set(err, "%s: tokenizer.ggml.tokens[%d] = '%.*s' has type BYTE but is not <0xHH>", path, i,
                               (int)(v->text_len[i] < 64 ? v->text_len[i] : 64), s);
    }
    for (int b = 0; b < 256; b++) {
        char hex[7];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        char one = (char)b;
        oxl_token t = vocab_find(v, hex, 6);
        v->byte_tok[b] = t >= 0 ? t : (t = vocab_find(v, &one, 1)) >= 0 ? t : v->unk;
    }
    return 0;
}

/* Special ids: SPM defaults (bos 1, eos 2, unk 0; dropped when outside the vocabulary), then the
 * file's keys, where 0xFFFFFFFF or -1 mean "none". */
static int load_special_ids(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err) {
    v->bos = 1, v->eos = 2, v->unk = 0;
    v->eot = v->eom = v->sep = v->pad = v->mask = -1;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = -1;
    for (size_t k = 0; k < sizeof k_special_keys / sizeof *k_special_keys; k++) {
        oxl_token *id = vocab_field(v, k_special_keys[k].field);
        if (*id >= v->n)
            *id = -1;
        int64_t val;
        int r = oxl_gguf_get_int(g, k_special_keys[k].key, &val, err);
        if (r < 0)
            return oxl_err_prefix(err, "%s", path);
        if (r == 0)
            continue;
        if (val == -1 || val == 0xFFFFFFFFll) {
            *id = -1;
        } else if (val < 0 || val >= v->n) {
            return oxl_err_set(err, "%s: %s = %lld is outside the vocabulary (0..%d)", path, k_special_keys[k].key,
                               (long long)val, v->n - 1);
        } else {
            *id = (oxl_token)val;
        }
    }
    return 0;
}

/* Auto-detected special tokens and the end-of-generation set (llama_vocab::impl::load). Tokens found
 * by text are made CONTROL, as llama.cpp does. */
static void detect_specials(oxl_vocab *v) {
    for (size_t k = 0; k < sizeof k_detect / sizeof *k_detect; k++) {
        oxl_token *id = vocab_field(v, k_detect[k].field);
        if (*id >= 0)
            continue;
        for (const char *const *t = k_detect[k].texts; *t; t++) {
            oxl_token c = vocab_find(v, *t, strlen(*t));
            if (c >= 0 && (*id < 0 || strcmp(*t, tok_text(v, *id)) < 0))
                *id = c;
        }
        if (*id >= 0)
            v->attr[*id] |= OXL_ATTR_CONTROL;
    }
    for (const char *const *t = k_eog_texts; *t; t++) {
        oxl_token c = vocab_find(v, *t, strlen(*t));
        if (c >= 0) {
            v->eog[c] = 1;
            v->attr[c] |= OXL_ATTR_CONTROL;
        }
    }
    const oxl_token eog_ids[] = {v->fim_pad, v->fim_rep, v->fim_sep, v->eos, v->eot, v->eom};
    for (size_t k = 0; k < sizeof eog_ids / sizeof *eog_ids; k++)
        if (eog_ids[k] >= 0)
            v->eog[eog_ids[k]] = 1;
}

/* Sort key of a special token: longest text first, ties by lower id (the order in which llama.cpp
 * splits on special tokens; its sort leaves equal lengths unordered). */
static uint64_t special_key(const oxl_vocab *v, oxl_token id) {
    return ((uint64_t)(UINT32_MAX - v->text_len[id]) << 32) | (uint32_t)id;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Writes the piece of token id (special = true) to out (NULL: only measures); returns its length. */
static size_t render_piece(const oxl_vocab *v, oxl_token id, char *out) {
    const char *s = tok_text(v, id);
    size_t n = v->text_len[id];
    uint16_t a = v->attr[id];
    if (a & (OXL_ATTR_UNKNOWN | OXL_ATTR_CONTROL | OXL_ATTR_USER_DEFINED)) {
        if (out)
            memcpy(out, s, n);
        return n;
    }
    if (a & OXL_ATTR_NORMAL) {
        size_t w = 0;
        for (size_t i = 0; i < n; i++) {
            if (i + 2 < n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
                if (out)
                    out[w] = ' ';
                i += 2;
            } else if (out) {
                out[w] = s[i];
            }
            w++;
        }
        return w;
    }
    if (a & OXL_ATTR_BYTE) {
        if (out)
            out[0] = (char)strtol((char[3]){s[3], s[4], 0}, NULL, 16);
        return 1;
    }
    return 0;
}

static int build_caches(oxl_vocab *v, const char *path, oxl_error *err) {
    v->special = malloc(n_tok(v) * sizeof *v->special);
    v->piece_off = malloc(n_tok(v) * sizeof *v->piece_off);
    v->piece_len = malloc(n_tok(v) * sizeof *v->piece_len);
    if (!v->special || !v->piece_off || !v->piece_len)
        return oxl_err_set(err, "%s: out of memory for %d tokens", path, v->n);
    size_t total = 0;
    for (int32_t i = 0; i < v->n; i++) {
        if (v->attr[i] & (OXL_ATTR_CONTROL | OXL_ATTR_USER_DEFINED | OXL_ATTR_UNKNOWN))
            v->special[v->n_special++] = i;
        v->piece_off[i] = total;
        v->piece_len[i] = (uint32_t)render_piece(v, i, NULL);
        total += v->piece_len[i];
    }
    uint64_t *keys = malloc((size_t)(v->n_special ? v->n_special : 1) * sizeof *keys);
    if (!keys)
        return oxl_err_set(err, "%s: out of memory", path);
    for (int32_t i = 0; i < v->n_special; i++)
        keys[i] = special_key(v, v->special[i]);
    qsort(keys, (size_t)v->n_special, sizeof *keys, cmp_u64);
    for (int32_t i = 0; i < v->n_special; i++)
        v->special[i] = (int32_t)(keys[i] & 0xFFFFFFFFu);
    free(keys);
    v->piece = malloc(total ? total : 1);
    if (!v->piece)
        return oxl_err_set(err, "%s: out of memory for token pieces (%zu bytes)", path, total);
    for (int32_t i = 0; i < v->n; i++)
        render_piece(v, i, v->piece + v->piece_off[i]);
    return 0;
}

/* Phi-3 (general.name containing "phi-3" or "phi3", any case): special tokens and "</s>" swallow
 * the whitespace after them, except "<unk>", "<s>" and "<|endoftext|>" (llama.cpp's per-model
 * token attributes). */
static void apply_model_attrs(oxl_vocab *v, const oxl_gguf *g) {
    int64_t ki = oxl_gguf_find_key(g, "general.name");
    size_t len = 0;
    const char *name = ki >= 0 && oxl_gguf_kv_type(g, ki) == OXL_GGUF_STRING ? oxl_gguf_kv_str(g, ki, &len) : NULL;
    if (!name)
        return;
    char lower[256];
    size_t n = len < sizeof lower - 1 ? len : sizeof lower - 1;
    for (size_t i = 0; i < n; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    lower[n] = '\0';
    if (!strstr(lower, "phi-3") && !strstr(lower, "phi3"))
        return;
    for (int32_t i = 0; i < v->n_special; i++)
        v->attr[v->special[i]] |= OXL_ATTR_RSTRIP;
    static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
    oxl_token eos_text = vocab_find(v, "</s>", 4);
    if (eos_text >= 0)
        v->attr[eos_text] |= OXL_ATTR_RSTRIP;
    for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) {
        oxl_token t = vocab_find(v, keep[k], strlen(keep[k]));
        if (t >= 0)
            v->attr[t] &= (uint16_t)~OXL_ATTR_RSTRIP;
    }
}

oxl_vocab *oxl_vocab_load(const oxl_gguf *g, oxl_error *err) {
    if (!g) {
        oxl_err_set(err, "oxl_vocab_load: no GGUF file");
        return NULL;
    }
    const char *path = oxl_gguf_path(g);
    if (!path)
        path = "(gguf)";

    const char *model = NULL;
    int r = oxl_gguf_get_str(g, "tokenizer.ggml.model", &model, err);
    if (r < 0) {
        oxl_err_prefix(err, "%s", path);
        return NULL;
    }
    if (r == 0) {
        oxl_err_set(err, "%s: tokenizer.ggml.model is missing", path);
        return NULL;
    }
    if (strcmp(model, "llama") != 0) {
        oxl_err_set(err, "%s: tokenizer.ggml.model = '%.64s' is not supported (supported: 'llama')", path, model);
        return NULL;
    }

    int64_t ki = oxl_gguf_find_key(g, "tokenizer.ggml.tokens");
    if (ki < 0) {
        oxl_err_set(err, "%s: tokenizer.ggml.tokens is missing", path);
        return NULL;
    }
    if (oxl_gguf_kv_type(g, ki) != OXL_GGUF_ARRAY || oxl_gguf_arr_type(g, ki) != OXL_GGUF_STRING) {
        oxl_err_set(err, "%s: tokenizer.ggml.tokens must be an array of strings", path);
        return NULL;
    }
    uint64_t n = oxl_gguf_arr_n(g, ki);
    if (n == 0 || n > (uint64_t)INT32_MAX / 2) {
        oxl_err_set(err, "%s: tokenizer.ggml.tokens has %llu entries (must be 1..%d)", path, (unsigned long long)n,
                    INT32_MAX / 2);
        return NULL;
    }

    oxl_vocab *v = calloc(1, sizeof *v);
    if (!v) {
        oxl_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    v->n = (int32_t)n;
    snprintf(v->model, sizeof v->model, "%s", model);
    v->add_bos = true, v->add_eos = false, v->add_space_prefix = true;
    static const char *const flag_keys[3] = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                                             "tokenizer.ggml.add_space_prefix"};
    bool *flags[3] = {&v->add_bos, &v->add_eos, &v->add_space_prefix};

    if (load_texts(v, g, ki, path, err) < 0 || load_scores_types(v, g, path, err) < 0 ||
        load_special_ids(v, g, path, err) < 0 || load_bytes(v, path, err) < 0)
        goto fail;
    for (int k = 0; k < 3; k++) {
        if (oxl_gguf_get_bool(g, flag_keys[k], flags[k], err) < 0) {
            oxl_err_prefix(err, "%s", path);
            goto fail;
        }
    }
    v->eog = calloc(n_tok(v), 1);
    if (!v->eog) {
        oxl_err_set(err, "%s: out of memory", path);
        goto fail;
    }
    detect_specials(v);
    if (build_caches(v, path, err) < 0)
        goto fail;
    apply_model_attrs(v, g);
    return v;
fail:
    oxl_vocab_free(v);
    return NULL;
}

int32_t oxl_vocab_n_tokens(const oxl_vocab *v) { return v ? v->n : 0; }
oxl_token oxl_vocab_bos(const oxl_vocab *v) { return v ? v->bos : -1; }
oxl_token oxl_vocab_eos(const oxl_vocab *v) { return v ? v->eos : -1; }
const char *oxl_vocab_model_name(const oxl_vocab *v) { return v ? v->model : ""; }

bool oxl_vocab_is_eog(const oxl_vocab *v, oxl_token tok) {
    return v && tok >= 0 && tok < v->n && v->eog[tok];
}

// --- growable buffers for tokenization -----------------------------------------------------------

/* Makes room for `more` elements of size `elem` after `*n` used ones; false when out of memory. */
static bool grow(void **buf, size_t *cap, size_t n, size_t more, size_t elem) {
    if (n + more <= *cap)
        return true;
    size_t c = *cap ? *cap : 64;
    while (c < n + more) {
        if (c > SIZE_MAX / 2 / elem)
            return false;
        c *= 2;
    }
    void *p = realloc(*buf, c * elem);
    if (!p)
        return false;
    *buf = p;
    *cap = c;
    return true;
}

typedef struct {
    oxl_token *ids;
    size_t n, cap;
} tok_list;

static bool tok_push(tok_list *l, oxl_token t) {
    if (!grow((void **)&l->ids, &l->cap, l->n, 1, sizeof *l->ids))
        return false;
    l->ids[l->n++] = t;
    return true;
}

// --- SPM: merge UTF-8 characters by score ----------------------------------------------------------

/* A run of text: one UTF-8 character at first, growing as its right neighbour merges into it. */
typedef struct {
    int32_t prev, next; /* neighbouring live symbols, -1 at the ends */
    size_t off, n;      /* bytes text[off .. off+n); n = 0 once merged away */
} spm_symbol;

/* A candidate merge of two adjacent symbols whose joined text is a token. */
typedef struct {
    int32_t left, right;
    float score; /* the joined token's score */
    size_t size; /* joined length when queued; stale when the symbols have changed since */
} spm_bigram;

typedef struct {
    const oxl_vocab *v;
    const char *text;
    spm_symbol *sym;
    size_t n_sym, cap_sym;
    spm_bigram *heap; /* max-heap: higher score first, then the leftmost */
    size_t n_heap, cap_heap;
} spm_session;

/* llama.cpp's priority order: a before b when its score is higher, or equal and it starts further left. */
static bool bigram_before(const spm_bigram *a, const spm_bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static bool heap_push(spm_session *s, spm_bigram b) {
    if (!grow((void **)&s->heap, &s->cap_heap, s->n_heap, 1, sizeof *s->heap))
        return false;
    size_t i = s->n_heap++;
    while (i > 0 && bigram_before(&b, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = b;
    return true;
}

static spm_bigram heap_pop(spm_session *s) {
    spm_bigram top = s->heap[0], last = s->heap[--s->n_heap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n_heap)
            break;
        if (c + 1 < s->n_heap && bigram_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!bigram_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n_heap)
        s->heap[i] = last;
    return top;
}

static bool try_add_bigram(spm_session *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0)
        return true;
    size_t size = s->sym[left].n + s->sym[right].n;
    oxl_token t = vocab_find(s->v, s->text + s->sym[left].off, size);
    if (t < 0)
        return true;
    return heap_push(s, (spm_bigram){left, right, s->v->score[t], size});
}

/* Tokenizes text[0..len) (spaces already escaped to U+2581) and appends the ids to out
 * (llm_tokenizer_spm_session::tokenize). */
static bool spm_tokenize(spm_session *s, const char *text, size_t len, tok_list *out) {
    /* Character lengths by the lead byte's high nibble, as llama.cpp's unicode_len_utf8: stray
     * continuation bytes are characters of their own, a truncated sequence ends at the text's end. */
    static const uint8_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    s->text = text;
    s->n_sym = 0;
    s->n_heap = 0;
    for (size_t off = 0; off < len;) {
        size_t n = k_len[(unsigned char)text[off] >> 4];
        if (n > len - off)
            n = len - off;
        if (!grow((void **)&s->sym, &s->cap_sym, s->n_sym, 1, sizeof *s->sym))
            return false;
        int32_t i = (int32_t)s->n_sym++;
        s->sym[i] = (spm_symbol){i - 1, off + n == len ? -1 : i + 1, off, n};
        off += n;
    }
    for (size_t i = 1; i < s->n_sym; i++)
        if (!try_add_bigram(s, (int32_t)i - 1, (int32_t)i))
            return false;

    /* Merge the best pair until none is left; queue entries whose symbols changed are skipped. */
    while (s->n_heap) {
        spm_bigram b = heap_pop(s);
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
        oxl_token t = vocab_find(s->v, p, s->sym[i].n);
        if (t >= 0) {
            if (!tok_push(out, t))
                return false;
            continue;
        }
        for (size_t j = 0; j < s->sym[i].n; j++) {
            oxl_token bt = s->v->byte_tok[(unsigned char)p[j]];
            if (bt >= 0 && !tok_push(out, bt))
                return false;
        }
    }
    return true;
}

// --- special-token partition and tokenize ----------------------------------------------------------

/* A piece of the input: a special token (tok >= 0) or raw text[off .. off+len). */
typedef struct {
    oxl_token tok;
    size_t off, len;
} fragment;

typedef struct {
    fragment *f;
    size_t n, cap;
} frag_list;

static bool frag_push(frag_list *l, oxl_token tok, size_t off, size_t len) {
    if (!grow((void **)&l->f, &l->cap, l->n, 1, sizeof *l->f))
        return false;
    l->f[l->n++] = (fragment){tok, off, len};
    return true;
}

/* Splits the raw fragments of *in on every special token text, longest token first; control and
 * unknown tokens only when parse_special (user-defined ones always), honouring their LSTRIP/RSTRIP
 * attributes (llama_vocab::impl::tokenizer_st_partition). */
static bool partition(const oxl_vocab *v, const char *text, frag_list *in, frag_list *tmp, bool parse_special) {
    for (int32_t k = 0; k < v->n_special; k++) {
        oxl_token id = v->special[k];
        uint16_t a = v->attr[id];
        if (!parse_special && (a & (OXL_ATTR_CONTROL | OXL_ATTR_UNKNOWN)))
            continue;
        const char *st = tok_text(v, id);
        size_t sl = v->text_len[id];
        tmp->n = 0;
        for (size_t i = 0; i < in->n; i++) {
            fragment fr = in->f[i];
            if (fr.tok >= 0) {
                if (!frag_push(tmp, fr.tok, 0, 0))
                    return false;
                continue;
            }
            size_t pos = fr.off, end = fr.off + fr.len;
            while (pos < end) {
                const char *m = memmem(text + pos, end - pos, st, sl);
                if (!m) {
                    if (!frag_push(tmp, -1, pos, end - pos))
                        return false;
                    break;
                }
                size_t mpos = (size_t)(m - text), left = mpos - pos;
                if (a & OXL_ATTR_LSTRIP)
                    while (left > 0 && isspace((unsigned char)text[pos + left - 1]))
                        left--;
                if ((left > 0 && !frag_push(tmp, -1, pos, left)) || !frag_push(tmp, id, 0, 0))
                    return false;
                pos = mpos + sl;
                if (a & OXL_ATTR_RSTRIP)
                    while (pos < end && isspace((unsigned char)text[pos]))
                        pos++;
            }
        }
        frag_list t = *in;
        *in = *tmp;
        *tmp = t;
    }
    return true;
}

/* Appends the SPM tokens of every fragment, with llama.cpp's space prefix before raw text at the
 * start and after each special token. */
static bool tokenize_fragments(const oxl_vocab *v, const char *text, const frag_list *fr, bool add_special,
                               tok_list *out) {
    spm_session s = {.v = v};
    char *buf = NULL;
    size_t cap_buf = 0;
    bool ok = true, prev_special = true;
    if (add_special && v->add_bos && v->bos >= 0)
        ok = tok_push(out, v->bos);
    for (size_t i = 0; ok && i < fr->n; i++) {
        const fragment *f = &fr->f[i];
        if (f->tok >= 0) {
            ok = tok_push(out, f->tok);
            prev_special = true;
            continue;
        }
        /* Escape spaces to U+2581 ("▁", 3 bytes). */
        if (!(ok = grow((void **)&buf, &cap_buf, 0, 3 * f->len + 3, 1)))
            break;
        size_t n = 0;
        if (v->add_space_prefix && prev_special) {
            memcpy(buf, "\xe2\x96\x81", 3);
            n = 3;
        }
        for (size_t j = 0; j < f->len; j++) {
            char c = text[f->off + j];
            if (c == ' ') {
                memcpy(buf + n, "\xe2\x96\x81", 3);
                n += 3;
            } else {
                buf[n++] = c;
            }
        }
        ok = spm_tokenize(&s, buf, n, out);
        prev_special = false;
    }
    if (ok && add_special && v->add_eos && v->eos >= 0)
        ok = tok_push(out, v->eos);
    free(buf);
    free(s.sym);
    free(s.heap);
    return ok;
}

int32_t oxl_vocab_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_token *out, int32_t cap,
                           bool add_special, bool parse_special) {
    if (!v || (!text && len > 0) || cap < 0 || (!out && cap > 0) || len > (size_t)INT32_MAX / 4)
        return INT32_MIN;
    frag_list fr = {0}, tmp = {0};
    tok_list toks = {0};
    bool ok = true;
    if (len > 0)
        ok = frag_push(&fr, -1, 0, len) && partition(v, text, &fr, &tmp, parse_special);
    ok = ok && tokenize_fragments(v, text, &fr, add_special, &toks);
    int32_t result = INT32_MIN;
    if (ok && toks.n <= (size_t)INT32_MAX) {
        result = (int32_t)toks.n;
        if (toks.n > (size_t)cap)
            result = -result;
        else if (toks.n)
            memcpy(out, toks.ids, toks.n * sizeof *out);
    }
    free(fr.f);
    free(tmp.f);
    free(toks.ids);
    return result;
}

// --- detokenization ---------------------------------------------------------------------------------

/* The piece of tok as oxl_vocab_token_to_piece renders it; *n = 0 for unknown ids. */
static const char *piece_of(const oxl_vocab *v, oxl_token tok, bool special, size_t *n) {
    *n = 0;
    if (!v || tok < 0 || tok >= v->n)
        return "";
    if (!special && (v->attr[tok] & (OXL_ATTR_UNKNOWN | OXL_ATTR_CONTROL)))
        return "";
    *n = v->piece_len[tok];
    return v->piece + v->piece_off[tok];
}

int32_t oxl_vocab_token_to_piece(const oxl_vocab *v, oxl_token tok, char *buf, int32_t cap, bool special) {
    size_t n;
    const char *p = piece_of(v, tok, special, &n);
    if (n > (size_t)(cap > 0 ? cap : 0) || (n && !buf))
        return -(int32_t)n;
    if (n)
        memcpy(buf, p, n);
    return (int32_t)n;
}

/* Bytes at the end of s[0..n) that begin a UTF-8 character still missing continuation bytes. */
static size_t utf8_incomplete_tail(const unsigned char *s, size_t n) {
    size_t cont = 0;
    while (cont < 3 && cont < n && (s[n - 1 - cont] & 0xC0) == 0x80)
        cont++;
    if (cont == n)
        return 0;
    unsigned char lead = s[n - 1 - cont];
    size_t need = lead >= 0xF0 && lead <= 0xF7   ? 4
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xC0 && lead <= 0xDF ? 2
                                                 : 1;
    return need > cont + 1 ? cont + 1 : 0;
}

int32_t oxl_vocab_detok_push(oxl_detok *d, const oxl_vocab *v, oxl_token tok, char *out, int32_t cap) {
    if (!d)
        return INT32_MIN;
    size_t n;
    const char *p = piece_of(v, tok, false, &n);
    size_t np = d->n_pending >= 0 && d->n_pending <= 3 ? (size_t)d->n_pending : 0;
    if (n > (size_t)INT32_MAX - 8)
        return INT32_MIN;
    /* The last bytes of pending + piece decide what is held back. */
    unsigned char tail[7];
    size_t total = np + n, nt = total < sizeof tail ? total : sizeof tail;
    for (size_t i = 0; i < nt; i++) {
        size_t j = total - nt + i;
        tail[i] = (unsigned char)(j < np ? d->pending[j] : p[j - np]);
    }
    size_t hold = utf8_incomplete_tail(tail, nt), emit = total - hold;
    if (emit > (size_t)(cap > 0 ? cap : 0) || (emit && !out))
        return -(int32_t)emit;
    size_t from_pending = emit < np ? emit : np;
    if (emit) {
        memcpy(out, d->pending, from_pending);
        memcpy(out + from_pending, p, emit - from_pending);
    }
    memcpy(d->pending, tail + nt - hold, hold);
    d->n_pending = (int32_t)hold;
    return (int32_t)emit;
}

int32_t oxl_detok_flush(oxl_detok *d, char *out, int32_t cap) {
    if (!d)
        return INT32_MIN;
    int32_t np = d->n_pending >= 0 && d->n_pending <= 3 ? d->n_pending : 0;
    if (np > cap || (np && !out))
        return -np;
    if (np)
        memcpy(out, d->pending, (size_t)np);
    d->n_pending = 0;
    return np;
}
