/* Preprocessing parameters of an mmproj file (mm_params.h); llama.cpp tools/mtmd/clip.cpp
 * load_hparams and mtmd.cpp init_vision. */
#include "mm_params.h"

#include "errors.h"

#include <string.h>

/* The projectors: name in clip.projector_type, and how their images are preprocessed. */
static const struct {
    const char *name;
    oxl_mm_projector projector;
} projectors[] = {
    {"mlp", OXL_MM_PROJ_MLP},
    {"qwen2vl_merger", OXL_MM_PROJ_QWEN2VL},
    {"qwen2.5vl_merger", OXL_MM_PROJ_QWEN25VL},
    {"gemma3", OXL_MM_PROJ_GEMMA3},
};

/* A key llama.cpp reads with get_u32: present with type uint32 exactly (required) or absent
 * (optional: *out untouched). Values are bounded to 1 .. max. */
static int get_u32(const oxl_gguf *g, const char *key, bool required, int64_t max, int32_t *out, oxl_error *err) {
    const char *path = oxl_gguf_path(g);
    const int64_t i = oxl_gguf_find_key(g, key);
    if (i < 0) {
        return required ? oxl_err_set(err, "%s: missing key '%s' (uint32)", path, key) : 0;
    }
    uint64_t v = 0;
    if (oxl_gguf_kv_type(g, i) != OXL_GGUF_UINT32 || !oxl_gguf_kv_uint(g, i, &v)) {
        return oxl_err_set(err, "%s: key '%s' must be uint32, not %s", path, key,
                           oxl_gguf_vtype_name(oxl_gguf_kv_type(g, i)));
    }
    if (v < 1 || v > (uint64_t)max) {
        return oxl_err_set(err, "%s: key '%s' = %llu is outside 1 .. %lld", path, key, (unsigned long long)v,
                           (long long)max);
    }
    *out = (int32_t)v;
    return 0;
}

/* image_mean / image_std: a float32 array of 3 (one per RGB channel). */
static int get_rgb(const oxl_gguf *g, const char *key, float out[3], oxl_error *err) {
    const char *path = oxl_gguf_path(g);
    const int64_t i = oxl_gguf_find_key(g, key);
    if (i < 0) {
        return oxl_err_set(err, "%s: missing key '%s' (array of 3 float32)", path, key);
    }
    if (oxl_gguf_kv_type(g, i) != OXL_GGUF_ARRAY || oxl_gguf_arr_type(g, i) != OXL_GGUF_FLOAT32 ||
        oxl_gguf_arr_n(g, i) != 3) {
        return oxl_err_set(err, "%s: key '%s' must be an array of 3 float32", path, key);
    }
    memcpy(out, oxl_gguf_arr_data(g, i), 3 * sizeof(float));
    for (int c = 0; c < 3; c++) {
        if (!(out[c] > -1e30f && out[c] < 1e30f)) {
            return oxl_err_set(err, "%s: key '%s'[%d] = %g is not a finite number", path, key, c, (double)out[c]);
        }
    }
    return 0;
}

/* clip.vision.image_grid_pinpoints: int32 pairs (width, height), each side 1 .. OXL_MM_MAX_SIDE. */
static int get_pinpoints(const oxl_gguf *g, oxl_mm_params *p, oxl_error *err) {
    static const char key[] = "clip.vision.image_grid_pinpoints";
    const char *path = oxl_gguf_path(g);
    const int64_t i = oxl_gguf_find_key(g, key);
    p->n_pinpoints = 0;
    if (i < 0) {
        return 0;
    }
    if (oxl_gguf_kv_type(g, i) != OXL_GGUF_ARRAY || oxl_gguf_arr_type(g, i) != OXL_GGUF_INT32) {
        return oxl_err_set(err, "%s: key '%s' must be an array of int32", path, key);
    }
    const uint64_t n = oxl_gguf_arr_n(g, i);
    if (n % 2 != 0 || n / 2 > OXL_MM_MAX_PINPOINTS) {
        return oxl_err_set(err, "%s: key '%s' has %llu values: want (width, height) pairs, at most %d", path, key,
                           (unsigned long long)n, OXL_MM_MAX_PINPOINTS);
    }
    const char *data = oxl_gguf_arr_data(g, i);
    for (uint64_t j = 0; j < n; j++) {
        int32_t v;
        memcpy(&v, data + 4 * j, sizeof v);
        if (v < 1 || v > OXL_MM_MAX_SIDE) {
            return oxl_err_set(err, "%s: key '%s'[%llu] = %d is outside 1 .. %d", path, key, (unsigned long long)j, v,
                               OXL_MM_MAX_SIDE);
        }
        p->pinpoints[j / 2][j % 2] = v;
    }
    p->n_pinpoints = (int32_t)(n / 2);
    return 0;
}

int oxl_mm_params_read(const oxl_gguf *g, const oxl_mm_limits *limits, oxl_mm_params *p, oxl_error *err) {
    const char *path = oxl_gguf_path(g);
    memset(p, 0, sizeof *p);
    bool has_vision = false;
    const int hv = oxl_gguf_get_bool(g, "clip.has_vision_encoder", &has_vision, err);
    if (hv < 0) {
        return -1;
    }
    if (hv == 0 || !has_vision) {
        return oxl_err_set(err, "%s: clip.has_vision_encoder is %s: not an mmproj with a vision encoder", path,
                           hv == 0 ? "missing" : "false");
    }
    /* projector type: clip.projector_type, else clip.vision.projector_type, else "mlp" */
    const char *name = NULL;
    int rc = oxl_gguf_get_str(g, "clip.projector_type", &name, err);
    if (rc == 0 || (rc == 1 && !name[0])) {
        rc = oxl_gguf_get_str(g, "clip.vision.projector_type", &name, err);
        if (rc == 0 || (rc == 1 && !name[0])) {
            rc = 1;
            name = "mlp";
        }
    }
    if (rc < 0) {
        return -1;
    }
    size_t k = 0;
    while (k < sizeof projectors / sizeof projectors[0] && strcmp(projectors[k].name, name)) {
        k++;
    }
    if (k == sizeof projectors / sizeof projectors[0]) {
        return oxl_err_set(
            err, "%s: clip.projector_type '%s' is not supported (mlp, qwen2vl_merger, qwen2.5vl_merger, gemma3)", path,
            name);
    }
    p->projector = projectors[k].projector;
    p->projector_name = projectors[k].name;
    p->n_merge = 1;
    if (get_u32(g, "clip.vision.image_size", true, OXL_MM_MAX_SIDE, &p->image_size, err) ||
        get_u32(g, "clip.vision.patch_size", true, OXL_MM_MAX_SIDE, &p->patch_size, err) ||
        get_rgb(g, "clip.vision.image_mean", p->mean, err) || get_rgb(g, "clip.vision.image_std", p->std, err) ||
        get_pinpoints(g, p, err)) {
        return -1;
    }
    for (int c = 0; c < 3; c++) {
        if (p->std[c] == 0.0f) {
            return oxl_err_set(err, "%s: clip.vision.image_std[%d] is 0", path, c);
        }
    }
    if (p->projector == OXL_MM_PROJ_MLP) {
        if (p->n_pinpoints > 0) {
            /* llava-1.6: refined image letterboxed with bicubic on black (the pad colour is set in
             * the no-pinpoints branch only), the overview stretched with bilinear */
            p->kind = OXL_MM_PREP_ANYRES;
            p->resize = OXL_MM_RESIZE_BICUBIC;
            p->resize_overview = OXL_MM_RESIZE_BILINEAR;
        } else {
            p->kind = OXL_MM_PREP_FIXED;
            p->resize = OXL_MM_RESIZE_BICUBIC;
            p->pad[0] = 122, p->pad[1] = 116, p->pad[2] = 104;
        }
        return 0;
    }
    if (p->projector == OXL_MM_PROJ_GEMMA3) {
        /* the fixed-size letterbox with bilinear on black (the defaults of clip_hparams: PAD_CEIL,
         * pad colour 0); n_merge 4 unless clip.vision.projector.scale_factor says otherwise */
        p->kind = OXL_MM_PREP_FIXED;
        p->resize = OXL_MM_RESIZE_BILINEAR;
        p->n_merge = 4;
        if (get_u32(g, "clip.vision.projector.scale_factor", false, 64, &p->n_merge, err)) {
            return -1;
        }
        const int32_t side = p->image_size / p->patch_size;
        if (side < p->n_merge || side % p->n_merge != 0) {
            return oxl_err_set(err,
                               "%s: image_size %d / patch_size %d gives %d patches per side, not a multiple of the "
                               "pooling factor clip.vision.projector.scale_factor %d",
                               path, p->image_size, p->patch_size, side, p->n_merge);
        }
        return 0;
    }
    /* Qwen2-VL / Qwen2.5-VL: dynamic resolution, bilinear letterbox on black */
    p->kind = OXL_MM_PREP_DYN;
    p->resize = OXL_MM_RESIZE_BILINEAR;
    p->n_merge = 2;
    if (get_u32(g, "clip.vision.spatial_merge_size", false, 64, &p->n_merge, err)) {
        return -1;
    }
    const int64_t align = (int64_t)p->patch_size * p->n_merge;
    if (align > OXL_MM_MAX_SIDE) {
        return oxl_err_set(err, "%s: patch_size %d x spatial_merge_size %d exceeds %d pixels", path, p->patch_size,
                           p->n_merge, OXL_MM_MAX_SIDE);
    }
    /* hparams.set_limit_image_tokens(8, 4096), overridden by the caller's image_min/max_tokens */
    const int64_t min_tokens = limits && limits->min_tokens > 0 ? limits->min_tokens : 8;
    const int64_t max_tokens = limits && limits->max_tokens > 0 ? limits->max_tokens : 4096;
    p->min_pixels = min_tokens * align * align;
    p->max_pixels = max_tokens * align * align;
    if (p->max_pixels > OXL_MM_MAX_TILE_PIXELS) {
        return oxl_err_set(err, "%s: image_max_tokens %lld of %lldx%lld pixels exceed %lld pixels", path,
                           (long long)max_tokens, (long long)align, (long long)align,
                           (long long)OXL_MM_MAX_TILE_PIXELS);
    }
    if (p->max_pixels < p->min_pixels) {
        return oxl_err_set(err,
                           "%s: image_max_pixels (%lld, image_max_tokens %lld) is less than image_min_pixels (%lld, "
                           "image_min_tokens %lld)",
                           path, (long long)p->max_pixels, (long long)max_tokens, (long long)p->min_pixels,
                           (long long)min_tokens);
    }
    return 0;
}

void oxl_mm_image_text(oxl_mm_projector proj, const char **begin, const char **end) {
    const char *b = "", *e = "";
    if (proj == OXL_MM_PROJ_QWEN2VL || proj == OXL_MM_PROJ_QWEN25VL) {
        b = "<|vision_start|>", e = "<|vision_end|>";
    } else if (proj == OXL_MM_PROJ_GEMMA3) {
        b = "<start_of_image>", e = "<end_of_image>";
    }
    *begin = b;
    *end = e;
}

bool oxl_mm_non_causal(oxl_mm_projector proj) { return proj == OXL_MM_PROJ_GEMMA3; }
