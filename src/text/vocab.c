/* Vocabulary loading, special-token splitting, the tokenize driver and detokenization (behaviour of
 * llama.cpp src/llama-vocab.cpp); the tokenizers of each model are in src/tokenizer_*.c. */
#include "vocab_internal.h"

#include "errors.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// --- token attributes ----------------------------------------------------------------------------

/* tokenizer.ggml.token_type values (GGUF / SentencePiece numbering) → attribute; other values are
 * "undefined" (no bit), which renders as an empty piece. */
static const uint16_t k_type_attr[] = {
    [1] = OXL_ATTR_NORMAL,       [2] = OXL_ATTR_UNKNOWN, [3] = OXL_ATTR_CONTROL,
    [4] = OXL_ATTR_USER_DEFINED, [5] = OXL_ATTR_UNUSED,  [6] = OXL_ATTR_BYTE,
};

// --- the vocabulary ------------------------------------------------------------------------------

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
 * (llama_vocab::impl::load, "auto-detect special tokens by text"). Among several matches llama.cpp
 * keeps the first one its hash map yields (an unspecified order); here the byte-wise smallest text
 * wins, so the choice is at least fixed. */
static const char *const k_eot_texts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "<|end_of_text|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "<\xef\xbd\x9c"
                                          "end\xe2\x96\x81"
                                          "of\xe2\x96\x81"
                                          "sentence\xef\xbd\x9c>",
                                          "<end_of_utterance>",
                                          NULL};
static const char *const k_eom_texts[] = {"<|eom_id|>", NULL};
static const char *const k_fim_pre_texts[] = {"<|fim_prefix|>",
                                              "<fim-prefix>",
                                              "<fim_prefix>",
                                              "<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "begin\xef\xbd\x9c>",
                                              "<PRE>",
                                              "\xe2\x96\x81<PRE>",
                                              "<|code_prefix|>",
                                              "<|prefix|>",
                                              NULL};
static const char *const k_fim_suf_texts[] = {"<|fim_suffix|>",
                                              "<fim-suffix>",
                                              "<fim_suffix>",
                                              "<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "hole\xef\xbd\x9c>",
                                              "<SUF>",
                                              "\xe2\x96\x81<SUF>",
                                              "<|code_suffix|>",
                                              "<|suffix|>",
                                              NULL};
static const char *const k_fim_mid_texts[] = {"<|fim_middle|>",
                                              "<fim-middle>",
                                              "<fim_middle>",
                                              "<\xef\xbd\x9c"
                                              "fim\xe2\x96\x81"
                                              "end\xef\xbd\x9c>",
                                              "<MID>",
                                              "\xe2\x96\x81<MID>",
                                              "<|code_middle|>",
                                              "<|middle|>",
                                              NULL};
static const char *const k_fim_pad_texts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const k_fim_rep_texts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                              "<REPO>",       "<reponame>",    NULL};
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
static const char *const k_eog_texts[] = {"<|eot_id|>",
                                          "<|im_end|>",
                                          "<|end|>",
                                          "<|return|>",
                                          "<|call|>",
                                          "<|flush|>",
                                          "<|calls|>",
                                          "<end_of_turn>",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<|eom_id|>",
                                          "<EOT>",
                                          "_<EOT>",
                                          "[EOT]",
                                          "[EOS]",
                                          "<|end_of_text|>",
                                          "<end_of_utterance>",
                                          "<eos>",
                                          "<turn|>",
                                          "<|tool_response>",
                                          "<\xef\xbd\x9c"
                                          "end\xe2\x96\x81"
                                          "of\xe2\x96\x81"
                                          "sentence\xef\xbd\x9c>",
                                          "[e~[",
                                          NULL};

static oxl_token *vocab_field(oxl_vocab *v, size_t off) { return (oxl_token *)((char *)v + off); }

// --- text → id hash ------------------------------------------------------------------------------

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
    oxl_bpe_free(v);
    oxl_ugm_free(v);
    oxl_trie_free(&v->wpm_trie);
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
        if (len > v->max_token_len)
            v->max_token_len = (uint32_t)len;
        pos += len + 1;

        size_t h = oxl_vocab_hash(oxl_tok_text(v, i), len) & v->slot_mask;
        for (; v->slot[h]; h = (h + 1) & v->slot_mask) {
            int32_t other = v->slot[h] - 1;
            if (v->text_len[other] == len && memcmp(oxl_tok_text(v, other), oxl_tok_text(v, i), len) == 0)
                return oxl_err_set(err, "%s: tokenizer.ggml.tokens[%d] = '%.*s' repeats token %d", path, i,
                                   (int)(len < 64 ? len : 64), oxl_tok_text(v, i), other);
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
        const char *s = oxl_tok_text(v, i);
        if (v->text_len[i] != 6 || memcmp(s, "<0x", 3) != 0 || !isxdigit((unsigned char)s[3]) ||
            !isxdigit((unsigned char)s[4]) || s[5] != '>')
            return oxl_err_set(err, "%s: tokenizer.ggml.tokens[%d] = '%.*s' has type BYTE but is not <0xHH>", path, i,
                               (int)(v->text_len[i] < 64 ? v->text_len[i] : 64), s);
    }
    for (int b = 0; b < 256; b++) {
        char hex[7];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        char one = (char)b;
        oxl_token t = oxl_vocab_find(v, hex, 6);
        v->byte_tok[b] = t >= 0 ? t : (t = oxl_vocab_find(v, &one, 1)) >= 0 ? t : v->unk;
    }
    return 0;
}

/* Special ids: the model's defaults (set_model_defaults; dropped when outside the vocabulary), then
 * the file's keys, where 0xFFFFFFFF or -1 mean "none". */
static int load_special_ids(oxl_vocab *v, const oxl_gguf *g, const char *path, oxl_error *err) {
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
            oxl_token c = oxl_vocab_find(v, *t, strlen(*t));
            if (c >= 0 && (*id < 0 || strcmp(*t, oxl_tok_text(v, *id)) < 0))
                *id = c;
        }
        if (*id >= 0)
            v->attr[*id] |= OXL_ATTR_CONTROL;
    }
    for (const char *const *t = k_eog_texts; *t; t++) {
        oxl_token c = oxl_vocab_find(v, *t, strlen(*t));
        if (c >= 0) {
            v->eog[c] = 1;
            v->attr[c] |= OXL_ATTR_CONTROL;
        }
    }
    const oxl_token eog_ids[] = {v->fim_pad, v->fim_rep, v->fim_sep, v->eos, v->eot, v->eom};
    for (size_t k = 0; k < sizeof eog_ids / sizeof *eog_ids; k++)
        if (eog_ids[k] >= 0)
            v->eog[eog_ids[k]] = 1;
    /* control tokens named "...unused..." are unused */
    for (int32_t i = 0; i < v->n; i++)
        if ((v->attr[i] & OXL_ATTR_CONTROL) && strstr(oxl_tok_text(v, i), "unused"))
            v->attr[i] |= OXL_ATTR_UNUSED;
    /* gpt-oss: these always render */
    static const char *const k_render[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (size_t k = 0; k < sizeof k_render / sizeof *k_render; k++) {
        oxl_token c = oxl_vocab_find(v, k_render[k], strlen(k_render[k]));
        if (c >= 0)
            v->attr[c] = OXL_ATTR_USER_DEFINED;
    }
    /* "<|end|>" does not end generation next to "<|return|>" + "<|call|>" (o200k_harmony) or
     * "<|calls|>" + "<|flush|>" (solar-open); "</s>" does not next to "<|tool_response>" (Gemma 4) */
    oxl_token end = oxl_vocab_find(v, "<|end|>", 7), ret = oxl_vocab_find(v, "<|return|>", 10);
    oxl_token call = oxl_vocab_find(v, "<|call|>", 8), calls = oxl_vocab_find(v, "<|calls|>", 9);
    oxl_token flush = oxl_vocab_find(v, "<|flush|>", 9);
    bool has_call = (call >= 0 && v->eog[call]) || (calls >= 0 && v->eog[calls]);
    if (end >= 0 && v->eog[end] && has_call && ((ret >= 0 && v->eog[ret]) || (flush >= 0 && v->eog[flush]))) {
        v->eog[end] = 0;
        v->attr[end] = OXL_ATTR_USER_DEFINED;
    }
    oxl_token tr = oxl_vocab_find(v, "<|tool_response>", 16), eos_text = oxl_vocab_find(v, "</s>", 4);
    if (tr >= 0 && v->eog[tr] && eos_text >= 0 && v->eog[eos_text]) {
        v->eog[eos_text] = 0;
        v->attr[eos_text] = OXL_ATTR_NORMAL;
    }
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

/* The bytes a byte-level BPE token stands for: each code point of its text mapped back through GPT-2's
 * bytes_to_unicode (invalid UTF-8 read as U+FFFD); a code point that stands for no byte renders as
 * "[UNK_BYTE_0x<its UTF-8 in hex><the whole text>]", as llama.cpp's llama_decode_text. Writes to out
 * (NULL: only measures) and returns the length. */
static size_t decode_bytes(const char *s, size_t n, char *out) {
    size_t w = 0;
    for (size_t off = 0; off < n;) {
        uint32_t c;
        if (!oxl_utf8_decode(s, n, &off, &c)) {
            c = 0xFFFD;
            off++;
        }
        int b = oxl_cpt_to_byte(c);
        if (b >= 0) {
            if (out)
                out[w] = (char)b;
            w++;
            continue;
        }
        char u[4], hex[32];
        size_t ul = oxl_utf8_encode(c, u), hl = 0;
        for (size_t i = 0; i < ul; i++)
            hl += (size_t)snprintf(hex + hl, sizeof hex - hl, "%02x", (unsigned char)u[i]);
        static const char pre[] = "[UNK_BYTE_0x";
        if (out) {
            memcpy(out + w, pre, sizeof pre - 1);
            memcpy(out + w + sizeof pre - 1, hex, hl);
            memcpy(out + w + sizeof pre - 1 + hl, s, n);
            out[w + sizeof pre - 1 + hl + n] = ']';
        }
        w += sizeof pre - 1 + hl + n + 1;
    }
    return w;
}

/* Writes the piece of token id (special = true) to out (NULL: only measures); returns its length. */
static size_t render_piece(const oxl_vocab *v, oxl_token id, char *out) {
    const char *s = oxl_tok_text(v, id);
    size_t n = v->text_len[id];
    uint16_t a = v->attr[id];
    if (a & (OXL_ATTR_UNKNOWN | OXL_ATTR_CONTROL | OXL_ATTR_USER_DEFINED)) {
        if (out)
            memcpy(out, s, n);
        return n;
    }
    if ((a & OXL_ATTR_NORMAL) && v->type == OXL_VOCAB_BPE && !v->escape_whitespaces)
        return decode_bytes(s, n, out);
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
    if ((a & OXL_ATTR_BYTE) && v->type != OXL_VOCAB_WPM) {
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

/* A string metadata value lowercased into buf ("" when absent or not a string). */
static const char *lower_str(const oxl_gguf *g, const char *key, char *buf, size_t cap) {
    int64_t ki = oxl_gguf_find_key(g, key);
    size_t len = 0;
    const char *s = ki >= 0 && oxl_gguf_kv_type(g, ki) == OXL_GGUF_STRING ? oxl_gguf_kv_str(g, ki, &len) : NULL;
    size_t n = s ? (len < cap - 1 ? len : cap - 1) : 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    buf[n] = '\0';
    return buf;
}

static void set_attr(oxl_vocab *v, const char *text, uint16_t bit, bool on) {
    oxl_token t = oxl_vocab_find(v, text, strlen(text));
    if (t >= 0)
        v->attr[t] = on ? (uint16_t)(v->attr[t] | bit) : (uint16_t)(v->attr[t] & ~bit);
}

/* llama.cpp's per-model token attributes, applied after the special-token list is built: "<mask>"
 * swallows the whitespace before it for the jina-v2 pre-tokenizers and the nomic-bert-moe /
 * jina-bert-v3 architectures; for Phi-3 (general.name containing "phi-3" or "phi3", any case) special
 * tokens and "</s>" swallow the whitespace after them, except "<unk>", "<s>" and "<|endoftext|>";
 * "[MASK]" swallows the whitespace before it for modern-bert. */
static void apply_model_attrs(oxl_vocab *v, const oxl_gguf *g) {
    char name[256], arch[128];
    lower_str(g, "general.name", name, sizeof name);
    int64_t ka = oxl_gguf_find_key(g, "general.architecture");
    size_t al = 0;
    const char *as = ka >= 0 && oxl_gguf_kv_type(g, ka) == OXL_GGUF_STRING ? oxl_gguf_kv_str(g, ka, &al) : NULL;
    snprintf(arch, sizeof arch, "%.*s", as ? (int)(al < 127 ? al : 127) : 0, as ? as : "");
    if (strstr(v->pre, "jina-v2-de") || strstr(v->pre, "jina-v2-es") || strstr(v->pre, "jina-v2-code") ||
        strstr(arch, "nomic-bert-moe") || strstr(arch, "jina-bert-v3")) {
        set_attr(v, "<mask>", OXL_ATTR_LSTRIP, true);
    } else if (strstr(name, "phi-3") || strstr(name, "phi3")) {
        for (int32_t i = 0; i < v->n_special; i++)
            v->attr[v->special[i]] |= OXL_ATTR_RSTRIP;
        set_attr(v, "</s>", OXL_ATTR_RSTRIP, true);
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t k = 0; k < sizeof keep / sizeof *keep; k++)
            set_attr(v, keep[k], OXL_ATTR_RSTRIP, false);
    } else if (strstr(name, "modern-bert")) {
        set_attr(v, "[MASK]", OXL_ATTR_LSTRIP, true);
    }
}

/* tokenizer.ggml.model → tokenizer type and its defaults (llama_vocab::impl::load): special ids and
 * flags; false for a model this library does not tokenize. */
static bool set_model_defaults(oxl_vocab *v, const char *model) {
    v->eot = v->eom = v->sep = v->pad = v->mask = -1;
    v->fim_pre = v->fim_suf = v->fim_mid = v->fim_pad = v->fim_rep = v->fim_sep = -1;
    v->escape_whitespaces = true;
    v->lowercase = true;
    if (strcmp(model, "llama") == 0) {
        v->type = OXL_VOCAB_SPM;
        v->bos = 1, v->eos = 2, v->unk = 0;
        v->add_space_prefix = true, v->add_bos = true;
    } else if (strcmp(model, "gpt2") == 0 || strcmp(model, "whitespace") == 0) {
        v->type = OXL_VOCAB_BPE;
        v->bos = 11, v->eos = 11, v->unk = -1;
        v->clean_spaces = true;
    } else if (strcmp(model, "gemma4") == 0) { /* BPE on raw UTF-8, always the "gemma4" pre-tokenizer */
        v->type = OXL_VOCAB_BPE;
        v->bos = v->eos = v->unk = v->pad = -1;
        v->clean_spaces = true;
        snprintf(v->pre, sizeof v->pre, "gemma4");
    } else if (strcmp(model, "bert") == 0) {
        v->type = OXL_VOCAB_WPM;
        v->bos = 101, v->eos = -1, v->unk = 100, v->sep = 102, v->pad = 0, v->mask = 103;
        v->add_bos = true, v->add_sep = true, v->clean_spaces = true;
    } else if (strcmp(model, "t5") == 0) {
        v->type = OXL_VOCAB_UGM;
        v->bos = -1, v->eos = 1, v->unk = 2, v->pad = 0;
        v->add_eos = true;
    } else {
        return false;
    }
    return true;
}

/* Reads the optional boolean keys listed, each into its flag; -1 with err set on a wrong type. */
static int read_flags(const oxl_gguf *g, const char *const *keys, bool *const *flags, size_t n, const char *path,
                      oxl_error *err) {
    for (size_t k = 0; k < n; k++)
        if (oxl_gguf_get_bool(g, keys[k], flags[k], err) < 0)
            return oxl_err_prefix(err, "%s", path);
    return 0;
}

oxl_vocab *oxl_vocab_load(const oxl_gguf *g, oxl_error *err) {
    if (!g) {
        oxl_err_set(err, "oxl_vocab_load: no GGUF file");
        return NULL;
    }
    const char *path = oxl_gguf_path(g);
    if (!path)
        path = "(gguf)";

    const char *model = NULL, *pre = NULL;
    int r = oxl_gguf_get_str(g, "tokenizer.ggml.model", &model, err);
    if (r < 0) {
        oxl_err_prefix(err, "%s", path);
        return NULL;
    }
    if (r == 0) {
        oxl_err_set(err, "%s: tokenizer.ggml.model is missing", path);
        return NULL;
    }
    if (oxl_gguf_get_str(g, "tokenizer.ggml.pre", &pre, err) < 0) {
        oxl_err_prefix(err, "%s", path);
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
    snprintf(v->model, sizeof v->model, "%.15s", model);
    snprintf(v->pre, sizeof v->pre, "%s", pre ? pre : "");
    if (!set_model_defaults(v, model)) {
        oxl_err_set(err,
                    "%s: tokenizer.ggml.model = '%.64s' is not supported (supported: 'llama', 'gpt2', 'gemma4', "
                    "'whitespace', 'bert', 't5')",
                    path, model);
        goto fail;
    }
    if (v->type == OXL_VOCAB_BPE && strcmp(v->model, "gemma4") != 0 && pre && strlen(pre) >= sizeof v->pre) {
        oxl_err_set(err, "%s: tokenizer.ggml.pre = '%.64s...' is not a pre-tokenizer llama.cpp knows", path, pre);
        goto fail;
    }
    static const char *const ws_keys[2] = {"tokenizer.ggml.add_space_prefix",
                                           "tokenizer.ggml.remove_extra_whitespaces"};
    bool *const ws_flags[2] = {&v->add_space_prefix, &v->remove_extra_whitespaces};
    static const char *const add_keys[3] = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                                            "tokenizer.ggml.add_sep_token"};
    bool *const add_flags[3] = {&v->add_bos, &v->add_eos, &v->add_sep};
    static const char *const norm_key = "tokenizer.ggml.normalizer.strip_accents";

    if (load_texts(v, g, ki, path, err) < 0 || load_scores_types(v, g, path, err) < 0 ||
        (v->type == OXL_VOCAB_BPE && oxl_bpe_load(v, g, path, err) < 0))
        goto fail;
    if (v->pre_flags & OXL_PRE_KEEP_CASE)
        v->lowercase = false;
    for (int32_t i = 0; v->type == OXL_VOCAB_WPM && i < v->n; i++) {
        if (!oxl_trie_insert(&v->wpm_trie, oxl_tok_text(v, i), v->text_len[i], i)) {
            oxl_err_set(err, "%s: out of memory for the token trie", path);
            goto fail;
        }
    }
    if (read_flags(g, ws_keys, ws_flags, 2, path, err) < 0 ||
        (v->type == OXL_VOCAB_UGM && oxl_ugm_load(v, g, path, err) < 0) || load_special_ids(v, g, path, err) < 0 ||
        load_bytes(v, path, err) < 0 || read_flags(g, add_keys, add_flags, 3, path, err) < 0)
        goto fail;
    if (strcmp(v->pre, "gemma4") == 0 || strcmp(v->pre, "granite-embed-multi-311m") == 0)
        v->add_bos = true;
    if (oxl_gguf_get_bool(g, "tokenizer.ggml.normalizer.lowercase", &v->lowercase, err) < 0 ||
        ((v->strip_accents = v->lowercase), oxl_gguf_get_bool(g, norm_key, &v->strip_accents, err) < 0)) {
        oxl_err_prefix(err, "%s", path);
        goto fail;
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
bool oxl_vocab_adds_space_prefix(const oxl_vocab *v) { return v && v->add_space_prefix; }
oxl_token oxl_vocab_sep(const oxl_vocab *v) { return v ? v->sep : -1; }
oxl_token oxl_vocab_fim(const oxl_vocab *v, int which) {
    const oxl_token t[] = {v ? v->fim_pre : -1, v ? v->fim_suf : -1, v ? v->fim_mid : -1,
                           v ? v->fim_pad : -1, v ? v->fim_rep : -1, v ? v->fim_sep : -1};
    return which >= 0 && which < 6 ? t[which] : -1;
}
bool oxl_vocab_adds_bos(const oxl_vocab *v) { return v && v->add_bos; }
bool oxl_vocab_adds_eos(const oxl_vocab *v) { return v && v->add_eos; }
bool oxl_vocab_adds_sep(const oxl_vocab *v) { return v && v->add_sep; }

bool oxl_vocab_is_eog(const oxl_vocab *v, oxl_token tok) { return v && tok >= 0 && tok < v->n && v->eog[tok]; }

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
    if (!oxl_grow((void **)&l->f, &l->cap, l->n, 1, sizeof *l->f))
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
        const char *st = oxl_tok_text(v, id);
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

/* Appends the tokens of every fragment (llama_vocab::impl::tokenize): BOS first when add_special and
 * the vocabulary adds it (WPM: always), special fragments as their ids, raw text through the model's
 * tokenizer (SPM: spaces escaped to U+2581 and one more in front of text that starts the input or
 * follows a special token when add_space_prefix; BPE: spaces escaped only for SPM-style BPE), then
 * EOS (WPM: SEP) when add_special. */
static bool tokenize_fragments(const oxl_vocab *v, const char *text, const frag_list *fr, bool add_special,
                               oxl_tok_list *out) {
    char *buf = NULL;
    size_t cap_buf = 0;
    bool ok = true, prev_special = true;
    if (add_special && v->bos >= 0 && (v->add_bos || v->type == OXL_VOCAB_WPM))
        ok = oxl_tok_push(out, v->bos);
    for (size_t i = 0; ok && i < fr->n; i++) {
        const fragment *f = &fr->f[i];
        if (f->tok >= 0) {
            ok = oxl_tok_push(out, f->tok);
            prev_special = true;
            continue;
        }
        const char *t = text + f->off;
        size_t n = f->len;
        if (v->type == OXL_VOCAB_SPM || (v->type == OXL_VOCAB_BPE && v->escape_whitespaces)) {
            /* Escape spaces to U+2581 ("▁", 3 bytes). */
            if (!(ok = oxl_grow((void **)&buf, &cap_buf, 0, 3 * f->len + 3, 1)))
                break;
            n = 0;
            if (v->type == OXL_VOCAB_SPM && v->add_space_prefix && prev_special) {
                memcpy(buf, "\xe2\x96\x81", 3);
                n = 3;
            }
            for (size_t j = 0; j < f->len; j++) {
                if (t[j] == ' ') {
                    memcpy(buf + n, "\xe2\x96\x81", 3);
                    n += 3;
                } else {
                    buf[n++] = t[j];
                }
            }
            t = buf;
        }
        switch (v->type) {
        case OXL_VOCAB_SPM: ok = oxl_spm_tokenize(v, t, n, out); break;
        case OXL_VOCAB_BPE: ok = oxl_bpe_tokenize(v, t, n, out); break;
        case OXL_VOCAB_WPM: ok = oxl_wpm_tokenize(v, t, n, out); break;
        case OXL_VOCAB_UGM: ok = oxl_ugm_tokenize(v, t, n, out); break;
        }
        prev_special = false;
    }
    if (ok && add_special && v->type == OXL_VOCAB_WPM && v->sep >= 0)
        ok = oxl_tok_push(out, v->sep);
    else if (ok && add_special && v->type != OXL_VOCAB_WPM && v->add_eos && v->eos >= 0)
        ok = oxl_tok_push(out, v->eos);
    free(buf);
    return ok;
}

int32_t oxl_vocab_tokenize(const oxl_vocab *v, const char *text, size_t len, oxl_token *out, int32_t cap,
                           bool add_special, bool parse_special) {
    if (!v || (!text && len > 0) || cap < 0 || (!out && cap > 0) || len > (size_t)INT32_MAX / 4)
        return INT32_MIN;
    frag_list fr = {0}, tmp = {0};
    oxl_tok_list toks = {0};
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

/* llama.cpp's clean_up_tokenization_spaces on t[0..n) in place; returns the new length. Three passes:
 * drop a space before ? ! . , ; turn " ' " into "'"; drop the space before 's 'm 're 've. */
static size_t clean_spaces(char *t, size_t n) {
    size_t w = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = t[i];
        if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ','))
            w--;
        t[w++] = x;
    }
    n = w, w = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = t[i];
        if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
            w--;
            t[++i] = '\0';
        }
        t[w++] = x;
    }
    n = w, w = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) {
        char x = t[i];
        if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            char x1 = t[i + 1];
            if (x1 == 's' || x1 == 'm')
                w--;
            else if (x1 != 't' && x1 != 'd' && i + 2 < n &&
                     ((x1 == 'r' && t[i + 2] == 'e') || (x1 == 'v' && t[i + 2] == 'e')))
                w--;
        }
        t[w++] = x;
    }
    return w;
}

int32_t oxl_vocab_detokenize(const oxl_vocab *v, const oxl_token *toks, int32_t n_toks, char *out, int32_t cap,
                             bool remove_special, bool unparse_special) {
    if (!v || n_toks < 0 || (!toks && n_toks > 0) || cap < 0 || (!out && cap > 0))
        return INT32_MIN;
    bool strip = v->add_space_prefix;
    if (remove_special && v->add_bos && n_toks > 0 && toks[0] == v->bos) {
        strip = false;
        toks++, n_toks--;
    }
    if (remove_special && v->add_eos && n_toks > 0 && toks[n_toks - 1] == v->eos)
        n_toks--;
    size_t total = 0;
    for (int32_t i = 0; i < n_toks; i++) {
        size_t n;
        const char *p = piece_of(v, toks[i], unparse_special, &n);
        if (i == 0 && strip && n && p[0] == ' ')
            n--;
        total += n;
        if (total > (size_t)INT32_MAX)
            return INT32_MIN;
    }
    if (total > (size_t)cap)
        return -(int32_t)total;
    size_t w = 0;
    for (int32_t i = 0; i < n_toks; i++) {
        size_t n;
        const char *p = piece_of(v, toks[i], unparse_special, &n);
        if (i == 0 && strip && n && p[0] == ' ')
            p++, n--;
        memcpy(out + w, p, n);
        w += n;
    }
    if (v->clean_spaces)
        w = clean_spaces(out, w);
    return (int32_t)w;
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
