/*
 * core.h -- tensors, storages, version counters, devices, statuses and
 * messages, the clock and SHA-256 (internal).
 *
 * The bottom layer: it knows nothing of specs or wrappers.  Everything
 * above (spec, abi, gen, tiers) stands on it.
 */
#ifndef WB_CORE_H
#define WB_CORE_H

#include <stdarg.h>
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

/* Version counters are PyTorch's: a counter belongs to a tensor and is
   shared by the views made from it (see tensor.c).  It lives in a storage
   object, the tensor's own storage's unless wb_tensor.counter names
   another. */
struct wb_storage {
    atomic_long refcount;
    atomic_uint_fast64_t version;
    /* The references to this object as a counter alone (wb_tensor.counter),
       plus one for all references to the storage together: the data goes
       with the last reference, the object with the last of these. */
    atomic_long counter_refs;
    atomic_bool counter_taken;  /* a tensor made on it took its counter */
    /* DLPack exports alive (wb_tensor_to_dlpack): each hands out data
       where it lies, so the storage does not grow while one lives. */
    atomic_long exports;
    void *data;
    size_t nbytes;
    DLDevice device;
    wb_deleter deleter;   /* frees data at the last release; may be NULL */
    void *deleter_ctx;
    bool has_stream;      /* CUDA: writes must run on stream */
    void *stream;
    /* The library allocated the data (wb_storage_new), so growth may
       move it (wb_storage_wrap's memory stays where it is). */
    bool resizable;
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
    /* The storage object whose counter is this tensor's, held by a
       counter reference, when it is not the tensor's own storage's: the
       tensor was made on a storage another tensor had taken, or a set_
       moved it to another storage.  NULL for most tensors, and for every
       header in the thread cache. */
    wb_storage *counter;
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

/* A storage growth planned by wb_rt_prep_resize for the commit.  Generated
   code declares it too (see wb_emit_type_text). */
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
wb_status wb_rt_vfail(wb_status status, const char *fmt, va_list ap);

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

/* Lets every thread's cache keep at least this many headers: what one
   call of a new wrapper may take. */
void wb_rt_cache_reserve(int headers);
/* wb_rt_tensor_alloc when the cache is empty: a header from the heap. */
wb_tensor *wb_rt_tensor_malloc(void);

/* A tensor header from the thread cache, refcount 1, not yet holding a
   storage, keeping no tensor and with no counter of its own (its other
   fields are left as they were,
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
   view (0 for an empty view, which needs none); -1 if the arithmetic
   overflows. */
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
/* Gives up a planned growth (its buffer, or the CUDA husk holding it). */
void wb_rt_grow_discard(wb_rt_grow *g);
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
/* Whether two tensors have the same dims and sizes. */
static inline bool wb_rt_same_sizes(const wb_tensor *a, const wb_tensor *b)
{
    return a->ndim == b->ndim &&
           !memcmp(a->sizes, b->sizes, sizeof *a->sizes * (size_t)a->ndim);
}
const char *wb_rt_dtype_str(DLDataType d, char *buf, size_t n);
/* "cpu", "cuda:N", else "device TYPE:ID". */
const char *wb_rt_device_str(DLDevice d, char *buf, size_t n);
/* "[4, 3]", cut with "..." where buf is shorter than WB_RT_SIZES_LEN. */
const char *wb_rt_sizes_str(const int64_t *sizes, int ndim, char *buf,
                            size_t n);
#define WB_RT_SIZES_LEN (WB_MAX_DIMS * 22 + 3)
/* The plural ending of a count in a message: "1 argument", "2 arguments". */
#define WB_PLURAL(n) ((n) == 1 ? "" : "s")
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

/* A tensor's element size: every tensor's dtype is byte-addressable (the
   functions that make tensors refuse any other), so it needs no test. */
static inline size_t wb_rt_tensor_esize(const wb_tensor *t)
{
    return (size_t)t->dtype.bits / 8 * t->dtype.lanes;
}

/* The address of element 0 (wb_tensor_data without the NULL check). */
static inline char *wb_rt_data(const wb_tensor *t)
{
    return (char *)t->storage->data +
           t->offset * (int64_t)wb_rt_tensor_esize(t);
}

static inline wb_storage *wb_rt_storage_retain(wb_storage *s)
{
    atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
    return s;
}

/* t's version counter. */
static inline atomic_uint_fast64_t *wb_rt_version(const wb_tensor *t)
{
    return &(t->counter ? t->counter : t->storage)->version;
}

static inline void wb_rt_bump_by(wb_tensor *t, unsigned n)
{
    atomic_fetch_add_explicit(wb_rt_version(t), n, memory_order_relaxed);
}

/* The counter a new view of t shares with t, for its counter member: a
   new counter reference, or NULL when t's counter is its storage's, which
   the view then holds as its own storage. */
static inline wb_storage *wb_rt_counter_share(const wb_tensor *t)
{
    if (WB_RT_UNLIKELY(t->counter != NULL))
        atomic_fetch_add_explicit(&t->counter->counter_refs, 1,
                                  memory_order_relaxed);
    return t->counter;
}
/* Drops a counter reference. */
void wb_rt_counter_release(wb_storage *s);

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

/* The most dims wb_rt_take_view copies inline. */
#define WB_RT_SMALL_DIMS 4

/* Sizes and strides of any number of dims, out of line. */
void wb_rt_take_dims(wb_tensor *t, const wb_tensor *v);

/* The sizes and strides of v's first WB_RT_SMALL_DIMS dims, as two
   blocks: where v has fewer, those past its dims come along and are
   never read, and two blocks cost fewer instructions than a switch on
   the dims. */
static inline void wb_rt_take_small(wb_tensor *t, const wb_tensor *v)
{
    memcpy(t->sizes, v->sizes, WB_RT_SMALL_DIMS * sizeof v->sizes[0]);
    memcpy(t->strides, v->strides, WB_RT_SMALL_DIMS * sizeof v->strides[0]);
}

/* Gives t the view of v (ndim, sizes, strides, offset), not its dtype or
   storage.  t is not v, whose blocks would overlap (callers that may be
   handed the tensor itself, which has its view already, test first). */
static inline void wb_rt_take_view(wb_tensor *t, const wb_tensor *v)
{
    t->ndim = v->ndim;
    t->offset = v->offset;
    if (v->ndim <= WB_RT_SMALL_DIMS)
        wb_rt_take_small(t, v);
    else
        wb_rt_take_dims(t, v);
}

/* ---- devices (cuda.c) ---- */

/* Whether storages can live on device: WB_OK or WB_ERR_DEVICE. */
wb_status wb_rt_device_check(DLDevice device);
/* nbytes of zeroed memory on a checked non-CPU device, and the deleter that
   frees it. */
wb_status wb_rt_device_alloc(DLDevice device, size_t nbytes, void **data,
                             wb_deleter *deleter, void **deleter_ctx);
/* Commit phase: records the copy of v into t for the call's write-back
   (wb_rt_device_flush). */
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

/* The calls running on this thread, innermost first: wb_call links a
   frame of its own (src/tiers/wrapper.c) for the length of each call, so
   the innermost frame tells one call from another, a call of the same
   wrapper made inside it included. */
#if defined(__PIE__) || !defined(__PIC__)
/* In the archive, built for executables: %fs:offset, with no load of the
   offset first. */
extern _Thread_local void *wb_rt_calls
    __attribute__((tls_model("local-exec")));
#else
extern _Thread_local void *wb_rt_calls;
#endif

/* The write-back of a call's CUDA copies.  call identifies the call (its
   frame in wb_rt_calls), stream is where the call's work goes unless the
   calling thread set a stream (wb_set_call_stream).  The check phase asks
   whether the copy into input t from v may join the call's write-back:
   WB_RT_COPY_FITS, or why not, with the device and stream the call writes
   back on for the message (in a build without CUDA, WB_RT_COPY_NO_CUDA,
   the message set). */
typedef enum wb_rt_copy_fit {
    WB_RT_COPY_FITS,
    WB_RT_COPY_OTHER_DEVICE,  /* an earlier input is on another device */
    WB_RT_COPY_OTHER_STREAM,  /* t's storage is tied to another stream */
    WB_RT_COPY_TOO_MANY_DIMS, /* the views do not merge into few dims */
    WB_RT_COPY_INSIDE_A_CALL, /* inside another call's check or commit
                                 on this thread (a deleter that calls a
                                 wrapper) */
    WB_RT_COPY_NO_CUDA
} wb_rt_copy_fit;
wb_rt_copy_fit wb_rt_device_copy_fits(const void *call, void *stream,
                                      const wb_tensor *t, const wb_tensor *v,
                                      int *device, void **call_stream);
/* The end of the call: enqueues the copies recorded (WB_OK when the call
   checked none). */
wb_status wb_rt_device_flush(const void *call);
/* A call that failed in its check phase: its copies are forgotten, so
   that the next call starts its own. */
void wb_rt_device_drop(const void *call);
/* The most dimensions a CUDA copy's views may keep once merged. */
int wb_rt_device_copy_dims(void);

/* ---- the clock and SHA-256 (clock.c, sha256.c) ---- */

/* Milliseconds on the monotonic clock. */
double wb_now_ms(void);

typedef struct wb_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t block[64];
} wb_sha256;

void wb_sha256_init(wb_sha256 *s);
void wb_sha256_update(wb_sha256 *s, const void *data, size_t n);
void wb_sha256_hex(wb_sha256 *s, char out[WB_FINGERPRINT_LEN + 1]);
void wb_sha256_str(const void *data, size_t n,
                   char out[WB_FINGERPRINT_LEN + 1]);

/* Nonzero while this thread runs code of a dependency that cannot survive
   a failed allocation of its own (libtcc) or leaks on one (the dynamic
   loader); for allocation-failure tests, which fail only allocations made
   outside it. */
extern _Thread_local int wb_rt_inside_dependency;

/* getenv, but NULL for every name in a process running with privileges
   its user lacks (secure_getenv).  The library reads its environment
   through nothing else. */
const char *wb_rt_getenv(const char *name);
/* text as a message may show it, in buf: every byte that is not printable
   ASCII, and the backslash, as \xHH.  Returns buf. */
const char *wb_rt_printable(const char *text, char *buf, size_t n);
/* The most links one resolution follows, as the kernel's 40. */
#define WB_RT_LINKS 40
/* Why another user could make path name another file, or NULL.  path is
   resolved from the root a component at a time, each link read and
   followed (up to WB_RT_LINKS), and everything met is checked: every directory
   belongs to the user or to root and is writable by nobody else unless
   sticky, and every link, those inside a link's target too, belongs to
   the user or to root.  The last component is held to the rule of
   directories only when self.  With real (PATH_MAX bytes) the whole path
   must exist, and real receives it resolved, which the caller then uses;
   without, the walk ends content where a component does not exist yet.
   The reason goes to why (n bytes), its paths printable; errno is 0 after
   a refusal, else what the failing call set. */
const char *wb_rt_unsafe_path(const char *path, bool self, char *real,
                              char *why, size_t n);
/* Why the file at path is not one to load code from, or NULL: path is
   absolute, its way passes wb_rt_unsafe_path, and it is a regular file of
   the user's or root's, writable by nobody else.  real (PATH_MAX bytes)
   receives it resolved: the caller loads that. */
const char *wb_rt_unsafe_file(const char *path, char *real, char *why,
                              size_t n);
/* Whether the process runs with privileges its user lacks (setuid,
   setgid, file capabilities): the kernel's AT_SECURE, which makes
   wb_rt_getenv read nothing. */
bool wb_rt_privileged(void);

#endif /* WB_CORE_H */
