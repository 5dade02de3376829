/* oxillama run: prompt in, prompt + continuation out on stdout; logs and speed on stderr. */
#include "args.h"
#include "cli.h"
#include "file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --verbose-prompt (llama.cpp's): the prompt text, its token count and each id with its piece, on
 * stderr. Also used by run -cnv (chat.c) for each turn. */
void oxl_print_verbose_prompt(const oxl_model *m, const char *text, size_t len, const oxl_token *toks, int32_t n) {
    fputs("prompt: '", stderr);
    fwrite(text, 1, len, stderr);
    fprintf(stderr, "'\nnumber of tokens in prompt = %d\n", n);
    char piece[256];
    for (int32_t i = 0; i < n; i++) {
        const int32_t w = oxl_token_to_piece(m, toks[i], piece, (int32_t)sizeof piece, true);
        fprintf(stderr, "%6d -> '%.*s'\n", toks[i], w > 0 ? w : 0, piece);
    }
    fputc('\n', stderr);
}

/* --prompt-cache (llama-cli's session file, tools/main/main.cpp): when the file exists, sequence 0 is
 * restored from it and cut back to the longest prefix it shares with the prompt; a prompt equal to
 * the cached tokens keeps all but its last token, which is evaluated again for its logits. A
 * recurrent model's state cannot be cut back: a partial match there reuses nothing. *n_reuse: the
 * prompt tokens not to evaluate. Returns 0, or -1 after an error message (a file that does not fit
 * this model and context is an error, as in llama-cli). */
static int prompt_cache_load(const oxl_opts *o, oxl_ctx *ctx, const oxl_token *toks, int32_t n_tok, int32_t *n_reuse) {
    *n_reuse = 0;
    FILE *f = fopen(o->prompt_cache, "rb");
    if (!f) {
        oxl_log(o, OXL_LOG_INFO, "oxillama: prompt cache %s does not exist%s\n", o->prompt_cache,
                o->prompt_cache_ro ? "" : "; it will be created");
        return 0;
    }
    fclose(f);
    const int32_t cap = oxl_ctx_n_ctx(ctx);
    oxl_token *cached = malloc(sizeof(oxl_token) * (size_t)cap);
    if (!cached) {
        fprintf(stderr, "error: --prompt-cache: out of memory\n");
        return -1;
    }
    oxl_error err = {0};
    const int32_t n = oxl_state_seq_load(ctx, 0, o->prompt_cache, cached, cap, &err);
    if (n < 0) {
        fprintf(stderr, "error: --prompt-cache: %s\n", err.msg);
        free(cached);
        return -1;
    }
    int32_t match = 0;
    while (match < n && match < n_tok && cached[match] == toks[match]) {
        match++;
    }
    free(cached);
    if (match == n_tok) {
        match--; /* the last prompt token is evaluated again: its logits pick the first output */
    }
    if (match < n) {
        oxl_ctx_truncate(ctx, match);
        if (oxl_ctx_n_past(ctx) != match) { /* a recurrent state cannot step back */
            oxl_ctx_truncate(ctx, 0);
            match = 0;
        }
    }
    *n_reuse = match;
    oxl_log(o, OXL_LOG_INFO, "oxillama: prompt cache %s: reused %d of %d prompt tokens (the file held %d)\n",
            o->prompt_cache, match, n_tok, n);
    return 0;
}

/* The requests that images cannot take here, and --image without --mmproj; loads the --image files
 * in order into images[]. Returns 0, or -1 after an error message naming the option. */
static int mm_check_and_load(const oxl_opts *o, oxl_image **images) {
    if (o->audio) {
        fprintf(stderr, "error: --audio %s: audio input is not supported (images only: --image)\n", o->audio);
        return -1;
    }
    if (o->n_images > 0 && !o->mmproj) {
        fprintf(stderr, "error: --image needs --mmproj FILE (the vision projector that encodes the image)\n");
        return -1;
    }
    if (!o->mmproj) {
        return 0;
    }
    const char *refused = o->model_draft || o->spec_type ? "speculative decoding (-md, --spec-type)"
                          : o->ctx_shift                 ? "--context-shift"
                          : o->prompt_cache              ? "--prompt-cache"
                                                         : NULL;
    if (refused) {
        fprintf(stderr, "error: --mmproj: %s is not supported with images\n", refused);
        return -1;
    }
    for (int i = 0; i < o->n_images; i++) {
        oxl_error err = {0};
        images[i] = oxl_image_load_file(o->images[i], &err);
        if (!images[i]) {
            fprintf(stderr, "error: --image: %s\n", err.msg);
            return -1;
        }
    }
    return 0;
}

int oxl_cmd_run(int argc, char **argv) {
    oxl_opts o;
    if (oxl_opts_parse(&o, OXL_VERB_RUN, argc, argv) != 0) {
        return 1;
    }
    if (o.help) {
        oxl_opts_usage(
            "run", OXL_VERB_RUN,
            "[-m FILE] -p PROMPT [-n N] [-t N] [-c N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--seed S]\n"
            "       [--mmproj FILE --image FILE ...]");
        return 0;
    }
    char *file_text = NULL;
    size_t prompt_len = 0;
    const char *prompt = o.prompt;
    if (!prompt && o.file) {
        file_text = oxl_read_text_file(o.file, &prompt_len);
        if (!file_text) {
            return 1;
        }
        prompt = file_text;
    } else if (prompt) {
        /* -p text gets llama.cpp's escape processing; -f text is used as it is */
        file_text = strdup(prompt);
        if (!file_text) {
            return 1;
        }
        prompt_len = oxl_process_escapes(file_text, strlen(file_text));
        file_text[prompt_len] = '\0';
        prompt = file_text;
    } else {
        prompt = "";
    }

    oxl_error err = {0};
    int status = 1;
    oxl_model *model = NULL;
    oxl_ctx *ctx = NULL;
    oxl_sampler *smpl = NULL;
    oxl_token *toks = NULL;
    oxl_model *dmodel = NULL; /* speculative decoding's draft model (-md) */
    oxl_ctx *dctx = NULL;
    oxl_mmproj *mm = NULL;
    oxl_image *images[OXL_MAX_IMAGES] = {0};
    bool spec_ngram = false, spec_draft = false;
    if (mm_check_and_load(&o, images) != 0) {
        goto done;
    }
    if ((o.model_draft || o.spec_type) && oxl_spec_check(&o, &spec_ngram, &spec_draft) != 0) {
        goto done;
    }

    oxl_log(&o, OXL_LOG_VERBOSE, "oxillama: model %s\n", oxl_opts_model(&o));
    oxl_log_settings(&o);
    double t0 = oxl_clock_s();
    oxl_model_params mp = oxl_model_default_params();
    mp.repack = !o.no_repack;
    mp.use_mmap = !o.no_mmap;
    oxl_opts_gpu_params(&o, &mp);
    mp.use_mlock = o.mlock;
    model = oxl_model_load(oxl_opts_model(&o), &mp, &err);
    if (!model) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    if (!oxl_model_has_decoder(model)) {
        fprintf(stderr, "error: %s: an embedding model (no output head) cannot generate text\n", oxl_opts_model(&o));
        goto done;
    }
    oxl_ctx_params cp = oxl_ctx_default_params();
    cp.n_ctx = o.n_ctx;
    cp.n_batch = o.n_batch;
    cp.n_threads = o.n_threads;
    cp.type_k = o.type_k;
    cp.type_v = o.type_v;
    cp.flash_attn = o.flash_attn;
    ctx = oxl_ctx_new(model, &cp, &err);
    if (!ctx) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    if (oxl_opts_apply_adapters(&o, model, ctx) != 0) {
        goto done;
    }
    const oxl_mmproj_params mmp = {o.image_min_tokens, o.image_max_tokens};
    if (o.mmproj && !(mm = oxl_mmproj_load_params(o.mmproj, model, &mmp, &err))) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    oxl_log(&o, OXL_LOG_INFO, "oxillama: %s; loaded in %.1f ms (%s); n_ctx %d\n", oxl_model_desc(model),
            (oxl_clock_s() - t0) * 1e3, o.no_mmap ? "read" : "mapped", oxl_ctx_n_ctx(ctx));
    if ((spec_ngram || spec_draft) && o.conversation) {
        fprintf(stderr, "error: speculative decoding (-md, --spec-type) is not offered with -cnv\n");
        goto done;
    }
    if ((spec_ngram || spec_draft) && oxl_spec_can_rewind(model, NULL) != 0) {
        goto done;
    }
    if (spec_draft) {
        dmodel = oxl_model_load(o.model_draft, &mp, &err);
        if (!dmodel) {
            fprintf(stderr, "error: draft model: %s\n", err.msg);
            goto done;
        }
        if (oxl_model_draft_compatible(model, dmodel, &err) != 0) {
            fprintf(stderr, "error: %s: %s\n", o.model_draft, err.msg);
            goto done;
        }
        if (oxl_spec_can_rewind(model, dmodel) != 0) {
            goto done;
        }
        cp.n_ctx = oxl_ctx_n_ctx(ctx);
        dctx = oxl_ctx_new(dmodel, &cp, &err);
        if (!dctx || oxl_ctx_share_threads(dctx, ctx, &err) != 0) {
            fprintf(stderr, "error: draft model: %s\n", err.msg);
            goto done;
        }
        oxl_log(&o, OXL_LOG_INFO, "oxillama: draft model %s\n", oxl_model_desc(dmodel));
    }

    smpl = oxl_sampler_new(&o.sampling);
    if (!smpl) {
        fprintf(stderr, "error: cannot create the sampler\n");
        goto done;
    }
    if (o.sampling.dry_multiplier != 0.0f) { /* DRY's breakers, with -p's escape processing (llama.cpp) */
        char *brk[16];
        int nb = 0;
        for (; nb < o.n_dry_breakers; nb++) {
            brk[nb] = strdup(o.dry_breakers[nb]);
            if (!brk[nb]) {
                break;
            }
            if (o.dry_breakers_set) {
                brk[nb][oxl_process_escapes(brk[nb], strlen(brk[nb]))] = '\0';
            }
        }
        int32_t rc = nb == o.n_dry_breakers ? oxl_sampler_dry_breakers(smpl, model, (const char *const *)brk, nb) : -1;
        for (int k = 0; k < nb; k++) {
            free(brk[k]);
        }
        if (rc != 0) {
            fprintf(stderr, "error: cannot set up DRY's sequence breakers\n");
            goto done;
        }
    }
    if (o.grammar || o.grammar_file || o.json_schema || o.json_schema_file) {
        /* llama.cpp's --grammar / --grammar-file / -j / -jf, start rule "root" */
        if (!!o.grammar + !!o.grammar_file + !!o.json_schema + !!o.json_schema_file > 1) {
            fprintf(stderr, "error: give one of --grammar, --grammar-file, --json-schema, --json-schema-file\n");
            goto done;
        }
        size_t glen = 0;
        const char *file = o.grammar_file ? o.grammar_file : o.json_schema_file;
        char *text = file ? oxl_read_text_file(file, &glen) : NULL;
        if (file && !text) {
            goto done;
        }
        const char *where = file ? file : o.grammar ? "(--grammar)" : "(--json-schema)";
        char *gtext = NULL;
        if (o.json_schema || o.json_schema_file) {
            oxl_error jerr = {{0}};
            if (oxl_json_schema_to_grammar(text ? text : o.json_schema, &gtext, &jerr) != 0) {
                fprintf(stderr, "error: json schema %s: %s\n", where, jerr.msg);
                free(text);
                goto done;
            }
            free(text);
            text = gtext;
        }
        char gerr[256];
        int grc = oxl_sampler_set_grammar(smpl, model, text ? text : o.grammar, "root", gerr, sizeof gerr);
        free(text);
        if (grc != 0) {
            fprintf(stderr, "error: grammar %s:%s\n", where, gerr);
            goto done;
        }
    }
    if (o.ctx_shift && (o.conversation || spec_ngram || spec_draft)) {
        fprintf(stderr, "error: --context-shift is not implemented with %s\n",
                o.conversation ? "-cnv (a chat stops when its context is full)" : "speculative decoding");
        goto done;
    }
    if (o.conversation) {
        status = oxl_chat_loop(model, ctx, smpl, &o, mm, images);
        goto done;
    }

    int32_t n_ctx = oxl_ctx_n_ctx(ctx);
    int32_t n_tok = 0, n_reuse = 0;
    double t1 = 0;
    if (mm) {
        /* llama-mtmd-cli: the images take the places of the prompt's markers; the penalties see
         * the generated tokens only */
        if (o.verbose_prompt) {
            fprintf(stderr, "prompt: '%s'\nimages in prompt = %d\n\n", prompt, o.n_images);
        }
        fwrite(prompt, 1, prompt_len, stdout);
        fflush(stdout);
        t1 = oxl_clock_s();
        if (oxl_mm_eval(ctx, mm, 0, prompt, (const oxl_image *const *)images, o.n_images, true, &err) != 0) {
            fprintf(stderr, "\nerror: %s\n", err.msg);
            goto done;
        }
        n_tok = oxl_ctx_n_past(ctx);
        goto evaluated;
    }
    n_tok = oxl_tokenize(model, prompt, prompt_len, NULL, 0, true, false);
    if (n_tok == INT32_MIN) {
        fprintf(stderr, "error: cannot tokenize the prompt\n");
        goto done;
    }
    n_tok = n_tok < 0 ? -n_tok : n_tok;
    toks = malloc(sizeof(oxl_token) * (size_t)(n_tok > 0 ? n_tok : 1));
    if (!toks || oxl_tokenize(model, prompt, prompt_len, toks, n_tok, true, false) != n_tok) {
        fprintf(stderr, "error: cannot tokenize the prompt\n");
        goto done;
    }
    if (n_tok == 0) {
        fprintf(stderr, "error: the prompt is empty and the model adds no BOS token\n");
        goto done;
    }
    if (n_tok >= n_ctx) {
        fprintf(stderr, "error: the prompt is %d tokens, the context only %d (-c)\n", n_tok, n_ctx);
        goto done;
    }
    if (o.verbose_prompt) {
        oxl_print_verbose_prompt(model, prompt, prompt_len, toks, n_tok);
    }
    fwrite(prompt, 1, prompt_len, stdout);
    fflush(stdout);

    t1 = oxl_clock_s();
    if (o.prompt_cache && prompt_cache_load(&o, ctx, toks, n_tok, &n_reuse) != 0) {
        goto done;
    }
    if (oxl_decode(ctx, toks + n_reuse, n_tok - n_reuse, false, &err) != 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    if (o.prompt_cache && !o.prompt_cache_ro && oxl_state_seq_save(ctx, 0, toks, n_tok, o.prompt_cache, &err) != 0) {
        fprintf(stderr, "error: --prompt-cache: %s\n", err.msg);
        goto done;
    }
    for (int32_t i = 0; i < n_tok; i++) { /* the penalties see the prompt, as llama.cpp's */
        oxl_sampler_accept(smpl, toks[i]);
    }
evaluated:;
    double t2 = oxl_clock_s();
    int32_t n_vocab = oxl_model_n_vocab(model);
    oxl_detok detok = {0};
    char piece[4096];
    int n_gen = 0, n_shift = 0;
    /* --keep as llama-completion: -1 or more than the prompt keeps the prompt, else BOS is added */
    const int32_t n_keep = o.n_keep < 0 || o.n_keep > n_tok ? n_tok : o.n_keep + (oxl_vocab_add_bos(model) ? 1 : 0);
    if (o.ctx_shift && oxl_ctx_can_shift(ctx, &err) != 0) {
        fprintf(stderr, "error: --context-shift: %s\n", err.msg);
        goto done;
    }
    if (spec_ngram || spec_draft) {
        if (oxl_spec_generate(&o, model, ctx, smpl, dmodel, dctx, spec_ngram, toks, n_tok, &n_gen) != 0) {
            goto done;
        }
        goto finished;
    }
    for (; o.n_predict < 0 || n_gen < o.n_predict; n_gen++) {
        oxl_token next = oxl_sampler_sample(smpl, oxl_get_logits(ctx, -1), n_vocab);
        if (next < 0) {
            fprintf(stderr, "\nerror: no token can be sampled (the grammar allows none, or memory ran out)\n");
            goto done;
        }
        oxl_sampler_accept(smpl, next);
        if (oxl_token_is_eog(model, next)) {
            break;
        }
        int32_t w = oxl_detok_push(&detok, model, next, piece, (int32_t)sizeof piece);
        if (w > 0) {
            fwrite(piece, 1, (size_t)w, stdout);
            fflush(stdout);
        }
        /* infinite text generation via context shifting (llama.cpp tools/completion/completion.cpp):
         * when the token would fill the context, keep n_keep tokens and drop half of the rest */
        if (oxl_ctx_n_past(ctx) + 1 >= n_ctx) {
            if (!o.ctx_shift) {
                oxl_log(&o, OXL_LOG_INFO, "\n\noxillama: context full and context shift is disabled => stopping\n");
                n_gen++;
                break;
            }
            const int32_t n_past = oxl_ctx_n_past(ctx), n_left = n_past - n_keep, n_discard = n_left / 2;
            if (n_discard <= 0) {
                fprintf(stderr, "\nerror: context shift: --keep %d leaves nothing to discard (n_ctx %d)\n", o.n_keep,
                        n_ctx);
                goto done;
            }
            oxl_log(
                &o, OXL_LOG_VERBOSE,
                "\noxillama: context full, swapping: n_past = %d, n_left = %d, n_ctx = %d, n_keep = %d, n_discard = "
                "%d\n",
                n_past, n_left, n_ctx, n_keep, n_discard);
            if (oxl_seq_add(ctx, 0, n_keep + n_discard, -1, -n_discard, &err) != 0) {
                fprintf(stderr, "\nerror: context shift: %s\n", err.msg);
                goto done;
            }
            n_shift++;
        }
        if (oxl_decode(ctx, &next, 1, false, &err) != 0) {
            fprintf(stderr, "\nerror: %s\n", err.msg);
            goto done;
        }
    }
    /* bytes held back for an unfinished character are printed as they are, as llama.cpp would */
    int32_t tail = oxl_detok_flush(&detok, piece, (int32_t)sizeof piece);
    if (tail > 0) {
        fwrite(piece, 1, (size_t)tail, stdout);
    }
finished:;
    double t3 = oxl_clock_s();
    oxl_log(&o, OXL_LOG_INFO,
            "\noxillama: prompt %d tokens in %.1f ms (%.1f t/s); generated %d tokens in %.1f ms (%.1f t/s)\n",
            n_tok - n_reuse, (t2 - t1) * 1e3, (n_tok - n_reuse) / (t2 - t1), n_gen, (t3 - t2) * 1e3,
            n_gen > 0 ? n_gen / (t3 - t2) : 0.0);
    if (n_shift > 0) {
        oxl_log(&o, OXL_LOG_INFO, "oxillama: %d context shifts\n", n_shift);
    }
    if (o.log_level >= OXL_LOG_INFO) {
        oxl_print_peak_rss("oxillama");
    }
    status = 0;
done:
    for (int i = 0; i < o.n_images; i++) {
        oxl_image_free(images[i]);
    }
    oxl_mmproj_free(mm);
    free(toks);
    free(file_text);
    oxl_sampler_free(smpl);
    oxl_ctx_free(dctx);
    oxl_model_free(dmodel);
    oxl_ctx_free(ctx);
    oxl_opts_free_adapters(&o);
    oxl_model_free(model);
    return status;
}
