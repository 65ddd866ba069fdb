/*
 * allocs.c -- counts the heap allocations of the benchmark process, so that
 * allocations per call are measured, not assumed.  It replaces the C
 * library's allocator entry points; sanitizer builds, which replace them
 * too, count nothing and say so.
 */
#include <stdbool.h>
#include <stddef.h>

#include "bench.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)

bool bench_allocs_counted(void) { return false; }
long bench_allocs(void) { return 0; }

#else

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

/* Written by the one benchmark thread only. */
static long bench_alloc_count;

void *malloc(size_t n)
{
    bench_alloc_count++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    bench_alloc_count++;
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    bench_alloc_count++;
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

bool bench_allocs_counted(void) { return true; }
long bench_allocs(void) { return bench_alloc_count; }

#endif
