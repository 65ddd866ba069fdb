/*
 * tensor.c -- storages, tensors, views, copies and DLPack exchange.
 *
 * Tensor headers come from a per-thread cache, so that a wrapper building
 * aliased outputs allocates nothing in steady state: a released header
 * goes back to the cache of the thread releasing it, and an allocation
 * takes one from the cache of the thread allocating.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* The most headers a thread's cache keeps: 64, or as many as the calls of
   the largest wrapper made so far take (wb_rt_cache_reserve), so that no
   call within the library's limits allocates a header in steady state. */
#define WB_RT_CACHE_MIN 64
static atomic_int wb_rt_cache_max = WB_RT_CACHE_MIN;

_Thread_local wb_rt_cache wb_rt_tcache;
static pthread_key_t wb_rt_cache_key;
static pthread_once_t wb_rt_cache_once = PTHREAD_ONCE_INIT;

static void wb_rt_cache_drain(wb_rt_cache *c)
{
    while (c->head) {
        wb_tensor *t = c->head;
        c->head = (wb_tensor *)t->storage;
        free(t);
    }
    c->count = 0;
}

/* Thread exit: the key's value is only a marker that this thread cached. */
static void wb_rt_cache_exit(void *marker)
{
    (void)marker;
    wb_rt_cache_drain(&wb_rt_tcache);
    wb_rt_tcache.closed = true;
}

/* Without a key no thread could free its cache at exit, so then no thread
   caches at all. */
static bool wb_rt_cache_usable;

static void wb_rt_cache_init(void)
{
    wb_rt_cache_usable =
        pthread_key_create(&wb_rt_cache_key, wb_rt_cache_exit) == 0;
}

void wb_rt_cache_reserve(int headers)
{
    int max = atomic_load_explicit(&wb_rt_cache_max, memory_order_relaxed);
    while (headers > max &&
           !atomic_compare_exchange_weak_explicit(&wb_rt_cache_max, &max,
                                                  headers,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void wb_thread_cache_flush(void)
{
    wb_rt_cache_drain(&wb_rt_tcache);
}

wb_tensor *wb_rt_tensor_malloc(void)
{
    wb_tensor *t = malloc(sizeof *t);
    if (t) {
        atomic_init(&t->refcount, 1);
        t->storage = NULL;
        t->keeper = NULL;
        t->counter = NULL;
    }
    return t;
}

/* t on top of the thread's cache c, linked through its storage field. */
static WB_RT_INLINE void wb_rt_cache_push(wb_rt_cache *c, wb_tensor *t)
{
    t->storage = (wb_storage *)c->head;
    c->head = t;
    c->count++;
}

/* Whether the thread's cache c keeps one header more: below the least
   it keeps, with no load of the most. */
static WB_RT_INLINE bool wb_rt_cache_room(const wb_rt_cache *c)
{
    return WB_RT_UNLIKELY(c->count >= WB_RT_CACHE_MIN)
               ? c->count < atomic_load_explicit(&wb_rt_cache_max,
                                                 memory_order_relaxed)
               : true;
}

/* Returns a header whose storage is released to the thread cache; inline
   in both of wb_rt_tensor_free's paths. */
static WB_RT_INLINE void wb_rt_tensor_discard(wb_tensor *t)
{
    wb_rt_cache *c = &wb_rt_tcache;
    if (!wb_rt_cache_room(c) || c->closed) {
        free(t);
        return;
    }
    if (!c->registered) {
        pthread_once(&wb_rt_cache_once, wb_rt_cache_init);
        c->registered = true;
        if (!wb_rt_cache_usable ||
            pthread_setspecific(wb_rt_cache_key, c) != 0) {
            c->closed = true;
            free(t);
            return;
        }
    }
    wb_rt_cache_push(c, t);
}

/* ---- dtypes and devices ---- */

size_t wb_dtype_size(DLDataType d)
{
    return wb_rt_esize(d);
}

const char *wb_rt_dtype_str(DLDataType d, char *buf, size_t n)
{
    static const char *const codes[] = {"int", "uint", "float", "handle",
                                        "bfloat", "complex"};
    const char *c = d.code < 6 ? codes[d.code] : "code?";
    if (d.lanes == 1)
        snprintf(buf, n, "%s%u", c, (unsigned)d.bits);
    else
        snprintf(buf, n, "%s%ux%u", c, (unsigned)d.bits, (unsigned)d.lanes);
    return buf;
}

const char *wb_rt_sizes_str(const int64_t *sizes, int ndim, char *buf,
                            size_t n)
{
    size_t at = 0;
    for (int d = 0; d <= ndim && at < n; d++)
        at += (size_t)(d < ndim ? snprintf(buf + at, n - at, "%s%lld",
                                           d ? ", " : "[",
                                           (long long)sizes[d])
                                : snprintf(buf + at, n - at, "%s]",
                                           d ? "" : "["));
    if (at >= n && n >= 4)
        memcpy(buf + n - 4, "...", 4);
    return buf;
}

const char *wb_rt_device_str(DLDevice d, char *buf, size_t n)
{
    if (d.device_type == kDLCPU && d.device_id == 0) {
        /* The common case, named in every banner: no snprintf. */
        if (n) {
            buf[0] = '\0';
            strncat(buf, "cpu", n - 1);
        }
    } else if (d.device_type == kDLCUDA) {
        snprintf(buf, n, "cuda:%d", (int)d.device_id);
    } else {
        snprintf(buf, n, "device %d:%d", (int)d.device_type, (int)d.device_id);
    }
    return buf;
}

/* ---- view arithmetic ---- */

void wb_rt_take_dims(wb_tensor *t, const wb_tensor *v)
{
    for (int d = 0; d < v->ndim; d++) {
        t->sizes[d] = v->sizes[d];
        t->strides[d] = v->strides[d];
    }
}

int64_t wb_rt_view_end(DLDataType dtype, int ndim, const int64_t *sizes,
                       const int64_t *strides, int64_t offset)
{
    int64_t last = offset, span, es = (int64_t)wb_dtype_size(dtype);
    bool empty = false, overflow = false;
    /* One pass; an empty view holds no element whatever its other dims, so
       a zero size anywhere wins over an overflow elsewhere, and it needs
       no byte of its storage wherever it starts (PyTorch's bounds check
       skips a view of no byte: x[2:, 3:] of a 2 x 3 tensor starts past
       the end); only its start must be a byte offset int64_t holds. */
    for (int d = 0; d < ndim; d++) {
        empty |= sizes[d] == 0;
        overflow |= __builtin_mul_overflow(sizes[d] - 1, strides[d], &span) ||
                    __builtin_add_overflow(last, span, &last);
    }
    if (empty)
        return __builtin_mul_overflow(offset, es, &last) ? -1 : 0;
    if (overflow || __builtin_add_overflow(last, 1, &last) ||
        __builtin_mul_overflow(last, es, &last))
        return -1;
    return last;
}

wb_status wb_rt_check_view(DLDataType dtype, int ndim, const int64_t *sizes,
                           const int64_t *strides, int64_t offset,
                           size_t storage_nbytes)
{
    char dt[32];
    if (wb_dtype_size(dtype) == 0)
        return wb_rt_fail(WB_ERR_TYPE, "dtype %s is not byte-addressable",
                          wb_rt_dtype_str(dtype, dt, sizeof dt));
    if (ndim < 0 || ndim > WB_MAX_DIMS)
        return wb_rt_fail(WB_ERR_SHAPE, "ndim %d is outside 0..%d", ndim,
                          WB_MAX_DIMS);
    if (offset < 0)
        return wb_rt_fail(WB_ERR_SHAPE, "offset %lld is negative",
                          (long long)offset);
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] < 0)
            return wb_rt_fail(WB_ERR_SHAPE, "size %lld of dim %d is negative",
                              (long long)sizes[d], d);
        if (strides[d] < 0)
            return wb_rt_fail(WB_ERR_SHAPE,
                              "stride %lld of dim %d is negative",
                              (long long)strides[d], d);
    }
    /* Stride-0 dims let a view of a few bytes claim more elements than
       int64_t counts, and wb_tensor_numel must never overflow. */
    int64_t numel = 1;
    for (int d = 0; d < ndim && numel != 0; d++)
        if (sizes[d] == 0)
            numel = 0;
    for (int d = 0; d < ndim && numel != 0; d++)
        if (__builtin_mul_overflow(numel, sizes[d], &numel))
            return wb_rt_fail(WB_ERR_SHAPE,
                              "the view's element count overflows");
    int64_t end = wb_rt_view_end(dtype, ndim, sizes, strides, offset);
    if (end < 0)
        return wb_rt_fail(WB_ERR_SHAPE, "the view's extent overflows");
    if ((uint64_t)end > storage_nbytes)
        return wb_rt_fail(WB_ERR_SHAPE,
                          "the view ends at byte %lld, past the storage's "
                          "%zu bytes", (long long)end, storage_nbytes);
    return WB_OK;
}

/* Row-major strides for sizes.  A product that does not fit saturates at
   INT64_MAX instead of overflowing, so that the view check that follows
   reports the view as overflowing (or accepts it when it is empty). */
static void wb_rt_contiguous_strides(int ndim, const int64_t *sizes,
                                     int64_t *strides)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        if (sizes[d] > 1 && __builtin_mul_overflow(s, sizes[d], &s))
            s = INT64_MAX;
    }
}

/* Bytes of a contiguous tensor of sizes, or -1 on overflow or bad sizes. */
static int64_t wb_rt_contiguous_nbytes(DLDataType dtype, int ndim,
                                       const int64_t *sizes)
{
    int64_t n = (int64_t)wb_dtype_size(dtype);
    bool overflow = false, empty = false;
    /* An empty tensor holds no byte, whatever its other sizes. */
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] < 0)
            return -1;
        empty |= sizes[d] == 0;
        overflow |= __builtin_mul_overflow(n, sizes[d], &n);
    }
    return empty ? 0 : overflow ? -1 : n;
}

/* ---- storages ---- */

wb_status wb_storage_wrap(void *data, size_t nbytes, DLDevice device,
                          wb_deleter deleter, void *deleter_ctx,
                          wb_storage **out)
{
    wb_status st;
    if (!out || (!data && nbytes))
        return wb_rt_fail(WB_ERR_INVALID,
                          "wb_storage_wrap: NULL data or out");
    if ((st = wb_rt_device_check(device)) != WB_OK)
        return st;
    if (device.device_id < 0 || device.device_id > WB_MAX_DEVICE_ID)
        return wb_rt_fail(WB_ERR_DEVICE, "device id %d is outside 0..%d",
                          device.device_id, WB_MAX_DEVICE_ID);
    wb_storage *s = malloc(sizeof *s);
    if (!s)
        return wb_rt_fail(WB_ERR_NOMEM, "wb_storage_wrap: out of memory");
    atomic_init(&s->refcount, 1);
    atomic_init(&s->version, 0);
    atomic_init(&s->counter_refs, 1);
    atomic_init(&s->counter_taken, false);
    atomic_init(&s->exports, 0);
    s->data = data;
    s->nbytes = nbytes;
    s->device = device;
    s->deleter = deleter;
    s->deleter_ctx = deleter_ctx;
    s->has_stream = false;
    s->stream = NULL;
    s->resizable = false;
    *out = s;
    return WB_OK;
}

/* The deleter of a CPU storage the library allocated. */
static void wb_rt_free_data(void *ctx, void *data)
{
    (void)ctx;
    free(data);
}

wb_status wb_storage_new(DLDevice device, size_t nbytes, wb_storage **out)
{
    wb_status st;
    if (!out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_storage_new: out is NULL");
    if ((st = wb_rt_device_check(device)) != WB_OK)
        return st;
    void *data, *ctx = NULL;
    wb_deleter deleter = wb_rt_free_data;
    if (device.device_type != kDLCPU)
        st = wb_rt_device_alloc(device, nbytes, &data, &deleter, &ctx);
    else if (!(data = calloc(1, nbytes ? nbytes : 1)))
        st = wb_rt_fail(WB_ERR_NOMEM,
                        "wb_storage_new: cannot allocate %zu bytes", nbytes);
    if (st != WB_OK)
        return st;
    st = wb_storage_wrap(data, nbytes, device, deleter, ctx, out);
    if (st != WB_OK)
        deleter(ctx, data);
    else
        (*out)->resizable = true;
    return st;
}

wb_storage *wb_storage_retain(wb_storage *s)
{
    return s ? wb_rt_storage_retain(s) : NULL;
}

/* As for tensors (wb_rt_release), the last reference of either kind is
   dropped without a locked operation. */
static inline bool wb_rt_drop(atomic_long *refs)
{
    return atomic_load_explicit(refs, memory_order_acquire) == 1 ||
           atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

void wb_rt_counter_release(wb_storage *s)
{
    if (wb_rt_drop(&s->counter_refs))
        free(s);
}

void wb_storage_release(wb_storage *s)
{
    if (!s || !wb_rt_drop(&s->refcount))
        return;
    if (s->deleter)
        s->deleter(s->deleter_ctx, s->data);
    s->data = NULL;
    wb_rt_counter_release(s);
}

void wb_storage_set_stream(wb_storage *s, void *stream)
{
    if (s) {
        s->has_stream = true;
        s->stream = stream;
    }
}

void wb_storage_unset_stream(wb_storage *s)
{
    if (s) {
        s->has_stream = false;
        s->stream = NULL;
    }
}

void *wb_storage_data(const wb_storage *s) { return s ? s->data : NULL; }
size_t wb_storage_nbytes(const wb_storage *s) { return s ? s->nbytes : 0; }

DLDevice wb_storage_device(const wb_storage *s)
{
    DLDevice none = {kDLCPU, 0};
    return s ? s->device : none;
}

/* Version counters.  A tensor made on a storage no tensor has taken
   takes the storage's counter: a new tensor, a DLPack import, the first
   tensor made on a wrapped storage.  Views share the counter of the
   tensor they view (wb_rt_counter_share), and a set_ keeps the tensor's
   counter, holding the object it lives in by a counter reference, which
   keeps no data alive.  Any other tensor made on a storage gets a counter
   of its own, in an object with no data. */
static wb_status wb_rt_counter_for(wb_storage *s, wb_storage **counter)
{
    *counter = NULL;
    if (!atomic_exchange_explicit(&s->counter_taken, true,
                                  memory_order_relaxed))
        return WB_OK;
    wb_storage *c = calloc(1, sizeof *c);
    if (!c)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a tensor");
    atomic_init(&c->refcount, 0);
    atomic_init(&c->version, 0);
    atomic_init(&c->counter_refs, 1);
    atomic_init(&c->counter_taken, true);
    atomic_init(&c->exports, 0);
    *counter = c;
    return WB_OK;
}

uint64_t wb_storage_version(const wb_storage *s)
{
    return s ? atomic_load_explicit(&s->version, memory_order_relaxed) : 0;
}

long wb_storage_refcount(const wb_storage *s)
{
    return s ? atomic_load(&s->refcount) : 0;
}

/* ---- tensors ---- */

/* Fills header t (fresh from wb_rt_tensor_alloc) as a view of s; takes one
   reference to s.  The metadata must have been checked. */
static void wb_rt_tensor_init(wb_tensor *t, wb_storage *s, DLDataType dtype,
                              int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset)
{
    wb_rt_set_storage(t, wb_storage_retain(s));
    t->dtype = dtype;
    t->ndim = ndim;
    t->flags = 0;
    t->fixed = false;
    t->dyn_dims = 0;
    t->offset = offset;
    /* sizes may be NULL for a 0-d view, and memcpy must not be given NULL
       even for zero bytes. */
    if (ndim > 0) {
        memcpy(t->sizes, sizes, sizeof *sizes * (size_t)ndim);
        memcpy(t->strides, strides, sizeof *strides * (size_t)ndim);
    }
}

/* A new view of storage, checked, for fn; its counter is base's when base
   is given, else as wb_rt_counter_for decides. */
static wb_status wb_rt_view_new(const char *fn, wb_storage *storage,
                                DLDataType dtype, int ndim,
                                const int64_t *sizes, const int64_t *strides,
                                int64_t offset, const wb_tensor *base,
                                wb_tensor **out)
{
    int64_t cstrides[WB_MAX_DIMS];
    wb_storage *counter = NULL;
    wb_status st;
    if (!storage || !out || (ndim > 0 && !sizes))
        return wb_rt_fail(WB_ERR_INVALID, "%s: NULL %s, sizes or out", fn,
                          base ? "base" : "storage");
    if (ndim < 0 || ndim > WB_MAX_DIMS)
        return wb_rt_fail(WB_ERR_SHAPE, "ndim %d is outside 0..%d", ndim,
                          WB_MAX_DIMS);
    if (!strides) {
        wb_rt_contiguous_strides(ndim, sizes, cstrides);
        strides = cstrides;
    }
    st = wb_rt_check_view(dtype, ndim, sizes, strides, offset, storage->nbytes);
    if (st != WB_OK || (!base && (st = wb_rt_counter_for(storage, &counter))))
        return st;
    wb_tensor *t = wb_rt_tensor_alloc();
    if (!t) {
        if (counter)
            wb_rt_counter_release(counter);
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a tensor");
    }
    wb_rt_tensor_init(t, storage, dtype, ndim, sizes, strides, offset);
    t->counter = base ? wb_rt_counter_share(base) : counter;
    *out = t;
    return WB_OK;
}

wb_status wb_tensor_from_storage(wb_storage *storage, DLDataType dtype,
                                 int ndim, const int64_t *sizes,
                                 const int64_t *strides, int64_t offset,
                                 wb_tensor **out)
{
    return wb_rt_view_new("wb_tensor_from_storage", storage, dtype, ndim,
                          sizes, strides, offset, NULL, out);
}

wb_status wb_tensor_new(DLDataType dtype, DLDevice device, int ndim,
                        const int64_t *sizes, wb_tensor **out)
{
    wb_storage *s;
    wb_status st;
    char dt[32];
    if (!out || (ndim > 0 && !sizes))
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_new: NULL sizes or out");
    if (ndim < 0 || ndim > WB_MAX_DIMS)
        return wb_rt_fail(WB_ERR_SHAPE, "ndim %d is outside 0..%d", ndim,
                          WB_MAX_DIMS);
    if (wb_dtype_size(dtype) == 0)
        return wb_rt_fail(WB_ERR_TYPE, "dtype %s is not byte-addressable",
                          wb_rt_dtype_str(dtype, dt, sizeof dt));
    int64_t nbytes = wb_rt_contiguous_nbytes(dtype, ndim, sizes);
    if (nbytes < 0)
        return wb_rt_fail(WB_ERR_SHAPE, "negative or overflowing sizes");
    if ((st = wb_storage_new(device, (size_t)nbytes, &s)) != WB_OK)
        return st;
    st = wb_tensor_from_storage(s, dtype, ndim, sizes, NULL, 0, out);
    wb_storage_release(s);
    return st;
}

wb_status wb_tensor_as_strided(const wb_tensor *base, int ndim,
                               const int64_t *sizes, const int64_t *strides,
                               int64_t offset, wb_tensor **out)
{
    if (!base)
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_as_strided: base is NULL");
    return wb_rt_view_new("wb_tensor_as_strided", base->storage, base->dtype,
                          ndim, sizes, strides, offset, base, out);
}

wb_status wb_tensor_detach(const wb_tensor *t, wb_tensor **out)
{
    if (!t || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_detach: NULL argument");
    wb_tensor *d = wb_rt_tensor_alloc();
    if (!d)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a tensor");
    wb_rt_tensor_init(d, t->storage, t->dtype, t->ndim, t->sizes, t->strides,
                      t->offset);
    d->counter = wb_rt_counter_share(t);
    /* Calls may be writing them on t (wb_tensor_requires_grad). */
    d->flags = __atomic_load_n(&t->flags, __ATOMIC_RELAXED) &
               ~WB_TENSOR_REQUIRES_GRAD;
    d->dyn_dims = __atomic_load_n(&t->dyn_dims, __ATOMIC_RELAXED);
    *out = d;
    return WB_OK;
}

wb_status wb_tensor_as_strided_(wb_tensor *t, int ndim, const int64_t *sizes,
                                const int64_t *strides, int64_t offset)
{
    int64_t cstrides[WB_MAX_DIMS];
    wb_status st;
    if (!t || (ndim > 0 && !sizes))
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_as_strided_: NULL argument");
    if (ndim < 0 || ndim > WB_MAX_DIMS)
        return wb_rt_fail(WB_ERR_SHAPE, "ndim %d is outside 0..%d", ndim,
                          WB_MAX_DIMS);
    if (!strides) {
        wb_rt_contiguous_strides(ndim, sizes, cstrides);
        strides = cstrides;
    }
    st = wb_rt_check_view(t->dtype, ndim, sizes, strides, offset,
                          t->storage->nbytes);
    if (st != WB_OK)
        return st;
    t->ndim = ndim;
    t->offset = offset;
    /* sizes may be NULL for a 0-d view (see wb_rt_tensor_init). */
    if (ndim > 0) {
        memmove(t->sizes, sizes, sizeof *sizes * (size_t)ndim);
        memmove(t->strides, strides, sizeof *strides * (size_t)ndim);
    }
    return WB_OK;
}

/* The address of a view's element 0, as an integer: a storage of no bytes
   may have NULL data, on which pointer arithmetic is undefined. */
static uintptr_t wb_rt_view_addr(const wb_tensor *t)
{
    return (uintptr_t)t->storage->data +
           (uintptr_t)(t->offset * (int64_t)wb_dtype_size(t->dtype));
}

/* ---- overlap ----

   Element i of a view starts at byte addr + es * sum over d of i[d] *
   stride[d] and covers es bytes, and strides are never negative
   (wb_rt_check_view).  Whether two views share a byte, or two elements of
   one view do, is then a question about integer combinations of strides.
   Each rule below decides it for certain or hands it on; what none decides
   cheaply stays "may overlap".  No rule walks a view's elements. */

/* One term of such a combination: a coefficient in [lo, hi] times a byte
   stride s > 0.  below_lo and below_hi bound the sum of the terms before
   it, which have smaller strides. */
typedef struct wb_rt_term {
    int64_t s, lo, hi, below_lo, below_hi;
} wb_rt_term;

/* The most coefficients wb_rt_reach tries, so that an undecided case costs
   a few thousand instructions at worst, whatever the views' sizes. */
#define WB_RT_REACH_BUDGET 256

/* Views whose bytes end past this (from their storage's start) are left
   undecided, so that the sums below cannot overflow: no real memory is that
   large. */
#define WB_RT_REACH_MAX (INT64_MAX / 8)

/* Division rounding down and up, for a divisor b > 0. */
static int64_t wb_rt_div_floor(int64_t a, int64_t b)
{
    return a / b - (a % b < 0);
}

static int64_t wb_rt_div_ceil(int64_t a, int64_t b)
{
    return a / b + (a % b > 0);
}

/* Whether terms 0..k-1 can sum to a value in [tlo, thi]: 1 when a choice
   of coefficients was found, 0 when there is none, -1 when the budget ran
   out first.  The answer 0 is sound because a coefficient is skipped only
   when the terms below it cannot make up the rest even at their bounds. */
static int wb_rt_reach(const wb_rt_term *t, int k, int64_t tlo, int64_t thi,
                       int *budget)
{
    if (k == 0)
        return tlo <= 0 && 0 <= thi;
    const wb_rt_term *m = &t[k - 1];
    int64_t c = wb_rt_div_ceil(tlo - m->below_hi, m->s);
    int64_t last = wb_rt_div_floor(thi - m->below_lo, m->s);
    if (c < m->lo)
        c = m->lo;
    if (last > m->hi)
        last = m->hi;
    for (; c <= last; c++) {
        if (--*budget < 0)
            return -1;
        int r = wb_rt_reach(t, k - 1, tlo - c * m->s, thi - c * m->s, budget);
        if (r)
            return r;
    }
    return 0;
}

/* Sorts n terms by stride: insertion, as there are at most
   2 * WB_MAX_DIMS. */
static void wb_rt_terms_sort(wb_rt_term *t, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t[j].s < t[j - 1].s; j--) {
            wb_rt_term x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
}

/* Fills in what the terms before each, sorted, can add. */
static void wb_rt_terms_bound(wb_rt_term *t, int n)
{
    int64_t lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        t[i].below_lo = lo;
        t[i].below_hi = hi;
        lo += t[i].lo * t[i].s;
        hi += t[i].hi * t[i].s;
    }
}

static int64_t wb_rt_gcd(int64_t a, int64_t b)
{
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Whether two elements of t share a byte, t's "internal overlap", for a
   t that is not contiguous (wb_rt_copy_overlap tests that first). */
static WB_RT_NOINLINE wb_rt_overlap wb_rt_self_overlap(const wb_tensor *t)
{
    /* Differences of two indices: dim d contributes a coefficient in
       [-(size - 1), size - 1].  Dims of size 1 contribute nothing, and a
       view with no element has no two elements. */
    int64_t es = (int64_t)wb_rt_esize(t->dtype);
    wb_rt_term term[WB_MAX_DIMS];
    int n = 0;
    if (wb_tensor_numel(t) == 0)
        return WB_RT_APART;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 1)
            continue;
        /* Indices 0 and 1 along this dim are one element. */
        if (t->strides[d] == 0)
            return WB_RT_OVERLAPS;
        term[n++] = (wb_rt_term){t->strides[d] * es, 1 - t->sizes[d],
                                 t->sizes[d] - 1, 0, 0};
    }
    if (wb_rt_view_end(t->dtype, t->ndim, t->sizes, t->strides, t->offset) >
        WB_RT_REACH_MAX)
        return WB_RT_MAY_OVERLAP;
    wb_rt_terms_sort(term, n);
    wb_rt_terms_bound(term, n);

    /* Two distinct indices differ, and the dim of the largest stride where
       they do can be taken to have a positive coefficient c: they are one
       element when the dims below make up -c * s, and by symmetry when they
       make up c * s.  Where every stride is past what the dims below reach
       (below_hi), no c fits: that is the classic test that strides sorted
       ascending each exceed the extent of the smaller dims.  Two dims of
       one stride are caught too, with c = 1 against the other's -1.
       Elements of one view start a multiple of es apart, so sharing a byte
       means starting at the same byte. */
    int budget = WB_RT_REACH_BUDGET;
    for (int m = 0; m < n; m++) {
        int64_t s = term[m].s;
        for (int64_t c = 1; c <= term[m].hi && c * s <= term[m].below_hi;
             c++) {
            int r = --budget < 0 ? -1
                                 : wb_rt_reach(term, m, c * s, c * s, &budget);
            if (r)
                return r > 0 ? WB_RT_OVERLAPS : WB_RT_MAY_OVERLAP;
        }
    }
    return WB_RT_APART;
}

wb_rt_overlap wb_rt_views_overlap(const wb_tensor *a, const wb_tensor *b)
{
    uintptr_t ba = (uintptr_t)a->storage->data;
    uintptr_t bb = (uintptr_t)b->storage->data;
    /* The common case, storages over disjoint memory, costs no view walk.
       Ranges are compared by address rather than by storage, because two
       storages may wrap the same memory (a DLPack export imported back, one
       buffer wrapped twice). */
    if (a->storage != b->storage && (ba >= bb + b->storage->nbytes ||
                                     bb >= ba + a->storage->nbytes))
        return WB_RT_APART;
    if (wb_tensor_numel(a) == 0 || wb_tensor_numel(b) == 0)
        return WB_RT_APART;
    /* Views whose byte ranges are apart share no byte. */
    int64_t ea = wb_rt_view_end(a->dtype, a->ndim, a->sizes, a->strides,
                                a->offset);
    int64_t eb = wb_rt_view_end(b->dtype, b->ndim, b->sizes, b->strides,
                                b->offset);
    uintptr_t xa = wb_rt_view_addr(a), xb = wb_rt_view_addr(b);
    if (xa >= bb + (uintptr_t)eb || xb >= ba + (uintptr_t)ea)
        return WB_RT_APART;
    if (ea > WB_RT_REACH_MAX || eb > WB_RT_REACH_MAX)
        return WB_RT_MAY_OVERLAP;

    /* Element i of a at xa + pa(i), element j of b at xb + pb(j), of sizes
       sa and sb, share a byte when pa(i) - pb(j) lies in [x - sa + 1,
       x + sb - 1], x = xb - xa.  pa(i) - pb(j) is a sum of terms: a's
       strides with coefficients in [0, size - 1], b's in [-(size - 1), 0].
       Terms of one stride merge into one whose range is the sum of the
       ranges, as a sum of integer ranges is the range of the sums. */
    int64_t sa = (int64_t)wb_rt_esize(a->dtype);
    int64_t sb = (int64_t)wb_rt_esize(b->dtype);
    int64_t x = xb >= xa ? (int64_t)(xb - xa) : -(int64_t)(xa - xb);
    wb_rt_term term[2 * WB_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] > 1 && a->strides[d] > 0)
            term[n++] = (wb_rt_term){a->strides[d] * sa, 0, a->sizes[d] - 1,
                                     0, 0};
    for (int d = 0; d < b->ndim; d++)
        if (b->sizes[d] > 1 && b->strides[d] > 0)
            term[n++] = (wb_rt_term){b->strides[d] * sb, 1 - b->sizes[d], 0,
                                     0, 0};
    wb_rt_terms_sort(term, n);
    int k = 0;
    int64_t g = 0;
    for (int i = 0; i < n; i++) {
        if (k > 0 && term[k - 1].s == term[i].s) {
            term[k - 1].lo += term[i].lo;
            term[k - 1].hi += term[i].hi;
        } else {
            term[k++] = term[i];
        }
        g = wb_rt_gcd(g, term[i].s);
    }
    wb_rt_terms_bound(term, k);

    /* Every pa(i) - pb(j) is a multiple of g, the gcd of the strides: with
       none in the target range, no element meets another (the even and the
       odd elements of one storage).  With no stride at all, each view is
       one element, and their byte ranges meet. */
    int64_t tlo = x - sa + 1, thi = x + sb - 1;
    if (g == 0)
        return WB_RT_OVERLAPS;
    if (wb_rt_div_floor(thi, g) < wb_rt_div_ceil(tlo, g))
        return WB_RT_APART;
    int budget = WB_RT_REACH_BUDGET;
    int r = wb_rt_reach(term, k, tlo, thi, &budget);
    return r > 0 ? WB_RT_OVERLAPS : r == 0 ? WB_RT_APART : WB_RT_MAY_OVERLAP;
}

/* PyTorch's copy_ returns at once when destination and source are the
   same view, before it looks at how either lies in memory.  Otherwise it
   refuses a destination two of whose elements are one, then one that shares
   memory with the source.  It decides those only in its easy cases (a zero
   stride; two dense views) and lets the rest through, a real overlap
   between non-dense views included; here every rule above decides, and
   what none can is refused as "may overlap", because such a copy's result
   would depend on the order it runs in. */
wb_rt_overlap wb_rt_copy_overlap(const wb_tensor *dst, const wb_tensor *src,
                                 bool *within)
{
    wb_rt_overlap between = wb_rt_views_overlap(dst, src), self;
    *within = false;
    if (between && wb_rt_same_view(dst, src))
        return WB_RT_APART;
    /* The common case: a contiguous destination, whose elements lie one
       after another, costs one pass and no call. */
    uint64_t expect = 1;
    int d;
    for (d = dst->ndim - 1; d >= 0; d--) {
        if ((uint64_t)dst->strides[d] != expect && dst->sizes[d] != 1)
            break;
        expect *= (uint64_t)dst->sizes[d];
    }
    if (d < 0)
        return between;
    if ((self = wb_rt_self_overlap(dst)) != WB_RT_APART) {
        *within = true;
        return self;
    }
    return between;
}

/* Same element 0, dtype, sizes and strides (those of size-1 dims aside):
   by address too, for the reason given above. */
bool wb_rt_same_view(const wb_tensor *a, const wb_tensor *b)
{
    if (wb_rt_view_addr(a) != wb_rt_view_addr(b) || a->ndim != b->ndim ||
        !wb_rt_dtype_eq(a->dtype, b->dtype))
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] ||
            (a->sizes[d] > 1 && a->strides[d] != b->strides[d]))
            return false;
    return true;
}

bool wb_tensor_is_contiguous(const wb_tensor *t)
{
    uint64_t expect = 1;
    if (!t)
        return false;
    /* An empty tensor is contiguous whatever its strides, and the zero size
       may sit outside a dim whose stride would say otherwise. */
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] == 0)
            return true;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && (uint64_t)t->strides[d] != expect)
            return false;
        expect *= (uint64_t)t->sizes[d];
    }
    return true;
}

/* Copies one row of n elements of es bytes with the given byte strides. */
static void wb_rt_copy_row(char *dst, int64_t ds, const char *src, int64_t ss,
                           int64_t n, size_t es)
{
    switch (es) {
#define WB_RT_ROW(T)                                                    \
    for (int64_t i = 0; i < n; i++, dst += ds, src += ss)               \
        memcpy(dst, src, sizeof(T));                                    \
    return
    case 1: WB_RT_ROW(uint8_t);
    case 2: WB_RT_ROW(uint16_t);
    case 4: WB_RT_ROW(uint32_t);
    case 8: WB_RT_ROW(uint64_t);
#undef WB_RT_ROW
    default:
        for (int64_t i = 0; i < n; i++, dst += ds, src += ss)
            memcpy(dst, src, es);
    }
}

void wb_rt_copy_elems(wb_tensor *dst, const wb_tensor *src)
{
    size_t es = wb_dtype_size(dst->dtype);
    char *d = (char *)dst->storage->data + dst->offset * (int64_t)es;
    const char *s = (const char *)src->storage->data + src->offset * (int64_t)es;
    int nd = dst->ndim;
    int64_t numel = wb_tensor_numel(dst);
    if (numel == 0 || d == s)
        return;
    if (wb_tensor_is_contiguous(dst) && wb_tensor_is_contiguous(src)) {
        memcpy(d, s, (size_t)numel * es);
        return;
    }
    if (nd == 0) {
        memcpy(d, s, es);
        return;
    }
    /* Walk every index but the innermost with a counter; copy rows. */
    int64_t idx[WB_MAX_DIMS] = {0};
    int64_t rows = numel / dst->sizes[nd - 1];
    int64_t dsi = dst->strides[nd - 1] * (int64_t)es;
    int64_t ssi = src->strides[nd - 1] * (int64_t)es;
    for (int64_t r = 0; r < rows; r++) {
        int64_t doff = 0, soff = 0;
        for (int k = 0; k < nd - 1; k++) {
            doff += idx[k] * dst->strides[k];
            soff += idx[k] * src->strides[k];
        }
        wb_rt_copy_row(d + doff * (int64_t)es, dsi, s + soff * (int64_t)es,
                       ssi, dst->sizes[nd - 1], es);
        for (int k = nd - 2; k >= 0; k--) {
            if (++idx[k] < dst->sizes[k])
                break;
            idx[k] = 0;
        }
    }
}

wb_status wb_tensor_copy_(wb_tensor *dst, const wb_tensor *src)
{
    char a[32], b[32];
    if (!dst || !src)
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_copy_: NULL tensor");
    if (!wb_rt_dtype_eq(dst->dtype, src->dtype))
        return wb_rt_fail(WB_ERR_TYPE, "copy from %s into %s",
                          wb_rt_dtype_str(src->dtype, a, sizeof a),
                          wb_rt_dtype_str(dst->dtype, b, sizeof b));
    if (!wb_rt_device_eq(dst->storage->device, src->storage->device))
        return wb_rt_fail(WB_ERR_DEVICE, "copy across devices");
    if (!wb_rt_same_sizes(dst, src))
        return wb_rt_fail(WB_ERR_SHAPE, "copy between different sizes");
    bool within;
    wb_rt_overlap ov = wb_rt_copy_overlap(dst, src, &within);
    if (ov && within)
        return wb_rt_fail(WB_ERR_SHAPE, "copy into a view in which more than "
                          "one element %s a single memory location",
                          ov == WB_RT_OVERLAPS ? "refers to" : "may refer to");
    if (ov)
        return wb_rt_fail(WB_ERR_SHAPE, ov == WB_RT_OVERLAPS
                          ? "copy between overlapping views of one storage"
                          : "copy between views of one storage that may "
                            "overlap");
    if (dst->storage->device.device_type != kDLCPU) {
        wb_status st = wb_rt_device_copy_now(dst, src);
        if (st != WB_OK)
            return st;
    } else {
        wb_rt_copy_elems(dst, src);
    }
    wb_rt_bump_by(dst, 1);
    return WB_OK;
}

static void wb_rt_dlpack_release(void *ctx, void *data);

/* Plans the growth resize_ needs for t at sizes: g->data NULL if none. */
wb_status wb_rt_plan_grow(const wb_tensor *t, int ndim,
                                 const int64_t *sizes, wb_rt_grow *g)
{
    int64_t n = wb_rt_contiguous_nbytes(t->dtype, ndim, sizes), need;
    *g = (wb_rt_grow){NULL, 0, NULL};
    /* An empty result needs no byte, wherever it starts: no growth, as
       PyTorch's maybe_resize_storage_cpu bails when numel is 0. */
    if (n == 0)
        return WB_OK;
    if (n < 0 || __builtin_add_overflow(n, t->offset *
                                        (int64_t)wb_dtype_size(t->dtype),
                                        &need))
        return wb_rt_fail(WB_ERR_SHAPE, "resize to negative or overflowing sizes");
    if ((size_t)need <= t->storage->nbytes)
        return WB_OK;
    /* Growth moves the data and frees the old buffer, which an export
       still points at; memory the library did not allocate (an import's,
       which goes back to its producer, or the caller's) does not move. */
    if (atomic_load_explicit(&t->storage->exports, memory_order_acquire))
        return wb_rt_fail(WB_ERR_INVALID, "cannot grow a storage that a "
                          "DLPack export (wb_tensor_to_dlpack) holds: its "
                          "data would move");
    if (!t->storage->resizable)
        return wb_rt_fail(WB_ERR_INVALID, "cannot grow a storage %s",
                          t->storage->deleter == wb_rt_dlpack_release
                              ? "imported from DLPack (wb_tensor_from_dlpack): "
                                "its data is the producer's"
                              : "that wraps memory of the caller's "
                                "(wb_storage_wrap): it is not resizable");
    if (t->storage->device.device_type != kDLCPU)
        return wb_rt_device_grow(t->storage, (size_t)need, g);
    if (!(g->data = calloc(1, (size_t)need)))
        return wb_rt_fail(WB_ERR_NOMEM, "cannot grow a storage to %lld bytes",
                          (long long)need);
    g->nbytes = (size_t)need;
    return WB_OK;
}

void wb_rt_grow_discard(wb_rt_grow *g)
{
    if (g->husk) {
        /* A planned CUDA growth: the husk's deleter frees the new block. */
        g->husk->data = g->data;
        wb_storage_release(g->husk);
    } else {
        free(g->data);
    }
    *g = (wb_rt_grow){NULL, 0, NULL};
}

/* Applies a planned resize; cannot fail. */
void wb_rt_apply_resize(wb_tensor *t, int ndim, const int64_t *sizes,
                               wb_rt_grow *g)
{
    wb_storage *s = t->storage;
    if (g->husk) {
        wb_rt_device_regrow(s, g);
    } else if (g->data) {
        /* memcpy takes no NULL, even for no bytes. */
        if (s->nbytes)
            memcpy(g->data, s->data, s->nbytes);
        if (s->deleter)
            s->deleter(s->deleter_ctx, s->data);
        s->data = g->data;
        s->nbytes = g->nbytes;
        s->deleter = wb_rt_free_data;
        s->deleter_ctx = NULL;
        g->data = NULL;
    }
    /* sizes may be NULL for a 0-d resize (see wb_rt_tensor_init). */
    if (ndim > 0)
        memmove(t->sizes, sizes, sizeof *sizes * (size_t)ndim);
    t->ndim = ndim;
    wb_rt_contiguous_strides(ndim, t->sizes, t->strides);
}

wb_status wb_tensor_resize_(wb_tensor *t, int ndim, const int64_t *sizes)
{
    wb_rt_grow g;
    wb_status st;
    if (!t || (ndim > 0 && !sizes))
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_resize_: NULL argument");
    if (ndim < 0 || ndim > WB_MAX_DIMS)
        return wb_rt_fail(WB_ERR_SHAPE, "ndim %d is outside 0..%d", ndim,
                          WB_MAX_DIMS);
    if ((st = wb_rt_plan_grow(t, ndim, sizes, &g)) != WB_OK)
        return st;
    if (g.husk)
        return wb_rt_device_resize_now(t, ndim, sizes, &g);
    wb_rt_apply_resize(t, ndim, sizes, &g);
    return WB_OK;
}

wb_status wb_tensor_set_(wb_tensor *t, const wb_tensor *src)
{
    if (!t || !src)
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_set_: NULL tensor");
    if (t->fixed)
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_set_: the tensor's "
                          "storage is fixed (wb_tensor_fix_storage)");
    /* As torch.Tensor.set_, which takes a source of the tensor's dtype on
       its device alone. */
    char a[32], b[32];
    if (!wb_rt_dtype_eq(t->dtype, src->dtype))
        return wb_rt_fail(WB_ERR_TYPE, "wb_tensor_set_: the source has dtype "
                          "%s; the tensor %s",
                          wb_rt_dtype_str(src->dtype, a, sizeof a),
                          wb_rt_dtype_str(t->dtype, b, sizeof b));
    if (!wb_rt_device_eq(t->storage->device, src->storage->device))
        return wb_rt_fail(WB_ERR_DEVICE, "wb_tensor_set_: the source is on "
                          "%s; the tensor on %s",
                          wb_rt_device_str(src->storage->device, a, sizeof a),
                          wb_rt_device_str(t->storage->device, b, sizeof b));
    wb_storage *old = t->storage;
    wb_tensor *keeper = t->keeper;
    /* t keeps its counter: the old storage's object stays for it. */
    if (!t->counter && old != src->storage) {
        atomic_fetch_add_explicit(&old->counter_refs, 1, memory_order_relaxed);
        t->counter = old;
    }
    wb_rt_set_storage(t, wb_storage_retain(src->storage));
    t->keeper = NULL;
    if (t != src)
        wb_rt_take_view(t, src);
    wb_rt_bump_by(t, 1);
    /* What t held of its old storage: a reference, or the tensor it kept,
       which holds the storage for it. */
    if (keeper)
        wb_rt_release(keeper);
    else
        wb_storage_release(old);
    return WB_OK;
}

void wb_tensor_fix_storage(wb_tensor *t)
{
    if (t)
        t->fixed = true;
}

bool wb_tensor_storage_fixed(const wb_tensor *t)
{
    return t && t->fixed;
}

wb_tensor *wb_tensor_retain(wb_tensor *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

/* wb_rt_tensor_free of a view that kept a tensor or holds a counter of
   another storage.  Out of line, or gcc makes the kept tensor's own free a
   loop in wb_rt_tensor_free, which then saves registers for every
   header. */
static WB_RT_NOINLINE void wb_rt_tensor_free_held(wb_tensor *t)
{
    wb_tensor *keeper = t->keeper;
    if (t->counter) {
        wb_rt_counter_release(t->counter);
        t->counter = NULL;
    }
    if (!keeper) {
        wb_storage_release(t->storage);
        wb_rt_tensor_discard(t);
        return;
    }
    t->keeper = NULL;
    wb_rt_tensor_discard(t);
    wb_rt_release(keeper);
}

/* wb_rt_tensor_free_held, first for the common case: a view that keeps a
   fixed value (and no counter), into a cache with room, goes back to the
   cache with no call but the keeper's free, a tail call, so that nothing
   is saved. */
static WB_RT_NOINLINE void wb_rt_tensor_free_kept(wb_tensor *t)
{
    wb_rt_cache *c = &wb_rt_tcache;
    wb_tensor *keeper = t->keeper;
    if (!keeper || t->counter || !wb_rt_cache_room(c) || !c->registered ||
        c->closed) {
        wb_rt_tensor_free_held(t);
        return;
    }
    t->keeper = NULL;
    wb_rt_cache_push(c, t);
    wb_rt_release(keeper);
}

void wb_rt_tensor_free(wb_tensor *t)
{
    if ((uintptr_t)t->keeper | (uintptr_t)t->counter) {
        wb_rt_tensor_free_kept(t);
        return;
    }
    wb_storage_release(t->storage);
    wb_rt_tensor_discard(t);
}

void wb_tensor_release(wb_tensor *t)
{
    if (t)
        wb_rt_release(t);
}

long wb_tensor_refcount(const wb_tensor *t)
{
    return t ? atomic_load(&t->refcount) : 0;
}

int wb_tensor_ndim(const wb_tensor *t) { return t ? t->ndim : 0; }
const int64_t *wb_tensor_sizes(const wb_tensor *t) { return t ? t->sizes : NULL; }
const int64_t *wb_tensor_strides(const wb_tensor *t) { return t ? t->strides : NULL; }
int64_t wb_tensor_offset(const wb_tensor *t) { return t ? t->offset : 0; }
wb_storage *wb_tensor_storage(const wb_tensor *t) { return t ? t->storage : NULL; }
uint32_t wb_tensor_flags(const wb_tensor *t)
{
    return t ? __atomic_load_n(&t->flags, __ATOMIC_RELAXED) : 0;
}
uint64_t wb_tensor_dynamic_dims(const wb_tensor *t)
{
    return t ? __atomic_load_n(&t->dyn_dims, __ATOMIC_RELAXED) : 0;
}

int64_t wb_tensor_numel(const wb_tensor *t)
{
    int64_t n = 1;
    if (!t)
        return 0;
    /* The views the checks accept have counts that fit, but the partial
       product of an empty view's other dims need not. */
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] == 0)
            return 0;
    for (int d = 0; d < t->ndim; d++)
        n *= t->sizes[d];
    return n;
}

DLDataType wb_tensor_dtype(const wb_tensor *t)
{
    DLDataType none = {0, 0, 0};
    return t ? t->dtype : none;
}

DLDevice wb_tensor_device(const wb_tensor *t)
{
    return wb_storage_device(t ? t->storage : NULL);
}

void *wb_tensor_data(const wb_tensor *t)
{
    if (!t)
        return NULL;
    return (char *)t->storage->data + t->offset * (int64_t)wb_dtype_size(t->dtype);
}

/* Flags and dynamic dims are read and written atomically, as calls that
   hand the tensor out write them (views.c, wb_rt_set_flags). */
bool wb_tensor_requires_grad(const wb_tensor *t)
{
    return t && (__atomic_load_n(&t->flags, __ATOMIC_RELAXED) &
                 WB_TENSOR_REQUIRES_GRAD);
}

void wb_tensor_set_requires_grad(wb_tensor *t, bool on)
{
    if (!t)
        return;
    if (on)
        __atomic_fetch_or(&t->flags, WB_TENSOR_REQUIRES_GRAD,
                          __ATOMIC_RELAXED);
    else
        __atomic_fetch_and(&t->flags, ~WB_TENSOR_REQUIRES_GRAD,
                           __ATOMIC_RELAXED);
}

void wb_tensor_set_dynamic_dims(wb_tensor *t, uint64_t mask)
{
    if (t)
        __atomic_store_n(&t->dyn_dims, mask, __ATOMIC_RELAXED);
}

uint64_t wb_tensor_version(const wb_tensor *t)
{
    return t ? atomic_load_explicit(wb_rt_version(t), memory_order_relaxed)
             : 0;
}

/* ---- DLPack ---- */

static void wb_rt_dlpack_release(void *ctx, void *data)
{
    DLManagedTensor *mt = ctx;
    (void)data;
    if (mt->deleter)
        mt->deleter(mt);
}

wb_status wb_tensor_from_dlpack(DLManagedTensor *mt, wb_tensor **out)
{
    int64_t strides[WB_MAX_DIMS];
    wb_storage *s;
    wb_status st;
    char dt[32];
    if (!mt || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_from_dlpack: NULL argument");
    const DLTensor *dl = &mt->dl_tensor;
    size_t es = wb_dtype_size(dl->dtype);
    if (es == 0)
        return wb_rt_fail(WB_ERR_TYPE, "DLPack dtype %s is not byte-addressable",
                          wb_rt_dtype_str(dl->dtype, dt, sizeof dt));
    if (dl->ndim < 0 || dl->ndim > WB_MAX_DIMS || (dl->ndim && !dl->shape))
        return wb_rt_fail(WB_ERR_SHAPE, "DLPack ndim %d is outside 0..%d",
                          dl->ndim, WB_MAX_DIMS);
    for (int d = 0; d < dl->ndim; d++)
        if (dl->shape[d] < 0 || (dl->strides && dl->strides[d] < 0))
            return wb_rt_fail(WB_ERR_SHAPE, "DLPack dim %d has size %lld and "
                              "stride %lld; negative ones are not supported",
                              d, (long long)dl->shape[d],
                              (long long)(dl->strides ? dl->strides[d] : 0));
    if (dl->byte_offset % es)
        return wb_rt_fail(WB_ERR_SHAPE,
                          "DLPack byte_offset %llu is not a multiple of the "
                          "element size %zu",
                          (unsigned long long)dl->byte_offset, es);
    if (dl->strides)
        memcpy(strides, dl->strides, sizeof *strides * (size_t)dl->ndim);
    else
        wb_rt_contiguous_strides(dl->ndim, dl->shape, strides);
    int64_t offset = (int64_t)(dl->byte_offset / es);
    int64_t end = wb_rt_view_end(dl->dtype, dl->ndim, dl->shape, strides, offset);
    if (end < 0)
        return wb_rt_fail(WB_ERR_SHAPE, "DLPack view extent overflows");
    st = wb_storage_wrap(dl->data, (size_t)end, dl->device,
                         wb_rt_dlpack_release, mt, &s);
    if (st != WB_OK)
        return st;
    s->deleter = NULL;  /* until the view is made, a failure must not
                           consume mt */
    st = wb_tensor_from_storage(s, dl->dtype, dl->ndim, dl->shape, strides,
                                offset, out);
    if (st == WB_OK)
        s->deleter = wb_rt_dlpack_release;
    wb_storage_release(s);
    return st;
}

/* The exported DLManagedTensor and the arrays it points to, in one block. */
typedef struct wb_rt_export {
    DLManagedTensor mt;
    int64_t shape[WB_MAX_DIMS];
    int64_t strides[WB_MAX_DIMS];
} wb_rt_export;

static void wb_rt_export_free(DLManagedTensor *mt)
{
    wb_rt_export *x = (wb_rt_export *)mt;
    wb_storage *s = mt->manager_ctx;
    atomic_fetch_sub_explicit(&s->exports, 1, memory_order_release);
    wb_storage_release(s);
    free(x);
}

wb_status wb_tensor_to_dlpack(const wb_tensor *t, DLManagedTensor **out)
{
    if (!t || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_tensor_to_dlpack: NULL argument");
    wb_rt_export *x = calloc(1, sizeof *x);
    if (!x)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a DLPack export");
    memcpy(x->shape, t->sizes, sizeof *t->sizes * (size_t)t->ndim);
    memcpy(x->strides, t->strides, sizeof *t->strides * (size_t)t->ndim);
    x->mt.dl_tensor.data = t->storage->data;
    x->mt.dl_tensor.device = t->storage->device;
    x->mt.dl_tensor.ndim = t->ndim;
    x->mt.dl_tensor.dtype = t->dtype;
    x->mt.dl_tensor.shape = x->shape;
    x->mt.dl_tensor.strides = x->strides;
    x->mt.dl_tensor.byte_offset =
        (uint64_t)t->offset * wb_dtype_size(t->dtype);
    atomic_fetch_add_explicit(&t->storage->exports, 1, memory_order_relaxed);
    x->mt.manager_ctx = wb_storage_retain(t->storage);
    x->mt.deleter = wb_rt_export_free;
    *out = &x->mt;
    return WB_OK;
}
