/* Hostile GGUF files (issue 10): files crafted to make a reader or loader trust a claimed size.
 *
 * Each case must be refused with a message naming the file, the field and (for the reader) its byte
 * offset, and the largest heap request made on the way (tests/unit/alloc_probe.h) must stay within a
 * small multiple of the file's size: nothing is allocated in proportion to a count, length or
 * dimension the file merely claims. The first part adds to the reader cases of tests/unit/test_gguf.c
 * (which checks messages but not allocations); the second part crafts llama models that are
 * well-formed GGUF but wrong as models. Expected messages and values follow from how each file is
 * built, not from running the code. */
#include "alloc_probe.h"
#include "gguf_craft.h"
#include "model.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Allowed largest request while reading a file of n bytes: the reader's tables cost at most about
 * 8 bytes of bookkeeping per file byte (a 96-byte key record per 13-byte minimal pair). */
static size_t alloc_bound(size_t n) { return 16 * n + 4096; }

/* An exact-size copy, so that a read past the end of the file is caught by the sanitizer build. */
static uint8_t *exact_copy(const oxl_craft *c) {
    uint8_t *b = malloc(c->len ? c->len : 1);
    cr_assert_not_null(b);
    if (c->len)
        memcpy(b, c->buf, c->len);
    return b;
}

/* Opening must fail with want in a message that names the file and a byte offset, within the
 * allocation bound. */
static void expect_hostile(const oxl_craft *c, const char *want) {
    uint8_t *copy = exact_copy(c);
    oxl_error err = {{0}};
    oxl_probe_reset();
    oxl_gguf *g = oxl_gguf_open_memory(copy, c->len, "hostile.gguf", &err);
    size_t largest = oxl_probe_largest();
    oxl_gguf_close(g);
    free(copy);
    cr_assert_null(g, "accepted a file that should fail with '%s'", want);
    cr_expect(strncmp(err.msg, "hostile.gguf: ", 14) == 0, "message '%s' does not name the file", err.msg);
    cr_expect(strstr(err.msg, "at byte") != NULL, "message '%s' names no byte offset", err.msg);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
    cr_expect(largest <= alloc_bound(c->len), "'%s': a request of %zu bytes for a file of %zu", want, largest, c->len);
}

/* A file with one tensor described by the arguments, data_len zero bytes of data, alignment 32. */
static void one_tensor(oxl_craft *c, uint32_t n_dims, const int64_t *ne, uint32_t type, uint64_t offset,
                       size_t data_len) {
    oxl_craft_header(c, 3, 1, 0);
    oxl_craft_tensor(c, "t", n_dims, ne, type, offset);
    oxl_craft_pad(c, 32);
    oxl_craft_zeros(c, data_len);
}

static void expect_tensor_rejected(uint32_t n_dims, const int64_t *ne, uint32_t type, const char *want) {
    oxl_craft c = {0};
    one_tensor(&c, n_dims, ne, type, 0, 256);
    expect_hostile(&c, want);
    oxl_craft_free(&c);
}

/* ---- dimensions and types --------------------------------------------------------------------- */

Test(gguf_hostile, dimension_counts) {
    /* n_dims claims 2^32-1 dimensions (8 bytes each) but only one follows */
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 1, 0);
    oxl_craft_str(&c, "t");
    oxl_craft_u32(&c, UINT32_MAX);
    oxl_craft_u64(&c, 8);
    oxl_craft_u32(&c, 0);
    oxl_craft_u64(&c, 0);
    oxl_craft_pad(&c, 32);
    oxl_craft_zeros(&c, 32);
    expect_hostile(&c, "tensor 0 ('t') n_dims = 4294967295 at byte 33: must be 1..4");
    oxl_craft_put_u32(&c, 33, 0);
    expect_hostile(&c, "tensor 0 ('t') n_dims = 0 at byte 33");
    oxl_craft_free(&c);
}

Test(gguf_hostile, dimension_products) {
    /* 2^16 in each of 4 dimensions: the product is exactly 2^64, which wraps to 0 in uint64 */
    const int64_t wrap[4] = {1 << 16, 1 << 16, 1 << 16, 1 << 16};
    expect_tensor_rejected(4, wrap, 0,
                           "tensor 0 ('t') shape (65536, 65536, 65536, 65536) at byte 37: element count "
                           "overflows int64");
    /* exactly INT64_MAX elements is refused too (ggml's test rejects a product equal to the limit) */
    const int64_t max[1] = {INT64_MAX};
    expect_tensor_rejected(1, max, 0,
                           "tensor 0 ('t') shape (9223372036854775807, 1, 1, 1) at byte 37: element count "
                           "overflows int64");
    /* the last dimension tips a product of small ones over the limit */
    const int64_t tip[4] = {3, 5, 7, INT64_MAX / 105 + 1};
    expect_tensor_rejected(4, tip, 0, "element count overflows int64");
    /* 2^61 f64 elements are countable, but their 2^64 bytes do not fit in size_t */
    const int64_t f64[1] = {(int64_t)1 << 61};
    expect_tensor_rejected(1, f64, 28,
                           "tensor 0 ('t') shape (2305843009213693952, 1, 1, 1) at byte 37: size in bytes "
                           "of type f64 overflows size_t");
    /* 2^62 q8_0 elements are 2^57 blocks of 34 bytes: representable, and far past the end */
    const int64_t q8[1] = {(int64_t)1 << 62};
    expect_tensor_rejected(1, q8, 8, "its 4899916394579099648 bytes of data end past the end of the file");
    /* a negative dimension after positive ones, and the most negative value */
    const int64_t neg[4] = {32, 2, 1, -1};
    expect_tensor_rejected(4, neg, 0, "tensor 0 ('t') dimension 3 = -1 at byte 61: negative");
}

Test(gguf_hostile, empty_tensor_with_huge_dimensions) {
    /* a zero dimension makes the tensor empty whatever the others claim: accepted, 0 bytes, and
     * nothing sized by the other dimensions is allocated */
    const int64_t ne[4] = {0, (int64_t)1 << 62, (int64_t)1 << 62, INT64_MAX};
    oxl_craft c = {0};
    one_tensor(&c, 4, ne, 0, 0, 0);
    uint8_t *copy = exact_copy(&c);
    oxl_error err = {{0}};
    oxl_probe_reset();
    oxl_gguf *g = oxl_gguf_open_memory(copy, c.len, "empty.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_expect_eq(oxl_gguf_tensor_at(g, 0)->nbytes, 0);
    cr_expect_eq(oxl_gguf_tensor_at(g, 0)->ne[3], INT64_MAX);
    cr_expect_leq(oxl_probe_largest(), alloc_bound(c.len));
    oxl_gguf_close(g);
    free(copy);
    oxl_craft_free(&c);
}

Test(gguf_hostile, unknown_type_ids) {
    const int64_t ne[1] = {32};
    /* ids ggml removed (Q4_2, Q4_3, the Q4_0_N_M and IQ4_NL_N_M repackings), the first id past the
     * table, and the largest */
    static const uint32_t ids[] = {4, 5, 31, 32, 33, 36, 37, 38, OXL_TYPE_COUNT, UINT32_MAX};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        char want[96];
        snprintf(want, sizeof want, "tensor 0 ('t') type id %u at byte 45: unknown ggml type", ids[i]);
        expect_tensor_rejected(1, ne, ids[i], want);
    }
}

/* ---- tensor data placement -------------------------------------------------------------------- */

/* Tensors a (na f32), b and c (32 f32 = 128 bytes each) at the given offsets, then data_len zero bytes. */
static void three_tensors(oxl_craft *c, uint64_t oa, uint64_t ob, uint64_t oc, int64_t na, size_t data_len) {
    oxl_craft_header(c, 3, 3, 0);
    const int64_t nea[1] = {na}, ne[1] = {32};
    oxl_craft_tensor(c, "a", 1, nea, 0, oa);
    oxl_craft_tensor(c, "b", 1, ne, 0, ob);
    oxl_craft_tensor(c, "c", 1, ne, 0, oc);
    oxl_craft_pad(c, 32);
    oxl_craft_zeros(c, data_len);
}

Test(gguf_hostile, overlaps) {
    oxl_craft c = {0};
    /* c lies inside a, which spans 512 bytes; b sits between them in file order */
    three_tensors(&c, 0, 512, 128, 128, 640);
    expect_hostile(&c, "tensor 2 ('c') offset 128 at byte");
    expect_hostile(&c, "overlaps tensor 0 ('a') data [0, 512)");
    oxl_craft_free(&c);
    /* two tensors at the same offset */
    three_tensors(&c, 0, 128, 128, 32, 256);
    expect_hostile(&c, "overlaps tensor 1 ('b') data [128, 256)");
    oxl_craft_free(&c);
    /* an empty tensor may share an offset with another: it holds no bytes */
    three_tensors(&c, 128, 0, 128, 0, 256);
    uint8_t *copy = exact_copy(&c);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open_memory(copy, c.len, "shared.gguf", &err);
    cr_expect_not_null(g, "%s", err.msg);
    oxl_gguf_close(g);
    free(copy);
    oxl_craft_free(&c);
}

Test(gguf_hostile, offsets_past_the_end) {
    oxl_craft c = {0};
    /* the last tensor starts exactly at the end of the data */
    three_tensors(&c, 0, 128, 256, 32, 256);
    expect_hostile(&c, "tensor 2 ('c') offset 256 at byte");
    expect_hostile(&c, "its 128 bytes of data end past the end of the file");
    oxl_craft_free(&c);
    /* an offset whose sum with the size wraps around to a small number */
    three_tensors(&c, 0, 128, UINT64_MAX - 127, 32, 384);
    expect_hostile(&c, "tensor 2 ('c') offset 18446744073709551488 at byte");
    oxl_craft_free(&c);
}

Test(gguf_hostile, misaligned_under_custom_alignment) {
    /* general.alignment 64: an offset of 32 is aligned for the default but not for this file */
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 2, 1);
    oxl_craft_kv_u32(&c, "general.alignment", 64);
    const int64_t ne[1] = {8};
    oxl_craft_tensor(&c, "a", 1, ne, 0, 0);
    oxl_craft_tensor(&c, "b", 1, ne, 0, 32);
    oxl_craft_pad(&c, 64);
    oxl_craft_zeros(&c, 128);
    expect_hostile(&c, "tensor 1 ('b') offset 32 at byte");
    expect_hostile(&c, "not a multiple of the alignment 64");
    oxl_craft_free(&c);
}

Test(gguf_hostile, alignment_values) {
    oxl_craft c = {0};
    /* the right name with a string, an array and a float value */
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_str(&c, "general.alignment", "32");
    expect_hostile(&c, "key 0 ('general.alignment') value at byte 53: type string, must be uint32");
    oxl_craft_free(&c);
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "general.alignment", OXL_GGUF_UINT32, 1);
    oxl_craft_u32(&c, 32);
    expect_hostile(&c, "type array, must be uint32");
    oxl_craft_free(&c);
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_begin(&c, "general.alignment", OXL_GGUF_FLOAT32);
    oxl_craft_f32(&c, 32.0f);
    expect_hostile(&c, "type float32, must be uint32");
    oxl_craft_free(&c);
    /* not powers of two, the largest uint32 */
    static const uint32_t bad[] = {3, 96, 0x80000001u, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        oxl_craft_header(&c, 3, 0, 1);
        oxl_craft_kv_u32(&c, "general.alignment", bad[i]);
        char want[96];
        snprintf(want, sizeof want, "('general.alignment') value %u at byte 53: not a power of two", bad[i]);
        expect_hostile(&c, want);
        oxl_craft_free(&c);
    }
    /* 2^31 is a power of two, but the padding it asks for runs past the end of the file */
    oxl_craft_header(&c, 3, 1, 1);
    oxl_craft_kv_u32(&c, "general.alignment", 0x80000000u);
    const int64_t ne[1] = {8};
    oxl_craft_tensor(&c, "t", 1, ne, 0, 0);
    oxl_craft_zeros(&c, 64);
    expect_hostile(&c, "data section at byte 2147483648");
    expect_hostile(&c, "alignment 2147483648): past the end of the file");
    oxl_craft_free(&c);
}

/* ---- strings, arrays, keys and counts ----------------------------------------------------------- */

Test(gguf_hostile, string_lengths) {
    oxl_craft c = {0};
    /* a tensor name claiming 2^64-1 bytes */
    oxl_craft_header(&c, 3, 1, 0);
    oxl_craft_u64(&c, UINT64_MAX);
    oxl_craft_zeros(&c, 64);
    expect_hostile(&c, "tensor 0 name length 18446744073709551615 at byte 24: runs past the end of the file");
    oxl_craft_free(&c);
    /* a value string one byte longer than what remains */
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_begin(&c, "s", OXL_GGUF_STRING);
    oxl_craft_u64(&c, 5);
    oxl_craft_bytes(&c, "abcd", 4);
    expect_hostile(&c, "key 0 ('s') string value length 5 at byte 37: runs past the end of the file (4 bytes remain)");
    oxl_craft_put_u64(&c, 37, UINT64_MAX - 3); /* + 8 for the length field wraps a naive sum to 4 */
    expect_hostile(&c, "string value length 18446744073709551612 at byte 37");
    oxl_craft_free(&c);
    /* a NUL inside a key or a tensor name: such names could not be looked up */
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_u64(&c, 3);
    oxl_craft_bytes(&c, "a\0b", 3);
    oxl_craft_u32(&c, OXL_GGUF_UINT8);
    oxl_craft_u8(&c, 1);
    expect_hostile(&c, "key 0 name at byte 24: contains a NUL byte");
    oxl_craft_free(&c);
    oxl_craft_header(&c, 3, 1, 0);
    oxl_craft_u64(&c, 3);
    oxl_craft_bytes(&c, "t\0u", 3);
    oxl_craft_zeros(&c, 64);
    expect_hostile(&c, "tensor 0 name at byte 24: contains a NUL byte");
    oxl_craft_free(&c);
}

Test(gguf_hostile, array_counts) {
    oxl_craft c = {0};
    /* over ggml's element limit, with the file far too short either way */
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "a", OXL_GGUF_UINT8, ((uint64_t)1 << 30) + 1);
    oxl_craft_zeros(&c, 64);
    expect_hostile(&c, "key 0 ('a') array length 1073741825 at byte 41: more than the limit of 1073741824 elements");
    oxl_craft_free(&c);
    /* uint64 elements: count × 8 would wrap a naive size computation to 8 */
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "a", OXL_GGUF_UINT64, ((uint64_t)1 << 61) + 1);
    oxl_craft_zeros(&c, 64);
    expect_hostile(&c, "key 0 ('a') array length 2305843009213693953 at byte 41");
    oxl_craft_free(&c);
    /* an array of arrays whose inner array claims a huge count */
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "a", OXL_GGUF_ARRAY, 2);
    oxl_craft_u32(&c, OXL_GGUF_STRING);
    oxl_craft_u64(&c, 100000);
    oxl_craft_zeros(&c, 64);
    expect_hostile(&c, "key 0 ('a') element 0 array length 100000 at byte 53: string elements need at least 8 bytes "
                       "each, 64 remain");
    oxl_craft_free(&c);
    /* within the limit and with just enough bytes for each element's length field, which then each
     * claim 2^63 bytes: the string-position table is bounded by the file */
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_array(&c, "tokens", OXL_GGUF_STRING, 512);
    for (int i = 0; i < 512; i++)
        oxl_craft_u64(&c, (uint64_t)1 << 63);
    expect_hostile(
        &c, "key 0 ('tokens') element 0 string length 9223372036854775808 at byte 54: runs past the end of the file");
    oxl_craft_free(&c);
}

Test(gguf_hostile, deep_nesting_is_cheap) {
    /* 100000 levels of arrays of one array: refused at the ninth level, before walking the rest */
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 0, 1);
    oxl_craft_kv_begin(&c, "deep", OXL_GGUF_ARRAY);
    enum { DEPTH = 100000 };
    uint8_t *nest = malloc((size_t)DEPTH * 12); /* written at once: appending 12 bytes at a time is quadratic */
    cr_assert_not_null(nest);
    for (int d = 0; d < DEPTH; d++) {
        const uint32_t t = OXL_GGUF_ARRAY;
        const uint64_t n = 1;
        memcpy(nest + 12 * d, &t, 4);
        memcpy(nest + 12 * d + 4, &n, 8);
    }
    oxl_craft_bytes(&c, nest, (size_t)DEPTH * 12);
    free(nest);
    expect_hostile(&c, "key 0 ('deep') element 0 element 0 element 0 element 0 element 0 element 0 element 0 array "
                       "element type at byte 124: arrays nested deeper than 8 levels");
    oxl_craft_free(&c);
}

Test(gguf_hostile, duplicates) {
    oxl_craft c = {0};
    /* a duplicate key of another type, and a second general.alignment that would change the layout */
    oxl_craft_header(&c, 3, 0, 2);
    oxl_craft_kv_u32(&c, "general.alignment", 32);
    oxl_craft_kv_str(&c, "general.alignment", "64");
    expect_hostile(&c, "key 1 ('general.alignment') at byte 57: duplicate of key 0 at byte 24");
    oxl_craft_free(&c);
    /* the duplicate tensor name comes after 100 distinct ones */
    oxl_craft_header(&c, 3, 101, 0);
    const int64_t ne[1] = {0};
    for (int i = 0; i < 100; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        oxl_craft_tensor(&c, name, 1, ne, 0, 0);
    }
    oxl_craft_tensor(&c, "t42", 1, ne, 0, 0);
    oxl_craft_pad(&c, 32);
    expect_hostile(&c, "tensor 100 ('t42') name at byte");
    expect_hostile(&c, "duplicate of tensor 42");
    oxl_craft_free(&c);
}

Test(gguf_hostile, claimed_counts) {
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, INT64_MAX, 0);
    oxl_craft_zeros(&c, 256);
    expect_hostile(&c, "tensor count 9223372036854775807 at byte 8: larger than the file can hold (256 bytes remain");
    oxl_craft_put_u64(&c, 8, 0);
    oxl_craft_put_u64(&c, 16, INT64_MAX);
    expect_hostile(&c, "key-value count 9223372036854775807 at byte 16: larger than the file can hold");
    /* the largest counts the remaining bytes could hold are allowed past the header check, and the
     * tables they size stay within the bound */
    oxl_craft_put_u64(&c, 16, 256 / 13);
    expect_hostile(&c, "key 0 name at byte 24: empty");
    oxl_craft_put_u64(&c, 16, 0);
    oxl_craft_put_u64(&c, 8, 256 / 32);
    expect_hostile(&c, "tensor 0 ('') n_dims = 0 at byte 32: must be 1..4");
    oxl_craft_free(&c);
}

/* ---- truncation and byte order ------------------------------------------------------------------ */

/* Every value type, a nested array, a string array, alignment 64 and three tensors (one empty). */
static void build_everything(oxl_craft *c) {
    oxl_craft_header(c, 3, 3, 8);
    oxl_craft_kv_u32(c, "general.alignment", 64);
    oxl_craft_kv_str(c, "general.name", "everything");
    oxl_craft_kv_begin(c, "i64", OXL_GGUF_INT64);
    oxl_craft_u64(c, (uint64_t)-5);
    oxl_craft_kv_begin(c, "f32", OXL_GGUF_FLOAT32);
    oxl_craft_f32(c, 0.25f);
    oxl_craft_kv_begin(c, "b", OXL_GGUF_BOOL);
    oxl_craft_u8(c, 1);
    oxl_craft_kv_array(c, "strs", OXL_GGUF_STRING, 3);
    oxl_craft_str(c, "x");
    oxl_craft_str(c, "");
    oxl_craft_str(c, "yz");
    oxl_craft_kv_array(c, "nested", OXL_GGUF_ARRAY, 2);
    oxl_craft_u32(c, OXL_GGUF_UINT16);
    oxl_craft_u64(c, 2);
    oxl_craft_u32(c, 0x00020001u);
    oxl_craft_u32(c, OXL_GGUF_STRING);
    oxl_craft_u64(c, 1);
    oxl_craft_str(c, "deep");
    oxl_craft_kv_begin(c, "f64", OXL_GGUF_FLOAT64);
    oxl_craft_u64(c, 0x3ff0000000000000u);
    const int64_t a[2] = {32, 2}, e[2] = {0, 7}, q[1] = {64};
    oxl_craft_tensor(c, "a", 2, a, 0, 0);
    oxl_craft_tensor(c, "empty", 2, e, 0, 256);
    oxl_craft_tensor(c, "q", 1, q, 8, 256); /* q8_0: 2 blocks of 34 bytes */
    oxl_craft_pad(c, 64);
    oxl_craft_zeros(c, 256 + 68);
}

Test(gguf_hostile, truncation_at_every_byte) {
    oxl_craft c = {0};
    build_everything(&c);
    uint8_t *whole = exact_copy(&c);
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open_memory(whole, c.len, "whole.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq(oxl_gguf_n_kv(g), 8);
    cr_assert_eq(oxl_gguf_data_offset(g) % 64, 0);
    oxl_gguf_close(g);
    free(whole);
    for (size_t n = 0; n < c.len; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, c.buf, n);
        oxl_probe_reset();
        g = oxl_gguf_open_memory(cut, n, "cut.gguf", &err);
        size_t largest = oxl_probe_largest();
        free(cut);
        cr_assert_null(g, "accepted the file cut at byte %zu of %zu", n, c.len);
        cr_assert(strncmp(err.msg, "cut.gguf: ", 10) == 0 && strstr(err.msg, "at byte"), "cut at %zu: '%s'", n,
                  err.msg);
        cr_assert_leq(largest, alloc_bound(n), "cut at %zu: a request of %zu bytes", n, largest);
    }
    oxl_craft_free(&c);
}

static void put_be32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

Test(gguf_hostile, big_endian_file) {
    /* what a big-endian writer produces: every integer byte-swapped after the magic, so the
     * counts read little-endian are huge; the version check must speak first */
    oxl_craft c = {0};
    oxl_craft_header(&c, 3, 1, 1);
    oxl_craft_kv_u32(&c, "general.alignment", 32);
    const int64_t ne[1] = {8};
    oxl_craft_tensor(&c, "t", 1, ne, 0, 0);
    oxl_craft_pad(&c, 32);
    oxl_craft_zeros(&c, 32);
    put_be32(c.buf + 4, 3);   /* version */
    put_be64(c.buf + 8, 1);   /* tensor count */
    put_be64(c.buf + 16, 1);  /* key-value count */
    put_be64(c.buf + 24, 17); /* key length; the key's 17 bytes follow */
    put_be32(c.buf + 49, OXL_GGUF_UINT32);
    put_be32(c.buf + 53, 32);
    put_be64(c.buf + 57, 1); /* tensor name length; "t" follows */
    put_be32(c.buf + 66, 1); /* n_dims */
    put_be64(c.buf + 70, 8); /* ne0 */
    put_be32(c.buf + 78, 0); /* type f32 */
    put_be64(c.buf + 82, 0); /* offset */
    cr_assert_eq(c.len, 96 + 32);
    expect_hostile(&c, "version 0x03000000 at byte 4: the file is big-endian (byte-swapped version 3)");
    /* version 2 of a big-endian writer */
    put_be32(c.buf + 4, 2);
    expect_hostile(&c, "version 0x02000000 at byte 4: the file is big-endian");
    oxl_craft_free(&c);
}

/* ---- model-level hostile files ------------------------------------------------------------------ */

/* A llama model of f32 zeros: n_embd 8, n_ff 16, 2 heads of 4 with 1 KV head, 1 layer, 8 tokens.
 * Fields left 0 take these defaults; skip omits a tensor, reshape gives one tensor ne1 = reshape_ne1. */
typedef struct llama_spec {
    const char *arch;
    uint32_t context_length, embedding_length, block_count, feed_forward_length, head_count, head_count_kv;
    const char *skip;
    const char *reshape;
    int64_t reshape_ne1;
    bool extra_empty; /* adds an unused empty tensor "extra" of shape (1, 2^40, 2^40, 0) */
} llama_spec;

enum { E = 8, F = 16, V = 8, HD = 4, NH = 2, NKV = 1 };

static uint32_t or_default(uint32_t v, uint32_t d) { return v ? v : d; }

static void build_llama(oxl_craft *c, llama_spec s) {
    static const char *const tokens[V] = {"<unk>",
                                          "<s>",
                                          "</s>",
                                          "\xe2\x96\x81"
                                          "a",
                                          "\xe2\x96\x81"
                                          "b",
                                          "a",
                                          "b",
                                          "c"};
    struct {
        const char *name;
        int64_t ne0, ne1; /* ne1 0: 1-D */
    } t[] = {
        {"token_embd.weight", E, V},
        {"output_norm.weight", E, 0},
        {"output.weight", E, V},
        {"blk.0.attn_norm.weight", E, 0},
        {"blk.0.attn_q.weight", E, NH * HD},
        {"blk.0.attn_k.weight", E, NKV * HD},
        {"blk.0.attn_v.weight", E, NKV * HD},
        {"blk.0.attn_output.weight", NH * HD, E},
        {"blk.0.ffn_norm.weight", E, 0},
        {"blk.0.ffn_gate.weight", E, F},
        {"blk.0.ffn_up.weight", E, F},
        {"blk.0.ffn_down.weight", F, E},
    };
    const size_t n_all = sizeof t / sizeof *t;
    size_t n_tensors = 0;
    for (size_t i = 0; i < n_all; i++)
        n_tensors += !(s.skip && strcmp(s.skip, t[i].name) == 0);
    n_tensors += s.extra_empty;
    oxl_craft_header(c, 3, n_tensors, 10);
    oxl_craft_kv_str(c, "general.architecture", s.arch ? s.arch : "llama");
    oxl_craft_kv_u32(c, "llama.context_length", or_default(s.context_length, 32));
    oxl_craft_kv_u32(c, "llama.embedding_length", or_default(s.embedding_length, E));
    oxl_craft_kv_u32(c, "llama.block_count", or_default(s.block_count, 1));
    oxl_craft_kv_u32(c, "llama.feed_forward_length", or_default(s.feed_forward_length, F));
    oxl_craft_kv_u32(c, "llama.attention.head_count", or_default(s.head_count, NH));
    oxl_craft_kv_u32(c, "llama.attention.head_count_kv", or_default(s.head_count_kv, NKV));
    oxl_craft_kv_begin(c, "llama.attention.layer_norm_rms_epsilon", OXL_GGUF_FLOAT32);
    oxl_craft_f32(c, 1e-5f);
    oxl_craft_kv_str(c, "tokenizer.ggml.model", "llama");
    oxl_craft_kv_array(c, "tokenizer.ggml.tokens", OXL_GGUF_STRING, V);
    for (int i = 0; i < V; i++)
        oxl_craft_str(c, tokens[i]);
    uint64_t offset = 0;
    for (size_t i = 0; i < n_all; i++) {
        if (s.skip && strcmp(s.skip, t[i].name) == 0)
            continue;
        int64_t ne1 = s.reshape && strcmp(s.reshape, t[i].name) == 0 ? s.reshape_ne1 : t[i].ne1;
        const int64_t ne[2] = {t[i].ne0, ne1};
        oxl_craft_tensor(c, t[i].name, ne1 ? 2 : 1, ne, 0, offset);
        offset += ((uint64_t)(t[i].ne0 * (ne1 ? ne1 : 1)) * 4 + 31) / 32 * 32;
    }
    if (s.extra_empty) {
        const int64_t ne[4] = {1, (int64_t)1 << 40, (int64_t)1 << 40, 0};
        oxl_craft_tensor(c, "extra", 4, ne, 0, 0);
    }
    oxl_craft_pad(c, 32);
    oxl_craft_zeros(c, offset);
}

/* Loads the crafted model; on failure checks that want is in the message, which names the file, and
 * that no request exceeded the bound. Returns the model when it loaded (want NULL). */
static oxl_model *load_llama(llama_spec s, const char *want, oxl_craft *c) {
    build_llama(c, s);
    oxl_error err = {{0}};
    oxl_probe_reset();
    oxl_gguf *g = oxl_gguf_open_memory(c->buf, c->len, "model.gguf", &err);
    cr_assert_not_null(g, "the crafted GGUF itself must be valid: %s", err.msg);
    oxl_model *m = oxl_model_from_gguf(g, &err);
    cr_expect_leq(oxl_probe_largest(), alloc_bound(c->len), "'%s': a request of %zu bytes for a file of %zu",
                  want ? want : "load", oxl_probe_largest(), c->len);
    if (!want) {
        cr_assert_not_null(m, "%s", err.msg);
        return m;
    }
    oxl_model_free(m);
    cr_assert_null(m, "loaded a model that should fail with '%s'", want);
    cr_expect(strncmp(err.msg, "model.gguf: ", 12) == 0, "message '%s' does not name the file", err.msg);
    cr_expect(strstr(err.msg, want) != NULL, "message '%s' lacks '%s'", err.msg, want);
    return NULL;
}

static void expect_model_rejected(llama_spec s, const char *want) {
    oxl_craft c = {0};
    load_llama(s, want, &c);
    oxl_craft_free(&c);
}

Test(model_hostile, baseline_loads_and_decodes_zeros) {
    oxl_craft c = {0};
    oxl_model *m = load_llama((llama_spec){0}, NULL, &c);
    cr_expect_eq(oxl_model_n_vocab(m), V);
    cr_expect_eq(oxl_model_n_embd(m), E);
    cr_expect_eq(oxl_model_n_ctx_train(m), 32);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = 4;
    cp.n_threads = 1;
    oxl_error err = {{0}};
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_assert_not_null(ctx, "%s", err.msg);
    const oxl_token toks[2] = {1, V - 1};
    cr_assert_eq(oxl_decode(ctx, toks, 2, false, &err), 0, "%s", err.msg);
    /* every weight is zero, so the output head gives exactly zero logits */
    const float *logits = oxl_get_logits(ctx, -1);
    for (int i = 0; i < V; i++)
        cr_expect_eq(logits[i], 0.0f, "logit %d = %g", i, logits[i]);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_craft_free(&c);
}

Test(model_hostile, missing_tensor) {
    expect_model_rejected((llama_spec){.skip = "blk.0.ffn_down.weight"}, "missing tensor 'blk.0.ffn_down.weight'");
    expect_model_rejected((llama_spec){.skip = "output_norm.weight"}, "missing tensor 'output_norm.weight'");
}

Test(model_hostile, wrong_shape) {
    expect_model_rejected((llama_spec){.reshape = "blk.0.attn_k.weight", .reshape_ne1 = 8},
                          "tensor 'blk.0.attn_k.weight' has shape (8, 8, 1, 1); expected (8, 4)");
    /* one token fewer in the embedding than in the vocabulary */
    expect_model_rejected((llama_spec){.reshape = "token_embd.weight", .reshape_ne1 = V - 1},
                          "tensor 'token_embd.weight' has shape (8, 7, 1, 1); expected (8, 8)");
    /* a norm that should be 1-D given as a matrix */
    expect_model_rejected((llama_spec){.reshape = "blk.0.ffn_norm.weight", .reshape_ne1 = 2},
                          "tensor 'blk.0.ffn_norm.weight' has shape (8, 2, 1, 1)");
}

Test(model_hostile, unknown_architecture) {
    expect_model_rejected((llama_spec){.arch = "gpt-7"}, "unknown architecture 'gpt-7' (general.architecture)");
    expect_model_rejected((llama_spec){.arch = ""}, "unknown architecture '' (general.architecture)");
}

Test(model_hostile, head_counts) {
    /* head_count_kv must divide head_count */
    expect_model_rejected((llama_spec){.head_count_kv = 3}, "head_count = 2 is not a multiple of head_count_kv = 3");
    /* 3 heads do not divide n_embd 8: heads of 2, so the query projection cannot be (8, 8) */
    expect_model_rejected((llama_spec){.head_count = 3, .head_count_kv = 3},
                          "tensor 'blk.0.attn_q.weight' has shape (8, 8, 1, 1); expected (8, 6)");
    /* more heads than embedding dimensions: heads of size 0 */
    expect_model_rejected((llama_spec){.head_count = INT32_MAX, .head_count_kv = 1}, "unsupported head size 0");
}

Test(model_hostile, huge_hyper_parameters) {
    expect_model_rejected((llama_spec){.block_count = INT32_MAX}, "llama.block_count = 2147483647");
    /* heads of n_embd / 2 = 2^30-1 */
    expect_model_rejected((llama_spec){.embedding_length = INT32_MAX}, "unsupported head size 1073741823");
    expect_model_rejected((llama_spec){.feed_forward_length = INT32_MAX},
                          "tensor 'blk.0.ffn_gate.weight' has shape (8, 16, 1, 1); expected (8, 2147483647)");
    /* a value that does not fit int32 */
    expect_model_rejected((llama_spec){.block_count = UINT32_MAX}, "'llama.block_count' = 4294967295");
}

Test(model_hostile, empty_tensor_with_huge_dimensions) {
    /* the GGUF reader accepts an empty tensor whatever its other dimensions claim; the loader's
     * parameter count must not multiply them (signed overflow: the sanitizer build traps on it) */
    oxl_craft c = {0};
    oxl_model *m = load_llama((llama_spec){.extra_empty = true}, NULL, &c);
    /* token_embd and output (8, 8), output_norm 8; the layer: 2 norms of 8, q and output (8, 8),
     * k and v (8, 4), gate, up and down (8, 16): 136 + 592 */
    cr_expect_eq(m->n_params, 728);
    oxl_model_free(m);
    oxl_craft_free(&c);
}

Test(model_hostile, huge_context_length) {
    /* the training context is only a default: the model loads, a context of that size is refused
     * without allocating it, and an explicit small context works */
    oxl_craft c = {0};
    oxl_model *m = load_llama((llama_spec){.context_length = INT32_MAX}, NULL, &c);
    cr_expect_eq(oxl_model_n_ctx_train(m), INT32_MAX);
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_threads = 1;
    oxl_error err = {{0}};
    oxl_probe_reset();
    oxl_ctx *ctx = oxl_ctx_new(m, &cp, &err);
    cr_expect_null(ctx);
    cr_expect(strstr(err.msg, "n_ctx 2147483647") != NULL, "%s", err.msg);
    cr_expect_leq(oxl_probe_largest(), alloc_bound(c.len));
    oxl_ctx_free(ctx);
    cp.n_ctx = 8;
    ctx = oxl_ctx_new(m, &cp, &err);
    cr_expect_not_null(ctx, "%s", err.msg);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    oxl_craft_free(&c);
}
