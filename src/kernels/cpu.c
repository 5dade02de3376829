/* CPU feature detection and the ISA cap (OXILLAMA_ISA).
 *
 * x86: CPUID bits, plus XGETBV's XCR0 to see that the OS saves the YMM/ZMM registers (a CPU with
 * AVX2 under an OS that does not enable its state must not run AVX2 code). The features each ISA
 * needs come from the generated spec table (oxl_isa_infos, oxl_cpu_features.inc).
 * Linux on AArch64 and RISC-V: bits of getauxval(AT_HWCAP) (asimd, asimddp; the V extension).
 * WebAssembly: SIMD128 is a build-time choice (__wasm_simd128__), there is nothing to ask at run time.
 * Each architecture's block defines the feature macros it uses; the others expand to nothing, so
 * a feature of another architecture is never set.
 */
#include "kernels.h"

#include "errors.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OXL_CPU_FEATURE_CPUID(bit, leaf, subleaf, reg, regbit)
#define OXL_CPU_FEATURE_XCR0(bit, mask)
#define OXL_CPU_FEATURE_HWCAP_ARM64(bit, hwcapbit)
#define OXL_CPU_FEATURE_HWCAP_RISCV64(bit, hwcapbit)
#define OXL_CPU_FEATURE_BUILD_WASM32(bit)

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t oxl_xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static uint32_t oxl_cpu_detect(void) {
    uint32_t features = 0;
    const unsigned max_leaf = __get_cpuid_max(0, NULL);
    unsigned regs[4] = {0};
    bool osxsave = __get_cpuid(1, &regs[0], &regs[1], &regs[2], &regs[3]) && (regs[2] & (1u << 27));
    const uint64_t xcr0 = osxsave ? oxl_xgetbv0() : 0;
#define OXL_REG_eax 0
#define OXL_REG_ebx 1
#define OXL_REG_ecx 2
#define OXL_REG_edx 3
#undef OXL_CPU_FEATURE_CPUID
#undef OXL_CPU_FEATURE_XCR0
#define OXL_CPU_FEATURE_CPUID(bit, leaf, subleaf, reg, regbit)                                                         \
    if ((leaf) <= max_leaf) {                                                                                          \
        unsigned r[4];                                                                                                 \
        __cpuid_count((leaf), (subleaf), r[0], r[1], r[2], r[3]);                                                      \
        if (r[OXL_REG_##reg] & (1u << (regbit))) {                                                                     \
            features |= (bit);                                                                                         \
        }                                                                                                              \
    }
#define OXL_CPU_FEATURE_XCR0(bit, mask)                                                                                \
    if ((xcr0 & (mask)) == (mask)) {                                                                                   \
        features |= (bit);                                                                                             \
    }
#include "oxl_cpu_features.inc"
    return features;
}
#elif (defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64)) && defined(__linux__)
#include <sys/auxv.h>

static uint32_t oxl_cpu_detect(void) {
    uint32_t features = 0;
    const unsigned long hwcap = getauxval(AT_HWCAP);
#if defined(__aarch64__)
#undef OXL_CPU_FEATURE_HWCAP_ARM64
#define OXL_CPU_FEATURE_HWCAP_ARM64(bit, hwcapbit)                                                                     \
    if (hwcap & (1ul << (hwcapbit))) {                                                                                 \
        features |= (bit);                                                                                             \
    }
#else
#undef OXL_CPU_FEATURE_HWCAP_RISCV64
#define OXL_CPU_FEATURE_HWCAP_RISCV64(bit, hwcapbit)                                                                   \
    if (hwcap & (1ul << (hwcapbit))) {                                                                                 \
        features |= (bit);                                                                                             \
    }
#endif
#include "oxl_cpu_features.inc"
    return features;
}
#elif defined(__wasm__)
static uint32_t oxl_cpu_detect(void) {
    uint32_t features = 0;
#if defined(__wasm_simd128__)
#undef OXL_CPU_FEATURE_BUILD_WASM32
#define OXL_CPU_FEATURE_BUILD_WASM32(bit) features |= (bit);
#endif
#include "oxl_cpu_features.inc"
    return features;
}
#else
static uint32_t oxl_cpu_detect(void) { return 0; }
#endif

static pthread_once_t oxl_cpu_once = PTHREAD_ONCE_INIT;
static uint32_t oxl_cpu_features;
static oxl_isa oxl_cpu_cap;
static char oxl_cpu_env_error[OXL_ERROR_MSG_MAX]; /* why OXILLAMA_ISA cannot be honoured; "" when it can */

static bool oxl_cpu_supports(int isa) {
    return (oxl_cpu_features & oxl_isa_infos[isa].features) == oxl_isa_infos[isa].features;
}

static oxl_isa oxl_cpu_best_isa(void) {
    oxl_isa best = OXL_ISA_SCALAR;
    for (int i = 0; i < OXL_ISA_COUNT; i++) {
        if (oxl_cpu_supports(i)) {
            best = (oxl_isa)i;
        }
    }
    return best;
}

/* Appends the names of the ISAs that satisfy want (every one, or the CPU's) to buf. */
static void oxl_cpu_list_isas(char *buf, size_t cap, bool only_supported) {
    size_t len = strlen(buf);
    bool first = true;
    for (int i = 0; i < OXL_ISA_COUNT && len < cap; i++) {
        if (only_supported && !oxl_cpu_supports(i)) {
            continue;
        }
        int w = snprintf(buf + len, cap - len, "%s%s", first ? "" : ", ", oxl_isa_infos[i].name);
        len = w < 0 ? cap : len + (size_t)w;
        first = false;
    }
}

static void oxl_cpu_init(void) {
    oxl_cpu_features = oxl_cpu_detect();
    oxl_cpu_cap = oxl_cpu_best_isa();
    const char *env = getenv("OXILLAMA_ISA");
    if (env == NULL || env[0] == '\0') {
        return;
    }
    const size_t cap = sizeof oxl_cpu_env_error;
    const int isa = oxl_isa_from_name(env);
    if (isa < 0) {
        snprintf(oxl_cpu_env_error, cap, "OXILLAMA_ISA=%.32s is not an ISA (one of: ", env);
        oxl_cpu_list_isas(oxl_cpu_env_error, cap - 1, false);
        strncat(oxl_cpu_env_error, ")", cap - strlen(oxl_cpu_env_error) - 1);
    } else if (!oxl_cpu_supports(isa)) {
        snprintf(oxl_cpu_env_error, cap, "OXILLAMA_ISA=%s: this CPU cannot run %s (it runs: ", oxl_isa_infos[isa].name,
                 oxl_isa_infos[isa].name);
        oxl_cpu_list_isas(oxl_cpu_env_error, cap - 1, true);
        strncat(oxl_cpu_env_error, ")", cap - strlen(oxl_cpu_env_error) - 1);
    } else {
        oxl_cpu_cap = (oxl_isa)isa;
    }
}

int oxl_isa_env_check(struct oxl_error *err) {
    pthread_once(&oxl_cpu_once, oxl_cpu_init);
    if (oxl_cpu_env_error[0] == '\0') {
        return 0;
    }
    return oxl_err_set(err, "%s", oxl_cpu_env_error);
}

bool oxl_cpu_has_isa(oxl_isa isa) {
    if ((unsigned)isa >= OXL_ISA_COUNT) {
        return false;
    }
    pthread_once(&oxl_cpu_once, oxl_cpu_init);
    return oxl_cpu_supports(isa);
}

oxl_isa oxl_isa_cap(void) {
    pthread_once(&oxl_cpu_once, oxl_cpu_init);
    return oxl_cpu_cap;
}

const char *oxl_isa_name(oxl_isa isa) { return (unsigned)isa < OXL_ISA_COUNT ? oxl_isa_infos[isa].name : "unknown"; }

int oxl_isa_from_name(const char *name) {
    for (int i = 0; i < OXL_ISA_COUNT; i++) {
        if (strcasecmp(oxl_isa_infos[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}
