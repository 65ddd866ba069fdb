/*
 * interp.c -- the reference interpreter: the definition of a call.
 *
 * It walks the compact lists that wb_spec_validate derived, so a call visits
 * only the inputs and outputs that need work.  The emitter (emit.c) writes
 * the same steps, in the same order, as straight-line C; any difference in
 * what the two observably do is a bug in the emitter.  Both take the helper
 * of each mutation and output from the same row of the step table
 * (steps.c): the interpreter calls it, the emitter writes its name.
 */
#include <string.h>

#include "gen.h"
#include "../abi/abi.h"
#include "../spec/spec.h"

/* The tensor whose storage view output d will share once mutations are
   applied (a member's synthetic base, of bases, for a member's view), and
   the growth that storage may get. */
static const wb_tensor *wb_interp_holder(const wb_spec_out *d,
                                         const wb_arg *args,
                                         const wb_value *r,
                                         const wb_arg *bases,
                                         wb_rt_grow *grows,
                                         const wb_rt_grow **grown)
{
    *grown = d->grow >= 0 ? &grows[d->grow] : NULL;
    if (d->holder >= 0)
        return r[d->holder].t;
    if (d->group >= 0)
        return bases[d->group].t;
    return d->kind == WB_OUT_ALIAS_OF_INPUT ? args[d->base].t
                                            : r[d->base].t;
}

/* The tensor mutation m writes into: an input, or a synthetic base. */
static wb_tensor *wb_interp_target(const wb_spec *s, int input,
                                   const wb_arg *args, const wb_arg *bases)
{
    int g = wb_spec_synth(s, input);
    return g >= 0 ? bases[g].t : args[input].t;
}

/* Mutation m's check, as its row of the step table says: the helper,
   called with the arguments its argument list names. */
static wb_status wb_interp_prep_mut(const wb_env *e, const wb_spec_mut *m,
                                    wb_tensor *t, wb_tensor *v, wb_rt_grow *g)
{
    const wb_gen_helper *h = &wb_gen_mut_step(m)->check;
    switch (h->args) {
    case WB_GEN_ARGS_prep: return h->fn.prep(e, m->input, t, v);
    case WB_GEN_ARGS_prep_grow: return h->fn.prep_grow(e, m->input, t, v, g);
    default: return WB_OK;
    }
}

/* Mutation m's commit, the same way. */
static void wb_interp_commit_mut(const wb_spec_mut *m, wb_tensor *t,
                                 wb_tensor *v, wb_rt_grow *g)
{
    const wb_gen_helper *h = &wb_gen_mut_step(m)->commit;
    switch (h->args) {
    case WB_GEN_ARGS_commit: h->fn.commit(t, v); break;
    case WB_GEN_ARGS_commit_grow: h->fn.commit_grow(t, v, g); break;
    default: break;
    }
}

int wb_interp_call(const wb_env *e, const wb_arg *args, int nargs,
                   wb_value *outs, int nouts)
{
    const wb_spec *s = e->spec;
    /* The graph's values: T effect tokens, N = M + outputs + bases, the
       RNG's new offset. */
    const int N = s->nvalues, M = s->nupdated, T = s->ntokens,
              all = s->nreturned;
    wb_status st = WB_OK;
    int i, g, nd = 0, n = 0, grad;

    /* Arguments: count, NULLs, declared dtypes and ndims. */
    if (nargs != s->ninputs || nouts < s->noutputs)
        return wb_rt_err_arity(e, nargs, nouts);
    for (i = 0; i < s->ntensor_inputs; i++)
        if (!args[s->tensor_inputs[i]].t)
            return wb_rt_err_null_input(e, args);
    for (i = 0; i < s->ndeclared; i++) {
        int x = s->declared[i];
        if ((st = wb_rt_check_input(e, x, args[x].t)) != WB_OK)
            return st;
    }
    if (s->ndups && (st = wb_rt_check_dups(e, args)) != WB_OK)
        return st;
    if (s->nreshaped && (st = wb_rt_check_distinct(e, args)) != WB_OK)
        return st;
    if (s->first_call && (st = wb_rt_first_call(e)) != WB_OK)
        return st;

    wb_value rt[all + 1], *r = rt + T;
    wb_tensor *views[s->nviews + 1];
    wb_rt_grow grows[M + 1];
    /* The graph's arguments: the effect tokens, the kept inputs (the
       detached ones detached), the RNG's seed and offset. */
    bool own_args = s->ndetached || s->ndups || T || s->rng || s->ngroups;
    wb_arg gargs[own_args ? s->nargs : 1];
    unsigned long long kept[s->nhidden + 1];
    const wb_arg *cargs = args;
    /* The synthetic bases, where the graph's arguments start. */
    wb_arg *bases = gargs + T;
    if (s->ngroups && (st = wb_rt_synth_bases(e, args, bases)) != WB_OK)
        return st;

    /* In-graph mutations: the graph writes these inputs itself. */
    for (i = 0; i < s->nbumped; i++)
        wb_rt_bump(wb_interp_target(s, s->bumped[i], args, bases));

    /* The call, inside the guards and the grad mode of the spec. */
    for (g = 0; g < s->nguards; g++)
        if ((st = wb_rt_guard_enter(e, g)) != WB_OK)
            goto leave_guards;
    grad = wb_rt_grad_swap(s->training);
    if (own_args) {
        for (i = 0; i < T; i++)
            gargs[i].t = NULL;
        for (i = 0; i < nargs; i++)
            if (s->arg_at[i] >= 0)
                gargs[s->arg_at[i]] = args[i];
        cargs = gargs;
        for (; nd < s->ndetached; nd++) {
            int x = s->detached[nd];
            if ((st = wb_rt_detach(e, x, args[x].t,
                                   &gargs[s->arg_at[x]])) != WB_OK)
                goto undetach;
        }
    }
    if (s->before_call && (st = wb_rt_before_call(e)) != WB_OK)
        goto undetach;
    if (s->rng && (st = wb_rt_rng_get(e, gargs + s->nargs - 2)) != WB_OK)
        goto undetach;
    for (i = 0; i < all; i++)
        rt[i].t = NULL;
    /* In-graph mutations hidden from autograd: whatever the graph does to
       their versions is undone. */
    for (i = 0; i < s->nhidden; i++)
        kept[i] = wb_rt_version_get(
            wb_interp_target(s, s->hidden[i], args, bases));
    n = e->graph(e->graph_ctx, cargs, own_args ? s->nargs : nargs, rt, all);
    if (s->rng)
        wb_rt_rng_put(gargs + s->nargs - 2);
    for (i = 0; i < s->nhidden; i++)
        wb_rt_version_put(wb_interp_target(s, s->hidden[i], args, bases),
                          kept[i]);
undetach:
    while (nd-- > 0)
        wb_tensor_release(gargs[s->arg_at[s->detached[nd]]].t);
    wb_rt_grad_set(grad);
leave_guards:
    while (g-- > 0)
        wb_rt_guard_leave(e, g);
    if (st != WB_OK)
        goto unbump;

    /* Check phase: every value, every mutation, every view; may fail. */
    for (i = 0; i < M; i++)
        grows[i] = (wb_rt_grow){NULL, 0, NULL};
    for (i = 0; i < s->nviews; i++)
        views[i] = NULL;
    for (i = 0; n == all && i < N + s->rng &&
                (r[i].t || !wb_spec_value_is_tensor(s, i));
         i++)
        ;
    if (n != all || i < N + s->rng) {
        st = wb_rt_err_values(e, n, rt);
        goto fail;
    }
    for (i = 0; i < M; i++) {
        const wb_spec_mut *m = &s->muts[i];
        st = wb_interp_prep_mut(e, m,
                                wb_interp_target(s, m->input, args, bases),
                                r[i].t, &grows[i]);
        if (st != WB_OK)
            goto fail;
    }
    /* The members whose views change: from the values after the
       outputs, as metadata mutations. */
    const wb_gen_step *meta = &wb_gen_steps.mut[WB_MUT_METADATA];
    const int MV = M + s->noutputs;
    for (i = 0; i < s->nmeta_members; i++) {
        int x = s->meta_members[i];
        if ((st = meta->check.fn.prep(e, x, args[x].t, r[MV + i].t)) != WB_OK)
            goto fail;
    }
    if (s->moved_reads && (st = wb_rt_check_moved(e, args, r)) != WB_OK)
        goto fail;
    /* Only views have a check; the loop ends with the last of them. */
    for (i = 0, nd = 0; nd < s->nviews; i++) {
        const wb_spec_out *d = &s->outs[i];
        const wb_gen_helper *h = &wb_gen_steps.out[d->kind].check;
        const wb_rt_grow *grown;
        if (h->args != WB_GEN_ARGS_prep_view)
            continue;
        const wb_tensor *holder = wb_interp_holder(d, args, r, bases, grows,
                                                   &grown);
        st = h->fn.prep_view(e, i, holder, grown, r[d->value].t,
                             &views[nd++]);
        if (st != WB_OK)
            goto fail;
    }

    /* Commit phase: mutations, then outputs; cannot fail.  Only the CUDA
       write-back enqueued at the end (wb_rt_flush) can. */
    if (s->grad_writes)
        wb_rt_take_grads(e, args, r);
    for (i = 0; i < M; i++)
        wb_interp_commit_mut(&s->muts[i],
                             wb_interp_target(s, s->muts[i].input, args,
                                              bases),
                             r[i].t, &grows[i]);
    for (i = 0, nd = 0; i < s->noutputs; i++) {
        const wb_spec_out *d = &s->outs[i];
        const wb_gen_helper *h = &wb_gen_steps.out[d->kind].commit;
        /* A number is passed through as it is; None is NULL. */
        if (d->scalar) {
            outs[i] = r[d->value];
            if (d->scalar == WB_SCALAR_NONE)
                outs[i].p = NULL;
            continue;
        }
        switch (h->args) {
        case WB_GEN_ARGS_out_flags:
            outs[i].t = h->fn.out_flags(r[d->value].t, d->requires_grad,
                                        d->dyn);
            break;
        case WB_GEN_ARGS_out_input:
            outs[i].t = h->fn.out_input(args[d->base].t, d->dyn);
            wb_tensor_release(r[d->value].t);
            break;
        default: /* commit_view, of the view the check phase made */
            outs[i].t = h->fn.commit_view(views[nd++], r[d->value].t,
                                          d->requires_grad, d->dyn);
            if (d->holder >= 0 && d->kind == WB_OUT_ALIAS_OF_INPUT)
                wb_rt_view_counter(outs[i].t, args[d->base].t);
            break;
        }
    }
    /* The intermediate bases are not returned. */
    if (s->nbases)
        wb_rt_release_values(r + MV + s->nmeta_members, s->nbases);
    /* The members' new views, once the outputs are made from the bases
       (as AOTAutograd's synthetic-base wrapper applies them after its
       inner one); then the bases go. */
    for (i = 0; i < s->nmeta_members; i++)
        meta->commit.fn.commit(args[s->meta_members[i]].t, r[MV + i].t);
    wb_rt_release_values(bases, s->ngroups);
    /* Nor are the effect tokens. */
    wb_rt_release_values(rt, T);
    if (s->grad_at_end >= 0)
        wb_rt_grad_set(s->grad_at_end);
    if (s->device_copies && (st = wb_rt_flush(e, outs, s->noutputs))) {
        if (s->rng)
            wb_tensor_release(r[N].t);
        return st;
    }
    /* Only now, so that a failed call leaves the generator as it was. */
    if (s->rng)
        wb_rt_rng_set(e, r[N].t);
    return WB_OK;

    /* After the graph ran, its in-graph writes stand, and so do their
       version bumps. */
fail:
    /* First, so that a deleter the releases run may make a call. */
    if (s->device_copies)
        wb_rt_drop_copies(e);
    for (i = 0; s->nscalar_outs && i < s->noutputs; i++)
        if (s->outs[i].scalar)
            r[s->outs[i].value].t = NULL;  /* a number, not a reference */
    wb_rt_release_values(rt, all);
    wb_rt_release_values(bases, s->ngroups);
    wb_rt_release_all(views, s->nviews);
    for (i = 0; i < M; i++)
        wb_rt_grow_free(&grows[i]);
    return st;
unbump:
    for (i = 0; i < s->nbumped; i++)
        wb_rt_unbump(wb_interp_target(s, s->bumped[i], args, bases));
    wb_rt_release_values(bases, s->ngroups);
    return st;
}
