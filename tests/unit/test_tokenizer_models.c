/* BPE, WordPiece and unigram tokenizers: llama.cpp's conformance fixtures for every vocabulary of
 * golden/tokenizer (gpt-2 and bert-bge, always) and ../shared/golden/tokenizer (the other BPE
 * vocabularies, when present), special tokens, add_special, detokenization with llama.cpp's space
 * clean-up, and crafted vocabularies whose expected ids follow from llama.cpp's rules (merge ranks,
 * Viterbi scores, the precompiled normalizer), including malformed ones. */
#include "gguf.h"
#include "gguf_craft.h"
#include "golden.h"
#include "vocab.h"
#include "vocab_internal.h"

#include "vocab_test_util.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKDIR OXL_SOURCE_DIR "/golden/tokenizer/"
#define SHARED_TOKDIR OXL_SOURCE_DIR "/../shared/golden/tokenizer/"

static int32_t tok(const oxl_vocab *v, const char *s, oxl_token *out, int32_t cap, bool add_special, bool parse) {
    int32_t n = oxl_vocab_tokenize(v, s, strlen(s), out, cap, add_special, parse);
    cr_assert(n >= 0 && n <= cap, "'%s': tokenize returned %d", s, n);
    return n;
}

// --- llama.cpp's fixtures ------------------------------------------------------------------------------

/* Every string must give llama.cpp's ids, and every string the vocabulary can represent must come
 * back from them (the golden checker's round-trip lines). */
static void run_fixture(const char *path) {
    oxl_golden_report r = {0};
    oxl_error err = {{0}};
    cr_assert_eq(oxl_golden_tokenizer(path, &r, &err), 0, "%s", err.msg);
    if (r.n_fail) {
        oxl_golden_report loud = {.out = stderr};
        oxl_golden_tokenizer(path, &loud, &err);
    }
    cr_expect_eq(r.n_fail, 0, "%s: %d of %d checks differ", path, r.n_fail, r.n_fail + r.n_pass);
    cr_expect_geq(r.n_pass, 46);
}

static void run_shared_fixture(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%sggml-vocab-%s.gguf", SHARED_TOKDIR, name);
    OXL_TEST_SHARED_FIXTURE(path, "kept in the shared reference set only");
    run_fixture(path);
}

Test(tokenizer_models, fixture_gpt2) { run_fixture(TOKDIR "ggml-vocab-gpt-2.gguf"); }
Test(tokenizer_models, fixture_bert_bge) { run_fixture(TOKDIR "ggml-vocab-bert-bge.gguf"); }
Test(tokenizer_models, fixture_llama_bpe) { run_shared_fixture("llama-bpe"); }
Test(tokenizer_models, fixture_gpt_neox) { run_shared_fixture("gpt-neox"); }
Test(tokenizer_models, fixture_falcon) { run_shared_fixture("falcon"); }
Test(tokenizer_models, fixture_mpt) { run_shared_fixture("mpt"); }
Test(tokenizer_models, fixture_starcoder) { run_shared_fixture("starcoder"); }
Test(tokenizer_models, fixture_refact) { run_shared_fixture("refact"); }
Test(tokenizer_models, fixture_deepseek_llm) { run_shared_fixture("deepseek-llm"); }
Test(tokenizer_models, fixture_deepseek_coder) { run_shared_fixture("deepseek-coder"); }
Test(tokenizer_models, fixture_qwen2) { run_shared_fixture("qwen2"); }
Test(tokenizer_models, fixture_qwen35) { run_shared_fixture("qwen35"); }

// --- every pre-tokenizer against llama.cpp's splits ----------------------------------------------------

/* golden/tokenizer/pretokenize.splits holds, for each string of pretokenize.inp and each
 * tokenizer.ggml.pre value llama.cpp knows (one per pre-tokenizer type), the lengths in code points of
 * the words llama.cpp's unicode_regex_split gives (see golden/tokenizer/PROVENANCE.md). */
Test(tokenizer_models, every_pre_tokenizer_splits_as_llama_cpp) {
    size_t n_inp, n_spl;
    char *inp = oxl_test_slurp(TOKDIR "pretokenize.inp", &n_inp),
         *spl = oxl_test_slurp(TOKDIR "pretokenize.splits", &n_spl);
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const char *str[512];
    size_t len[512];
    int n_str = 0;
    for (char *s = inp; s < inp + n_inp && n_str < 512;) {
        char *e = memmem(s, (size_t)(inp + n_inp - s), sep, sizeof sep - 1);
        cr_assert_not_null(e);
        str[n_str] = s, len[n_str++] = (size_t)(e - s);
        s = e + sizeof sep - 1;
    }
    oxl_words w = {0};
    int n_checked = 0;
    char names_seen[4096] = "";
    for (char *line = strtok(spl, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        cr_assert(t1 && t2, "bad line '%s'", line);
        *t1 = *t2 = '\0';
        int idx = atoi(line);
        cr_assert(idx >= 0 && idx < n_str);
        static long want[4096];
        int n_want = 0;
        for (char *q = t1 + 1; *q;) {
            cr_assert_lt(n_want, 4096);
            want[n_want++] = strtol(q, &q, 10);
            while (*q == ' ')
                q++;
        }
        char *save = NULL;
        for (char *name = strtok_r(t2 + 1, " ", &save); name; name = strtok_r(NULL, " ", &save)) {
            unsigned flags;
            oxl_error err = {{0}};
            oxl_pretok *p = oxl_pretok_new(strcmp(name, "default") == 0 ? "" : name, &flags, "test", &err);
            cr_assert_not_null(p, "%s", err.msg);
            cr_assert(oxl_pretok_split(p, str[idx], len[idx], true, &w));
            bool same = (int)w.n == n_want;
            for (size_t k = 0; same && k < w.n; k++) {
                long cpts = 0;
                for (size_t b = w.off[k]; b < w.off[k + 1]; b++)
                    cpts += ((unsigned char)w.buf[b] & 0xC0) != 0x80;
                same = cpts == want[k];
            }
            cr_expect(same, "pre-tokenizer '%s', string %d: %zu words, llama.cpp %d", name, idx, w.n, n_want);
            oxl_pretok_free(p);
            if (!strstr(names_seen, name) && strlen(names_seen) + strlen(name) + 2 < sizeof names_seen) {
                strcat(names_seen, name);
                strcat(names_seen, ",");
            }
            n_checked++;
        }
    }
    oxl_words_free(&w);
    cr_expect_gt(n_checked, 10000);
    cr_expect(strstr(names_seen, "kimi-k2,") && strstr(names_seen, "tekken,") && strstr(names_seen, "superbpe,"));
    free(inp);
    free(spl);
}

/* Llama 3 (shared set, described in its SOURCES.md): BOS 128000 added, "<|eot_id|>" is 128009 when
 * parsed, and "<|begin_of_text|>" is 128000; pieces of control tokens only with special. */
Test(tokenizer_models, llama3_bos_and_special_tokens) {
    const char *path = SHARED_TOKDIR "ggml-vocab-llama-bpe.gguf";
    OXL_TEST_SHARED_FIXTURE(path, "kept in the shared reference set only");
    oxl_vocab *v = oxl_test_load_vocab(path);
    oxl_token t[32], u[32];
    int32_t n = tok(v, "Hello", t, 32, true, false);
    cr_assert_geq(n, 2);
    cr_expect_eq(t[0], 128000);
    cr_expect_eq(oxl_vocab_bos(v), 128000);
    int32_t m = tok(v, "Hello", u, 32, false, false);
    cr_assert_eq(m, n - 1);
    for (int32_t i = 0; i < m; i++)
        cr_expect_eq(u[i], t[i + 1]);
    n = tok(v, "<|begin_of_text|>Hi<|eot_id|>", t, 32, false, true);
    cr_assert_geq(n, 3);
    cr_expect_eq(t[0], 128000);
    cr_expect_eq(t[n - 1], 128009);
    cr_expect(oxl_vocab_is_eog(v, 128009));
    char out[64];
    int32_t k = oxl_vocab_detokenize(v, t, n, out, sizeof out, false, true);
    cr_expect(k == 29 && memcmp(out, "<|begin_of_text|>Hi<|eot_id|>", 29) == 0, "'%.*s'", k, out);
    k = oxl_vocab_detokenize(v, t, n, out, sizeof out, true, false);
    cr_expect(k == 2 && memcmp(out, "Hi", 2) == 0, "'%.*s'", k, out);
    oxl_vocab_free(v);
}

// --- GPT-2: special tokens, bytes, detokenization ------------------------------------------------------

#define GPT2 TOKDIR "ggml-vocab-gpt-2.gguf"

Test(tokenizer_models, gpt2_special_token_only_when_parsed) {
    oxl_vocab *v = oxl_test_load_vocab(GPT2);
    int32_t eot = oxl_test_file_token_id(GPT2, "<|endoftext|>"), a = oxl_test_file_token_id(GPT2, "a"),
            b = oxl_test_file_token_id(GPT2, "b");
    cr_assert(eot >= 0 && a >= 0 && b >= 0);
    oxl_token t[64];
    int32_t n = tok(v, "a<|endoftext|>b", t, 64, false, true);
    cr_assert_eq(n, 3);
    cr_expect(t[0] == a && t[1] == eot && t[2] == b, "ids %d %d %d", t[0], t[1], t[2]);
    n = tok(v, "a<|endoftext|>b", t, 64, false, false);
    cr_expect_gt(n, 3);
    for (int32_t i = 0; i < n; i++)
        cr_expect_neq(t[i], eot, "the text of a control token became the token without parse_special");
    /* a control token renders only when asked */
    char buf[32];
    cr_expect_eq(oxl_vocab_token_to_piece(v, eot, buf, sizeof buf, false), 0);
    cr_expect_eq(oxl_vocab_token_to_piece(v, eot, buf, sizeof buf, true), 13);
    oxl_vocab_free(v);
}

Test(tokenizer_models, gpt2_byte_level_pieces) {
    oxl_vocab *v = oxl_test_load_vocab(GPT2);
    /* "Ġworld": GPT-2's byte map writes the space byte 0x20 as U+0120 */
    int32_t world = oxl_test_file_token_id(GPT2, "\xc4\xa0world");
    cr_assert_geq(world, 0);
    char buf[16];
    cr_assert_eq(oxl_vocab_token_to_piece(v, world, buf, sizeof buf, false), 6);
    cr_expect_eq(memcmp(buf, " world", 6), 0);
    /* "Ċ" is the newline byte */
    int32_t nl = oxl_test_file_token_id(GPT2, "\xc4\x8a");
    cr_assert_geq(nl, 0);
    oxl_token t[8];
    cr_assert_eq(tok(v, "\n", t, 8, false, false), 1);
    cr_expect_eq(t[0], nl);
    /* an invalid byte is read as U+FFFD, as llama.cpp's decoder does */
    oxl_token u[8];
    int32_t n = tok(v, "\xef\xbf\xbd", u, 8, false, false);
    cr_assert_eq(tok(v, "\xff", t, 8, false, false), n);
    for (int32_t i = 0; i < n; i++)
        cr_expect_eq(t[i], u[i]);
    oxl_vocab_free(v);
}

/* llama.cpp's clean_up_tokenization_spaces for GPT-2: no space before , . ! ? and 's 'm 're 've;
 * " ' " becomes "'". */
Test(tokenizer_models, gpt2_detokenize_cleans_spaces) {
    oxl_vocab *v = oxl_test_load_vocab(GPT2);
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"Hello , world !", "Hello, world!"},
        {"it 's fine , we 're here", "it's fine, we're here"},
        {"don 't", "don 't"},
        {"a ' b", "a'b"},
        {" leading", " leading"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        oxl_token t[64];
        int32_t n = tok(v, cases[k].in, t, 64, false, false);
        char out[128];
        int32_t m = oxl_vocab_detokenize(v, t, n, out, sizeof out, false, false);
        cr_assert_geq(m, 0);
        cr_expect(m == (int32_t)strlen(cases[k].out) && memcmp(out, cases[k].out, (size_t)m) == 0,
                  "'%s' came back as '%.*s'", cases[k].in, m, out);
        /* too small a buffer: minus the size needed */
        cr_expect_lt(oxl_vocab_detokenize(v, t, n, out, 1, false, false), 0);
    }
    oxl_vocab_free(v);
}

// --- WordPiece (bert-bge) --------------------------------------------------------------------------------

#define BGE TOKDIR "ggml-vocab-bert-bge.gguf"

Test(tokenizer_models, wpm_cls_sep_lowercase_accents) {
    oxl_vocab *v = oxl_test_load_vocab(BGE);
    int32_t cls = oxl_test_file_token_id(BGE, "[CLS]"), sep = oxl_test_file_token_id(BGE, "[SEP]");
    cr_assert(cls >= 0 && sep >= 0);
    oxl_token t[32], u[32];
    int32_t n = tok(v, "Hello world", t, 32, true, false);
    cr_assert_geq(n, 3);
    cr_expect_eq(t[0], cls);
    cr_expect_eq(t[n - 1], sep);
    /* lowercased, accents stripped (NFD, marks dropped) */
    cr_assert_eq(tok(v, "hello world", u, 32, true, false), n);
    for (int32_t i = 0; i < n; i++)
        cr_expect_eq(t[i], u[i]);
    int32_t a = tok(v, "CAF\xc3\x89", t, 32, false, false), b = tok(v, "cafe", u, 32, false, false);
    cr_assert_eq(a, b);
    for (int32_t i = 0; i < a; i++)
        cr_expect_eq(t[i], u[i]);
    /* punctuation is a word of its own; words are "▁"-prefixed tokens */
    int32_t hello = oxl_test_file_token_id(BGE, "\xe2\x96\x81hello"),
            comma = oxl_test_file_token_id(BGE, "\xe2\x96\x81,");
    cr_assert(hello >= 0 && comma >= 0);
    cr_assert_eq(tok(v, "hello,hello", t, 32, false, false), 3);
    cr_expect(t[0] == hello && t[1] == comma && t[2] == hello);
    /* a character no token starts with makes its word [UNK] */
    int32_t unk = oxl_test_file_token_id(BGE, "[UNK]");
    cr_assert_eq(tok(v, "\xe2\x98\x83", t, 32, false, false), 1);
    cr_expect_eq(t[0], unk);
    oxl_vocab_free(v);
}

// --- crafted vocabularies --------------------------------------------------------------------------------

enum { T_UINT8 = 0, T_INT32 = 5, T_FLOAT32 = 6, T_BOOL = 7, T_STRING = 8 };

typedef struct {
    const char *model, *pre; /* pre: NULL for no key */
    const char *const *tokens;
    int n_tokens;
    const float *scores; /* NULL: no key */
    const int32_t *types;
    const char *const *merges; /* NULL: no key */
    int n_merges;
    const uint8_t *charsmap; /* NULL: no key */
    size_t n_charsmap;
    int add_space_prefix, remove_extra_ws; /* -1: no key */
} spec;

static oxl_vocab *load_spec(const spec *s, oxl_error *err) {
    oxl_craft c = {0};
    int n_kv = 2 + (s->pre != NULL) + (s->scores != NULL) + (s->types != NULL) + (s->merges != NULL) +
               (s->charsmap != NULL) + (s->add_space_prefix >= 0) + (s->remove_extra_ws >= 0);
    oxl_craft_header(&c, 3, 0, (uint64_t)n_kv);
    oxl_craft_kv_str(&c, "tokenizer.ggml.model", s->model);
    if (s->pre)
        oxl_craft_kv_str(&c, "tokenizer.ggml.pre", s->pre);
    oxl_craft_kv_array(&c, "tokenizer.ggml.tokens", T_STRING, (uint64_t)s->n_tokens);
    for (int i = 0; i < s->n_tokens; i++)
        oxl_craft_str(&c, s->tokens[i]);
    if (s->scores) {
        oxl_craft_kv_array(&c, "tokenizer.ggml.scores", T_FLOAT32, (uint64_t)s->n_tokens);
        for (int i = 0; i < s->n_tokens; i++)
            oxl_craft_f32(&c, s->scores[i]);
    }
    if (s->types) {
        oxl_craft_kv_array(&c, "tokenizer.ggml.token_type", T_INT32, (uint64_t)s->n_tokens);
        for (int i = 0; i < s->n_tokens; i++)
            oxl_craft_u32(&c, (uint32_t)s->types[i]);
    }
    if (s->merges) {
        oxl_craft_kv_array(&c, "tokenizer.ggml.merges", T_STRING, (uint64_t)s->n_merges);
        for (int i = 0; i < s->n_merges; i++)
            oxl_craft_str(&c, s->merges[i]);
    }
    if (s->charsmap) {
        oxl_craft_kv_array(&c, "tokenizer.ggml.precompiled_charsmap", T_UINT8, s->n_charsmap);
        oxl_craft_bytes(&c, s->charsmap, s->n_charsmap);
    }
    if (s->add_space_prefix >= 0) {
        oxl_craft_kv_begin(&c, "tokenizer.ggml.add_space_prefix", T_BOOL);
        oxl_craft_u8(&c, (uint8_t)s->add_space_prefix);
    }
    if (s->remove_extra_ws >= 0) {
        oxl_craft_kv_begin(&c, "tokenizer.ggml.remove_extra_whitespaces", T_BOOL);
        oxl_craft_u8(&c, (uint8_t)s->remove_extra_ws);
    }
    oxl_craft_pad(&c, 32);
    oxl_gguf *g = oxl_gguf_open_memory(c.buf, c.len, "crafted.gguf", err);
    cr_assert_not_null(g, "crafted file refused by the reader: %s", err->msg);
    oxl_vocab *v = oxl_vocab_load(g, err);
    oxl_gguf_close(g);
    oxl_craft_free(&c);
    return v;
}

static void expect_ids(const oxl_vocab *v, const char *text, bool add_special, const oxl_token *want, int32_t n_want) {
    oxl_token t[32];
    int32_t n = tok(v, text, t, 32, add_special, false);
    cr_assert_eq(n, n_want, "'%s': %d ids, expected %d", text, n, n_want);
    for (int32_t i = 0; i < n; i++)
        cr_expect_eq(t[i], want[i], "'%s' id %d: %d, expected %d", text, i, t[i], want[i]);
}

/* 0 a, 1 b, 2 c, 3 ab, 4 bc, 5 abc, 6 aa, 7 aaaa */
static const char *const k_bpe_tokens[] = {"a", "b", "c", "ab", "bc", "abc", "aa", "aaaa"};

Test(tokenizer_models, bpe_merges_by_rank) {
    oxl_error err = {{0}};
    /* "a b" first, then "ab c": abc is one token */
    static const char *const m1[] = {"a b", "ab c", "b c"};
    spec s = {"gpt2", "gpt-2", k_bpe_tokens, 8, NULL, NULL, m1, 3, NULL, 0, -1, -1};
    oxl_vocab *v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    expect_ids(v, "abc", false, (const oxl_token[]){5}, 1);
    oxl_vocab_free(v);
    /* "b c" ranks first: a + bc, which no merge joins */
    static const char *const m2[] = {"b c", "a b", "ab c"};
    s.merges = m2;
    v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    expect_ids(v, "abc", false, (const oxl_token[]){0, 4}, 2);
    oxl_vocab_free(v);
}

Test(tokenizer_models, bpe_malformed_merges_degrade) {
    oxl_error err = {{0}};
    /* unknown tokens, an empty entry, one without a space, invalid UTF-8: loaded, never applied
     * wrongly; "a b" is listed twice and keeps its first rank */
    static const char *const m[] = {"x y", "", "abc", "\xff \xfe", "a b", "ab c", "a b"};
    static const char *const toks[] = {"a", "b", "c", "ab", "bc", "abc", "\xff\xfe", "\xc3"};
    spec s = {"gpt2", "gpt-2", toks, 8, NULL, NULL, m, 7, NULL, 0, -1, -1};
    oxl_vocab *v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    expect_ids(v, "abc", false, (const oxl_token[]){5}, 1);
    /* 'é' is bytes C3 A9, byte-encoded as "Ã" (C3 83) and "©" (C2 A9); neither is a token, so the
     * bytes of each symbol are looked up one by one: only the one-byte text "\xc3" (id 7) is a token
     * (llama.cpp's byte fallback for byte-level vocabularies) */
    expect_ids(v, "\xc3\xa9", false, (const oxl_token[]){7}, 1);
    oxl_vocab_free(v);
}

Test(tokenizer_models, bpe_huge_repetition) {
    oxl_error err = {{0}};
    static const char *const m[] = {"a a", "aa aa"};
    spec s = {"gpt2", "gpt-2", k_bpe_tokens, 8, NULL, NULL, m, 2, NULL, 0, -1, -1};
    oxl_vocab *v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    /* 2^20 letters are one word; pairs merge left to right into "aa", then into "aaaa" */
    size_t len = (size_t)1 << 20;
    char *text = malloc(len);
    oxl_token *t = malloc((len / 4 + 1) * sizeof *t);
    cr_assert(text && t);
    memset(text, 'a', len);
    int32_t n = oxl_vocab_tokenize(v, text, len, t, (int32_t)(len / 4 + 1), false, false);
    cr_assert_eq(n, (int32_t)(len / 4));
    for (int32_t i = 0; i < n; i++)
        if (t[i] != 7)
            cr_assert_fail("id %d is %d, expected 7", i, t[i]);
    free(text);
    free(t);
    oxl_vocab_free(v);
}

Test(tokenizer_models, bpe_load_errors_name_the_key) {
    static const char *const m[] = {"a b"};
    static const struct {
        spec s;
        const char *needle;
    } bad[] = {
        {{"gpt2", "gpt-2", k_bpe_tokens, 8, NULL, NULL, NULL, 0, NULL, 0, -1, -1}, "tokenizer.ggml.merges"},
        {{"gpt2", "no-such-pre", k_bpe_tokens, 8, NULL, NULL, m, 1, NULL, 0, -1, -1}, "no-such-pre"},
        {{"rwkv", NULL, k_bpe_tokens, 8, NULL, NULL, NULL, 0, NULL, 0, -1, -1}, "tokenizer.ggml.model"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        oxl_error err = {{0}};
        oxl_vocab *v = load_spec(&bad[k].s, &err);
        cr_expect_null(v, "case %zu loaded", k);
        cr_expect(strstr(err.msg, bad[k].needle) && strstr(err.msg, "crafted.gguf"), "case %zu: '%s'", k, err.msg);
        oxl_vocab_free(v);
    }
}

/* No tokenizer.ggml.pre: llama.cpp's default pre-tokenizer (punctuation runs apart, GPT-2's rules,
 * digit runs, then three-digit groups). */
Test(tokenizer_models, bpe_default_pre_tokenizer) {
    oxl_error err = {{0}};
    static const char *const toks[] = {"1", "2", "3", "4", "12", "123", "1234", "!", "!!", "a"};
    static const char *const m[] = {"1 2", "12 3", "123 4", "! !"};
    spec s = {"gpt2", NULL, toks, 10, NULL, NULL, m, 4, NULL, 0, -1, -1};
    oxl_vocab *v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    /* "1234" splits into "123" + "4" before merging; "!!" stays one run */
    expect_ids(v, "1234", false, (const oxl_token[]){5, 3}, 2);
    expect_ids(v, "!!a", false, (const oxl_token[]){8, 9}, 2);
    oxl_vocab_free(v);
}

/* tokenizer.ggml.model = "whitespace": whitespace separates, each run is BPE-tokenized on raw UTF-8
 * (its pre-tokenizer keeps case: "AB" has no token and no byte token, so it is dropped). */
Test(tokenizer_models, whitespace_model) {
    oxl_error err = {{0}};
    static const char *const toks[] = {"ab", "a", "b", "cd", "c", "d"};
    static const char *const m[] = {"a b", "c d"};
    spec s = {"whitespace", "whitespace", toks, 6, NULL, NULL, m, 2, NULL, 0, -1, -1};
    oxl_vocab *v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    expect_ids(v, "ab  cd\tab", false, (const oxl_token[]){0, 3, 0}, 3);
    expect_ids(v, "AB cd", false, (const oxl_token[]){3}, 1);
    oxl_vocab_free(v);
}

/* tokenizer.ggml.model = "gemma4": spaces become U+2581, only newline runs split the text, a newline
 * run that is a token stays whole, and a byte without a token falls back to its <0xXX> token. */
Test(tokenizer_models, gemma4_model) {
    oxl_error err = {{0}};
    static const char *const toks[] = {"\xe2\x96\x81",
                                       "a",
                                       "\xe2\x96\x81"
                                       "a",
                                       "\n",
                                       "\n\n",
                                       "<0x7A>"};
    static const int32_t types[] = {1, 1, 1, 1, 1, 6};
    static const char *const m[] = {"\xe2\x96\x81 a"};
    spec s = {"gemma4", NULL, toks, 6, NULL, types, m, 1, NULL, 0, -1, -1};
    oxl_vocab *v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    expect_ids(v, " a\n\nz", false, (const oxl_token[]){2, 4, 5}, 3);
    char out[16];
    int32_t n = oxl_vocab_detokenize(v, (const oxl_token[]){2, 4, 5}, 3, out, sizeof out, false, false);
    cr_expect(n == 5 && memcmp(out, " a\n\nz", 5) == 0, "'%.*s'", n, out);
    oxl_vocab_free(v);
}

// --- unigram (T5-style) ------------------------------------------------------------------------------------

/* 0 <pad>, 1 </s>, 2 <unk>, 3 ▁, 4 ▁a, 5 a, 6 b, 7 ▁ab, 8 y, 9 ▁y */
static const char *const k_ugm_tokens[] = {"<pad>",
                                           "</s>",
                                           "<unk>",
                                           "\xe2\x96\x81",
                                           "\xe2\x96\x81"
                                           "a",
                                           "a",
                                           "b",
                                           "\xe2\x96\x81"
                                           "ab",
                                           "y",
                                           "\xe2\x96\x81"
                                           "y"};
static const float k_ugm_scores[] = {0, 0, 0, -2, -1, -3, -3, -1.5f, -3, -1};
static const int32_t k_ugm_types[] = {3, 3, 2, 1, 1, 1, 1, 1, 1, 1};

/* A precompiled charsmap mapping "x" to "y": the double array's root (node 0) has BASE 1, so "x"
 * (0x78) leads to node 1 ^ 0x78 = 121, whose LCHECK is 0x78 and LEAF bit set; its BASE 3 points to
 * node 121 ^ 3 = 122, whose value 0 is the offset of "y" in the replacement strings. */
static size_t ugm_charsmap(uint8_t *out, uint32_t blob_override) {
    uint32_t xcda[123] = {0};
    xcda[0] = 1u << 10;
    xcda[121] = (3u << 10) | (1u << 8) | 0x78;
    xcda[122] = 0;
    uint32_t blob = blob_override ? blob_override : (uint32_t)sizeof xcda;
    size_t n = 0;
    for (int b = 0; b < 4; b++)
        out[n++] = (uint8_t)(blob >> (8 * b));
    for (size_t i = 0; i < 123; i++)
        for (int b = 0; b < 4; b++)
            out[n++] = (uint8_t)(xcda[i] >> (8 * b));
    out[n++] = 'y';
    out[n++] = 0;
    return n;
}

Test(tokenizer_models, ugm_viterbi_normalizer_and_eos) {
    oxl_error err = {{0}};
    uint8_t cm[4 + 123 * 4 + 2];
    size_t ncm = ugm_charsmap(cm, 0);
    spec s = {"t5", NULL, k_ugm_tokens, 10, k_ugm_scores, k_ugm_types, NULL, 0, cm, ncm, 1, 1};
    oxl_vocab *v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    /* "▁ab" (-1.5) beats "▁a" + "b" (-4) */
    expect_ids(v, "ab", false, (const oxl_token[]){7}, 1);
    /* spaces merge (remove_extra_whitespaces): "▁a▁b" = ▁a + ▁ + b */
    expect_ids(v, "a   b", false, (const oxl_token[]){4, 3, 6}, 3);
    /* unknown characters: one <unk> for the run */
    expect_ids(v, "zz", false, (const oxl_token[]){3, 2}, 2);
    /* the charsmap turns "x" into "y" */
    expect_ids(v, "x", false, (const oxl_token[]){9}, 1);
    /* add_special: T5 appends </s> (id 1 by default) and adds no BOS */
    expect_ids(v, "ab", true, (const oxl_token[]){7, 1}, 2);
    /* detokenize drops the space the prefix added, and </s> when removing specials */
    char out[16];
    int32_t m = oxl_vocab_detokenize(v, (const oxl_token[]){9, 1}, 2, out, sizeof out, true, false);
    cr_expect(m == 1 && out[0] == 'y', "detokenized to '%.*s'", m, out);
    oxl_vocab_free(v);
}

Test(tokenizer_models, ugm_malformed_charsmap) {
    oxl_error err = {{0}};
    uint8_t cm[4 + 123 * 4 + 2];
    size_t ncm = ugm_charsmap(cm, 4096); /* the double array claims more bytes than the key has */
    spec s = {"t5", NULL, k_ugm_tokens, 10, k_ugm_scores, k_ugm_types, NULL, 0, cm, ncm, 1, 0};
    oxl_vocab *v = load_spec(&s, &err);
    cr_expect_null(v);
    cr_expect(strstr(err.msg, "tokenizer.ggml.precompiled_charsmap") != NULL, "'%s'", err.msg);
    oxl_vocab_free(v);
    /* a replacement offset past the strings is ignored: "x" stays itself, an unknown character */
    ncm = ugm_charsmap(cm, 0);
    cm[4 + 122 * 4] = 0x40;
    v = load_spec(&s, &err);
    cr_assert_not_null(v, "%s", err.msg);
    expect_ids(v, "x", false, (const oxl_token[]){3, 2}, 2);
    oxl_vocab_free(v);
}

// --- detokenization of special tokens (SPM) ------------------------------------------------------------

Test(tokenizer_models, detokenize_remove_and_unparse_special) {
    oxl_vocab *v = oxl_test_load_vocab(TOKDIR "ggml-vocab-llama-spm.gguf");
    oxl_token t[16];
    int32_t n = tok(v, "Hello", t, 16, true, false);
    cr_assert_geq(n, 2);
    cr_assert_eq(t[0], 1);
    char out[64];
    /* removing the BOS also keeps the space prefix (llama.cpp's detokenize) */
    int32_t m = oxl_vocab_detokenize(v, t, n, out, sizeof out, true, false);
    cr_expect(m == 6 && memcmp(out, " Hello", 6) == 0, "'%.*s'", m, out);
    m = oxl_vocab_detokenize(v, t + 1, n - 1, out, sizeof out, true, false);
    cr_expect(m == 5 && memcmp(out, "Hello", 5) == 0, "'%.*s'", m, out);
    m = oxl_vocab_detokenize(v, t, n, out, sizeof out, false, true);
    cr_expect(m == 9 && memcmp(out, "<s> Hello", 9) == 0, "'%.*s'", m, out);
    m = oxl_vocab_detokenize(v, t, n, out, sizeof out, false, false);
    cr_expect(m == 6 && memcmp(out, " Hello", 6) == 0, "'%.*s'", m, out);
    cr_expect_eq(oxl_vocab_detokenize(v, t, -1, out, sizeof out, false, false), INT32_MIN);
    oxl_vocab_free(v);
}
