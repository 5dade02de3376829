/* The JSON-schema converter as a grammar builder: llama.cpp's build_grammar with its
 * common_grammar_builder (common/json-schema-to-grammar.cpp): rules and converted schemas added to
 * one rule set (the "space" rule first), written out as oxl_json_schema_to_grammar writes them. */
#ifndef OXL_JSON_SCHEMA_H
#define OXL_JSON_SCHEMA_H

#include "oxillama.h"

#include <cjson/cJSON.h>

typedef struct oxl_gbuild oxl_gbuild;

/* NULL when out of memory. */
oxl_gbuild *oxl_gbuild_new(void);
/* builder.add_rule: body under name made of rule characters (a different rule already there: name0,
 * name1, ...); returns the name used, valid until oxl_gbuild_free. */
const char *oxl_gbuild_rule(oxl_gbuild *b, const char *name, const char *body);
/* gbnf_format_literal: text as a quoted GBNF literal (valid until oxl_gbuild_free). */
const char *oxl_gbuild_literal(oxl_gbuild *b, const char *text);
/* builder.add_schema after builder.resolve_refs: schema (copied; its local $refs resolved against
 * itself) converted under name ("root": the start rule); returns the rule name to refer to it ("" on
 * errors, which oxl_gbuild_finish reports). */
const char *oxl_gbuild_schema(oxl_gbuild *b, const char *name, const cJSON *schema);
/* The grammar text (malloc'd) into *out; -1 with err on conversion errors or out of memory. */
int oxl_gbuild_finish(oxl_gbuild *b, char **out, oxl_error *err);
void oxl_gbuild_free(oxl_gbuild *b);

#endif
