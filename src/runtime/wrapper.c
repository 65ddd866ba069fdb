/*
 * wrapper.c -- wrapper objects and their tiers.
 *
 * A wrapper owns a validated copy of its spec and an entry point: the
 * interpreter, or the spec's generated C compiled by libtcc.  Both take the
 * same wb_env, so wb_call is one indirect call whatever the tier.
 */
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "../spec/spec.h"
#include "../wrappers/wrappers.h"

struct wb_wrapper {
    wb_env env;         /* first: generated code reads its leading members */
    wb_entry_fn entry;
    wb_tier tier;
    wb_spec *spec;
    char *source;       /* the generated C (tcc tier) */
    wb_jit_code *code;
};

const char *wb_tier_name(wb_tier tier)
{
    switch (tier) {
    case WB_TIER_DEFAULT: return "default";
    case WB_TIER_INTERP: return "interp";
    case WB_TIER_TCC: return "tcc";
    }
    return "?";
}

static wb_status wb_wrapper_compile(wb_wrapper *w)
{
    void *entry;
    wb_status st = wb_emit(w->spec, WB_EMIT_FN, true, &w->source);
    if (st != WB_OK)
        return st;
    st = wb_jit_compile(w->source, WB_EMIT_FN, &w->code, &entry);
    if (st != WB_OK)
        return st;
    /* POSIX guarantees function and object pointers convert both ways. */
    memcpy(&w->entry, &entry, sizeof entry);
    return WB_OK;
}

wb_status wb_wrapper_new(const wb_spec *spec, wb_graph_fn graph,
                         void *graph_ctx, const wb_options *options,
                         wb_wrapper **out)
{
    wb_tier tier = options ? options->tier : WB_TIER_DEFAULT;
    wb_status st;
    if (!spec || !graph || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_wrapper_new: NULL spec, graph "
                          "or out");
    if (tier == WB_TIER_DEFAULT)
        tier = WB_TIER_TCC;
    if (tier != WB_TIER_INTERP && tier != WB_TIER_TCC)
        return wb_rt_fail(WB_ERR_UNSUPPORTED, "wb_wrapper_new: tier %d is "
                          "not available in this build", (int)tier);
    wb_wrapper *w = calloc(1, sizeof *w);
    if (!w)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a wrapper");
    if ((st = wb_spec_clone(spec, &w->spec)) != WB_OK ||
        (st = wb_spec_validate(w->spec)) != WB_OK)
        goto fail;
    w->env.graph = graph;
    w->env.graph_ctx = graph_ctx;
    w->env.spec = w->spec;
    atomic_init(&w->env.first_call_state, 0);
    w->tier = tier;
    if (tier == WB_TIER_INTERP)
        w->entry = wb_interp_call;
    else if ((st = wb_wrapper_compile(w)) != WB_OK)
        goto fail;
    *out = w;
    return WB_OK;
fail:
    wb_wrapper_free(w);
    return st;
}

void wb_wrapper_free(wb_wrapper *w)
{
    if (!w)
        return;
    wb_jit_free(w->code);
    free(w->source);
    wb_spec_free(w->spec);
    free(w);
}

wb_status wb_call(wb_wrapper *w, const wb_arg *args, int nargs,
                  wb_tensor **outs, int nouts)
{
    if (!w || (nargs > 0 && !args) || (nouts > 0 && !outs))
        return wb_rt_fail(WB_ERR_INVALID, "wb_call: NULL wrapper, args or "
                          "outs");
    return (wb_status)w->entry(&w->env, args, nargs, outs, nouts);
}

wb_tier wb_wrapper_tier(const wb_wrapper *w) { return w ? w->tier : WB_TIER_DEFAULT; }
const char *wb_wrapper_source(const wb_wrapper *w) { return w ? w->source : NULL; }
const wb_spec *wb_wrapper_spec(const wb_wrapper *w) { return w ? w->spec : NULL; }
