/* oxl_quantize_model (the engine of `oxillama quantize`) against llama-quantize: for every output in
 * golden/quantize/expected.json (FTYPE, and FTYPE-imat made with --imatrix), each tensor's type,
 * shape and sha256 must be equal, general.file_type must be llama.cpp's LLAMA_FTYPE number and the
 * tensors must stand in llama-quantize's order; for golden/arch-converted the whole file's sha256 must
 * be llama-quantize's. Also: the legacy .dat imatrix gives the same bytes, the ftype mix
 * fallbacks, refusals that leave no output behind, and the GGUF writer's round trip. */
#include "gguf.h"
#include "gguf_write.h"
#include "imatrix.h"
#include "kernels.h"
#include "quant_mix.h"
#include "quant_mix_test_util.h"
#include "quantize.h"
#include "quantize_model.h"

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GOLDEN OXL_SOURCE_DIR "/golden/quantize/"

/* ---- SHA-256 (FIPS 180-4) ---- */

static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha_block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        const uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        const uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + sha_k[i] + w[i];
        const uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void sha256_hex(const void *data, size_t n, char out[65]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    const uint8_t *p = data;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        sha_block(h, p + i);
    }
    uint8_t tail[128] = {0};
    const size_t rem = n - i;
    memcpy(tail, p + i, rem);
    tail[rem] = 0x80;
    const size_t tl = rem + 9 <= 64 ? 64 : 128;
    const uint64_t bits = (uint64_t)n * 8;
    for (int k = 0; k < 8; k++) {
        tail[tl - 1 - k] = (uint8_t)(bits >> (8 * k));
    }
    sha_block(h, tail);
    if (tl == 128) {
        sha_block(h, tail + 64);
    }
    for (int k = 0; k < 8; k++) {
        snprintf(out + 8 * k, 9, "%08x", h[k]);
    }
}

Test(quantize_cli, sha256_known_answers) {
    char hex[65];
    sha256_hex("abc", 3, hex);
    cr_expect_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha256_hex("", 0, hex);
    cr_expect_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* ---- expected.json: {"<FTYPE>[-imat]": {"<tensor>": ["<TYPE>", [ne0, ...], "<sha256>"], ...}, ...} ---- */

typedef struct exp_tensor {
    char name[64], type[16], sha[65];
    int64_t ne[4];
    int n_dims;
} exp_tensor;

typedef struct exp_output {
    char key[32];
    exp_tensor t[64];
    int n;
} exp_output;

typedef struct lex {
    const char *p;
} lex;

static void skip_ws(lex *l) {
    while (*l->p == ' ' || *l->p == '\n' || *l->p == '\r' || *l->p == '\t') {
        l->p++;
    }
}

static void expect_ch(lex *l, char c) {
    skip_ws(l);
    cr_assert_eq(*l->p, c, "expected.json: expected '%c' at '%.20s'", c, l->p);
    l->p++;
}

static bool peek_ch(lex *l, char c) {
    skip_ws(l);
    return *l->p == c;
}

static void read_str(lex *l, char *out, size_t cap) {
    expect_ch(l, '"');
    size_t n = 0;
    while (*l->p && *l->p != '"') {
        cr_assert_lt(n + 1, cap, "expected.json: string too long");
        out[n++] = *l->p++;
    }
    out[n] = '\0';
    expect_ch(l, '"');
}

/* Reads the whole file; *n outputs into a calloc'd array the caller frees. */
static exp_output *read_expected_file(const char *path, int *n_out) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    static char text[1 << 18];
    const size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = '\0';
    exp_output *outs = calloc(64, sizeof *outs);
    int n = 0;
    lex l = {text};
    expect_ch(&l, '{');
    while (!peek_ch(&l, '}')) {
        cr_assert_lt(n, 64);
        exp_output *o = &outs[n++];
        read_str(&l, o->key, sizeof o->key);
        expect_ch(&l, ':');
        expect_ch(&l, '{');
        while (!peek_ch(&l, '}')) {
            cr_assert_lt(o->n, 64);
            exp_tensor *t = &o->t[o->n++];
            read_str(&l, t->name, sizeof t->name);
            expect_ch(&l, ':');
            expect_ch(&l, '[');
            read_str(&l, t->type, sizeof t->type);
            expect_ch(&l, ',');
            expect_ch(&l, '[');
            while (!peek_ch(&l, ']')) {
                char *end;
                cr_assert_lt(t->n_dims, 4);
                t->ne[t->n_dims++] = strtoll(l.p, &end, 10);
                l.p = end;
                if (peek_ch(&l, ',')) {
                    l.p++;
                }
            }
            expect_ch(&l, ']');
            expect_ch(&l, ',');
            read_str(&l, t->sha, sizeof t->sha);
            expect_ch(&l, ']');
            if (peek_ch(&l, ',')) {
                l.p++;
            }
        }
        expect_ch(&l, '}');
        if (peek_ch(&l, ',')) {
            l.p++;
        }
    }
    *n_out = n;
    return outs;
}

static exp_output *read_expected(int *n_out) { return read_expected_file(GOLDEN "expected.json", n_out); }

/* ---- running and comparing ---- */

static char tmp_dir[64];

static void make_tmp_dir(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/oxl-quantize-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir));
}

static void remove_tmp_dir(void) { rmdir(tmp_dir); }

/* llama.cpp's LLAMA_FTYPE number of a llama-quantize name (golden/quantize/llama_ftype.tsv, from
 * llama.h and quantize.cpp), which llama-quantize writes as the u32 general.file_type
 * (src/llama-quant.cpp); -1 when llama-quantize has no such name. */
static int64_t llama_ftype_number(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/golden/quantize/llama_ftype.tsv", OXL_SOURCE_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[256], key[64];
    long number;
    int64_t found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        if (line[0] != '#' && sscanf(line, "%63s %ld", key, &number) == 2 && strcmp(key, name) == 0) {
            found = number;
        }
    }
    fclose(f);
    return found;
}

static uint32_t llama_ftype_of(const char *name) {
    const int64_t n = llama_ftype_number(name);
    cr_assert_geq(n, 0, "no LLAMA_FTYPE number for %s", name);
    return (uint32_t)n;
}

/* The spec's ftype table (gen/spec.py FTYPES) against llama.cpp's numbers: every name and alias. */
Test(quantize_cli, spec_ftype_numbers_are_llama_cpps) {
    int n_checked = 0;
    for (size_t i = 0; i < OXL_FTYPE_COUNT; i++) {
        const oxl_ftype_info *f = &oxl_ftype_infos[i];
        const char *names[] = {f->name, f->alias};
        for (int k = 0; k < 2 && names[k] != NULL; k++) {
            cr_expect_eq(llama_ftype_number(names[k]), (int64_t)f->id, "%s: spec says %u", names[k], f->id);
            n_checked++;
        }
    }
    cr_expect_geq(n_checked, 39, "%d names checked", n_checked);
}

/* llama-quantize writes the tensors in the order of llama_model_loader's weights_map
 * (src/llama-model-loader.h, weight_name_comparer): by the layer number of "blk.N." (-1 for the
 * tensors outside a block), then by name. */
static int layer_of(const char *name) {
    int layer = -1;
    sscanf(name, "blk.%d.", &layer);
    return layer;
}

static int llama_weight_order(const void *pa, const void *pb) {
    const exp_tensor *a = pa, *b = pb;
    const int la = layer_of(a->name), lb = layer_of(b->name);
    if (la != lb) {
        return la < lb ? -1 : 1;
    }
    return strcmp(a->name, b->name);
}

Test(quantize_cli, llama_weight_order_sorts_by_layer_number_then_name) {
    exp_tensor t[5] = {{.name = "blk.10.attn_q.weight"},
                       {.name = "token_embd.weight"},
                       {.name = "blk.2.ffn_up.weight"},
                       {.name = "blk.2.attn_k.weight"},
                       {.name = "output.weight"}};
    qsort(t, 5, sizeof t[0], llama_weight_order);
    const char *want[5] = {"output.weight", "token_embd.weight", "blk.2.attn_k.weight", "blk.2.ffn_up.weight",
                           "blk.10.attn_q.weight"};
    for (int i = 0; i < 5; i++) {
        cr_expect_str_eq(t[i].name, want[i], "position %d", i);
    }
}

/* Quantizes the synthetic model to e's ftype (with imatrix file im, or none) and compares every
 * tensor with e; returns the number of mismatching tensors. */
static int check_output(const exp_output *e, const char *im) {
    char ftype[32];
    snprintf(ftype, sizeof ftype, "%s", e->key);
    char *dash = strstr(ftype, "-imat");
    if (dash) {
        *dash = '\0';
    }
    char out[128];
    snprintf(out, sizeof out, "%s/%s.gguf", tmp_dir, e->key);
    oxl_quantize_params p = {
        .ftype = oxl_ftype_find(ftype),
        .imatrix_path = im,
        .output_type = OXL_TYPE_COUNT,
        .token_embd_type = OXL_TYPE_COUNT,
        .n_threads = 1,
    };
    cr_assert_not_null(p.ftype, "ftype %s", ftype);
    oxl_error err = {{0}};
    cr_assert_eq(oxl_quantize_model(GOLDEN "synth-small-f32.gguf", out, &p, NULL, &err), 0, "%s: %s", e->key, err.msg);
    oxl_gguf *g = oxl_gguf_open(out, &err);
    cr_assert_not_null(g, "%s", err.msg);
    int bad = 0;
    cr_expect_eq(oxl_gguf_n_tensors(g), e->n, "%s: %lld tensors, expected %d", e->key, (long long)oxl_gguf_n_tensors(g),
                 e->n);
    for (int i = 0; i < e->n; i++) {
        const exp_tensor *x = &e->t[i];
        const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, x->name);
        if (t == NULL) {
            cr_expect_fail("%s: tensor %s missing", e->key, x->name);
            bad++;
            continue;
        }
        char sha[65];
        sha256_hex(t->data, t->nbytes, sha);
        const char *tname = oxl_type_traits_get(t->type)->name;
        bool same_shape = (int)t->n_dims == x->n_dims;
        for (int d = 0; d < x->n_dims; d++) {
            same_shape &= t->ne[d] == x->ne[d];
        }
        const bool ok = strcasecmp(tname, x->type) == 0 && same_shape && strcmp(sha, x->sha) == 0;
        cr_expect(ok, "%s: %s is %s (%lld x %lld) sha %.16s, expected %s sha %.16s", e->key, x->name, tname,
                  (long long)t->ne[0], (long long)t->ne[1], sha, x->type, x->sha);
        bad += !ok;
    }
    /* general.file_type: llama.cpp's number for the ftype, stored as u32 */
    const int64_t kft = oxl_gguf_find_key(g, "general.file_type");
    uint64_t file_type = UINT64_MAX;
    const bool ft_u32 = kft >= 0 && oxl_gguf_kv_type(g, kft) == OXL_GGUF_UINT32 && oxl_gguf_kv_uint(g, kft, &file_type);
    cr_expect(ft_u32 && file_type == llama_ftype_of(ftype), "%s: general.file_type %s%llu, llama.cpp writes u32 %u",
              e->key, ft_u32 ? "" : "(absent or not u32) ", (unsigned long long)file_type, llama_ftype_of(ftype));
    bad += !(ft_u32 && file_type == llama_ftype_of(ftype));
    /* the tensors in llama-quantize's order */
    exp_tensor *order = malloc(sizeof(exp_tensor) * (size_t)e->n);
    cr_assert_not_null(order);
    memcpy(order, e->t, sizeof(exp_tensor) * (size_t)e->n);
    qsort(order, (size_t)e->n, sizeof order[0], llama_weight_order);
    for (int i = 0; i < e->n && i < oxl_gguf_n_tensors(g); i++) {
        const char *got = oxl_gguf_tensor_at(g, i)->name;
        const bool same = strcmp(got, order[i].name) == 0;
        cr_expect(same, "%s: tensor %d is %s, llama-quantize writes %s there", e->key, i, got, order[i].name);
        bad += !same;
    }
    free(order);
    oxl_gguf_close(g);
    remove(out);
    return bad;
}

/* Every output of expected.json whose key does (imat) or does not end in -imat. */
static void check_all(bool imat, const char *im) {
    int n = 0;
    exp_output *outs = read_expected(&n);
    cr_assert_geq(n, 33);
    make_tmp_dir();
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if ((strstr(outs[i].key, "-imat") != NULL) == imat) {
            cr_expect_eq(check_output(&outs[i], im), 0, "%s differs from llama-quantize", outs[i].key);
            checked++;
        }
    }
    cr_expect_geq(checked, imat ? 17 : 16);
    remove_tmp_dir();
    free(outs);
}

Test(quantize_cli, every_ftype_equals_llama_quantize, .timeout = 120) { check_all(false, NULL); }

Test(quantize_cli, every_ftype_with_gguf_imatrix_equals_llama_quantize, .timeout = 120) {
    check_all(true, GOLDEN "synth-small.imatrix.gguf");
}

/* expected-iq.json (the I-quant, ternary and 1/2-bit ftypes): every output whose ftype oxillama
 * writes, with the imatrix for the -imat keys; the keys listed must be among them. */
Test(quantize_cli, iq_ftypes_equal_llama_quantize, .timeout = 120) {
    int n = 0;
    exp_output *outs = read_expected_file(GOLDEN "expected-iq.json", &n);
    cr_assert_geq(n, 24);
    make_tmp_dir();
    int n_checked = 0;
    for (int i = 0; i < n; i++) {
        char ftype[32];
        snprintf(ftype, sizeof ftype, "%s", outs[i].key);
        char *dash = strstr(ftype, "-imat");
        if (dash) {
            *dash = '\0';
        }
        if (oxl_ftype_find(ftype) == NULL) {
            continue; /* an ftype `oxillama quantize` does not write yet (the spec's FTYPES) */
        }
        cr_expect_eq(check_output(&outs[i], dash ? GOLDEN "synth-small.imatrix.gguf" : NULL), 0,
                     "%s differs from llama-quantize", outs[i].key);
        n_checked++;
    }
    /* IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, Q1_0, Q2_0 with and without the imatrix, IQ2_XXS, IQ2_XS, IQ1_S
     * and IQ1_M with it, at least: a written ftype is never skipped */
    cr_expect_geq(n_checked, 16, "%d outputs of expected-iq.json checked", n_checked);
    remove_tmp_dir();
    free(outs);
}

/* IQ4_NL's mix rules that synth-small (2 layers, 2 queries per KV head) does not reach, as
 * llama_tensor_get_type_impl (src/llama-quant.cpp) states them: attn_v Q5_K when n_head/n_head_kv
 * >= 4; ffn_down Q5_K on the first n_layer/8 layers without an imatrix (IQ4_NL with one); with 8
 * experts attn_output Q5_K and attn_v Q8_0; the output Q6_K. */
Test(quantize_cli, iq4_nl_mix_rules) {
    const oxl_quant_tensor base[] = {
        {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
        {.name = "blk.0.attn_output.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
        {.name = "blk.0.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
        {.name = "blk.1.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
        {.name = "blk.1.attn_q.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
        {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    };
    enum { N = sizeof base / sizeof base[0] };
    oxl_quant_tensor t[N];
    oxl_error err = {{0}};
    oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 2};
    oxl_quant_options o = {
        .ftype = oxl_ftype_find("IQ4_NL"), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
    cr_assert_not_null(o.ftype);
    cr_expect_eq(oxl_ftype_id(o.ftype), 25);
    cr_expect_eq(oxl_ftype_find("25"), o.ftype);
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, N, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q5_K);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), OXL_TYPE_IQ4_NL);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down.weight"), OXL_TYPE_Q5_K);
    cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_down.weight"), OXL_TYPE_IQ4_NL);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_q.weight"), OXL_TYPE_IQ4_NL);
    cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q6_K);
    /* with an imatrix the first ffn_down stays IQ4_NL; 2 queries per KV head keep attn_v */
    o.has_imatrix = true;
    m.n_head_kv = 4;
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, N, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down.weight"), OXL_TYPE_IQ4_NL);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_IQ4_NL);
    /* 8 experts: attn_output Q5_K, attn_v Q8_0 */
    m.n_expert = 8;
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, N, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), OXL_TYPE_Q5_K);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q8_0);
    /* a row that is not a multiple of 32: llama.cpp has no fallback type for IQ4_NL */
    oxl_quant_tensor odd[] = {{.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {48, 4, 1, 1}}};
    m.n_expert = 0;
    cr_expect_eq(oxl_quant_choose_types(&m, &o, odd, 1, &err), -1);
}

/* MXFP4_MOE's rules that gpt-oss (ctest quantize-kquant-files: llama-quantize's file byte for byte)
 * does not reach, as llama_tensor_get_type_impl states them: with tied embeddings token_embd is the
 * output and gets Q8_0; --output-tensor-type still wins; the split comes before the 8-expert rules
 * (attn_v stays Q8_0, attn_output Q8_0, not Q5_K); a 3-D stack with one expert is Q8_0. */
Test(quantize_cli, mxfp4_moe_mix_rules) {
    const oxl_quant_tensor base[] = {
        {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {64, 512, 1, 1}},
        {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {64, 32, 1, 1}},
        {.name = "blk.0.attn_output.weight", .type = OXL_TYPE_F32, .ne = {64, 64, 1, 1}},
        {.name = "blk.0.ffn_down_exps.weight", .type = OXL_TYPE_F32, .ne = {64, 64, 8, 1}},
        {.name = "blk.0.ffn_up_shexp.weight", .type = OXL_TYPE_F32, .ne = {64, 64, 1, 1}},
        {.name = "blk.0.ffn_gate_exps.weight", .type = OXL_TYPE_F32, .ne = {64, 64, 1, 1}},
    };
    enum { N = sizeof base / sizeof base[0] };
    oxl_quant_tensor t[N];
    oxl_error err = {{0}};
    oxl_quant_model m = {.arch = "gpt-oss", .n_layer = 1, .n_head = 4, .n_head_kv = 1, .n_expert = 8};
    oxl_quant_options o = {
        .ftype = oxl_ftype_find("MXFP4_MOE"), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
    cr_assert_not_null(o.ftype);
    cr_expect_eq(oxl_ftype_id(o.ftype), 38);
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, N, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N, "token_embd.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_output.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down_exps.weight"), OXL_TYPE_MXFP4);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_up_shexp.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_gate_exps.weight"), OXL_TYPE_Q8_0);
    /* the output type given: the tied token_embd takes it */
    o.output_type = OXL_TYPE_Q4_0;
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, N, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N, "token_embd.weight"), OXL_TYPE_Q4_0);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down_exps.weight"), OXL_TYPE_MXFP4);
    /* an expert row that is not a multiple of 32: llama.cpp has no fallback type for MXFP4 */
    oxl_quant_tensor odd[] = {{.name = "blk.0.ffn_up_exps.weight", .type = OXL_TYPE_F32, .ne = {48, 4, 8, 1}}};
    o.output_type = OXL_TYPE_COUNT;
    cr_expect_eq(oxl_quant_choose_types(&m, &o, odd, 1, &err), -1);
}

/* IQ4_XS: IQ4_NL's rules (llama_tensor_get_type_impl names both) with IQ4_XS as the type, and
 * tensor_type_fallback's IQ4_NL for rows that are no multiple of 256 (F16 for rows that are not
 * even a multiple of 32), which synth-small's rows of 256 and 512 never need. */
Test(quantize_cli, iq4_xs_mix_rules_and_fallback) {
    const oxl_quant_tensor base[] = {
        {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 64, 1, 1}},
        {.name = "blk.0.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
        {.name = "blk.1.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {512, 256, 1, 1}},
        {.name = "blk.1.attn_q.weight", .type = OXL_TYPE_F32, .ne = {256, 256, 1, 1}},
        {.name = "blk.1.attn_k.weight", .type = OXL_TYPE_F32, .ne = {96, 256, 1, 1}},
        {.name = "blk.1.ffn_gate.weight", .type = OXL_TYPE_F32, .ne = {48, 256, 1, 1}},
        {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    };
    enum { N = sizeof base / sizeof base[0] };
    oxl_quant_tensor t[N];
    oxl_error err = {{0}};
    oxl_quant_model m = {.arch = "llama", .n_layer = 8, .n_head = 8, .n_head_kv = 2};
    oxl_quant_options o = {
        .ftype = oxl_ftype_find("IQ4_XS"), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
    cr_assert_not_null(o.ftype);
    cr_expect_eq(oxl_ftype_id(o.ftype), 30);
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, N, &err), 2, "%s", err.msg); /* two fallbacks */
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q5_K);
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down.weight"), OXL_TYPE_Q5_K);
    cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_down.weight"), OXL_TYPE_IQ4_XS);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_q.weight"), OXL_TYPE_IQ4_XS);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_k.weight"), OXL_TYPE_IQ4_NL);
    cr_expect_eq(quant_target_of(t, N, "blk.1.ffn_gate.weight"), OXL_TYPE_F16);
    cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q6_K);
    /* with an imatrix the first ffn_down stays IQ4_XS; 8 experts: attn_v and attn_k Q8_0 */
    o.has_imatrix = true;
    m.n_expert = 8;
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, N, &err), 1, "%s", err.msg); /* attn_k is Q8_0 now */
    cr_expect_eq(quant_target_of(t, N, "blk.0.ffn_down.weight"), OXL_TYPE_IQ4_XS);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_k.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q8_0);
}

/* The legacy layout holds the same statistics: the same bytes for the ftypes whose formats use them. */
Test(quantize_cli, legacy_dat_imatrix_gives_the_same_bytes, .timeout = 120) {
    int n = 0;
    exp_output *outs = read_expected(&n);
    make_tmp_dir();
    const char *keys[] = {"Q4_0-imat", "Q2_K_S-imat", "Q4_K_M-imat", "Q6_K-imat"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        for (int i = 0; i < n; i++) {
            if (strcmp(outs[i].key, keys[k]) == 0) {
                cr_expect_eq(check_output(&outs[i], GOLDEN "synth-small.imatrix.dat"), 0, "%s", keys[k]);
            }
        }
    }
    remove_tmp_dir();
    free(outs);
}

/* ---- refusals leave nothing behind ---- */

static bool file_exists(const char *path) { return access(path, F_OK) == 0; }

Test(quantize_cli, refusals_leave_no_output) {
    make_tmp_dir();
    char out[128], tmp[160];
    snprintf(out, sizeof out, "%s/out.gguf", tmp_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    oxl_quantize_params p = {.ftype = oxl_ftype_find("Q2_K_S"),
                             .output_type = OXL_TYPE_COUNT,
                             .token_embd_type = OXL_TYPE_COUNT,
                             .n_threads = 1};
    oxl_error err = {{0}};
    /* llama.cpp refuses Q2_K_S without an importance matrix */
    cr_expect_eq(oxl_quantize_model(GOLDEN "synth-small-f32.gguf", out, &p, NULL, &err), -1);
    cr_expect(strstr(err.msg, "importance matrix") != NULL, "message: %s", err.msg);
    /* and IQ1_S and IQ1_M (tensor_requires_imatrix) */
    static const char *const iq1[] = {"IQ1_S", "IQ1_M"};
    for (int k = 0; k < 2; k++) {
        p.ftype = oxl_ftype_find(iq1[k]);
        cr_assert_not_null(p.ftype, "%s", iq1[k]);
        cr_expect_eq(oxl_quantize_model(GOLDEN "synth-small-f32.gguf", out, &p, NULL, &err), -1, "%s", iq1[k]);
        cr_expect(strstr(err.msg, "importance matrix") != NULL, "%s: %s", iq1[k], err.msg);
    }
    p.ftype = oxl_ftype_find("q4_k_m");
    p.imatrix_path = GOLDEN "no-such-file.imatrix";
    cr_expect_eq(oxl_quantize_model(GOLDEN "synth-small-f32.gguf", out, &p, NULL, &err), -1);
    cr_expect(strstr(err.msg, "no-such-file") != NULL, "message: %s", err.msg);
    cr_expect(!file_exists(out) && !file_exists(tmp));
    remove_tmp_dir();
}

/* A small model written with the GGUF writer: one weight with a NaN at row 1, column 7. */
static void write_model(const char *path, float bad) {
    oxl_error err = {{0}};
    oxl_gguf_writer *w = oxl_gguf_writer_new(&err);
    cr_assert_not_null(w);
    cr_assert_eq(oxl_gguf_writer_set_str(w, "general.architecture", "llama", &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_u32(w, "llama.block_count", 1, &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_u32(w, "llama.attention.head_count", 2, &err), 0);
    static float x[3 * 256];
    for (int i = 0; i < 3 * 256; i++) {
        x[i] = sinf((float)i);
    }
    x[256 + 7] = bad;
    const int64_t ne[2] = {256, 3};
    cr_assert_eq(oxl_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", OXL_TYPE_F32, 2, ne, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gguf_writer_begin(w, path, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gguf_writer_write_data(w, x, sizeof x, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gguf_writer_finish(w, &err), 0, "%s", err.msg);
    oxl_gguf_writer_free(w);
}

Test(quantize_cli, non_finite_weight_names_tensor_row_and_column) {
    make_tmp_dir();
    char in[128], out[128], tmp[160];
    snprintf(in, sizeof in, "%s/in.gguf", tmp_dir);
    snprintf(out, sizeof out, "%s/out.gguf", tmp_dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    write_model(in, NAN);
    oxl_quantize_params p = {.ftype = oxl_ftype_find("Q8_0"),
                             .output_type = OXL_TYPE_COUNT,
                             .token_embd_type = OXL_TYPE_COUNT,
                             .n_threads = 2};
    oxl_error err = {{0}};
    cr_expect_eq(oxl_quantize_model(in, out, &p, NULL, &err), -1);
    cr_expect(strstr(err.msg, "blk.0.attn_q.weight") && strstr(err.msg, "row 1") && strstr(err.msg, "column 7"),
              "message: %s", err.msg);
    cr_expect(!file_exists(out) && !file_exists(tmp));
    write_model(in, 1e30f); /* finite, however large: quantizes */
    cr_expect_eq(oxl_quantize_model(in, out, &p, NULL, &err), 0, "%s", err.msg);
    remove(in);
    remove(out);
    remove_tmp_dir();
}

/* ---- the mix: llama.cpp's fallback when a row is not a multiple of the K-quant block ---- */

Test(quantize_cli, fallback_types_for_short_rows) {
    oxl_quant_tensor t[] = {
        {.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {96, 4, 1, 1}},    /* q4_K -> q5_0 */
        {.name = "blk.0.attn_k.weight", .type = OXL_TYPE_F32, .ne = {48, 4, 1, 1}},    /* q5_0 needs 32: f16 */
        {.name = "blk.0.attn_norm.weight", .type = OXL_TYPE_F32, .ne = {96, 1, 1, 1}}, /* 1-D: kept f32 */
        {.name = "blk.0.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 4, 1, 1}},   /* fits: q4_K */
    };
    const oxl_quant_model m = {.arch = "llama", .n_layer = 1, .n_head = 4, .n_head_kv = 4};
    const oxl_quant_options o = {
        .ftype = oxl_ftype_find("Q4_K_S"), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
    oxl_quant_sort(t, 4);
    oxl_error err = {{0}};
    cr_assert_eq(oxl_quant_choose_types(&m, &o, t, 4, &err), 2, "%s", err.msg);
    for (int i = 0; i < 4; i++) {
        const oxl_type want = strstr(t[i].name, "attn_q")      ? OXL_TYPE_Q5_0
                              : strstr(t[i].name, "attn_k")    ? OXL_TYPE_F16
                              : strstr(t[i].name, "attn_norm") ? OXL_TYPE_F32
                                                               : OXL_TYPE_Q4_K;
        cr_expect_eq(t[i].target, want, "%s: %s", t[i].name, oxl_type_traits_get(t[i].target)->name);
    }
}

/* tensor_type_fallback of the ternary and 2-bit types: q4_0 (f16 if not even that fits); q1_0 has
 * none, and llama-quantize stops ("no tensor type fallback is defined for type q1_0") */
Test(quantize_cli, fallback_types_of_the_low_bit_ftypes) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 1, .n_head = 4, .n_head_kv = 4};
    static const char *const ftypes[] = {"TQ1_0", "TQ2_0", "Q2_0"};
    static const oxl_type types[] = {OXL_TYPE_TQ1_0, OXL_TYPE_TQ2_0, OXL_TYPE_Q2_0};
    for (int f = 0; f < 3; f++) {
        oxl_quant_tensor t[] = {
            {.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {96, 4, 1, 1}},    /* q4_0 */
            {.name = "blk.0.ffn_down.weight", .type = OXL_TYPE_F32, .ne = {172, 4, 1, 1}}, /* f16 */
            {.name = "blk.0.ffn_up.weight", .type = OXL_TYPE_F32, .ne = {256, 4, 1, 1}},   /* fits */
        };
        const oxl_quant_options o = {
            .ftype = oxl_ftype_find(ftypes[f]), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
        cr_assert_not_null(o.ftype, "%s", ftypes[f]);
        oxl_error err = {{0}};
        cr_assert_eq(oxl_quant_choose_types(&m, &o, t, 3, &err), 2, "%s: %s", ftypes[f], err.msg);
        cr_expect_eq(t[0].target, OXL_TYPE_Q4_0, "%s: %s", ftypes[f], oxl_type_traits_get(t[0].target)->name);
        cr_expect_eq(t[1].target, OXL_TYPE_F16, "%s: %s", ftypes[f], oxl_type_traits_get(t[1].target)->name);
        cr_expect_eq(t[2].target, types[f], "%s: %s", ftypes[f], oxl_type_traits_get(t[2].target)->name);
    }
    oxl_quant_tensor t[] = {{.name = "blk.0.attn_q.weight", .type = OXL_TYPE_F32, .ne = {64, 4, 1, 1}}};
    const oxl_quant_options o = {
        .ftype = oxl_ftype_find("Q1_0"), .output_type = OXL_TYPE_COUNT, .token_embd_type = OXL_TYPE_COUNT};
    oxl_error err = {{0}};
    cr_expect_eq(oxl_quant_choose_types(&m, &o, t, 1, &err), -1);
    cr_expect(strstr(err.msg, "q1_0 has no fallback type") != NULL, "%s", err.msg);
}

/* ---- the writer: every value type survives a round trip through the reader ---- */

Test(quantize_cli, gguf_writer_round_trip) {
    make_tmp_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/rt.gguf", tmp_dir);
    oxl_error err = {{0}};
    oxl_gguf_writer *w = oxl_gguf_writer_new(&err);
    const int16_t arr[3] = {-1, 2, -300};
    const char *strs[2] = {"a", "bc"};
    cr_assert_eq(oxl_gguf_writer_set_u32(w, "general.alignment", 64, &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_i32(w, "k.i32", -5, &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_f32(w, "k.f32", 0.25f, &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_bool(w, "k.bool", true, &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_str(w, "k.str", "hello", &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_arr(w, "k.arr", OXL_GGUF_INT16, arr, 3, &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_arr_str(w, "k.strs", strs, 2, &err), 0);
    cr_assert_eq(oxl_gguf_writer_set_i32(w, "k.i32", 7, &err), 0); /* replaced, moved to the end */
    const int64_t ne1[1] = {3}, ne2[2] = {32, 2};
    cr_assert_eq(oxl_gguf_writer_add_tensor(w, "a", OXL_TYPE_F32, 1, ne1, &err), 0);
    cr_assert_eq(oxl_gguf_writer_add_tensor(w, "b", OXL_TYPE_Q8_0, 2, ne2, &err), 0);
    cr_expect_eq(oxl_gguf_writer_add_tensor(w, "a", OXL_TYPE_F32, 1, ne1, &err), -1); /* duplicate */
    const float a[3] = {1, 2, 3};
    uint8_t b[68];
    for (int i = 0; i < 68; i++) {
        b[i] = (uint8_t)i;
    }
    cr_assert_eq(oxl_gguf_writer_begin(w, path, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gguf_writer_write_data(w, a, sizeof a, &err), 0);
    cr_assert_eq(oxl_gguf_writer_write_data(w, b, sizeof b, &err), 0);
    cr_assert_eq(oxl_gguf_writer_finish(w, &err), 0, "%s", err.msg);
    const uint64_t written = oxl_gguf_writer_bytes_written(w);
    oxl_gguf_writer_free(w);

    oxl_gguf *g = oxl_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_expect_eq(oxl_gguf_file_size(g), written);
    cr_expect_eq(oxl_gguf_alignment(g), 64);
    cr_expect_eq(oxl_gguf_data_offset(g) % 64, 0);
    cr_expect_str_eq(oxl_gguf_key(g, oxl_gguf_n_kv(g) - 1), "k.i32");
    int64_t iv = 0;
    float fv = 0;
    bool bv = false;
    const char *sv = NULL;
    cr_expect(oxl_gguf_get_int(g, "k.i32", &iv, &err) == 1 && iv == 7);
    cr_expect(oxl_gguf_get_float(g, "k.f32", &fv, &err) == 1 && fv == 0.25f);
    cr_expect(oxl_gguf_get_bool(g, "k.bool", &bv, &err) == 1 && bv);
    cr_expect(oxl_gguf_get_str(g, "k.str", &sv, &err) == 1 && strcmp(sv, "hello") == 0);
    const int64_t ka = oxl_gguf_find_key(g, "k.arr"), ks = oxl_gguf_find_key(g, "k.strs");
    cr_expect(oxl_gguf_arr_type(g, ka) == OXL_GGUF_INT16 && oxl_gguf_arr_n(g, ka) == 3 &&
              memcmp(oxl_gguf_arr_data(g, ka), arr, sizeof arr) == 0);
    size_t len = 0;
    const char *s1 = oxl_gguf_arr_str(g, ks, 1, &len);
    cr_expect(oxl_gguf_arr_n(g, ks) == 2 && len == 2 && memcmp(s1, "bc", 2) == 0);
    const oxl_gguf_tensor *ta = oxl_gguf_find_tensor(g, "a"), *tb = oxl_gguf_find_tensor(g, "b");
    cr_assert(ta && tb);
    cr_expect(ta->n_dims == 1 && memcmp(ta->data, a, sizeof a) == 0);
    cr_expect(tb->offset == 64 && tb->ne[1] == 2 && memcmp(tb->data, b, sizeof b) == 0);

    /* a copy of every key/value through copy_kvs reads back the same */
    char path2[128];
    snprintf(path2, sizeof path2, "%s/rt2.gguf", tmp_dir);
    w = oxl_gguf_writer_new(&err);
    cr_assert_eq(oxl_gguf_writer_copy_kvs(w, g, &err), 0, "%s", err.msg);
    cr_assert_eq(oxl_gguf_writer_begin(w, path2, &err), 0);
    cr_assert_eq(oxl_gguf_writer_finish(w, &err), 0);
    oxl_gguf_writer_free(w);
    oxl_gguf *g2 = oxl_gguf_open(path2, &err);
    cr_assert_not_null(g2, "%s", err.msg);
    cr_expect_eq(oxl_gguf_n_kv(g2), oxl_gguf_n_kv(g));
    cr_expect(oxl_gguf_get_int(g2, "k.i32", &iv, &err) == 1 && iv == 7);
    cr_expect_eq(oxl_gguf_kv_type(g2, oxl_gguf_find_key(g2, "k.i32")), OXL_GGUF_INT32);
    oxl_gguf_close(g2);
    oxl_gguf_close(g);
    remove(path);
    remove(path2);
    remove_tmp_dir();
}

/* ---- requantization: refused by default; with --allow-requantize it goes through the format's
 * dequantization kernel, giving the bytes of quantizing the dequantized weights ---- */

Test(quantize_cli, requantize_needs_the_flag_and_a_dequant_kernel) {
    make_tmp_dir();
    char q8[128], q4[128];
    snprintf(q8, sizeof q8, "%s/q8.gguf", tmp_dir);
    snprintf(q4, sizeof q4, "%s/q4.gguf", tmp_dir);
    oxl_quantize_params p = {.ftype = oxl_ftype_find("Q8_0"),
                             .output_type = OXL_TYPE_COUNT,
                             .token_embd_type = OXL_TYPE_COUNT,
                             .n_threads = 2};
    oxl_error err = {{0}};
    cr_assert_eq(oxl_quantize_model(GOLDEN "synth-small-f32.gguf", q8, &p, NULL, &err), 0, "%s", err.msg);
    p.ftype = oxl_ftype_find("Q4_0");
    cr_expect_eq(oxl_quantize_model(q8, q4, &p, NULL, &err), -1);
    cr_expect(strstr(err.msg, "requantiz") != NULL, "message: %s", err.msg);
    p.allow_requantize = true;
    const oxl_dequant_fn dq = oxl_kernels_get()->dequant[OXL_TYPE_Q8_0];
    const int rc = oxl_quantize_model(q8, q4, &p, NULL, &err);
    if (dq == NULL) {
        cr_expect_eq(rc, -1);
        cr_expect(strstr(err.msg, "no dequantization kernel") != NULL, "message: %s", err.msg);
    } else {
        cr_assert_eq(rc, 0, "%s", err.msg);
        oxl_gguf *g8 = oxl_gguf_open(q8, &err), *g4 = oxl_gguf_open(q4, &err);
        cr_assert(g8 && g4);
        const oxl_gguf_tensor *a = oxl_gguf_find_tensor(g8, "blk.0.attn_q.weight");
        const oxl_gguf_tensor *b = oxl_gguf_find_tensor(g4, "blk.0.attn_q.weight");
        cr_assert(a && b && a->type == OXL_TYPE_Q8_0 && b->type == OXL_TYPE_Q4_0);
        const int64_t ne0 = a->ne[0], nr = a->ne[1];
        float *x = malloc((size_t)(ne0 * nr) * sizeof *x);
        uint8_t *y = malloc(b->nbytes);
        for (int64_t r = 0; r < nr; r++) {
            dq((const uint8_t *)a->data + (size_t)r * oxl_row_size(OXL_TYPE_Q8_0, ne0), x + r * ne0, ne0);
        }
        cr_assert_eq(oxl_quantize_rows(OXL_TYPE_Q4_0, x, y, nr, ne0, NULL, &err), 0);
        cr_expect(memcmp(y, b->data, b->nbytes) == 0);
        free(x);
        free(y);
        oxl_gguf_close(g8);
        oxl_gguf_close(g4);
    }
    remove(q8);
    remove(q4);
    remove_tmp_dir();
}

/* ---- the options of llama_tensor_get_type: --output-tensor-type, --token-embedding-type, --pure ---- */

Test(quantize_cli, type_options_and_pure) {
    const oxl_quant_model m = {.arch = "llama", .n_layer = 2, .n_head = 4, .n_head_kv = 2};
    oxl_quant_tensor base[] = {
        {.name = "token_embd.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
        {.name = "blk.0.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 128, 1, 1}},
        {.name = "blk.1.attn_v.weight", .type = OXL_TYPE_F32, .ne = {256, 128, 1, 1}},
        {.name = "output.weight", .type = OXL_TYPE_F32, .ne = {256, 512, 1, 1}},
    };
    enum { N = sizeof base / sizeof base[0] };
    oxl_quant_tensor t[N];
    oxl_error err = {{0}};
    oxl_quant_options o = {
        .ftype = oxl_ftype_find("Q4_K_M"), .output_type = OXL_TYPE_Q8_0, .token_embd_type = OXL_TYPE_Q5_0};
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_geq(oxl_quant_choose_types(&m, &o, t, N, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N, "output.weight"), OXL_TYPE_Q8_0);
    cr_expect_eq(quant_target_of(t, N, "token_embd.weight"), OXL_TYPE_Q5_0);
    cr_expect_eq(quant_target_of(t, N, "blk.1.attn_v.weight"), OXL_TYPE_Q6_K); /* use_more_bits(1, 2) */
    cr_expect_eq(quant_target_of(t, N, "blk.0.attn_v.weight"), OXL_TYPE_Q4_K);

    /* tied embeddings (no output.weight): token_embd follows the output's rule and option */
    o.token_embd_type = OXL_TYPE_COUNT;
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N - 1);
    cr_assert_geq(oxl_quant_choose_types(&m, &o, t, N - 1, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N - 1, "token_embd.weight"), OXL_TYPE_Q8_0);
    o.output_type = OXL_TYPE_COUNT;
    cr_assert_geq(oxl_quant_choose_types(&m, &o, t, N - 1, &err), 0, "%s", err.msg);
    cr_expect_eq(quant_target_of(t, N - 1, "token_embd.weight"), OXL_TYPE_Q6_K);

    /* --pure: no mix rule at all, the output included */
    o.pure = true;
    memcpy(t, base, sizeof t);
    oxl_quant_sort(t, N);
    cr_assert_geq(oxl_quant_choose_types(&m, &o, t, N, &err), 0, "%s", err.msg);
    for (int i = 0; i < N; i++) {
        cr_expect_eq(t[i].target, OXL_TYPE_Q4_K, "%s", t[i].name);
    }
}

/* ---- malformed importance matrices: every truncation of the legacy file is an error, never a crash ---- */

Test(quantize_cli, truncated_legacy_imatrix_is_an_error) {
    FILE *f = fopen(GOLDEN "synth-small.imatrix.dat", "rb");
    cr_assert_not_null(f);
    static uint8_t data[1 << 15];
    const size_t size = fread(data, 1, sizeof data, f);
    fclose(f);
    cr_assert_gt(size, 100);
    make_tmp_dir();
    char path[128];
    snprintf(path, sizeof path, "%s/cut.dat", tmp_dir);
    int n_errors = 0, n_cuts = 0;
    /* cuts inside the entries; the optional trailer (chunk count, dataset) starts after the last one */
    for (size_t cut = 0; cut < size - 64; cut += 13) {
        FILE *o = fopen(path, "wb");
        cr_assert_not_null(o);
        fwrite(data, 1, cut, o);
        fclose(o);
        oxl_error err = {{0}};
        oxl_imatrix *m = oxl_imatrix_load(path, &err);
        n_cuts++;
        if (m == NULL) {
            n_errors++;
            cr_expect(strstr(err.msg, "cut.dat") != NULL, "message: %s", err.msg);
        }
        oxl_imatrix_free(m);
    }
    cr_expect_eq(n_errors, n_cuts);
    remove(path);
    remove_tmp_dir();
}

/* ---- whole files: golden/arch-converted/expected.jsonl records the sha256 of the file
 * llama-quantize wrote for each dense arch model and type (F16, Q8_0); oxl_quantize_model must write
 * the same bytes: header, metadata, general.file_type, tensor order, alignment and data ---- */

/* The string value of "key" in one JSON line, into out. */
static bool jsonl_str(const char *line, const char *key, char *out, size_t cap) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": \"", key);
    const char *p = strstr(line, pat);
    if (!p) {
        return false;
    }
    p += strlen(pat);
    const char *q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= cap) {
        return false;
    }
    memcpy(out, p, (size_t)(q - p));
    out[q - p] = '\0';
    return true;
}

static void sha256_file(const char *path, char out[65]) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)size + 1);
    cr_assert_not_null(data);
    cr_assert_eq(fread(data, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    sha256_hex(data, (size_t)size, out);
    free(data);
}

Test(quantize_cli, converted_arch_files_equal_llama_quantize_byte_for_byte, .timeout = 120) {
    FILE *f = fopen(OXL_SOURCE_DIR "/golden/arch-converted/expected.jsonl", "r");
    cr_assert_not_null(f);
    make_tmp_dir();
    char line[4096];
    int n = 0, n_same = 0;
    while (fgets(line, sizeof line, f)) {
        char model[64], type[16], want[65], in[512], out[256], got[65];
        cr_assert(jsonl_str(line, "model", model, sizeof model) && jsonl_str(line, "type", type, sizeof type) &&
                      jsonl_str(line, "llama_quantize_sha256", want, sizeof want),
                  "expected.jsonl line %d: %s", n + 1, line);
        snprintf(in, sizeof in, "%s/golden/arch/%s.gguf", OXL_SOURCE_DIR, model);
        snprintf(out, sizeof out, "%s/%s-%s.gguf", tmp_dir, model, type);
        oxl_quantize_params p = {.ftype = oxl_ftype_find(type),
                                 .output_type = OXL_TYPE_COUNT,
                                 .token_embd_type = OXL_TYPE_COUNT,
                                 .n_threads = 2};
        cr_assert_not_null(p.ftype, "ftype %s", type);
        oxl_error err = {{0}};
        cr_assert_eq(oxl_quantize_model(in, out, &p, NULL, &err), 0, "%s %s: %s", model, type, err.msg);
        sha256_file(out, got);
        remove(out);
        cr_expect_str_eq(got, want, "%s %s: file sha256 %s, llama-quantize's %s", model, type, got, want);
        n_same += strcmp(got, want) == 0;
        n++;
    }
    fclose(f);
    remove_tmp_dir();
    fprintf(stderr, "quantize_cli: %d of %d converted files equal llama-quantize's byte for byte\n", n_same, n);
    cr_expect_eq(n, 49, "golden/arch-converted/expected.jsonl lists %d files", n);
}
