/* GBNF grammars (src/model/grammar.c): llama.cpp's example grammars parse; the accepted and
 * rejected strings of llama.cpp's tests/test-grammar-integration.cpp (golden/grammars/
 * integration-cases.txt) are accepted and rejected, matched as that test matches them (one code
 * point per piece, token references as tokens); its failing grammars fail; bad grammars give
 * errors naming line and column; the bounds stop blow-ups with an error; and the sampler's grammar
 * moves on output tokens only. */
#include "grammar.h"
#include "model.h"
#include "oxillama.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAMMARS OXL_SOURCE_DIR "/golden/grammars/"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    cr_assert(b);
    cr_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    b[n] = 0;
    fclose(f);
    return b;
}

Test(grammar, example_grammars_parse) {
    const char *names[] = {"json", "json_arr", "arithmetic", "c", "chess", "list", "english", "japanese", "sentence"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512], err[256];
        snprintf(path, sizeof path, GRAMMARS "%s.gbnf", names[i]);
        char *src = slurp(path);
        oxl_grammar *g = oxl_grammar_parse(src, "root", NULL, err, sizeof err);
        cr_expect(g != NULL, "%s: %s", names[i], err);
        cr_expect(!oxl_grammar_dead(g), "%s", names[i]);
        oxl_grammar_free(g);
        free(src);
    }
}

/* One line of integration-cases.txt unescaped: \n \t \r \\ and \T{N} (a token, written to toks at
 * the text's position as a NUL-led marker). Returns the length. */
static size_t unescape(const char *s, char *out, int32_t *toks, size_t *n_toks) {
    size_t o = 0;
    *n_toks = 0;
    for (; *s && *s != '\n'; s++) {
        if (*s != '\\') {
            out[o++] = *s;
            continue;
        }
        s++;
        switch (*s) {
        case 'n': out[o++] = '\n'; break;
        case 't': out[o++] = '\t'; break;
        case 'r': out[o++] = '\r'; break;
        case '\\': out[o++] = '\\'; break;
        case 'T': {
            char *end;
            toks[(*n_toks)++] = (int32_t)strtol(s + 2, &end, 10);
            out[o++] = 0; /* marker */
            s = end;      /* at '}' */
            break;
        }
        default: cr_assert_fail("bad escape in the cases file");
        }
    }
    out[o] = 0;
    return o;
}

/* match_string of test-grammar-integration.cpp: every code point (or token) accepted as a piece of
 * its own; false as soon as no stack is left; at the end, whether some stack is empty. */
static bool match(const char *grammar, const char *s, size_t len, const int32_t *toks) {
    char err[256];
    oxl_grammar *g = oxl_grammar_parse(grammar, "root", NULL, err, sizeof err);
    cr_assert(g, "grammar does not parse: %s", err);
    size_t ti = 0;
    bool ok = true;
    for (size_t i = 0; i < len && ok;) {
        if (s[i] == 0) {
            char piece[32];
            int32_t t = toks[ti++];
            int w = snprintf(piece, sizeof piece, "<[%d]>", t);
            ok = oxl_grammar_accept_piece(g, t, piece, (size_t)w) == 0;
            i++;
            continue;
        }
        unsigned char c = (unsigned char)s[i];
        size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        ok = oxl_grammar_accept_piece(g, 0, s + i, n) == 0;
        i += n;
    }
    ok = ok && oxl_grammar_can_end(g);
    cr_assert(oxl_grammar_error(g) == NULL, "%s", oxl_grammar_error(g));
    oxl_grammar_free(g);
    return ok;
}

Test(grammar, llama_cpp_integration_cases) {
    char *data = slurp(GRAMMARS "integration-cases.txt");
    char *grammar = malloc(strlen(data) + 1), *buf = malloc(strlen(data) + 1);
    int32_t toks[256];
    size_t n_toks;
    char desc[256] = "";
    int n_pass = 0, n_fail = 0, n_bad = 0;
    for (char *line = data; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (line[0] == 'D') {
            size_t n = strcspn(line + 2, "\n");
            snprintf(desc, sizeof desc, "%.*s", (int)n, line + 2);
        } else if (line[0] == 'G') {
            unescape(line + 2, grammar, toks, &n_toks);
        } else if (line[0] == 'P' || line[0] == 'F') {
            size_t len = unescape(line + 2, buf, toks, &n_toks);
            bool m = match(grammar, buf, len, toks);
            cr_expect(m == (line[0] == 'P'), "%s: \"%.*s\" should be %s", desc, (int)strcspn(line + 2, "\n"), line + 2,
                      line[0] == 'P' ? "accepted" : "rejected");
            line[0] == 'P' ? n_pass++ : n_fail++;
        } else if (line[0] == 'X') {
            char err[256];
            unescape(line + 2, buf, toks, &n_toks);
            oxl_grammar *g = oxl_grammar_parse(buf, "root", NULL, err, sizeof err);
            cr_expect(g == NULL, "%s: the grammar should fail to build", desc);
            oxl_grammar_free(g);
            n_bad++;
        }
    }
    cr_expect(n_pass == 70 && n_fail == 69 && n_bad == 5, "cases read: %d accepted, %d rejected, %d bad", n_pass,
              n_fail, n_bad);
    free(data);
    free(grammar);
    free(buf);
}

static void expect_error(const char *src, const char *root, const char *want) {
    char err[256] = "unchanged";
    oxl_grammar *g = oxl_grammar_parse(src, root, NULL, err, sizeof err);
    cr_expect(g == NULL, "grammar %s should fail", src);
    cr_expect(strstr(err, want) != NULL, "error for %s: got \"%s\", want \"%s\"", src, err, want);
    oxl_grammar_free(g);
}

Test(grammar, bad_grammars_name_line_and_column) {
    expect_error("root ::= foo", "root", "1:10: undefined rule 'foo'");
    expect_error("root ::= \"a\"\nx ::= [abc", "root", "2:7: unterminated character class");
    expect_error("root ::= \"abc", "root", "1:10: unterminated string literal");
    expect_error("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]", "root",
                 "2:1: left recursion: rule 'expr'");
    expect_error("root ::= (\"a\"", "root", "1:10: unclosed group");
    expect_error("root ::= \"\\q\"", "root", "1:11: unknown escape");
    expect_error("root ::= \"a\"{3,1}", "root", "1:13: repetition {3,1}");
    expect_error("root ::= \"a\"{2001}", "root", "exceeds 2000");
    expect_error("foobar ::= \"x\"", "root", "no rule named 'root'");
    expect_error("root ::= \"a\"\n  \n# c\nx ::= \"b\" ::= \"c\"", "root", "4:11: expecting a newline");
    expect_error("", "root", "empty grammar");
    expect_error("root ::= <hello>", "root", "1:10: no vocabulary");
    expect_error("root ::= \"\\x4\"", "root", "expecting 2 hex digits");
    /* custom root, as test_custom_root_symbol_check */
    char err[64];
    oxl_grammar *g = oxl_grammar_parse("foobar ::= \"foobar\"", "foobar", NULL, err, sizeof err);
    cr_expect(g != NULL);
    oxl_grammar_free(g);
}

Test(grammar, bounds_stop_blowups) {
    /* nesting */
    char deep[700];
    memcpy(deep, "root ::= ", 9);
    size_t n = 9;
    for (int i = 0; i < 300; i++)
        deep[n++] = '(';
    deep[n] = 0;
    expect_error(deep, "root", "groups nested deeper than 256");
    /* a million start stacks (which x, which y in it): refused by the stack bound */
    expect_error("root ::= x{999}\nx ::= y{999}\ny ::= \"a\"?", "root", "too ambiguous");
    /* elements: 1999 copies of a 4000-char literal */
    char *big = malloc(5000);
    strcpy(big, "root ::= \"");
    for (int i = 0; i < 4000; i++)
        strcat(big, "a");
    strcat(big, "\"{1999}");
    expect_error(big, "root", "too large");
    free(big);
}

/* The sampler's grammar moves on output tokens only: a prompt token passed to oxl_sampler_accept
 * leaves it at its start. */
Test(grammar, sampler_grammar_output_tokens_only) {
    oxl_model_params mp = oxl_model_default_params();
    oxl_error e = {0};
    oxl_model *m = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &e);
    cr_assert(m, "%s", e.msg);
    oxl_token a, b;
    cr_assert(oxl_tokenize(m, "a", 1, &a, 1, false, false) == 1);
    cr_assert(oxl_tokenize(m, "b", 1, &b, 1, false, false) == 1);
    char pa[16], pb[16];
    const int32_t la = oxl_token_to_piece(m, a, pa, sizeof pa, true);
    const int32_t lb = oxl_token_to_piece(m, b, pb, sizeof pb, true);
    cr_assert(la >= 1 && lb >= 1);
    char gram[64];
    snprintf(gram, sizeof gram, "root ::= \"%.*s\" \"%.*s\"", (int)la, pa, (int)lb, pb);

    oxl_sampler_params sp = oxl_sampler_default_params();
    sp.temp = 0.0f;
    oxl_sampler *s = oxl_sampler_new(&sp);
    char err[128];
    cr_assert(oxl_sampler_set_grammar(s, m, "root ::= [", NULL, err, sizeof err) == -1);
    cr_expect(strstr(err, "1:10: unterminated character class"), "%s", err);
    cr_assert(oxl_sampler_set_grammar(s, m, gram, NULL, err, sizeof err) == 0, "%s", err);

    const int32_t nv = oxl_model_n_vocab(m);
    float *logits = calloc((size_t)nv, sizeof *logits);
    logits[b] = 10.0f; /* the model wants b; the grammar wants a first */
    logits[a] = 1.0f;
    oxl_sampler_accept(s, a); /* a prompt token: the grammar stays at its start */
    cr_expect(oxl_sampler_sample(s, logits, nv) == a);
    oxl_sampler_accept(s, a); /* the output token: the grammar moves on */
    logits[a] = 20.0f;
    cr_expect(oxl_sampler_sample(s, logits, nv) == b);
    oxl_sampler_accept(s, b);
    /* the match is complete: only an end of generation is left */
    oxl_token t = oxl_sampler_sample(s, logits, nv);
    cr_expect(oxl_token_is_eog(m, t), "token %d after the end of the match", t);
    /* removing the grammar restores the plain chain */
    cr_assert(oxl_sampler_set_grammar(s, m, NULL, NULL, NULL, 0) == 0);
    cr_expect(oxl_sampler_sample(s, logits, nv) == a);
    free(logits);
    oxl_sampler_free(s);
    oxl_model_free(m);
}

/* Token references against stories260K's vocabulary: <s> is the text of BOS (id 1, resolved as
 * llama.cpp resolves it: tokenized with special tokens parsed), <[1]> its id; at such a position
 * only that token is allowed; !<[1]> allows every other token with a text; a text that is not one
 * token is an error. */
Test(grammar, token_references) {
    oxl_model_params mp = oxl_model_default_params();
    oxl_error e = {0};
    oxl_model *m = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &e);
    cr_assert(m, "%s", e.msg);
    const oxl_vocab *v = m->vocab;
    const int32_t nv = oxl_model_n_vocab(m);
    int32_t *ids = malloc((size_t)nv * sizeof *ids);
    bool *ok = malloc((size_t)nv);
    for (int32_t i = 0; i < nv; i++)
        ids[i] = i;
    const char *forms[] = {"root ::= <s> [a-z]", "root ::= <[1]> [a-z]"};
    for (int f = 0; f < 2; f++) {
        char err[128];
        oxl_grammar *g = oxl_grammar_parse(forms[f], "root", v, err, sizeof err);
        cr_assert(g, "%s: %s", forms[f], err);
        cr_assert(oxl_grammar_apply(g, ids, nv, ok) == 0);
        int32_t n_ok = 0;
        for (int32_t i = 0; i < nv; i++)
            n_ok += ok[i];
        cr_expect(n_ok == 1 && ok[1], "%s: %d tokens allowed at the token position", forms[f], n_ok);
        cr_assert(oxl_grammar_accept_token(g, 1) == 0);
        cr_assert(oxl_grammar_apply(g, ids, nv, ok) == 0);
        char piece[64];
        for (int32_t i = 3; i < nv; i++) { /* after BOS: exactly the tokens whose text is one letter a-z */
            int32_t w = oxl_token_to_piece(m, i, piece, sizeof piece, true);
            bool letter = w == 1 && piece[0] >= 'a' && piece[0] <= 'z';
            cr_expect(ok[i] == letter, "%s: token %d ('%.*s') allowed %d", forms[f], i, w > 0 ? w : 0, piece, ok[i]);
        }
        oxl_grammar_free(g);
    }
    char err[128];
    oxl_grammar *g = oxl_grammar_parse("root ::= !<[1]>", "root", v, err, sizeof err);
    cr_assert(g, "%s", err);
    cr_assert(oxl_grammar_apply(g, ids, nv, ok) == 0);
    /* token 3 is <0x00>, whose text starts with a NUL byte: never allowed (llama.cpp) */
    cr_expect(!ok[1] && !ok[2] && !ok[3] && ok[4] && ok[100], "!<[1]>: BOS %d EOS %d <0x00> %d <0x01> %d token %d",
              ok[1], ok[2], ok[3], ok[4], ok[100]);
    oxl_grammar_free(g);
    /* a token element matches whole tokens: BOS's text "<s>" cannot give its '<' to the '.' and
     * then match <[1]> with the rest, so the filter refuses it (the fuzzer found the filter allowing
     * it and the accept then failing); a one-letter token passes, and then only BOS */
    g = oxl_grammar_parse("root ::= . <[1]>", "root", v, err, sizeof err);
    cr_assert(g, "%s", err);
    cr_assert(oxl_grammar_apply(g, ids, nv, ok) == 0);
    int32_t letter = -1;
    for (int32_t i = 3; i < nv && letter < 0; i++) {
        char pc[8];
        if (oxl_token_to_piece(m, i, pc, sizeof pc, true) == 1 && pc[0] == 'a')
            letter = i;
    }
    cr_assert(letter > 0);
    cr_expect(!ok[1] && ok[letter], ". <[1]>: BOS allowed %d, 'a' allowed %d", ok[1], ok[letter]);
    cr_assert(oxl_grammar_accept_token(g, letter) == 0);
    cr_assert(oxl_grammar_apply(g, ids, nv, ok) == 0);
    int32_t n_after = 0;
    for (int32_t i = 0; i < nv; i++)
        n_after += ok[i];
    cr_expect(n_after == 1 && ok[1], ". <[1]> after 'a': %d tokens allowed, BOS %d", n_after, ok[1]);
    oxl_grammar_free(g);
    g = oxl_grammar_parse("root ::= <hello world>", "root", v, err, sizeof err);
    cr_expect(g == NULL && strstr(err, "1:10: '<hello world>' is not a single token"), "%s", err);
    oxl_grammar_free(g);
    free(ids);
    free(ok);
    oxl_model_free(m);
}

/* --- lazy grammars (llama.cpp's grammar_lazy) ------------------------------------------------- */

/* The token whose text is exactly text. */
static oxl_token one_token(const oxl_model *m, const char *text) {
    char p[64];
    for (int32_t i = 0; i < oxl_model_n_vocab(m); i++) {
        int32_t n = oxl_token_to_piece(m, i, p, sizeof p, true);
        if (n == (int32_t)strlen(text) && memcmp(p, text, (size_t)n) == 0)
            return i;
    }
    cr_assert_fail("no token is '%s'", text);
    return -1;
}

/* How many of the vocabulary's tokens g allows now; *eog: whether end of generation is among them. */
static int32_t n_allowed(oxl_grammar *g, const oxl_model *m, bool *eog) {
    const int32_t nv = oxl_model_n_vocab(m);
    int32_t *ids = malloc((size_t)nv * sizeof *ids);
    bool *ok = malloc((size_t)nv);
    cr_assert(ids && ok);
    for (int32_t i = 0; i < nv; i++)
        ids[i] = i;
    cr_assert(oxl_grammar_apply(g, ids, nv, ok) == 0);
    int32_t n = 0;
    *eog = false;
    for (int32_t i = 0; i < nv; i++) {
        n += ok[i];
        if (ok[i] && oxl_token_is_eog(m, i))
            *eog = true;
    }
    free(ids);
    free(ok);
    return n;
}

static bool allows(oxl_grammar *g, oxl_token t) {
    bool ok = false;
    cr_assert(oxl_grammar_apply(g, &t, 1, &ok) == 0);
    return ok;
}

/* A pattern trigger over stories260K's vocabulary: every token (end of generation too) is allowed
 * until the output matches; the grammar then accepts the output from the pattern's first capture
 * ("ba", whose 'b' came in an earlier token than the match) and constrains what follows. */
Test(grammar, lazy_pattern_trigger) {
    oxl_model_params mp = oxl_model_default_params();
    oxl_error e = {0};
    oxl_model *m = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &e);
    cr_assert(m, "%s", e.msg);
    const int32_t nv = oxl_model_n_vocab(m);
    const oxl_token a = one_token(m, "a"), b = one_token(m, "b"), c = one_token(m, "c"), x = one_token(m, "x");
    char err[160];
    oxl_grammar *g = oxl_grammar_parse("root ::= \"ba\" \"c\"+ \"x\"", "root", m->vocab, err, sizeof err);
    cr_assert(g, "%s", err);
    const char *pat[] = {"[\\s\\S]*?(ba)[\\s\\S]*"};
    cr_assert(oxl_grammar_set_lazy(g, pat, 1, NULL, 0, err, sizeof err) == 0, "%s", err);
    bool eog;
    cr_expect_eq(n_allowed(g, m, &eog), nv); /* waiting: anything goes */
    cr_expect(eog);
    cr_assert(oxl_grammar_accept_token(g, x) == 0); /* not "ba": still waiting */
    cr_assert(oxl_grammar_accept_token(g, b) == 0);
    cr_expect(oxl_grammar_awaiting(g));
    cr_expect_eq(n_allowed(g, m, &eog), nv);
    cr_assert(oxl_grammar_accept_token(g, a) == 0); /* "xba" matches: the grammar has taken "ba" */
    cr_expect(!oxl_grammar_awaiting(g));
    int32_t n = n_allowed(g, m, &eog);
    cr_expect(n > 0 && n < nv, "%d of %d tokens allowed after the trigger", n, nv);
    cr_expect(!eog);
    cr_expect(allows(g, c));
    cr_expect(!allows(g, a) && !allows(g, b) && !allows(g, x));
    cr_assert(oxl_grammar_accept_token(g, c) == 0);
    cr_expect(allows(g, c) && allows(g, x) && !allows(g, a));
    cr_assert(oxl_grammar_accept_token(g, x) == 0);
    cr_expect(oxl_grammar_can_end(g));
    oxl_grammar_free(g);

    /* no capture that matched: the whole output is fed to the grammar, which rejects the "x" */
    g = oxl_grammar_parse("root ::= \"ba\"", "root", m->vocab, err, sizeof err);
    const char *whole[] = {"(q)?[\\s\\S]*ba"};
    cr_assert(oxl_grammar_set_lazy(g, whole, 1, NULL, 0, err, sizeof err) == 0, "%s", err);
    oxl_grammar_accept_token(g, x);
    oxl_grammar_accept_token(g, b);
    oxl_grammar_accept_token(g, a);
    cr_expect(!oxl_grammar_awaiting(g));
    cr_expect(oxl_grammar_dead(g));
    oxl_grammar_free(g);

    /* a pattern that does not compile is an error naming it */
    g = oxl_grammar_parse("root ::= \"ba\"", "root", m->vocab, err, sizeof err);
    const char *bad[] = {"(ba"};
    cr_expect(oxl_grammar_set_lazy(g, bad, 1, NULL, 0, err, sizeof err) == -1);
    cr_expect(strstr(err, "trigger pattern '(ba'"), "%s", err);
    cr_expect(!oxl_grammar_awaiting(g));
    oxl_grammar_free(g);
    oxl_model_free(m);
}

/* The sampler with a lazy grammar: a trigger token, then a trigger word. Before the trigger the
 * chain's choice stands (the model's favourite, 'x'); from the trigger on the grammar decides. */
Test(grammar, lazy_sampler_triggers) {
    oxl_model_params mp = oxl_model_default_params();
    oxl_error e = {0};
    oxl_model *m = oxl_model_load(OXL_SOURCE_DIR "/models/stories260K.gguf", &mp, &e);
    cr_assert(m, "%s", e.msg);
    const oxl_token a = one_token(m, "a"), b = one_token(m, "b"), x = one_token(m, "x");
    const int32_t nv = oxl_model_n_vocab(m);
    float *logits = calloc((size_t)nv, sizeof *logits);
    oxl_sampler_params sp = oxl_sampler_default_params();
    sp.temp = 0.0f;
    oxl_sampler *s = oxl_sampler_new(&sp);
    char err[160];
    const char *gram = "root ::= \"b\" \"a\"";

    /* the token b triggers: it is accepted, then only a */
    cr_assert(oxl_sampler_set_grammar_lazy(s, m, gram, NULL, NULL, 0, NULL, 0, &b, 1, err, sizeof err) == 0, "%s", err);
    logits[x] = 10.0f;
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(oxl_sampler_sample(s, logits, nv), x);
        oxl_sampler_accept(s, x);
    }
    logits[b] = 20.0f;
    cr_expect_eq(oxl_sampler_sample(s, logits, nv), b);
    oxl_sampler_accept(s, b);
    logits[b] = 0.0f;
    logits[a] = 1.0f;
    cr_expect_eq(oxl_sampler_sample(s, logits, nv), a);
    oxl_sampler_accept(s, a);
    oxl_token t = oxl_sampler_sample(s, logits, nv);
    cr_expect(oxl_token_is_eog(m, t), "token %d after the end of the match", t);

    /* the word "b" (escaped: "b|" would be a pattern of two alternatives) */
    const char *words[] = {"b"};
    cr_assert(oxl_sampler_set_grammar_lazy(s, m, gram, NULL, words, 1, NULL, 0, NULL, 0, err, sizeof err) == 0, "%s",
              err);
    cr_expect_eq(oxl_sampler_sample(s, logits, nv), x);
    oxl_sampler_accept(s, x);
    logits[b] = 20.0f;
    cr_expect_eq(oxl_sampler_sample(s, logits, nv), b);
    oxl_sampler_accept(s, b);
    cr_expect_eq(oxl_sampler_sample(s, logits, nv), a); /* b is still the model's favourite */

    /* no trigger, an empty word: errors, the sampler keeps its grammar */
    cr_expect(oxl_sampler_set_grammar_lazy(s, m, gram, NULL, NULL, 0, NULL, 0, NULL, 0, err, sizeof err) == -1);
    cr_expect(strstr(err, "at least one trigger"), "%s", err);
    const char *empty[] = {""};
    cr_expect(oxl_sampler_set_grammar_lazy(s, m, gram, NULL, empty, 1, NULL, 0, NULL, 0, err, sizeof err) == -1);
    cr_expect_eq(oxl_sampler_sample(s, logits, nv), a);
    free(logits);
    oxl_sampler_free(s);
    oxl_model_free(m);
}
