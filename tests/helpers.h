/*
 * helpers.h -- what every test file shares: tensors with known contents,
 * both tiers, and assertions that print wrapbake's own message.
 */
#ifndef WB_TEST_HELPERS_H
#define WB_TEST_HELPERS_H

#ifdef WB_TEST_SHIM
#include "tools/shim.h"  /* the concurrency tests under ThreadSanitizer */
#else
#include <criterion/criterion.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrapbake.h"

static const DLDataType WBT_F32 = {kDLFloat, 32, 1};
static const DLDataType WBT_F64 = {kDLFloat, 64, 1};
static const DLDataType WBT_I64 = {kDLInt, 64, 1};
static const DLDataType WBT_U8 = {kDLUInt, 8, 1};
static const DLDevice WBT_CPU = {kDLCPU, 0};

/* The tiers every semantic test runs on. */
static const wb_tier WBT_TIERS[] = {WB_TIER_INTERP, WB_TIER_TCC};
#define WBT_NTIERS 2
#define WBT_EACH_TIER(tier)                                                  \
    for (int wbt_ti_ = 0; wbt_ti_ < WBT_NTIERS; wbt_ti_++)                   \
        for (wb_tier tier = WBT_TIERS[wbt_ti_], wbt_once_ = 1; wbt_once_;   \
             wbt_once_ = 0)

/* Asserts a call succeeded, printing the library's message if not. */
#define WBT_OK(call)                                                         \
    do {                                                                     \
        wb_status wbt_st_ = (call);                                          \
        cr_assert_eq(wbt_st_, WB_OK, "%s -> %s: %s", #call,                  \
                     wb_status_str(wbt_st_), wb_last_error());               \
    } while (0)

/* Asserts a call failed with status and a message containing needle. */
#define WBT_FAILS(call, status, needle)                                      \
    do {                                                                     \
        wb_status wbt_st_ = (call);                                          \
        cr_assert_eq(wbt_st_, (status), "%s -> %s (expected %s): %s", #call, \
                     wb_status_str(wbt_st_), wb_status_str(status),          \
                     wb_last_error());                                       \
        cr_assert(strstr(wb_last_error(), (needle)) != NULL,                 \
                  "message '%s' lacks '%s'", wb_last_error(), (needle));     \
    } while (0)

/* A new contiguous float32 tensor whose element i (in row-major order)
   holds first + i. */
static inline wb_tensor *wbt_f32(float first, int ndim, ...)
{
    int64_t sizes[WB_MAX_DIMS];
    va_list ap;
    va_start(ap, ndim);
    for (int d = 0; d < ndim; d++)
        sizes[d] = va_arg(ap, int);
    va_end(ap);
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, ndim, sizes, &t));
    float *p = wb_tensor_data(t);
    for (int64_t i = 0; i < wb_tensor_numel(t); i++)
        p[i] = first + (float)i;
    return t;
}

/* The float32 element at a multi-index, following strides. */
static inline float wbt_at(const wb_tensor *t, ...)
{
    va_list ap;
    int64_t off = 0;
    va_start(ap, t);
    for (int d = 0; d < wb_tensor_ndim(t); d++)
        off += va_arg(ap, int) * wb_tensor_strides(t)[d];
    va_end(ap);
    return ((const float *)wb_tensor_data(t))[off];
}

/* Compares sizes (and strides when given) with literal arrays. */
static inline void wbt_assert_view(const wb_tensor *t, int ndim,
                                   const int64_t *sizes,
                                   const int64_t *strides, int64_t offset)
{
    cr_assert_eq(wb_tensor_ndim(t), ndim, "ndim %d, expected %d",
                 wb_tensor_ndim(t), ndim);
    for (int d = 0; d < ndim; d++) {
        cr_assert_eq(wb_tensor_sizes(t)[d], sizes[d], "size[%d]", d);
        if (strides)
            cr_assert_eq(wb_tensor_strides(t)[d], strides[d], "stride[%d]", d);
    }
    cr_assert_eq(wb_tensor_offset(t), offset, "offset %lld, expected %lld",
                 (long long)wb_tensor_offset(t), (long long)offset);
}

/* Everything observable about a tensor: its storage and bytes, view,
   version, references and flags.  read copies a storage's bytes to the
   host (NULL: they are host memory). */
typedef void wbt_read_fn(const wb_storage *s, void *host, size_t n);
typedef struct wbt_snap {
    const wb_tensor *t;
    wbt_read_fn *read;
    wb_storage *storage;
    void *data;
    size_t nbytes;
    unsigned char *bytes;
    DLDataType dtype;
    int ndim;
    int64_t sizes[WB_MAX_DIMS], strides[WB_MAX_DIMS], offset;
    uint64_t version;
    long refcount, srefcount;
    uint32_t flags;
    uint64_t dyn;
} wbt_snap;

static inline void wbt_snap_bytes(const wbt_snap *p, void *host)
{
    if (p->read)
        p->read(p->storage, host, p->nbytes);
    else if (p->nbytes)
        memcpy(host, wb_storage_data(p->storage), p->nbytes);
}

static inline void wbt_snap_take(wbt_snap *p, const wb_tensor *t,
                                 wbt_read_fn *read)
{
    p->t = t;
    p->read = read;
    p->storage = wb_tensor_storage(t);
    p->data = wb_storage_data(p->storage);
    p->nbytes = wb_storage_nbytes(p->storage);
    p->bytes = malloc(p->nbytes ? p->nbytes : 1);
    cr_assert_not_null(p->bytes);
    wbt_snap_bytes(p, p->bytes);
    p->dtype = wb_tensor_dtype(t);
    p->ndim = wb_tensor_ndim(t);
    memcpy(p->sizes, wb_tensor_sizes(t), sizeof(int64_t) * (size_t)p->ndim);
    memcpy(p->strides, wb_tensor_strides(t),
           sizeof(int64_t) * (size_t)p->ndim);
    p->offset = wb_tensor_offset(t);
    p->version = wb_tensor_version(t);
    p->refcount = wb_tensor_refcount(t);
    p->srefcount = wb_storage_refcount(p->storage);
    p->flags = wb_tensor_flags(t);
    p->dyn = wb_tensor_dynamic_dims(t);
}

/* Asserts t is exactly as it was but for `bumped` version bumps, then
   frees the snapshot. */
static inline void wbt_snap_check(wbt_snap *p, uint64_t bumped,
                                  const char *what)
{
    const wb_tensor *t = p->t;
    (void)what;  /* the concurrency build's assertions print no message */
    cr_assert_eq(wb_tensor_storage(t), p->storage, "%s: storage", what);
    cr_assert_eq(wb_storage_data(p->storage), p->data, "%s: data", what);
    cr_assert_eq(wb_storage_nbytes(p->storage), p->nbytes, "%s: nbytes",
                 what);
    unsigned char *now = malloc(p->nbytes ? p->nbytes : 1);
    cr_assert_not_null(now);
    wbt_snap_bytes(p, now);
    cr_assert(memcmp(now, p->bytes, p->nbytes) == 0, "%s: bytes changed",
              what);
    free(now);
    cr_assert(wb_tensor_dtype(t).code == p->dtype.code &&
              wb_tensor_dtype(t).bits == p->dtype.bits, "%s: dtype", what);
    cr_assert_eq(wb_tensor_ndim(t), p->ndim, "%s: ndim", what);
    for (int d = 0; d < p->ndim; d++) {
        cr_assert_eq(wb_tensor_sizes(t)[d], p->sizes[d], "%s: size %d", what,
                     d);
        cr_assert_eq(wb_tensor_strides(t)[d], p->strides[d], "%s: stride %d",
                     what, d);
    }
    cr_assert_eq(wb_tensor_offset(t), p->offset, "%s: offset", what);
    cr_assert_eq(wb_tensor_version(t), p->version + bumped, "%s: version "
                 "%llu, was %llu", what,
                 (unsigned long long)wb_tensor_version(t),
                 (unsigned long long)p->version);
    cr_assert_eq(wb_tensor_refcount(t), p->refcount, "%s: refcount", what);
    cr_assert_eq(wb_storage_refcount(p->storage), p->srefcount,
                 "%s: storage refcount", what);
    cr_assert_eq(wb_tensor_flags(t), p->flags, "%s: flags", what);
    cr_assert_eq(wb_tensor_dynamic_dims(t), p->dyn, "%s: dynamic dims", what);
    free(p->bytes);
    p->bytes = NULL;
}

/* A wrapper on the given tier, asserting it was built. */
static inline wb_wrapper *wbt_wrap(const wb_spec *spec, wb_graph_fn graph,
                                   void *ctx, wb_tier tier)
{
    wb_options o = {.tier = tier};
    wb_wrapper *w = NULL;
    WBT_OK(wb_wrapper_new(spec, graph, ctx, &o, &w));
    cr_assert_eq(wb_wrapper_tier(w), tier);
    return w;
}

/* Releases t after asserting nobody else holds it. */
static inline void wbt_release_last(wb_tensor *t)
{
    cr_assert_eq(wb_tensor_refcount(t), 1, "refcount %ld at the end",
                 wb_tensor_refcount(t));
    wb_tensor_release(t);
}

/* A whole file, NUL-terminated and malloc'ed, or NULL when it cannot be
   opened; tests run from the repository root. */
static inline char *wbt_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *p = malloc((size_t)n + 1);
    cr_assert_not_null(p);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = '\0';
    fclose(f);
    return p;
}

#endif /* WB_TEST_HELPERS_H */
