/*
 * wrapper.c -- wrapper objects: creation, calls, and the ahead-of-time
 * constructor.
 *
 * Every tier comes down to an entry point over the wrapper's wb_env, so
 * wb_call is one indirect call whatever the tier, inside a frame that lets
 * a wrapper freed by its own call live until the call returns (see
 * wb_wrapper_free).  The entry is an atomic pointer: promotion from tcc
 * to cc is one release store, and a caller sees either the old function
 * or the new one, both complete.  This file reaches neither libtcc nor
 * the system compiler (tiers.c does), so a program of ahead-of-time
 * wrappers links without them.
 */
#include <stdlib.h>
#include <string.h>

#include "tiers.h"
#include "../spec/spec.h"
#include "../gen/gen.h"

const char *wb_tier_name(wb_tier tier)
{
    switch (tier) {
    case WB_TIER_DEFAULT: return "default";
    case WB_TIER_INTERP: return "interp";
    case WB_TIER_TCC: return "tcc";
    case WB_TIER_CC: return "cc";
    case WB_TIER_AUTO: return "auto";
    case WB_TIER_AOT: return "aot";
    }
    return "?";
}

void wb_code_release(wb_code *c)
{
    if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
        c->destroy(c);
}

/* The public constructors check spec, graph and out themselves, so that
   the message names the one the caller called; this check only keeps an
   internal caller that forgot from crashing. */
wb_status wb_wrapper_alloc(const wb_spec *spec, wb_graph_fn graph,
                           void *graph_ctx, wb_wrapper **out)
{
    wb_status st;
    if (!spec || !graph || !out)
        return wb_rt_fail(WB_ERR_INVALID, "a wrapper needs a spec, a graph "
                          "and somewhere to put it");
    wb_wrapper *w = calloc(1, sizeof *w);
    if (!w)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a wrapper");
    if ((st = wb_spec_clone(spec, &w->spec)) != WB_OK ||
        (st = wb_spec_validate(w->spec)) != WB_OK ||
        (w->spec->rng && !w->spec->rng_get &&
         (st = wb_rt_fail(WB_ERR_SPEC, "spec '%s': it asks for "
                          "functionalized RNG and has no callbacks; give "
                          "them with wb_spec_set_rng", w->spec->name)))) {
        wb_spec_free(w->spec);
        free(w);
        return st;
    }
    /* The headers a call makes: its views, its synthetic bases, its
       members' new views and its detached inputs. */
    wb_rt_cache_reserve(w->spec->nviews + w->spec->ngroups +
                        w->spec->nmeta_members + w->spec->ndetached);
    if (w->spec->first_call)
        wb_rt_first_call_init();
    w->env.graph = graph;
    w->env.graph_ctx = graph_ctx;
    w->env.spec = w->spec;
    atomic_init(&w->env.first_call_state, 0);
    atomic_init(&w->entry, (wb_entry_fn)0);
    atomic_init(&w->tier, WB_TIER_DEFAULT);
    atomic_init(&w->promoted, (wb_code *)0);
    atomic_init(&w->source, (char *)0);
    atomic_init(&w->note, (char *)0);
    *out = w;
    return WB_OK;
}

void wb_wrapper_set_note(wb_wrapper *w, char *text)
{
    free(atomic_exchange(&w->note, text));
}

/*
 * The calls running on this thread, innermost first (wb_rt_calls, which
 * the CUDA write-back also tells calls apart by).  wb_call links a frame
 * for the length of each call, so that a wb_wrapper_free from inside it
 * (the graph, a hook, a guard) can tell the wrapper is still running and
 * leave the free to the call.  One thread-local pointer, saved and
 * restored by each call, keeps that path free of atomics and locks;
 * frames of other threads are never looked at, since freeing a wrapper
 * another thread is calling is the caller's error.
 */
typedef struct wb_wrapper_frame {
    wb_wrapper *w;
    bool doomed;                    /* freed from inside: free on return */
    struct wb_wrapper_frame *prev;
} wb_wrapper_frame;


/* Frees w and everything it holds, now. */
static void wb_wrapper_destroy(wb_wrapper *w)
{
    if (w->retire)
        w->retire(w);
    wb_code_release(atomic_load(&w->promoted));
    wb_code_release(w->code);
    free(atomic_load(&w->note));
    free(atomic_load(&w->source));
    wb_spec_free(w->spec);
    free(w);
}

void wb_wrapper_free(wb_wrapper *w)
{
    if (!w)
        return;
    /* The outermost call of w on this thread frees it when it returns: a
       graph that calls its own wrapper again and frees it from the inner
       call still has the outer call to finish.  A second free from inside
       finds the frame already doomed and changes nothing. */
    wb_wrapper_frame *outer = NULL;
    for (wb_wrapper_frame *f = wb_rt_calls; f; f = f->prev)
        if (f->w == w)
            outer = f;
    if (WB_RT_UNLIKELY(outer != NULL)) {
        outer->doomed = true;
        return;
    }
    wb_wrapper_destroy(w);
}

wb_status wb_call(wb_wrapper *w, const wb_arg *args, int nargs,
                  wb_value *outs, int nouts)
{
    /* Three tests on the way every call takes; the counts only matter
       when one of the pointers is NULL. */
    if (WB_RT_UNLIKELY(!w || !args || !outs) &&
        (!w || (nargs > 0 && !args) || (nouts > 0 && !outs)))
        return wb_rt_fail(WB_ERR_INVALID, "wb_call: NULL wrapper, args or "
                          "outs");
    wb_entry_fn entry = atomic_load_explicit(&w->entry, memory_order_acquire);
    wb_wrapper_frame frame = {w, false, wb_rt_calls};
    wb_rt_calls = &frame;
    wb_status st = (wb_status)entry(&w->env, args, nargs, outs, nouts);
    wb_rt_calls = frame.prev;
    /* w was freed from inside this call: its code has returned, so it can
       go now, before the caller sees the result. */
    if (WB_RT_UNLIKELY(frame.doomed))
        wb_wrapper_destroy(w);
    return st;
}

wb_tier wb_wrapper_tier(const wb_wrapper *w)
{
    return w ? (wb_tier)atomic_load_explicit(&w->tier, memory_order_acquire)
             : WB_TIER_DEFAULT;
}

const char *wb_wrapper_note(const wb_wrapper *w)
{
    /* A note is only replaced while the tier is still settling; the last
       one stays until the wrapper goes. */
    return w ? atomic_load_explicit(&((wb_wrapper *)w)->note,
                                    memory_order_acquire)
             : NULL;
}

const char *wb_wrapper_source(const wb_wrapper *w)
{
    if (!w)
        return NULL;
    /* Made once, by whichever caller gets there first. */
    wb_wrapper *m = (wb_wrapper *)w;
    char *src = atomic_load_explicit(&m->source, memory_order_acquire), *none;
    if (src || !w->code ||
        wb_emit(w->spec, WB_EMIT_FN, WB_EMIT_LINES, &src) != WB_OK)
        return src;
    none = NULL;
    if (!atomic_compare_exchange_strong(&m->source, &none, src)) {
        free(src);
        src = none;
    }
    return src;
}
const wb_spec *wb_wrapper_spec(const wb_wrapper *w) { return w ? w->spec : NULL; }

/* ---- ahead-of-time wrappers ---- */

/* The fingerprint of the C generated for a validated spec. */
static wb_status wb_fingerprint_of(const wb_spec *spec, char **src,
                                   char out[WB_FINGERPRINT_LEN + 1])
{
    wb_status st = wb_emit(spec, WB_EMIT_FN, WB_EMIT_PLAIN, src);
    if (st == WB_OK)
        wb_sha256_str(*src, strlen(*src), out);
    return st;
}

wb_status wb_spec_fingerprint(const wb_spec *spec,
                              char out[WB_FINGERPRINT_LEN + 1])
{
    wb_spec *copy = NULL;
    char *src = NULL;
    wb_status st;
    if (!spec || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_fingerprint: NULL "
                          "argument");
    /* The caller's spec is const: an unvalidated one is validated in a
       copy. */
    if (!spec->valid) {
        if ((st = wb_spec_clone(spec, &copy)) != WB_OK ||
            (st = wb_spec_validate(copy)) != WB_OK)
            goto done;
        spec = copy;
    }
    st = wb_fingerprint_of(spec, &src, out);
done:
    free(src);
    wb_spec_free(copy);
    return st;
}

wb_status wb_wrapper_new_aot(const wb_spec *spec, wb_entry_fn entry,
                             const char *fingerprint, wb_graph_fn graph,
                             void *graph_ctx, wb_wrapper **out)
{
    char mine[WB_FINGERPRINT_LEN + 1];
    wb_wrapper *w;
    wb_status st;
    if (!spec || !entry || !fingerprint || !graph || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_wrapper_new_aot: NULL %s",
                          !spec ? "spec" : !entry ? "entry" :
                          !fingerprint ? "fingerprint" : !graph ? "graph" :
                          "out");
    char *src = NULL;
    if ((st = wb_wrapper_alloc(spec, graph, graph_ctx, &w)) != WB_OK)
        return st;
    st = wb_fingerprint_of(w->spec, &src, mine);
    atomic_store(&w->source, src);
    if (st != WB_OK)
        goto fail;
    if (strcmp(mine, fingerprint) != 0) {
        char name[WB_MAX_NAME * 4 + 1];
        wb_spec_print_name(w->spec->name, name, sizeof name);
        /* Both fingerprints up to their first differing digit, and at
           least 16 digits, so that the two shown always differ. */
        int n = 0;
        while (mine[n] && mine[n] == fingerprint[n])
            n++;
        n = n < 16 ? 16 : n + 1;
        st = wb_rt_fail(WB_ERR_SPEC, "spec '%s': the ahead-of-time code "
                        "was generated for fingerprint %.*s%s, but this "
                        "library generates %.*s%s for the spec; "
                        "regenerate it with `wrapbake emit --aot`",
                        name, n, fingerprint,
                        strlen(fingerprint) > (size_t)n ? "..." : "", n,
                        mine, strlen(mine) > (size_t)n ? "..." : "");
        goto fail;
    }
    atomic_store(&w->entry, entry);
    atomic_store(&w->tier, WB_TIER_AOT);
    *out = w;
    return WB_OK;
fail:
    wb_wrapper_free(w);
    return st;
}
