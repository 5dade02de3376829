/* The architecture lookup over the registry that arch/registry.c defines. */
#include "arch_iface.h"

#include <pthread.h>
#include <string.h>

const oxl_arch *oxl_arch_find(const char *name) {
    for (size_t i = 0; i < oxl_arch_registry_len; i++) {
        if (strcmp(oxl_arch_registry[i]->name, name) == 0) {
            return oxl_arch_registry[i];
        }
    }
    return NULL;
}

bool oxl_model_describe(const oxl_model *m, FILE *out) {
    if (!m->arch->describe) {
        return false;
    }
    m->arch->describe(m, out);
    return true;
}

static char arch_names[512];

static void build_arch_names(void) {
    for (size_t i = 0; i < oxl_arch_registry_len; i++) {
        strncat(arch_names, i ? ", " : "", sizeof arch_names - strlen(arch_names) - 1);
        strncat(arch_names, oxl_arch_registry[i]->name, sizeof arch_names - strlen(arch_names) - 1);
    }
}

const char *oxl_arch_names(void) {
    /* built once, so loads on several threads never write it together */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_arch_names);
    return arch_names;
}
