/* UTF-8 decoding and encoding as llama.cpp's unicode.cpp does them (the tokenizers, detokenizing). */
#include "utf8.h"

bool oxl_utf8_decode(const char *s, size_t n, size_t *off, uint32_t *cpt) {
    const unsigned char *u = (const unsigned char *)s + *off;
    size_t left = n - *off;
    if (!(u[0] & 0x80)) {
        *cpt = u[0];
        *off += 1;
        return true;
    }
    size_t len = !(u[0] & 0x40) ? 0 : !(u[0] & 0x20) ? 2 : !(u[0] & 0x10) ? 3 : !(u[0] & 0x08) ? 4 : 0;
    if (len == 0 || len > left)
        return false;
    uint32_t c = u[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80)
            return false;
        c = (c << 6) | (u[i] & 0x3F);
    }
    *cpt = c;
    *off += len;
    return true;
}

size_t oxl_utf8_encode(uint32_t c, char *o) {
    if (c <= 0x7F) {
        o[0] = (char)c;
        return 1;
    }
    if (c <= 0x7FF) {
        o[0] = (char)(0xC0 | (c >> 6)), o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c <= 0xFFFF) {
        o[0] = (char)(0xE0 | (c >> 12)), o[1] = (char)(0x80 | ((c >> 6) & 0x3F)), o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    if (c <= 0x10FFFF) {
        o[0] = (char)(0xF0 | (c >> 18)), o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((c >> 6) & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
        return 4;
    }
    return 0;
}
