/* The library's messages (include/oxillama.h, oxl_log_set): every text the library itself writes
 * goes through oxl_log_msg, to stderr or to the embedding program's callback. */
#ifndef OXL_LOG_H
#define OXL_LOG_H

#include "oxillama.h"

/* printf-style; the text should end with '\n'. Dropped when level is below oxl_log_set_level's. */
void oxl_log_msg(oxl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
