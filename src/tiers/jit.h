/*
 * jit.h -- libtcc behind a lock, in sealed pages, with a heap of its own
 * (internal).
 */
#ifndef WB_JIT_H
#define WB_JIT_H

#include "../abi/abi.h"

/* ---- the JIT (jit.c) ---- */

/* Code compiled by libtcc, in pages that are read+execute only. */
typedef struct wb_jit_code wb_jit_code;

/* Compiles C source src and returns the address of function fn in *entry.
   Compiler messages land in the error message. */
wb_status wb_jit_compile(const char *src, const char *fn, wb_jit_code **code,
                         void **entry);
/* Compiles n sources, each defining function fn, in one libtcc state into
   one block of code; entries[i] is source i's fn.  On failure, nothing is
   kept and the message gives libtcc's diagnostics. */
wb_status wb_jit_compile_batch(int n, const char *const *srcs, const char *fn,
                               wb_jit_code **code, void **entries);
void wb_jit_free(wb_jit_code *code);
/* Copies src to dst as libtcc reads it: the lines that only other
   compilers read (see wb_rt_cond) are left empty, and so are the
   directives, so that every line keeps its number.  dst needs
   strlen(src) + 1 bytes; returns the end of the copy, its NUL. */
char *wb_jit_as_read(char *dst, const char *src);
/* What libtcc calls instead of mprotect (see jit.c): nothing. */
int wb_jit_tcc_mprotect(void *addr, size_t len, int prot);
/* The zone near the helpers that code goes to while it has room (see
   jit.c), its pages, and whether p lies in it. */
#define WB_JIT_ZONE_PAGE 4096
#define WB_JIT_ZONE_PAGES 4096  /* 16 MiB of address space */
bool wb_jit_in_zone(const void *p);

/* ---- libtcc's heap (jitheap.c) ---- */

/* What libtcc calls instead of malloc, calloc, realloc and free. */
void *wb_jit_heap_malloc(size_t n);
void *wb_jit_heap_calloc(size_t n, size_t size);
void *wb_jit_heap_realloc(void *p, size_t n);
void wb_jit_heap_free(void *p);
/* Between these two, under wb_jit_lock, libtcc allocates from an arena
   that the close resets; outside them, from the C library. */
void wb_jit_heap_open(void);
void wb_jit_heap_close(void);
/* The arena's address space, reserved at the first compile; a page costs
   memory once something is written to it.  A compile that needs more gets
   the rest from the C library. */
#define WB_JIT_HEAP_SIZE ((size_t)256 << 20)
/* What stays resident between compiles: the close hands back the pages
   above it that a large batch touched. */
#define WB_JIT_HEAP_KEEP ((size_t)4 << 20)
#ifdef WB_TEST_HOOKS
/* Test hooks (wb_test_*): compiled only into the test build's library
   (see the Makefile), never into libwrapbake.a.  How many of the zone's
   pages are free; the arena as it stands, read without the lock. */
int wb_test_jit_zone_free_pages(void);
typedef struct wb_test_jit_heap_stats {
    const void *base;  /* the mapping; NULL before the first compile */
    size_t high;       /* the furthest offset used since the last trim */
    long live;         /* blocks allocated and not yet freed */
    bool broken;       /* a compile left blocks live: the arena is unused */
} wb_test_jit_heap_stats;
void wb_test_jit_heap_stat(wb_test_jit_heap_stats *st);
#endif

#endif /* WB_JIT_H */
