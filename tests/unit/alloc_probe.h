/* Heap-request probe for tests: the test binary is linked with -Wl,--wrap=malloc,calloc,realloc
 * (tests/CMakeLists.txt), so every such call made by the library or the tests passes through
 * tests/unit/alloc_probe.c, which records the largest single request. Criterion runs each test in its own
 * process, so the record is per test. Works unchanged under AddressSanitizer (the wrapped calls go on
 * to its allocator), unlike an address-space limit. */
#ifndef OXL_ALLOC_PROBE_H
#define OXL_ALLOC_PROBE_H

#include <stddef.h>

/* Forgets the requests seen so far. */
void oxl_probe_reset(void);
/* Bytes of the largest single malloc/calloc/realloc request since the last reset (a calloc whose
 * count × size overflows counts as SIZE_MAX). */
size_t oxl_probe_largest(void);

#endif
