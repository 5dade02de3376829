/* Split GGUF models, as llama.cpp's gguf-split writes them: the files PREFIX-00001-of-0000N.gguf ..
 * PREFIX-0000N-of-0000N.gguf, the first holding the model's metadata, each its share of the tensors
 * (offsets into its own data section), every file the keys split.no (its position from 0, uint16)
 * and split.count (N, uint16), the first split.tensors.count (the tensors of all files, int32).
 * A model is loaded from its first file; the others are found by name.
 */
#ifndef OXL_GGUF_SPLIT_H
#define OXL_GGUF_SPLIT_H

#include "gguf.h"

/* The file name of part no (from 0) of count with the given prefix (llama.cpp's llama_split_path:
 * "%s-%05d-of-%05d.gguf" with no + 1); its length, or 0 when it does not fit in cap. */
int oxl_gguf_split_path(char *buf, size_t cap, const char *prefix, int no, int count);
/* The prefix of path when it is the name of part no of count (llama_split_prefix); its length, or
 * 0 when path does not end in that part's suffix or the prefix does not fit in cap. */
int oxl_gguf_split_prefix(char *buf, size_t cap, const char *path, int no, int count);

/* The number of files of g's model (split.count; 1 when absent); -1 with err set when the key is
 * not a count. */
int oxl_gguf_split_count(const oxl_gguf *g, oxl_error *err);

/* Opens one further file of a split model into *out: 0 when opened, 1 when there is no such file
 * (err untouched), -1 with err set on any other error. */
typedef int (*oxl_gguf_opener)(const char *path, void *user, oxl_gguf **out, oxl_error *err);
/* The opener of mapped files (oxl_gguf_open); user is unused. */
int oxl_gguf_open_part(const char *path, void *user, oxl_gguf **out, oxl_error *err);
/* 1 when path names no file (so a part is missing), else 0. */
int oxl_gguf_part_absent(const char *path);

/* When g (opened from path) is the first file of a split model: opens the other files with open
 * and adds their tensors to g (oxl_gguf_add_part), after checking that each part exists, says the
 * same split.count and its own position as split.no, holds no tensor another holds, and that the
 * files hold split.tensors.count tensors in all. 0 when done (or g is a whole model); -1 with err
 * naming the file and the fault, after which g can only be closed. */
int oxl_gguf_load_split(oxl_gguf *g, oxl_gguf_opener open, void *user, oxl_error *err);

/* oxl_gguf_open and then oxl_gguf_load_split with oxl_gguf_open_part: a whole model from the path
 * of its file, or of the first file of a split model. NULL with err set on any error. */
oxl_gguf *oxl_gguf_open_model(const char *path, oxl_error *err);

#endif
