/* oxl_json_schema_to_grammar against llama.cpp's own test cases (golden/json_schema/cases.json, from
 * llama.cpp's tests/test-json-schema-to-grammar.cpp): each schema gives exactly the expected grammar
 * (compared as that test compares: outer whitespace and line indentation trimmed), and the schemas
 * llama.cpp refuses are refused. Plus hostile schemas: errors, never a crash. */
#include "oxillama.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* The grammar with outer whitespace and each line's leading blanks removed (the test's trim()). */
static char *trim(const char *s) {
    size_t n = strlen(s);
    char *o = malloc(n + 1);
    size_t k = 0;
    bool line_start = true;
    for (size_t i = 0; i < n; i++) {
        if (line_start && (s[i] == ' ' || s[i] == '\t')) {
            continue;
        }
        line_start = s[i] == '\n';
        o[k++] = s[i];
    }
    while (k > 0 && strchr(" \n\r\t", o[k - 1])) {
        k--;
    }
    o[k] = 0;
    size_t b = 0;
    while (o[b] && strchr(" \n\r\t", o[b])) {
        b++;
    }
    memmove(o, o + b, k - b + 1);
    return o;
}

Test(json_schema, llama_cpp_cases) {
    char *text = read_all(OXL_SOURCE_DIR "/golden/json_schema/cases.json");
    cJSON *doc = cJSON_Parse(text);
    cr_assert(doc);
    const cJSON *cases = cJSON_GetObjectItem(doc, "cases");
    int n = 0, failures = 0, refused = 0;
    for (const cJSON *c = cases->child; c; c = c->next, n++) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *schema = cJSON_GetObjectItem(c, "schema")->valuestring;
        const char *want = cJSON_GetObjectItem(c, "grammar")->valuestring;
        bool ok_expected = !strcmp(cJSON_GetObjectItem(c, "status")->valuestring, "SUCCESS");
        char *got = NULL;
        oxl_error err = {{0}};
        int rc = oxl_json_schema_to_grammar(schema, &got, &err);
        if (!ok_expected) {
            refused++;
            if (rc == 0) {
                cr_log_error("case '%s': llama.cpp refuses it, got a grammar", name);
                failures++;
            }
        } else if (rc != 0) {
            cr_log_error("case '%s': %s", name, err.msg);
            failures++;
        } else {
            char *t = trim(got);
            if (strcmp(t, want)) {
                cr_log_error("case '%s':\n--- want\n%s\n--- got\n%s", name, want, t);
                failures++;
            }
            free(t);
        }
        free(got);
    }
    cJSON_Delete(doc);
    free(text);
    cr_assert_eq(n, 75, "75 cases, read %d", n);
    cr_assert_eq(refused, 2);
    cr_assert_eq(failures, 0, "%d of %d cases differ from llama.cpp's grammars", failures, n);
}

Test(json_schema, hostile_schemas) {
    static const char *bad[] = {
        "{",                                               /* invalid JSON */
        "{\"type\": \"kaboom\"}",                          /* unknown type */
        "{\"$ref\": \"#/nope\"}",                          /* dangling ref */
        "{\"$ref\": 5}",                                   /* ref not a string */
        "{\"$ref\": \"https://example.com/s.json\"}",      /* remote ref */
        "{\"type\": \"string\", \"pattern\": \"abc\"}",    /* no ^...$ */
        "{\"type\": \"string\", \"pattern\": \"^*a$\"}",   /* quantifier on nothing */
        "{\"type\": \"string\", \"pattern\": \"^a]$\"}",   /* stray ] */
        "{\"type\": \"string\", \"pattern\": \"^a{x}$\"}", /* bad count */
        "{\"format\": 3}",                                 /* format not a string */
        "{\"enum\": 3}",                                   /* enum not a list */
        "{\"type\": \"integer\", \"minimum\": 1e300}",     /* out of range */
        "true",                                            /* a boolean schema */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *g = (char *)1;
        oxl_error err = {{0}};
        cr_expect_eq(oxl_json_schema_to_grammar(bad[i], &g, &err), -1, "schema %s accepted", bad[i]);
        cr_expect_null(g);
        cr_expect(err.msg[0], "schema %s: no message", bad[i]);
    }
    /* a $ref cycle is cut by name, as llama.cpp cuts it */
    char *g = NULL;
    oxl_error err = {{0}};
    cr_assert_eq(oxl_json_schema_to_grammar("{\"$defs\": {\"n\": {\"type\": \"object\", \"properties\": {\"next\": "
                                            "{\"$ref\": \"#/$defs/n\"}}}}, \"$ref\": \"#/$defs/n\"}",
                                            &g, &err),
                 0, "%s", err.msg);
    cr_expect(strstr(g, "ref-defs-n ::= \"{\" space"), "%s", g);
    free(g);
    /* deep nesting is refused by the JSON reader or the converter, without a crash */
    size_t depth = 5000;
    char *deep = malloc(depth * 20 + 16);
    size_t o = 0;
    for (size_t i = 0; i < depth; i++) {
        o += (size_t)sprintf(deep + o, "{\"items\":");
    }
    o += (size_t)sprintf(deep + o, "{}");
    for (size_t i = 0; i < depth; i++) {
        deep[o++] = '}';
    }
    deep[o] = 0;
    g = NULL;
    cr_expect_eq(oxl_json_schema_to_grammar(deep, &g, &err), -1);
    free(deep);
    free(g);
}
