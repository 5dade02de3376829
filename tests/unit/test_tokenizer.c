/* SPM tokenizer: llama.cpp's conformance fixtures (golden/tokenizer, read with the conventions of
 * llama.cpp's tests/test-tokenizer-0.cpp), the prompt ids llama.cpp gave stories260K (tensor `tokens`
 * of golden/models/stories260K.*.gguf) and the ids llama-perplexity stored for stories.txt, round
 * trips, byte fallback checked against the ids the vocabulary file itself gives the <0xXX> tokens,
 * streaming detokenization, special-token parsing, and crafted vocabularies for merge priority and
 * load errors. */
#include "gguf.h"
#include "gguf_craft.h"
#include "golden.h"
#include "vocab.h"

#include "vocab_test_util.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKDIR OXL_SOURCE_DIR "/golden/tokenizer/"
#define SHARED_TOKDIR OXL_SOURCE_DIR "/../shared/golden/tokenizer/"
#define STORIES OXL_SOURCE_DIR "/models/stories260K.gguf"
#define GOLDEN_MODELS OXL_SOURCE_DIR "/golden/models/"

#define MAX_TOKS 4096

static int32_t tokenize(const oxl_vocab *v, const char *s, size_t len, oxl_token *out, bool add_special,
                        bool parse_special) {
    int32_t n = oxl_vocab_tokenize(v, s, len, out, MAX_TOKS, add_special, parse_special);
    cr_assert(n >= 0 && n <= MAX_TOKS, "tokenize returned %d", n);
    return n;
}

/* Concatenated pieces (special = false) without the one leading space the space prefix adds, as
 * llama.cpp's detokenizer strips it. Returns the length written to out. */
static size_t detokenize(const oxl_vocab *v, const oxl_token *t, int32_t n, char *out, size_t cap) {
    size_t len = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t k = oxl_vocab_token_to_piece(v, t[i], out + len, (int32_t)(cap - len), false);
        cr_assert(k >= 0, "piece of %d does not fit", t[i]);
        if (i == 0 && k > 0 && out[0] == ' ') {
            memmove(out, out + 1, (size_t)k - 1);
            k--;
        }
        len += (size_t)k;
    }
    return len;
}

// --- llama.cpp's fixtures ----------------------------------------------------------------------------

/* The ids: the golden checker (one check per string, llama.cpp's conventions); on failure it runs
 * again printing every check. With roundtrip, also each string of <vocab>.inp must come back from
 * its ids. */
static void run_fixture(const char *vocab_path, bool roundtrip) {
    oxl_golden_report r = {0};
    oxl_error err = {{0}};
    cr_assert_eq(oxl_golden_tokenizer(vocab_path, &r, &err), 0, "%s", err.msg);
    if (r.n_fail) {
        oxl_golden_report loud = {.out = stderr};
        oxl_golden_tokenizer(vocab_path, &loud, &err);
    }
    cr_expect_eq(r.n_fail, 0, "%s: %d of %d strings differ from llama.cpp", vocab_path, r.n_fail, r.n_fail + r.n_pass);
    cr_expect_gt(r.n_pass, 40);
    if (!roundtrip)
        return;

    char path[1024];
    size_t n_inp;
    snprintf(path, sizeof path, "%s.inp", vocab_path);
    char *inp = oxl_test_slurp(path, &n_inp);
    oxl_vocab *v = oxl_test_load_vocab(vocab_path);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    static oxl_token toks[MAX_TOKS];
    static char text[4 * MAX_TOKS];
    for (char *s = inp; s < inp + n_inp;) {
        char *e = memmem(s, (size_t)(inp + n_inp - s), sep, sizeof sep - 1);
        size_t len = e ? (size_t)(e - s) : (size_t)(inp + n_inp - s);
        int32_t n = tokenize(v, s, len, toks, false, false);
        size_t dl = detokenize(v, toks, n, text, sizeof text);
        cr_expect(dl == len && memcmp(text, s, len) == 0, "%s: round trip gives '%.*s' for '%.*s'", vocab_path, (int)dl,
                  text, (int)len, s);
        if (!e)
            break;
        s = e + sizeof sep - 1;
    }
    oxl_vocab_free(v);
    free(inp);
}

Test(tokenizer, fixture_llama_spm) { run_fixture(TOKDIR "ggml-vocab-llama-spm.gguf", true); }

Test(tokenizer, fixture_phi3) { run_fixture(TOKDIR "ggml-vocab-phi-3.gguf", true); }

Test(tokenizer, fixture_baichuan) {
    const char *path = SHARED_TOKDIR "ggml-vocab-baichuan.gguf";
    OXL_TEST_SHARED_FIXTURE(path, "the Baichuan vocabulary is not redistributed with the project");
    run_fixture(path, false);
}

// --- stories260K --------------------------------------------------------------------------------------

/* The prompt of a golden file, tokenized with BOS, must give its `tokens` tensor. */
static void check_golden_prompt(const char *golden) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(golden, &err);
    cr_assert_not_null(g, "%s: %s", golden, err.msg);
    const char *prompt = NULL;
    cr_assert_eq(oxl_gguf_get_str(g, "golden.prompt", &prompt, &err), 1, "%s: %s", golden, err.msg);
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, "tokens");
    cr_assert_not_null(t);
    cr_assert_eq(t->type, 26u, "tokens must be I32");
    int32_t n_expect = (int32_t)t->ne[0];

    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    oxl_token toks[MAX_TOKS];
    int32_t n = tokenize(v, prompt, strlen(prompt), toks, true, false);
    cr_assert_eq(n, n_expect, "'%s': %d tokens, llama.cpp %d", prompt, n, n_expect);
    for (int32_t i = 0; i < n; i++) {
        int32_t e;
        memcpy(&e, (const char *)t->data + 4 * (size_t)i, 4);
        cr_expect_eq(toks[i], e, "'%s' token %d: %d, llama.cpp %d", prompt, i, toks[i], e);
    }
    cr_expect_eq(toks[0], oxl_vocab_bos(v));
    oxl_vocab_free(v);
    oxl_gguf_close(g);
}

Test(tokenizer, stories260K_once) { check_golden_prompt(GOLDEN_MODELS "stories260K.once.gguf"); }
Test(tokenizer, stories260K_lily) { check_golden_prompt(GOLDEN_MODELS "stories260K.lily.gguf"); }
Test(tokenizer, stories260K_dog) { check_golden_prompt(GOLDEN_MODELS "stories260K.dog.gguf"); }

Test(tokenizer, stories260K_perplexity_text) {
    /* llama-perplexity stored the ids it got for stories.txt (read with -f, which drops one trailing
     * newline; tokenized with BOS) in its KL-divergence base file: magic "_logits_", n_ctx, n_vocab,
     * n_chunk (int32), then the first n_ctx * n_chunk ids */
    size_t n_text, n_kld;
    char *text = oxl_test_slurp(OXL_SOURCE_DIR "/golden/perplexity/stories.txt", &n_text);
    char *kld = oxl_test_slurp(OXL_SOURCE_DIR "/golden/perplexity/stories260K.c128.kld", &n_kld);
    cr_assert(n_kld > 20 && memcmp(kld, "_logits_", 8) == 0);
    int32_t hdr[3];
    memcpy(hdr, kld + 8, sizeof hdr);
    const int32_t n_expect = hdr[0] * hdr[2];
    cr_assert(n_expect > 0 && n_expect < MAX_TOKS && 20 + 4 * (size_t)n_expect <= n_kld);
    if (n_text && text[n_text - 1] == '\n')
        n_text--;
    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    static oxl_token toks[MAX_TOKS];
    int32_t n = tokenize(v, text, n_text, toks, true, false);
    cr_assert_geq(n, n_expect);
    for (int32_t i = 0; i < n_expect; i++) {
        int32_t e;
        memcpy(&e, kld + 20 + 4 * (size_t)i, 4);
        cr_assert_eq(toks[i], e, "token %d: %d, llama.cpp %d", i, toks[i], e);
    }
    oxl_vocab_free(v);
    free(text);
    free(kld);
}

Test(tokenizer, byte_fallback) {
    /* "ë" (C3 AB) is not among stories260K's 512 tokens: it becomes two byte tokens after the
     * space-prefix token "▁". */
    cr_assert_eq(oxl_test_file_token_id(STORIES, "\xc3\xab"), -1);
    cr_assert_eq(oxl_test_file_token_id(STORIES, "\xe2\x96\x81\xc3\xab"), -1);
    const int32_t expect[3] = {oxl_test_file_token_id(STORIES, "\xe2\x96\x81"),
                               oxl_test_file_token_id(STORIES, "<0xC3>"), oxl_test_file_token_id(STORIES, "<0xAB>")};
    for (int i = 0; i < 3; i++)
        cr_assert_geq(expect[i], 0);

    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    oxl_token toks[MAX_TOKS];
    int32_t n = tokenize(v, "\xc3\xab", 2, toks, false, false);
    cr_assert_eq(n, 3);
    for (int i = 0; i < 3; i++)
        cr_expect_eq(toks[i], expect[i], "token %d: %d, expected %d", i, toks[i], expect[i]);
    char text[64];
    size_t len = detokenize(v, toks, n, text, sizeof text);
    cr_expect(len == 2 && memcmp(text, "\xc3\xab", 2) == 0);
    oxl_vocab_free(v);
}

Test(tokenizer, roundtrip_stories260K) {
    static const char *const texts[] = {
        "Once upon a time, there was a little girl named Lily.",
        "  two  spaces\tand a tab\nand lines\n\n",
        "Zo\xc3\xab ate 3 cr\xc3\xa8mes br\xc3\xbb"
        "l\xc3\xa9"
        "es \xe2\x82\xac 5 \xf0\x9f\x98\x80!",
        "\xe6\x88\x91\xe6\x83\xb3\xe5\x9c\xa8 apple \xe5\xb7\xa5\xe4\xbd\x9c",
        "",
    };
    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    oxl_token toks[MAX_TOKS];
    char text[4 * MAX_TOKS];
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++) {
        size_t len = strlen(texts[k]);
        int32_t n = tokenize(v, texts[k], len, toks, false, false);
        size_t dl = detokenize(v, toks, n, text, sizeof text);
        cr_expect(dl == len && memcmp(text, texts[k], len) == 0, "'%s' came back as '%.*s'", texts[k], (int)dl, text);
    }
    oxl_vocab_free(v);
}

// --- streaming detokenization ----------------------------------------------------------------------

/* True when s[0..n) is a sequence of complete, well-formed UTF-8 characters. */
static bool utf8_complete(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = s[i] < 0x80             ? 1
                   : (s[i] & 0xE0) == 0xC0 ? 2
                   : (s[i] & 0xF0) == 0xE0 ? 3
                   : (s[i] & 0xF8) == 0xF0 ? 4
                                           : 0;
        if (k == 0 || i + k > n)
            return false;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return false;
        i += k;
    }
    return true;
}

Test(tokenizer, streaming_detok_never_splits_a_character) {
    const char *input = "Zo\xc3\xab saw \xe2\x82\xac and \xf0\x9f\x98\x80 \xe6\x88\x91.";
    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    oxl_token toks[MAX_TOKS];
    int32_t n = tokenize(v, input, strlen(input), toks, true, false);
    oxl_detok d = {0};
    char all[512], chunk[64];
    size_t len = 0;
    int n_held = 0;
    for (int32_t i = 0; i < n; i++) {
        /* no room: refused without consuming anything */
        oxl_detok before = d;
        int32_t k = oxl_vocab_detok_push(&d, v, toks[i], chunk, 0);
        if (k < 0) {
            cr_expect_eq(memcmp(&before, &d, sizeof d), 0, "state changed by a refused push");
            k = oxl_vocab_detok_push(&d, v, toks[i], chunk, sizeof chunk);
        }
        cr_assert(k >= 0);
        cr_expect(utf8_complete((unsigned char *)chunk, (size_t)k), "token %d wrote a partial character", i);
        n_held += d.n_pending > 0;
        memcpy(all + len, chunk, (size_t)k);
        len += (size_t)k;
    }
    cr_expect_eq(d.n_pending, 0);
    cr_expect_gt(n_held, 0, "the input has byte-fallback characters, so some bytes must have been held");
    cr_expect(len == strlen(input) + 1 && all[0] == ' ' && memcmp(all + 1, input, strlen(input)) == 0,
              "stream gave '%.*s'", (int)len, all);
    oxl_vocab_free(v);
}

Test(tokenizer, streaming_detok_passes_invalid_bytes) {
    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    oxl_token b_e2 = oxl_test_file_token_id(STORIES, "<0xE2>"), b_ff = oxl_test_file_token_id(STORIES, "<0xFF>"),
              b_41 = oxl_test_file_token_id(STORIES, "<0x41>");
    oxl_detok d = {0};
    char out[16];
    /* 0xFF can never start a character: written at once */
    cr_expect_eq(oxl_vocab_detok_push(&d, v, b_ff, out, sizeof out), 1);
    cr_expect_eq((unsigned char)out[0], 0xFF);
    /* a lead byte waits; a following ASCII byte releases both */
    cr_expect_eq(oxl_vocab_detok_push(&d, v, b_e2, out, sizeof out), 0);
    cr_expect_eq(d.n_pending, 1);
    cr_expect_eq(oxl_vocab_detok_push(&d, v, b_41, out, sizeof out), 2);
    cr_expect(memcmp(out,
                     "\xe2"
                     "A",
                     2) == 0);
    /* at the end of the stream, flush writes what is held */
    cr_expect_eq(oxl_vocab_detok_push(&d, v, b_e2, out, sizeof out), 0);
    cr_expect_eq(oxl_detok_flush(&d, out, 0), -1);
    cr_expect_eq(oxl_detok_flush(&d, out, sizeof out), 1);
    cr_expect_eq((unsigned char)out[0], 0xE2);
    cr_expect_eq(d.n_pending, 0);
    oxl_vocab_free(v);
}

// --- special tokens, pieces, API conventions -------------------------------------------------------

Test(tokenizer, parse_special) {
    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    oxl_token a[MAX_TOKS], b[MAX_TOKS], c[MAX_TOKS];
    const char *s = "Hello<s>world";
    /* parsed: "Hello", BOS, then "world" with the space prefix llama.cpp adds after a special token */
    int32_t n = tokenize(v, s, strlen(s), a, false, true);
    int32_t n1 = tokenize(v, "Hello", 5, b, false, false);
    int32_t n2 = tokenize(v, "world", 5, c, false, false);
    cr_assert_eq(n, n1 + 1 + n2);
    cr_expect_eq(memcmp(a, b, (size_t)n1 * sizeof *a), 0);
    cr_expect_eq(a[n1], oxl_vocab_bos(v));
    cr_expect_eq(memcmp(a + n1 + 1, c, (size_t)n2 * sizeof *a), 0);
    /* not parsed: the text "<s>" is ordinary text */
    n = tokenize(v, s, strlen(s), a, false, false);
    for (int32_t i = 0; i < n; i++)
        cr_expect_neq(a[i], oxl_vocab_bos(v));
    oxl_vocab_free(v);
}

Test(tokenizer, phi3_special_tokens_strip_following_whitespace) {
    /* llama.cpp marks Phi-3's special tokens RSTRIP: the newline after "<|user|>" and "<|end|>"
     * disappears when they are parsed */
    const char *path = TOKDIR "ggml-vocab-phi-3.gguf";
    const oxl_token user = oxl_test_file_token_id(path, "<|user|>"), end = oxl_test_file_token_id(path, "<|end|>"),
                    assistant = oxl_test_file_token_id(path, "<|assistant|>");
    cr_assert(user >= 0 && end >= 0 && assistant >= 0);
    oxl_vocab *v = oxl_test_load_vocab(path);
    oxl_token a[MAX_TOKS], b[MAX_TOKS];
    const char *s = "<|user|>\nHello<|end|>\n<|assistant|>";
    int32_t n = tokenize(v, s, strlen(s), a, false, true);
    int32_t nh = tokenize(v, "Hello", 5, b, false, false);
    cr_assert_eq(n, nh + 3);
    cr_expect_eq(a[0], user);
    cr_expect_eq(memcmp(a + 1, b, (size_t)nh * sizeof *a), 0);
    cr_expect_eq(a[nh + 1], end);
    cr_expect_eq(a[nh + 2], assistant);
    cr_expect(oxl_vocab_is_eog(v, end), "<|end|> ends generation");
    cr_expect(oxl_vocab_is_eog(v, oxl_vocab_eos(v)));
    cr_expect(!oxl_vocab_is_eog(v, user));
    oxl_vocab_free(v);
}

Test(tokenizer, roundtrip_random_text) {
    /* text with stray continuation bytes and NULs survives tokenize → detokenize (byte fallback).
     * Not every byte string does, in llama.cpp either: spaces are escaped to U+2581 before the text
     * is cut into characters, so a lead byte before a space takes part of the escape into its
     * character and those bytes come back as U+2581's; and a literal U+2581 comes back as a space. */
    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    static oxl_token toks[MAX_TOKS];
    static char text[4 * MAX_TOKS];
    static const char *const parts[] = {
        "a",    "b",    " ",    "  ", "\n",  "<s>", "e", "\xc3\xa9", "\xe2\x82\xac", "x", "\xf0\x9f\x98\x80",
        "\x80", "\xa9", "\xbf", "\t", "Once"};
    uint64_t x = 12345;
    for (int k = 0; k < 300; k++) {
        char in[256];
        size_t len = 0;
        for (int i = 0; i < k % 40; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const char *part = parts[(x >> 33) % (sizeof parts / sizeof *parts)];
            memcpy(in + len, part, strlen(part));
            len += strlen(part);
        }
        if (k % 7 == 0)
            in[len++] = '\0';
        int32_t n = tokenize(v, in, len, toks, false, false);
        size_t dl = 0;
        for (int32_t i = 0; i < n; i++) {
            int32_t p = oxl_vocab_token_to_piece(v, toks[i], text + dl, (int32_t)(sizeof text - dl), false);
            cr_assert_geq(p, 0);
            if (i == 0 && p > 0 && text[0] == ' ') {
                memmove(text, text + 1, (size_t)p - 1);
                p--;
            }
            dl += (size_t)p;
        }
        cr_expect(dl == len && memcmp(text, in, len) == 0, "case %d (%zu bytes) did not round-trip", k, len);
    }
    oxl_vocab_free(v);
}

Test(tokenizer, special_pieces_and_ids) {
    oxl_vocab *v = oxl_test_load_vocab(STORIES);
    cr_expect_eq(oxl_vocab_n_tokens(v), 512);
    cr_expect_eq(oxl_vocab_bos(v), oxl_test_file_token_id(STORIES, "<s>"));
    cr_expect_eq(oxl_vocab_eos(v), oxl_test_file_token_id(STORIES, "</s>"));
    cr_expect(oxl_vocab_is_eog(v, oxl_vocab_eos(v)));
    cr_expect(!oxl_vocab_is_eog(v, oxl_vocab_bos(v)));
    cr_expect(!oxl_vocab_is_eog(v, -1) && !oxl_vocab_is_eog(v, 512));
    cr_expect_str_eq(oxl_vocab_model_name(v), "llama");
    char buf[16];
    cr_expect_eq(oxl_vocab_token_to_piece(v, oxl_vocab_bos(v), buf, sizeof buf, false), 0);
    cr_expect_eq(oxl_vocab_token_to_piece(v, oxl_vocab_bos(v), buf, sizeof buf, true), 3);
    cr_expect(memcmp(buf, "<s>", 3) == 0);
    cr_expect_eq(oxl_vocab_token_to_piece(v, oxl_vocab_bos(v), buf, 2, true), -3);
    cr_expect_eq(oxl_vocab_token_to_piece(v, 100000, buf, sizeof buf, true), 0);

    oxl_token t[4];
    /* an empty text with add_special is just BOS (SentencePiece's convention) */
    cr_expect_eq(oxl_vocab_tokenize(v, "", 0, t, 4, true, false), 1);
    cr_expect_eq(t[0], oxl_vocab_bos(v));
    cr_expect_eq(oxl_vocab_tokenize(v, "", 0, t, 4, false, false), 0);
    /* too small a buffer: minus the count needed */
    int32_t need = oxl_vocab_tokenize(v, "Once upon a time", 16, NULL, 0, true, false);
    cr_expect_lt(need, -1);
    cr_expect_eq(oxl_vocab_tokenize(v, "Once upon a time", 16, t, 1, true, false), need);
    cr_expect_eq(oxl_vocab_tokenize(v, NULL, 3, t, 4, true, false), INT32_MIN);
    cr_expect_eq(oxl_vocab_tokenize(v, "a", 1, t, -1, true, false), INT32_MIN);
    oxl_vocab_free(v);
}

// --- crafted vocabularies --------------------------------------------------------------------------

enum { T_UINT32 = 4, T_INT32 = 5, T_FLOAT32 = 6, T_STRING = 8 };

typedef struct {
    const char *model;
    const char *const *tokens;
    int n_tokens;
    const float *scores; /* NULL: no key */
    int n_scores;
    const int32_t *types; /* NULL: no key */
    int n_types;
    const char *u32_key; /* one extra uint32 key, or NULL */
    uint32_t u32_val;
} vocab_spec;

static oxl_craft craft_vocab(const vocab_spec *s) {
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 0, 2 + (s->scores != NULL) + (s->types != NULL) + (s->u32_key != NULL));
    oxl_craft_kv_str(&c, "tokenizer.ggml.model", s->model);
    oxl_craft_kv_array(&c, "tokenizer.ggml.tokens", T_STRING, (uint64_t)s->n_tokens);
    for (int i = 0; i < s->n_tokens; i++)
        oxl_craft_str(&c, s->tokens[i]);
    if (s->scores) {
        oxl_craft_kv_array(&c, "tokenizer.ggml.scores", T_FLOAT32, (uint64_t)s->n_scores);
        for (int i = 0; i < s->n_scores; i++)
            oxl_craft_f32(&c, s->scores[i]);
    }
    if (s->types) {
        oxl_craft_kv_array(&c, "tokenizer.ggml.token_type", T_INT32, (uint64_t)s->n_types);
        for (int i = 0; i < s->n_types; i++)
            oxl_craft_u32(&c, (uint32_t)s->types[i]);
    }
    if (s->u32_key)
        oxl_craft_kv_u32(&c, s->u32_key, s->u32_val);
    oxl_craft_pad(&c, 32);
    return c;
}

/* Loads a crafted vocabulary; NULL with the message in err when it is refused. */
static oxl_vocab *load_crafted(const vocab_spec *s, oxl_error *err) {
    oxl_craft c = craft_vocab(s);
    oxl_gguf *g = oxl_gguf_open_memory(c.buf, c.len, "crafted.gguf", err);
    cr_assert_not_null(g, "crafted file refused by the reader: %s", err->msg);
    oxl_vocab *v = oxl_vocab_load(g, err);
    oxl_gguf_close(g);
    oxl_craft_free(&c);
    return v;
}

/* 0 <unk>, 1 <s>, 2 </s>, 3 ▁, 4 a, 5 b, 6 c, 7 ab, 8 bc, 9 an invalid UTF-8 token */
static const char *const k_small[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "a", "b", "c", "ab", "bc", "\xff\xfe"};
static const int32_t k_small_types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1};

static void check_ids(const oxl_vocab *v, const char *text, const oxl_token *expect, int32_t n_expect) {
    oxl_token t[16];
    int32_t n = oxl_vocab_tokenize(v, text, strlen(text), t, 16, false, false);
    cr_assert_eq(n, n_expect, "'%s': %d tokens, expected %d", text, n, n_expect);
    for (int32_t i = 0; i < n; i++)
        cr_expect_eq(t[i], expect[i], "'%s' token %d: %d, expected %d", text, i, t[i], expect[i]);
}

Test(tokenizer, merge_priority_by_score_then_leftmost) {
    oxl_error err = {{0}};
    float scores[10] = {0};
    vocab_spec s = {"llama", k_small, 10, scores, 10, k_small_types, 10, NULL, 0};
    /* "abc": merging "ab" and "bc" compete for "b"; the higher score wins, equal scores the left one */
    scores[7] = -1.0f, scores[8] = -2.0f;
    oxl_vocab *v = load_crafted(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    check_ids(v, "abc", (const oxl_token[]){3, 7, 6}, 3);
    oxl_vocab_free(v);
    scores[7] = -2.0f, scores[8] = -1.0f;
    v = load_crafted(&s, &err);
    check_ids(v, "abc", (const oxl_token[]){3, 4, 8}, 3);
    oxl_vocab_free(v);
    scores[7] = scores[8] = -1.0f;
    v = load_crafted(&s, &err);
    check_ids(v, "abc", (const oxl_token[]){3, 7, 6}, 3);
    /* no byte tokens: an unknown character falls back to <unk>, once per byte */
    check_ids(v, "z\xc3\xa9", (const oxl_token[]){3, 0, 0, 0}, 4);
    /* a token that is not valid UTF-8 still matches its bytes */
    check_ids(v, "\xff\xfe", (const oxl_token[]){3, 9}, 2);
    oxl_vocab_free(v);
}

static const float k_zero9[9];
static const char *const k_dup[] = {"<unk>", "a", "a"};
static const char *const k_badbyte[] = {"<unk>", "<0xZZ>"};
static const int32_t k_badbyte_types[] = {2, 6};

Test(tokenizer, load_errors_name_the_key) {
    static const struct {
        vocab_spec spec;
        const char *needle;
    } bad[] = {
        {{"rwkv", k_small, 10, NULL, 0, NULL, 0, NULL, 0}, "tokenizer.ggml.model"},
        {{"llama", k_small, 10, k_zero9, 9, NULL, 0, NULL, 0}, "tokenizer.ggml.scores"},
        {{"llama", k_small, 10, NULL, 0, k_small_types, 9, NULL, 0}, "tokenizer.ggml.token_type"},
        {{"llama", k_small, 10, NULL, 0, NULL, 0, "tokenizer.ggml.bos_token_id", 10}, "tokenizer.ggml.bos_token_id"},
        {{"llama", k_small, 10, NULL, 0, NULL, 0, "tokenizer.ggml.eos_token_id", 4000000000u},
         "tokenizer.ggml.eos_token_id"},
        {{"llama", k_dup, 3, NULL, 0, NULL, 0, NULL, 0}, "tokenizer.ggml.tokens[2]"},
        {{"llama", k_badbyte, 2, NULL, 0, k_badbyte_types, 2, NULL, 0}, "tokenizer.ggml.tokens[1]"},
        {{"llama", k_small, 0, NULL, 0, NULL, 0, NULL, 0}, "tokenizer.ggml.tokens"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        oxl_error err = {{0}};
        oxl_vocab *v = load_crafted(&bad[k].spec, &err);
        cr_expect_null(v, "case %zu loaded", k);
        cr_expect(strstr(err.msg, bad[k].needle) != NULL, "case %zu: '%s' does not name %s", k, err.msg, bad[k].needle);
        cr_expect(strstr(err.msg, "crafted.gguf") != NULL, "case %zu: '%s' does not name the file", k, err.msg);
        oxl_vocab_free(v);
    }
}

Test(tokenizer, none_sentinel_and_flags) {
    oxl_error err = {{0}};
    /* 0xFFFFFFFF means "no such token" (stories260K writes it for the separator and padding) */
    vocab_spec s = {"llama", k_small, 10, NULL, 0, k_small_types, 10, "tokenizer.ggml.bos_token_id", 0xFFFFFFFFu};
    oxl_vocab *v = load_crafted(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    cr_expect_eq(oxl_vocab_bos(v), -1);
    /* add_bos is on by default, but there is no BOS to add */
    oxl_token t[4];
    cr_expect_eq(oxl_vocab_tokenize(v, "a", 1, t, 4, true, false), 2);
    cr_expect_eq(t[0], 3);
    oxl_vocab_free(v);
}
