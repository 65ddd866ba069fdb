/*
 * symbols.c -- the table of the helpers generated code may call
 * (helpers.def), and who reads a piece of generated code.
 *
 * The JIT's symbol table and the cc tier's binding header are built from
 * the table.  The emitter records which helpers it calls as it writes
 * them (wb_emitted.used), so nothing reads generated text back; the
 * scanner that does, under WB_TEST_HOOKS, is for the tests, which hold
 * the record to the text.
 */
#include <pthread.h>
#include <string.h>

#include "abi.h"

/* ---- the symbol table for generated code ---- */

#define WB_ABI_COLD_hot false
#define WB_ABI_COLD_cold true
const wb_rt_symbol wb_rt_symbols[] = {
#define WB_ABI(ret, ptr, name, params, temp)                                \
    {#name, sizeof #name - 1, (wb_rt_fnptr)(name),                          \
     #ret " " #ptr #name #params ";", WB_ABI_COLD_##temp},
#include "helpers.def"
    {NULL, 0, NULL, NULL, false},
};

unsigned wb_rt_cond_next(wb_rt_cond c, wb_rt_cond *in)
{
    switch (c) {
    case WB_RT_COND_TCC:
    case WB_RT_COND_NOT_TCC:
        *in = c;
        break;
    case WB_RT_COND_ELSE:
        *in = *in == WB_RT_COND_TCC ? WB_RT_COND_NOT_TCC : WB_RT_COND_TCC;
        break;
    case WB_RT_COND_END:
        *in = WB_RT_COND_NONE;
        break;
    default:
        break;
    }
    return *in == WB_RT_COND_TCC ? WB_RT_READ_TCC
         : *in == WB_RT_COND_NOT_TCC ? WB_RT_READ_CC
                                     : WB_RT_READ_TCC | WB_RT_READ_CC;
}

#ifdef WB_TEST_HOOKS
wb_rt_cond wb_test_cond_at(const char *p)
{
    /* Most directives are #line: the second byte rules them out. */
    if (p[0] != '#')
        return WB_RT_COND_NONE;
    if (p[1] == 'i')
        return !strncmp(p, "#ifdef __TINYC__\n", 17) ? WB_RT_COND_TCC
             : !strncmp(p, "#ifndef __TINYC__\n", 18) ? WB_RT_COND_NOT_TCC
                                                      : WB_RT_COND_NONE;
    if (p[1] == 'e')
        return !strncmp(p, "#else\n", 6) ? WB_RT_COND_ELSE
             : !strncmp(p, "#endif\n", 7) ? WB_RT_COND_END
                                          : WB_RT_COND_NONE;
    return WB_RT_COND_NONE;
}

static bool wb_rt_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* The symbol table indexed by a cheap hash of the name (its length, its
   middle and last bytes), with linear probing: one lookup costs a few
   compares where a walk of the table cost a compare per symbol, which
   was most of a scan.  Built once; slot values are index + 1, 0 empty. */
#define WB_RT_SLOTS 128
static unsigned char wb_rt_slot[WB_RT_SLOTS];
static pthread_once_t wb_rt_slots_once = PTHREAD_ONCE_INIT;

static unsigned wb_rt_slot_hash(const char *name, size_t len)
{
    return ((unsigned)len * 131u + (unsigned char)name[len / 2] * 31u +
            (unsigned char)name[len - 1]) % WB_RT_SLOTS;
}

static void wb_rt_slots_fill(void)
{
    for (int i = 0; wb_rt_symbols[i].name; i++) {
        const wb_rt_symbol *y = &wb_rt_symbols[i];
        unsigned h = wb_rt_slot_hash(y->name, y->len);
        while (wb_rt_slot[h])
            h = (h + 1) % WB_RT_SLOTS;
        wb_rt_slot[h] = (unsigned char)(i + 1);
    }
}

/* Every helper's name starts "wb_" or "mem", so only identifiers before a
   parenthesis that start so are looked up.  Directives are found between
   the parentheses, by the '#' that opens a line. */
int wb_test_symbols_used(const char *src, size_t n,
                         unsigned char used[WB_ABI_COUNT])
{
    int count = 0;
    const char *end = src + n, *hash = memchr(src, '#', n);
    wb_rt_cond in = WB_RT_COND_NONE;
    unsigned who = WB_RT_READ_TCC | WB_RT_READ_CC;
    pthread_once(&wb_rt_slots_once, wb_rt_slots_fill);
    memset(used, 0, sizeof *used * WB_ABI_COUNT);
    for (const char *p = memchr(src, '(', n); p;
         p = memchr(p + 1, '(', (size_t)(end - p - 1))) {
        for (; hash && hash < p;
             hash = memchr(hash + 1, '#', (size_t)(end - hash - 1)))
            if (hash == src || hash[-1] == '\n')
                who = wb_rt_cond_next(wb_test_cond_at(hash), &in);
        const char *q = p;
        while (q > src && wb_rt_ident_char(q[-1]))
            q--;
        size_t len = (size_t)(p - q);
        if (len < 4 || (memcmp(q, "wb_", 3) && memcmp(q, "mem", 3)))
            continue;
        for (unsigned h = wb_rt_slot_hash(q, len); wb_rt_slot[h];
             h = (h + 1) % WB_RT_SLOTS) {
            int i = wb_rt_slot[h] - 1;
            const wb_rt_symbol *y = &wb_rt_symbols[i];
            if (y->len == len && !memcmp(y->name, q, len)) {
                count += !used[i];
                used[i] |= (unsigned char)who;
                break;
            }
        }
    }
    return count;
}
#endif
