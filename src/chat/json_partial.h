/* JSON values that may be cut short, as llama.cpp's common/json-partial.cpp reads them while a reply
 * is still being generated: a truncated value is "healed" by closing it with a marker string, and
 * where the marker lands in the value's dump tells how much of the dump the text already fixed.
 * Dumps are written as nlohmann::json's dump() writes them (compact; numbers as they parse), which
 * is how llama.cpp spells tool call arguments.
 */
#ifndef OXL_JSON_PARTIAL_H
#define OXL_JSON_PARTIAL_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct oxl_json_heal {
    cJSON *json;          /* the value (healed when marker is set); the caller frees it */
    const char *after;    /* where reading stopped in the input */
    char marker[32];      /* the healing marker, "" when the value was whole */
    char dump_marker[40]; /* the marker as the dump spells it: cutting the dump there gives the text so far */
} oxl_json_heal;

/* Reads one JSON value at p (leading whitespace skipped) from [p, end). marker: the healing marker
 * (under 32 bytes, not found in the input), or NULL to refuse truncated values. Returns true with *out filled
 * (out->json non-NULL); false when the text is not a (healable) JSON value. Matches
 * common_json_parse: a value followed by other text ends before that text; a value cut off by the
 * end of the input is completed by the rules of common/json-partial.cpp. */
bool oxl_json_heal_parse(const char *p, const char *end, const char *marker, oxl_json_heal *out);

/* The value written as nlohmann::json::dump(-1, ' ', ensure_ascii) writes it: no spaces, strings
 * escaped as nlohmann does (\u00XX lower case; non-ASCII as \uXXXX when ensure_ascii), integers as
 * integers, other numbers in the shortest form that reads back ("1.0", "1e+20"). Numbers that this
 * module parsed keep nlohmann's integer/float distinction. malloc'd; NULL when out of memory. */
char *oxl_json_dump(const cJSON *v, bool ensure_ascii);

/* Where try_consume_json_with_dumped_args looks: paths of one or two object keys from the root
 * ({NULL, NULL} is the root itself; arrays add no step). */
typedef struct oxl_json_paths {
    const char *const (*args)[2]; /* values dumped to text */
    int n_args;
    const char *const (*content)[2]; /* strings that may be cut */
    int n_content;
} oxl_json_paths;

/* llama.cpp's common_chat_msg_parser::try_consume_json_with_dumped_args: the value at p (healed
 * with marker when the input cuts it) with each value at an arguments path replaced by the text of
 * its dump (ensure_ascii), cut where the healing begins, and each string at a content path cut at
 * the marker; elsewhere a key or string holding the marker ends its object or array, so that no
 * text the model may still change is kept. *is_partial (may be NULL): the marker was met. *after
 * (may be NULL): where reading stopped. NULL when there is no (healable) value or out of memory. */
cJSON *oxl_json_with_dumped_args(const char *p, const char *end, const char *marker, const oxl_json_paths *paths,
                                 bool *is_partial, const char **after);

/* A JSON value of [p, end) parsed strictly (whole text, whitespace around allowed) into cJSON with
 * numbers kept as nlohmann reads them; NULL when not JSON. */
cJSON *oxl_json_parse_strict(const char *p, const char *end);

#endif
