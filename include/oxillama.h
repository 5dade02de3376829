/* oxillama — public C API.
 *
 * Conventions
 * - Every function that can fail takes an `oxl_error *err` (may be NULL) and reports failure by its
 *   return value (NULL, or a negative int); `err->msg` then names the file, field and value at fault.
 *   The library never calls exit() or abort() on input it is given.
 * - Tensor shapes are written in ggml order: ne0 is the contiguous dimension.
 * - Objects returned by `*_new` / `*_load` are owned by the caller and released by the matching `*_free`.
 *
 * Behaviour reproduced: llama.cpp (include/llama.h) for model loading, decoding, tokenization and
 * sampling, so that the same GGUF file gives the same tokens and logits.
 */
#ifndef OXILLAMA_H
#define OXILLAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* OXL_API marks the functions of this API: the library is built with hidden symbol visibility, so
 * liboxillama.so exports these and nothing else. */
#if defined(__GNUC__) || defined(__clang__)
#define OXL_API __attribute__((visibility("default")))
#else
#define OXL_API
#endif

#define OXL_ERROR_MSG_MAX 512

/* An error message; empty when no error happened. */
typedef struct oxl_error {
    char msg[OXL_ERROR_MSG_MAX];
} oxl_error;

typedef int32_t oxl_token;
typedef struct oxl_model oxl_model;
typedef struct oxl_ctx oxl_ctx;
typedef struct oxl_sampler oxl_sampler;

/* The library's version, "MAJOR.MINOR.PATCH" (the project's CMake version, as in oxillama.pc): a
 * static string owned by the library, never freed by the caller. */
OXL_API const char *oxl_version(void);

/* ---------------------------------------------------------------------------------------------
 * Log: the library's own messages (warnings such as a failed --mlock)
 * ------------------------------------------------------------------------------------------- */

/* Message levels, with the values of ggml's enum ggml_log_level (ggml.h). */
typedef enum oxl_log_level {
    OXL_LOG_LEVEL_DEBUG = 1,
    OXL_LOG_LEVEL_INFO = 2,
    OXL_LOG_LEVEL_WARN = 3,
    OXL_LOG_LEVEL_ERROR = 4,
} oxl_log_level;

/* Receives one whole message: text is NUL-terminated, ends with '\n', and is valid only during the
 * call (copy it to keep it). user is the pointer given to oxl_log_set. It may be called from any
 * thread that is inside the library, and must not call oxl_log_set itself. */
typedef void (*oxl_log_fn)(oxl_log_level level, const char *text, void *user);

/* Sends the library's messages to fn (with user) instead of stderr, as llama.cpp's llama_log_set;
 * fn NULL restores the default: the text written to stderr unchanged. Process-wide. The pair
 * (fn, user) is switched atomically, so a message never reaches fn with another call's user, but
 * set it before other threads use the library: a message being written while it changes may still
 * go to the previous receiver. */
OXL_API void oxl_log_set(oxl_log_fn fn, void *user);
/* Drops messages below min (default OXL_LOG_LEVEL_INFO: debug messages are dropped), for stderr
 * and for a callback alike; a min above OXL_LOG_LEVEL_ERROR drops every message. llama.cpp has no
 * such setting (its tools filter in their callback); process-wide, safe from any thread. */
OXL_API void oxl_log_set_level(oxl_log_level min);

/* ---------------------------------------------------------------------------------------------
 * Model
 * ------------------------------------------------------------------------------------------- */

typedef struct oxl_model_params {
    bool use_mmap;  /* map the file read-only and use tensor data in place (default true); false reads
                       the whole file into memory (llama.cpp's --no-mmap) */
    bool use_mlock; /* lock the model's pages in RAM (llama.cpp's --mlock); a failure (RLIMIT_MEMLOCK)
                       is a warning message (oxl_log_set; stderr by default) and loading goes on,
                       as llama.cpp does */
    bool repack;    /* rewrite Q4_0/Q8_0/IQ4_NL/IQ4_XS/Q4_K/Q5_K/Q6_K (AVX-512 VNNI) or Q4_0/Q4_K/Q6_K (AVX2) projection
                       weights into the CPU's interleaved layout
                       at load when it has one (default true; llama.cpp's --no-repack turns it off).
                       Results equal the plain layout's up to the order of float sums; with mmap the
                       plain pages of repacked tensors are released, so memory stays about the file's
                       size */
    /* Load progress, as llama_model_params.progress_callback (llama_model_loader::load_all_data):
     * called on the loading thread with non-decreasing values in [0, 1] (user: the field below).
     * With --no-mmap, the share of the file read before each of 64 reads (64 KiB at least); with
     * mmap, the share of the tensor bytes before each tensor, in file order (the pages are read
     * when first used: by repacking, or by the first decode). Then exactly one 1.0, the last
     * call, after repacking and --mlock; repacking reports nothing before it. Returning false
     * cancels the load: oxl_model_load frees all it allocated and mapped and returns NULL with
     * err "PATH: load cancelled by the progress callback" (false as the answer to 1.0 too).
     * NULL (the default): no calls. */
    bool (*progress_callback)(float progress, void *user);
    void *progress_callback_user_data; /* passed to progress_callback as user; not used otherwise */
    /* GPU offload through Vulkan (llama_model_params.n_gpu_layers, main_gpu): the last n_gpu_layers
     * repeating layers run on the device, their weights uploaded at load and their KV cache (f16)
     * kept there; more than the model's layers (or a negative value: all) also puts the output norm
     * and head there. Default 0: everything on the CPU. A build without Vulkan, no device, or a model
     * or feature the device path does not cover prints one line saying so (oxl_log_set) and loads
     * for the CPU. Families covered: those of arch/decoder.c's forward without recurrent, latent-
     * attention or expert layers (README "GPU offload (Vulkan)"). */
    int32_t n_gpu_layers;
    int32_t main_gpu; /* Vulkan device index (oxillama --list-devices); -1 (default): OXILLAMA_VK_DEVICE, else 0 */
} oxl_model_params;

OXL_API oxl_model_params oxl_model_default_params(void);

/* Loads a GGUF model: validates the file, the architecture (`general.architecture`, which must be in
 * the architecture registry), its hyper-parameters and tensors, and the vocabulary.
 * Returns NULL on any error, with err naming what is wrong. */
OXL_API oxl_model *oxl_model_load(const char *path, const oxl_model_params *params, oxl_error *err);
OXL_API void oxl_model_free(oxl_model *model);

OXL_API int32_t oxl_model_n_vocab(const oxl_model *model);
OXL_API int32_t oxl_model_n_ctx_train(const oxl_model *model);
OXL_API int32_t oxl_model_n_embd(const oxl_model *model);
OXL_API int32_t oxl_model_n_layer(const oxl_model *model); /* <arch>.block_count */
/* The repeating layers whose weights are on the Vulkan device (oxl_model_params.n_gpu_layers after
 * what the device path and the build cover; the last ones); 0 when the model runs on the CPU. */
OXL_API int32_t oxl_model_n_gpu_layers(const oxl_model *model);
/* false for an encoder-only embedding model (bert, nomic-bert: no output head, so no logits and no
 * text generation), as llama.cpp's llama_model_has_decoder; true for every generative model. */
OXL_API bool oxl_model_has_decoder(const oxl_model *model);
OXL_API uint64_t oxl_model_n_params(const oxl_model *model); /* elements of all tensors */
/* The model's Jinja chat template (tokenizer.chat_template), owned by the model; NULL when absent. */
OXL_API const char *oxl_model_chat_template(const oxl_model *model);
OXL_API uint64_t oxl_model_size(const oxl_model *model); /* bytes of all tensor data */
/* A one-line description: architecture, parameter count, file type. Owned by the model. */
OXL_API const char *oxl_model_desc(const oxl_model *model);
/* The model's GGUF metadata value of `key` (e.g. "tokenizer.ggml.fim_pre_token_id") as text, as
 * llama.cpp's llama_model_meta_val_str: strings as stored, integers in decimal, floats as printf's
 * "%f", bools as "true"/"false"; array values are not offered (llama.cpp skips them too). Writes at
 * most buf_size bytes, NUL included, into buf (the caller's; NULL allowed when buf_size is 0).
 * Returns the length of the whole text in bytes (snprintf's count: >= buf_size means it was cut),
 * or -1 when the model has no such non-array key (buf then holds ""). */
OXL_API int32_t oxl_model_meta_val_str(const oxl_model *model, const char *key, char *buf, size_t buf_size);
/* The number of the model's non-array GGUF metadata keys, the ones oxl_model_meta_val_str offers
 * (llama.cpp's llama_model_meta_count); indices 0..count-1 follow the keys' order in the file
 * (llama.cpp's order is that of a hash map: only the set of keys is the same). */
OXL_API int32_t oxl_model_meta_count(const oxl_model *model);
/* The name of metadata key i (0 <= i < oxl_model_meta_count), as llama.cpp's
 * llama_model_meta_key_by_index: written into buf as oxl_model_meta_val_str writes values
 * (snprintf's semantics: at most buf_size bytes, NUL included; returns the name's whole length),
 * or -1 for an i out of range (buf then holds ""). */
OXL_API int32_t oxl_model_meta_key_by_index(const oxl_model *model, int32_t i, char *buf, size_t buf_size);
/* The value of metadata key i as text, as oxl_model_meta_val_str gives it for that key
 * (llama.cpp's llama_model_meta_val_str_by_index); -1 for an i out of range (buf then holds ""). */
OXL_API int32_t oxl_model_meta_val_str_by_index(const oxl_model *model, int32_t i, char *buf, size_t buf_size);

/* ---------------------------------------------------------------------------------------------
 * Context: KV cache, threads, scratch buffers
 * ------------------------------------------------------------------------------------------- */

/* KV cache element types: the ggml type id (enum ggml_type) of a format that may hold the cache
 * (llama.cpp's -ctk/-ctv values; which formats may is the spec's kv_cache flag, gen/spec.py, and
 * oxl_ctx_new refuses the others). Quantized rows are written as ggml's set_rows does (the
 * format's quantize_row_*_ref) and need head_dim a multiple of the block size; a quantized V cache
 * needs flash attention, as in llama.cpp (bf16 is not quantized: it needs neither). */
typedef enum oxl_kv_type {
    OXL_KV_F32 = 0,     /* GGML_TYPE_F32 */
    OXL_KV_F16 = 1,     /* GGML_TYPE_F16 */
    OXL_KV_Q4_0 = 2,    /* GGML_TYPE_Q4_0 */
    OXL_KV_Q4_1 = 3,    /* GGML_TYPE_Q4_1 */
    OXL_KV_Q5_0 = 6,    /* GGML_TYPE_Q5_0 */
    OXL_KV_Q5_1 = 7,    /* GGML_TYPE_Q5_1 */
    OXL_KV_Q8_0 = 8,    /* GGML_TYPE_Q8_0 */
    OXL_KV_IQ4_NL = 20, /* GGML_TYPE_IQ4_NL */
    OXL_KV_BF16 = 30,   /* GGML_TYPE_BF16 */
} oxl_kv_type;

/* Attention evaluation, as llama.cpp's -fa: flash attention (one fused pass with an online softmax,
 * ggml_flash_attn_ext; with an f16 V cache the weighted sum accumulates in f16) or the unfused
 * softmax(K·q)·V of separate ops. The two round differently; llama.cpp's defaults use flash. */
typedef enum oxl_flash_attn {
    OXL_FLASH_ATTN_AUTO = -1,
    OXL_FLASH_ATTN_OFF = 0,
    OXL_FLASH_ATTN_ON = 1,
} oxl_flash_attn;

/* How the final-norm outputs of a sequence's tokens become one embedding (llama.cpp's
 * llama_pooling_type, same numbering). */
typedef enum oxl_pooling {
    OXL_POOLING_UNSPECIFIED = -1, /* the model's `<arch>.pooling_type`; none when the file has no such key */
    OXL_POOLING_NONE = 0,         /* no pooling: one embedding per token (oxl_get_embeddings_ith) */
    OXL_POOLING_MEAN = 1,         /* the mean over the sequence's tokens */
    OXL_POOLING_CLS = 2,          /* the sequence's token at its lowest position */
    OXL_POOLING_LAST = 3,         /* the sequence's token at its highest position */
    OXL_POOLING_RANK = 4,         /* a reranker's classifier head over the sequence's first token:
                                     oxl_model_n_cls_out scores per sequence (bert with cls tensors) */
} oxl_pooling;

typedef struct oxl_ctx_params {
    int32_t n_ctx;      /* KV cache length in tokens, shared equally by the sequences;
                           0 = the model's training context per sequence */
    int32_t n_batch;    /* most tokens per internal forward pass (default 512) */
    int32_t n_seq_max;  /* sequences with their own KV cache (default 1; a server's slots) */
    int32_t n_threads;  /* worker threads including the caller; 0 = number of physical cores */
    oxl_kv_type type_k; /* default f16, as llama.cpp */
    oxl_kv_type type_v;
    oxl_flash_attn flash_attn; /* default auto (= on, as llama.cpp's CPU backend) */
    bool embeddings;           /* keep the final-norm output of every token of a decode (default false) */
    oxl_pooling pooling;       /* with embeddings: how they are pooled (default unspecified = the model's) */
    /* Each sequence of a pass is its own attention stream, as in llama.cpp's non-unified KV cache
     * (its default with several sequences, e.g. llama-imatrix): ggml's flash attention then picks
     * its kernel from the tokens per sequence rather than per pass. Default false: one stream. */
    bool seq_streams;
} oxl_ctx_params;

OXL_API oxl_ctx_params oxl_ctx_default_params(void);

OXL_API oxl_ctx *oxl_ctx_new(const oxl_model *model, const oxl_ctx_params *params, oxl_error *err);
OXL_API void oxl_ctx_free(oxl_ctx *ctx);
/* With on, ctx's later decodes give every position of a batch the logits decoding it alone (with
 * the same cache before it) gives, to the bit, wherever the weights' kernels can: repacked Q4_0 and
 * Q8_0 on AVX-512 VNNI sum batches of up to 32 tokens column by column in the one-token order anyway
 * and now run larger ones in chunks of 32 instead of register tiles; the file's own layouts are
 * exact for any batch; the tiled f32/f16/bf16 products of batches (llamafile's order, as ggml) and
 * the K-quants' repacked tiles are not changed. Speculative decoding turns it on for its
 * verification batches, so that a draft of any length is scored as decoding token by token
 * scores it. Costs compute on batches of more than 32 tokens. Default off. */
OXL_API void oxl_ctx_set_exact_batch(oxl_ctx *ctx, bool on);
/* Runs ctx's work on the worker threads of other from now on, as a draft model's context beside
 * its target's in speculative decoding: two pools whose idle workers spin for a while after each
 * task would otherwise take cores from each other's next task (ggml's CPU backend, built with
 * OpenMP as by default, runs every context's graphs on the process's one OpenMP team). Both contexts must have the same
 * thread count and must not decode at the same time (one thread drives both); either may be freed first. Returns 0, or
 * -1 with err when ctx or other is NULL, they are the same or their thread counts differ. */
OXL_API int oxl_ctx_share_threads(oxl_ctx *ctx, oxl_ctx *other, oxl_error *err);
/* KV cache length of one sequence, in tokens. */
OXL_API int32_t oxl_ctx_n_ctx(const oxl_ctx *ctx);
OXL_API int32_t oxl_ctx_n_seq_max(const oxl_ctx *ctx);
/* Number of tokens sequence seq holds in the KV cache (the position of its next token). */
OXL_API int32_t oxl_seq_n_past(const oxl_ctx *ctx, int32_t seq);
/* Drops sequence seq's cached positions >= n_past (0 clears it): prefix reuse keeps the rest.
 * Recurrent models (mamba, mamba2, jamba) keep one state per sequence that cannot step back: only
 * n_past 0 is applied; any other value leaves the sequence unchanged (check oxl_seq_n_past). */
OXL_API void oxl_seq_truncate(oxl_ctx *ctx, int32_t seq, int32_t n_past);

/* Position shift of a sequence's cache, the context shift of llama.cpp's llama-server and
 * llama-completion (tools/server/server-context.cpp, tools/completion/completion.cpp):
 * llama_memory_seq_rm(mem, seq, p0 + delta, p0) then llama_memory_seq_add(mem, seq, p0, p1, delta),
 * with the K shift that llama_kv_cache applies at the next decode (build_graph_shift /
 * build_rope_shift, src/llama-kv-cache.cpp) done at once.
 *
 * Positions are token positions within sequence seq. The cache holds each sequence's positions
 * 0 .. n_past-1 without gaps, so the shift moves the tail: p1 must be oxl_seq_n_past(ctx, seq)
 * (or -1, meaning it, as llama.cpp's p1 < 0), delta <= 0 and p0 + delta >= 0, 0 <= p0 <= p1.
 * Positions [p0 + delta, p0) are dropped, positions [p0, p1) become [p0 + delta, p1 + delta) and
 * n_past becomes p1 + delta; positions below p0 + delta are untouched. For every layer with a
 * cache of its own, each moved K row (n_head_kv heads of head_dim elements) is re-rotated by the
 * layer's RoPE at position delta (ggml_rope_ext with the shift as the position: same mode, n_rot,
 * base and scale per layer, sliding-window layers' own base, frequency factors, YaRN parameters;
 * M-RoPE is never shifted); a quantized K row is dequantized, its Hadamard rotation undone, rotated,
 * the Hadamard rotation applied again and quantized back, as build_rope_shift does. V rows and the
 * K rows of layers without RoPE (NoPE layers, ALiBi, learned positions) are moved unchanged. With
 * standard RoPE, rotating the row cached at p by delta gives, up to float rounding, the row the
 * model computes for the same key input at p + delta (the angles are linear in the position; YaRN's
 * magnitude scale is applied once more, as in llama.cpp).
 *
 * Returns 0, or -1 with err set and the sequence unchanged: an invalid seq or range (named with its
 * values), delta > 0 (it would leave empty positions), or a context that cannot shift (the reasons
 * of oxl_ctx_can_shift). */
OXL_API int oxl_seq_add(oxl_ctx *ctx, int32_t seq, int32_t p0, int32_t p1, int32_t delta, oxl_error *err);
/* Whether oxl_seq_add may shift this context's sequences (llama_memory_can_shift): returns 0, or
 * -1 with err naming why not: recurrent or hybrid state (mamba, jamba, qwen35, lfm2, ... : one
 * state per sequence that cannot be re-positioned, llama_memory_recurrent::get_can_shift),
 * M-RoPE (qwen2vl: llama_kv_cache::get_can_shift refuses n_pos_per_embd > 1), latent attention
 * (deepseek2: not implemented here), or an architecture whose cache layout has no shift here
 * (bert, nomic-bert, gemma3n). */
OXL_API int oxl_ctx_can_shift(const oxl_ctx *ctx, oxl_error *err);

/* A batch of tokens from one or more sequences (llama.cpp's llama_batch): token i goes to sequence
 * seq_id[i] at position pos[i], which must be that sequence's next position (tokens of a sequence
 * appear in order). logits[i] != 0 keeps token i's logits. The arrays are the caller's.
 *
 * The input is either token ids (token) or embeddings (embd: (n_embd, n_tokens) floats, ne0
 * contiguous, column i the input of token i; llama_batch.embd), never both. Embeddings are used as
 * they are, as llama.cpp's build_inp_embd (src/llama-graph.cpp) uses llama_batch.embd: no token row
 * is fetched and no LoRA of the token embedding applies; the families that scale token rows by
 * sqrt(n_embd) (gemma, gemma3) leave embeddings unscaled, as their graphs scale by
 * ubatch.token ? sqrt(n_embd) : 1, while a scale that llama.cpp applies in build_inp_embd itself
 * (granite's embedding_scale, grok's) and gemma2's unconditional one apply to both. A model with
 * M-RoPE gives the embeddings of a plain batch text positions (p, p, p, 0): images go through
 * oxl_decode_image_embd, which gives them their 2D positions. bert, nomic-bert and gemma3n take
 * token ids only (an error names the architecture). */
typedef struct oxl_batch {
    int32_t n_tokens;
    const oxl_token *token;
    const int32_t *pos;
    const int32_t *seq_id;
    const int8_t *logits;
    const float *embd;
} oxl_batch;

/* Evaluates a batch in passes of at most n_batch tokens (one set of matrix products per pass for
 * all sequences together) and appends every token to its sequence's KV cache. Fails, before any
 * work, when a token id, sequence id or position is invalid or a sequence would overflow.
 * Returns 0, or -1 with err set. */
OXL_API int oxl_decode_batch(oxl_ctx *ctx, const oxl_batch *batch, oxl_error *err);
/* Logits (n_vocab floats) of token i of the last decode, when kept; i = -1 means the last kept
 * token. Owned by ctx, valid until the next decode; NULL when not kept. */
OXL_API const float *oxl_get_logits(const oxl_ctx *ctx, int32_t i);

/* Embeddings (contexts created with params.embeddings; llama.cpp's llama_get_embeddings_ith / _seq,
 * src/llama-context.cpp, pooled as src/llama-graph.cpp's build_pooling). A token's embedding is the
 * output of the model's final norm (the input of the output head: llama.cpp's result_norm), n_embd
 * floats, not normalised. Every token of a decode gets one, whatever its logits flag; pooling is
 * over all the tokens a sequence has in the last oxl_decode_batch call (llama.cpp pools within one
 * micro-batch: the same when the sequence fits in n_batch). The arrays are owned by ctx and valid
 * until the next decode. */
/* The pooling in effect (never unspecified); NONE also when the context has no embeddings. */
OXL_API oxl_pooling oxl_ctx_pooling(const oxl_ctx *ctx);
/* Pooling none: token i of the last decode (i = -1: its last token). NULL when out of range, the
 * context keeps no embeddings, or it pools. */
OXL_API const float *oxl_get_embeddings_ith(const oxl_ctx *ctx, int32_t i);
/* Pooling mean, cls or last: the embedding of sequence seq over its tokens in the last decode;
 * rank: its oxl_model_n_cls_out scores. NULL when seq had no token in it, the context keeps no
 * embeddings, or its pooling is none. */
OXL_API const float *oxl_get_embeddings_seq(const oxl_ctx *ctx, int32_t seq);
/* Scores of rank pooling per sequence (llama.cpp's llama_model_n_cls_out): the length of
 * `<arch>.classifier.output_labels`, 1 when the file has none. */
OXL_API int32_t oxl_model_n_cls_out(const oxl_model *model);
/* Label i of `<arch>.classifier.output_labels` into buf (NUL-terminated, cut to buf_size); returns
 * its length, or -1 when there is no such label (llama_model_cls_label's NULL). */
OXL_API int32_t oxl_model_cls_label(const oxl_model *model, int32_t i, char *buf, size_t buf_size);

/* Decodes an image's n_tokens embeddings (embd: (n_embd, n_tokens) floats, ne0 contiguous, the
 * caller's; column j is the j-th token of the image in raster order: row j / grid_x, column
 * j % grid_x of its grid_x x grid_y grid) at sequence seq's next n_tokens cache rows, in passes of
 * at most n_batch tokens, keeping every token's logits (all_logits) or the last one's, as llama.cpp's
 * mtmd_helper_decode_image_chunk (tools/mtmd/mtmd-helper.cpp) decodes an image chunk with
 * llama_batch.embd (the embeddings as oxl_batch.embd uses them).
 *
 * Positions: the cache rows are the sequence's next ones (oxl_seq_n_past grows by n_tokens). A model
 * with M-RoPE (qwen2vl, qwen35, glm4 with rope.dimension_sections) rotates token j at
 * (t, h, w, extra) = (p0, p0 + j / grid_x, p0 + j % grid_x, 0), p0 = oxl_seq_pos_next(ctx, seq),
 * and the sequence's next rope position becomes p0 + max(grid_x, grid_y): mtmd's
 * mtmd_image_tokens_get_decoder_pos and image chunk n_pos (tools/mtmd/mtmd.cpp); text decoded after
 * it is rotated at (p, p, p, 0) with p = its row minus the rows the images took beyond their
 * positions, llama.cpp's positions for the text that follows. There n_tokens must equal
 * grid_x * grid_y. Other models rotate each token at its row and ignore the grid. The causal mask
 * follows the rows; llama.cpp orders an image's cache cells by (t, then (h, w)) (llama_kv_cells'
 * 2D ext positions, is_2d_gt), which is the same order for an image decoded in raster order.
 * gemma3 decodes images with causal attention off, as mtmd does for Gemma 3's projector
 * (mtmd_decode_use_non_causal, llama_set_causal_attn(false); llama_kv_cache::set_input_kq_mask):
 * each image token sees every row of its sequence up to the last image token of its pass (n_batch),
 * its sliding-window layers still dropping keys n_swa or more positions back; text stays causal.
 *
 * The context keeps, for each sequence, where its images ended and by how much its rope positions
 * then lag its rows. oxl_seq_truncate to a row drops the images that end after it: truncating into
 * the middle of an image leaves its kept rows as they were and the text after them positioned as
 * if the image had not been there (its rows count as text rows); oxl_seq_add refuses M-RoPE
 * models; oxl_state_seq_save refuses a sequence whose positions lag its rows (an M-RoPE sequence
 * holding an image), and a loaded state has no image. Returns 0, or -1 with err set and nothing
 * decoded: bad seq, n_tokens <= 0, embd NULL, grid_x or grid_y <= 0 or n_tokens != grid_x * grid_y
 * on an M-RoPE model, a sequence without room for n_tokens more rows (n_ctx), an architecture that
 * takes token ids only, no memory. */
OXL_API int oxl_decode_image_embd(oxl_ctx *ctx, int32_t seq, const float *embd, int32_t n_tokens, int32_t grid_x,
                                  int32_t grid_y, bool all_logits, oxl_error *err);
/* The rope position of sequence seq's next token: oxl_seq_n_past minus the rows its images took
 * beyond their positions (M-RoPE models; llama.cpp's n_past as mtmd_helper_eval_chunks advances it
 * by each chunk's n_pos); oxl_seq_n_past for other models. 0 for an invalid seq. */
OXL_API int32_t oxl_seq_pos_next(const oxl_ctx *ctx, int32_t seq);

/* Sequence 0 helpers for single-stream use. oxl_decode evaluates n tokens at positions
 * n_past .. n_past+n-1 keeping every token's logits (all_logits) or the last one's. */
OXL_API int oxl_decode(oxl_ctx *ctx, const oxl_token *tokens, int32_t n, bool all_logits, oxl_error *err);
OXL_API int32_t oxl_ctx_n_past(const oxl_ctx *ctx);
OXL_API void oxl_ctx_truncate(oxl_ctx *ctx, int32_t n_past);

/* ---------------------------------------------------------------------------------------------
 * Adapters (matches llama.cpp src/llama-adapter.cpp): LoRA and control vectors, applied at run time
 * ------------------------------------------------------------------------------------------- */

typedef struct oxl_lora oxl_lora;

/* Loads a LoRA adapter for model from a GGUF file as llama.cpp writes them (convert_lora_to_gguf.py):
 * general.type "adapter", adapter.type "lora", general.architecture the model's, adapter.lora.alpha
 * (f32; absent = 0), and for each adapted matrix W of the model a pair of 2-D tensors
 * "<W's name>.lora_a" (ne = [W.ne0, rank]) and "<W's name>.lora_b" (ne = [rank, W.ne1]) of any type
 * oxillama computes with (f32, f16, q8_0, ...); tensors ending in "_norm.weight" are skipped, as
 * llama.cpp does. Refused with err naming the key or tensor: another general.type, adapter.type or
 * architecture, a tensor with another suffix, a pair missing one part, a matrix the model lacks, a
 * shape that does not match it, and what oxillama does not apply yet: the token embedding, 3-D
 * (expert) matrices, activated LoRA (adapter.alora.invocation_tokens). The adapter keeps its file
 * mapped; it must outlive every context it is set on, and the model must outlive it. */
OXL_API oxl_lora *oxl_lora_load(const oxl_model *model, const char *path, oxl_error *err);
OXL_API void oxl_lora_free(oxl_lora *lora);
OXL_API float oxl_lora_alpha(const oxl_lora *lora);     /* adapter.lora.alpha */
OXL_API int32_t oxl_lora_n_pairs(const oxl_lora *lora); /* the matrices it adapts */

/* Sets the adapters of ctx's next decodes (replacing those set before; n = 0 clears them), as
 * llama.cpp's llama_set_adapters_lora: every product y = W x of an adapted matrix becomes
 * y = W x + s * B (A x) for each adapter in order, with s = scale * alpha / rank when the adapter's
 * alpha is not 0, else scale (llama_adapter_lora_weight::get_scale), the products computed as those
 * of the model's weights. loras[i] must have been loaded for ctx's model. Returns 0, or -1 with err
 * set (another model's adapter, out of memory: the context keeps its adapters). */
OXL_API int oxl_ctx_set_loras(oxl_ctx *ctx, oxl_lora *const *loras, const float *scales, int32_t n, oxl_error *err);

/* Reads control vectors as llama.cpp's common_control_vector_load: each file holds 1-D f32 tensors
 * "direction.N" (N >= 1, all of one length n_embd), added to layer N's output; each is multiplied by
 * its file's strength and the files are summed. On success *data (layer 1's direction first, then
 * layer 2's, ...; missing layers zero) holds *len floats, released with oxl_control_vector_free.
 * Returns 0, or -1 with err naming the file and tensor (no direction tensor, a bad name or index 0,
 * another type, shape or length, files of different lengths). */
OXL_API int oxl_control_vector_load(const char *const *paths, const float *strengths, int32_t n, float **data,
                                    size_t *len, int32_t *n_embd, oxl_error *err);
OXL_API void oxl_control_vector_free(float *data);

/* Sets ctx's control vector as llama.cpp's llama_set_adapter_cvec: the output of each layer il with
 * il_start <= il <= il_end (0-based; layer 0 never has one) gets data[(il - 1) * n_embd ...] added,
 * for the layers data covers. data NULL clears it. The values are copied. The families built on the
 * shared decoder (arch/decoder.c) apply it; bert and nomic-bert do not (neither does llama.cpp's
 * graph); qwen35, qwen35moe, qwen3next, gemma3n, lfm2, granitehybrid, nemotron_h and falcon-h1
 * refuse it. Returns 0, or -1 with err set (an architecture
 * that refuses it, n_embd not the model's, out of memory). */
OXL_API int oxl_ctx_set_control_vector(oxl_ctx *ctx, const float *data, size_t len, int32_t n_embd, int32_t il_start,
                                       int32_t il_end, oxl_error *err);

/* ---------------------------------------------------------------------------------------------
 * Speculative decoding (llama.cpp common/speculative.cpp). A draft (a smaller model, or n-grams of
 * the text so far) proposes tokens; the target evaluates the last token and the proposals in one
 * oxl_decode with all_logits, samples at each position in turn and keeps the proposals up to the
 * first one its sampler does not pick (llama.cpp's common_sampler_sample_and_accept_n); then
 * oxl_ctx_truncate drops the rejected positions. Output and sampler draws are those of decoding
 * one token at a time. oxillama run's -md / --spec-type (src/cli/spec.c) and the server's slots
 * (oxillama serve -md / --spec-type) are such loops.
 * ------------------------------------------------------------------------------------------- */

/* Whether draft may propose tokens for target, by llama.cpp's common_speculative_are_compatible:
 * the same vocabulary type, the same add-BOS / add-EOS flags and (when added) BOS / EOS ids, token
 * counts differing by at most 128, and the same text for every token id from 5 below the smaller
 * count. Returns 0, or -1 with err "draft model incompatible: ..." naming the first difference. */
OXL_API int oxl_model_draft_compatible(const oxl_model *target, const oxl_model *draft, oxl_error *err);
/* true for a model with recurrent state (mamba, jamba, delta-net and other recurrent or hybrid
 * families: llama_model_is_recurrent || llama_model_is_hybrid): oxl_seq_truncate cannot drop part
 * of its sequences, so rejected draft tokens cannot be undone. */
OXL_API bool oxl_model_is_recurrent(const oxl_model *model);
/* Draft-free drafting (llama.cpp's ngram-simple, common_ngram_simple_draft): the n-gram made of the
 * last size_n - 1 tokens of hist[0..n_hist) followed by last (the token sampled but not yet in
 * hist) is searched backwards in hist (not at position 0, not overlapping its end); the up to
 * size_m tokens that followed its latest earlier occurrence are the draft. No draft (0) when hist
 * holds size_n + size_m + 1 tokens or fewer, nothing matches, or fewer than size_n tokens follow
 * the match. Writes at most cap tokens to out; returns their number. */
OXL_API int32_t oxl_ngram_draft(const oxl_token *hist, int32_t n_hist, oxl_token last, int32_t size_n, int32_t size_m,
                                oxl_token *out, int32_t cap);
/* Draft-model drafting (llama.cpp's draft-simple: common_speculative_gen_draft with its greedy top-k
 * 10 sampler) in sequence seq of dctx, a context of the draft model. held (the caller's, at least
 * oxl_ctx_n_ctx(dctx) + 1 tokens, zero-initialised or left as the last call left it) mirrors the
 * tokens seq holds: the call keeps the prefix of seq that equals hist, drops the rest, evaluates
 * the remaining tokens of hist[0..n_hist) and last (the token sampled but not yet in the target's
 * cache), then takes the draft model's best token while its probability among the top 10 (a
 * softmax at temperature 1) is at least p_min, each taken token decoded to draft the next, until
 * cap tokens or the end of dctx's sequence length. Fewer than n_min tokens count as no draft.
 * Writes the draft to out (cap entries) and returns its length (0 when cap <= 0 or hist fills
 * dctx's sequence), or -1 with err set (bad arguments, a failed decode of the draft model). */
OXL_API int32_t oxl_draft_propose(oxl_ctx *dctx, int32_t seq, oxl_token *held, const oxl_token *hist, int32_t n_hist,
                                  oxl_token last, float p_min, int32_t n_min, int32_t cap, oxl_token *out,
                                  oxl_error *err);

/* ---------------------------------------------------------------------------------------------
 * Sequence state: save one sequence and restore it later, in this context or another one
 * (llama.cpp's llama_state_seq_save_file / llama_state_seq_load_file)
 * ------------------------------------------------------------------------------------------- */

/* The state of sequence seq is what continuing it needs: its KV cache rows of every layer in the
 * cache's element types as stored (f32, f16, q8_0, ...: no conversion), the conv and scan state of
 * recurrent layers (mamba, mamba2, jamba and the other recurrent or hybrid families), its token ids
 * and n_past (their count). A restored sequence continues bit for bit as if it had never been saved.
 * The format (docs/state-format.md) is a 128-byte header — magic "OXLSTATE", version 1, the model's
 * identity (architecture, n_vocab, n_embd, n_layer, cache row and recurrent state sizes, an FNV-1a-64
 * hash of the hyper-parameters and tensor table), the cache types, the token count, the payload's
 * size and FNV-1a-64 checksum — then the token ids and the memory. It does not depend on flash
 * attention, the thread count or n_batch, but it does on the model and the cache types.
 *
 * tokens: the n_tokens token ids the sequence holds (the caller's, read only); n_tokens must equal
 * oxl_seq_n_past(ctx, seq) (tokens may be NULL when it is 0). */

/* Bytes of the state of sequence seq as it is now (header included); 0 for an invalid seq. */
OXL_API size_t oxl_state_seq_size(const oxl_ctx *ctx, int32_t seq);
/* Writes the state of seq into buf (the caller's, size bytes: at least oxl_state_seq_size).
 * Returns the bytes written, or -1 with err set (bad seq, token count not n_past, a token outside
 * the vocabulary, buffer too small, a sequence of an M-RoPE model holding an image, whose rope
 * positions lag its rows: oxl_decode_image_embd). ctx is not changed. */
OXL_API int64_t oxl_state_seq_save_buf(const oxl_ctx *ctx, int32_t seq, const oxl_token *tokens, int32_t n_tokens,
                                       void *buf, size_t size, oxl_error *err);
/* Writes the state of seq to the file at path (through path".tmp", renamed over path, so a reader
 * never sees a partial file). Returns 0, or -1 with err set (the buf variant's errors, I/O errors). */
OXL_API int oxl_state_seq_save(const oxl_ctx *ctx, int32_t seq, const oxl_token *tokens, int32_t n_tokens,
                               const char *path, oxl_error *err);
/* Replaces sequence seq of ctx with a saved state (from another context too, of the same model and
 * cache types), writing its token ids into tokens_out (the caller's, cap entries). Returns the
 * number of tokens, which is then oxl_seq_n_past(ctx, seq), or -1 with err naming the field and
 * its values: magic, version, header_size, header checksum, architecture, n_vocab, n_embd,
 * n_layer, kv_dim, n_embd_r, n_embd_s, model_hash (another model), type_k / type_v (another cache
 * type), n_tokens (larger than the context's n_ctx per sequence), payload_size, truncated input,
 * trailing bytes, payload checksum, a token outside the vocabulary, cap too small. Everything is
 * checked before the sequence is touched: on error it is unchanged. Allocates at most the payload
 * size the header declares after that size was checked against the context (file variant only). */
OXL_API int32_t oxl_state_seq_load_buf(oxl_ctx *ctx, int32_t seq, const void *buf, size_t size, oxl_token *tokens_out,
                                       int32_t cap, oxl_error *err);
OXL_API int32_t oxl_state_seq_load(oxl_ctx *ctx, int32_t seq, const char *path, oxl_token *tokens_out, int32_t cap,
                                   oxl_error *err);

/* ---------------------------------------------------------------------------------------------
 * Tokenizer (matches llama.cpp src/llama-vocab.cpp)
 * ------------------------------------------------------------------------------------------- */

/* Tokenizes len bytes of UTF-8 text. add_special adds BOS/EOS as the vocabulary asks
 * (tokenizer.ggml.add_bos_token / add_eos_token); parse_special turns the text of control and
 * user-defined tokens into those tokens. Returns the number of tokens written, or, when cap is too
 * small, minus the number needed (llama.cpp's convention); INT32_MIN on invalid arguments. */
OXL_API int32_t oxl_tokenize(const oxl_model *model, const char *text, size_t len, oxl_token *out, int32_t cap,
                             bool add_special, bool parse_special);
/* Writes the bytes of one token (not NUL-terminated). special: render control tokens' text.
 * Returns bytes written, or minus the number needed when cap is too small. */
OXL_API int32_t oxl_token_to_piece(const oxl_model *model, oxl_token tok, char *buf, int32_t cap, bool special);
OXL_API oxl_token oxl_token_bos(const oxl_model *model); /* -1 if the vocabulary has none */
OXL_API oxl_token oxl_token_eos(const oxl_model *model);
OXL_API oxl_token oxl_token_sep(const oxl_model *model); /* -1 if the vocabulary has none */
/* Fill-in-the-middle tokens (llama_vocab_fim_pre/_suf/_mid/_pad/_rep/_sep: the tokenizer.ggml.fim_*
 * keys, else found by their text as llama.cpp finds them); -1 if the vocabulary has none. */
typedef enum oxl_fim_token {
    OXL_FIM_PRE,
    OXL_FIM_SUF,
    OXL_FIM_MID,
    OXL_FIM_PAD,
    OXL_FIM_REP,
    OXL_FIM_SEP
} oxl_fim_token;
OXL_API oxl_token oxl_token_fim(const oxl_model *model, oxl_fim_token which);
/* Whether tokenizing with add_special adds BOS, EOS, SEP (llama_vocab_get_add_bos / _eos / _sep). */
OXL_API bool oxl_vocab_add_bos(const oxl_model *model);
OXL_API bool oxl_vocab_add_eos(const oxl_model *model);
OXL_API bool oxl_vocab_add_sep(const oxl_model *model);
OXL_API bool oxl_token_is_eog(const oxl_model *model, oxl_token tok); /* end of generation (EOS, EOT, …) */

/* Streaming detokenizer: holds back an incomplete UTF-8 sequence so that output never splits a
 * character. Zero-initialise, then push tokens; each push writes only complete characters. */
typedef struct oxl_detok {
    char pending[8];
    int32_t n_pending;
} oxl_detok;
/* Appends the text of tok to out (cap bytes); returns bytes written or a negative size needed. */
OXL_API int32_t oxl_detok_push(oxl_detok *d, const oxl_model *model, oxl_token tok, char *out, int32_t cap);
/* At the end of a stream: writes the bytes d still holds back (an unfinished UTF-8 sequence, passed
 * through as llama.cpp's output would) and clears d. Returns bytes written or a negative size needed. */
OXL_API int32_t oxl_detok_flush(oxl_detok *d, char *out, int32_t cap);

/* ---------------------------------------------------------------------------------------------
 * Sampling (matches llama.cpp src/llama-sampler.cpp and common/sampling.cpp's chain: by default
 * penalties → DRY → top-n-σ → top-k → typical → top-p → min-p → XTC → temperature → dist; with mirostat,
 * temperature → mirostat). Each step is off at its neutral value.
 * ------------------------------------------------------------------------------------------- */

typedef struct oxl_sampler_params {
    float temp;    /* <= 0: greedy (the first largest logit left after the steps before it) */
    int32_t top_k; /* <= 0: off */
    float top_p;   /* >= 1: off */
    float min_p;   /* <= 0: off */
    uint32_t seed; /* OXL_SEED_RANDOM draws one from the clock */
    /* repetition penalties over the last penalty_last_n tokens passed to oxl_sampler_accept (prompt
     * and output, as llama.cpp): a token seen c > 0 times has its logit divided by penalty_repeat
     * (multiplied when <= 0), then c·penalty_freq + penalty_present subtracted. Off when
     * penalty_last_n is 0 or repeat 1, freq 0 and present 0. penalty_last_n: 0 .. 65536. */
    int32_t penalty_last_n;  /* default 64 */
    float penalty_repeat;    /* default 1 */
    float penalty_freq;      /* default 0 */
    float penalty_present;   /* default 0 */
    float typ_p;             /* locally typical sampling; >= 1: off (default 1) */
    float top_n_sigma;       /* keeps logits >= max - n·σ; <= 0: off (default -1) */
    float xtc_probability;   /* XTC's chance per token; <= 0: off (default 0) */
    float xtc_threshold;     /* XTC's probability threshold; > 0.5: off (default 0.1) */
    float dynatemp_range;    /* dynamic temperature temp ± range by entropy; <= 0: off (default 0) */
    float dynatemp_exponent; /* default 1 */
    int32_t mirostat;        /* 0: off, 1: mirostat, 2: mirostat 2.0 (replaces the chain but temperature) */
    float mirostat_tau;      /* target surprise (default 5) */
    float mirostat_eta;      /* learning rate (default 0.1) */
    /* DRY: a token that would extend a repeat of length L >= dry_allowed_length within the last
     * dry_penalty_last_n accepted tokens loses dry_multiplier·dry_base^(L - dry_allowed_length);
     * sequence breakers (oxl_sampler_dry_breakers) cut the repeats. Off when the multiplier is 0,
     * the base < 1 or dry_penalty_last_n 0. dry_penalty_last_n: 0 .. 65536. */
    float dry_multiplier;       /* default 0 */
    float dry_base;             /* default 1.75 */
    int32_t dry_allowed_length; /* default 2 */
    int32_t dry_penalty_last_n; /* default 64 */
    /* the chain's order in llama.cpp's letters (--sampling-seq): e penalties, s top-n-σ, k top-k,
     * y typical, p top-p, m min-p, x XTC, t temperature, d DRY (a letter given twice runs twice),
     * and this project's A top-a, H η-sampling (upper case: llama.cpp's 'a' is its adaptive-p);
     * dist draws after them; "" = the default "edskypmxt"; the default order ("" or "edskypmxt")
     * becomes "edskypAHmxt" when top_a or eta is on */
    char samplers[16];
    /* extensions llama.cpp lacks (off by default; off: the same draws as llama.cpp):
     * top-a keeps the candidates with p >= top_a * p_max^2 (BlinkDL's top-a; <= 0: off);
     * η-sampling keeps those with p >= min(eta, sqrt(eta) * exp(-H)), H the entropy of the
     * candidates' distribution in nats (Hewitt et al. 2022, "Truncation Sampling as Language Model
     * Desmoothing"; <= 0: off). Both keep at least the most probable candidate. */
    float top_a;
    float eta;
} oxl_sampler_params;

#define OXL_SEED_RANDOM 0xFFFFFFFFu

/* llama.cpp's defaults: temp 0.8, top_k 40, top_p 0.95, min_p 0.05, random seed, the other steps
 * off, penalty_last_n 64, xtc_threshold 0.1, dynatemp_exponent 1, mirostat tau 5 / eta 0.1, DRY
 * base 1.75, allowed length 2, last n 64, samplers "edskypmxt"; top_a and eta off. */
OXL_API oxl_sampler_params oxl_sampler_default_params(void);
/* NULL when params is NULL or invalid (samplers with another letter or unterminated, mirostat not
 * 0..2, penalty_last_n or dry_penalty_last_n out of range) or memory runs out. */
OXL_API oxl_sampler *oxl_sampler_new(const oxl_sampler_params *params);
OXL_API void oxl_sampler_free(oxl_sampler *s);
/* Records a token of the context for the penalties (llama_sampler_accept): call it for each prompt
 * token (BOS included) and for each token sampled and kept; oxl_sampler_sample does not. With a
 * grammar (oxl_sampler_set_grammar), a call with the token the last oxl_sampler_sample returned
 * (an output token) also advances the grammar by it; any other token (the prompt, a user's input)
 * leaves the grammar where it is, as llama.cpp's common_sampler_accept(…, accept_grammar = false). */
OXL_API void oxl_sampler_accept(oxl_sampler *s, oxl_token tok);
/* DRY's sequence breakers (llama_sampler_init_dry): each non-empty string (first 40 bytes) is
 * matched against model's token texts; a token containing it breaks by itself, a token ending with
 * a beginning of it breaks when followed by the tokens of the rest. Replaces earlier breakers; none
 * set: no breakers (oxillama run sets llama.cpp's "\n", ":", "\"", "*"). Returns 0, or -1 on bad
 * arguments or out of memory. */
OXL_API int32_t oxl_sampler_dry_breakers(oxl_sampler *s, const oxl_model *model, const char *const *breakers,
                                         int32_t n);
/* Picks a token from n_vocab logits (not modified); -1 on bad arguments or out of memory. With a
 * grammar, as llama.cpp's common_sampler_sample: the chain draws first; when the grammar rejects that
 * token, the chain draws again over the logits with every token the grammar rejects at -infinity
 * (so a seed gives llama.cpp's text); -1 also when the grammar allows no token. */
OXL_API oxl_token oxl_sampler_sample(oxl_sampler *s, const float *logits, int32_t n_vocab);
/* Constrains sampling to a GBNF grammar (llama.cpp's syntax, grammars/README.md there): gbnf is the
 * grammar text (NUL-terminated), root the start rule (NULL: "root"). The text is parsed and copied
 * into the sampler; model's vocabulary gives the tokens' texts (special tokens rendered), ends of
 * generation (allowed only where the grammar can end) and <piece> token references, so model must
 * outlive the sampler. gbnf NULL removes the grammar. A grammar replaces the previous one and
 * starts at its beginning. Returns 0, or -1 with "LINE:COLUMN: what is wrong" written into err
 * (err_len bytes, NUL-terminated; err may be NULL) when the text is not a grammar (unknown rule,
 * unterminated literal or class, bad escape or repetition, left recursion, no root rule), a bound
 * is passed (size, nesting, or more parse stacks than the matcher keeps), on bad arguments or out of
 * memory; the sampler is then unchanged. */
OXL_API int oxl_sampler_set_grammar(oxl_sampler *s, const oxl_model *model, const char *gbnf, const char *root,
                                    char *err, size_t err_len);
/* A lazy grammar, as llama.cpp's llama_sampler_init_grammar_lazy_patterns (src/llama-sampling.cpp,
 * src/llama-grammar.cpp) with common_sampler_init's word triggers (common/sampling.cpp): gbnf and root
 * as oxl_sampler_set_grammar, but the grammar stays inactive (every token allowed) until a trigger
 * occurs in the output (the tokens passed to oxl_sampler_accept after oxl_sampler_sample returned
 * them):
 *   - trigger_tokens (n_tokens ids): the grammar starts at that token, which it accepts;
 *   - trigger_patterns (n_patterns NUL-terminated regular expressions, PCRE2 syntax on bytes, which
 *     covers the ECMAScript patterns llama.cpp writes): after each output token, the first pattern
 *     that matches the whole output so far (special tokens rendered) starts the grammar, which then
 *     accepts the output from the pattern's first capturing group that matched a non-empty text (the
 *     whole output when none did); the text before it stays unconstrained;
 *   - trigger_words (n_words NUL-terminated texts): each word escaped, all of them as one more
 *     pattern "[\s\S]*?(word1|word2|...)[\s\S]*" after trigger_patterns, so the grammar starts at
 *     the first occurrence of any word.
 * Once started it constrains as oxl_sampler_set_grammar's grammar does. The arrays are only read.
 * Returns 0, or -1 with err written (see oxl_sampler_set_grammar; also: no trigger given, a pattern
 * that does not compile, a build without PCRE2); the sampler is then unchanged. */
OXL_API int oxl_sampler_set_grammar_lazy(oxl_sampler *s, const oxl_model *model, const char *gbnf, const char *root,
                                         const char *const *trigger_words, int32_t n_words,
                                         const char *const *trigger_patterns, int32_t n_patterns,
                                         const oxl_token *trigger_tokens, int32_t n_tokens, char *err, size_t err_len);

/* A budget of thinking tokens, as llama.cpp's reasoning-budget sampler (common/reasoning-budget.cpp,
 * common_reasoning_budget_init; --reasoning-budget N and llama-server's reasoning_budget_tokens):
 * start_tag, end_tag and message are tokenized with special tokens parsed and no BOS (end_tag and
 * message + end_tag as llama-server does). After the output contains the start tag's tokens (or at
 * once when arm is true: the prompt itself opened the thought, llama-server's
 * reasoning_budget_arm_immediately), the next n_budget output tokens are counted; when the end tag's
 * tokens come first the thought ends by itself, else, once n_budget tokens are out (and the last
 * of them ends a UTF-8 character; tokens that complete it follow first), oxl_sampler_sample returns
 * the tokens of message + end_tag one by one (the chain still runs, over the logits with every other
 * token at -infinity as common_reasoning_budget_apply sets them, so its random generator advances as
 * for any token; a grammar does not check forced tokens), then samples freely again. A later start tag opens a new
 * thought with a fresh budget. n_budget 0 forces the end at once. Only output tokens count: the tokens passed to
 * oxl_sampler_accept that the last oxl_sampler_sample returned (prompt tokens do not). model's vocabulary is used for
 * the whole life of the sampler (it must outlive it). n_budget < 0 removes the budget (the other arguments are then not
 * read). Replaces an earlier budget. start_tag and message may be NULL or empty (no start tag: only arm opens a
 * thought, as llama.cpp). Returns 0, or -1 when s or model is NULL, end_tag is NULL or empty, a text does not tokenize,
 * or memory runs out; the sampler is then unchanged. */
OXL_API int oxl_sampler_set_reasoning_budget(oxl_sampler *s, const oxl_model *model, const char *start_tag,
                                             const char *end_tag, const char *message, int32_t n_budget, bool arm);
/* The budget's state (common_reasoning_budget_get_state): -1 no budget set, 0 idle (before the
 * start tag), 1 counting, 2 waiting for a UTF-8 character's end, 3 forcing message + end tag,
 * 4 done (after the end tag, until a new start tag). */
OXL_API int32_t oxl_sampler_reasoning_state(const oxl_sampler *s);

/* ---------------------------------------------------------------------------------------------
 * Built-in chat formats (every build, OXL_SUBSET included: no JSON, no template engine)
 * ------------------------------------------------------------------------------------------- */

/* Renders a conversation with one of llama.cpp's built-in chat formats, as llama.cpp's
 * llama_chat_apply_template does (src/llama.cpp; the formats and their detection are
 * llm_chat_apply_template and llm_chat_detect_template of src/llama-chat.cpp): no Jinja engine.
 * tmpl is a built-in format name ("chatml", "llama3", "gemma", "mistral-v7", ...; see
 * oxl_chat_builtin_templates), or a chat template text (e.g. a model's tokenizer.chat_template,
 * oxl_model_chat_template) whose format is picked by its marker strings as llama.cpp picks it
 * ("<|im_start|>" is chatml, "<start_of_turn>" gemma, ...); NULL is "chatml", as in llama.cpp.
 * The messages are roles[i] and contents[i] for i < n, NUL-terminated UTF-8 strings that are only
 * read (a NULL content counts as ""); each format renders the roles it knows, as llama.cpp does.
 * add_ass ends the text with the opening of the assistant's turn (the generation prompt) in the
 * formats that have one. The text is written into buf (length bytes, caller-owned) as llama.cpp
 * does with strncpy: at most length bytes, NUL-terminated when length exceeds the text's length;
 * buf may be NULL with length 0 to ask for the length. Returns the text's length in bytes (the
 * NUL not counted; when it is >= length, call again with a buffer of at least that + 1 bytes);
 * -1 when tmpl is neither a format name nor a template whose format is recognised (llama.cpp's
 * -1); -2 on bad arguments (n < 0, roles or contents NULL with n > 0, a NULL role, length < 0, buf
 * NULL with length > 0); -3 when out of memory or the text is longer than INT32_MAX bytes. */
OXL_API int32_t oxl_chat_builtin_apply(const char *tmpl, const char *const *roles, const char *const *contents,
                                       int32_t n, bool add_ass, char *buf, int32_t length);

/* The built-in format names, as llama.cpp's llama_chat_builtin_templates lists them: writes the
 * first min(len, count) names into output (static strings; output may be NULL with len 0) and
 * returns count, 55: llama.cpp's 54 names and "dots1", which llama.cpp reaches only by detecting
 * its template text. */
OXL_API int32_t oxl_chat_builtin_templates(const char **output, size_t len);

/* ---------------------------------------------------------------------------------------------
 * Chat templates (absent from OXL_SUBSET builds)
 * ------------------------------------------------------------------------------------------- */

/* Renders a conversation into a model's prompt text as llama.cpp's server and llama-cli do
 * (common_chat_templates_apply; llama_chat_apply_template for the built-in formats). The template
 * is tmpl when given: a built-in format when tmpl equals one of their names exactly (llama.cpp's
 * llama_chat_builtin_templates names such as "chatml", "llama3", "gemma", "mistral-v7"; the
 * table is in src/chat/chat.c), else a Jinja template text. Without tmpl it is the model's own
 * tokenizer.chat_template (oxl_model_chat_template), rendered by the Jinja engine, or else
 * ChatML. messages_json is the text of a JSON array of OpenAI messages ({"role",
 * "content", ...}); tools_json, the text of a JSON array of tool definitions, may be NULL.
 * Jinja templates see messages, tools (when given), add_generation_prompt and the model's BOS/EOS
 * token texts (bos_token, eos_token); a leading BOS text in the output is dropped because
 * tokenizing adds BOS. Renders are bounded at 32 MiB of output. model, messages_json and out are
 * required; the inputs are only read. On success *out is a malloc'd NUL-terminated string the
 * caller releases with free(); on failure *out is NULL. Returns 0, or -1 with err set (err may be
 * NULL): a missing argument, invalid JSON, a template error with line:column, out of memory. */
OXL_API int oxl_chat_apply_template(const oxl_model *model, const char *tmpl, const char *messages_json,
                                    const char *tools_json, bool add_generation_prompt, char **out, oxl_error *err);
/* oxl_chat_apply_template with llama.cpp's chat_template_kwargs (common_chat_templates_inputs:
 * chat_template_kwargs and enable_thinking, common/chat.cpp). kwargs_json (may be NULL: none) is the
 * text of a JSON object of extra variables for a Jinja template; each replaces the standard variable
 * of the same name (minja's extra_context). "enable_thinking": false is how llama.cpp renders with
 * --reasoning-budget 0: templates that honour it skip the thought (Qwen3 writes an empty
 * "<think>\n\n</think>\n\n"), and when the rendered prompt still ends with the format's thought
 * opener (DeepSeek R1's "<think>\n", DeepSeek V3.1's "<think>", Command R7B's
 * "<|START_THINKING|>"), its closer ("</think>", "<|END_THINKING|>") is appended so that the reply
 * starts after the thought; a Command R7B prompt ending with "<|CHATBOT_TOKEN|>" gets
 * "<|START_THINKING|><|END_THINKING|>". Built-in formats ignore kwargs. Ownership, bounds and
 * errors as oxl_chat_apply_template; kwargs_json that is not a JSON object is an error. */
OXL_API int oxl_chat_apply_template_kw(const oxl_model *model, const char *tmpl, const char *messages_json,
                                       const char *tools_json, bool add_generation_prompt, const char *kwargs_json,
                                       char **out, oxl_error *err);
/* Whether the chat template reacts to enable_thinking, as llama.cpp's
 * common_chat_templates_support_enable_thinking decides it (common/chat.cpp): the conversation
 * [user "test"] with the generation prompt, rendered by oxl_chat_apply_template_kw with
 * enable_thinking false and with true (the closer appended to an opened thought included), gives two
 * different prompts. llama.cpp's chat passes enable_thinking = (--reasoning-budget != 0) && this.
 * tmpl and model as oxl_chat_apply_template; false when model is NULL or a render fails. */
OXL_API bool oxl_chat_supports_thinking(const oxl_model *model, const char *tmpl);
/* The thought tags of chat template tmpl (NULL: the model's template), as llama.cpp's chat formats
 * give thinking_start_tag / thinking_end_tag to the reasoning budget (common/chat.cpp): "<think>" and
 * "</think>" for think-tag templates (DeepSeek R1 / V3.1, Qwen3, ...), "<|START_THINKING|>" and
 * "<|END_THINKING|>" for Command R7B, "[THINK]" and "[/THINK]" for Magistral. *start and *end get
 * static strings (NULL when the template writes no thoughts). *open (may be NULL) is set to whether
 * prompt (may be NULL: false) ends with the start tag and whitespace, i.e. the reply starts inside
 * the thought. Returns 1 when the template has thought tags, 0 when not, -1 on bad arguments (start
 * or end NULL). */
OXL_API int oxl_chat_thinking_tags(const oxl_model *model, const char *tmpl, const char *prompt, const char **start,
                                   const char **end, bool *open);

/* Parses a chat model's reply into an OpenAI assistant message, as llama.cpp's server does
 * (common_chat_parse): the reply format is picked from the chat template text by its markers
 * (tmpl when given, else the model's tokenizer.chat_template; model may be NULL with tmpl) among
 * llama.cpp's formats: Hermes 2 Pro / Qwen <tool_call>, Llama 3.x JSON and <|python_tag|> builtin
 * tools, Mistral Nemo [TOOL_CALLS] (and its NAME[CALL_ID]ID[ARGS] form, [THINK] thoughts),
 * DeepSeek R1 / V3.1 tool call tokens, Functionary v3.1 / v3.2, FireFunction v2, Command R7B,
 * Command R+, Granite, gpt-oss harmony channels, Qwen3-Coder's XML calls (also Qwen3.5's), and a
 * generic JSON fallback (oxl_chat_format names the one picked; docs/chat-templates.md lists the
 * markers). text is the reply (NUL-terminated, only read). opts_json (may be NULL) is
 * a JSON object of options:
 *   "reasoning_format": "none" keeps thoughts in content; "deepseek" (the default) or "auto" moves
 *       <think> blocks (Command R7B's START_THINKING, harmony's analysis channel) to
 *       reasoning_content;
 *   "prompt": the rendered prompt; when it ends with an opened thought (DeepSeek R1, QwQ), the
 *       reply starts inside it; "thinking_forced_open": true says the same without the prompt;
 *   "tools": false leaves calls in content; true (the default) or the list of offered tool
 *       definitions (OpenAI's shape) parses them; a parameter of an XML call (Qwen3-Coder) whose
 *       schema type is "string" stays text, others are read as JSON values where they parse;
 *   "generate_ids": false gives calls without an id in the reply none (default: "call_" + 24
 *       random characters);
 *   "partial": true for a reply still being generated, as llama.cpp's common_chat_parse with
 *       is_partial (common/chat-parser.cpp): content and reasoning stop before any text that may
 *       still become markup; the calls so far are returned, the last one maybe cut short: it
 *       appears once its name is whole, with "arguments" the text of its arguments as far as the
 *       reply fixes them (the cut JSON is healed as common/json-partial.cpp heals it, dumped, and
 *       cut where the healing begins, so a value that may still grow, such as a number, is left
 *       out), "" before they begin, and ids only where the reply gives them. Parsing more of the
 *       same reply only extends these texts (llama.cpp's common_chat_msg_diff), which is what
 *       streamed tool call deltas are made of. Hermes 2 Pro / Qwen, Llama 3.x JSON calls,
 *       Mistral Nemo, generic, DeepSeek R1 / V3.1, gpt-oss, Functionary v3.1, FireFunction v2,
 *       Command R7B / R+ and Granite calls are returned cut; Qwen3-Coder XML calls, Llama 3.x
 *       <|python_tag|> calls and Functionary v3.2 calls only once whole (docs/chat-templates.md);
 *   "format": a format name forcing it.
 * On success *out_message_json is a malloc'd NUL-terminated JSON object the caller releases with
 * free(): {"role": "assistant", "content": a string, or null when the reply is only calls,
 * "reasoning_content": present when not empty, "tool_calls": present when any, a list of {"id",
 * "type": "function", "function": {"name", "arguments": a JSON text, written as llama.cpp writes
 * it (nlohmann's dump: compact, non-ASCII escaped as \uXXXX), or "{}" for a finished call that
 * gave none}}}; on failure it is NULL.
 * Returns 0, or -1 with err set (err may be NULL): a missing argument, options that are not a JSON
 * object or hold a bad value, out of memory. A malformed call is content, never an error. */
OXL_API int oxl_chat_parse(const oxl_model *model, const char *tmpl, const char *text, const char *opts_json,
                           char **out_message_json, oxl_error *err);
/* The tool-call grammar of a reply format, as llama.cpp's common_chat_templates_apply builds it for
 * offered tools (common/chat.cpp, the build_grammar block of each common_chat_params_init_<format>:
 * the same rules, rule names, triggers and preserved tokens), with the sampler-ready triggers that
 * common_sampler_init (common/sampling.cpp) and llama-server derive from them. The format is
 * oxl_chat_format's for tmpl (or model's template). tools_json: a non-empty JSON array of OpenAI tool
 * definitions ({"type": "function", "function": {"name", "parameters"?, ...}}). opts_json (may be
 * NULL) is a JSON object: "tool_choice": "auto" (the default) or "required"; "parallel_tool_calls"
 * (default true); "prompt": the rendered prompt, whose end says whether the reply starts inside an
 * opened thought (the grammar then admits its closing tag first).
 * On success *out_json is a malloc'd JSON object the caller frees: "format" (the format's name),
 * "grammar" (GBNF text, or null for a format llama.cpp builds none for: Command R+, content only), "lazy" (true for
 * "auto": the grammar waits for a trigger; the generic format is never lazy), "triggers" (llama.cpp's grammar_triggers:
 * [{"type": "word" | "pattern" | "pattern_full", "value"}]), "preserved_tokens" (texts), and for
 * oxl_sampler_set_grammar_lazy: "trigger_patterns" (full-match patterns: the "pattern_full" values, then one pattern
 * made of the words and "pattern" values) and "trigger_tokens" (ids of the words that are one token of model's
 * vocabulary; model NULL: none), "preserved_token_ids". Returns 0, or -1 with err set: missing
 * arguments, tools or options that are not what is described, a tool llama.cpp refuses for the format
 * (Llama 3.x builtin tools and Functionary's python tool with other parameters), a parameters schema
 * the JSON-schema converter refuses (its message), out of memory. */
OXL_API int oxl_chat_tool_grammar(const oxl_model *model, const char *tmpl, const char *tools_json,
                                  const char *opts_json, char **out_json, oxl_error *err);
/* The name of the reply format oxl_chat_parse picks for tmpl (or the model's template; both may be
 * NULL: "Generic"): "Hermes 2 Pro", "Llama 3.x", "DeepSeek R1", "GPT-OSS", ... A static string. */
OXL_API const char *oxl_chat_format(const oxl_model *model, const char *tmpl);
/* 1 for a reasoning format that separates thoughts ("deepseek", "auto", or NULL: the default), 0
 * for "none", -1 for another name. */
OXL_API int oxl_chat_reasoning_format(const char *name);

/* Converts a JSON schema to a GBNF grammar (llama.cpp's grammar syntax) as llama.cpp's
 * json_schema_to_grammar does (common/json-schema-to-grammar.cpp): the same rules, names and text
 * (llama.cpp's test cases, golden/json_schema/cases.json, give the same grammars), one
 * "name ::= body" line per rule in name order, the start rule "root". Supported: type (and lists
 * of types), properties / required / additionalProperties, items / prefixItems / minItems /
 * maxItems, const, enum, oneOf / anyOf / allOf, local $ref ("#/..."), pattern (^...$ regular
 * expressions), minLength / maxLength, integer minimum / maximum (exclusive too), the formats
 * date, time, date-time and uuid. Differences: a number constant with an integral value is written
 * without ".0" (cJSON does not keep how it was written); remote $refs are an error. schema_json is
 * the schema's JSON text (read only). On success *out is a malloc'd NUL-terminated grammar the
 * caller releases with free(); on failure *out is NULL. Returns 0, or -1 with err set (err may be
 * NULL): invalid JSON (with its byte offset), "JSON schema conversion failed:" and llama.cpp's
 * messages (an unrecognized schema, an unsupported $ref, a bad pattern), a grammar larger than
 * 16 MiB, out of memory. */
OXL_API int oxl_json_schema_to_grammar(const char *schema_json, char **out, oxl_error *err);

/* ---- Images (the input of the vision side) -------------------------------------------------------
 * An oxl_image is a decoded bitmap as llama.cpp's mtmd_bitmap: width x height pixels of three bytes
 * (R, G, B), row-major from the top-left pixel, rows not padded: ggml shape [3, width, height].
 * Images are at most OXL_IMAGE_MAX_PIXELS pixels (a bound on what a decoder allocates for one). */
typedef struct oxl_image oxl_image;
#define OXL_IMAGE_MAX_PIXELS (64LL * 1024 * 1024)

/* A copy of rgb (3 * w * h bytes, layout above; the caller keeps rgb). NULL with err set when w or h
 * is not positive, w * h exceeds OXL_IMAGE_MAX_PIXELS or memory is short. Free with oxl_image_free. */
OXL_API oxl_image *oxl_image_from_rgb(const uint8_t *rgb, int32_t w, int32_t h, oxl_error *err);
/* Decodes a PNG, JPEG or WebP file held in memory (data: len bytes, read only; the caller keeps it)
 * to 8-bit RGB (layout above), as llama.cpp's mtmd_helper_bitmap_init_from_buf
 * (tools/mtmd/mtmd-helper.cpp) decodes with stb_image's stbi_load_from_memory, 3 channels forced.
 * The format is told by the magic bytes (PNG \x89PNG\r\n\x1a\n, JPEG FF D8 FF, WebP RIFF....WEBP);
 * stb_image's other formats (BMP, GIF, TGA, PSD, HDR, PIC, PNM) are not decoded.
 * Conversion, stb_image's (stbi__convert_format with req_comp = 3, stbi__convert_16_to_8):
 *  - grey g -> (g, g, g); grey + alpha -> (g, g, g), alpha dropped; RGBA -> RGB, alpha dropped (not
 *    composited on any background); palette -> its RGB entries, tRNS ignored; tRNS of grey and RGB
 *    images ignored;
 *  - 16-bit samples -> their high byte (v >> 8); grey of 1, 2 or 4 bits scaled to 8 (bits repeated:
 *    1 -> 255, 2-bit 1 -> 85, 4-bit 1 -> 17); interlaced (Adam7) PNGs decoded;
 *  - gAMA, cHRM, sRGB and iCCP are not applied (stb_image ignores them).
 *  PNG is lossless, so the pixels are stb_image's exactly. JPEG (libjpeg-turbo: YCbCr, RGB and
 *  greyscale; CMYK and YCCK are refused with an error) may differ from stb_image by about 1 in some
 *  samples: both use an integer IDCT and smooth ("fancy") chroma upsampling, but with different
 *  rounding. WebP: RGB as stored, alpha dropped (llama.cpp's stb_image does not read WebP at all).
 * Stricter than stb_image on damaged files: a PNG chunk with a bad CRC in a critical chunk, a PNG
 * without IEND or with image data beyond the image, and a JPEG that ends before its image does are
 * errors. Returns a new image (free with oxl_image_free), or NULL with err set (err may be NULL):
 * "image: no data" for len 0, "image: unknown format (first bytes ..)", "image: PNG: <libpng's
 * message>", "image: JPEG: <libjpeg's message>", "image: WebP: ...", a side over 32768 or more than
 * OXL_IMAGE_MAX_PIXELS pixels (refused before the bitmap is allocated), out of memory. Nothing is
 * printed. In the OXL_SUBSET build it always fails (no libpng, libjpeg or libwebp). */
OXL_API oxl_image *oxl_image_load(const uint8_t *data, size_t len, oxl_error *err);
/* oxl_image_load on the bytes of the file at path (as mtmd_helper_bitmap_init_from_file). Files over
 * 256 MiB are refused ("image: <path>: larger than 268435456 bytes"); decoding errors are prefixed
 * with the path ("<path>: image: PNG: ..."). */
OXL_API oxl_image *oxl_image_load_file(const char *path, oxl_error *err);
/* Width and height in pixels (0 for NULL). */
OXL_API int32_t oxl_image_width(const oxl_image *image);
OXL_API int32_t oxl_image_height(const oxl_image *image);
/* The pixels (layout above), owned by the image; NULL for NULL. */
OXL_API const uint8_t *oxl_image_rgb(const oxl_image *image);
/* Frees an image; NULL is a no-op. */
OXL_API void oxl_image_free(oxl_image *image);

/* ---- Vision: mmproj files (llama.cpp's libmtmd, tools/mtmd/) ----------------------------------------
 * An mmproj GGUF (general.architecture "clip") holds a vision tower and a projector. Projectors:
 * "mlp" (LLaVA-1.5; LLaVA-NeXT with clip.vision.image_grid_pinpoints), "qwen2vl_merger" (Qwen2-VL),
 * "qwen2.5vl_merger" (Qwen2.5-VL: RMSNorm, gated FFN, window attention) and "gemma3" (Gemma 3:
 * SigLIP, its patch grid average-pooled 4 x 4, images decoded with causal attention off). An image is
 * preprocessed into tiles as mtmd does (letterbox, anyres tiles and overview, Qwen's smart resize;
 * llama.cpp's own bicubic and bilinear), each tile is encoded into embeddings of the text model's
 * n_embd, and those are decoded into a sequence (oxl_decode_image_embd). */
typedef struct oxl_mmproj oxl_mmproj;
typedef struct oxl_image_embd oxl_image_embd;

/* Loads the mmproj at path for model (which must outlive it): the preprocessing keys, the tower's
 * keys and tensors (F32, F16, Q8_0 weights), as mtmd_init_from_file. NULL with err naming the file
 * and the key or tensor at fault, an unknown projector (the message lists the supported ones), or a
 * projector output size other than the model's n_embd. Free with oxl_mmproj_free. */
OXL_API oxl_mmproj *oxl_mmproj_load(const char *path, const oxl_model *model, oxl_error *err);
/* Options of oxl_mmproj_load_params, as llama.cpp's mtmd_context_params.image_min_tokens and
 * image_max_tokens (the --image-min-tokens / --image-max-tokens flags of llama-mtmd-cli and
 * llama-server). Each is a number of image tokens after the merge; a value <= 0 keeps the
 * projector's default. They bound the dynamic-resolution projectors only (Qwen-VL's smart resize,
 * calc_size_preserved_ratio: min_pixels = image_min_tokens * (patch_size * merge)^2, max_pixels
 * likewise; defaults 8 and 4096, clip_model_loader::load_hparams' set_limit_image_tokens); the
 * fixed-size and tiled projectors (mlp) ignore them, as llama.cpp does. */
typedef struct oxl_mmproj_params {
    int32_t image_min_tokens;
    int32_t image_max_tokens;
} oxl_mmproj_params;
/* oxl_mmproj_load with options (params NULL: the defaults, as oxl_mmproj_load). Errors as
 * oxl_mmproj_load, and also: a max_pixels beyond the tower's bound, or image_max_tokens giving fewer
 * pixels than image_min_tokens (both named with their values). */
OXL_API oxl_mmproj *oxl_mmproj_load_params(const char *path, const oxl_model *model, const oxl_mmproj_params *params,
                                           oxl_error *err);
OXL_API void oxl_mmproj_free(oxl_mmproj *mm);
/* clip.projector_type of the file ("mlp", "qwen2vl_merger", "qwen2.5vl_merger", "gemma3"); NULL for
 * NULL. */
OXL_API const char *oxl_mmproj_projector(const oxl_mmproj *mm);
/* The text mtmd puts before and after each image of the projector (mtmd_context::init_vision img_beg /
 * img_end), to be tokenized with special tokens parsed: "<|vision_start|>" / "<|vision_end|>" for the
 * Qwen-VL projectors, "<start_of_image>" / "<end_of_image>" for gemma3, "" for mlp (and for NULL).
 * oxl_mm_eval adds them itself; a caller that tokenizes around oxl_image_embd_decode adds them. The
 * strings are static. */
OXL_API void oxl_mmproj_image_text(const oxl_mmproj *mm, const char **begin, const char **end);

/* Preprocesses image and encodes every tile with ctx's threads (mtmd_encode_chunk for each of the
 * image's chunks). ctx must be a context of the mmproj's model. The result is the caller's (free with
 * oxl_image_embd_free). NULL with err: a tile the tower cannot take, sizes beyond the bounds, memory. */
OXL_API oxl_image_embd *oxl_image_encode(oxl_ctx *ctx, const oxl_mmproj *mm, const oxl_image *image, oxl_error *err);
/* Cache rows the image takes (the sum of its tiles' tokens), and how far it advances the rope
 * position (M-RoPE: max(grid_x, grid_y) per tile; otherwise the rows). 0 for NULL. */
OXL_API int32_t oxl_image_embd_n_tokens(const oxl_image_embd *e);
OXL_API int32_t oxl_image_embd_n_pos(const oxl_image_embd *e);
/* Tiles (mtmd's image chunks: LLaVA-NeXT's tiles row-major then the overview; one otherwise), and
 * tile t's embeddings, (n_embd, n_tokens) floats owned by e, with its token grid (grid_x x grid_y:
 * merged-token columns x rows for M-RoPE projectors; n_tokens x 1 otherwise). NULL when t is out of
 * range; any output pointer may be NULL. */
OXL_API int32_t oxl_image_embd_n_tiles(const oxl_image_embd *e);
OXL_API const float *oxl_image_embd_tile(const oxl_image_embd *e, int32_t t, int32_t *n_tokens, int32_t *grid_x,
                                         int32_t *grid_y);
/* Decodes every tile of e, in order, into sequence seq at its next rows (oxl_decode_image_embd per
 * tile, as mtmd_helper_eval_chunks decodes an image's chunks), keeping the last token's logits. The
 * text around the image is the caller's (Qwen-VL models expect <|vision_start|> before and
 * <|vision_end|> after it, Gemma 3 <start_of_image> and <end_of_image>, as oxl_mm_eval adds). The
 * projector chooses the attention of the image's tokens: causal, or non-causal for gemma3 (as
 * mtmd_decode_use_non_causal; see oxl_decode_image_embd). Returns 0, or -1 with err: bad seq, no room in the
 * context, an embedding size other than the model's, a decode error. */
OXL_API int oxl_image_embd_decode(oxl_ctx *ctx, int32_t seq, const oxl_image_embd *e, oxl_error *err);
OXL_API void oxl_image_embd_free(oxl_image_embd *e);

/* The media marker a prompt of oxl_mm_eval holds in place of an image (mtmd_default_marker). */
#define OXL_MEDIA_MARKER "<__media__>"

/* mtmd_tokenize + mtmd_helper_eval_chunks: prompt (UTF-8) is split at each media marker
 * "<__media__>", one image per marker in order (no marker at all: the images go in front, as
 * llama-mtmd-cli); each text part is tokenized alone (special tokens parsed), with add_special BOS in
 * front as the vocabulary asks; every chunk is decoded into seq at its next rows, the last token's
 * logits kept (oxl_get_logits(ctx, -1)). Returns 0, or -1 with err naming what failed: markers and
 * images that do not pair up, an image that cannot be preprocessed or encoded, a prompt longer than
 * the room left in the sequence, a decode error (then the sequence may hold part of the prompt). */
OXL_API int oxl_mm_eval(oxl_ctx *ctx, const oxl_mmproj *mm, int32_t seq, const char *prompt,
                        const oxl_image *const *images, int32_t n_images, bool add_special, oxl_error *err);

#ifdef __cplusplus
}
#endif
#endif
