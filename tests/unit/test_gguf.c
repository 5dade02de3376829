/* GGUF reader: the bundled model and a golden file read back with known values, every malformed
 * case the reader must refuse (each message must name the field), and exhaustive truncation and
 * byte-corruption of the bundled model's header and tensor infos. Expected values come from the
 * GGUF files themselves as read by an independent Python reader (struct.unpack over the layout in
 * ggml docs/gguf.md), not from this reader. */
#include "gguf.h"
#include "gguf_craft.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORIES OXL_SOURCE_DIR "/models/stories260K.gguf"
#define GOLDEN_ONCE OXL_SOURCE_DIR "/golden/models/stories260K.once.gguf"

/* stories260K.gguf layout: tensor infos end at byte 14152, data section at 14176 */
#define STORIES_INFO_END 14152
#define STORIES_DATA_OFFSET 14176

static uint8_t *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* ---- the bundled model ----------------------------------------------------------------------- */

Test(gguf, stories260K_header_and_metadata) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(STORIES, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_expect_eq(oxl_gguf_version(g), 3);
    cr_expect_eq(oxl_gguf_n_kv(g), 19);
    cr_expect_eq(oxl_gguf_n_tensors(g), 48);
    cr_expect_eq(oxl_gguf_alignment(g), 32);
    cr_expect_eq(oxl_gguf_data_offset(g), STORIES_DATA_OFFSET);
    cr_expect_eq(oxl_gguf_file_size(g), 1185376);
    cr_expect_str_eq(oxl_gguf_path(g), STORIES);

    cr_expect_str_eq(oxl_gguf_key(g, 0), "tokenizer.ggml.tokens");
    cr_expect_str_eq(oxl_gguf_key(g, 18), "llama.attention.layer_norm_rms_epsilon");
    cr_expect_null(oxl_gguf_key(g, 19));
    cr_expect_eq(oxl_gguf_find_key(g, "llama.block_count"), 16);
    cr_expect_eq(oxl_gguf_find_key(g, "llama.no_such_key"), -1);

    uint32_t u = 0;
    cr_expect_eq(oxl_gguf_get_uint32(g, "llama.embedding_length", &u, &err), 1);
    cr_expect_eq(u, 64);
    cr_expect_eq(oxl_gguf_get_uint32(g, "llama.block_count", &u, &err), 1);
    cr_expect_eq(u, 5);
    cr_expect_eq(oxl_gguf_get_uint32(g, "llama.feed_forward_length", &u, &err), 1);
    cr_expect_eq(u, 172);
    int64_t i64 = 0;
    cr_expect_eq(oxl_gguf_get_int(g, "tokenizer.ggml.seperator_token_id", &i64, &err), 1);
    cr_expect_eq(i64, 4294967295);
    float f = 0;
    cr_expect_eq(oxl_gguf_get_float(g, "llama.attention.layer_norm_rms_epsilon", &f, &err), 1);
    cr_expect_eq(f, 1e-5f);
    const char *s = NULL;
    cr_expect_eq(oxl_gguf_get_str(g, "general.architecture", &s, &err), 1);
    cr_expect_str_eq(s, "llama");
    cr_expect_eq(oxl_gguf_get_str(g, "tokenizer.chat_template", &s, &err), 0);

    /* the vocabulary */
    int64_t k = oxl_gguf_find_key(g, "tokenizer.ggml.tokens");
    cr_assert_eq(k, 0);
    cr_expect_eq(oxl_gguf_kv_type(g, k), OXL_GGUF_ARRAY);
    cr_expect_eq(oxl_gguf_arr_type(g, k), OXL_GGUF_STRING);
    cr_expect_eq(oxl_gguf_arr_n(g, k), 512);
    cr_expect_null(oxl_gguf_arr_data(g, k));
    size_t len = 0;
    const char *tok = oxl_gguf_arr_str(g, k, 13, &len);
    cr_assert_not_null(tok);
    cr_expect_eq(len, 6);
    cr_expect_eq(memcmp(tok, "<0x0A>", 6), 0);
    tok = oxl_gguf_arr_str(g, k, 1, &len);
    cr_expect(len == 3 && memcmp(tok, "<s>", 3) == 0);
    cr_expect_null(oxl_gguf_arr_str(g, k, 512, &len));

    k = oxl_gguf_find_key(g, "tokenizer.ggml.token_type");
    cr_assert_geq(k, 0);
    cr_expect_eq(oxl_gguf_arr_type(g, k), OXL_GGUF_INT32);
    const uint8_t *tt = oxl_gguf_arr_data(g, k);
    cr_assert_not_null(tt);
    int32_t t0, t1, t3;
    memcpy(&t0, tt, 4);
    memcpy(&t1, tt + 4, 4);
    memcpy(&t3, tt + 12, 4);
    cr_expect(t0 == 2 && t1 == 3 && t3 == 6, "token types %d %d %d", t0, t1, t3);
    oxl_gguf_close(g);
}

Test(gguf, stories260K_tensors) {
    size_t size;
    uint8_t *file = read_file(STORIES, &size);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(STORIES, &err);
    cr_assert_not_null(g, "%s", err.msg);

    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, "blk.0.ffn_gate.weight");
    cr_assert_not_null(t);
    cr_expect_eq(t, oxl_gguf_tensor_at(g, 8));
    cr_expect_eq(t->n_dims, 2);
    cr_expect(t->ne[0] == 64 && t->ne[1] == 172 && t->ne[2] == 1 && t->ne[3] == 1);
    cr_expect_eq(t->type, 0);
    cr_expect_eq(t->offset, 311808);
    cr_expect_eq(t->nbytes, 64 * 172 * 4);
    /* zero-copy: the bytes in place, the same as the file's */
    cr_expect_eq(memcmp(t->data, file + STORIES_DATA_OFFSET + 311808, t->nbytes), 0);

    t = oxl_gguf_tensor_at(g, 0);
    cr_expect_str_eq(t->name, "token_embd.weight");
    cr_expect(t->ne[0] == 64 && t->ne[1] == 512);
    t = oxl_gguf_tensor_at(g, 47);
    cr_expect_str_eq(t->name, "blk.4.ffn_norm.weight");
    cr_expect(t->n_dims == 1 && t->ne[0] == 64 && t->ne[1] == 1);
    cr_expect_eq(t->offset, 1170944);
    cr_expect_null(oxl_gguf_tensor_at(g, 48));
    cr_expect_null(oxl_gguf_find_tensor(g, "blk.5.ffn_norm.weight"));
    oxl_gguf_close(g);

    /* the same bytes through a caller's buffer */
    g = oxl_gguf_open_memory(file, size, "stories.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    t = oxl_gguf_find_tensor(g, "blk.0.ffn_gate.weight");
    cr_expect_eq((const uint8_t *)t->data, file + STORIES_DATA_OFFSET + 311808);
    oxl_gguf_close(g);
    free(file);
}

Test(gguf, golden_logits_file) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open(GOLDEN_ONCE, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_expect_eq(oxl_gguf_n_kv(g), 8);
    cr_expect_eq(oxl_gguf_n_tensors(g), 3);
    cr_expect_eq(oxl_gguf_data_offset(g), 768);
    const char *s;
    cr_expect_eq(oxl_gguf_get_str(g, "golden.prompt", &s, &err), 1);
    cr_expect_str_eq(s, "Once upon a time");
    uint32_t n_vocab;
    cr_expect_eq(oxl_gguf_get_uint32(g, "golden.n_vocab", &n_vocab, &err), 1);
    cr_expect_eq(n_vocab, 512);

    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, "tokens");
    cr_assert_not_null(t);
    cr_expect_eq(t->type, 26); /* i32 */
    cr_assert_eq(t->ne[0], 5);
    static const int32_t want[5] = {1, 403, 407, 261, 378};
    int32_t got[5];
    memcpy(got, t->data, sizeof got);
    cr_expect_arr_eq(got, want, sizeof want);

    t = oxl_gguf_find_tensor(g, "logits");
    cr_assert_not_null(t);
    cr_expect(t->type == 0 && t->ne[0] == 512 && t->ne[1] == 5 && t->offset == 32 && t->nbytes == 512 * 5 * 4);
    t = oxl_gguf_find_tensor(g, "greedy");
    cr_assert_not_null(t);
    cr_expect(t->type == 26 && t->ne[0] == 64 && t->offset == 10272);
    oxl_gguf_close(g);
}

Test(gguf, open_errors_name_the_path) {
    oxl_error err = {{0}};
    cr_expect_null(oxl_gguf_open("/nonexistent/model.gguf", &err));
    cr_expect(strstr(err.msg, "/nonexistent/model.gguf: cannot open") != NULL, "%s", err.msg);
    cr_expect_null(oxl_gguf_open(OXL_SOURCE_DIR "/models", &err));
    cr_expect(strstr(err.msg, "not a regular file") != NULL, "%s", err.msg);
    cr_expect_null(oxl_gguf_open_memory(NULL, 0, "empty.gguf", &err));
    cr_expect(strstr(err.msg, "empty.gguf: magic at byte 0: file truncated") != NULL, "%s", err.msg);
}

/* ---- value types and conversions ------------------------------------------------------------- */

Test(gguf, value_types_and_conversions) {
    oxl_craft c = {0};
    oxl_craft_header(&c, 2, 0, 10);
    oxl_craft_kv_begin(&c, "i8", OXL_GGUF_INT8);
    oxl_craft_u8(&c, 0xfe); /* -2 */
    oxl_craft_kv_begin(&c, "u64.big", OXL_GGUF_UINT64);
    oxl_craft_u64(&c, UINT64_MAX);
    oxl_craft_kv_begin(&c, "i32.neg", OXL_GGUF_INT32);
    oxl_craft_u32(&c, (uint32_t)-7);
    oxl_craft_kv_begin(&c, "f32", OXL_GGUF_FLOAT32);
    oxl_craft_f32(&c, 0.25f);
    oxl_craft_kv_begin(&c, "b", OXL_GGUF_BOOL);
    oxl_craft_u8(&c, 1);
    oxl_craft_kv_begin(&c, "s", OXL_GGUF_STRING);
    oxl_craft_u64(&c, 3);
    oxl_craft_bytes(&c, "a\0b", 3);
    oxl_craft_kv_array(&c, "arr.u16", OXL_GGUF_UINT16, 3);
    for (int i = 0; i < 3; i++) {
        oxl_craft_u8(&c, (uint8_t)(10 + i));
        oxl_craft_u8(&c, 0);
    }
    oxl_craft_kv_array(&c, "arr.str", OXL_GGUF_STRING, 2);
    oxl_craft_str(&c, "xy");
    oxl_craft_str(&c, "");
    /* an array of 2 arrays of int8: [[1], []] */
    oxl_craft_kv_array(&c, "arr.nested", OXL_GGUF_ARRAY, 2);
    oxl_craft_u32(&c, OXL_GGUF_INT8);
    oxl_craft_u64(&c, 1);
    oxl_craft_u8(&c, 1);
    oxl_craft_u32(&c, OXL_GGUF_INT8);
    oxl_craft_u64(&c, 0);
    oxl_craft_kv_begin(&c, "f64", OXL_GGUF_FLOAT64);
    oxl_craft_u64(&c, 0x4000000000000000u); /* 2.0 */

    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open_memory(c.buf, c.len, "types.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_expect_eq(oxl_gguf_version(g), 2);
    cr_expect_eq(oxl_gguf_data_offset(g), c.len); /* no tensors: no padding */

    int64_t i;
    uint64_t u;
    double d;
    bool b;
    cr_expect(oxl_gguf_kv_int(g, 0, &i) && i == -2);
    cr_expect_not(oxl_gguf_kv_uint(g, 0, &u));
    cr_expect_not(oxl_gguf_kv_int(g, 1, &i));
    cr_expect(oxl_gguf_kv_uint(g, 1, &u) && u == UINT64_MAX);
    cr_expect_not(oxl_gguf_kv_float(g, 1, &d));
    cr_expect(oxl_gguf_kv_float(g, 3, &d) && d == 0.25);
    cr_expect_not(oxl_gguf_kv_int(g, 3, &i));
    cr_expect(oxl_gguf_kv_bool(g, 4, &b) && b);
    cr_expect_not(oxl_gguf_kv_int(g, 4, &i));
    cr_expect(oxl_gguf_kv_float(g, 9, &d) && d == 2.0);

    size_t len = 0;
    const char *s = oxl_gguf_kv_str(g, 5, &len);
    cr_expect(s && len == 3 && strcmp(s, "a") == 0 && memcmp(s, "a\0b", 3) == 0);
    cr_expect_null(oxl_gguf_kv_str(g, 4, &len));

    cr_expect_eq(oxl_gguf_arr_type(g, 6), OXL_GGUF_UINT16);
    cr_expect_eq(oxl_gguf_arr_n(g, 6), 3);
    const uint8_t *a = oxl_gguf_arr_data(g, 6);
    cr_expect(a && a[0] == 10 && a[2] == 11 && a[4] == 12);
    s = oxl_gguf_arr_str(g, 7, 0, &len);
    cr_expect(s && len == 2 && memcmp(s, "xy", 2) == 0);
    s = oxl_gguf_arr_str(g, 7, 1, &len);
    cr_expect(s && len == 0);
    cr_expect_eq(oxl_gguf_arr_type(g, 8), OXL_GGUF_ARRAY);
    cr_expect_eq(oxl_gguf_arr_n(g, 8), 2);
    cr_expect_null(oxl_gguf_arr_data(g, 8));
    cr_expect_null(oxl_gguf_arr_str(g, 8, 0, &len));

    /* typed look-ups: found, absent, present with an unusable value */
    uint32_t u32 = 123;
    cr_expect_eq(oxl_gguf_get_uint32(g, "absent", &u32, &err), 0);
    cr_expect_eq(u32, 123);
    cr_expect_eq(oxl_gguf_get_uint32(g, "i32.neg", &u32, &err), -1);
    cr_expect(strstr(err.msg, "types.gguf: key 'i32.neg'") && strstr(err.msg, "-7 out of range for uint32"), "%s",
              err.msg);
    cr_expect_eq(oxl_gguf_get_uint32(g, "u64.big", &u32, &err), -1);
    cr_expect(strstr(err.msg, "key 'u64.big'") != NULL, "%s", err.msg);
    cr_expect_eq(oxl_gguf_get_int(g, "s", &i, &err), -1);
    cr_expect(strstr(err.msg, "key 's'") && strstr(err.msg, "string value"), "%s", err.msg);
    float f;
    cr_expect_eq(oxl_gguf_get_float(g, "arr.u16", &f, &err), -1);
    cr_expect(strstr(err.msg, "array of uint16") != NULL, "%s", err.msg);
    cr_expect_eq(oxl_gguf_get_bool(g, "b", &b, &err), 1);
    cr_expect_eq(oxl_gguf_get_int(g, "i8", &i, &err), 1);
    cr_expect_eq(i, -2);
    cr_expect_str_eq(oxl_gguf_vtype_name(OXL_GGUF_FLOAT64), "float64");
    oxl_gguf_close(g);
    oxl_craft_free(&c);
}

/* ---- malformed files ------------------------------------------------------------------------- */

/* Opening must fail with a message naming the buffer, a byte offset and want. */
static void expect_reject(const oxl_craft *c, const char *want) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open_memory(c->buf, c->len, "bad.gguf", &err);
    if (g)
        oxl_gguf_close(g);
    cr_assert_null(g, "accepted a file that should fail with '%s'", want);
    cr_expect(strncmp(err.msg, "bad.gguf: ", 10) == 0, "message '%s' does not name the file", err.msg);
    cr_expect(strstr(err.msg, "at byte") != NULL, "message '%s' names no byte offset", err.msg);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
}

static oxl_gguf *expect_accept(const oxl_craft *c) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open_memory(c->buf, c->len, "good.gguf", &err);
    cr_assert_not_null(g, "rejected: %s", err.msg);
    return g;
}

/* A file with one key and two tensors: "first" (32, 4) f32 at offset 0 (512 bytes), and the
 * second described by the arguments; data_len zero bytes of data follow the aligned header. */
typedef struct second_tensor {
    const char *name;
    uint32_t n_dims;
    int64_t ne[5];
    uint32_t type;
    uint64_t offset;
    size_t data_len;
} second_tensor;

static second_tensor good_second(void) { return (second_tensor){"second", 2, {32, 2, 1, 1, 1}, 0, 512, 768}; }

static void build_two_tensors(oxl_craft *c, second_tensor s) {
    oxl_craft_header(c, 3, 2, 1);
    oxl_craft_kv_str(c, "general.architecture", "test");
    const int64_t ne0[2] = {32, 4};
    oxl_craft_tensor(c, "first", 2, ne0, 0, 0);
    oxl_craft_tensor(c, s.name, s.n_dims, s.ne, s.type, s.offset);
    oxl_craft_pad(c, OXL_GGUF_DEFAULT_ALIGNMENT);
    oxl_craft_zeros(c, s.data_len);
}

static void expect_second_rejected(second_tensor s, const char *want) {
    oxl_craft c = {0};
    build_two_tensors(&c, s);
    expect_reject(&c, want);
    oxl_craft_free(&c);
}

Test(gguf_malformed, baseline_is_valid) {
    oxl_craft c = {0};
    build_two_tensors(&c, good_second());
    oxl_gguf *g = expect_accept(&c);
    const oxl_gguf_tensor *t = oxl_gguf_find_tensor(g, "second");
    cr_assert_not_null(t);
    cr_expect_eq(t->nbytes, 256);
    cr_expect_eq((const uint8_t *)t->data, c.buf + oxl_gguf_data_offset(g) + 512);
    cr_expect_eq(oxl_gguf_data_offset(g) % 32, 0);
    oxl_gguf_close(g);
    oxl_craft_free(&c);
}

Test(gguf_malformed, dimensions) {
    second_tensor s = good_second();
    s.n_dims = 0;
    expect_second_rejected(s, "tensor 1 ('second') n_dims = 0");
    s = good_second();
    s.n_dims = 5;
    expect_second_rejected(s, "tensor 1 ('second') n_dims = 5");
    s = good_second();
    s.ne[1] = -5;
    expect_second_rejected(s, "tensor 1 ('second') dimension 1 = -5 at byte");
    s = good_second();
    s.ne[0] = INT64_MIN;
    expect_second_rejected(s, "dimension 0 = -9223372036854775808");
    s = good_second();
    s.ne[0] = (int64_t)1 << 32;
    s.ne[1] = (int64_t)1 << 31;
    expect_second_rejected(s, "tensor 1 ('second') shape (4294967296, 2147483648, 1, 1)");
    s = good_second();
    s.n_dims = 4;
    s.ne[0] = 32, s.ne[1] = (int64_t)1 << 20, s.ne[2] = (int64_t)1 << 20, s.ne[3] = (int64_t)1 << 40;
    expect_second_rejected(s, "element count overflows int64");
    /* 2^62 f32 elements are countable in int64 but 2^64 bytes do not fit in size_t */
    s = good_second();
    s.n_dims = 1;
    s.ne[0] = (int64_t)1 << 62;
    expect_second_rejected(s, "size in bytes of type f32 overflows size_t");
}

Test(gguf_malformed, zero_element_tensor_is_valid) {
    /* ggml accepts a dimension of 0 (an empty tensor); so does this reader */
    second_tensor s = good_second();
    s.ne[1] = 0;
    oxl_craft c = {0};
    build_two_tensors(&c, s);
    oxl_gguf *g = expect_accept(&c);
    cr_expect_eq(oxl_gguf_find_tensor(g, "second")->nbytes, 0);
    oxl_gguf_close(g);
    oxl_craft_free(&c);
}

Test(gguf_malformed, types) {
    second_tensor s = good_second();
    s.type = 9999;
    expect_second_rejected(s, "tensor 1 ('second') type id 9999 at byte");
    s.type = 4; /* Q4_2, removed from ggml: no block size */
    expect_second_rejected(s, "type id 4 at byte");
    s = good_second();
    s.type = 2; /* q4_0, blocks of 32 */
    s.ne[0] = 48;
    expect_second_rejected(s, "dimension 0 = 48 at byte");
    expect_second_rejected(s, "not a multiple of the block size 32");
}

Test(gguf_malformed, offsets) {
    second_tensor s = good_second();
    s.offset = (uint64_t)1 << 40;
    expect_second_rejected(s, "tensor 1 ('second') offset 1099511627776 at byte");
    s.offset = UINT64_MAX - 31; /* aligned, and offset + size wraps around */
    expect_second_rejected(s, "past the end of the file");
    s = good_second();
    s.data_len = 700; /* the second tensor's last bytes are missing */
    expect_second_rejected(s, "past the end of the file");
    s = good_second();
    s.offset = 520;
    expect_second_rejected(s, "offset 520 at byte");
    expect_second_rejected(s, "not a multiple of the alignment 32");
    s = good_second();
    s.offset = 256;
    expect_second_rejected(s, "overlaps tensor 0 ('first')");
    s.offset = 0;
    expect_second_rejected(s, "overlaps");
}

Test(gguf_malformed, tensor_names) {
    second_tensor s = good_second();
    s.name = "first";
    expect_second_rejected(s, "tensor 1 ('first') name at byte");
    expect_second_rejected(s, "duplicate of tensor 0");
    s.name = "a_name_of_sixty_four_bytes_is_one_more_than_ggml_allows_xxxxxxxx";
    cr_assert_eq(strlen(s.name), 64);
    expect_second_rejected(s, "tensor 1 name length 64 at byte");
}

static void build_alignment(oxl_craft *c, uint32_t vtype, uint64_t value) {
    oxl_craft_header(c, 3, 1, 1);
    oxl_craft_kv_begin(c, "general.alignment", vtype);
    if (vtype == OXL_GGUF_UINT64)
        oxl_craft_u64(c, value);
    else
        oxl_craft_u32(c, (uint32_t)value);
    const int64_t ne[1] = {32};
    oxl_craft_tensor(c, "t", 1, ne, 0, 0);
    oxl_craft_pad(c, 64);
    oxl_craft_zeros(c, 128);
}

Test(gguf_malformed, alignment) {
    oxl_craft c = {0};
    build_alignment(&c, OXL_GGUF_UINT64, 32);
    expect_reject(&c, "key 0 ('general.alignment') value at byte 53: type uint64, must be uint32");
    oxl_craft_free(&c);
    build_alignment(&c, OXL_GGUF_INT32, 32);
    expect_reject(&c, "type int32, must be uint32");
    oxl_craft_free(&c);
    build_alignment(&c, OXL_GGUF_UINT32, 0);
    expect_reject(&c, "('general.alignment') value 0 at byte 53: not a power of two");
    oxl_craft_free(&c);
    build_alignment(&c, OXL_GGUF_UINT32, 48);
    expect_reject(&c, "value 48 at byte 53: not a power of two");
    oxl_craft_free(&c);

    build_alignment(&c, OXL_GGUF_UINT32, 64);
    oxl_gguf *g = expect_accept(&c);
    cr_expect_eq(oxl_gguf_alignment(g), 64);
    cr_expect_eq(oxl_gguf_data_offset(g), 128);
    oxl_gguf_close(g);
    oxl_craft_free(&c);
}

Test(gguf_malformed, strings) {
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_u64(&c, 1000);
    oxl_craft_bytes(&c, "general.name", 12);
    expect_reject(&c, "key 0 name length 1000 at byte 24: runs past the end of the file");
    oxl_craft_put_u64(&c, 24, UINT64_MAX - 7);
    expect_reject(&c, "key 0 name length 18446744073709551608 at byte 24: runs past the end");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_begin(&c, "general.name", OXL_GGUF_STRING);
    oxl_craft_u64(&c, (uint64_t)1 << 63);
    oxl_craft_zeros(&c, 16);
    expect_reject(&c, "key 0 ('general.name') string value length 9223372036854775808 at byte 48");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "tokenizer.ggml.tokens", OXL_GGUF_STRING, 2);
    oxl_craft_str(&c, "a");
    oxl_craft_u64(&c, UINT64_MAX);
    expect_reject(&c, "key 0 ('tokenizer.ggml.tokens') element 1 string length 18446744073709551615");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_str(&c, "", "x");
    expect_reject(&c, "key 0 name at byte 24: empty");
    oxl_craft_free(&c);
}

static void build_nested(oxl_craft *c, int depth) {
    oxl_craft_header(c, 3, 0, 1);
    oxl_craft_kv_begin(c, "nested", OXL_GGUF_ARRAY);
    for (int d = 1; d < depth; d++) {
        oxl_craft_u32(c, OXL_GGUF_ARRAY);
        oxl_craft_u64(c, 1);
    }
    oxl_craft_u32(c, OXL_GGUF_UINT8);
    oxl_craft_u64(c, 1);
    oxl_craft_u8(c, 7);
}

Test(gguf_malformed, arrays) {
    oxl_craft c = {0};
    build_nested(&c, 8);
    oxl_gguf_close(expect_accept(&c));
    oxl_craft_free(&c);
    build_nested(&c, 9);
    expect_reject(&c, "arrays nested deeper than 8 levels");
    oxl_craft_free(&c);
    build_nested(&c, 10000);
    expect_reject(&c, "key 0 ('nested') element 0 element 0");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "big", OXL_GGUF_UINT32, 1000);
    oxl_craft_zeros(&c, 100);
    expect_reject(&c, "key 0 ('big') array length 1000 at byte 43: uint32 elements need at least 4 bytes each");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "huge", OXL_GGUF_STRING, UINT64_MAX / 4);
    oxl_craft_zeros(&c, 100);
    expect_reject(&c, "key 0 ('huge') array length 4611686018427387903 at byte 44");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "bad", 13, 1);
    expect_reject(&c, "key 0 ('bad') array element type 13 at byte 39: unknown value type");
    oxl_craft_free(&c);
}

Test(gguf_malformed, keys) {
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 0, 2);
    oxl_craft_kv_u32(&c, "llama.block_count", 5);
    oxl_craft_kv_u32(&c, "llama.block_count", 6);
    expect_reject(&c, "key 1 ('llama.block_count') at byte 57: duplicate of key 0 at byte 24");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_begin(&c, "k", 13);
    oxl_craft_u32(&c, 0);
    expect_reject(&c, "key 0 ('k') value type 13 at byte 33: unknown value type");
    oxl_craft_free(&c);

    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_begin(&c, "k", OXL_GGUF_UINT64);
    oxl_craft_u32(&c, 0);
    expect_reject(&c, "key 0 ('k') value at byte 37: file truncated (needs 8 bytes, 4 remain)");
    oxl_craft_free(&c);
}

Test(gguf_malformed, counts) {
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 1000000, 0);
    oxl_craft_zeros(&c, 1000);
    expect_reject(&c, "tensor count 1000000 at byte 8: larger than the file can hold");
    oxl_craft_put_u64(&c, 8, UINT64_MAX);
    expect_reject(&c, "tensor count -1 at byte 8: negative");
    oxl_craft_put_u64(&c, 8, 0);
    oxl_craft_put_u64(&c, 16, (uint64_t)1 << 40);
    expect_reject(&c, "key-value count 1099511627776 at byte 16: larger than the file can hold");
    oxl_craft_put_u64(&c, 16, (uint64_t)1 << 63);
    expect_reject(&c, "key-value count -9223372036854775808 at byte 16: negative");
    oxl_craft_free(&c);

    /* enough bytes for the count at the header, not after the keys */
    oxl_craft_header(&c, 3, 3, 1);
    oxl_craft_kv_str(&c, "general.name", "a string long enough to hold most of the file up");
    oxl_craft_zeros(&c, 40);
    expect_reject(&c, "tensor count 3 at byte 8: larger than the file can hold (tensor infos start at byte 104");
    oxl_craft_free(&c);

    /* the data section must start inside the file */
    oxl_craft_header(&c, 3, 1, 0);
    const int64_t ne[1] = {0};
    oxl_craft_tensor(&c, "empty", 1, ne, 0, 0);
    expect_reject(&c, "data section at byte 64 (tensor infos end at byte 61, alignment 32): past the end");
    oxl_craft_pad(&c, 32);
    oxl_gguf_close(expect_accept(&c));
    oxl_craft_free(&c);
}

Test(gguf_malformed, magic_and_version) {
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 0, 0);
    memcpy(c.buf, "GGML", 4);
    expect_reject(&c, "magic 'GGML' at byte 0: not a GGUF file");
    memcpy(c.buf, "FUGG", 4);
    expect_reject(&c, "big-endian");
    memcpy(c.buf, "GGUF", 4);
    oxl_gguf_close(expect_accept(&c));

    oxl_craft_put_u32(&c, 4, 1);
    expect_reject(&c, "version 1 at byte 4: GGUF v1 is no longer supported");
    oxl_craft_put_u32(&c, 4, 0);
    expect_reject(&c, "version 0 at byte 4");
    oxl_craft_put_u32(&c, 4, 4);
    expect_reject(&c, "version 4 at byte 4: newer than the supported versions");
    /* a big-endian writer stores version 3 as bytes 00 00 00 03 */
    oxl_craft_put_u32(&c, 4, 0x03000000u);
    expect_reject(&c, "version 0x03000000 at byte 4: the file is big-endian");
    oxl_craft_free(&c);

    oxl_craft_bytes(&c, "GGUF\3\0", 6);
    expect_reject(&c, "version at byte 4: file truncated (needs 4 bytes, 2 remain)");
    oxl_craft_free(&c);
}

/* ---- exhaustive truncation and corruption of the bundled model ------------------------------ */

/* When a corrupted file is accepted, everything it hands out must still lie inside the buffer. */
static void check_bounds(const oxl_gguf *g, const uint8_t *buf, size_t size) {
    for (int64_t i = 0; i < oxl_gguf_n_tensors(g); i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        const uint8_t *d = t->data;
        cr_assert(d >= buf + oxl_gguf_data_offset(g) && t->nbytes <= size && d - buf <= (ptrdiff_t)(size - t->nbytes));
        cr_assert(t->n_dims >= 1 && t->n_dims <= 4 && t->offset % oxl_gguf_alignment(g) == 0);
    }
    for (int64_t i = 0; i < oxl_gguf_n_kv(g); i++) {
        if (oxl_gguf_arr_type(g, i) != OXL_GGUF_STRING)
            continue;
        uint64_t n = oxl_gguf_arr_n(g, i);
        for (uint64_t j = 0; j < n; j += 97) {
            size_t len;
            const uint8_t *s = (const uint8_t *)oxl_gguf_arr_str(g, i, j, &len);
            cr_assert(s >= buf && len <= size && s - buf <= (ptrdiff_t)(size - len));
        }
    }
}

Test(gguf_exhaustive, truncation_at_every_header_byte) {
    size_t size;
    uint8_t *file = read_file(STORIES, &size);
    oxl_error err = {{0}};
    /* the last tensor ends exactly at the end of the file, so every cut loses data */
    for (size_t n = 0; n < STORIES_DATA_OFFSET + 4096; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact-size copy: reads past the cut are caught */
        memcpy(copy, file, n);
        oxl_gguf *g = oxl_gguf_open_memory(copy, n, "cut.gguf", &err);
        cr_assert_null(g, "accepted the file cut at byte %zu", n);
        cr_assert(strstr(err.msg, "at byte") != NULL, "cut at %zu: '%s'", n, err.msg);
        free(copy);
    }
    for (size_t n = size - 64; n < size; n++) {
        cr_assert_null(oxl_gguf_open_memory(file, n, "cut.gguf", &err), "cut at %zu accepted", n);
        cr_assert(strstr(err.msg, "past the end of the file") != NULL, "%s", err.msg);
    }
    oxl_gguf *g = oxl_gguf_open_memory(file, size, "whole.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    oxl_gguf_close(g);
    free(file);
}

Test(gguf_exhaustive, corrupt_every_header_byte) {
    size_t size;
    uint8_t *file = read_file(STORIES, &size);
    oxl_error err;
    static const int modes[3] = {-1, 0x00, 0x7f}; /* xor 0xff, set 0x00, set 0x7f */
    for (size_t at = 0; at < STORIES_DATA_OFFSET; at++) {
        uint8_t orig = file[at];
        for (int m = 0; m < 3; m++) {
            file[at] = modes[m] < 0 ? (uint8_t)(orig ^ 0xff) : (uint8_t)modes[m];
            err.msg[0] = '\0';
            oxl_gguf *g = oxl_gguf_open_memory(file, size, "flip.gguf", &err);
            if (g) {
                check_bounds(g, file, size);
                oxl_gguf_close(g);
            } else {
                cr_assert(strncmp(err.msg, "flip.gguf: ", 11) == 0 && strstr(err.msg, "at byte"),
                          "byte %zu mode %d: '%s'", at, m, err.msg);
            }
        }
        file[at] = orig;
    }
    free(file);
}
