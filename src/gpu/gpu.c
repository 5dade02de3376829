/* The Vulkan compute runtime (gpu.h). The loader is opened with dlopen at the first use, so a build
 * with the backend runs (on the CPU) where no libvulkan is installed. */
#include "gpu.h"

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the shader list (generated/gpu) and the embedded SPIR-V (cmake/gpu_embed.cmake) ---------- */
#define OXL_GPU_SHADER(name, local, push, bindings, rows, cols)                                                        \
    extern const uint32_t oxl_spv_##name[];                                                                            \
    extern const size_t oxl_spv_##name##_words;
#include "gpu/oxl_gpu_shader_list.inc"
#undef OXL_GPU_SHADER

typedef struct shader_row {
    oxl_gpu_shader_info info;
    const uint32_t *spv;
    const size_t *words;
} shader_row;

static const shader_row SHADERS[] = {
#define OXL_GPU_SHADER(name, local, push, bindings, rows, cols)                                                        \
    {{#name, local, push, bindings, rows, cols}, oxl_spv_##name, &oxl_spv_##name##_words},
#include "gpu/oxl_gpu_shader_list.inc"
#undef OXL_GPU_SHADER
};
#define N_SHADERS (sizeof SHADERS / sizeof SHADERS[0])

static int shader_index(const char *name) {
    for (size_t i = 0; i < N_SHADERS; i++) {
        if (strcmp(SHADERS[i].info.name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* dispatches recorded per shader, over every device of the process (oxl_gpu_dispatch_count) */
static _Atomic uint64_t dispatch_counts[N_SHADERS > 0 ? N_SHADERS : 1];

uint64_t oxl_gpu_dispatch_count(const char *name) {
    const int i = name ? shader_index(name) : -1;
    return i < 0 ? 0 : atomic_load(&dispatch_counts[i]);
}

const oxl_gpu_shader_info *oxl_gpu_shader(const char *name) {
    const int i = name ? shader_index(name) : -1;
    return i < 0 ? NULL : &SHADERS[i].info;
}

/* ---- the loader ------------------------------------------------------------------------------- */
#define VK_FUNCS(X)                                                                                                    \
    X(vkDestroyInstance)                                                                                               \
    X(vkEnumeratePhysicalDevices)                                                                                      \
    X(vkGetPhysicalDeviceProperties)                                                                                   \
    X(vkGetPhysicalDeviceQueueFamilyProperties)                                                                        \
    X(vkGetPhysicalDeviceMemoryProperties)                                                                             \
    X(vkCreateDevice)                                                                                                  \
    X(vkDestroyDevice)                                                                                                 \
    X(vkGetDeviceQueue)                                                                                                \
    X(vkCreateBuffer)                                                                                                  \
    X(vkDestroyBuffer)                                                                                                 \
    X(vkGetBufferMemoryRequirements)                                                                                   \
    X(vkAllocateMemory)                                                                                                \
    X(vkFreeMemory)                                                                                                    \
    X(vkBindBufferMemory)                                                                                              \
    X(vkMapMemory)                                                                                                     \
    X(vkUnmapMemory)                                                                                                   \
    X(vkCreateShaderModule)                                                                                            \
    X(vkDestroyShaderModule)                                                                                           \
    X(vkCreateDescriptorSetLayout)                                                                                     \
    X(vkDestroyDescriptorSetLayout)                                                                                    \
    X(vkCreatePipelineLayout)                                                                                          \
    X(vkDestroyPipelineLayout)                                                                                         \
    X(vkCreateComputePipelines)                                                                                        \
    X(vkDestroyPipeline)                                                                                               \
    X(vkCreateDescriptorPool)                                                                                          \
    X(vkDestroyDescriptorPool)                                                                                         \
    X(vkResetDescriptorPool)                                                                                           \
    X(vkAllocateDescriptorSets)                                                                                        \
    X(vkUpdateDescriptorSets)                                                                                          \
    X(vkCreateCommandPool)                                                                                             \
    X(vkDestroyCommandPool)                                                                                            \
    X(vkAllocateCommandBuffers)                                                                                        \
    X(vkBeginCommandBuffer)                                                                                            \
    X(vkEndCommandBuffer)                                                                                              \
    X(vkResetCommandBuffer)                                                                                            \
    X(vkCmdBindPipeline)                                                                                               \
    X(vkCmdBindDescriptorSets)                                                                                         \
    X(vkCmdPushConstants)                                                                                              \
    X(vkCmdDispatch)                                                                                                   \
    X(vkCmdPipelineBarrier)                                                                                            \
    X(vkCmdCopyBuffer)                                                                                                 \
    X(vkCmdFillBuffer)                                                                                                 \
    X(vkQueueSubmit)                                                                                                   \
    X(vkCreateFence)                                                                                                   \
    X(vkDestroyFence)                                                                                                  \
    X(vkWaitForFences)                                                                                                 \
    X(vkResetFences)

typedef struct vk_api {
#define X(f) PFN_##f f;
    VK_FUNCS(X)
#undef X
} vk_api;

static pthread_once_t loader_once = PTHREAD_ONCE_INIT;
static PFN_vkGetInstanceProcAddr get_proc;
static PFN_vkCreateInstance create_instance;

static void load_loader(void) {
    void *h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        h = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!h) {
        return;
    }
    get_proc = (PFN_vkGetInstanceProcAddr)dlsym(h, "vkGetInstanceProcAddr");
    if (get_proc) {
        create_instance = (PFN_vkCreateInstance)get_proc(NULL, "vkCreateInstance");
    }
}

static const char *vk_result_name(VkResult r) {
    switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
    case VK_ERROR_DEVICE_LOST: return "device lost";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "no compatible Vulkan driver";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not present";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "feature not present";
    case VK_ERROR_TOO_MANY_OBJECTS: return "too many objects";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "out of descriptor pool memory";
    default: return "Vulkan error";
    }
}

static int vk_fail(oxl_error *err, const char *what, VkResult r) {
    return oxl_err_set(err, "Vulkan: %s: %s (VkResult %d)", what, vk_result_name(r), (int)r);
}

/* An instance (Vulkan 1.2) and the API's function pointers; -1 + err: no loader, no driver. */
static int make_instance(VkInstance *inst, vk_api *api, oxl_error *err) {
    pthread_once(&loader_once, load_loader);
    if (!get_proc || !create_instance) {
        return oxl_err_set(err, "Vulkan: no Vulkan loader (libvulkan.so.1 not found: install libvulkan1 and a "
                                "driver such as mesa-vulkan-drivers)");
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "oxillama",
                             .pEngineName = "oxillama",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkResult r = create_instance(&ci, NULL, inst);
    if (r != VK_SUCCESS) {
        return oxl_err_set(err, "Vulkan: no device (vkCreateInstance: %s, VkResult %d)", vk_result_name(r), (int)r);
    }
#define X(f)                                                                                                           \
    api->f = (PFN_##f)get_proc(*inst, #f);                                                                             \
    if (!api->f) {                                                                                                     \
        PFN_vkDestroyInstance d = (PFN_vkDestroyInstance)get_proc(*inst, "vkDestroyInstance");                         \
        if (d) {                                                                                                       \
            d(*inst, NULL);                                                                                            \
        }                                                                                                              \
        return oxl_err_set(err, "Vulkan: the loader lacks %s", #f);                                                    \
    }
    VK_FUNCS(X)
#undef X
    return 0;
}

/* The physical devices that have a compute queue, in the loader's order; returns their count (at
 * most cap). */
static int compute_devices(const vk_api *api, VkInstance inst, VkPhysicalDevice *out, int cap) {
    uint32_t n = 0;
    if (api->vkEnumeratePhysicalDevices(inst, &n, NULL) != VK_SUCCESS || n == 0) {
        return 0;
    }
    VkPhysicalDevice *all = calloc(n, sizeof *all);
    if (!all) {
        return 0;
    }
    int k = 0;
    const VkResult r = api->vkEnumeratePhysicalDevices(inst, &n, all);
    if (r == VK_SUCCESS || r == VK_INCOMPLETE) {
        for (uint32_t i = 0; i < n && k < cap; i++) {
            uint32_t nq = 0;
            api->vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nq, NULL);
            VkQueueFamilyProperties qp[32];
            if (nq > 32) {
                nq = 32;
            }
            api->vkGetPhysicalDeviceQueueFamilyProperties(all[i], &nq, qp);
            for (uint32_t q = 0; q < nq; q++) {
                if (qp[q].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                    out[k++] = all[i];
                    break;
                }
            }
        }
    }
    free(all);
    return k;
}

#define MAX_DEVICES 16

int oxl_gpu_device_count(void) {
    VkInstance inst;
    vk_api api;
    if (make_instance(&inst, &api, NULL) != 0) {
        return 0;
    }
    VkPhysicalDevice devs[MAX_DEVICES];
    const int n = compute_devices(&api, inst, devs, MAX_DEVICES);
    api.vkDestroyInstance(inst, NULL);
    return n;
}

int oxl_gpu_device_name(int device, char *buf, size_t size, oxl_error *err) {
    VkInstance inst;
    vk_api api;
    if (make_instance(&inst, &api, err) != 0) {
        return -1;
    }
    VkPhysicalDevice devs[MAX_DEVICES];
    const int n = compute_devices(&api, inst, devs, MAX_DEVICES);
    if (device < 0 || device >= n) {
        api.vkDestroyInstance(inst, NULL);
        return oxl_err_set(err, "Vulkan: no device %d (%d device%s)", device, n, n == 1 ? "" : "s");
    }
    VkPhysicalDeviceProperties props;
    api.vkGetPhysicalDeviceProperties(devs[device], &props);
    snprintf(buf, size, "%s", props.deviceName);
    api.vkDestroyInstance(inst, NULL);
    return 0;
}

int oxl_gpu_default_device(void) {
    const char *s = getenv("OXILLAMA_VK_DEVICE");
    if (s && *s) {
        char *end;
        const long v = strtol(s, &end, 10);
        if (*end == '\0' && v >= 0 && v < 1000000) {
            return (int)v;
        }
        return 1000000; /* not a device index: no such device */
    }
    return 0;
}

/* ---- the device ------------------------------------------------------------------------------- */
#define STAGING_BYTES ((size_t)32 << 20)
#define POOL_SETS 1024
#define MAX_BINDS 8

struct oxl_gpu_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    size_t size;
};

typedef struct pipe {
    VkShaderModule mod;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe;
} pipe;

typedef struct pending_read {
    void *dst;
    size_t staging_off, n;
} pending_read;

struct oxl_gpu {
    vk_api api;
    VkInstance inst;
    VkPhysicalDevice pdev;
    VkDevice dev;
    VkQueue queue;
    uint32_t qfam;
    int index;
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    VkPhysicalDeviceMemoryProperties mem_props;
    size_t bind_align, max_range;
    size_t allocated;
    VkCommandPool cpool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool dpool;
    uint32_t sets_used;
    pipe pipes[N_SHADERS > 0 ? N_SHADERS : 1];
    /* staging ring */
    VkBuffer st_buf;
    VkDeviceMemory st_mem;
    uint8_t *st_map;
    size_t st_used;
    pending_read *reads;
    size_t n_reads, cap_reads;
    bool recording; /* a stream is open (oxl_gpu_begin) */
    bool cmd_open;  /* the command buffer is being recorded */
};

static int mem_type(const oxl_gpu *g, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags fallback) {
    for (int pass = 0; pass < 2; pass++) {
        const VkMemoryPropertyFlags f = pass == 0 ? want : fallback;
        for (uint32_t i = 0; i < g->mem_props.memoryTypeCount; i++) {
            if ((bits & (1u << i)) && (g->mem_props.memoryTypes[i].propertyFlags & f) == f) {
                return (int)i;
            }
        }
    }
    return -1;
}

static int make_buffer(oxl_gpu *g, size_t bytes, VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
                       VkMemoryPropertyFlags fallback, VkBuffer *buf, VkDeviceMemory *mem, oxl_error *err) {
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = bytes,
                             .usage = usage,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = g->api.vkCreateBuffer(g->dev, &bi, NULL, buf);
    if (r != VK_SUCCESS) {
        return oxl_err_set(err, "Vulkan: out of device memory (a buffer of %zu bytes: %s)", bytes, vk_result_name(r));
    }
    VkMemoryRequirements req;
    g->api.vkGetBufferMemoryRequirements(g->dev, *buf, &req);
    const int t = mem_type(g, req.memoryTypeBits, want, fallback);
    if (t < 0) {
        g->api.vkDestroyBuffer(g->dev, *buf, NULL);
        return oxl_err_set(err, "Vulkan: no memory type for a buffer of %zu bytes", bytes);
    }
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = (uint32_t)t};
    r = g->api.vkAllocateMemory(g->dev, &ai, NULL, mem);
    if (r != VK_SUCCESS) {
        g->api.vkDestroyBuffer(g->dev, *buf, NULL);
        return oxl_err_set(err, "Vulkan: out of device memory (%zu bytes: %s)", bytes, vk_result_name(r));
    }
    r = g->api.vkBindBufferMemory(g->dev, *buf, *mem, 0);
    if (r != VK_SUCCESS) {
        g->api.vkFreeMemory(g->dev, *mem, NULL);
        g->api.vkDestroyBuffer(g->dev, *buf, NULL);
        return vk_fail(err, "vkBindBufferMemory", r);
    }
    return 0;
}

oxl_gpu *oxl_gpu_open(int device, oxl_error *err) {
    if (device < 0) {
        device = oxl_gpu_default_device();
    }
    oxl_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        oxl_err_set(err, "out of memory");
        return NULL;
    }
    if (make_instance(&g->inst, &g->api, err) != 0) {
        free(g);
        return NULL;
    }
    VkPhysicalDevice devs[MAX_DEVICES];
    const int n = compute_devices(&g->api, g->inst, devs, MAX_DEVICES);
    if (n == 0) {
        oxl_err_set(err, "Vulkan: no device (the loader lists no device with a compute queue)");
        goto fail;
    }
    if (device >= n) {
        oxl_err_set(err, "Vulkan: no device %d (%d device%s: --list-devices shows them)", device, n, n == 1 ? "" : "s");
        goto fail;
    }
    g->pdev = devs[device];
    g->index = device;
    VkPhysicalDeviceProperties props;
    g->api.vkGetPhysicalDeviceProperties(g->pdev, &props);
    snprintf(g->name, sizeof g->name, "%s", props.deviceName);
    if (VK_API_VERSION_MINOR(props.apiVersion) < 2 && VK_API_VERSION_MAJOR(props.apiVersion) == 1) {
        oxl_err_set(err, "Vulkan: device %d (%s) supports Vulkan %u.%u, 1.2 is needed", device, g->name,
                    VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
        goto fail;
    }
    g->bind_align = props.limits.minStorageBufferOffsetAlignment ? props.limits.minStorageBufferOffsetAlignment : 1;
    g->max_range = props.limits.maxStorageBufferRange;
    g->api.vkGetPhysicalDeviceMemoryProperties(g->pdev, &g->mem_props);
    uint32_t nq = 0;
    VkQueueFamilyProperties qp[32];
    g->api.vkGetPhysicalDeviceQueueFamilyProperties(g->pdev, &nq, NULL);
    nq = nq > 32 ? 32 : nq;
    g->api.vkGetPhysicalDeviceQueueFamilyProperties(g->pdev, &nq, qp);
    g->qfam = UINT32_MAX;
    for (uint32_t q = 0; q < nq; q++) { /* a compute-only family first, else any with compute */
        if ((qp[q].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qp[q].queueFlags & VK_QUEUE_GRAPHICS_BIT)) {
            g->qfam = q;
            break;
        }
    }
    for (uint32_t q = 0; q < nq && g->qfam == UINT32_MAX; q++) {
        if (qp[q].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            g->qfam = q;
        }
    }
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = g->qfam,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
    VkResult r = g->api.vkCreateDevice(g->pdev, &dci, NULL, &g->dev);
    if (r != VK_SUCCESS) {
        vk_fail(err, "vkCreateDevice", r);
        goto fail;
    }
    g->api.vkGetDeviceQueue(g->dev, g->qfam, 0, &g->queue);
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = g->qfam};
    r = g->api.vkCreateCommandPool(g->dev, &pci, NULL, &g->cpool);
    if (r != VK_SUCCESS) {
        vk_fail(err, "vkCreateCommandPool", r);
        goto fail;
    }
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = g->cpool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    r = g->api.vkAllocateCommandBuffers(g->dev, &cai, &g->cmd);
    if (r != VK_SUCCESS) {
        vk_fail(err, "vkAllocateCommandBuffers", r);
        goto fail;
    }
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = g->api.vkCreateFence(g->dev, &fci, NULL, &g->fence);
    if (r != VK_SUCCESS) {
        vk_fail(err, "vkCreateFence", r);
        goto fail;
    }
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = POOL_SETS * MAX_BINDS};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = POOL_SETS,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    r = g->api.vkCreateDescriptorPool(g->dev, &dpi, NULL, &g->dpool);
    if (r != VK_SUCCESS) {
        vk_fail(err, "vkCreateDescriptorPool", r);
        goto fail;
    }
    if (make_buffer(g, STAGING_BYTES, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                        VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &g->st_buf, &g->st_mem,
                    err) != 0) {
        goto fail;
    }
    void *map = NULL;
    r = g->api.vkMapMemory(g->dev, g->st_mem, 0, VK_WHOLE_SIZE, 0, &map);
    if (r != VK_SUCCESS) {
        vk_fail(err, "vkMapMemory (staging)", r);
        goto fail;
    }
    g->st_map = map;
    return g;
fail:
    oxl_gpu_close(g);
    return NULL;
}

void oxl_gpu_close(oxl_gpu *g) {
    if (!g) {
        return;
    }
    if (g->dev) {
        for (size_t i = 0; i < N_SHADERS; i++) {
            pipe *p = &g->pipes[i];
            if (p->pipe) {
                g->api.vkDestroyPipeline(g->dev, p->pipe, NULL);
            }
            if (p->layout) {
                g->api.vkDestroyPipelineLayout(g->dev, p->layout, NULL);
            }
            if (p->dsl) {
                g->api.vkDestroyDescriptorSetLayout(g->dev, p->dsl, NULL);
            }
            if (p->mod) {
                g->api.vkDestroyShaderModule(g->dev, p->mod, NULL);
            }
        }
        if (g->st_map) {
            g->api.vkUnmapMemory(g->dev, g->st_mem);
        }
        if (g->st_buf) {
            g->api.vkDestroyBuffer(g->dev, g->st_buf, NULL);
        }
        if (g->st_mem) {
            g->api.vkFreeMemory(g->dev, g->st_mem, NULL);
        }
        if (g->dpool) {
            g->api.vkDestroyDescriptorPool(g->dev, g->dpool, NULL);
        }
        if (g->fence) {
            g->api.vkDestroyFence(g->dev, g->fence, NULL);
        }
        if (g->cpool) {
            g->api.vkDestroyCommandPool(g->dev, g->cpool, NULL);
        }
        g->api.vkDestroyDevice(g->dev, NULL);
    }
    if (g->inst) {
        g->api.vkDestroyInstance(g->inst, NULL);
    }
    free(g->reads);
    free(g);
}

const char *oxl_gpu_name(const oxl_gpu *g) { return g->name; }

int oxl_gpu_index(const oxl_gpu *g) { return g->index; }

size_t oxl_gpu_bind_align(const oxl_gpu *g) { return g->bind_align; }

size_t oxl_gpu_max_bind(const oxl_gpu *g) { return g->max_range; }

size_t oxl_gpu_allocated(const oxl_gpu *g) { return g->allocated; }

oxl_gpu_buf *oxl_gpu_alloc(oxl_gpu *g, size_t bytes, oxl_error *err) {
    if (bytes == 0) {
        oxl_err_set(err, "Vulkan: a buffer of 0 bytes");
        return NULL;
    }
    oxl_gpu_buf *b = calloc(1, sizeof *b);
    if (!b) {
        oxl_err_set(err, "out of memory");
        return NULL;
    }
    const size_t padded = (bytes + 15) & ~(size_t)15;
    if (make_buffer(g, padded,
                    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                        VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &b->buf, &b->mem, err) != 0) {
        free(b);
        return NULL;
    }
    b->size = bytes;
    g->allocated += padded;
    return b;
}

void oxl_gpu_free(oxl_gpu *g, oxl_gpu_buf *b) {
    if (!g || !b) {
        return;
    }
    g->api.vkDestroyBuffer(g->dev, b->buf, NULL);
    g->api.vkFreeMemory(g->dev, b->mem, NULL);
    g->allocated -= (b->size + 15) & ~(size_t)15;
    free(b);
}

size_t oxl_gpu_buf_size(const oxl_gpu_buf *b) { return b->size; }

/* ---- command recording ------------------------------------------------------------------------ */
static int open_cmd(oxl_gpu *g, oxl_error *err) {
    if (g->cmd_open) {
        return 0;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VkResult r = g->api.vkBeginCommandBuffer(g->cmd, &bi);
    if (r != VK_SUCCESS) {
        return vk_fail(err, "vkBeginCommandBuffer", r);
    }
    g->cmd_open = true;
    return 0;
}

static void barrier(oxl_gpu *g) {
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                                           VK_ACCESS_HOST_READ_BIT};
    g->api.vkCmdPipelineBarrier(g->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                                    VK_PIPELINE_STAGE_HOST_BIT,
                                0, 1, &mb, 0, NULL, 0, NULL);
}

/* Submits the recorded commands, waits, lands the pending reads, resets the ring and the pool. */
static int flush(oxl_gpu *g, oxl_error *err) {
    if (!g->cmd_open) {
        return 0;
    }
    g->cmd_open = false;
    VkResult r = g->api.vkEndCommandBuffer(g->cmd);
    if (r != VK_SUCCESS) {
        g->n_reads = 0;
        g->st_used = 0;
        g->api.vkResetCommandBuffer(g->cmd, 0);
        return vk_fail(err, "vkEndCommandBuffer", r);
    }
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &g->cmd};
    r = g->api.vkQueueSubmit(g->queue, 1, &si, g->fence);
    if (r == VK_SUCCESS) {
        r = g->api.vkWaitForFences(g->dev, 1, &g->fence, VK_TRUE, UINT64_MAX);
        g->api.vkResetFences(g->dev, 1, &g->fence);
    }
    if (r == VK_SUCCESS) {
        for (size_t i = 0; i < g->n_reads; i++) {
            memcpy(g->reads[i].dst, g->st_map + g->reads[i].staging_off, g->reads[i].n);
        }
    }
    g->n_reads = 0;
    g->st_used = 0;
    g->sets_used = 0;
    g->api.vkResetCommandBuffer(g->cmd, 0);
    g->api.vkResetDescriptorPool(g->dev, g->dpool, 0);
    return r == VK_SUCCESS ? 0 : vk_fail(err, "vkQueueSubmit", r);
}

int oxl_gpu_begin(oxl_gpu *g, oxl_error *err) {
    if (g->recording) {
        return oxl_err_set(err, "Vulkan: a command stream is already open");
    }
    if (open_cmd(g, err) != 0) {
        return -1;
    }
    g->recording = true;
    return 0;
}

int oxl_gpu_submit(oxl_gpu *g, oxl_error *err) {
    if (!g->recording) {
        return oxl_err_set(err, "Vulkan: submit without an open command stream");
    }
    g->recording = false;
    return flush(g, err);
}

/* n bytes of the staging ring (at most STAGING_BYTES): flushes first when they do not fit. */
static int staging(oxl_gpu *g, size_t n, size_t *off, oxl_error *err) {
    const size_t a = (g->st_used + 15) & ~(size_t)15;
    if (a + n > STAGING_BYTES) {
        if (flush(g, err) != 0 || open_cmd(g, err) != 0) {
            return -1;
        }
        *off = 0;
        g->st_used = n;
        return 0;
    }
    *off = a;
    g->st_used = a + n;
    return 0;
}

static int check_range(const oxl_gpu_buf *b, size_t off, size_t n, const char *what, oxl_error *err) {
    if (!b || off > b->size || n > b->size - off) {
        return oxl_err_set(err, "Vulkan: %s of %zu bytes at %zu outside a buffer of %zu bytes", what, n, off,
                           b ? b->size : 0);
    }
    return 0;
}

int oxl_gpu_rec_write(oxl_gpu *g, oxl_gpu_buf *b, size_t off, const void *src, size_t n, oxl_error *err) {
    if (check_range(b, off, n, "write", err) != 0 || open_cmd(g, err) != 0) {
        return -1;
    }
    const uint8_t *s = src;
    while (n > 0) {
        const size_t chunk = n < STAGING_BYTES ? n : STAGING_BYTES;
        size_t so;
        if (staging(g, chunk, &so, err) != 0) {
            return -1;
        }
        memcpy(g->st_map + so, s, chunk);
        VkBufferCopy c = {.srcOffset = so, .dstOffset = off, .size = chunk};
        g->api.vkCmdCopyBuffer(g->cmd, g->st_buf, b->buf, 1, &c);
        barrier(g);
        s += chunk;
        off += chunk;
        n -= chunk;
    }
    return 0;
}

int oxl_gpu_rec_read(oxl_gpu *g, const oxl_gpu_buf *b, size_t off, void *dst, size_t n, oxl_error *err) {
    if (check_range(b, off, n, "read", err) != 0 || open_cmd(g, err) != 0) {
        return -1;
    }
    uint8_t *d = dst;
    while (n > 0) {
        const size_t chunk = n < STAGING_BYTES ? n : STAGING_BYTES;
        size_t so;
        if (staging(g, chunk, &so, err) != 0) {
            return -1;
        }
        if (g->n_reads == g->cap_reads) {
            const size_t cap = g->cap_reads ? 2 * g->cap_reads : 16;
            pending_read *nr = realloc(g->reads, cap * sizeof *nr);
            if (!nr) {
                return oxl_err_set(err, "out of memory");
            }
            g->reads = nr;
            g->cap_reads = cap;
        }
        g->reads[g->n_reads++] = (pending_read){d, so, chunk};
        VkBufferCopy c = {.srcOffset = off, .dstOffset = so, .size = chunk};
        g->api.vkCmdCopyBuffer(g->cmd, b->buf, g->st_buf, 1, &c);
        barrier(g);
        d += chunk;
        off += chunk;
        n -= chunk;
    }
    return 0;
}

int oxl_gpu_rec_copy(oxl_gpu *g, const oxl_gpu_buf *src, size_t src_off, oxl_gpu_buf *dst, size_t dst_off, size_t n,
                     oxl_error *err) {
    if (check_range(src, src_off, n, "copy source", err) != 0 ||
        check_range(dst, dst_off, n, "copy destination", err) != 0 || open_cmd(g, err) != 0) {
        return -1;
    }
    if (n == 0) {
        return 0;
    }
    VkBufferCopy c = {.srcOffset = src_off, .dstOffset = dst_off, .size = n};
    g->api.vkCmdCopyBuffer(g->cmd, src->buf, dst->buf, 1, &c);
    barrier(g);
    return 0;
}

int oxl_gpu_fill(oxl_gpu *g, oxl_gpu_buf *b, size_t off, size_t n, uint32_t word, oxl_error *err) {
    if (check_range(b, off, n, "fill", err) != 0) {
        return -1;
    }
    if (off % 4 || n % 4) {
        return oxl_err_set(err, "Vulkan: fill of %zu bytes at %zu: not multiples of 4", n, off);
    }
    const bool immediate = !g->recording;
    if (open_cmd(g, err) != 0) {
        return -1;
    }
    if (n > 0) {
        g->api.vkCmdFillBuffer(g->cmd, b->buf, off, n, word);
        barrier(g);
    }
    return immediate ? flush(g, err) : 0;
}

int oxl_gpu_write(oxl_gpu *g, oxl_gpu_buf *b, size_t off, const void *src, size_t n, oxl_error *err) {
    if (g->recording) {
        return oxl_err_set(err, "Vulkan: an immediate write inside an open command stream");
    }
    if (oxl_gpu_rec_write(g, b, off, src, n, err) != 0) {
        flush(g, NULL);
        return -1;
    }
    return flush(g, err);
}

int oxl_gpu_read(oxl_gpu *g, const oxl_gpu_buf *b, size_t off, void *dst, size_t n, oxl_error *err) {
    if (g->recording) {
        return oxl_err_set(err, "Vulkan: an immediate read inside an open command stream");
    }
    if (oxl_gpu_rec_read(g, b, off, dst, n, err) != 0) {
        flush(g, NULL);
        return -1;
    }
    return flush(g, err);
}

/* The pipeline of shader i, created on first use. */
static int get_pipe(oxl_gpu *g, int i, pipe **out, oxl_error *err) {
    pipe *p = &g->pipes[i];
    const shader_row *s = &SHADERS[i];
    if (!p->pipe) {
        VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                       .codeSize = *s->words * sizeof(uint32_t),
                                       .pCode = s->spv};
        VkResult r = p->mod ? VK_SUCCESS : g->api.vkCreateShaderModule(g->dev, &mi, NULL, &p->mod);
        if (r != VK_SUCCESS) {
            return vk_fail(err, s->info.name, r);
        }
        VkDescriptorSetLayoutBinding lb[MAX_BINDS];
        for (uint32_t b = 0; b < s->info.bindings; b++) {
            lb[b] = (VkDescriptorSetLayoutBinding){.binding = b,
                                                   .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                   .descriptorCount = 1,
                                                   .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
        }
        VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                              .bindingCount = s->info.bindings,
                                              .pBindings = lb};
        if (!p->dsl && (r = g->api.vkCreateDescriptorSetLayout(g->dev, &li, NULL, &p->dsl)) != VK_SUCCESS) {
            return vk_fail(err, s->info.name, r);
        }
        VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = s->info.push_size};
        VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                          .setLayoutCount = 1,
                                          .pSetLayouts = &p->dsl,
                                          .pushConstantRangeCount = s->info.push_size ? 1 : 0,
                                          .pPushConstantRanges = &pr};
        if (!p->layout && (r = g->api.vkCreatePipelineLayout(g->dev, &pli, NULL, &p->layout)) != VK_SUCCESS) {
            return vk_fail(err, s->info.name, r);
        }
        VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                          .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                    .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                    .module = p->mod,
                                                    .pName = "main"},
                                          .layout = p->layout};
        r = g->api.vkCreateComputePipelines(g->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipe);
        if (r != VK_SUCCESS) {
            p->pipe = VK_NULL_HANDLE;
            return vk_fail(err, s->info.name, r);
        }
    }
    *out = p;
    return 0;
}

int oxl_gpu_dispatch(oxl_gpu *g, const char *shader, const oxl_gpu_bind *binds, int n_binds, const void *push,
                     size_t push_size, uint32_t gx, uint32_t gy, uint32_t gz, oxl_error *err) {
    const int i = shader ? shader_index(shader) : -1;
    if (i < 0) {
        return oxl_err_set(err, "Vulkan: shader '%s' is not in the shader list (generated/gpu)",
                           shader ? shader : "(null)");
    }
    const shader_row *s = &SHADERS[i];
    if (push_size != s->info.push_size) {
        return oxl_err_set(err, "Vulkan: shader %s takes %u bytes of push constants, given %zu", s->info.name,
                           s->info.push_size, push_size);
    }
    if (n_binds != (int)s->info.bindings || n_binds > MAX_BINDS) {
        return oxl_err_set(err, "Vulkan: shader %s takes %u buffers, given %d", s->info.name, s->info.bindings,
                           n_binds);
    }
    VkDescriptorBufferInfo bi[MAX_BINDS];
    for (int b = 0; b < n_binds; b++) {
        const oxl_gpu_bind *bd = &binds[b];
        if (!bd->buf || bd->off >= bd->buf->size || bd->size > bd->buf->size - bd->off) {
            return oxl_err_set(err, "Vulkan: shader %s binding %d: range %zu+%zu outside a buffer of %zu bytes",
                               s->info.name, b, bd->off, bd->size, bd->buf ? bd->buf->size : 0);
        }
        if (bd->off % g->bind_align) {
            return oxl_err_set(err, "Vulkan: shader %s binding %d: offset %zu is not a multiple of %zu", s->info.name,
                               b, bd->off, g->bind_align);
        }
        size_t range = bd->size ? bd->size : ((bd->buf->size + 15) & ~(size_t)15) - bd->off;
        if (range > g->max_range) {
            range = g->max_range;
        }
        bi[b] = (VkDescriptorBufferInfo){.buffer = bd->buf->buf, .offset = bd->off, .range = range};
    }
    if (gx == 0 || gy == 0 || gz == 0) {
        return 0;
    }
    pipe *p = NULL;
    if (get_pipe(g, i, &p, err) != 0) {
        return -1;
    }
    const bool immediate = !g->recording;
    if (g->sets_used == POOL_SETS && flush(g, err) != 0) {
        return -1;
    }
    if (open_cmd(g, err) != 0) {
        return -1;
    }
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = g->dpool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &p->dsl};
    VkDescriptorSet set;
    VkResult r = g->api.vkAllocateDescriptorSets(g->dev, &ai, &set);
    if (r != VK_SUCCESS) {
        return vk_fail(err, "vkAllocateDescriptorSets", r);
    }
    g->sets_used++;
    VkWriteDescriptorSet w[MAX_BINDS];
    for (int b = 0; b < n_binds; b++) {
        w[b] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = (uint32_t)b,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[b]};
    }
    g->api.vkUpdateDescriptorSets(g->dev, (uint32_t)n_binds, w, 0, NULL);
    g->api.vkCmdBindPipeline(g->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
    g->api.vkCmdBindDescriptorSets(g->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, NULL);
    if (push_size) {
        g->api.vkCmdPushConstants(g->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)push_size, push);
    }
    g->api.vkCmdDispatch(g->cmd, gx, gy, gz);
    atomic_fetch_add(&dispatch_counts[i], 1);
    barrier(g);
    return immediate ? flush(g, err) : 0;
}

void oxl_gpu_groups_1d(uint64_t n, uint32_t local, uint32_t *gx, uint32_t *gz) {
    uint64_t groups = (n + local - 1) / local;
    if (groups == 0) {
        *gx = 0;
        *gz = 1;
        return;
    }
    uint64_t z = (groups + 65534) / 65535;
    *gz = (uint32_t)z;
    *gx = (uint32_t)((groups + z - 1) / z);
}

int oxl_gpu_mul_mat(oxl_gpu *g, const char *shader, oxl_gpu_buf *w, oxl_gpu_buf *x, oxl_gpu_buf *y,
                    const oxl_gpu_mm_push *pc, oxl_error *err) {
    const oxl_gpu_shader_info *s = oxl_gpu_shader(shader);
    if (!s) {
        return oxl_err_set(err, "Vulkan: shader '%s' is not in the shader list (generated/gpu)", shader);
    }
    if (s->rows == 0 || s->cols == 0) {
        return oxl_err_set(err, "Vulkan: shader %s has no rows/columns per workgroup", shader);
    }
    const uint64_t row_groups = ((uint64_t)pc->nrows + s->rows - 1) / s->rows;
    const uint64_t col_groups = ((uint64_t)pc->ncols + s->cols - 1) / s->cols;
    if (col_groups > 65535) {
        return oxl_err_set(err, "Vulkan: %s: %u columns exceed 65535 column groups", shader, pc->ncols);
    }
    uint32_t gx, gz;
    oxl_gpu_groups_1d(row_groups, 1, &gx, &gz);
    oxl_gpu_bind b[3] = {{w, 0, 0}, {x, 0, 0}, {y, 0, 0}};
    return oxl_gpu_dispatch(g, shader, b, 3, pc, sizeof *pc, gx, (uint32_t)col_groups, gz, err);
}
