/*
 * jit.h -- libtcc behind a lock, in sealed pages, with a heap of its own
 * (internal).
 */
#ifndef WB_JIT_H
#define WB_JIT_H

#include <pthread.h>
#include <stdio.h>

#include "../abi/abi.h"

/* ---- the JIT (jit.c) ---- */

/* The lock every compile holds, and the lock of the code pages kept for
   later compiles, taken under it.  Only the fork handlers (tiers.c) take
   them outside jit.c. */
extern pthread_mutex_t wb_jit_lock, wb_jit_spare_lock;

/* Code compiled by libtcc, in pages that are read+execute only. */
typedef struct wb_jit_code wb_jit_code;

/* One function for libtcc, as the emitter made it (wb_emit_parts,
   libtcc's form): the text before the function, the function, whose
   first line opens the definition of entry, and who reads a call of each
   helper (wb_emitted.used; the JIT registers those libtcc reads). */
typedef struct wb_jit_src {
    const char *prelude;
    const char *body;
    const char *entry;
    const unsigned char *used;
    unsigned types;  /* the types it completes (WB_EMIT_TYPE_*) */
} wb_jit_src;

/* Compiles n functions in one libtcc state into one block of code;
   entries[i] is the address of function i.  On failure, nothing is kept
   and the message gives libtcc's diagnostics. */
wb_status wb_jit_compile_batch(int n, const wb_jit_src *srcs,
                               wb_jit_code **code, void **entries);
/* One source of the caller's, defining function fn and calling the
   helpers whose used entries have WB_RT_READ_TCC set (NULL: none). */
wb_status wb_jit_compile(const char *src, const char *fn,
                         const unsigned char *used, wb_jit_code **code,
                         void **entry);
void wb_jit_free(wb_jit_code *code);
/* What libtcc calls instead of mprotect (see jit.c): nothing; instead of
   cstr_printf in libtcc.o: nothing.  And what it names stdout, stderr and
   environ by. */
int wb_jit_tcc_mprotect(void *addr, size_t len, int prot);
int wb_jit_tcc_predef(void *cstr, const char *fmt, ...);
extern FILE *wb_jit_tcc_stdout, *wb_jit_tcc_stderr;
extern char **wb_jit_tcc_environ;
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
/* How many of libtcc's allocations have failed in the process (read under
   wb_jit_lock): a compile that saw the count grow ran out of memory. */
long wb_jit_heap_failures(void);
/* The arena's address space, reserved at the first compile; a page costs
   memory once something is written to it.  A compile that needs more gets
   the rest from the C library. */
#define WB_JIT_HEAP_SIZE ((size_t)256 << 20)
/* What stays resident between compiles: the close hands back the pages
   above it that a large batch touched. */
#define WB_JIT_HEAP_KEEP ((size_t)4 << 20)
#ifdef WB_TEST_HOOKS
/* Copies src to dst as libtcc reads it: the lines only other compilers
   read are left empty, and so are the directives, so that every line
   keeps its number.  dst needs strlen(src) + 1 bytes; returns the end of
   the copy, its NUL. */
char *wb_test_jit_as_read(char *dst, const char *src);
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
/* From now on libtcc's blocks of more than n bytes fail, as if memory
   ran out (0: none do). */
void wb_test_jit_heap_limit(size_t n);
#endif

#endif /* WB_JIT_H */
