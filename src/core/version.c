#include "oxillama.h"

/* OXL_VERSION: the project's version, given by CMakeLists.txt (project(... VERSION)). */
const char *oxl_version(void) { return OXL_VERSION; }
