/*
 * rt.h -- the tensor runtime and the per-call primitives (internal).
 *
 * Both tiers run the same primitives: the interpreter calls them from loops
 * over precomputed lists, the generated C calls them with literal arguments.
 * A call runs in two phases.  The check phase (wb_rt_prep_*) looks at every
 * value the graph returned, allocates what the commit will need and may fail;
 * the commit phase (wb_rt_commit_*) cannot fail.  So a failed call has
 * changed nothing.
 */
#ifndef WB_RT_H
#define WB_RT_H

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "wrapbake.h"

/* Hints to gcc for the per-call paths. */
#if defined(__GNUC__)
#define WB_RT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define WB_RT_NOINLINE __attribute__((noinline))
#define WB_RT_INLINE inline __attribute__((always_inline))
/* Hides how index i was computed, so that a loop that hands the rest of
   its arrays on from i steps i alone, not a pointer into each array. */
#define WB_RT_OPAQUE(i) __asm__("" : "+r"(i))
#else
#define WB_RT_UNLIKELY(x) (x)
#define WB_RT_NOINLINE
#define WB_RT_INLINE inline
#define WB_RT_OPAQUE(i) (void)(i)
#endif

struct wb_storage {
    atomic_long refcount;
    atomic_uint_fast64_t version;
    void *data;
    size_t nbytes;
    DLDevice device;
    wb_deleter deleter;   /* frees data at the last release; may be NULL */
    void *deleter_ctx;
    bool has_stream;      /* CUDA: writes must run on stream */
    void *stream;
};

struct wb_tensor {
    atomic_long refcount;
    wb_storage *storage;
    DLDataType dtype;
    int16_t ndim;
    uint16_t device;      /* the storage's device, as wb_rt_device_word */
    uint32_t flags;
    bool fixed;           /* wb_tensor_fix_storage: storage never replaced */
    uint64_t dyn_dims;
    int64_t offset;
    int64_t sizes[WB_MAX_DIMS];
    int64_t strides[WB_MAX_DIMS];
    /* A view a wrapper made of a fixed tensor's storage holds that tensor
       (the reference the graph handed over) rather than a reference to the
       storage, which the tensor keeps alive; NULL for every other tensor,
       and for every header in the thread cache. */
    wb_tensor *keeper;
};

/* Generated code reads these leading members of a tensor directly (see
   wb_emit_prelude): dtype, ndim and device make the one 64-bit word its
   argument check compares.  They must not move. */
_Static_assert(offsetof(struct wb_tensor, storage) == sizeof(long),
               "tensor layout seen by generated code");
_Static_assert(offsetof(struct wb_tensor, dtype) == 2 * sizeof(long) &&
                   sizeof(DLDataType) == 4,
               "tensor layout seen by generated code");
_Static_assert(offsetof(struct wb_tensor, ndim) == 2 * sizeof(long) + 4 &&
                   offsetof(struct wb_tensor, device) == 2 * sizeof(long) + 6,
               "tensor layout seen by generated code");

/* The graph-facing part of a wrapper, passed first to every entry point.
   Generated code declares only the first two members (see emit.c), so they
   must stay first and in this order. */
struct wb_env {
    wb_graph_fn graph;
    void *graph_ctx;
    const wb_spec *spec;
    atomic_int first_call_state;
    void *stream;         /* CUDA work of a call, unless the thread sets one */
};

/* A storage growth planned by wb_rt_prep_resize for the commit.  Generated
   code declares it too (see wb_emit_prelude). */
typedef struct wb_rt_grow {
    void *data;     /* the new buffer, or NULL when no growth is needed */
    size_t nbytes;  /* its size */
    wb_storage *husk;  /* CUDA: owns the new buffer until the commit, then
                          the old one until its bytes are copied
                          (wb_rt_device_regrow) */
} wb_rt_grow;
_Static_assert(sizeof(wb_rt_grow) == 3 * sizeof(void *),
               "wb_rt_grow as generated code declares it");

/* ---- errors (error.c) ---- */

/* Formats the calling thread's message and returns status. */
wb_status wb_rt_fail(wb_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- tensors (tensor.c) ---- */

/* The thread's cache of tensor headers, linked through their storage
   field (see tensor.c). */
typedef struct wb_rt_cache {
    wb_tensor *head;
    int count;
    bool registered;  /* the thread-exit destructor knows this thread */
    bool closed;      /* it has run: later releases free at once */
} wb_rt_cache;
extern _Thread_local wb_rt_cache wb_rt_tcache;

/* wb_rt_tensor_alloc when the cache is empty: a header from the heap. */
wb_tensor *wb_rt_tensor_malloc(void);

/* A tensor header from the thread cache, refcount 1, not yet holding a
   storage and keeping no tensor (its other fields are left as they were,
   fixed included); NULL when the cache is empty. */
static inline wb_tensor *wb_rt_tensor_pop(void)
{
    wb_rt_cache *c = &wb_rt_tcache;
    wb_tensor *t = c->head;
    if (!t)
        return NULL;
    c->head = (wb_tensor *)t->storage;
    c->count--;
    atomic_init(&t->refcount, 1);
    t->storage = NULL;
    return t;
}

/* The same from the cache or the heap; NULL when out of memory. */
static inline wb_tensor *wb_rt_tensor_alloc(void)
{
    wb_tensor *t = wb_rt_tensor_pop();
    return t ? t : wb_rt_tensor_malloc();
}
/* Bytes from the start of the storage to one past the last element of the
   view (to its start for an empty view); -1 if the arithmetic overflows. */
int64_t wb_rt_view_end(DLDataType dtype, int ndim, const int64_t *sizes,
                       const int64_t *strides, int64_t offset);
/* Checks a view's metadata; WB_OK or a status with the message set. */
wb_status wb_rt_check_view(DLDataType dtype, int ndim, const int64_t *sizes,
                           const int64_t *strides, int64_t offset,
                           size_t storage_nbytes);
/* The strided element copy behind wb_tensor_copy_; shapes already match. */
void wb_rt_copy_elems(wb_tensor *dst, const wb_tensor *src);
/* Plans the storage growth resize_ to sizes needs (g->data NULL if none),
   then applies it; only the plan can fail. */
wb_status wb_rt_plan_grow(const wb_tensor *t, int ndim, const int64_t *sizes,
                          wb_rt_grow *g);
void wb_rt_apply_resize(wb_tensor *t, int ndim, const int64_t *sizes,
                        wb_rt_grow *g);
/* How the elements of views lie against each other: apart for certain,
   overlapping for certain, or undecided where deciding would cost more
   than a few steps.  Apart is 0, so a result reads as a truth value. */
typedef enum wb_rt_overlap {
    WB_RT_APART = 0,
    WB_RT_MAY_OVERLAP,
    WB_RT_OVERLAPS
} wb_rt_overlap;
/* Whether two views share a byte of memory. */
wb_rt_overlap wb_rt_views_overlap(const wb_tensor *a, const wb_tensor *b);
/* Whether a copy from src into dst must be refused for overlap: apart when
   it may run, else how sure, with *within true when two elements of dst are
   one and false when dst shares memory with src. */
wb_rt_overlap wb_rt_copy_overlap(const wb_tensor *dst, const wb_tensor *src,
                                 bool *within);
/* Whether two views are the same: element 0, dtype, sizes and strides. */
bool wb_rt_same_view(const wb_tensor *a, const wb_tensor *b);
const char *wb_rt_dtype_str(DLDataType d, char *buf, size_t n);
/* "cpu", "cuda:N", else "device TYPE:ID". */
const char *wb_rt_device_str(DLDevice d, char *buf, size_t n);
/* Releases what a tensor whose last reference went holds (its storage, or
   the tensor it keeps) and returns its header to the thread cache. */
void wb_rt_tensor_free(wb_tensor *t);

/* The small operations every call makes, inline so that the per-call
   primitives pay no call for them. */

static inline bool wb_rt_dtype_eq(DLDataType a, DLDataType b)
{
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

static inline bool wb_rt_device_eq(DLDevice a, DLDevice b)
{
    return a.device_type == b.device_type && a.device_id == b.device_id;
}

/* A device as the 16 bits a tensor carries beside its dtype and ndim: the
   type in the low byte, the id in the high one.  Storages and declared
   devices have ids of at most WB_MAX_DEVICE_ID, so they fit. */
_Static_assert(WB_MAX_DEVICE_ID <= 255, "a device id fits a byte");
static inline uint16_t wb_rt_device_word(DLDevice d)
{
    return (uint16_t)((unsigned)d.device_type | (unsigned)d.device_id << 8);
}

/* The word generated code compares: dtype, ndim << 32, device << 48. */
static inline uint64_t wb_rt_meta(const wb_tensor *t)
{
    uint64_t m;
    memcpy(&m, &t->dtype, sizeof m);
    return m;
}

/* t takes s as its storage (the caller gives the reference). */
static inline void wb_rt_set_storage(wb_tensor *t, wb_storage *s)
{
    t->storage = s;
    t->device = wb_rt_device_word(s->device);
}

/* wb_dtype_size. */
static inline size_t wb_rt_esize(DLDataType d)
{
    if (d.bits == 0 || d.bits % 8 != 0 || d.lanes == 0)
        return 0;
    return (size_t)d.bits / 8 * d.lanes;
}

/* The address of element 0 (wb_tensor_data without the NULL check). */
static inline char *wb_rt_data(const wb_tensor *t)
{
    return (char *)t->storage->data + t->offset * (int64_t)wb_rt_esize(t->dtype);
}

static inline wb_storage *wb_rt_storage_retain(wb_storage *s)
{
    atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
    return s;
}

/* wb_tensor_release of a tensor that is not NULL.  The holder of the only
   reference is the only one who can reach the tensor, so dropping it needs
   no locked read-modify-write (about 20 cycles): the acquire load orders
   the other holders' earlier releases before the free. */
static inline void wb_rt_release(wb_tensor *t)
{
    if (atomic_load_explicit(&t->refcount, memory_order_acquire) == 1 ||
        atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) == 1)
        wb_rt_tensor_free(t);
}

/* Gives t the view of v (ndim, sizes, strides, offset), not its dtype or
   storage.  Most views have few dims, for which two memcpy calls cost more
   than the copy itself. */
static inline void wb_rt_take_view(wb_tensor *t, const wb_tensor *v)
{
    t->ndim = v->ndim;
    t->offset = v->offset;
    switch (v->ndim) {
#define WB_RT_TAKE(d)                                                       \
    t->sizes[d] = v->sizes[d];                                              \
    t->strides[d] = v->strides[d]
    case 4: WB_RT_TAKE(3); /* fall through */
    case 3: WB_RT_TAKE(2); /* fall through */
    case 2: WB_RT_TAKE(1); /* fall through */
    case 1: WB_RT_TAKE(0); /* fall through */
    case 0: break;
#undef WB_RT_TAKE
    default:
        for (int d = 0; d < v->ndim; d++) {
            t->sizes[d] = v->sizes[d];
            t->strides[d] = v->strides[d];
        }
    }
}

/* ---- per-call primitives (call.c) ---- */

/* Fails with st and "spec 'NAME': " before the formatted text. */
wb_status wb_rt_callf(const wb_env *e, wb_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "input 2 'x'" into buf. */
const char *wb_rt_input_label(const wb_env *e, int i, char *buf, size_t n);

/* The first tensor input that is NULL. */
wb_status wb_rt_err_null_input(const wb_env *e, const wb_arg *args);
/* Checks input's declared dtype and ndim. */
wb_status wb_rt_check_input(const wb_env *e, int input, const wb_tensor *t);

/* The helpers generated code calls (helpers.def), declared.  They leave
   the library with the public API (WB_API): ahead-of-time code built as a
   shared object links to them by name.  What the
   less obvious ones do:
   - wb_rt_check_distinct refuses one tensor passed for two inputs when a
     mutation changes its view or storage, and a resized storage shared
     with another mutated input; wb_rt_err_inputs words why a tensor
     argument failed its checks (the first NULL one, else the first
     declared one whose dtype or ndim differs).
   - wb_rt_check_bases (a spec with set_bases): no view's base (a graph
     value) or holder is an input whose storage a set_ mutation replaces
     before the commit reads it (the view was checked against the storage
     it had).
   - wb_rt_prep_view: output `output` will be a view of the storage
     `holder` will have (at least `grown` bytes), with value v's view.
     Sets *view to a new header, which holds a reference to that storage
     from now on, or to NULL when v lies on that storage and the caller
     holds its only reference: v is then the view itself.  wb_rt_prep_same
     does the same for a v on that storage alone, with a header from the
     thread's cache, and is nonzero for any other v (or when the cache is
     empty), which then needs wb_rt_prep_view.  wb_rt_prep_views does
     either for outputs output to output + n - 1, each a view of the
     storage of a[i].t with value r[i]'s view, in views[i].
   - wb_rt_prep_data_Nd_run and wb_rt_commit_data_Nd_run: inputs input to
     input + n - 1 (at a[0] to a[n - 1]) against values r[0] to r[n - 1],
     in order, up to the first failure; libtcc compiles one call much
     faster than n.
   - wb_rt_commit_view makes the prepared header a view with v's view and
     the flags, then releases v, and returns the view; without one (view
     NULL) v itself is the view, returned with the flags.  The _plain
     variants are for outputs that neither require grad nor have dynamic
     dims, the common case, in cheaper calls.
   - wb_rt_out_flags sets requires-grad (0 or 1; -1 leaves it) and or-s dyn
     into t's mask; wb_rt_out_input returns input t itself, one more
     reference; wb_rt_out_plain_end stores the last output and returns 0.
   - wb_rt_release_all releases n values (NULLs skipped); wb_rt_grow_free
     frees a planned growth; wb_rt_drop_copies forgets the device copies a
     failed call checked; wb_rt_flush enqueues the copies recorded on the
     call's stream, and on a CUDA failure releases outs[0..nouts) and
     returns WB_ERR_DEVICE. */
#define WB_ABI(ret, ptr, name, params, temp) WB_API ret ptr name params;
#define WB_ABI_EXTERN(ret, ptr, name, params, temp)
#include "helpers.def"
#undef WB_ABI_EXTERN

/* The helpers' ids, in the order of helpers.def. */
typedef enum wb_abi_id {
#define WB_ABI(ret, ptr, name, params, temp) WB_ABI_ID_##name,
#include "helpers.def"
    WB_ABI_COUNT
} wb_abi_id;

/* The inputs declared with 1 to WB_RT_MAX_ND dims have helpers of their
   own for data mutations. */
#define WB_RT_MAX_ND 4

/* The helpers as a table, for the emitter's prototypes, the JIT's symbol
   table and the cc tier's binding header; terminated by a NULL name. */
typedef void (*wb_rt_fnptr)(void);
typedef struct wb_rt_symbol {
    const char *name;
    size_t len;         /* strlen(name) */
    wb_rt_fnptr addr;
    const char *proto;  /* the C declaration generated code sees */
    bool cold;          /* called only once a call has failed */
} wb_rt_symbol;
extern const wb_rt_symbol wb_rt_symbols[];
#define WB_RT_MAX_SYMBOLS WB_ABI_COUNT

/* Generated code says what only libtcc compiles between "#ifdef __TINYC__"
   and "#else", and what only other compilers compile from there to
   "#endif" or between "#ifndef __TINYC__" and "#endif", each directive a
   line of its own, never nested.  The kind of the line at p: */
typedef enum wb_rt_cond {
    WB_RT_COND_NONE,    /* not one of these directives */
    WB_RT_COND_TCC,     /* #ifdef __TINYC__ */
    WB_RT_COND_NOT_TCC, /* #ifndef __TINYC__ */
    WB_RT_COND_ELSE,    /* #else */
    WB_RT_COND_END      /* #endif */
} wb_rt_cond;
wb_rt_cond wb_rt_cond_at(const char *p);

/* Who reads a piece of generated code: libtcc, other compilers, or both. */
#define WB_RT_READ_TCC 1u
#define WB_RT_READ_CC 2u
/* Follows one directive: who reads the lines after a directive of kind c,
   when *in is the kind of the conditional open before it (NONE, TCC or
   NOT_TCC), which it updates. */
unsigned wb_rt_cond_next(wb_rt_cond c, wb_rt_cond *in);
/* Sets used[i] for each symbol i that the n bytes at src call or declare
   (its name followed by an opening parenthesis) to who reads those calls
   or declarations (WB_RT_READ_*, or-ed), 0 for the rest, in one pass;
   returns how many symbols are used. */
int wb_rt_symbols_used(const char *src, size_t n,
                       unsigned char used[WB_RT_MAX_SYMBOLS]);

/* ---- devices (cuda.c) ---- */

/* Whether storages can live on device: WB_OK or WB_ERR_DEVICE. */
wb_status wb_rt_device_check(DLDevice device);
/* nbytes of zeroed memory on a checked non-CPU device, and the deleter that
   frees it. */
wb_status wb_rt_device_alloc(DLDevice device, size_t nbytes, void **data,
                             wb_deleter *deleter, void **deleter_ctx);
/* Check phase of a copy into input t (on a CUDA device) from v: one device
   per call, the call's stream, a layout the copy kernel takes. */
wb_status wb_rt_prep_device_copy(const wb_env *e, int input,
                                 const wb_tensor *t, const wb_tensor *v);
/* Commit phase: records the copy of v into t for wb_rt_flush. */
void wb_rt_defer_copy(wb_tensor *t, const wb_tensor *v);
/* wb_tensor_copy_ on a CUDA device: enqueued on the thread's call stream. */
wb_status wb_rt_device_copy_now(wb_tensor *dst, const wb_tensor *src);
/* Plans growing CUDA storage s to nbytes: a zeroed block and the husk that
   will hold the old one. */
wb_status wb_rt_device_grow(const wb_storage *s, size_t nbytes,
                            wb_rt_grow *g);
/* Applies that plan in a call's commit: the new block replaces the old,
   whose bytes are copied into it with the call's device copies. */
void wb_rt_device_regrow(wb_storage *s, wb_rt_grow *g);
/* wb_tensor_resize_ growing a CUDA storage: the copy of the old bytes is
   enqueued on the thread's call stream before it returns. */
wb_status wb_rt_device_resize_now(wb_tensor *t, int ndim,
                                  const int64_t *sizes, wb_rt_grow *g);
/* A function of the CUDA runtime wrapbake loaded (for tests); NULL when
   none is loaded or it lacks name. */
void *wb_rt_cuda_symbol(const char *name);

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
/* Nonzero while this thread runs code of a dependency that cannot survive
   a failed allocation of its own (libtcc) or leaks on one (the dynamic
   loader); for allocation-failure tests, which fail only allocations made
   outside it. */
extern _Thread_local int wb_rt_inside_dependency;
/* What libtcc calls instead of mprotect (see jit.c): nothing. */
int wb_jit_tcc_mprotect(void *addr, size_t len, int prot);
/* The zone near the helpers that code goes to while it has room (see
   jit.c), its pages, and for tests whether p lies in it and how many of
   its pages are free. */
#define WB_JIT_ZONE_PAGE 4096
#define WB_JIT_ZONE_PAGES 4096  /* 16 MiB of address space */
bool wb_jit_in_zone(const void *p);
int wb_jit_zone_free_pages(void);

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
/* The arena as it stands, read without the lock (for tests). */
typedef struct wb_jit_heap_stats {
    const void *base;  /* the mapping; NULL before the first compile */
    size_t high;       /* the furthest offset used since the last trim */
    long live;         /* blocks allocated and not yet freed */
    bool broken;       /* a compile left blocks live: the arena is unused */
} wb_jit_heap_stats;
void wb_jit_heap_stat(wb_jit_heap_stats *st);

#endif /* WB_RT_H */
