/* oxillama --version / oxillama version: the project version (oxl_version(): CMake project() VERSION), the git
 * commit the binary was built from (src/cli/version.cmake), the compiler, and the ISA the kernel
 * dispatcher uses on this CPU (capped by OXILLAMA_ISA). */
#include "cli.h"
#include "kernels.h"
#include "oxl_git_commit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__)
#define OXL_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define OXL_COMPILER "gcc " __VERSION__
#else
#define OXL_COMPILER "unknown"
#endif

int oxl_cmd_version(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: oxillama version   (or oxillama --version)\n\n"
                   "Prints the version, the git commit of the build, the compiler and the ISA the kernels\n"
                   "use on this CPU (OXILLAMA_ISA caps it).\n");
            return 0;
        }
        fprintf(stderr, "error: unexpected argument '%s' (oxillama version takes none)\n", argv[i]);
        return 1;
    }
    const char *env = getenv("OXILLAMA_ISA");
    printf("oxillama %s\n", oxl_version());
    printf("commit: %s\n", OXL_GIT_COMMIT);
    printf("compiler: %s\n", OXL_COMPILER);
    printf("isa: %s%s%s%s\n", oxl_isa_name(oxl_isa_cap()), env && *env ? " (OXILLAMA_ISA=" : "", env && *env ? env : "",
           env && *env ? ")" : "");
    return 0;
}
