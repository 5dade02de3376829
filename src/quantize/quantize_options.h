/* The options of llama-quantize (llama.cpp tools/quantize/quantize.cpp) that take a value to parse:
 * ggml type names, --tensor-type PATTERN=TYPE and --override-kv KEY=TYPE:VALUE. */
#ifndef OXL_QUANTIZE_OPTIONS_H
#define OXL_QUANTIZE_OPTIONS_H

#include "oxillama.h"
#include "oxl_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A ggml type name (case-insensitive, as llama-quantize's parse_ggml_type) that oxillama can write.
 * Returns 0, or -1 with err naming flag and value and listing the types that can be written. */
int oxl_quant_type_parse(const char *flag, const char *name, oxl_type *out, oxl_error *err);

/* --tensor-type patterns in the order given. A pattern is lower-cased (as llama-quantize does) and
 * searched for in the tensor name as a regex (std::regex_search: a match anywhere); the first that
 * matches gives the type. Regexes run on PCRE2, whose syntax covers ECMAScript's (std::regex's
 * default); the bytes of the name are the code units. */
typedef struct oxl_tensor_types oxl_tensor_types;

oxl_tensor_types *oxl_tensor_types_new(oxl_error *err);
void oxl_tensor_types_free(oxl_tensor_types *tt); /* NULL is a no-op */
/* Adds "PATTERN=TYPE". Returns 0, or -1 with err when the '=', the pattern or the type is missing,
 * the type cannot be written (oxl_quant_type_parse) or the pattern does not compile. */
int oxl_tensor_types_add(oxl_tensor_types *tt, const char *arg, oxl_error *err);
size_t oxl_tensor_types_count(const oxl_tensor_types *tt);
/* The type of the first pattern found in name; false when none matches. ctx: the oxl_tensor_types
 * (the signature of oxl_quant_options' override hook). */
bool oxl_tensor_types_match(void *ctx, const char *name, oxl_type *type);

/* --override-kv KEY=TYPE:VALUE, as common's string_parse_kv_override: TYPE int, float, bool (true
 * or false) or str (at most 127 bytes); a key of 1 to 127 bytes. Written into the output with
 * llama-quantize's types: int as u32 of its absolute value, float as f32, bool, str. */
typedef enum oxl_kv_override_tag {
    OXL_KV_OVERRIDE_INT,
    OXL_KV_OVERRIDE_FLOAT,
    OXL_KV_OVERRIDE_BOOL,
    OXL_KV_OVERRIDE_STR,
} oxl_kv_override_tag;

typedef struct oxl_kv_override {
    char key[128];
    oxl_kv_override_tag tag;
    int64_t val_i64;
    double val_f64;
    bool val_bool;
    char val_str[128];
} oxl_kv_override;

/* Returns 0, or -1 with err naming the option value and what is wrong with it. Stricter than
 * llama.cpp where it would silently read garbage: an int or float value must be a whole number. */
int oxl_kv_override_parse(const char *arg, oxl_kv_override *out, oxl_error *err);

#endif
