/* Prints the ISAs this CPU runs, as a CMake list ("scalar;sse41;..."), with the library's own
 * detection (src/kernels/cpu.c): tests/cli/cli_tests.cmake registers ISA-named tests for those only. */
#include "kernels.h"

#include <stdio.h>

int main(void) {
    for (int i = 0; i < OXL_ISA_COUNT; i++) {
        if (oxl_cpu_has_isa((oxl_isa)i)) {
            printf("%s%s", i ? ";" : "", oxl_isa_name((oxl_isa)i));
        }
    }
    return 0;
}
