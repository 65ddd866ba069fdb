/*
 * args.c -- the checks of a call's arguments before the graph runs, and
 * the messages every per-call primitive words its failures with.
 *
 * Every message says which spec, which item and what was expected; both
 * tiers reach the same message through the same primitive, so their errors
 * agree to the byte.  The runs of argument checks for libtcc sit here too:
 * they are the same checks, unrolled.
 */
#include <stdarg.h>
#include <stdio.h>

#include "abi.h"
#include "../spec/spec.h"

/* ---- runs of argument checks ---- */

/* Runs of argument checks, for libtcc: it keeps every value in memory, so
   its own check of one argument is 11 instructions where gcc's is 5, as
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
    /* A negative i names a synthetic base (wb_spec_synth), by its first
       member. */
    int g = wb_spec_synth(e->spec, i);
    int first = g >= 0 ? e->spec->group_first[g] : i;
    wb_spec_print_name(e->spec->inputs[first].name, nm, sizeof nm);
    snprintf(buf, n, "%sinput %d '%s'", i < 0 ? "the synthetic base of " : "",
             first, nm);
    return buf;
}

int wb_rt_unit_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_rt_vfail((wb_status)status, fmt, ap);
    va_end(ap);
    return status;
}

int wb_rt_err_arity(const wb_env *e, int nargs, int nouts)
{
    const wb_spec *s = e->spec;
    if (nargs != s->ninputs)
        return wb_rt_callf(e, WB_ERR_ARITY, "called with %d argument%s; "
                           "expected %d", nargs, WB_PLURAL(nargs),
                           s->ninputs);
    return wb_rt_callf(e, WB_ERR_ARITY, "called with room for %d output%s; "
                       "expected at least %d", nouts, WB_PLURAL(nouts),
                       s->noutputs);
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

int wb_rt_err_values(const wb_env *e, int n, const wb_value *r)
{
    const wb_spec *s = e->spec;
    if (n < 0)
        return wb_rt_callf(e, WB_ERR_GRAPH, "the graph failed with code %d",
                           n);
    char tokens[48] = "";
    if (s->ntokens)
        snprintf(tokens, sizeof tokens, "%d effect token%s, ", s->ntokens,
                 WB_PLURAL(s->ntokens));
    char views[48] = "";
    if (s->nmeta_members)
        snprintf(views, sizeof views, "%d new view%s of members, ",
                 s->nmeta_members, WB_PLURAL(s->nmeta_members));
    if (n != s->nreturned)
        return wb_rt_callf(e, WB_ERR_ARITY, "the graph returned %d value%s; "
                           "expected %d (%s%d updated input%s, %d output%s, "
                           "%s%d intermediate base%s%s)", n, WB_PLURAL(n),
                           s->nreturned, tokens, s->nupdated,
                           WB_PLURAL(s->nupdated), s->noutputs,
                           WB_PLURAL(s->noutputs), views, s->nbases,
                           WB_PLURAL(s->nbases),
                           s->rng ? ", the RNG offset" : "");
    /* Effect tokens may be NULL (None), and numbers are not tensors. */
    int i = s->ntokens;
    while (i < n - 1 &&
           (r[i].t || !wb_spec_value_is_tensor(s, i - s->ntokens)))
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
        return wb_rt_callf(e, WB_ERR_SHAPE, "%s: %d dimension%s; expected %d",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           t->ndim, WB_PLURAL(t->ndim), in->ndim);
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
/* AOTAutograd's AOTDedupeWrapper: a deduplicated input is, in every call,
   the tensor it duplicates, which alone the graph gets. */
/* Makes synthetic base g of the members in args (see wb_rt_synth_bases)
   into *out. */
static wb_status wb_rt_synth_base(const wb_env *e, int g, const wb_arg *args,
                                  wb_tensor **out)
{
    const wb_spec *s = e->spec;
    const int first = s->group_first[g];
    const wb_tensor *t = args[first].t;
    bool one_counter = true;
    char la[400], lb[400], da[32], db[32];
    for (int i = first + 1; i < s->ninputs; i++) {
        const wb_tensor *u = args[i].t;
        if (s->group_of[i] != g)
            continue;
        if (u->storage != t->storage)
            return wb_rt_callf(e, WB_ERR_HOOK, "%s and %s make one synthetic "
                               "base, but lie on different storages",
                               wb_rt_input_label(e, first, la, sizeof la),
                               wb_rt_input_label(e, i, lb, sizeof lb));
        if (!wb_rt_dtype_eq(u->dtype, t->dtype))
            return wb_rt_callf(e, WB_ERR_HOOK, "%s and %s make one synthetic "
                               "base, but have dtypes %s and %s; a base has "
                               "one (as in PyTorch, which does not yet handle "
                               "input mutations on views with different "
                               "dtypes)",
                               wb_rt_input_label(e, first, la, sizeof la),
                               wb_rt_input_label(e, i, lb, sizeof lb),
                               wb_rt_dtype_str(t->dtype, da, sizeof da),
                               wb_rt_dtype_str(u->dtype, db, sizeof db));
        one_counter &= wb_rt_version(u) == wb_rt_version(t);
    }
    if (s->training && !one_counter)
        return wb_rt_callf(e, WB_ERR_HOOK, "the members of %s are not views "
                           "of one tensor, sharing its version counter, which "
                           "a training graph needs (as in PyTorch, which does "
                           "not yet handle non-differentiable view input "
                           "mutations)",
                           wb_rt_input_label(e, g - s->ngroups, la,
                                             sizeof la));
    /* The whole storage, one dimension; with the members' counter when
       they share one, as PyTorch's base is their _base, else a counter of
       its own. */
    size_t es = wb_dtype_size(t->dtype);
    if (!es)
        return wb_rt_callf(e, WB_ERR_TYPE, "%s: its dtype is not "
                           "byte-addressable",
                           wb_rt_input_label(e, first, la, sizeof la));
    int64_t numel = (int64_t)(wb_storage_nbytes(t->storage) / es), one = 1;
    wb_status st = one_counter
                       ? wb_tensor_as_strided(t, 1, &numel, &one, 0, out)
                       : wb_tensor_from_storage(t->storage, t->dtype, 1,
                                                &numel, &one, 0, out);
    if (st != WB_OK)
        return wb_rt_callf(e, st, "%s: its synthetic base: %s",
                           wb_rt_input_label(e, first, la, sizeof la),
                           wb_last_error());
    return WB_OK;
}

int wb_rt_synth_bases(const wb_env *e, const wb_arg *args, wb_arg *bases)
{
    const wb_spec *s = e->spec;
    for (int g = 0; g < s->ngroups; g++) {
        wb_status st = wb_rt_synth_base(e, g, args, &bases[g].t);
        if (st != WB_OK) {
            while (g-- > 0)
                wb_tensor_release(bases[g].t);
            return st;
        }
    }
    return WB_OK;
}

int wb_rt_check_dups(const wb_env *e, const wb_arg *args)
{
    const wb_spec *s = e->spec;
    char la[400], lb[400];
    for (int k = 0; k < s->ndups; k++) {
        int i = s->dups[k], j = s->inputs[i].dup_of;
        if (args[i].t != args[j].t)
            return wb_rt_callf(e, WB_ERR_INVALID, "%s is not the same tensor "
                               "as %s, which it duplicates; the graph gets "
                               "that one alone",
                               wb_rt_input_label(e, i, la, sizeof la),
                               wb_rt_input_label(e, j, lb, sizeof lb));
    }
    return WB_OK;
}

int wb_rt_check_distinct(const wb_env *e, const wb_arg *args)
{
    const wb_spec *s = e->spec;
    char la[400], lb[400];
    for (int k = 0; k < s->nreshaped; k++) {
        int i = s->reshaped[k];
        const wb_input *in = &s->inputs[i];
        for (int j = 0; j < s->ninputs; j++) {
            /* A duplicate of i is i's tensor, which the graph gets once. */
            if (j == i || !s->inputs[j].is_tensor ||
                s->inputs[j].dup_of == i)
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
