/* UTF-8 code points (llama.cpp's unicode.cpp conventions). */
#ifndef OXL_UTF8_H
#define OXL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the UTF-8 sequence its lead byte announces, as llama.cpp's unicode_len_utf8: 1 for ASCII
 * and stray continuation bytes, 2/3/4 by the high nibble. */
static inline size_t oxl_utf8_len(unsigned char c) {
    static const uint8_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[c >> 4];
}

/* Decodes one code point at s[*off] (off < n) the way llama.cpp's unicode_cpt_from_utf8 does
 * (overlong forms and surrogates are accepted, lead bytes 0xF8.. are not); returns false for an
 * invalid sequence, leaving *off unchanged. */
bool oxl_utf8_decode(const char *s, size_t n, size_t *off, uint32_t *cpt);

/* Writes cpt as UTF-8 to out (room for 4 bytes); returns the number of bytes, 0 when cpt > 0x10FFFF. */
size_t oxl_utf8_encode(uint32_t cpt, char *out);

#endif
