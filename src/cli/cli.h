/* The `oxillama <verb>` subcommands. Each takes the arguments after the verb (argv[0] = verb) and
 * returns the process exit status. Registered in the verb table of main.c. */
#ifndef OXL_CLI_H
#define OXL_CLI_H

#include "oxillama.h"

int oxl_cmd_run(int argc, char **argv);
int oxl_cmd_info(int argc, char **argv);
int oxl_cmd_golden(int argc, char **argv);
int oxl_cmd_perplexity(int argc, char **argv);
int oxl_cmd_tokenize(int argc, char **argv);
int oxl_cmd_serve(int argc, char **argv);
int oxl_cmd_quantize(int argc, char **argv);
int oxl_cmd_export_lora(int argc, char **argv);
int oxl_cmd_bench(int argc, char **argv);
int oxl_bench_batched(int argc, char **argv); /* bench --batched */
int oxl_cmd_imatrix(int argc, char **argv);
int oxl_cmd_version(int argc, char **argv);
int oxl_cmd_embed(int argc, char **argv);
int oxl_cmd_gguf_split(int argc, char **argv);

struct oxl_opts;
/* run -cnv: the interactive chat loop over a loaded model and context (src/cli/chat.c). With mm (may
 * be NULL), `/image PATH` adds an image to the next message, and the n images of run's --image
 * (o->n_images, still the caller's) go with the first message. */
int oxl_chat_loop(const oxl_model *m, oxl_ctx *ctx, oxl_sampler *smpl, const struct oxl_opts *o, const oxl_mmproj *mm,
                  oxl_image *const *images);
/* --verbose-prompt, as llama.cpp's completion tool prints it: on stderr, "prompt: '<text>'", the
 * number of tokens, then one line "<id, 6 wide> -> '<piece>'" per token and an empty line. */
void oxl_print_verbose_prompt(const oxl_model *m, const char *text, size_t len, const oxl_token *toks, int32_t n);
/* run's speculative decoding (src/cli/spec.c). oxl_spec_check validates --spec-type and the draft
 * options and tells whether n-gram and draft-model drafting are on (0, or -1 after a message). */
int oxl_spec_check(const struct oxl_opts *o, bool *ngram, bool *draft);
/* 0 when neither model keeps recurrent state, else -1 after the message "speculative decoding
 * needs a model whose cache can rewind: ARCH". */
int oxl_spec_can_rewind(const oxl_model *model, const oxl_model *dmodel);
/* Generates after the prompt (already decoded in ctx, its tokens accepted by smpl) as run's plain
 * loop does, drafting with n-grams and/or the draft model (dmodel / dctx, NULL for none); prints the
 * text on stdout and llama.cpp's n_drafted / n_accept / accept lines on stderr. Returns 0, or 1
 * after a message. */
int oxl_spec_generate(const struct oxl_opts *o, const oxl_model *model, oxl_ctx *ctx, oxl_sampler *smpl,
                      const oxl_model *dmodel, oxl_ctx *dctx, bool ngram, const oxl_token *prompt, int32_t n_prompt,
                      int *n_gen_out);

#endif
