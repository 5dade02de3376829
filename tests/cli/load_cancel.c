/* A load cancelled by the progress callback (oxl_model_params.progress_callback) frees everything:
 * run under valgrind by tests/cli/api21_tests.cmake, which fails on any definite or indirect leak.
 * Cancels at the first value >= 0.5 and at 1.0 (after repacking, so the repacked copies must be
 * freed too), with mmap and with --no-mmap; then the file must no longer be mapped.
 * usage: load_cancel MODEL; exit status 0 when every load was cancelled as documented. */
#include "oxillama.h"

#include <stdio.h>
#include <string.h>

static bool cancel_from(float progress, void *user) { return progress < *(const float *)user; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: load_cancel MODEL\n");
        return 2;
    }
    int bad = 0;
    const float at[] = {0.5f, 1.0f};
    for (int mmap_mode = 0; mmap_mode < 2; mmap_mode++) {
        for (int i = 0; i < 2; i++) {
            oxl_error err = {{0}};
            oxl_model_params mp = oxl_model_default_params();
            mp.use_mmap = mmap_mode;
            mp.repack = true;
            mp.progress_callback = cancel_from;
            mp.progress_callback_user_data = (void *)&at[i];
            oxl_model *m = oxl_model_load(argv[1], &mp, &err);
            if (m || !strstr(err.msg, "load cancelled by the progress callback")) {
                printf("FAIL  mmap %d, cancel at %g: %s\n", mmap_mode, (double)at[i], m ? "loaded" : err.msg);
                oxl_model_free(m);
                bad = 1;
            }
        }
    }
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096];
    while (maps && fgets(line, sizeof line, maps)) {
        if (strstr(line, argv[1])) {
            printf("FAIL  still mapped: %s", line);
            bad = 1;
        }
    }
    if (maps) {
        fclose(maps);
    }
    if (!bad) {
        printf("PASS  4 cancelled loads\n");
    }
    return bad;
}
