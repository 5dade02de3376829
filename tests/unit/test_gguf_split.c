/* Split models (src/gguf/gguf_split.c): llama.cpp's part names (llama_split_path /
 * llama_split_prefix, "%s-%05d-of-%05d.gguf"), and golden/split's llama-gguf-split parts of
 * stories260K-Q4_0 (10 tensors a part) read as one model whose every tensor holds the bytes of the
 * same tensor in the whole file models/stories260K-Q4_0.gguf. */
#include "gguf.h"
#include "gguf_split.h"

#include <criterion/criterion.h>

#include <string.h>

#define SPLIT_FIRST OXL_SOURCE_DIR "/golden/split/stories260K-Q4_0-00001-of-00005.gguf"
#define WHOLE OXL_SOURCE_DIR "/models/stories260K-Q4_0.gguf"

Test(gguf_split, part_names) {
    char buf[64];
    cr_assert_eq(oxl_gguf_split_path(buf, sizeof buf, "dir/m", 0, 5), 25);
    cr_assert_str_eq(buf, "dir/m-00001-of-00005.gguf");
    cr_assert_eq(oxl_gguf_split_path(buf, sizeof buf, "m", 11, 12), 21);
    cr_assert_str_eq(buf, "m-00012-of-00012.gguf");
    cr_assert_eq(oxl_gguf_split_path(buf, 21, "m", 0, 5), 0, "no room for the NUL");
    cr_assert_eq(oxl_gguf_split_prefix(buf, sizeof buf, "dir/m-00003-of-00005.gguf", 2, 5), 5);
    cr_assert_str_eq(buf, "dir/m");
    cr_assert_eq(oxl_gguf_split_prefix(buf, sizeof buf, "dir/m-00003-of-00005.gguf", 0, 5), 0, "another part");
    cr_assert_eq(oxl_gguf_split_prefix(buf, sizeof buf, "dir/m-00003-of-00005.gguf", 2, 6), 0, "another count");
    cr_assert_eq(oxl_gguf_split_prefix(buf, sizeof buf, "-00001-of-00005.gguf", 0, 5), 0, "no prefix");
    cr_assert_eq(oxl_gguf_split_prefix(buf, 5, "dir/m-00001-of-00005.gguf", 0, 5), 0, "no room");
}

Test(gguf_split, parts_read_as_the_whole_file) {
    oxl_error err = {{0}};
    oxl_gguf *g = oxl_gguf_open_model(SPLIT_FIRST, &err);
    cr_assert_not_null(g, "%s", err.msg);
    oxl_gguf *w = oxl_gguf_open(WHOLE, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(oxl_gguf_n_parts(g), 5);
    cr_assert_eq(oxl_gguf_split_count(g, &err), 5);
    cr_assert_eq(oxl_gguf_n_tensors(g), 48);
    cr_assert_eq(oxl_gguf_n_tensors(w), 48);
    cr_assert_null(oxl_gguf_part(g, 5));
    for (int64_t i = 0; i < 48; i++) {
        const oxl_gguf_tensor *t = oxl_gguf_tensor_at(g, i);
        const oxl_gguf_tensor *u = oxl_gguf_tensor_at(w, i);
        cr_assert_str_eq(t->name, u->name, "the input's order");
        cr_assert_eq(t->split, (uint32_t)(i / 10), "%s in part %u", t->name, t->split + 1);
        cr_assert_eq(oxl_gguf_find_tensor(g, t->name), t);
        const oxl_gguf *part = oxl_gguf_part(g, (int)t->split);
        cr_assert_not_null(oxl_gguf_find_tensor(part, t->name));
        cr_assert_eq(t->type, u->type);
        cr_assert_eq(t->nbytes, u->nbytes);
        cr_assert(memcmp(t->data, u->data, t->nbytes) == 0, "%s: the whole file's bytes", t->name);
    }
    oxl_gguf_close(w);
    oxl_gguf_close(g);
}
