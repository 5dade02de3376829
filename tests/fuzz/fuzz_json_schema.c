/* libFuzzer harness for the JSON schema -> grammar converter (oxl_json_schema_to_grammar,
 * src/chat/json_schema.c). The input is the schema's text, copied into a buffer of its exact size
 * (plus the NUL) so that a read past it is caught. Contracts checked: success gives a grammar whose
 * last rule line ends in a newline and that defines "root"; failure gives a non-empty message and
 * no grammar. Bounds (nesting, $ref cycles, the 16 MiB grammar cap) must end hostile schemas in
 * errors, which -timeout and -rss_limit_mb in run.sh enforce. */
#include "oxillama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            __builtin_trap();                                                                                          \
        }                                                                                                              \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) {
        return 0;
    }
    memcpy(text, data, size);
    text[size] = 0;
    char *g = NULL;
    oxl_error err = {{0}};
    int rc = oxl_json_schema_to_grammar(text, &g, &err);
    if (rc == 0) {
        size_t n = strlen(g);
        CHECK(n > 0 && g[n - 1] == '\n');
        CHECK(strncmp(g, "root ::= ", 9) == 0 || strstr(g, "\nroot ::= ") != NULL);
    } else {
        CHECK(rc == -1 && g == NULL && err.msg[0] != 0);
    }
    free(g);
    free(text);
    return 0;
}
