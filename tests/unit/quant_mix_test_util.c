#include "quant_mix_test_util.h"

#include <string.h>

oxl_type quant_target_of(const oxl_quant_tensor *t, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].name, name) == 0) {
            return t[i].target;
        }
    }
    return OXL_TYPE_COUNT;
}

const oxl_ftype_mix *quant_ftype_row(const char *name) {
    for (size_t i = 0; i < OXL_FTYPE_COUNT; i++) {
        if (strcmp(oxl_ftype_infos[i].name, name) == 0) {
            return &oxl_ftype_infos[i];
        }
    }
    return NULL;
}
