/*
 * call.c -- the per-call primitives shared by the interpreter and the
 * generated code, and the table of them the JIT links against.
 *
 * Every message says which spec, which item and what was expected; both
 * tiers reach the same message through the same primitive, so their errors
 * agree to the byte.
 */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "../spec/spec.h"

/* The grad mode is per thread, as in PyTorch. */
static _Thread_local bool wb_rt_grad_off;

bool wb_grad_enabled(void) { return !wb_rt_grad_off; }
void wb_set_grad_enabled(bool on) { wb_rt_grad_off = !on; }

int wb_rt_grad_swap(int on)
{
    int prev = !wb_rt_grad_off;
    wb_rt_grad_off = !on;
    return prev;
}

void wb_rt_grad_set(int on)
{
    wb_rt_grad_off = !on;
}

/* Runs of argument checks, for libtcc: it keeps every value in memory, so
   its own check of one argument is 12 instructions where gcc's is 5, as
   inline in the cc tier's code and unrolled here.  Eight at a time, then a
   jump into the last eight.  A failure is marked unlikely, or gcc sets the
   return value before each check. */
#define WB_RT_ARGS_RUN(bad)                                                 \
    for (; n > 8; n -= 8, a += 8)                                           \
        if (bad(0) || bad(1) || bad(2) || bad(3) || bad(4) || bad(5) ||     \
            bad(6) || bad(7))                                               \
            goto bad;                                                       \
    switch (n) {                                                            \
    case 8: if (bad(7)) goto bad; /* fall through */                        \
    case 7: if (bad(6)) goto bad; /* fall through */                        \
    case 6: if (bad(5)) goto bad; /* fall through */                        \
    case 5: if (bad(4)) goto bad; /* fall through */                        \
    case 4: if (bad(3)) goto bad; /* fall through */                        \
    case 3: if (bad(2)) goto bad; /* fall through */                        \
    case 2: if (bad(1)) goto bad; /* fall through */                        \
    case 1: if (bad(0)) goto bad;                                           \
    }                                                                       \
    return 0;                                                               \
bad:                                                                        \
    return 1

static inline int wb_rt_args_bad_n(const wb_arg *a, unsigned n,
                                   uint64_t want)
{
#define WB_RT_BAD(i) WB_RT_UNLIKELY(!a[i].t || wb_rt_meta(a[i].t) != want)
    WB_RT_ARGS_RUN(WB_RT_BAD);
#undef WB_RT_BAD
}

int wb_rt_args_bad(const wb_arg *a, unsigned n, unsigned long long want)
{
    return wb_rt_args_bad_n(a, n, want);
}

/* The same for a count the emitter knows, up to 16, which the loop then
   need not dispatch on: 10 instructions fewer under libtcc for five
   arguments, 12 for ten. */
#define WB_RT_ARGS_FIXED(N)                                                 \
    int wb_rt_args_bad##N(const wb_arg *a, unsigned long long want)         \
    {                                                                       \
        return wb_rt_args_bad_n(a, N, want);                                \
    }
WB_RT_ARGS_FIXED(3)
WB_RT_ARGS_FIXED(4)
WB_RT_ARGS_FIXED(5)
WB_RT_ARGS_FIXED(6)
WB_RT_ARGS_FIXED(7)
WB_RT_ARGS_FIXED(8)
WB_RT_ARGS_FIXED(9)
WB_RT_ARGS_FIXED(10)
WB_RT_ARGS_FIXED(11)
WB_RT_ARGS_FIXED(12)
WB_RT_ARGS_FIXED(13)
WB_RT_ARGS_FIXED(14)
WB_RT_ARGS_FIXED(15)
WB_RT_ARGS_FIXED(16)
#undef WB_RT_ARGS_FIXED

int wb_rt_args_bad_masked(const wb_arg *a, unsigned n,
                          unsigned long long mask, unsigned long long want)
{
#define WB_RT_BAD(i)                                                        \
    WB_RT_UNLIKELY(!a[i].t || (wb_rt_meta(a[i].t) & mask) != want)
    WB_RT_ARGS_RUN(WB_RT_BAD);
#undef WB_RT_BAD
}

int wb_rt_args_missing(const wb_arg *a, unsigned n)
{
#define WB_RT_BAD(i) WB_RT_UNLIKELY(!a[i].t)
    WB_RT_ARGS_RUN(WB_RT_BAD);
#undef WB_RT_BAD
}

static inline int wb_rt_call_graph(const wb_env *e, const wb_arg *a,
                                   int nargs, wb_tensor **r, int nvalues,
                                   bool on)
{
    int prev = wb_rt_grad_swap(on);
    int n = e->graph(e->graph_ctx, a, nargs, r, nvalues);
    wb_rt_grad_set(prev);
    return n;
}

int wb_rt_call_nograd(const wb_env *e, const wb_arg *a, int nargs,
                      wb_tensor **r, int nvalues)
{
    return wb_rt_call_graph(e, a, nargs, r, nvalues, false);
}

int wb_rt_call_grad(const wb_env *e, const wb_arg *a, int nargs,
                    wb_tensor **r, int nvalues)
{
    return wb_rt_call_graph(e, a, nargs, r, nvalues, true);
}

/* ---- messages ---- */

wb_status wb_rt_callf(const wb_env *e, wb_status st, const char *fmt, ...)
{
    char name[300], msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wb_spec_print_name(e->spec->name, name, sizeof name);
    return wb_rt_fail(st, "spec '%s': %s", name, msg);
}

const char *wb_rt_input_label(const wb_env *e, int i, char *buf, size_t n)
{
    char nm[300];
    wb_spec_print_name(e->spec->inputs[i].name, nm, sizeof nm);
    snprintf(buf, n, "input %d '%s'", i, nm);
    return buf;
}

static const char *wb_rt_output_label(const wb_env *e, int k, char *buf,
                                      size_t n)
{
    char nm[300];
    const wb_output *o = &e->spec->outputs[k];
    wb_spec_print_name(o->name, nm, sizeof nm);
    snprintf(buf, n, "output %d '%s' (%s)", k, nm, wb_alias_name(o->kind));
    return buf;
}

int wb_rt_err_arity(const wb_env *e, int nargs, int nouts)
{
    const wb_spec *s = e->spec;
    if (nargs != s->ninputs)
        return wb_rt_callf(e, WB_ERR_ARITY, "called with %d arguments; "
                           "expected %d", nargs, s->ninputs);
    return wb_rt_callf(e, WB_ERR_ARITY, "called with room for %d outputs; "
                       "expected at least %d", nouts, s->noutputs);
}

wb_status wb_rt_err_null_input(const wb_env *e, const wb_arg *args)
{
    const wb_spec *s = e->spec;
    char lb[400];
    int i = 0;
    for (int k = 0; k < s->ntensor_inputs; k++)
        if (!args[s->tensor_inputs[k]].t) {
            i = s->tensor_inputs[k];
            break;
        }
    return wb_rt_callf(e, WB_ERR_TYPE, "%s: got NULL; expected a tensor",
                       wb_rt_input_label(e, i, lb, sizeof lb));
}

int wb_rt_err_values(const wb_env *e, int n, wb_tensor *const *r)
{
    const wb_spec *s = e->spec;
    if (n < 0)
        return wb_rt_callf(e, WB_ERR_GRAPH, "the graph failed with code %d",
                           n);
    if (n != s->nvalues)
        return wb_rt_callf(e, WB_ERR_ARITY, "the graph returned %d values; "
                           "expected %d (%d updated inputs, %d outputs, %d "
                           "intermediate bases)", n, s->nvalues, s->nupdated,
                           s->noutputs, s->nbases);
    int i = 0;
    while (i < n - 1 && r[i])
        i++;
    return wb_rt_callf(e, WB_ERR_GRAPH, "the graph returned NULL as value "
                       "%d; expected a tensor", i);
}

wb_status wb_rt_check_input(const wb_env *e, int input, const wb_tensor *t)
{
    const wb_input *in = &e->spec->inputs[input];
    char lb[400], a[32], b[32];
    if (in->dtype.bits && !wb_rt_dtype_eq(in->dtype, t->dtype))
        return wb_rt_callf(e, WB_ERR_TYPE, "%s: dtype %s; expected %s",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           wb_rt_dtype_str(t->dtype, a, sizeof a),
                           wb_rt_dtype_str(in->dtype, b, sizeof b));
    if (in->ndim >= 0 && t->ndim != in->ndim)
        return wb_rt_callf(e, WB_ERR_SHAPE, "%s: %d dimensions; expected %d",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           t->ndim, in->ndim);
    if (in->device.device_type &&
        !wb_rt_device_eq(in->device, t->storage->device))
        return wb_rt_callf(e, WB_ERR_DEVICE, "%s: on %s; expected %s",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           wb_rt_device_str(t->storage->device, a, sizeof a),
                           wb_rt_device_str(in->device, b, sizeof b));
    return WB_OK;
}

/* The first declared input whose dtype, ndim or device differs. */
static wb_status wb_rt_err_declared(const wb_env *e, const wb_arg *args)
{
    const wb_spec *s = e->spec;
    wb_status st = WB_OK;
    for (int k = 0; k < s->ndeclared && st == WB_OK; k++)
        st = wb_rt_check_input(e, s->declared[k], args[s->declared[k]].t);
    return st;
}

int wb_rt_err_inputs(const wb_env *e, const wb_arg *args)
{
    const wb_spec *s = e->spec;
    for (int k = 0; k < s->ntensor_inputs; k++)
        if (!args[s->tensor_inputs[k]].t)
            return wb_rt_err_null_input(e, args);
    return wb_rt_err_declared(e, args);
}

/* Each step of the check phase looks at one input as it was before the
   call, so a mutation that changes an input's view or storage must not meet
   that same tensor under another argument, and a resize, which may move its
   storage's bytes, must not share the storage with another mutated input.
   Such calls are refused before the graph runs. */
int wb_rt_check_distinct(const wb_env *e, const wb_arg *args)
{
    const wb_spec *s = e->spec;
    char la[400], lb[400];
    for (int k = 0; k < s->nreshaped; k++) {
        int i = s->reshaped[k];
        const wb_input *in = &s->inputs[i];
        for (int j = 0; j < s->ninputs; j++) {
            if (j == i || !s->inputs[j].is_tensor)
                continue;
            if (args[j].t == args[i].t)
                return wb_rt_callf(e, WB_ERR_INVALID, "%s is the same tensor "
                                   "as %s, whose %s mutation changes it; "
                                   "expected distinct tensors",
                                   wb_rt_input_label(e, j, lb, sizeof lb),
                                   wb_rt_input_label(e, i, la, sizeof la),
                                   wb_mutation_name(in->mutation));
            if (in->mutation == WB_MUT_RESIZE &&
                s->inputs[j].mutation != WB_MUT_NONE &&
                s->inputs[j].mutation != WB_MUT_IN_GRAPH &&
                args[j].t->storage == args[i].t->storage)
                return wb_rt_callf(e, WB_ERR_INVALID, "%s shares a storage "
                                   "with %s, whose resize mutation may move "
                                   "it; expected separate storages",
                                   wb_rt_input_label(e, j, lb, sizeof lb),
                                   wb_rt_input_label(e, i, la, sizeof la));
        }
    }
    return WB_OK;
}

int wb_rt_check_bases(const wb_env *e, const wb_arg *a,
                            wb_tensor *const *r)
{
    const wb_spec *s = e->spec;
    char lo[400], li[400];
    for (int k = 0; k < s->noutputs; k++) {
        const wb_spec_out *d = &s->outs[k];
        /* The tensor whose storage the view was checked against, and the
           set_ mutations that commit before the view's storage is read. */
        int from, until;
        if (d->kind == WB_OUT_NON_ALIAS || d->kind == WB_OUT_IS_INPUT)
            continue;
        if (d->kind != WB_OUT_ALIAS_OF_INPUT)
            from = d->base, until = s->nupdated;
        else if (d->holder >= 0)
            from = d->holder, until = d->holder;
        else
            continue;
        for (int j = 0; j < until; j++) {
            int i = s->muts[j].input;
            if (s->muts[j].kind == WB_MUT_STORAGE && r[from] == a[i].t)
                return wb_rt_callf(e, WB_ERR_INVALID, "%s: its %s, value "
                                   "%d, is %s, whose set_ mutation replaces "
                                   "its storage first; expected a tensor "
                                   "of the graph's own",
                                   wb_rt_output_label(e, k, lo, sizeof lo),
                                   d->holder >= 0 ? "storage's holder" : "base",
                                   from,
                                   wb_rt_input_label(e, i, li, sizeof li));
        }
    }
    return WB_OK;
}

/* ---- hooks, guards, grad mode ---- */

/* The first-call hooks running on this thread, innermost first, so that a
   hook calling its own wrapper again goes through instead of waiting for
   itself. */
typedef struct wb_rt_first_frame {
    const wb_env *env;
    const struct wb_rt_first_frame *up;
} wb_rt_first_frame;
static _Thread_local const wb_rt_first_frame *wb_rt_first_running;

enum { WB_RT_FIRST_NOT_RUN, WB_RT_FIRST_RUNNING, WB_RT_FIRST_DONE };

static bool wb_rt_first_is_mine(const wb_env *e)
{
    for (const wb_rt_first_frame *f = wb_rt_first_running; f; f = f->up)
        if (f->env == e)
            return true;
    return false;
}

/* The first-call hook runs once per wrapper, and no call gets past this
   point before it has finished: other threads wait while it runs.  A hook
   that fails puts the wrapper back to "not run", so that the failed call
   changes nothing and the next call runs the hook again. */
int wb_rt_first_call(const wb_env *e)
{
    const wb_spec *s = e->spec;
    atomic_int *state = (atomic_int *)&e->first_call_state;
    for (;;) {
        int now = atomic_load_explicit(state, memory_order_acquire);
        if (now == WB_RT_FIRST_DONE)
            return WB_OK;
        if (now == WB_RT_FIRST_RUNNING) {
            if (wb_rt_first_is_mine(e))
                return WB_OK;
            sched_yield();
            continue;
        }
        if (atomic_compare_exchange_weak(state, &now, WB_RT_FIRST_RUNNING))
            break;
    }
    wb_rt_first_frame frame = {e, wb_rt_first_running};
    wb_rt_first_running = &frame;
    int rc = s->first_call(s->first_call_ud);
    wb_rt_first_running = frame.up;
    atomic_store_explicit(state, rc ? WB_RT_FIRST_NOT_RUN : WB_RT_FIRST_DONE,
                          memory_order_release);
    if (rc)
        return wb_rt_callf(e, WB_ERR_HOOK, "the first-call hook failed with "
                           "code %d", rc);
    return WB_OK;
}

int wb_rt_before_call(const wb_env *e)
{
    const wb_spec *s = e->spec;
    int rc = s->before_call(s->before_call_ud);
    if (rc)
        return wb_rt_callf(e, WB_ERR_HOOK, "the before-call hook failed "
                           "with code %d", rc);
    return WB_OK;
}

int wb_rt_guard_enter(const wb_env *e, int guard)
{
    const wb_guard *g = &e->spec->guards[guard];
    int rc = g->enter(g->ud);
    if (rc)
        return wb_rt_callf(e, WB_ERR_HOOK, "guard %d failed to enter with "
                           "code %d", guard, rc);
    return WB_OK;
}

void wb_rt_guard_leave(const wb_env *e, int guard)
{
    const wb_guard *g = &e->spec->guards[guard];
    g->leave(g->ud);
}

int wb_rt_detach(const wb_env *e, int input, const wb_tensor *t,
                       wb_arg *slot)
{
    char lb[400];
    if (wb_tensor_detach(t, &slot->t) != WB_OK)
        return wb_rt_callf(e, WB_ERR_NOMEM, "%s: out of memory detaching it",
                           wb_rt_input_label(e, input, lb, sizeof lb));
    return WB_OK;
}

void wb_rt_bump(wb_tensor *t)
{
    atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}

void wb_rt_unbump(wb_tensor *t)
{
    atomic_fetch_sub_explicit(&t->storage->version, 1, memory_order_relaxed);
}

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

/* Whether v's view fits in nbytes: -1 if it does, else where it ends.  A
   tensor's own metadata was checked when it was made (strides not negative,
   count and extent without overflow), so its extent is all that is left to
   check against another storage. */
static int64_t wb_rt_fits(const wb_tensor *v, size_t nbytes)
{
    int64_t end = wb_rt_view_end(v->dtype, v->ndim, v->sizes, v->strides,
                                 v->offset);
    return end >= 0 && (uint64_t)end <= nbytes ? -1 : end < 0 ? INT64_MAX
                                                                : end;
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

/* The copy into `after` (t as it will be when the copy runs) from v. */
static wb_status wb_rt_prep_copy(const wb_env *e, int input,
                                 const wb_tensor *after, const wb_tensor *v)
{
    char lb[400];
    if (after->ndim != v->ndim ||
        memcmp(after->sizes, v->sizes, sizeof *v->sizes * (size_t)v->ndim))
        return wb_rt_callf(e, WB_ERR_SHAPE, "%s: the updated value's sizes "
                           "differ from the input's",
                           wb_rt_input_label(e, input, lb, sizeof lb));
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

static bool wb_rt_same_sizes(const wb_tensor *a, const wb_tensor *b)
{
    return a->ndim == b->ndim &&
           !memcmp(a->sizes, b->sizes, sizeof *a->sizes * (size_t)a->ndim);
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

/* Header h for a view of holder's storage; NULL when h is.  It holds a
   reference to that storage from now on, unless keep: the view's value is
   a fixed tensor on that very storage, and h stays without one until the
   commit, where it keeps the value instead (wb_rt_view_make), which spares
   the reference's two locked operations; a failed call frees it with
   nothing to release. */
static inline wb_tensor *wb_rt_view_header(wb_tensor *h,
                                           const wb_tensor *holder, bool keep)
{
    if (h && !keep)
        wb_rt_set_storage(h, wb_rt_storage_retain(holder->storage));
    return h;
}

/* The header for a view of value v, whose base will hold holder's storage,
   when v lies on that very storage: such a value fits (every tensor lies
   inside its storage, and storages only grow).  When the graph handed over
   v's only reference, no one else can reach v, and v itself is the view:
   *view is NULL, which spares the header and the storage reference it
   holds (two locked operations); the acquire load orders the other
   holders' earlier releases before the commit's writes.  Otherwise the
   header comes from the thread's cache.  Nonzero when v needs the full
   check: another storage, or an empty cache.  It calls nothing, so that
   gcc saves no register for it. */
static inline int wb_rt_view_same(const wb_tensor *holder, const wb_tensor *v,
                                  wb_tensor **view)
{
    if (v->storage != holder->storage)
        return 1;
    if (atomic_load_explicit(&v->refcount, memory_order_acquire) == 1) {
        *view = NULL;
        return 0;
    }
    return !(*view = wb_rt_view_header(wb_rt_tensor_pop(), holder, v->fixed));
}

int wb_rt_prep_same(const wb_tensor *holder, const wb_tensor *v,
                    wb_tensor **view)
{
    return wb_rt_view_same(holder, v, view);
}

int wb_rt_prep_view(const wb_env *e, int output, const wb_tensor *holder,
                          const wb_rt_grow *grown, const wb_tensor *v,
                          wb_tensor **view)
{
    char lb[400], a[32], b[32];
    const wb_storage *s = holder->storage;
    size_t nbytes = s->nbytes;
    if (!wb_rt_view_same(holder, v, view))
        return WB_OK;
    if (grown && grown->nbytes > nbytes)
        nbytes = grown->nbytes;
    if (!wb_rt_device_eq(s->device, v->storage->device))
        return wb_rt_callf(e, WB_ERR_DEVICE, "%s: the graph's value is on "
                           "%s, its base on %s",
                           wb_rt_output_label(e, output, lb, sizeof lb),
                           wb_rt_device_str(v->storage->device, a, sizeof a),
                           wb_rt_device_str(s->device, b, sizeof b));
    int64_t end = wb_rt_fits(v, nbytes);
    if (end >= 0)
        return wb_rt_callf(e, WB_ERR_SHAPE, "%s: the graph's view does not "
                           "fit its base's storage: it ends at byte %lld, "
                           "past the storage's %zu bytes",
                           wb_rt_output_label(e, output, lb, sizeof lb),
                           (long long)end, nbytes);
    if (!(*view = wb_rt_view_header(wb_rt_tensor_alloc(), holder,
                                    v->fixed && v->storage == s)))
        return wb_rt_callf(e, WB_ERR_NOMEM, "%s: out of memory for the view",
                           wb_rt_output_label(e, output, lb, sizeof lb));
    return WB_OK;
}

/* wb_rt_prep_views with the full check; out of line, as its calls make
   gcc save registers on entry. */
static WB_RT_NOINLINE wb_status wb_rt_prep_views_full(const wb_env *e,
                                                      int output,
                                                      const wb_arg *a,
                                                      wb_tensor *const *r,
                                                      wb_tensor **views,
                                                      int n)
{
    wb_status st;
    for (int i = 0; i < n; i++)
        if ((st = wb_rt_prep_view(e, output + i, a[i].t, NULL, r[i],
                                  &views[i])) != WB_OK)
            return st;
    return WB_OK;
}

int wb_rt_prep_views(const wb_env *e, int output, const wb_arg *a,
                           wb_tensor *const *r, wb_tensor **views, int n)
{
    /* The quick paths first, with no call (gcc saves two registers, not
       the six the full loop needs), then the rest in a tail call. */
    for (int i = 0; i < n; i++)
        if (wb_rt_view_same(a[i].t, r[i], &views[i]))
            return wb_rt_prep_views_full(e, output + i, a + i, r + i,
                                         views + i, n - i);
    return WB_OK;
}

/* ---- commit phase ---- */

/* The copy of a data mutation: now on the CPU, at the end of the call on
   a CUDA device (wb_rt_flush). */
static void wb_rt_copy_bump(wb_tensor *t, const wb_tensor *v)
{
    if (t->storage->device.device_type != kDLCPU)
        wb_rt_defer_copy(t, v);
    else
        wb_rt_copy_elems(t, v);
    atomic_fetch_add_explicit(&t->storage->version, 1, memory_order_relaxed);
}

void wb_rt_commit_data(wb_tensor *t, wb_tensor *v)
{
    wb_rt_copy_bump(t, v);
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
        int64_t expect = 1;                                                 \
        for (int d = D - 1; d >= 0; d--) {                                  \
            if (t->sizes[d] != 1 && t->strides[d] != expect)                \
                return false;                                               \
            expect *= t->sizes[d];                                          \
        }                                                                   \
        return true;                                                        \
    }                                                                       \
    static inline wb_status wb_rt_prep_nd_##D(const wb_env *e, int input,  \
                                              const wb_tensor *t,          \
                                              const wb_tensor *v)          \
    {                                                                       \
        const wb_storage *a = t->storage, *b = v->storage;                 \
        /* One word compares v's dtype, ndim and device with t's, and one   \
           (gcc merges the two tests) t's ndim and device with D and the   \
           CPU numbered 0; another CPU number takes the generic path. */   \
        bool fine = wb_rt_meta(v) == wb_rt_meta(t) && t->ndim == D &&       \
                    t->device == kDLCPU &&                                  \
                    ((char *)a->data + a->nbytes <= (char *)b->data ||      \
                     (char *)b->data + b->nbytes <= (char *)a->data);       \
        int64_t expect = 1;                                                 \
        for (int d = D - 1; fine && d >= 0; d--) {                          \
            fine = t->sizes[d] == v->sizes[d] && t->strides[d] == expect;   \
            expect *= t->sizes[d];                                          \
        }                                                                   \
        return fine ? WB_OK : wb_rt_prep_data(e, input, t, v);              \
    }                                                                       \
    static inline void wb_rt_commit_nd_##D(wb_tensor *t, wb_tensor *v)     \
    {                                                                       \
        if (t->storage->device.device_type == kDLCPU &&                     \
            wb_rt_dense_##D(t) && wb_rt_dense_##D(v)) {                     \
            /* The check phase saw one dtype on both sides. */              \
            size_t es = wb_rt_esize(t->dtype), n = es;                      \
            for (int d = 0; d < D; d++)                                     \
                n *= (size_t)t->sizes[d];                                   \
            if (n)                                                          \
                memcpy((char *)t->storage->data + t->offset * (int64_t)es,  \
                       (char *)v->storage->data + v->offset * (int64_t)es,  \
                       n);                                                  \
            atomic_fetch_add_explicit(&t->storage->version, 1,              \
                                      memory_order_relaxed);                \
        } else {                                                            \
            wb_rt_copy_bump(t, v);                                          \
        }                                                                   \
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
    int wb_rt_prep_data_##D##d_run(const wb_env *e, int input,             \
                                   const wb_arg *a, wb_tensor *const *r,    \
                                   int n)                                   \
    {                                                                       \
        wb_status st = WB_OK;                                               \
        for (int i = 0; i < n && st == WB_OK; i++)                          \
            st = wb_rt_prep_nd_##D(e, input + i, a[i].t, r[i]);             \
        return st;                                                          \
    }                                                                       \
    void wb_rt_commit_data_##D##d_run(const wb_arg *a, wb_tensor *const *r, \
                                      int n)                                \
    {                                                                       \
        for (int i = 0; i < n; i++)                                         \
            wb_rt_commit_nd_##D(a[i].t, r[i]);                              \
    }

WB_RT_DATA_ND(1)
WB_RT_DATA_ND(2)
WB_RT_DATA_ND(3)
WB_RT_DATA_ND(4)

void wb_rt_commit_meta(wb_tensor *t, wb_tensor *v)
{
    wb_rt_take_view(t, v);
    wb_rt_release(v);
}

void wb_rt_commit_data_meta(wb_tensor *t, wb_tensor *v)
{
    wb_rt_take_view(t, v);
    wb_rt_copy_bump(t, v);
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
    wb_rt_copy_bump(t, v);
    wb_rt_release(v);
}

/* Output flags: requires-grad when requires_grad is not 0. */
static inline uint32_t wb_rt_view_flags(int requires_grad)
{
    return requires_grad ? WB_TENSOR_REQUIRES_GRAD : 0;
}

/* The prepared header made a view with v's view and the flags; consumes
   v.  A header that holds its storage drops v; one without keeps v, a
   fixed value on that storage (wb_rt_view_same). */
static inline wb_tensor *wb_rt_view_make(wb_tensor *view, wb_tensor *v,
                                         int requires_grad, uint64_t dyn)
{
    view->dtype = v->dtype;
    wb_rt_take_view(view, v);
    view->flags = wb_rt_view_flags(requires_grad);
    view->fixed = false;
    view->dyn_dims = dyn;
    if (view->storage) {
        wb_rt_release(v);
    } else {
        wb_rt_set_storage(view, v->storage);
        view->keeper = v;
    }
    return view;
}

/* Without a header, v itself is the view (wb_rt_view_same). */
static inline wb_tensor *wb_rt_view_own(wb_tensor *v, int requires_grad,
                                        uint64_t dyn)
{
    v->flags = wb_rt_view_flags(requires_grad);
    v->dyn_dims = dyn;
    return v;
}

/* wb_rt_view_make out of line, so that wb_rt_commit_view's path without a
   header saves no registers (gcc would save them on entry for both). */
static WB_RT_NOINLINE wb_tensor *wb_rt_view_make_call(wb_tensor *view,
                                                      wb_tensor *v,
                                                      int requires_grad,
                                                      uint64_t dyn)
{
    return wb_rt_view_make(view, v, requires_grad, dyn);
}

wb_tensor *wb_rt_commit_view(wb_tensor *view, wb_tensor *v, int requires_grad,
                             unsigned long long dyn)
{
    if (view)
        return wb_rt_view_make_call(view, v, requires_grad, dyn);
    return wb_rt_view_own(v, requires_grad, dyn);
}

wb_tensor *wb_rt_commit_view_plain(wb_tensor *view, wb_tensor *v)
{
    if (view)
        return wb_rt_view_make_call(view, v, 0, 0);
    return wb_rt_view_own(v, 0, 0);
}

/* wb_rt_commit_views with headers: out of line, as what it inlines makes
   gcc save registers on entry. */
static WB_RT_NOINLINE void wb_rt_commit_views_made(wb_tensor **outs,
                                                   wb_tensor *const *views,
                                                   wb_tensor *const *r, int n,
                                                   int requires_grad,
                                                   uint64_t dyn)
{
    for (int i = 0; i < n; i++)
        outs[i] = views[i] ? wb_rt_view_make(views[i], r[i], requires_grad,
                                             dyn)
                           : wb_rt_view_own(r[i], requires_grad, dyn);
}

/* Handed-over values first, with nothing to save, then the rest in a tail
   call; inline, so that the plain run's flags fold away. */
static inline void wb_rt_commit_views_n(wb_tensor **outs,
                                        wb_tensor *const *views,
                                        wb_tensor *const *r, int n,
                                        int requires_grad, uint64_t dyn)
{
    for (long i = 0; i < n; i++) {
        if (views[i]) {
            WB_RT_OPAQUE(i);
            wb_rt_commit_views_made(outs + i, views + i, r + i, n - (int)i,
                                    requires_grad, dyn);
            return;
        }
        outs[i] = wb_rt_view_own(r[i], requires_grad, dyn);
    }
}

void wb_rt_commit_views(wb_tensor **outs, wb_tensor *const *views,
                        wb_tensor *const *r, int n, int requires_grad,
                        unsigned long long dyn)
{
    wb_rt_commit_views_n(outs, views, r, n, requires_grad, dyn);
}

void wb_rt_commit_views_plain(wb_tensor **outs, wb_tensor *const *views,
                              wb_tensor *const *r, int n)
{
    wb_rt_commit_views_n(outs, views, r, n, 0, 0);
}

wb_tensor *wb_rt_out_flags(wb_tensor *t, int requires_grad,
                           unsigned long long dyn)
{
    if (requires_grad > 0)
        t->flags |= WB_TENSOR_REQUIRES_GRAD;
    else if (requires_grad == 0)
        t->flags &= ~WB_TENSOR_REQUIRES_GRAD;
    t->dyn_dims |= dyn;
    return t;
}

wb_tensor *wb_rt_out_plain(wb_tensor *t)
{
    t->flags &= ~WB_TENSOR_REQUIRES_GRAD;
    return t;
}

int wb_rt_out_plain_end(wb_tensor **out, wb_tensor *t)
{
    *out = wb_rt_out_plain(t);
    return WB_OK;
}

wb_tensor *wb_rt_out_input(wb_tensor *t, unsigned long long dyn)
{
    /* The caller's tensor may be in use by other threads: write only when
       there is something to record. */
    if (dyn)
        t->dyn_dims |= dyn;
    atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

void wb_rt_release_all(wb_tensor **v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i])
            wb_rt_release(v[i]);
}

void wb_rt_grow_free(wb_rt_grow *g)
{
    wb_rt_grow_discard(g);
}

/* ---- the symbol table for generated code ---- */

#define WB_ABI_COLD_hot false
#define WB_ABI_COLD_cold true
const wb_rt_symbol wb_rt_symbols[] = {
#define WB_ABI(ret, ptr, name, params, temp)                                \
    {#name, sizeof #name - 1, (wb_rt_fnptr)(name),                          \
     #ret " " #ptr #name #params ";", WB_ABI_COLD_##temp},
#include "helpers.def"
    {NULL, 0, NULL, NULL, false},
};

static bool wb_rt_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* The symbol table indexed by a cheap hash of the name (its length, its
   middle and last bytes), with linear probing: one lookup costs a few
   compares where a walk of the table cost a compare per symbol, which
   was most of a scan.  Built once; slot values are index + 1, 0 empty. */
#define WB_RT_SLOTS 128
static unsigned char wb_rt_slot[WB_RT_SLOTS];
static pthread_once_t wb_rt_slots_once = PTHREAD_ONCE_INIT;

static unsigned wb_rt_slot_hash(const char *name, size_t len)
{
    return ((unsigned)len * 131u + (unsigned char)name[len / 2] * 31u +
            (unsigned char)name[len - 1]) % WB_RT_SLOTS;
}

static void wb_rt_slots_fill(void)
{
    for (int i = 0; wb_rt_symbols[i].name; i++) {
        const wb_rt_symbol *y = &wb_rt_symbols[i];
        unsigned h = wb_rt_slot_hash(y->name, y->len);
        while (wb_rt_slot[h])
            h = (h + 1) % WB_RT_SLOTS;
        wb_rt_slot[h] = (unsigned char)(i + 1);
    }
}

wb_rt_cond wb_rt_cond_at(const char *p)
{
    /* Most directives are #line: the second byte rules them out. */
    if (p[0] != '#')
        return WB_RT_COND_NONE;
    if (p[1] == 'i')
        return !strncmp(p, "#ifdef __TINYC__\n", 17) ? WB_RT_COND_TCC
             : !strncmp(p, "#ifndef __TINYC__\n", 18) ? WB_RT_COND_NOT_TCC
                                                      : WB_RT_COND_NONE;
    if (p[1] == 'e')
        return !strncmp(p, "#else\n", 6) ? WB_RT_COND_ELSE
             : !strncmp(p, "#endif\n", 7) ? WB_RT_COND_END
                                          : WB_RT_COND_NONE;
    return WB_RT_COND_NONE;
}

unsigned wb_rt_cond_next(wb_rt_cond c, wb_rt_cond *in)
{
    switch (c) {
    case WB_RT_COND_TCC:
    case WB_RT_COND_NOT_TCC:
        *in = c;
        break;
    case WB_RT_COND_ELSE:
        *in = *in == WB_RT_COND_TCC ? WB_RT_COND_NOT_TCC : WB_RT_COND_TCC;
        break;
    case WB_RT_COND_END:
        *in = WB_RT_COND_NONE;
        break;
    default:
        break;
    }
    return *in == WB_RT_COND_TCC ? WB_RT_READ_TCC
         : *in == WB_RT_COND_NOT_TCC ? WB_RT_READ_CC
                                     : WB_RT_READ_TCC | WB_RT_READ_CC;
}

/* Every helper's name starts "wb_" or "mem", so only identifiers before a
   parenthesis that start so are looked up.  Directives are found between
   the parentheses, by the '#' that opens a line. */
int wb_rt_symbols_used(const char *src, size_t n,
                       unsigned char used[WB_RT_MAX_SYMBOLS])
{
    int count = 0;
    const char *end = src + n, *hash = memchr(src, '#', n);
    wb_rt_cond in = WB_RT_COND_NONE;
    unsigned who = WB_RT_READ_TCC | WB_RT_READ_CC;
    pthread_once(&wb_rt_slots_once, wb_rt_slots_fill);
    memset(used, 0, sizeof *used * WB_RT_MAX_SYMBOLS);
    for (const char *p = memchr(src, '(', n); p;
         p = memchr(p + 1, '(', (size_t)(end - p - 1))) {
        for (; hash && hash < p;
             hash = memchr(hash + 1, '#', (size_t)(end - hash - 1)))
            if (hash == src || hash[-1] == '\n')
                who = wb_rt_cond_next(wb_rt_cond_at(hash), &in);
        const char *q = p;
        while (q > src && wb_rt_ident_char(q[-1]))
            q--;
        size_t len = (size_t)(p - q);
        if (len < 4 || (memcmp(q, "wb_", 3) && memcmp(q, "mem", 3)))
            continue;
        for (unsigned h = wb_rt_slot_hash(q, len); wb_rt_slot[h];
             h = (h + 1) % WB_RT_SLOTS) {
            int i = wb_rt_slot[h] - 1;
            const wb_rt_symbol *y = &wb_rt_symbols[i];
            if (y->len == len && !memcmp(y->name, q, len)) {
                count += !used[i];
                used[i] |= (unsigned char)who;
                break;
            }
        }
    }
    return count;
}
