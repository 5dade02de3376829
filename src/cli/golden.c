/* oxillama golden: parity with llama.cpp's reference files (golden/README.md). One line per check;
 * exit status 1 when any check fails or a file cannot be checked. */
#include "args.h"
#include "cli.h"
#include "golden.h"
#include "kernels.h"

#include <stdio.h>

int oxl_cmd_golden(int argc, char **argv) {
    oxl_opts o;
    if (oxl_opts_parse(&o, OXL_VERB_GOLDEN | OXL_OPTS_POSITIONAL, argc, argv) != 0) {
        return 1;
    }
    if (o.help || o.n_positional == 0) {
        oxl_opts_usage("golden", OXL_VERB_GOLDEN, "[-m MODEL] FILE...");
        return o.help ? 0 : 1;
    }
    oxl_golden_set_gpu(o.device_none ? 0 : o.n_gpu_layers, o.main_gpu);
    oxl_golden_report r = {.out = stdout};
    int n_errors = 0;
    printf("# ISA cap: %s\n", oxl_isa_name(oxl_isa_cap()));
    for (int i = 0; i < o.n_positional; i++) {
        printf("# %s\n", o.positional[i]);
        oxl_error err = {0};
        if (oxl_golden_run_file(o.positional[i], o.model, &r, &err) != 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            n_errors++;
        }
    }
    printf("# %d passed, %d failed, %d files not checkable\n", r.n_pass, r.n_fail, n_errors);
    return r.n_fail == 0 && n_errors == 0 ? 0 : 1;
}
