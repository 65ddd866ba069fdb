/*
 * alloc-fail: fails the k-th heap allocation, for every k, over the main
 * paths -- parse, build and validate, clone, emit, compile, wrapper
 * creation, calls on every tier, tensor operations -- and checks that each
 * failure ends in WB_ERR_NOMEM (or in success, where the library could do
 * without the memory), with a message, no crash, no leak, and on a failed
 * call every input exactly as it was: bytes, view, storage, version and
 * reference count.
 *
 * It replaces malloc, calloc, realloc and free, so it is built without
 * sanitizers (like alloc-count).  libtcc allocates from its own arena
 * (src/tiers/jitheap.c), which this allocator never sees; what the arena
 * has no room for comes from malloc and is never failed: libtcc 0.9.27
 * reports a failed allocation of its own through tcc_error, which calls
 * exit(1) outside a compile (and longjmps out, leaking, inside one), so no
 * caller can survive it.  src/tiers/jit.c marks the thread while it is
 * inside libtcc or the dynamic loader, whose dlopen keeps what it
 * allocated when it fails (wb_rt_inside_dependency).  With
 * WB_ALLOC_FAIL_LIBTCC=1 those allocations are failed too, to show what
 * the loader does.
 *
 * Prints the failure points covered per path; exits non-zero on the first
 * broken rule.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wrapbake.h"
#include "../../src/cli/input.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern _Thread_local int wb_rt_inside_dependency;

/* ---- the allocator ---- */

static long af_countdown;      /* fail when it reaches 0; <0: never */
static bool af_fired;          /* an allocation was failed this run */
static bool af_tracking;       /* record live blocks */
static bool af_fail_libtcc;    /* fail libtcc's allocations as well */
static long af_seen;           /* allocations that could have failed */

/* The live blocks of a run, open addressing with tombstones. */
#define AF_SLOTS (1u << 16)
#define AF_TOMB ((void *)1)
static void *af_live[AF_SLOTS];
static long af_nlive;

static unsigned af_hash(const void *p)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= 0xed5ad4bbU;
    x ^= x >> 11;
    return (unsigned)x & (AF_SLOTS - 1);
}

static void af_track(void *p)
{
    if (!p || !af_tracking || wb_rt_inside_dependency)
        return;
    for (unsigned h = af_hash(p);; h = (h + 1) & (AF_SLOTS - 1))
        if (!af_live[h] || af_live[h] == AF_TOMB) {
            af_live[h] = p;
            af_nlive++;
            return;
        }
}

static void af_untrack(void *p)
{
    if (!p || !af_tracking)
        return;
    for (unsigned h = af_hash(p); af_live[h]; h = (h + 1) & (AF_SLOTS - 1))
        if (af_live[h] == p) {
            af_live[h] = AF_TOMB;
            af_nlive--;
            return;
        }
}

/* Whether this allocation fails. */
static bool af_fail_now(void)
{
    if (af_countdown < 0 || (wb_rt_inside_dependency && !af_fail_libtcc))
        return false;
    af_seen++;
    if (af_countdown-- == 0) {
        af_fired = true;
        errno = ENOMEM;  /* as the C library's allocator does */
        return true;
    }
    return false;
}

void *malloc(size_t n)
{
    if (af_fail_now())
        return NULL;
    void *p = __libc_malloc(n);
    af_track(p);
    return p;
}

void *calloc(size_t n, size_t m)
{
    if (af_fail_now())
        return NULL;
    void *p = __libc_calloc(n, m);
    af_track(p);
    return p;
}

void *realloc(void *p, size_t n)
{
    if (af_fail_now())
        return NULL;
    void *q = __libc_realloc(p, n);
    if (q) {
        af_untrack(p);
        af_track(q);
    }
    return q;
}

void free(void *p)
{
    af_untrack(p);
    __libc_free(p);
}

/* ---- checks ---- */

static int af_failures;
static const char *af_path;
static long af_k;

#define AF_CHECK(cond, ...)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            af_countdown = -1;                                               \
            fprintf(stderr, "alloc-fail: %s, allocation %ld: ", af_path,     \
                    af_k);                                                   \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            af_failures++;                                                   \
        }                                                                    \
    } while (0)

/* A failure is WB_ERR_NOMEM with a message; success is allowed where the
   library could do without the memory. */
static bool af_status(wb_status st, const char *what)
{
    if (st == WB_OK)
        return true;
    AF_CHECK(st == WB_ERR_NOMEM, "%s returned %s, expected WB_ERR_NOMEM: %s",
             what, wb_status_str(st), wb_last_error());
    AF_CHECK(af_fired, "%s failed with no allocation failed: %s", what,
             wb_last_error());
    AF_CHECK(wb_last_error()[0] != '\0', "%s: no message", what);
    return false;
}

/* Everything about a tensor a failed call must leave alone. */
typedef struct af_snap {
    const void *storage, *data;
    size_t nbytes;
    uint64_t version, hash;
    long refcount, srefcount;
    int ndim;
    int64_t sizes[WB_MAX_DIMS], strides[WB_MAX_DIMS], offset;
    uint32_t flags;
} af_snap;

static af_snap af_snap_of(const wb_tensor *t)
{
    af_snap s;
    memset(&s, 0, sizeof s);
    wb_storage *st = wb_tensor_storage(t);
    s.storage = st;
    s.data = wb_storage_data(st);
    s.nbytes = wb_storage_nbytes(st);
    s.version = wb_tensor_version(t);
    s.refcount = wb_tensor_refcount(t);
    s.srefcount = wb_storage_refcount(st);
    s.ndim = wb_tensor_ndim(t);
    memcpy(s.sizes, wb_tensor_sizes(t), (size_t)s.ndim * sizeof(int64_t));
    memcpy(s.strides, wb_tensor_strides(t), (size_t)s.ndim * sizeof(int64_t));
    s.offset = wb_tensor_offset(t);
    s.flags = wb_tensor_flags(t);
    s.hash = 1469598103934665603ULL;
    for (size_t i = 0; i < s.nbytes; i++)
        s.hash = (s.hash ^ ((const unsigned char *)s.data)[i]) *
                 1099511628211ULL;
    return s;
}

static bool af_snap_eq(const af_snap *a, const af_snap *b)
{
    if (a->storage != b->storage || a->data != b->data ||
        a->nbytes != b->nbytes || a->version != b->version ||
        a->hash != b->hash || a->refcount != b->refcount ||
        a->srefcount != b->srefcount || a->ndim != b->ndim ||
        a->offset != b->offset || a->flags != b->flags)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] || a->strides[d] != b->strides[d])
            return false;
    return true;
}

/* ---- the paths ---- */

static const char *const AF_TEXT =
    "fwd.out(Tensor(a!) cache, Tensor(b) x, Tensor w [detach], int pos, "
    "float scale, *, Tensor(c!) out) -> (Tensor, Tensor(b), Tensor(a!), "
    "Tensor(c!)) with training";

static int af_hook(void *ud) { (void)ud; return 0; }
static void af_leave(void *ud) { (void)ud; }

static wb_spec *af_spec_or_null(void)
{
    /* Training, hooks and guards, a detached input, data, metadata,
       storage and resize mutations, and every kind of aliased output. */
    wb_spec *s;
    if (wb_spec_new("alloc*/\n\"fail", &s) != WB_OK)
        return NULL;
    wb_status st = WB_OK;
#define AF_TRY(call) if (st == WB_OK) st = (call)
    AF_TRY(wb_spec_set_training(s, true));
    AF_TRY(wb_spec_set_before_call(s, af_hook, NULL));
    AF_TRY(wb_spec_set_first_call(s, af_hook, NULL));
    AF_TRY(wb_spec_add_guard(s, af_hook, af_leave, NULL));
    AF_TRY(wb_spec_add_tensor(s, "d", WB_MUT_DATA, WB_INPUT_DETACH, NULL));
    AF_TRY(wb_spec_add_tensor(s, "m", WB_MUT_METADATA, 0, NULL));
    AF_TRY(wb_spec_add_tensor(s, "st", WB_MUT_STORAGE, 0, NULL));
    AF_TRY(wb_spec_add_tensor(s, "r", WB_MUT_RESIZE, 0, NULL));
    AF_TRY(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    AF_TRY(wb_spec_add_scalar(s, "k", WB_SCALAR_INT, NULL));
    AF_TRY(wb_spec_declare_input(s, 0, (DLDataType){kDLFloat, 32, 1}, 2));
    AF_TRY(wb_spec_set_intermediate_bases(s, 1));
    AF_TRY(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, true, 1, NULL));
    AF_TRY(wb_spec_add_output(s, "i", WB_OUT_IS_INPUT, 0, false, 0, NULL));
    AF_TRY(wb_spec_add_output(s, "a", WB_OUT_ALIAS_OF_INPUT, 4, false, 0, NULL));
    AF_TRY(wb_spec_add_output(s, "ar", WB_OUT_ALIAS_OF_INPUT, 3, true, 0, NULL));
    AF_TRY(wb_spec_add_output(s, "b", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, false, 0, NULL));
    AF_TRY(wb_spec_add_output(s, "u", WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 0, false, 2, NULL));
#undef AF_TRY
    if (st != WB_OK) {
        wb_spec_free(s);
        return NULL;
    }
    return s;
}

#define AF_NIN 6
#define AF_NOUT 6
#define AF_NVALUES 11  /* 4 updated inputs, 6 outputs, 1 base */

/* The graph hands out references to values made before the run, so that
   every allocation during a call is the wrapper's. */
typedef struct af_graph {
    wb_tensor *values[AF_NVALUES];
} af_graph;

static int af_graph_fn(void *ctx, const wb_arg *a, int na, wb_value *v,
                       int nv)
{
    af_graph *g = ctx;
    (void)a; (void)na;
    for (int i = 0; i < nv && i < AF_NVALUES; i++)
        v[i].t = wb_tensor_retain(g->values[i]);
    return AF_NVALUES;
}

/* The graph of af_call_synth: values 0, 1 and 3 from g, the number 42 as
   value 2. */
static int af_synth_fn(void *ctx, const wb_arg *a, int na, wb_value *v,
                       int nv)
{
    af_graph *g = ctx;
    (void)a; (void)na;
    if (nv != 4)
        return -1;
    v[0].t = wb_tensor_retain(g->values[0]);
    v[1].t = wb_tensor_retain(g->values[1]);
    v[2].i = 42;
    v[3].t = wb_tensor_retain(g->values[3]);
    return 4;
}

static const DLDataType AF_F32 = {kDLFloat, 32, 1};
static const DLDevice AF_CPU = {kDLCPU, 0};

static wb_tensor *af_tensor(int ndim, const int64_t *sizes)
{
    wb_tensor *t = NULL;
    if (wb_tensor_new(AF_F32, AF_CPU, ndim, sizes, &t) != WB_OK) {
        fprintf(stderr, "alloc-fail: setup: %s\n", wb_last_error());
        exit(2);
    }
    float *p = wb_tensor_data(t);
    for (int64_t i = 0; i < wb_tensor_numel(t); i++)
        p[i] = (float)i * 0.5f;
    return t;
}

static wb_tensor *af_view(const wb_tensor *base, int ndim,
                          const int64_t *sizes, const int64_t *strides,
                          int64_t offset)
{
    wb_tensor *t = NULL;
    if (wb_tensor_as_strided(base, ndim, sizes, strides, offset, &t) !=
        WB_OK) {
        fprintf(stderr, "alloc-fail: setup: %s\n", wb_last_error());
        exit(2);
    }
    return t;
}

/* One run of one path, with allocation af_k failing once it is armed. */
typedef void (*af_path_fn)(void);

static wb_spec *af_valid_spec(void)
{
    wb_spec *s = af_spec_or_null();
    if (!s || wb_spec_validate(s) != WB_OK) {
        fprintf(stderr, "alloc-fail: setup: %s\n", wb_last_error());
        exit(2);
    }
    return s;
}

static void af_arm(void) { af_countdown = af_k; }
static void af_disarm(void) { af_countdown = -1; }

static void af_parse(void)
{
    wb_spec *s = NULL;
    af_arm();
    wb_status st = wb_spec_parse(AF_TEXT, &s);
    af_disarm();
    if (!af_status(st, "wb_spec_parse"))
        AF_CHECK(s == NULL, "wb_spec_parse wrote its output on failure");
    wb_spec_free(s);
}

static void af_build(void)
{
    af_arm();
    wb_spec *s = af_spec_or_null();
    wb_status st = s ? wb_spec_validate(s) : WB_ERR_NOMEM;
    af_disarm();
    af_status(st, s ? "wb_spec_validate" : "a builder call");
    wb_spec_free(s);
}

static void af_clone(void)
{
    wb_spec *s = af_valid_spec(), *c = NULL;
    af_arm();
    wb_status st = wb_spec_clone(s, &c);
    af_disarm();
    if (af_status(st, "wb_spec_clone")) {
        AF_CHECK(wb_spec_validate(c) == WB_OK, "the clone does not validate");
    } else {
        AF_CHECK(c == NULL, "wb_spec_clone wrote its output on failure");
    }
    wb_spec_free(c);
    wb_spec_free(s);
}

static void af_emit(void)
{
    wb_spec *s = af_valid_spec();
    char *src = NULL;
    af_arm();
    wb_status st = wb_emit_c(s, &src);
    af_disarm();
    if (af_status(st, "wb_emit_c"))
        AF_CHECK(src && strstr(src, "wb_rt_"), "wb_emit_c gave no code");
    else
        AF_CHECK(src == NULL, "wb_emit_c wrote its output on failure");
    free(src);
    wb_spec_free(s);
}

static void af_new(wb_tier tier)
{
    wb_spec *s = af_valid_spec();
    af_graph g = {{0}};
    wb_options o = {.tier = tier};
    wb_wrapper *w = NULL;
    af_arm();
    wb_status st = wb_wrapper_new(s, af_graph_fn, &g, &o, &w);
    af_disarm();
    if (af_status(st, "wb_wrapper_new"))
        AF_CHECK(w && wb_wrapper_tier(w) == tier, "no wrapper");
    else
        AF_CHECK(w == NULL, "wb_wrapper_new wrote its output on failure");
    wb_wrapper_free(w);
    wb_spec_free(s);
}

static void af_new_interp(void) { af_new(WB_TIER_INTERP); }
static void af_new_tcc(void) { af_new(WB_TIER_TCC); }

/* A tcc wrapper's source, made when first asked for: NULL when memory
   runs out, and the next request makes it. */
static void af_source(void)
{
    wb_spec *s = af_valid_spec();
    af_graph g = {{0}};
    wb_options o = {.tier = WB_TIER_TCC};
    wb_wrapper *w = NULL;
    if (wb_wrapper_new(s, af_graph_fn, &g, &o, &w) != WB_OK)
        AF_CHECK(false, "setting up the wrapper failed: %s", wb_last_error());
    af_arm();
    const char *src = wb_wrapper_source(w);
    af_disarm();
    if (src)
        AF_CHECK(strstr(src, "#line 1"), "the source has no #line");
    else
        AF_CHECK(af_fired, "no source, and no allocation failed");
    AF_CHECK(wb_wrapper_source(w) && (!src || wb_wrapper_source(w) == src),
             "the next request did not give the one source");
    wb_wrapper_free(w);
    wb_spec_free(s);
}

/* Three wrappers in one batch: two of one spec (shared) and one more, with
   a wrapper of the first spec alive beforehand (an in-process cache hit). */
static void af_batch(void)
{
    wb_spec *s = af_valid_spec(), *t = af_valid_spec();
    af_graph g = {{0}};
    wb_wrapper *held = NULL, *w[3] = {NULL, NULL, NULL};
    const wb_spec *specs[3] = {s, s, t};
    wb_graph_fn graphs[3] = {af_graph_fn, af_graph_fn, af_graph_fn};
    void *ctxs[3] = {&g, &g, &g};
    wb_options o = {.tier = WB_TIER_TCC, .flags = WB_OPT_NO_SHARE};
    if (wb_wrapper_new(s, af_graph_fn, &g, NULL, &held) != WB_OK ||
        wb_spec_add_tensor(t, "extra", WB_MUT_NONE, 0, NULL) != WB_OK)
        AF_CHECK(false, "setting up the batch failed: %s", wb_last_error());
    o.flags = 0;
    af_arm();
    wb_status st = wb_wrappers_new(3, specs, graphs, ctxs, &o, w);
    af_disarm();
    if (af_status(st, "wb_wrappers_new"))
        AF_CHECK(w[0] && w[1] && w[2], "a wrapper of the batch is missing");
    else
        AF_CHECK(!w[0] && !w[1] && !w[2], "a failed batch left a wrapper");
    for (int i = 0; i < 3; i++)
        wb_wrapper_free(w[i]);
    wb_wrapper_free(held);
    wb_spec_free(s);
    wb_spec_free(t);
}

/* The cc tier without the disk cache: the system compiler, dlopen and the
   helper binding. */
static void af_new_cc(void)
{
    wb_spec *s = af_valid_spec();
    af_graph g = {{0}};
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    af_arm();
    wb_status st = wb_wrapper_new(s, af_graph_fn, &g, &o, &w);
    af_disarm();
    if (af_status(st, "wb_wrapper_new cc"))
        AF_CHECK(w && wb_wrapper_tier(w) == WB_TIER_CC, "no cc wrapper");
    else
        AF_CHECK(w == NULL, "wb_wrapper_new wrote its output on failure");
    wb_wrapper_free(w);
    wb_spec_free(s);
}

/* Explaining a disk-cache lookup (it reads the cache directory). */
static void af_explain(void)
{
    wb_spec *s = af_valid_spec();
    char *why = NULL;
    af_arm();
    wb_status st = wb_cache_explain(s, NULL, &why);
    af_disarm();
    if (af_status(st, "wb_cache_explain"))
        AF_CHECK(why && strstr(why, "miss"), "no explanation");
    else
        AF_CHECK(why == NULL, "wb_cache_explain wrote its output on failure");
    free(why);
    wb_spec_free(s);
}

static void af_call(wb_tier tier)
{
    static const int64_t s24[2] = {2, 4}, s42[2] = {4, 2}, st42[2] = {1, 4},
                         s44[2] = {4, 4}, s16[1] = {16}, s2[1] = {2};
    wb_spec *s = af_valid_spec();
    af_graph g;
    wb_options o = {.tier = tier};
    wb_wrapper *w = NULL;
    wb_tensor *in[5];
    for (int i = 0; i < 5; i++)
        in[i] = af_tensor(2, s24);
    /* d's new value; m's new view of its own storage (transposed); st's
       new storage; r grown to 4x4; the outputs: o, what is-input ignores,
       a view of x, a view of r's grown storage, a view of the base, a view
       of o; the intermediate base. */
    wb_tensor *o_val = af_tensor(2, s24), *base = af_tensor(2, s44);
    wb_tensor *big = af_tensor(1, s16);
    g.values[0] = af_tensor(2, s24);
    g.values[1] = af_view(in[1], 2, s42, st42, 0);
    g.values[2] = af_tensor(1, s2);
    g.values[3] = af_tensor(2, s44);
    g.values[4] = o_val;
    g.values[5] = af_tensor(2, s24);
    g.values[6] = af_view(in[4], 1, s2, NULL, 3);
    g.values[7] = af_view(big, 1, s16, NULL, 0);
    g.values[8] = af_view(base, 1, s2, NULL, 5);
    g.values[9] = af_view(o_val, 1, s2, NULL, 1);
    g.values[10] = base;
    wb_tensor_release(big);
    if (wb_wrapper_new(s, af_graph_fn, &g, &o, &w) != WB_OK) {
        fprintf(stderr, "alloc-fail: setup: %s\n", wb_last_error());
        exit(2);
    }
    wb_arg args[AF_NIN] = {{.t = in[0]}, {.t = in[1]}, {.t = in[2]},
                           {.t = in[3]}, {.t = in[4]}, {.i = 7}};
    af_snap before[5], after[5];
    long vref[AF_NVALUES];
    for (int i = 0; i < 5; i++)
        before[i] = af_snap_of(in[i]);
    for (int i = 0; i < AF_NVALUES; i++)
        vref[i] = wb_tensor_refcount(g.values[i]);
    /* Headers come from a per-thread cache: empty it, so that the call
       has to allocate them. */
    wb_thread_cache_flush();
    wb_value outs[AF_NOUT] = {{0}};
    af_arm();
    wb_status st = wb_call(w, args, AF_NIN, outs, AF_NOUT);
    af_disarm();
    if (af_status(st, "wb_call")) {
        for (int k = 0; k < AF_NOUT; k++)
            AF_CHECK(outs[k].t != NULL, "output %d is NULL", k);
        AF_CHECK(wb_storage_nbytes(wb_tensor_storage(in[3])) >= 64,
                 "r did not grow");
    } else {
        AF_CHECK(!strncmp(wb_last_error(), "spec '", 6), "the message "
                 "names no spec: %s", wb_last_error());
        for (int k = 0; k < AF_NOUT; k++)
            AF_CHECK(outs[k].t == NULL, "output %d written on failure", k);
        for (int i = 0; i < 5; i++) {
            after[i] = af_snap_of(in[i]);
            AF_CHECK(af_snap_eq(&before[i], &after[i]), "input %d changed "
                     "by a failed call", i);
        }
        for (int i = 0; i < AF_NVALUES; i++)
            AF_CHECK(wb_tensor_refcount(g.values[i]) == vref[i],
                     "value %d: refcount %ld, was %ld", i,
                     wb_tensor_refcount(g.values[i]), vref[i]);
    }
    for (int k = 0; k < AF_NOUT; k++)
        wb_tensor_release(outs[k].t);
    wb_wrapper_free(w);
    for (int i = 0; i < AF_NVALUES; i++)
        wb_tensor_release(g.values[i]);
    for (int i = 0; i < 5; i++)
        wb_tensor_release(in[i]);
    wb_spec_free(s);
}

static void af_call_interp(void) { af_call(WB_TIER_INTERP); }
static void af_call_tcc(void) { af_call(WB_TIER_TCC); }

/* A call with a synthetic base of two inputs made apart on one storage
   (the base takes a counter of its own), a member's new view, an output
   aliasing a member and a number: whatever allocation fails, the inputs
   and the storage are as they were. */
static void af_call_synth(wb_tier tier)
{
    static const int64_t s16[1] = {16}, s4[1] = {4}, s2[1] = {2};
    wb_spec *s = NULL;
    wb_wrapper *w = NULL;
    wb_options o = {.tier = tier};
    if (wb_spec_parse("synth(Tensor(a!) x, Tensor(b!) y [metadata, "
                      "aliases=x], Tensor z) -> (Tensor(b), int n)",
                      &s) != WB_OK ||
        wb_spec_validate(s) != WB_OK) {
        fprintf(stderr, "alloc-fail: setup: %s\n", wb_last_error());
        exit(2);
    }
    wb_tensor *all = af_tensor(1, s16), *x = NULL, *y = NULL,
              *z = af_tensor(1, s2);
    wb_storage *st = wb_tensor_storage(all);
    if (wb_tensor_from_storage(st, AF_F32, 1, s4, NULL, 0, &x) != WB_OK ||
        wb_tensor_from_storage(st, AF_F32, 1, s4, NULL, 2, &y) != WB_OK) {
        fprintf(stderr, "alloc-fail: setup: %s\n", wb_last_error());
        exit(2);
    }
    /* The base's new data, the output (a view of the storage), the
       number, y's new view. */
    af_graph g = {{af_tensor(1, s16), af_view(all, 1, s2, NULL, 3), NULL,
                   af_view(all, 1, s2, NULL, 6)}};
    static const int tensors[] = {0, 1, 3};
    if (wb_wrapper_new(s, af_synth_fn, &g, &o, &w) != WB_OK) {
        fprintf(stderr, "alloc-fail: setup: %s\n", wb_last_error());
        exit(2);
    }
    wb_arg args[3] = {{.t = x}, {.t = y}, {.t = z}};
    af_snap before[3] = {af_snap_of(x), af_snap_of(y), af_snap_of(all)};
    long vref[3];
    for (int i = 0; i < 3; i++)
        vref[i] = wb_tensor_refcount(g.values[tensors[i]]);
    wb_thread_cache_flush();
    wb_value outs[2] = {{NULL}, {NULL}};
    af_arm();
    wb_status r = wb_call(w, args, 3, outs, 2);
    af_disarm();
    if (af_status(r, "wb_call")) {
        AF_CHECK(outs[0].t != NULL && outs[1].i == 42, "outputs wrong");
        AF_CHECK(wb_tensor_offset(y) == 6, "y has not its new view");
        wb_tensor_release(outs[0].t);
    } else {
        AF_CHECK(!strncmp(wb_last_error(), "spec '", 6), "the message "
                 "names no spec: %s", wb_last_error());
        AF_CHECK(outs[0].t == NULL, "an output was written on failure");
        af_snap after[3] = {af_snap_of(x), af_snap_of(y), af_snap_of(all)};
        for (int i = 0; i < 3; i++)
            AF_CHECK(af_snap_eq(&before[i], &after[i]), "tensor %d changed "
                     "by a failed call", i);
        for (int i = 0; i < 3; i++)
            AF_CHECK(wb_tensor_refcount(g.values[tensors[i]]) == vref[i],
                     "value %d: refcount %ld, was %ld", tensors[i],
                     wb_tensor_refcount(g.values[tensors[i]]), vref[i]);
    }
    wb_wrapper_free(w);
    for (int i = 0; i < 3; i++)
        wb_tensor_release(g.values[tensors[i]]);
    wb_tensor_release(x);
    wb_tensor_release(y);
    wb_tensor_release(z);
    wb_tensor_release(all);
    wb_spec_free(s);
}

static void af_call_synth_interp(void) { af_call_synth(WB_TIER_INTERP); }
static void af_call_synth_tcc(void) { af_call_synth(WB_TIER_TCC); }

/* Tensor operations a caller uses around wrappers, one after another
   under one countdown: after the failure the rest run as usual. */
static void af_tensors(void)
{
    static const int64_t s24[2] = {2, 4}, s8[1] = {8}, s33[2] = {3, 3};
    wb_tensor *t = NULL, *v = NULL, *d = NULL;
    DLManagedTensor *mt = NULL;
    af_arm();
    wb_status st = wb_tensor_new(AF_F32, AF_CPU, 2, s24, &t);
    if (!af_status(st, "wb_tensor_new")) {
        af_disarm();
        return;
    }
    st = wb_tensor_as_strided(t, 1, s8, NULL, 0, &v);
    if (af_status(st, "wb_tensor_as_strided"))
        af_status(wb_tensor_detach(v, &d), "wb_tensor_detach");
    af_snap before = af_snap_of(t);
    st = wb_tensor_resize_(t, 2, s33);
    if (!af_status(st, "wb_tensor_resize_")) {
        af_snap after = af_snap_of(t);
        AF_CHECK(af_snap_eq(&before, &after), "a failed resize_ changed "
                 "the tensor");
    }
    st = wb_tensor_to_dlpack(t, &mt);
    if (af_status(st, "wb_tensor_to_dlpack")) {
        wb_tensor *back = NULL;
        st = wb_tensor_from_dlpack(mt, &back);
        if (af_status(st, "wb_tensor_from_dlpack"))
            wb_tensor_release(back);
        else
            mt->deleter(mt);
    }
    af_disarm();
    wb_tensor_release(d);
    wb_tensor_release(v);
    wb_tensor_release(t);
}

/* The CLI's readers: a text file and a YAML file of specs, each entry
   parsed; the tools report a failure as "out of memory". */
static void af_cli(void)
{
    static const char *const files[] = {"tests/cli/specs.txt",
                                        "tests/cli/ops.yaml"};
    for (int f = 0; f < 2; f++) {
        wb_cli_entries es = {0};
        char *err = NULL;
        af_arm();
        int rc = wb_cli_read_file(files[f], &es, &err);
        for (size_t i = 0; rc == 0 && i < es.n; i++) {
            wb_spec *s = NULL;
            if (es.v[i].text) {
                wb_status st = wb_spec_parse(es.v[i].text, &s);
                AF_CHECK(st == WB_OK || st == WB_ERR_SPEC ||
                             st == WB_ERR_NOMEM,
                         "%s entry %zu: %s", files[f], i, wb_status_str(st));
                AF_CHECK(st != WB_ERR_NOMEM || af_fired, "NOMEM unasked");
            }
            wb_spec_free(s);
        }
        af_disarm();
        if (rc != 0)
            AF_CHECK(af_fired && (!err || strstr(err, "out of memory") ||
                                  strstr(err, strerror(ENOMEM))),
                     "%s: %s", files[f], err ? err : "no message");
        free(err);
        wb_cli_entries_free(&es);
    }
}

typedef struct af_entry {
    const char *name;
    af_path_fn fn;
} af_entry;

static const af_entry af_paths[] = {
    {"parse", af_parse},
    {"build+validate", af_build},
    {"clone", af_clone},
    {"emit", af_emit},
    {"wrapper_new interp", af_new_interp},
    {"wrapper_new tcc", af_new_tcc},
    {"tcc source", af_source},
    {"batch and sharing", af_batch},
    {"wrapper_new cc", af_new_cc},
    {"cache explain", af_explain},
    {"call interp", af_call_interp},
    {"call tcc", af_call_tcc},
    {"call synth interp", af_call_synth_interp},
    {"call synth tcc", af_call_synth_tcc},
    {"tensors", af_tensors},
    {"cli readers", af_cli},
};

int main(void)
{
    long total = 0;
    af_fail_libtcc = getenv("WB_ALLOC_FAIL_LIBTCC") != NULL;
    /* The disk cache of this run is a fresh, empty directory. */
    char dir[] = "/tmp/wrapbake-alloc-fail-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    setenv("WRAPBAKE_CACHE_DIR", dir, 1);
    af_countdown = -1;
    for (size_t p = 0; p < sizeof af_paths / sizeof *af_paths; p++) {
        af_path = af_paths[p].name;
        long k;
        for (k = 0;; k++) {
            af_k = k;
            af_fired = false;
            af_seen = 0;
            memset(af_live, 0, sizeof af_live);
            af_nlive = 0;
            af_tracking = true;
            af_paths[p].fn();
            wb_thread_cache_flush();
            af_countdown = -1;
            af_tracking = false;
            AF_CHECK(af_nlive == 0, "%ld blocks leaked", af_nlive);
            if (af_failures > 20)
                return 1;
            if (!af_fired)
                break;
        }
        /* The run with no failure proves the path ran to its end. */
        printf("alloc-fail: %-20s %4ld failure points\n", af_path, k);
        total += k;
        if (k == 0)
            AF_CHECK(false, "the path allocates nothing: is the allocator "
                     "replaced?");
    }
    rmdir(dir);
    printf("alloc-fail: %ld failure points, %d broken\n", total, af_failures);
    return af_failures != 0;
}
