/* Force-included into every wasm32-wasi translation unit (cmake/wasm32-wasi.cmake). WASI preview 1
 * runs one thread (cmake/wasi/pthread.h), but wasi-libc's sysconf reports the host's processors;
 * the thread pool sizes itself from that count (src/core/pool.c), so here it is 1. */
#ifndef OXL_WASI_SYSCONF_H
#define OXL_WASI_SYSCONF_H

#include <unistd.h>

static inline long oxl_wasi_sysconf(int name) {
    return name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF ? 1 : sysconf(name);
}
#define sysconf(name) oxl_wasi_sysconf(name)

#endif
