/* BPE pre-tokenizers: the table of tokenizer.ggml.pre values with their regexes and flags, and the
 * regex split (behaviour of llama.cpp src/llama-vocab.cpp llm_tokenizer_bpe and src/unicode.cpp
 * unicode_regex_split).
 *
 * How llama.cpp matches, and how this file gets the same splits with PCRE2 (32-bit code units, so
 * that match offsets are code point offsets):
 * - A regex naming a Unicode category (\p{L}, \p{N}, \p{P}, \p{M}, \p{S}, \p{Lu}…) runs on the
 *   "collapsed" text: ASCII stays itself, every other code point becomes one unit standing for its
 *   category (0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 anything
 *   else, 0x0B whitespace), and \p{X} becomes the class of that unit plus the ASCII members
 *   llama.cpp lists (its ASCII symbol list lacks '~'; all letter subcategories are one letter
 *   class). llama.cpp's hand-written splitters for the GPT-2, Llama 3, Qwen2 and Qwen3.5 regexes
 *   give the same splits as this, so those regexes need no special code here.
 * - A regex without categories runs on the code points themselves, non-ASCII whitespace turned into
 *   0x0B so that \s (ASCII only, as std::regex) matches it.
 * - Matching is ECMAScript-like: $ only at the very end, no lookbehind into the previous piece
 *   (each piece is matched on its own), an empty match moves on by one code point.
 * - "[^\n]+|[\n]+" and the AFMoE / Tiny Aya digit grouping are llama.cpp's custom splitters and
 *   are reproduced in C below; so are SuperBPE's "(?=(\d{3})+(?!\d))" and DeepSeek's "\s+$", whose
 *   regexes take quadratic time on long digit or space runs. Kimi-K2 (custom code in llama.cpp) is
 *   written as a collapsed regex with Han ideographs as a category of their own (unit 0xD6).
 * - Categories come from utf8proc (its Unicode version may differ from llama.cpp's tables for code
 *   points assigned recently).
 * tests/unit/test_tokenizer_models.c checks every pre-tokenizer type against llama.cpp's own splits
 * (golden/tokenizer/pretokenize.*). Each match is bounded by PCRE2's match and heap limits; a piece
 * whose match hits a limit keeps the text as an unmatched gap instead of running unbounded. */
#define PCRE2_CODE_UNIT_WIDTH 32
#include "vocab_internal.h"

#include "errors.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

// --- code point categories ------------------------------------------------------------------------

unsigned oxl_cpt_flags(uint32_t cpt) {
    if (cpt > 0x10FFFF)
        return 0;
    unsigned f;
    switch (utf8proc_category((utf8proc_int32_t)cpt)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: f = OXL_CPT_LETTER; break;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME: f = OXL_CPT_MARK; break;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO: f = OXL_CPT_NUMBER; break;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: f = OXL_CPT_PUNCTUATION; break;
    case UTF8PROC_CATEGORY_SM:
    case UTF8PROC_CATEGORY_SC:
    case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO: f = OXL_CPT_SYMBOL; break;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP: f = OXL_CPT_SEPARATOR; break;
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: f = OXL_CPT_CONTROL; break;
    default: f = OXL_CPT_UNDEFINED; break;
    }
    /* llama.cpp's White_Space list */
    if ((cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20 || cpt == 0x85 || cpt == 0xA0 || cpt == 0x1680 ||
        (cpt >= 0x2000 && cpt <= 0x200A) || cpt == 0x2028 || cpt == 0x2029 || cpt == 0x202F || cpt == 0x205F ||
        cpt == 0x3000)
        f |= OXL_CPT_WHITESPACE;
    return f;
}

// --- GPT-2 byte encoding -----------------------------------------------------------------------------

/* bytes_to_unicode: printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves,
 * the others, in byte order, for 256, 257, … */
static bool byte_is_printable(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

uint32_t oxl_byte_to_cpt(uint8_t b) {
    if (byte_is_printable(b))
        return b;
    uint32_t n = 0;
    for (unsigned c = 0; c < b; c++)
        n += !byte_is_printable(c);
    return 256 + n;
}

int oxl_cpt_to_byte(uint32_t cpt) {
    if (cpt < 256)
        return byte_is_printable(cpt) ? (int)cpt : -1;
    uint32_t n = 0;
    for (unsigned b = 0; b < 256; b++)
        if (!byte_is_printable(b) && 256 + n++ == cpt)
            return (int)b;
    return -1;
}

// --- the table -----------------------------------------------------------------------------------------

/* Special splitters llama.cpp implements by hand (unicode_regex_split_custom). */
enum { SPLIT_REGEX, SPLIT_NEWLINES, SPLIT_DIGITS3, SPLIT_THOUSANDS, SPLIT_TRAILING_SPACE };

/* The regexes (tokenizer.json's, with "(?i:'s|…)" spelled out case by case as llama.cpp does). */
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
/* (clang-format 14 alternates between two layouts of this one) */
// clang-format off
#define RX_LLAMA3 \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
// clang-format on
#define RX_QWEN2                                                                                                       \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_CASED_WORDS(MARKS, TAIL)                                                                                    \
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}" MARKS "])([^a-z]))*((?=[\\p{L}" MARKS "])([^A-Z]))+" TAIL                      \
    "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}" MARKS "])([^a-z]))+((?=[\\p{L}" MARKS "])([^A-Z]))*" TAIL
/* DeepSeek-V3 spells CR and LF as raw characters, AFMoE as escapes */
#define RX_CJK_PUNCT(CR, LF)                                                                                           \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^" CR LF "\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"             \
    "| ?[\\p{P}\\p{S}]+[" CR LF "]*|\\s*[" CR LF "]+|\\s+(?!\\S)|\\s+"
#define RX_SUBJ_CASED                                                                                                  \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" CONTRACTIONS "?"       \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" CONTRACTIONS "?"
#define RX_FINNISH " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+"
#define RX_NEWLINES "[^\\n]+|[\\n]+"
#define RX_THOUSANDS "(?=(\\d{3})+(?!\\d))"

typedef struct {
    const char *names; /* tokenizer.ggml.pre values, '|'-separated ("" is the default) */
    unsigned flags;    /* OXL_PRE_* */
    const char *rx[7]; /* NULL-terminated */
} pre_def;

static const pre_def k_pre[] = {
    {"|default", 0, {"[\\p{P}\\$\\+<=>\\^~\\|]+", RX_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL}},
    {"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano",
     OXL_PRE_IGNORE_MERGES | OXL_PRE_ADD_BOS,
     {RX_LLAMA3, NULL}},
    {"dbrx|smaug-bpe", 0, {RX_LLAMA3, NULL}},
    {"glm4|chatglm-bpe", OXL_PRE_NO_BOS, {RX_LLAMA3, NULL}},
    {"jais-2",
     0,
     {CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
                   "|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)"
                   "|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
      NULL}},
    {"deepseek-llm",
     OXL_PRE_KEEP_SPACES,
     {"[\r\n]",
      "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf\xc7\x84-\xca\x93"
      "\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf\xce\x86\xce\x88-\xce\x8a\xce\x8c"
      "\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-\xd2\x81\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85"
      "\xe1\x8e\xa0-\xe1\x8f\xb5\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf"
      "\xe1\xb4\x80-\xe1\xb4\xab\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-\xe1\xbc\x95"
      "\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd\x90-\xe1\xbd\x97"
      "\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe\x80-\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc"
      "\xe1\xbe\xbe\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b"
      "\xe1\xbf\xa0-\xe1\xbf\xac\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87"
      "\xe2\x84\x8a-\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4\xe2\x84\xa6\xe2\x84\xa8"
      "\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84\xbf\xe2\x85\x85-\xe2\x85\x89"
      "\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1\xbb\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae"
      "\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf"
      "\xea\x9d\xb1-\xea\x9e\x87\xea\x9e\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86"
      "\xef\xac\x93-\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91\x8f"
      "\xf0\x90\x92\xb0-\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90\xb2\x80-\xf0\x90\xb2\xb2"
      "\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-\xf0\x91\xa3\x9f\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+",
      "\\s?[!-/"
      ":-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f\xe3\x80\x80-\xe3\x80\x82]+",
      "\\s+$", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+", "\\p{N}+", NULL}},
    {"deepseek-coder",
     OXL_PRE_KEEP_SPACES,
     {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
      "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+", "\\p{N}", NULL}},
    {"deepseek-v3|hunyuan-dense|joyai-llm",
     OXL_PRE_KEEP_SPACES,
     {"\\p{N}{1,3}", "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
      RX_CJK_PUNCT("\r", "\n"), NULL}},
    {"youtu",
     OXL_PRE_KEEP_SPACES | OXL_PRE_IGNORE_MERGES,
     {"[\xea\xb0\x80-\xed\x9e\xa3\xe3\x84\xb1-\xe3\x86\x8e]+|["
      "\xef\xbc\x81\xe2\x80\xa6\xe2\x80\x9c\xe2\x80\x9d\xe2\x80\x98"
      "\xe2\x80\x99\xe2\x80\x94\xef\xbc\x9a\xef\xbc\x9b\xef\xbc\x8c\xe3\x80\x81-\xe3\x80\xbf\xef\xb8\xb0-\xef\xb9\x8f]+"
      "|[\xe3\x84\x85-\xe3\x84\xaf]+|[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+",
      RX_SUBJ_CASED "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", NULL}},
    {"falcon", 0, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RX_GPT2, "[0-9][0-9][0-9]", NULL}},
    {"starcoder|refact|codeshell|exaone|minerva-7b|mellum2", 0, {"\\p{N}", RX_GPT2, NULL}},
    {"command-r|smollm", OXL_PRE_KEEP_SPACES, {"\\p{N}", RX_GPT2, NULL}},
    {"mpt|gpt-2|phi-2|jina-es|jina-de|gigachat|jina-v2-es|jina-v2-de|a.x-4.0|mellum|modern-bert|olmo|jais|exaone4",
     0,
     {RX_GPT2, NULL}},
    {"jina-v1-en|jina-v2-code|roberta-bpe", OXL_PRE_ADD_SEP, {RX_GPT2, NULL}},
    {"trillion|granite-docling", OXL_PRE_KEEP_SPACES, {RX_GPT2, NULL}},
    {"stablelm2|megrez", 0, {RX_QWEN2, NULL}},
    {"qwen2|deepseek-r1-qwen|kormo|f2llmv2", OXL_PRE_KEEP_SPACES, {RX_QWEN2, NULL}},
    {"hunyuan|solar-open|grok-2", OXL_PRE_KEEP_SPACES, {RX_QWEN2, NULL}},
    {"qwen35",
     OXL_PRE_KEEP_SPACES,
     {CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+"
                   "|\\s+(?!\\S)|\\s+",
      NULL}},
    {"poro-chat", OXL_PRE_KEEP_SPACES, {RX_FINNISH, NULL}},
    {"bloom|gpt3-finnish", 0, {RX_FINNISH, NULL}},
    {"viking", OXL_PRE_KEEP_SPACES, {RX_FINNISH, "\\p{N}", NULL}},
    {"tekken",
     OXL_PRE_KEEP_SPACES | OXL_PRE_IGNORE_MERGES | OXL_PRE_ADD_BOS,
     {RX_CASED_WORDS("", "") "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", NULL}},
    {"chameleon",
     OXL_PRE_KEEP_SPACES | OXL_PRE_ADD_BOS,
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]", RX_GPT2, NULL}},
    {"gpt-4o|llama4|kanana2|talkie|minimax-m2",
     OXL_PRE_KEEP_SPACES,
     {RX_CASED_WORDS("",
                     CONTRACTIONS "?") "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL}},
    {"granite-embed-multi-97m",
     OXL_PRE_KEEP_SPACES | OXL_PRE_IGNORE_MERGES,
     {RX_CASED_WORDS("\\p{M}", CONTRACTIONS "?") "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+"
                                                 "|\\s+(?!\\S)|\\s+",
      NULL}},
    {"tiny_aya|cohere2moe",
     OXL_PRE_KEEP_SPACES,
     {"\\d{1,3}(?=(?:\\d{3})*\\b)",
      RX_SUBJ_CASED "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", NULL}},
    {"superbpe", OXL_PRE_KEEP_SPACES, {"\\p{N}+", RX_THOUSANDS, NULL}},
    {"bailingmoe|bailingmoe2|llada-moe",
     OXL_PRE_KEEP_SPACES,
     {"'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
      "|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
      NULL}},
    {"seed-coder",
     OXL_PRE_KEEP_SPACES,
     {CONTRACTIONS
      "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL}},
    {"afmoe",
     OXL_PRE_KEEP_SPACES,
     {"\\p{AFMoE_digits}",
      "[\xe4\xb8\x80-\xe9\xbf\xbf\xe3\x90\x80-\xe4\xb6\xbf\xe8\xb1\x88-\xef\xab\xbf\xe3\x81\x80-\xe3\x82\x9f"
      "\xe3\x82\xa0-\xe3\x83\xbf\xef\xbd\xa5-\xef\xbe\x9f\xe2\xbc\x80-\xe2\xbf\x9f\xe0\xb9\x80-\xe0\xb9\xbf"
      "\xe0\xba\x80-\xe0\xbb\xbf\xe1\x9e\x80-\xe1\x9f\xbf\xe1\x80\x80-\xe1\x82\x9f\xea\xa9\xa0-\xea\xa9\xbf"
      "\xea\xa7\xa0-\xea\xa7\xbf\xea\xb0\x80-\xed\x9e\xaf\xe1\x84\x80-\xe1\x87\xbf]+",
      RX_CJK_PUNCT("\\r", "\\n"), NULL}},
    {"laguna", OXL_PRE_KEEP_SPACES, {RX_NEWLINES, RX_QWEN2, NULL}},
    {"exaone-moe",
     0,
     {CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?"
                   "|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
      NULL}},
    {"gemma4|granite-embed-multi-311m",
     OXL_PRE_ESCAPE_WS | OXL_PRE_RAW_UTF8 | OXL_PRE_NEWLINE_WORDS,
     {RX_NEWLINES, NULL}},
    {"sarvam-moe", OXL_PRE_ESCAPE_WS | OXL_PRE_RAW_UTF8 | OXL_PRE_KEEP_SPACES, {RX_NEWLINES, NULL}},
    {"minicpm5",
     OXL_PRE_IGNORE_MERGES,
     {"\\p{N}{1,3}",
      CONTRACTIONS
      "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL}},
    {"whitespace", OXL_PRE_RAW_UTF8 | OXL_PRE_KEEP_CASE, {"\\S+", NULL}},
    /* Kimi-K2 (llama.cpp splits it by hand): Han runs, then Llama 3's rules with Han kept out of the
     * letters and of the other classes; \p{Han} is this file's own collapsed unit 0xD6 */
    {"kimi-k2",
     OXL_PRE_KEEP_SPACES | OXL_PRE_NO_MERGES_OK,
     {"\\p{Han}+|[^\\r\\n\\p{L}\\p{N}\\p{Han}]?\\p{L}+" CONTRACTIONS
      "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}\\p{Han}]+[\\r\\n]*"
      "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
      NULL}},
};

// --- compiled pre-tokenizer -------------------------------------------------------------------------------

typedef struct {
    int kind;         /* SPLIT_* */
    bool collapsed;   /* runs on the collapsed text */
    bool han;         /* Han ideographs collapse to their own unit (\p{Han}) */
    pcre2_code *code; /* SPLIT_REGEX */
} split_rx;

struct oxl_pretok {
    split_rx rx[7];
    int n_rx;
    bool need_collapse;
    pcre2_match_context *mctx;
};

void oxl_pretok_free(oxl_pretok *p) {
    if (!p)
        return;
    for (int i = 0; i < p->n_rx; i++)
        pcre2_code_free(p->rx[i].code);
    pcre2_match_context_free(p->mctx);
    free(p);
}

/* The collapsed-text unit and ASCII members of each category llama.cpp recognises. */
static const struct {
    const char *name;
    uint32_t unit;
    const char *ascii;
} k_ucat[] = {
    {"\\p{N}", 0xD1, "0-9"},
    {"\\p{L}", 0xD2, "A-Za-z"},
    {"\\p{P}", 0xD3, "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", 0xD4, ""},
    {"\\p{S}", 0xD5, "\\$\\+<->\\^`\\|"},
    {"\\p{Lu}", 0xD2, "A-Za-z"},
    {"\\p{Ll}", 0xD2, "A-Za-z"},
    {"\\p{Lt}", 0xD2, "A-Za-z"},
    {"\\p{Lm}", 0xD2, "A-Za-z"},
    {"\\p{Lo}", 0xD2, "A-Za-z"},
    {"\\p{Han}", 0xD6, ""},
};
#define N_UCAT (sizeof k_ucat / sizeof *k_ucat)

/* Han ideographs (llama.cpp's unicode_cpt_is_han): CJK Unified Ideographs and Extensions A-F, and
 * the Compatibility Ideographs. */
static bool is_han(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0x2CEB0 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static bool names_category(const char *rx) {
    for (size_t k = 0; k < N_UCAT; k++)
        if (strstr(rx, k_ucat[k].name))
            return true;
    return false;
}

/* Appends c to a growing pattern; false when it does not fit. */
static bool pat_put(PCRE2_UCHAR *pat, size_t cap, size_t *n, uint32_t c) {
    if (*n + 1 >= cap)
        return false;
    pat[(*n)++] = c;
    return true;
}

/* The collapsed form of rx (llama.cpp's translation: \p{X} becomes [unit + ASCII members], without
 * the brackets inside a class). */
static bool collapse_pattern(const char *rx, PCRE2_UCHAR *pat, size_t cap, size_t *n) {
    bool inside = false;
    size_t len = strlen(rx);
    for (size_t i = 0; i < len; i++) {
        if (rx[i] == '[' && (i == 0 || rx[i - 1] != '\\')) {
            inside = true;
        } else if (inside && rx[i] == ']' && rx[i - 1] != '\\') {
            inside = false;
        } else if (rx[i] == '\\' && i + 3 < len && rx[i + 1] == 'p' && rx[i + 2] == '{') {
            const char *close = strchr(rx + i + 3, '}');
            size_t k = 0;
            for (; close && (size_t)(close - rx) <= i + 10 && k < N_UCAT; k++)
                if (strlen(k_ucat[k].name) == (size_t)(close - rx) - i + 1 &&
                    memcmp(k_ucat[k].name, rx + i, strlen(k_ucat[k].name)) == 0)
                    break;
            if (close && (size_t)(close - rx) <= i + 10 && k < N_UCAT) {
                if (!inside && !pat_put(pat, cap, n, '['))
                    return false;
                if (!pat_put(pat, cap, n, k_ucat[k].unit))
                    return false;
                for (const char *a = k_ucat[k].ascii; *a; a++)
                    if (!pat_put(pat, cap, n, (unsigned char)*a))
                        return false;
                if (!inside && !pat_put(pat, cap, n, ']'))
                    return false;
                i = (size_t)(close - rx);
                continue;
            }
        }
        if (!pat_put(pat, cap, n, (unsigned char)rx[i]))
            return false;
    }
    return true;
}

/* rx as code points (the regexes without categories may hold non-ASCII literals). */
static bool wide_pattern(const char *rx, PCRE2_UCHAR *pat, size_t cap, size_t *n) {
    size_t len = strlen(rx);
    for (size_t off = 0; off < len;) {
        uint32_t c;
        if (!oxl_utf8_decode(rx, len, &off, &c) || !pat_put(pat, cap, n, c))
            return false;
    }
    return true;
}

/* Finds name in the table: its row, or NULL. */
static const pre_def *find_pre(const char *name) {
    size_t nl = strlen(name);
    for (size_t r = 0; r < sizeof k_pre / sizeof *k_pre; r++) {
        const char *s = k_pre[r].names;
        for (;;) {
            const char *bar = strchr(s, '|');
            size_t l = bar ? (size_t)(bar - s) : strlen(s);
            if (l == nl && memcmp(s, name, nl) == 0)
                return &k_pre[r];
            if (!bar)
                break;
            s = bar + 1;
        }
    }
    return NULL;
}

oxl_pretok *oxl_pretok_new(const char *name, unsigned *flags, const char *path, oxl_error *err) {
    const pre_def *d = find_pre(name);
    if (!d) {
        oxl_err_set(err, "%s: tokenizer.ggml.pre = '%.64s' is not a pre-tokenizer llama.cpp knows", path, name);
        return NULL;
    }
    oxl_pretok *p = calloc(1, sizeof *p);
    if (!p || !(p->mctx = pcre2_match_context_create(NULL))) {
        free(p);
        oxl_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    pcre2_set_match_limit(p->mctx, 1000000);
    pcre2_set_heap_limit(p->mctx, 65536); /* KiB */
    *flags = d->flags;
    for (int i = 0; d->rx[i]; i++, p->n_rx++) {
        split_rx *s = &p->rx[i];
        const char *rx = d->rx[i];
        if (strcmp(rx, RX_NEWLINES) == 0) {
            s->kind = SPLIT_NEWLINES;
            continue;
        }
        if (strcmp(rx, RX_THOUSANDS) == 0) {
            s->kind = SPLIT_THOUSANDS;
            continue;
        }
        if (strcmp(rx, "\\s+$") == 0) {
            s->kind = SPLIT_TRAILING_SPACE;
            continue;
        }
        if (strcmp(rx, "\\p{AFMoE_digits}") == 0 || strcmp(rx, "\\d{1,3}(?=(?:\\d{3})*\\b)") == 0) {
            s->kind = SPLIT_DIGITS3;
            continue;
        }
        s->kind = SPLIT_REGEX;
        s->collapsed = names_category(rx);
        s->han = strstr(rx, "\\p{Han}") != NULL;
        p->need_collapse |= s->collapsed;
        PCRE2_UCHAR pat[4096];
        size_t n = 0;
        if (!(s->collapsed ? collapse_pattern(rx, pat, 4096, &n) : wide_pattern(rx, pat, 4096, &n))) {
            oxl_err_set(err, "%s: tokenizer.ggml.pre = '%s': regex %d is too long", path, name, i);
            oxl_pretok_free(p);
            return NULL;
        }
        int ecode;
        PCRE2_SIZE eoff;
        s->code = pcre2_compile(pat, n, PCRE2_DOLLAR_ENDONLY, &ecode, &eoff, NULL);
        if (!s->code) {
            PCRE2_UCHAR msg32[256];
            char msg[256];
            int ml = pcre2_get_error_message(ecode, msg32, 256);
            for (int k = 0; k < ml && k < 255; k++)
                msg[k] = msg32[k] < 128 ? (char)msg32[k] : '?';
            msg[ml > 0 ? (ml < 255 ? ml : 255) : 0] = '\0';
            oxl_err_set(err, "%s: tokenizer.ggml.pre = '%s': regex %d does not compile at %zu: %s", path, name, i,
                        (size_t)eoff, msg);
            oxl_pretok_free(p);
            return NULL;
        }
    }
    return p;
}

// --- splitting ----------------------------------------------------------------------------------------------

void oxl_words_free(oxl_words *w) {
    free(w->buf);
    free(w->off);
    free(w->cpts);
    free(w->subject);
    free(w->seg);
    free(w->seg2);
    memset(w, 0, sizeof *w);
}

static bool seg_push(oxl_words *w, size_t len) {
    if (len == 0)
        return true;
    if (!oxl_grow((void **)&w->seg2, &w->cap_seg2, w->n_seg, 1, sizeof *w->seg2))
        return false;
    w->seg2[w->n_seg++] = len;
    return true;
}

/* One regex over one piece subject[0..n): matches and the gaps between them become pieces. */
static bool split_regex(oxl_words *w, const split_rx *s, const oxl_pretok *p, const uint32_t *subject, size_t n,
                        pcre2_match_data *md) {
    size_t pos = 0, prev = 0;
    uint32_t opts = 0;
    while (pos <= n) {
        int rc = pcre2_match(s->code, subject, n, pos, opts, md, p->mctx);
        if (rc < 0) {
            if (opts && pos < n) { /* no non-empty match here after an empty one: move on */
                opts = 0;
                pos++;
                continue;
            }
            break; /* no match (or a limit hit): the rest is a gap */
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (ms > prev && !seg_push(w, ms - prev))
            return false;
        if (!seg_push(w, me - ms))
            return false;
        prev = me;
        pos = me;
        opts = me == ms ? PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED : 0;
        if (me == n)
            break;
    }
    return n <= prev || seg_push(w, n - prev);
}

/* "[^\n]+|[\n]+": runs of newlines and of everything else. */
static bool split_newlines(oxl_words *w, const uint32_t *c, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t j = i;
        bool nl = c[i] == '\n';
        while (j < n && (c[j] == '\n') == nl)
            j++;
        if (!seg_push(w, j - i))
            return false;
        i = j;
    }
    return true;
}

/* llama.cpp's digit grouping: a run of numbers splits into a first group of (length mod 3) and then
 * groups of three; what precedes a run stays glued to its first group, what follows the last run is
 * one piece. */
static bool split_digits3(oxl_words *w, const uint32_t *c, size_t n) {
    size_t prev = 0;
    for (size_t pos = 0; pos < n;) {
        if (!(oxl_cpt_flags(c[pos]) & OXL_CPT_NUMBER)) {
            pos++;
            continue;
        }
        size_t start = pos;
        while (pos < n && (oxl_cpt_flags(c[pos]) & OXL_CPT_NUMBER))
            pos++;
        size_t cur = start, rem = (pos - start) % 3;
        if (rem) {
            cur += rem;
            if (!seg_push(w, cur - prev))
                return false;
            prev = cur;
        }
        for (; cur < pos; cur += 3) {
            if (!seg_push(w, cur + 3 - prev))
                return false;
            prev = cur + 3;
        }
    }
    return prev >= n || seg_push(w, n - prev);
}

/* "(?=(\d{3})+(?!\d))" (empty matches only): a piece splits before every position followed by a
 * positive multiple of three ASCII digits and then no digit. Done here because the regex would scan
 * to the end of the digits from every position (quadratic time). */
static bool split_thousands(oxl_words *w, const uint32_t *c, size_t n) {
    size_t prev = 0;
    for (size_t a = 0; a < n;) {
        if (c[a] < '0' || c[a] > '9') {
            a++;
            continue;
        }
        size_t b = a;
        while (b < n && c[b] >= '0' && c[b] <= '9')
            b++;
        for (size_t p = a > 0 ? a : 1; p < b; p++) {
            if ((b - p) % 3)
                continue;
            if (!seg_push(w, p - prev))
                return false;
            prev = p;
        }
        a = b;
    }
    return seg_push(w, n - prev);
}

/* "\s+$": the whitespace run that ends a piece becomes a piece of its own. Done here because the
 * regex would scan every whitespace run to its end from each of its positions (quadratic time). */
static bool split_trailing_space(oxl_words *w, const uint32_t *c, size_t n) {
    size_t p = n;
    while (p > 0 && (oxl_cpt_flags(c[p - 1]) & OXL_CPT_WHITESPACE))
        p--;
    return seg_push(w, p) && seg_push(w, n - p);
}

static bool put_bytes(oxl_words *w, const char *b, size_t n) {
    if (!oxl_grow((void **)&w->buf, &w->cap_buf, w->n_buf, n, 1))
        return false;
    memcpy(w->buf + w->n_buf, b, n);
    w->n_buf += n;
    return true;
}

bool oxl_pretok_split(const oxl_pretok *p, const char *text, size_t len, bool raw, oxl_words *w) {
    w->n_buf = 0;
    w->n = 0;
    /* code points, invalid bytes as U+FFFD one byte at a time */
    if (!oxl_grow((void **)&w->cpts, &w->cap_cpts, 0, len + 1, sizeof *w->cpts) ||
        !oxl_grow((void **)&w->subject, &w->cap_subject, 0, len + 1, sizeof *w->subject))
        return false;
    size_t nc = 0;
    for (size_t off = 0; off < len;) {
        uint32_t c;
        if (!oxl_utf8_decode(text, len, &off, &c)) {
            c = 0xFFFD;
            off++;
        }
        w->cpts[nc++] = c;
    }

    w->n_seg = 0;
    if (!seg_push(w, nc))
        return false;
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    if (!md)
        return false;
    bool ok = true;
    for (int r = 0; ok && r < p->n_rx; r++) {
        const split_rx *s = &p->rx[r];
        /* what this regex sees */
        for (size_t i = 0; i < nc; i++) {
            uint32_t c = w->cpts[i];
            unsigned f = c < 128 ? 0 : oxl_cpt_flags(c);
            if (c < 128)
                w->subject[i] = c;
            else if (s->han && is_han(c))
                w->subject[i] = 0xD6;
            else if (f & OXL_CPT_WHITESPACE)
                w->subject[i] = 0x0B;
            else if (!s->collapsed)
                w->subject[i] = c;
            else
                w->subject[i] = f & OXL_CPT_NUMBER        ? 0xD1
                                : f & OXL_CPT_LETTER      ? 0xD2
                                : f & OXL_CPT_PUNCTUATION ? 0xD3
                                : f & OXL_CPT_MARK        ? 0xD4
                                : f & OXL_CPT_SYMBOL      ? 0xD5
                                                          : 0xD0;
        }
        /* swap the current pieces into seg and rebuild seg2 */
        size_t *cur = w->seg2, n_cur = w->n_seg, cap_cur = w->cap_seg2;
        w->seg2 = w->seg, w->cap_seg2 = w->cap_seg;
        w->seg = cur, w->cap_seg = cap_cur;
        w->n_seg = 0;
        size_t start = 0;
        for (size_t k = 0; ok && k < n_cur; k++) {
            const uint32_t *piece = w->subject + start;
            size_t n = w->seg[k];
            ok = s->kind == SPLIT_NEWLINES         ? split_newlines(w, w->cpts + start, n)
                 : s->kind == SPLIT_DIGITS3        ? split_digits3(w, w->cpts + start, n)
                 : s->kind == SPLIT_THOUSANDS      ? split_thousands(w, w->cpts + start, n)
                 : s->kind == SPLIT_TRAILING_SPACE ? split_trailing_space(w, w->cpts + start, n)
                                                   : split_regex(w, s, p, piece, n, md);
            start += n;
        }
    }
    pcre2_match_data_free(md);
    if (!ok)
        return false;

    /* words: UTF-8 of each piece, byte-encoded unless raw */
    if (!oxl_grow((void **)&w->off, &w->cap_off, 0, w->n_seg + 1, sizeof *w->off))
        return false;
    size_t start = 0;
    w->off[0] = 0;
    for (size_t k = 0; k < w->n_seg; k++) {
        for (size_t i = start; i < start + w->seg2[k]; i++) {
            char u[4];
            size_t ul = oxl_utf8_encode(w->cpts[i], u);
            if (ul == 0) /* beyond U+10FFFF: llama.cpp cannot encode it either; use U+FFFD */
                ul = oxl_utf8_encode(0xFFFD, u);
            if (raw) {
                if (!put_bytes(w, u, ul))
                    return false;
                continue;
            }
            for (size_t b = 0; b < ul; b++) {
                char e[4];
                size_t el = oxl_utf8_encode(oxl_byte_to_cpt((uint8_t)u[b]), e);
                if (!put_bytes(w, e, el))
                    return false;
            }
        }
        start += w->seg2[k];
        w->off[++w->n] = w->n_buf;
    }
    return true;
}
