/*
 * jitheap.c -- libtcc's heap: one arena per compile, kept for the next.
 *
 * libtcc allocates and frees a few thousand blocks per compile, a couple
 * of megabytes of address space in all, and frees every one of them when
 * its state is deleted.  From the C library's heap that churn costs more
 * than the instructions: the heap's top grows and is trimmed back on every
 * compile, and each page handed back to the kernel faults in again, zeroed,
 * on the next (22 page faults per compile of a one-line function, which
 * on the development VM made it take nearly twice as long).  So libtcc's
 * malloc, calloc, realloc and free are renamed to the functions below (see
 * the Makefile).  While
 * wb_jit_compile_batch holds wb_jit_lock and has opened the heap, they carve
 * blocks from one mapping that outlives the compile: the pages it touched
 * stay touched, and the whole arena is reset at once when libtcc is done.
 * Outside that window, for a block the mapping has no room for, and for a
 * block the C library allocated, they pass through to the C library.
 *
 * libtcc reports an allocation of its own that failed as an error in the
 * code ("memory full"), so the heap counts the failures, and the JIT
 * tells running out of memory from code it rejects by the count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jit.h"

/* Each block is preceded by its size, and starts 16-byte aligned, as the
   C library's do. */
#define WB_JIT_HEAP_HEAD ((size_t)16)

/* Guarded by wb_jit_lock (jit.c), like everything libtcc touches. */
static struct {
    char *base;      /* the mapping, made at the first compile */
    size_t top;      /* the offset of the first free byte */
    size_t high;     /* the highest top since the mapping was last trimmed */
    long live;       /* blocks allocated here and not yet freed */
    bool open;       /* a compile is using the arena */
    bool broken;     /* a compile left blocks live: never reset again */
    long failures;   /* allocations that failed */
} wb_jit_heap;

long wb_jit_heap_failures(void)
{
    return wb_jit_heap.failures;
}

#ifdef WB_TEST_HOOKS
void wb_test_jit_heap_stat(wb_test_jit_heap_stats *st)
{
    st->base = wb_jit_heap.base;
    st->high = wb_jit_heap.high;
    st->live = wb_jit_heap.live;
    st->broken = wb_jit_heap.broken;
}

static size_t wb_jit_heap_limit;

void wb_test_jit_heap_limit(size_t n)
{
    wb_jit_heap_limit = n;
}
#endif

/* Whether a block of n bytes is refused: only the test build's limit
   refuses one that memory could hold.  A refusal counts as a failure. */
static bool wb_jit_heap_refused(size_t n)
{
#ifdef WB_TEST_HOOKS
    if (wb_jit_heap_limit && n > wb_jit_heap_limit) {
        wb_jit_heap.failures++;
        return true;
    }
#endif
    (void)n;
    return false;
}

/* p, the C library's block of n bytes, counting a failure. */
static void *wb_jit_heap_counted(void *p, size_t n)
{
    if (!p && n)
        wb_jit_heap.failures++;
    return p;
}

static bool wb_jit_heap_owns(const void *p)
{
    const char *c = p;
    return wb_jit_heap.base && c >= wb_jit_heap.base &&
           c < wb_jit_heap.base + WB_JIT_HEAP_SIZE;
}

static size_t wb_jit_heap_size_of(void *p)
{
    size_t n;
    memcpy(&n, (char *)p - WB_JIT_HEAP_HEAD, sizeof n);
    return n;
}

/* A block of n bytes from the arena, or NULL when it has no room. */
static void *wb_jit_heap_carve(size_t n)
{
    size_t need = WB_JIT_HEAP_HEAD + ((n + 15) & ~(size_t)15);
    if (n > WB_JIT_HEAP_SIZE || need > WB_JIT_HEAP_SIZE - wb_jit_heap.top)
        return NULL;
    char *p = wb_jit_heap.base + wb_jit_heap.top + WB_JIT_HEAP_HEAD;
    memcpy(p - WB_JIT_HEAP_HEAD, &n, sizeof n);
    wb_jit_heap.top += need;
    if (wb_jit_heap.top > wb_jit_heap.high)
        wb_jit_heap.high = wb_jit_heap.top;
    wb_jit_heap.live++;
    return p;
}

/* Whether p is the arena's last block, whose end is the top. */
static bool wb_jit_heap_is_last(void *p)
{
    size_t at = (size_t)((char *)p - wb_jit_heap.base);
    return at + ((wb_jit_heap_size_of(p) + 15) & ~(size_t)15) ==
           wb_jit_heap.top;
}

void *wb_jit_heap_malloc(size_t n)
{
    if (wb_jit_heap_refused(n))
        return NULL;
    void *p = wb_jit_heap.open ? wb_jit_heap_carve(n) : NULL;
    return p ? p : wb_jit_heap_counted(malloc(n), n);
}

void *wb_jit_heap_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        wb_jit_heap.failures++;
        return NULL;
    }
    if (wb_jit_heap_refused(n * size))
        return NULL;
    void *p = wb_jit_heap.open ? wb_jit_heap_carve(n * size) : NULL;
    if (!p)
        return wb_jit_heap_counted(calloc(n, size), n * size);
    return memset(p, 0, n * size);
}

void wb_jit_heap_free(void *p)
{
    if (!wb_jit_heap_owns(p)) {
        free(p);
        return;
    }
    /* A freed block is reused only at the top, where libtcc's short-lived
       strings and growing buffers mostly are; the rest waits for the
       reset. */
    if (wb_jit_heap_is_last(p))
        wb_jit_heap.top = (size_t)((char *)p - WB_JIT_HEAP_HEAD -
                                   wb_jit_heap.base);
    wb_jit_heap.live--;
}

void *wb_jit_heap_realloc(void *p, size_t n)
{
    if (!p)
        return wb_jit_heap_malloc(n);
    if (wb_jit_heap_refused(n))
        return NULL;
    if (!wb_jit_heap_owns(p))
        return wb_jit_heap_counted(realloc(p, n), n);
    if (n == 0) {
        wb_jit_heap_free(p);
        return NULL;
    }
    size_t old = wb_jit_heap_size_of(p);
    if (wb_jit_heap_is_last(p)) {
        /* The last block grows or shrinks where it is. */
        size_t at = (size_t)((char *)p - wb_jit_heap.base);
        size_t end = at + ((n + 15) & ~(size_t)15);
        if (n <= WB_JIT_HEAP_SIZE && end <= WB_JIT_HEAP_SIZE) {
            memcpy((char *)p - WB_JIT_HEAP_HEAD, &n, sizeof n);
            wb_jit_heap.top = end;
            if (end > wb_jit_heap.high)
                wb_jit_heap.high = end;
            return p;
        }
    } else if (n <= old) {
        return p;
    }
    void *q = wb_jit_heap_malloc(n);
    if (!q)
        return NULL;
    memcpy(q, p, old < n ? old : n);
    wb_jit_heap_free(p);
    return q;
}

void wb_jit_heap_open(void)
{
    if (wb_jit_heap.broken)
        return;
    if (!wb_jit_heap.base) {
        void *m = mmap(NULL, WB_JIT_HEAP_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return;  /* libtcc keeps to the C library's heap */
        wb_jit_heap.base = m;
    }
    wb_jit_heap.open = true;
}

void wb_jit_heap_close(void)
{
    if (!wb_jit_heap.open)
        return;
    wb_jit_heap.open = false;
    /* libtcc frees everything when its state is deleted.  Should a block
       outlive it, something may still point into the arena, so it is
       never reused (and libtcc keeps to the C library's heap). */
    if (wb_jit_heap.live != 0) {
        wb_jit_heap.broken = true;
        return;
    }
    wb_jit_heap.top = 0;
    if (wb_jit_heap.high > WB_JIT_HEAP_KEEP) {
        madvise(wb_jit_heap.base + WB_JIT_HEAP_KEEP,
                wb_jit_heap.high - WB_JIT_HEAP_KEEP, MADV_DONTNEED);
        wb_jit_heap.high = WB_JIT_HEAP_KEEP;
    }
}
