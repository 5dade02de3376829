/* Images of chat requests (--mmproj): data: URIs of content parts, their decoding, and the prompt's
 * tokens with each image's rows (llama-server's oaicompat_chat_params_parse and mtmd_tokenize). */
#ifndef OXL_SRV_MEDIA_H
#define OXL_SRV_MEDIA_H
#include "api.h"
#include "api_error.h"
#include "scheduler.h"

#include <stdint.h>

/* the marker an image part becomes in the message text (mtmd_default_marker) */
#define OXL_MEDIA_MARKER "<__media__>"

typedef struct oxl_media {
    int32_t n;
    oxl_image *img[OXL_SRV_MAX_IMAGES];
    oxl_img_key key[OXL_SRV_MAX_IMAGES];      /* SHA-256 and length of the image's file bytes */
    oxl_image_embd *embd[OXL_SRV_MAX_IMAGES]; /* set by oxl_media_tokenize */
    int32_t at[OXL_SRV_MAX_IMAGES];           /* the first prompt row of each */
} oxl_media;

/* Adds an image from its file bytes (PNG, JPEG or WebP): an image that does not decode, or more
 * than OXL_SRV_MAX_IMAGES images: 400 naming `where`. 0, or -1 with e set. */
int oxl_media_add_bytes(oxl_media *m, const uint8_t *bytes, size_t n, const char *where, oxl_api_error *e);

/* oxl_media_add_bytes of base64 text (llama-server's multimodal_data items, Anthropic's base64
 * image sources): base64 that does not decode is a 400 naming `where`. */
int oxl_media_add_base64(oxl_media *m, const char *b64, const char *where, oxl_api_error *e);

/* Reads an image URL of a content part: a data: URI with base64 PNG, JPEG or WebP bytes. A remote
 * http(s) URL, another scheme, bad base64, an image that does not decode, or more than
 * OXL_SRV_MAX_IMAGES images: 400 naming `where`. 0, or -1 with e set. */
int oxl_media_add_url(oxl_media *m, const char *url, const char *where, oxl_api_error *e);

/* Tokenizes text (the rendered prompt) split at each OXL_MEDIA_MARKER, BOS in front as the vocabulary
 * asks, each text part alone (special tokens parsed), and encodes the images in order (srv's
 * mm_ctx): each image takes its n_tokens rows of one negative id made from its hash, framed by the
 * projector's text (oxl_mmproj_image_text, as mtmd_tokenize). Markers and images that do not pair
 * up, a prompt that ends with an image, an encoding failure: 400 naming param. */
int oxl_media_tokenize(oxl_srv *srv, const char *text, oxl_media *m, oxl_token **out, int32_t *n, const char *param,
                       oxl_api_error *e);

/* Hands the encoded images to job (which then owns them). */
void oxl_media_give(oxl_media *m, oxl_job *job);

void oxl_media_free(oxl_media *m);
#endif
