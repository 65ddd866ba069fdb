/*
 * views.c -- the outputs: the check and commit of outputs that alias an
 * input or an intermediate base (views), with the check that no value the
 * commit reads is an input whose view or storage a mutation changes
 * first, and the flags, inputs returned as they are and released values
 * of the others.
 *
 * A view's check and commit share the test for a value that can be its
 * own view (wb_rt_view_same) and the making of its header, inlined into
 * both from this one file.
 */
#include <stdio.h>
#include <string.h>

#include "abi.h"
#include "prim.h"
#include "../spec/spec.h"

/* ---- check phase ---- */

static const char *wb_rt_output_label(const wb_env *e, int k, char *buf,
                                      size_t n)
{
    char nm[300];
    const wb_output *o = &e->spec->outputs[k];
    wb_spec_print_name(o->name, nm, sizeof nm);
    snprintf(buf, n, "output %d '%s' (%s)", k, nm, wb_alias_name(o->kind));
    return buf;
}

/* Refuses value x (counted after the effect tokens), which reader reads
   at the commit: it is input i, whose mutation (of kind kind) commits
   first and changes it, where the check saw it as it was.  The message
   counts the tokens, as the graph does. */
static int wb_rt_moved(const wb_env *e, const char *reader, int x, int i,
                       wb_mutation kind)
{
    char li[400];
    return wb_rt_callf(e, WB_ERR_INVALID, "%s: its value %d is %s, whose %s "
                       "mutation commits first and changes it; expected a "
                       "tensor of the graph's own", reader,
                       e->spec->ntokens + x,
                       wb_rt_input_label(e, i, li, sizeof li),
                       wb_mutation_name(kind));
}

/* Whether a mutation of kind kind handed v moves t: a resize to other
   sizes, or another storage or view.  One handed t itself, or a tensor
   on its storage with its very view, changes nothing. */
static bool wb_rt_moves(wb_mutation kind, const wb_tensor *t,
                        const wb_tensor *v)
{
    if (kind == WB_MUT_RESIZE)
        return !wb_rt_same_sizes(v, t);
    return v != t && (v->storage != t->storage || !wb_rt_same_view(v, t));
}

int wb_rt_check_moved(const wb_env *e, const wb_arg *a, const wb_value *r)
{
    const wb_spec *s = e->spec;
    const int M = s->nupdated, MV = M + s->noutputs;
    char lb[400];
    for (int q = 0; q < M; q++) {
        const wb_spec_mut *m = &s->muts[q];
        if (m->input < 0 || !wb_mutation_moves(m->kind) ||
            !wb_rt_moves(m->kind, a[m->input].t, r[q].t))
            continue;
        const wb_tensor *t = a[m->input].t;
        /* Inputs' mutations come after the synthetic bases'. */
        for (int p = q + 1; p < M; p++)
            if (r[p].t == t)
                return wb_rt_moved(
                    e, wb_rt_input_label(e, s->muts[p].input, lb, sizeof lb),
                    p, m->input, m->kind);
        for (int k = 0; k < s->noutputs; k++) {
            const wb_spec_out *d = &s->outs[k];
            /* A view reads its value, and the storage of its base when
               that is a value too. */
            if (d->kind == WB_OUT_NON_ALIAS || d->kind == WB_OUT_IS_INPUT)
                continue;
            int x = r[d->value].t == t ? d->value
                    : d->kind != WB_OUT_ALIAS_OF_INPUT && r[d->base].t == t
                        ? d->base
                        : -1;
            if (x >= 0)
                return wb_rt_moved(e, wb_rt_output_label(e, k, lb, sizeof lb),
                                   x, m->input, m->kind);
        }
        for (int k = 0; k < s->nmeta_members; k++)
            if (r[MV + k].t == t)
                return wb_rt_moved(
                    e, wb_rt_input_label(e, s->meta_members[k], lb, sizeof lb),
                    MV + k, m->input, m->kind);
    }
    /* The members take their new views last, one after another. */
    for (int q = 0; q < s->nmeta_members; q++) {
        const wb_tensor *t = a[s->meta_members[q]].t;
        if (!wb_rt_moves(WB_MUT_METADATA, t, r[MV + q].t))
            continue;
        for (int k = q + 1; k < s->nmeta_members; k++)
            if (r[MV + k].t == t)
                return wb_rt_moved(
                    e, wb_rt_input_label(e, s->meta_members[k], lb, sizeof lb),
                    MV + k, s->meta_members[q],
                    s->inputs[s->meta_members[q]].mutation);
    }
    return WB_OK;
}

/* Header h for a view of holder's storage; NULL when h is.  It shares
   holder's version counter, and holds a reference to that storage from
   now on, unless keep: the view's value is a fixed tensor on that very
   storage, and h stays without one until the commit, where it keeps the
   value instead (wb_rt_view_make), which spares the reference's two
   locked operations; a failed call frees it with nothing to release but
   its counter. */
static inline wb_tensor *wb_rt_view_header(wb_tensor *h,
                                           const wb_tensor *holder, bool keep)
{
    if (!h)
        return NULL;
    if (!keep)
        wb_rt_set_storage(h, wb_rt_storage_retain(holder->storage));
    if (WB_RT_UNLIKELY(holder->counter != NULL))
        h->counter = wb_rt_counter_share(holder);  /* headers come with none */
    return h;
}

/* The header for a view of value v, whose base will hold holder's storage,
   when v lies on that very storage: such a value fits (every tensor lies
   inside its storage, and storages only grow).  When the graph handed over
   v's only reference and v shares holder's version counter (a view the
   graph made of holder), no one else can reach v, and v itself is the
   view: *view is NULL, which spares the header and the storage reference
   it holds (two locked operations); the acquire load orders the other
   holders' earlier releases before the commit's writes.  Otherwise the
   header comes from the thread's cache.  Nonzero when v needs the full
   check: another storage, or an empty cache.  It calls nothing, so that
   gcc saves no register for it. */
static inline int wb_rt_view_same(const wb_tensor *holder, const wb_tensor *v,
                                  wb_tensor **view)
{
    if (v->storage != holder->storage)
        return 1;
    if (v->counter == holder->counter &&
        atomic_load_explicit(&v->refcount, memory_order_acquire) == 1) {
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

/* Outputs output to output + n - 1, each a view of the storage of
   a[i * step].t (step 1: of consecutive inputs; 0: all of a[0].t) with
   value r[i]'s view, in views[i], with the full check. */
static inline wb_status wb_rt_prep_views_each(const wb_env *e, int output,
                                              const wb_arg *a, size_t step,
                                              const wb_value *r,
                                              wb_tensor **views, int n)
{
    wb_status st;
    for (int i = 0; i < n; i++)
        if ((st = wb_rt_prep_view(e, output + i, a[i * step].t, NULL, r[i].t,
                                  &views[i])) != WB_OK)
            return st;
    return WB_OK;
}

/* That for each step, out of line, as its calls make gcc save registers
   on entry, and with six arguments, which the quick path below passes on
   in registers as a tail call. */
static WB_RT_NOINLINE wb_status wb_rt_prep_views_full(
    const wb_env *e, int output, const wb_arg *a, const wb_value *r,
    wb_tensor **views, int n)
{
    return wb_rt_prep_views_each(e, output, a, 1, r, views, n);
}

static WB_RT_NOINLINE wb_status wb_rt_prep_views_of_full(
    const wb_env *e, int output, const wb_arg *a, const wb_value *r,
    wb_tensor **views, int n)
{
    return wb_rt_prep_views_each(e, output, a, 0, r, views, n);
}

/* The same: the quick paths first, with no call (gcc saves two registers,
   not the six the full loop needs), then the rest in a tail call; inline,
   so that each caller's step folds away. */
static inline int wb_rt_prep_views_step(const wb_env *e, int output,
                                        const wb_arg *a, size_t step,
                                        const wb_value *r, wb_tensor **views,
                                        int n)
{
    for (int i = 0; i < n; i++)
        if (wb_rt_view_same(a[i * step].t, r[i].t, &views[i]))
            return (step ? wb_rt_prep_views_full : wb_rt_prep_views_of_full)(
                e, output + i, a + i * step, r + i, views + i, n - i);
    return WB_OK;
}

int wb_rt_prep_views(const wb_env *e, int output, const wb_arg *a,
                     const wb_value *r, wb_tensor **views, int n)
{
    return wb_rt_prep_views_step(e, output, a, 1, r, views, n);
}

int wb_rt_prep_views_of(const wb_env *e, int output, const wb_arg *a,
                        const wb_value *r, wb_tensor **views, int n)
{
    return wb_rt_prep_views_step(e, output, a, 0, r, views, n);
}

/* ---- commit phase ---- */

/* Output flags: requires-grad when requires_grad is not 0. */
static inline uint32_t wb_rt_view_flags(int requires_grad)
{
    return requires_grad ? WB_TENSOR_REQUIRES_GRAD : 0;
}

/* The prepared header given v's dtype, view and device, and the flags.
   The dtype, dims and device go as one word: v lies on a storage of the
   view's device (its own, or one the check found on that device), so its
   device is the view's.  small: the caller knows that v has at most
   WB_RT_SMALL_DIMS dims. */
static inline void wb_rt_view_fill(wb_tensor *view, const wb_tensor *v,
                                   int requires_grad, uint64_t dyn,
                                   bool small)
{
    memcpy(&view->dtype, &v->dtype, sizeof(uint64_t));
    if (small) {
        view->offset = v->offset;
        wb_rt_take_small(view, v);
    } else {
        wb_rt_take_view(view, v);
    }
    view->flags = wb_rt_view_flags(requires_grad);
    view->fixed = false;
    view->dyn_dims = dyn;
}

/* A header without a storage made a view of v, a fixed value on the
   storage of the view's base (wb_rt_view_same), which it keeps; consumes
   v. */
static inline wb_tensor *wb_rt_view_keep(wb_tensor *view, wb_tensor *v,
                                         int requires_grad, uint64_t dyn,
                                         bool small)
{
    wb_rt_view_fill(view, v, requires_grad, dyn, small);
    view->storage = v->storage;
    view->keeper = v;
    return view;
}

/* The prepared header made a view with v's view and the flags; consumes
   v.  A header that holds its storage drops v; one without keeps it. */
static inline wb_tensor *wb_rt_view_make(wb_tensor *view, wb_tensor *v,
                                         int requires_grad, uint64_t dyn)
{
    if (!view->storage)
        return wb_rt_view_keep(view, v, requires_grad, dyn, false);
    wb_rt_view_fill(view, v, requires_grad, dyn, false);
    wb_rt_release(v);
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

/* wb_rt_view_make out of line, so that wb_rt_commit_view's paths that
   release nothing save no registers (gcc would save them on entry for
   all). */
static WB_RT_NOINLINE wb_tensor *wb_rt_view_make_call(wb_tensor *view,
                                                      wb_tensor *v,
                                                      int requires_grad,
                                                      uint64_t dyn)
{
    return wb_rt_view_make(view, v, requires_grad, dyn);
}

static inline wb_tensor *wb_rt_commit_view_as(wb_tensor *view, wb_tensor *v,
                                              int requires_grad,
                                              uint64_t dyn)
{
    if (!view)
        return wb_rt_view_own(v, requires_grad, dyn);
    if (!view->storage && v->ndim <= WB_RT_SMALL_DIMS)
        return wb_rt_view_keep(view, v, requires_grad, dyn, true);
    return wb_rt_view_make_call(view, v, requires_grad, dyn);
}

wb_tensor *wb_rt_commit_view(wb_tensor *view, wb_tensor *v, int requires_grad,
                             unsigned long long dyn)
{
    return wb_rt_commit_view_as(view, v, requires_grad, dyn);
}

wb_tensor *wb_rt_commit_view_plain(wb_tensor *view, wb_tensor *v)
{
    return wb_rt_commit_view_as(view, v, 0, 0);
}

/* wb_rt_commit_views with headers: out of line, as what it inlines makes
   gcc save registers on entry. */
static WB_RT_NOINLINE void wb_rt_commit_views_made(wb_value *outs,
                                                   wb_tensor *const *views,
                                                   const wb_value *r, int n,
                                                   int requires_grad,
                                                   uint64_t dyn)
{
    for (int i = 0; i < n; i++)
        outs[i].t = views[i] ? wb_rt_view_make(views[i], r[i].t,
                                               requires_grad, dyn)
                             : wb_rt_view_own(r[i].t, requires_grad, dyn);
}

/* Handed-over values and fixed ones of few dims first, which call
   nothing and so save nothing, then the rest in a tail call; inline, so
   that the plain run's flags fold away.  The two tests are
   wb_rt_commit_view_as's, written out: through that helper gcc lays the
   loop out so that each call of case E costs 9 instructions more. */
static inline void wb_rt_commit_views_n(wb_value *outs,
                                        wb_tensor *const *views,
                                        const wb_value *r, int n,
                                        int requires_grad, uint64_t dyn)
{
    for (long i = 0; i < n; i++) {
        wb_tensor *view = views[i], *v = r[i].t;
        if (!view) {
            outs[i].t = wb_rt_view_own(v, requires_grad, dyn);
        } else if (!view->storage && v->ndim <= WB_RT_SMALL_DIMS) {
            outs[i].t = wb_rt_view_keep(view, v, requires_grad, dyn, true);
        } else {
            WB_RT_OPAQUE(i);
            wb_rt_commit_views_made(outs + i, views + i, r + i, n - (int)i,
                                    requires_grad, dyn);
            return;
        }
    }
}

void wb_rt_commit_views(wb_value *outs, wb_tensor *const *views,
                        const wb_value *r, int n, int requires_grad,
                        unsigned long long dyn)
{
    wb_rt_commit_views_n(outs, views, r, n, requires_grad, dyn);
}

void wb_rt_commit_views_plain(wb_value *outs, wb_tensor *const *views,
                              const wb_value *r, int n)
{
    wb_rt_commit_views_n(outs, views, r, n, 0, 0);
}

/* A view of input t whose storage came with t's set_ (its holder is the
   updated value) shares t's counter, which the set_ kept. */
wb_tensor *wb_rt_view_counter(wb_tensor *view, const wb_tensor *t)
{
    wb_storage *c = wb_rt_counter_share(t);
    if (view->counter)
        wb_rt_counter_release(view->counter);
    view->counter = c;
    return view;
}

/* An output's flags and dynamic dims may go on a tensor other calls hand
   out at the same time: the caller's input, or a value the graph keeps
   and hands to every call.  Calls that start together may all write
   them, so each field is read and written atomically (relaxed: a plain
   load or store on x86-64), and written only when it changes, so that
   calls that find it set write nothing. */
static inline void wb_rt_set_flags(wb_tensor *t, uint32_t flags)
{
    if (__atomic_load_n(&t->flags, __ATOMIC_RELAXED) != flags)
        __atomic_store_n(&t->flags, flags, __ATOMIC_RELAXED);
}

static inline void wb_rt_add_dyn(wb_tensor *t, uint64_t dyn)
{
    if ((__atomic_load_n(&t->dyn_dims, __ATOMIC_RELAXED) & dyn) != dyn)
        __atomic_fetch_or(&t->dyn_dims, dyn, __ATOMIC_RELAXED);
}

wb_tensor *wb_rt_out_flags(wb_tensor *t, int requires_grad,
                           unsigned long long dyn)
{
    uint32_t flags = __atomic_load_n(&t->flags, __ATOMIC_RELAXED);
    if (requires_grad > 0)
        flags |= WB_TENSOR_REQUIRES_GRAD;
    else if (requires_grad == 0)
        flags &= ~WB_TENSOR_REQUIRES_GRAD;
    wb_rt_set_flags(t, flags);
    wb_rt_add_dyn(t, dyn);
    return t;
}

wb_tensor *wb_rt_out_plain(wb_tensor *t)
{
    if (__atomic_load_n(&t->flags, __ATOMIC_RELAXED) & WB_TENSOR_REQUIRES_GRAD)
        __atomic_fetch_and(&t->flags, ~WB_TENSOR_REQUIRES_GRAD,
                           __ATOMIC_RELAXED);
    return t;
}

int wb_rt_out_plain_end(wb_tensor **out, wb_tensor *t)
{
    *out = wb_rt_out_plain(t);
    return WB_OK;
}

wb_tensor *wb_rt_out_input(wb_tensor *t, unsigned long long dyn)
{
    wb_rt_add_dyn(t, dyn);
    atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
    return t;
}

void wb_rt_release_all(wb_tensor **v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i])
            wb_rt_release(v[i]);
}

void wb_rt_release_values(wb_value *r, int n)
{
    for (int i = 0; i < n; i++)
        if (r[i].t)
            wb_rt_release(r[i].t);
}
