/*
 * mutate.c -- each mutation kind's check phase (wb_rt_prep_*) and commit
 * phase (wb_rt_commit_*), for the inputs the graph updated.
 *
 * Check and commit of a kind share static inline helpers (the copy and its
 * version bump, the unrolled checks of data mutations by rank), so they
 * live in one file where gcc can inline them into both.
 */
#include <string.h>

#include "abi.h"
#include "prim.h"

/* ---- check phase ---- */

/* after becomes t as far as a check needs it (storage, dtype, view),
   without touching t's reference count, which other threads may be
   changing. */
static void wb_rt_shadow(wb_tensor *after, const wb_tensor *t)
{
    wb_rt_set_storage(after, t->storage);
    after->dtype = t->dtype;
    wb_rt_take_view(after, t);
}

/* dtype and device of updated value v against input t. */
static wb_status wb_rt_prep_like(const wb_env *e, int input,
                                 const wb_tensor *t, const wb_tensor *v)
{
    char lb[400], a[32], b[32];
    if (!wb_rt_dtype_eq(t->dtype, v->dtype))
        return wb_rt_callf(e, WB_ERR_TYPE, "%s: the updated value has dtype "
                           "%s; expected %s",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           wb_rt_dtype_str(v->dtype, a, sizeof a),
                           wb_rt_dtype_str(t->dtype, b, sizeof b));
    if (!wb_rt_device_eq(t->storage->device, v->storage->device))
        return wb_rt_callf(e, WB_ERR_DEVICE, "%s: the updated value is on "
                           "%s; expected %s",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           wb_rt_device_str(v->storage->device, a, sizeof a),
                           wb_rt_device_str(t->storage->device, b, sizeof b));
    return WB_OK;
}

/* Out of line, so that its buffers cost the checks that pass nothing. */
static WB_RT_NOINLINE wb_status wb_rt_err_sizes(const wb_env *e, int input,
                                                const wb_tensor *after,
                                                const wb_tensor *v)
{
    char lb[400], a[WB_RT_SIZES_LEN], b[WB_RT_SIZES_LEN];
    return wb_rt_callf(e, WB_ERR_SHAPE, "%s: the updated value's sizes %s "
                       "differ from the input's %s",
                       wb_rt_input_label(e, input, lb, sizeof lb),
                       wb_rt_sizes_str(v->sizes, v->ndim, a, sizeof a),
                       wb_rt_sizes_str(after->sizes, after->ndim, b,
                                       sizeof b));
}

/* The copy into `after` (t as it will be when the copy runs) from v. */
static wb_status wb_rt_prep_copy(const wb_env *e, int input,
                                 const wb_tensor *after, const wb_tensor *v)
{
    char lb[400];
    if (!wb_rt_same_sizes(after, v))
        return wb_rt_err_sizes(e, input, after, v);
    bool within;
    wb_rt_overlap ov = wb_rt_copy_overlap(after, v, &within);
    if (ov && within)
        return wb_rt_callf(e, WB_ERR_SHAPE, "%s: more than one element of the "
                           "input %s a single memory location, so the "
                           "updated value cannot be copied into it",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           ov == WB_RT_OVERLAPS ? "refers to"
                                                : "may refer to");
    if (ov)
        return wb_rt_callf(e, WB_ERR_SHAPE, "%s: the updated value %s the "
                           "input in one storage",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           ov == WB_RT_OVERLAPS ? "overlaps" : "may overlap");
    if (after->storage->device.device_type != kDLCPU)
        return wb_rt_prep_device_copy(e, input, after, v);
    return WB_OK;
}

int wb_rt_prep_data(const wb_env *e, int input, const wb_tensor *t,
                          const wb_tensor *v)
{
    wb_status st = wb_rt_prep_like(e, input, t, v);
    return st != WB_OK ? st : wb_rt_prep_copy(e, input, t, v);
}

/* A metadata mutation: v's view must fit the storage of t. */
int wb_rt_prep_meta(const wb_env *e, int input, const wb_tensor *t,
                          const wb_tensor *v)
{
    char lb[400];
    wb_status st = wb_rt_prep_like(e, input, t, v);
    if (st != WB_OK)
        return st;
    int64_t end = wb_rt_fits(v, t->storage->nbytes);
    if (end >= 0)
        return wb_rt_callf(e, WB_ERR_SHAPE, "%s: the updated view does not "
                           "fit the input's storage: it ends at byte %lld, "
                           "past the storage's %zu bytes",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           (long long)end, t->storage->nbytes);
    return WB_OK;
}

int wb_rt_prep_data_meta(const wb_env *e, int input, const wb_tensor *t,
                               const wb_tensor *v)
{
    wb_status st = wb_rt_prep_meta(e, input, t, v);
    if (st != WB_OK)
        return st;
    wb_tensor after;
    wb_rt_shadow(&after, t);
    wb_rt_take_view(&after, v);
    return wb_rt_prep_copy(e, input, &after, v);
}

int wb_rt_prep_storage(const wb_env *e, int input, const wb_tensor *t,
                             const wb_tensor *v)
{
    char lb[400];
    if (t->fixed)
        return wb_rt_callf(e, WB_ERR_INVALID, "%s: its storage is fixed "
                           "(wb_tensor_fix_storage), and set_ would replace "
                           "it", wb_rt_input_label(e, input, lb, sizeof lb));
    return wb_rt_prep_like(e, input, t, v);
}

int wb_rt_prep_resize(const wb_env *e, int input, const wb_tensor *t,
                            const wb_tensor *v, wb_rt_grow *g)
{
    char lb[400];
    wb_status st = wb_rt_prep_like(e, input, t, v);
    *g = (wb_rt_grow){NULL, 0, NULL};
    if (st != WB_OK)
        return st;
    if (wb_rt_same_sizes(t, v))
        return wb_rt_prep_copy(e, input, t, v);
    /* The copy runs into t resized: contiguous at t's offset.  It is
       checked before any growth is planned, so a call refused for its
       device or stream allocates nothing. */
    wb_tensor after;
    wb_rt_grow none = {NULL, 0, NULL};
    wb_rt_shadow(&after, t);
    wb_rt_apply_resize(&after, v->ndim, v->sizes, &none);
    if ((st = wb_rt_prep_copy(e, input, &after, v)) != WB_OK)
        return st;
    if ((st = wb_rt_plan_grow(t, v->ndim, v->sizes, g)) != WB_OK)
        return wb_rt_callf(e, st, "%s: %s",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           wb_last_error());
    return WB_OK;
}
/* ---- commit phase ---- */

/* Each step bumps the input's version as AOTAutograd's epilogue does:
   once for its copy_ (through a detached alias for a mutation hidden from
   autograd, which bumps all the same), once for its as_strided_, once for
   its set_.  A resize bumps once, for its copy: resize_ bumps nothing, as
   in PyTorch. */

/* The copy of a data mutation: now on the CPU, at the end of the call on
   a CUDA device (wb_rt_flush). */
static void wb_rt_copy(wb_tensor *t, const wb_tensor *v)
{
    if (t->storage->device.device_type != kDLCPU)
        wb_rt_defer_copy(t, v);
    else
        wb_rt_copy_elems(t, v);
}

void wb_rt_commit_data(wb_tensor *t, wb_tensor *v)
{
    wb_rt_copy(t, v);
    wb_rt_bump_by(t, 1);
    wb_rt_release(v);
}

/* Data mutations of inputs declared with D dimensions, chosen by the
   emitter: the checks and the contiguous test unrolled for D.  Anything
   off the common path (another dtype, other sizes, memory that may overlap,
   an input that is not contiguous) goes to the generic primitive, which
   decides and words the message, so both tiers still agree.  A contiguous
   input cannot have two elements in one place, so only the others need the
   generic primitive's look at how the input lies. */
#define WB_RT_DATA_ND(D)                                                    \
    static bool wb_rt_dense_##D(const wb_tensor *t)                        \
    {                                                                       \
        /* Unsigned: an empty tensor's huge dims may wrap it, harmlessly   \
           (a copy of no element), where a signed one would overflow. */   \
        uint64_t expect = 1;                                                \
        for (int d = D - 1; d >= 0; d--) {                                  \
            if (t->sizes[d] != 1 && (uint64_t)t->strides[d] != expect)      \
                return false;                                               \
            expect *= (uint64_t)t->sizes[d];                                \
        }                                                                   \
        return true;                                                        \
    }                                                                       \
    /* The common case: v copies into t, a contiguous CPU tensor of its  \
       dtype and sizes, on another storage. */                            \
    static inline bool wb_rt_data_plain_##D(const wb_tensor *t,            \
                                            const wb_tensor *v)            \
    {                                                                       \
        const wb_storage *a = t->storage, *b = v->storage;                 \
        /* One word compares v's dtype, ndim and device with t's, and one   \
           (gcc merges the two tests) t's ndim and device with D and the   \
           CPU numbered 0; another CPU number takes the generic path. */   \
        bool fine = wb_rt_meta(v) == wb_rt_meta(t) && t->ndim == D &&       \
                    t->device == kDLCPU &&                                  \
                    ((char *)a->data + a->nbytes <= (char *)b->data ||      \
                     (char *)b->data + b->nbytes <= (char *)a->data);       \
        uint64_t expect = 1;                                                \
        for (int d = D - 1; fine && d >= 0; d--) {                          \
            fine = t->sizes[d] == v->sizes[d] &&                            \
                   (uint64_t)t->strides[d] == expect;                       \
            expect *= (uint64_t)t->sizes[d];                                \
        }                                                                   \
        return fine;                                                        \
    }                                                                       \
    static inline wb_status wb_rt_prep_nd_##D(const wb_env *e, int input,  \
                                              const wb_tensor *t,          \
                                              const wb_tensor *v)          \
    {                                                                       \
        return wb_rt_data_plain_##D(t, v) ? WB_OK                           \
                                          : wb_rt_prep_data(e, input, t, v); \
    }                                                                       \
    /* The run from its first item that is not plain on (which only the  \
       generic primitive can pass), out of line, as its calls make gcc    \
       save registers on entry. */                                         \
    static WB_RT_NOINLINE wb_status wb_rt_prep_nd_run_##D(                  \
        const wb_env *e, int input, const wb_arg *a, const wb_value *r,    \
        int n)                                                              \
    {                                                                       \
        wb_status st = wb_rt_prep_data(e, input, a[0].t, r[0].t);           \
        for (int i = 1; i < n && st == WB_OK; i++)                          \
            st = wb_rt_prep_nd_##D(e, input + i, a[i].t, r[i].t);           \
        return st;                                                          \
    }                                                                       \
    /* t has D dims unless a hook or guard re-viewed it after the        \
       argument check; the check phase then passed v with t's dims. */    \
    static inline void wb_rt_commit_nd_##D(wb_tensor *t, wb_tensor *v)     \
    {                                                                       \
        if (t->ndim == D && t->storage->device.device_type == kDLCPU &&     \
            wb_rt_dense_##D(t) && wb_rt_dense_##D(v)) {                     \
            /* The check phase saw one dtype on both sides. */              \
            size_t es = wb_rt_tensor_esize(t), n = es;                      \
            for (int d = 0; d < D; d++)                                     \
                n *= (size_t)t->sizes[d];                                   \
            if (n)                                                          \
                memcpy((char *)t->storage->data + t->offset * (int64_t)es,  \
                       (char *)v->storage->data + v->offset * (int64_t)es,  \
                       n);                                                  \
        } else {                                                            \
            wb_rt_copy(t, v);                                               \
        }                                                                   \
        wb_rt_bump_by(t, 1);                                                \
        wb_rt_release(v);                                                   \
    }                                                                       \
    int wb_rt_prep_data_##D##d(const wb_env *e, int input,                 \
                               const wb_tensor *t, const wb_tensor *v)      \
    {                                                                       \
        return wb_rt_prep_nd_##D(e, input, t, v);                           \
    }                                                                       \
    void wb_rt_commit_data_##D##d(wb_tensor *t, wb_tensor *v)               \
    {                                                                       \
        wb_rt_commit_nd_##D(t, v);                                          \
    }                                                                       \
    /* Plain items first, with no call (nothing to save), then the rest  \
       in a tail call. */                                                  \
    int wb_rt_prep_data_##D##d_run(const wb_env *e, int input,             \
                                   const wb_arg *a, const wb_value *r,      \
                                   int n)                                   \
    {                                                                       \
        for (int i = 0; i < n; i++)                                         \
            if (!wb_rt_data_plain_##D(a[i].t, r[i].t))                      \
                return wb_rt_prep_nd_run_##D(e, input + i, a + i, r + i,    \
                                             n - i);                        \
        return WB_OK;                                                       \
    }                                                                       \
    void wb_rt_commit_data_##D##d_run(const wb_arg *a, const wb_value *r,   \
                                      int n)                                \
    {                                                                       \
        for (int i = 0; i < n; i++)                                         \
            wb_rt_commit_nd_##D(a[i].t, r[i].t);                            \
    }

WB_RT_DATA_ND(1)
WB_RT_DATA_ND(2)
WB_RT_DATA_ND(3)
WB_RT_DATA_ND(4)

void wb_rt_commit_meta(wb_tensor *t, wb_tensor *v)
{
    if (t != v)
        wb_rt_take_view(t, v);
    wb_rt_bump_by(t, 1);
    wb_rt_release(v);
}

void wb_rt_commit_data_meta(wb_tensor *t, wb_tensor *v)
{
    if (t != v)
        wb_rt_take_view(t, v);
    wb_rt_copy(t, v);
    wb_rt_bump_by(t, 2);
    wb_rt_release(v);
}

void wb_rt_commit_storage(wb_tensor *t, wb_tensor *v)
{
    wb_tensor_set_(t, v);
    wb_rt_release(v);
}

void wb_rt_commit_resize(wb_tensor *t, wb_tensor *v, wb_rt_grow *g)
{
    if (!wb_rt_same_sizes(t, v))
        wb_rt_apply_resize(t, v->ndim, v->sizes, g);
    wb_rt_copy(t, v);
    wb_rt_bump_by(t, 1);
    wb_rt_release(v);
}
void wb_rt_grow_free(wb_rt_grow *g)
{
    wb_rt_grow_discard(g);
}
