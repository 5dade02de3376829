/* The Vulkan compute runtime: one device and its compute queue, device-local buffers filled and read
 * through a host-visible staging ring, the compute pipelines of generated/gpu (created on first use,
 * then cached) and one command stream per pass.
 *
 * A stream: oxl_gpu_begin, then dispatches and recorded transfers in order, then oxl_gpu_submit,
 * which waits; after it the recorded reads have landed in host memory. A memory barrier follows every
 * recorded command, so each one sees what the ones before it wrote. When the staging ring or the
 * descriptor pool runs out inside a stream, the runtime submits what it has recorded, waits, and
 * goes on: the order and the results are the same.
 *
 * Errors are named (no Vulkan loader, no device, out of device memory, a shader not in the list, a
 * push-constant size that differs from the list's) and returned: nothing here aborts. */
#ifndef OXL_GPU_H
#define OXL_GPU_H

#include "errors.h"

#include <stddef.h>
#include <stdint.h>

typedef struct oxl_gpu oxl_gpu;         /* one Vulkan device, its compute queue, pipelines */
typedef struct oxl_gpu_buf oxl_gpu_buf; /* one device buffer */
typedef struct {
    oxl_gpu_buf *buf;
    size_t off, size; /* bytes; size 0: to the end of the buffer */
} oxl_gpu_bind;

/* The number of Vulkan devices (physical devices with a compute queue); 0 without a loader or
 * device. */
int oxl_gpu_device_count(void);
/* The name of device i (vkGetPhysicalDeviceProperties' deviceName) into buf; -1 + err when there is
 * no such device. */
int oxl_gpu_device_name(int device, char *buf, size_t size, oxl_error *err);
/* The device index to use for `device` = -1: OXILLAMA_VK_DEVICE when set (a number), else 0. */
int oxl_gpu_default_device(void);
/* Opens device `device` (-1: oxl_gpu_default_device()). NULL + err: no Vulkan loader, no device,
 * no such device index, device creation failed. */
oxl_gpu *oxl_gpu_open(int device, oxl_error *err);
void oxl_gpu_close(oxl_gpu *g);
const char *oxl_gpu_name(const oxl_gpu *g);
/* The index the device was opened as. */
int oxl_gpu_index(const oxl_gpu *g);
/* A device-local buffer of `bytes` (> 0); NULL + err "out of device memory" when it does not fit. */
oxl_gpu_buf *oxl_gpu_alloc(oxl_gpu *g, size_t bytes, oxl_error *err);
void oxl_gpu_free(oxl_gpu *g, oxl_gpu_buf *b);
size_t oxl_gpu_buf_size(const oxl_gpu_buf *b);
/* The device memory in use by this runtime's buffers, bytes. */
size_t oxl_gpu_allocated(const oxl_gpu *g);

/* Immediate transfers through staging (submit + wait). Not inside a stream. */
int oxl_gpu_write(oxl_gpu *g, oxl_gpu_buf *b, size_t off, const void *src, size_t n, oxl_error *err);
int oxl_gpu_read(oxl_gpu *g, const oxl_gpu_buf *b, size_t off, void *dst, size_t n, oxl_error *err);
/* Fills n bytes at off with the 32-bit pattern `word` (off and n multiples of 4), recorded when a
 * stream is open, else immediate. */
int oxl_gpu_fill(oxl_gpu *g, oxl_gpu_buf *b, size_t off, size_t n, uint32_t word, oxl_error *err);

/* One command stream: begin, record dispatches and transfers, submit (waits; then the recorded
 * reads have landed in host memory). A barrier follows every dispatch. src of a recorded write is
 * copied at the call; dst of a recorded read must stay valid until the submit returns. */
int oxl_gpu_begin(oxl_gpu *g, oxl_error *err);
/* gx, gy, gz: workgroups. binds: the shader's storage buffers 0..n_binds-1 (n_binds as the list
 * says); each bind's offset a multiple of oxl_gpu_bind_align(g). push: push_size bytes, the
 * list's size for the shader. */
int oxl_gpu_dispatch(oxl_gpu *g, const char *shader, const oxl_gpu_bind *binds, int n_binds, const void *push,
                     size_t push_size, uint32_t gx, uint32_t gy, uint32_t gz, oxl_error *err);
int oxl_gpu_rec_write(oxl_gpu *g, oxl_gpu_buf *b, size_t off, const void *src, size_t n, oxl_error *err);
int oxl_gpu_rec_read(oxl_gpu *g, const oxl_gpu_buf *b, size_t off, void *dst, size_t n, oxl_error *err);
/* Device-to-device copy, recorded. */
int oxl_gpu_rec_copy(oxl_gpu *g, const oxl_gpu_buf *src, size_t src_off, oxl_gpu_buf *dst, size_t dst_off, size_t n,
                     oxl_error *err);
int oxl_gpu_submit(oxl_gpu *g, oxl_error *err);

/* The storage-buffer offset alignment of binds (minStorageBufferOffsetAlignment). */
size_t oxl_gpu_bind_align(const oxl_gpu *g);
/* The most bytes one binding reaches (maxStorageBufferRange): a shader sees no further. */
size_t oxl_gpu_max_bind(const oxl_gpu *g);

/* A shader of the list: whether it exists, and its metadata. */
typedef struct oxl_gpu_shader_info {
    const char *name;
    uint32_t local, push_size, bindings, rows, cols;
} oxl_gpu_shader_info;
const oxl_gpu_shader_info *oxl_gpu_shader(const char *name);

/* How many dispatches of shader `name` this process has recorded, on any device (0 for a name not
 * in the list): which shaders a pass took. */
uint64_t oxl_gpu_dispatch_count(const char *name);

/* The push constants of every mul_mat_<fmt> shader (gpu_api convention), in this order. */
typedef struct oxl_gpu_mm_push {
    uint32_t nrows, ncols, K, w_off, w_row, x_off, x_col, y_off, y_col;
} oxl_gpu_mm_push;

/* Records Y (nrows, ncols) = W (K, nrows) . X (K, ncols) with shader `shader` (mul_mat_<fmt>): the
 * workgroups from the list's rows / cols per workgroup, rows over x (more than 65535 row groups
 * split over z), column groups over y. */
int oxl_gpu_mul_mat(oxl_gpu *g, const char *shader, oxl_gpu_buf *w, oxl_gpu_buf *x, oxl_gpu_buf *y,
                    const oxl_gpu_mm_push *pc, oxl_error *err);

/* Workgroups for n invocations of a 1-D shader of local size `local`: x, and z when x would pass
 * 65535 (the shaders index gl_GlobalInvocationID.x + gl_NumWorkGroups.x * local * gl_WorkGroupID.z). */
void oxl_gpu_groups_1d(uint64_t n, uint32_t local, uint32_t *gx, uint32_t *gz);

#endif
