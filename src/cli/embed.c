/* oxillama embed: the embeddings of one or more texts, printed as llama.cpp's llama-embedding prints
 * them (examples/embedding/embedding.cpp). The prompt is split into lines (--embd-separator), each
 * line tokenized with the vocabulary's BOS/EOS and special-token parsing, the lines packed into
 * batches of at most n_batch tokens (one sequence each), pooled, normalised (--embd-normalize,
 * llama.cpp's common_embd_normalize, default 2 = Euclidean) and printed on stdout:
 *   default: pooling none: "embedding J: " the first 3 and last 3 values of each token ("%9.6f ");
 *            rank: "rerank score J: %8.3f" per line; otherwise each line's embedding (all values
 *            for one line, the first 16 for several) and for several lines the cosine-similarity
 *            matrix; with --embd-normalize 0 the values as "%6.0f ".
 *   --embd-output-format json | json+ | array | raw: the OpenAI-style list, plus the cosine matrix,
 *            a bare array of arrays, or one embedding per line ("%1.7f", or "%1.0f" for 0).
 * With rank pooling a line "QUERY<TAB>DOCUMENT" (--cls-separator) is one pair: the texts joined
 * with the vocabulary's EOS and SEP when it adds them, or put in the model's "rerank" template. */
#include "args.h"
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct embed_opts {
    oxl_pooling pooling;
    int normalize;
    const char *format; /* "" default, json, json+, array, raw */
    const char *sep;    /* prompt separator (\n) */
    const char *cls_sep;
} embed_opts;

static void embd_normalize(const float *in, float *out, int32_t n, int p) {
    double sum = 0.0;
    if (p == -1) {
        sum = 1.0;
    } else if (p == 0) {
        for (int32_t i = 0; i < n; i++) {
            sum = sum < fabs(in[i]) ? fabs(in[i]) : sum;
        }
        sum /= 32760.0;
    } else if (p == 2) {
        for (int32_t i = 0; i < n; i++) {
            sum += in[i] * in[i];
        }
        sum = sqrt(sum);
    } else {
        for (int32_t i = 0; i < n; i++) {
            sum += pow(fabs(in[i]), p);
        }
        sum = pow(sum, 1.0 / p);
    }
    const float norm = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
    for (int32_t i = 0; i < n; i++) {
        out[i] = in[i] * norm;
    }
}

/* llama.cpp's common_embd_similarity_cos: sums in double; two zero vectors are similar (1). */
static float similarity_cos(const float *a, const float *b, int32_t n) {
    double s = 0.0, s1 = 0.0, s2 = 0.0;
    for (int32_t i = 0; i < n; i++) {
        s += a[i] * b[i];
        s1 += a[i] * a[i];
        s2 += b[i] * b[i];
    }
    if (s1 == 0.0 || s2 == 0.0) {
        return s1 == 0.0 && s2 == 0.0 ? 1.0f : 0.0f;
    }
    return (float)(s / (sqrt(s1) * sqrt(s2)));
}

static int parse_extra(embed_opts *e, int n, char **args) {
    for (int i = 0; i < n; i++) {
        const char *a = args[i];
        if (i + 1 >= n &&
            (!strcmp(a, "--pooling") || !strcmp(a, "--embd-normalize") || !strcmp(a, "--embd-output-format") ||
             !strcmp(a, "--embd-separator") || !strcmp(a, "--cls-separator"))) {
            fprintf(stderr, "error: %s needs a value\n", a);
            return -1;
        }
        if (!strcmp(a, "--pooling")) {
            const char *v = args[++i];
            static const char *names[] = {"none", "mean", "cls", "last", "rank"};
            int k = 0;
            while (k < 5 && strcmp(v, names[k])) {
                k++;
            }
            if (k == 5) {
                fprintf(stderr, "error: --pooling '%s': expected none, mean, cls, last or rank\n", v);
                return -1;
            }
            e->pooling = (oxl_pooling)k;
        } else if (!strcmp(a, "--embd-normalize")) {
            char *end = NULL;
            const long v = strtol(args[++i], &end, 10);
            if (!*args[i] || *end || v < -1 || v > 64) {
                fprintf(stderr, "error: --embd-normalize '%s': expected an integer from -1 to 64\n", args[i]);
                return -1;
            }
            e->normalize = (int)v;
        } else if (!strcmp(a, "--embd-output-format")) {
            const char *v = args[++i];
            if (*v && strcmp(v, "json") && strcmp(v, "json+") && strcmp(v, "array") && strcmp(v, "raw")) {
                fprintf(stderr, "error: --embd-output-format '%s': expected json, json+, array or raw\n", v);
                return -1;
            }
            e->format = v;
        } else if (!strcmp(a, "--embd-separator")) {
            e->sep = args[++i];
        } else if (!strcmp(a, "--cls-separator")) {
            e->cls_sep = args[++i];
        } else {
            fprintf(stderr, "error: unknown option '%s' (see oxillama embed --help)\n", a);
            return -1;
        }
    }
    if (!*e->sep || !*e->cls_sep) {
        fprintf(stderr, "error: --embd-separator and --cls-separator cannot be empty\n");
        return -1;
    }
    return 0;
}

/* Appends len bytes to a growing buffer; false when out of memory. */
static bool append(char **buf, size_t *n, size_t *cap, const char *s, size_t len) {
    if (*n + len + 1 > *cap) {
        size_t c = (*cap ? *cap * 2 : 256) + len;
        char *p = realloc(*buf, c);
        if (!p) {
            return false;
        }
        *buf = p;
        *cap = c;
    }
    memcpy(*buf + *n, s, len);
    *n += len;
    (*buf)[*n] = 0;
    return true;
}

static bool append_token_text(const oxl_model *m, oxl_token t, char **buf, size_t *n, size_t *cap) {
    char piece[256];
    const int32_t k = oxl_token_to_piece(m, t, piece, sizeof piece, true);
    return k < 0 || append(buf, n, cap, piece, (size_t)k);
}

/* The text a rank pair line is tokenized as (llama-embedding's main): the "rerank" template with
 * {query} and {document} replaced, or the parts joined by the added EOS and SEP texts. */
static char *rank_text(const oxl_model *m, const char *line, const char *cls_sep, bool *templ) {
    char *out = NULL;
    size_t n = 0, cap = 0;
    const size_t sl = strlen(cls_sep);
    char tmpl[4096];
    const int32_t tl = oxl_model_meta_val_str(m, "tokenizer.chat_template.rerank", tmpl, sizeof tmpl);
    *templ = tl >= 0 && tl < (int32_t)sizeof tmpl;
    if (*templ) {
        const char *sep = strstr(line, cls_sep);
        const size_t ql = (size_t)(sep - line);
        const char *doc = sep + sl;
        const char *d_end = strstr(doc, cls_sep);
        const size_t dl = d_end ? (size_t)(d_end - doc) : strlen(doc);
        for (const char *p = tmpl; *p;) {
            if (!strncmp(p, "{query}", 7)) {
                if (!append(&out, &n, &cap, line, ql)) {
                    goto oom;
                }
                p += 7;
            } else if (!strncmp(p, "{document}", 10)) {
                if (!append(&out, &n, &cap, doc, dl)) {
                    goto oom;
                }
                p += 10;
            } else if (!append(&out, &n, &cap, p++, 1)) {
                goto oom;
            }
        }
        return out ? out : strdup("");
    }
    char meta[16];
    const bool add_eos =
        oxl_model_meta_val_str(m, "tokenizer.ggml.add_eos_token", meta, sizeof meta) > 0 && !strcmp(meta, "true");
    const bool add_sep =
        oxl_model_meta_val_str(m, "tokenizer.ggml.add_sep_token", meta, sizeof meta) > 0 && !strcmp(meta, "true");
    oxl_token sep_id = -1;
    if (oxl_model_meta_val_str(m, "tokenizer.ggml.seperator_token_id", meta, sizeof meta) > 0) {
        sep_id = (oxl_token)strtol(meta, NULL, 10);
    }
    for (const char *p = line;;) {
        const char *q = strstr(p, cls_sep);
        if (!append(&out, &n, &cap, p, q ? (size_t)(q - p) : strlen(p))) {
            goto oom;
        }
        if (!q) {
            break;
        }
        if ((add_eos && oxl_token_eos(m) >= 0 && !append_token_text(m, oxl_token_eos(m), &out, &n, &cap)) ||
            (add_sep && sep_id >= 0 && !append_token_text(m, sep_id, &out, &n, &cap))) {
            goto oom;
        }
        p = q + sl;
    }
    return out;
oom:
    free(out);
    return NULL;
}

static void print_value(float v, int normalize, const char *fmt_norm0, const char *fmt) {
    printf(normalize == 0 ? fmt_norm0 : fmt, (double)v);
}

int oxl_cmd_embed(int argc, char **argv) {
    oxl_opts o;
    if (oxl_opts_parse(&o, OXL_VERB_RUN | OXL_OPTS_PASS_UNKNOWN, argc, argv) != 0) {
        return 1;
    }
    if (o.help) {
        printf("usage: oxillama embed -m FILE (-p TEXT | -f FILE) [options]\n\n"
               "the embedding of each line of the text, as llama-embedding prints it\n\n"
               "  --pooling none|mean|cls|last|rank   pooling (default: the model's)\n"
               "  --embd-normalize N   -1 none, 0 max absolute int16, 1 taxicab, 2 euclidean (default), >2 p-norm\n"
               "  --embd-output-format FORMAT   json, json+ (with the cosine-similarity matrix), array, raw\n"
               "  --embd-separator S   separator of the texts (default \\n)\n"
               "  --cls-separator S    rank pooling: separator of query and document (default \\t)\n"
               "  -t N  threads; -b N  tokens per batch (default 2048)\n");
        return 0;
    }
    embed_opts e = {.pooling = OXL_POOLING_UNSPECIFIED, .normalize = 2, .format = "", .sep = "\n", .cls_sep = "\t"};
    if (parse_extra(&e, o.n_positional, o.positional) != 0) {
        return 1;
    }
    char *text = NULL;
    size_t len = 0;
    if (o.prompt) {
        len = strlen(o.prompt);
        text = malloc(len + 1);
        if (!text) {
            fprintf(stderr, "error: out of memory\n");
            return 1;
        }
        memcpy(text, o.prompt, len + 1);
        len = oxl_process_escapes(text, len);
        text[len] = 0;
    } else if (o.file) {
        text = oxl_read_text_file(o.file, &len);
        if (!text) {
            return 1;
        }
        if (len && text[len - 1] == '\n') {
            text[--len] = 0;
        }
    } else {
        fprintf(stderr, "error: embed needs a text: -p TEXT or -f FILE\n");
        return 1;
    }

    int status = 1;
    oxl_error err = {0};
    oxl_model *m = NULL;
    oxl_ctx *ctx = NULL;
    char **lines = NULL;
    oxl_token **toks = NULL;
    int32_t *lens = NULL, n_lines = 0;
    float *emb = NULL;
    oxl_token *btok = NULL;
    int32_t *bpos = NULL, *bseq = NULL;
    int8_t *bkeep = NULL;

    oxl_model_params mp = oxl_model_default_params();
    mp.use_mmap = !o.no_mmap;
    m = oxl_model_load(oxl_opts_model(&o), &mp, &err);
    if (!m) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    /* the lines (llama-embedding's split_lines: a trailing separator gives a last empty line) */
    const size_t sl = strlen(e.sep);
    for (const char *p = text;;) {
        const char *q = strstr(p, e.sep);
        char **nl = realloc(lines, sizeof *lines * (size_t)(n_lines + 1));
        if (!nl) {
            goto oom;
        }
        lines = nl;
        const size_t ll = q ? (size_t)(q - p) : strlen(p);
        if (!(lines[n_lines] = malloc(ll + 1))) {
            goto oom;
        }
        memcpy(lines[n_lines], p, ll);
        lines[n_lines++][ll] = 0;
        if (!q) {
            break;
        }
        p = q + sl;
    }
    const int32_t n_batch = o.n_batch > 0 ? o.n_batch : 2048;
    const int32_t n_seq_max = n_lines < 256 ? n_lines : 256;
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.embeddings = true;
    cp.pooling = e.pooling;
    cp.n_seq_max = n_seq_max;
    cp.n_batch = n_batch;
    cp.n_ctx = n_batch * n_seq_max;
    cp.n_threads = o.n_threads;
    ctx = oxl_ctx_new(m, &cp, &err);
    if (!ctx) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    const oxl_pooling pooling = oxl_ctx_pooling(ctx);
    const bool rank = pooling == OXL_POOLING_RANK;
    toks = calloc((size_t)n_lines, sizeof *toks);
    lens = calloc((size_t)n_lines, sizeof *lens);
    if (!toks || !lens) {
        goto oom;
    }
    int64_t n_count = 0;
    for (int32_t k = 0; k < n_lines; k++) {
        char *t = lines[k];
        bool templ = false;
        if (rank && strstr(lines[k], e.cls_sep) && !(t = rank_text(m, lines[k], e.cls_sep, &templ))) {
            goto oom;
        }
        (void)templ;
        int32_t n = oxl_tokenize(m, t, strlen(t), NULL, 0, true, true);
        if (n < 0 && n != INT32_MIN && (toks[k] = malloc(sizeof(oxl_token) * (size_t)-n))) {
            n = oxl_tokenize(m, t, strlen(t), toks[k], -n, true, true);
        }
        if (t != lines[k]) {
            free(t);
        }
        if (n < 0) {
            fprintf(stderr, "error: cannot tokenize line %d\n", k);
            goto done;
        }
        if (n > n_batch) {
            fprintf(stderr,
                    "error: number of tokens in input line (%d) exceeds batch size (%d), increase batch size and "
                    "re-run\n",
                    n, n_batch);
            goto done;
        }
        lens[k] = n;
        n_count += pooling == OXL_POOLING_NONE ? n : 1;
    }
    const int32_t n_embd = oxl_model_n_embd(m);
    const int32_t n_cls_out = rank ? oxl_model_n_cls_out(m) : 0;
    emb = calloc((size_t)(n_count ? n_count : 1) * (size_t)n_embd, sizeof(float));
    btok = malloc(sizeof *btok * (size_t)n_batch);
    bpos = malloc(sizeof *bpos * (size_t)n_batch);
    bseq = malloc(sizeof *bseq * (size_t)n_batch);
    bkeep = malloc((size_t)n_batch);
    if (!emb || !btok || !bpos || !bseq || !bkeep) {
        goto oom;
    }
    /* batches as llama-embedding packs them: lines in order while they fit n_batch tokens and the
     * sequences last; each batch encoded afresh (its memory cleared) */
    int64_t done_e = 0;
    for (int32_t k = 0; k < n_lines;) {
        int32_t nt = 0, s = 0;
        while (k < n_lines && s < n_seq_max && (s == 0 || nt + lens[k] <= n_batch)) {
            for (int32_t i = 0; i < lens[k]; i++) {
                btok[nt] = toks[k][i];
                bpos[nt] = i;
                bseq[nt] = s;
                bkeep[nt++] = 1;
            }
            s++;
            k++;
        }
        for (int32_t q = 0; q < n_seq_max; q++) {
            oxl_seq_truncate(ctx, q, 0);
        }
        if (nt > 0) {
            oxl_batch b = {.n_tokens = nt, .token = btok, .pos = bpos, .seq_id = bseq, .logits = bkeep};
            if (oxl_decode_batch(ctx, &b, &err) != 0) {
                fprintf(stderr, "error: %s\n", err.msg);
                goto done;
            }
        }
        if (pooling == OXL_POOLING_NONE) {
            for (int32_t i = 0; i < nt; i++) {
                embd_normalize(oxl_get_embeddings_ith(ctx, i), emb + (size_t)(done_e + i) * (size_t)n_embd, n_embd,
                               e.normalize);
            }
            done_e += nt;
        } else {
            for (int32_t q = 0; q < s; q++) {
                const float *v = oxl_get_embeddings_seq(ctx, q);
                if (v) {
                    embd_normalize(v, emb + (size_t)(done_e + q) * (size_t)n_embd, rank ? n_cls_out : n_embd,
                                   e.normalize);
                }
            }
            done_e += s;
        }
    }

    const int n0 = e.normalize;
    const int32_t N = (int32_t)n_count;
    if (!*e.format) {
        printf("\n");
        if (pooling == OXL_POOLING_NONE) {
            for (int32_t j = 0; j < N; j++) {
                printf("embedding %d: ", j);
                for (int32_t i = 0; i < (n_embd < 3 ? n_embd : 3); i++) {
                    print_value(emb[(size_t)j * n_embd + i], n0, "%6.0f ", "%9.6f ");
                }
                printf(" ... ");
                for (int32_t i = n_embd - 3; i < n_embd; i++) {
                    print_value(emb[(size_t)j * n_embd + (i < 0 ? 0 : i)], n0, "%6.0f ", "%9.6f ");
                }
                printf("\n");
            }
        } else if (rank) {
            for (int32_t j = 0; j < N; j++) {
                for (int32_t i = 0; i < n_cls_out; i++) {
                    if (n_cls_out == 1) {
                        printf("rerank score %d: %8.3f\n", j, (double)emb[(size_t)j * n_embd]);
                    } else {
                        char label[128];
                        if (oxl_model_cls_label(m, i, label, sizeof label) <= 0) {
                            snprintf(label, sizeof label, "%d", i);
                        }
                        printf("rerank score %d: %8.3f [%s]\n", j, (double)emb[(size_t)j * n_embd + i], label);
                    }
                }
            }
        } else {
            for (int32_t j = 0; j < n_lines; j++) {
                printf("embedding %d: ", j);
                const int32_t cols = n_lines > 1 ? (n_embd < 16 ? n_embd : 16) : n_embd;
                for (int32_t i = 0; i < cols; i++) {
                    print_value(emb[(size_t)j * n_embd + i], n0, "%6.0f ", "%9.6f ");
                }
                printf("\n");
            }
            if (n_lines > 1) {
                printf("\ncosine similarity matrix:\n\n");
                for (int32_t i = 0; i < n_lines; i++) {
                    printf("%6.6s ", lines[i]);
                }
                printf("\n");
                for (int32_t i = 0; i < n_lines; i++) {
                    for (int32_t j = 0; j < n_lines; j++) {
                        printf("%6.2f ",
                               (double)similarity_cos(emb + (size_t)i * n_embd, emb + (size_t)j * n_embd, n_embd));
                    }
                    printf("%1.10s\n", lines[i]);
                }
            }
        }
    }
    const char *vf = n0 == 0 ? "%1.0f" : "%1.7f";
    if (!strcmp(e.format, "json") || !strcmp(e.format, "json+") || !strcmp(e.format, "array")) {
        const bool obj = strcmp(e.format, "array") != 0;
        printf(obj ? "{\n  \"object\": \"list\",\n  \"data\": [\n" : "[");
        for (int32_t j = 0; j < N; j++) {
            if (obj) {
                printf("    {\n      \"object\": \"embedding\",\n      \"index\": %d,\n      \"embedding\": ", j);
            }
            printf("[");
            for (int32_t i = 0; i < n_embd; i++) {
                printf(vf, (double)emb[(size_t)j * n_embd + i]);
                if (i + 1 < n_embd) {
                    printf(",");
                }
            }
            printf(obj ? "]\n    }" : "]");
            if (j + 1 < N) {
                printf(obj ? ",\n" : ",");
            }
        }
        printf(obj ? "\n  ]" : "]\n");
        if (!strcmp(e.format, "json+") && n_lines > 1) {
            printf(",\n  \"cosineSimilarity\": [\n");
            for (int32_t i = 0; i < N; i++) {
                printf("    [");
                for (int32_t j = 0; j < N; j++) {
                    printf("%6.2f", (double)similarity_cos(emb + (size_t)i * n_embd, emb + (size_t)j * n_embd, n_embd));
                    if (j + 1 < N) {
                        printf(", ");
                    }
                }
                printf(" ]");
                if (i + 1 < N) {
                    printf(",\n");
                }
            }
            printf("\n  ]");
        }
        if (obj) {
            printf("\n}\n");
        }
    } else if (!strcmp(e.format, "raw")) {
        const int32_t cols = rank ? (n_cls_out < n_embd ? n_cls_out : n_embd) : n_embd;
        for (int32_t j = 0; j < N; j++) {
            for (int32_t i = 0; i < cols; i++) {
                printf(vf, (double)emb[(size_t)j * n_embd + i]);
                if (i + 1 < cols) {
                    printf(" ");
                }
            }
            printf("\n");
        }
    }
    printf("\n");
    status = fflush(stdout) == 0 ? 0 : 1;
    goto done;
oom:
    fprintf(stderr, "error: out of memory\n");
done:
    for (int32_t k = 0; k < n_lines; k++) {
        free(lines[k]);
        if (toks) {
            free(toks[k]);
        }
    }
    free(lines);
    free(toks);
    free(lens);
    free(emb);
    free(btok);
    free(bpos);
    free(bseq);
    free(bkeep);
    oxl_ctx_free(ctx);
    oxl_model_free(m);
    free(text);
    return status;
}
