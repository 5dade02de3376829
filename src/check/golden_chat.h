/* The chat-template golden checker (golden_chat.c; src/check/subset_chat.c in the OXL_SUBSET build). */
#ifndef OXL_GOLDEN_CHAT_H
#define OXL_GOLDEN_CHAT_H

#include "errors.h"
#include "golden_report.h"

/* Chat templates (golden/README.md "chat-templates"): renders every <model>/template.jinja of dir
 * with every conversation of dir/cases.json and compares with <model>/<case>.txt or .error. */
int oxl_golden_chat_dir(const char *dir, oxl_golden_report *r, oxl_error *err);

#endif
