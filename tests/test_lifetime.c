/*
 * test_lifetime.c -- a wrapper freed from inside its own call: from its
 * graph, a hook or a guard, twice in one call, or from a nested call of
 * itself.  The free waits for the outermost call of the wrapper on the
 * calling thread, which returns its outputs and status as usual; a wrapper
 * that is not running is freed at once.
 *
 * A use after free or a leak shows in the sanitizer build (make test
 * SANITIZE=address,undefined).  On tcc the in-process code cache also
 * tells, in any build, whether a wrapper still lives: a new wrapper of an
 * equal spec shares code only while another one holds it.
 */
#include "helpers.h"

/* ---- what the graph and the hooks do ---- */

/* Where the wrapper is freed from. */
typedef enum life_where {
    LIFE_GRAPH, LIFE_BEFORE_CALL, LIFE_FIRST_CALL, LIFE_GUARD_ENTER,
    LIFE_GUARD_LEAVE, LIFE_NWHERE
} life_where;

static const char *const life_where_names[] = {
    "graph", "before-call hook", "first-call hook", "guard enter",
    "guard leave"
};

typedef struct life_ctx {
    wb_wrapper *w;          /* the wrapper called */
    wb_wrapper *victim;     /* what is freed, frees times, from where */
    int frees;
    life_where where;
    int recurse;            /* nested calls of w; the innermost frees */
    int depth;
    int nested_failed;      /* nested calls that did not return WB_OK */
    const wb_spec *probe;   /* tcc: the spec whose code is looked for */
    int probes, alive;      /* looks after the free, and code found */
    wb_tensor *xu, *o, *v;  /* the graph's values */
    int calls;
} life_ctx;

static int life_noop(void *ctx, const wb_arg *args, int nargs,
                     wb_value *values, int nvalues)
{
    (void)ctx; (void)args; (void)nargs; (void)values; (void)nvalues;
    return 0;
}

/* Whether tcc code for spec s is in the process, which is so while a tcc
   wrapper of an equal spec lives: a wrapper made now shares it. */
static bool life_code_alive(const wb_spec *s)
{
    wb_cache_stats before, after;
    wb_options o = {.tier = WB_TIER_TCC};
    wb_wrapper *p = NULL;
    wb_cache_stats_get(&before);
    if (wb_wrapper_new(s, life_noop, NULL, &o, &p) != WB_OK)
        return false;
    wb_cache_stats_get(&after);
    wb_wrapper_free(p);
    return after.shared > before.shared;
}

/* Frees the victim when called from where it is to be freed, in the
   innermost call; then, and in every call around it, looks for its code. */
static void life_act(life_ctx *c, life_where here)
{
    if (here != c->where)
        return;
    if (c->depth == c->recurse)
        for (int i = 0; i < c->frees; i++)
            wb_wrapper_free(c->victim);
    if (c->probe) {
        c->probes++;
        c->alive += life_code_alive(c->probe);
    }
}

/* Nothing in here asserts: a failed assertion would leave the call by a
   jump, which hooks and graphs must not do. */
static int life_graph(void *ctx, const wb_arg *a, int na, wb_value *vals,
                      int nv)
{
    life_ctx *c = ctx;
    c->calls++;
    if (c->depth < c->recurse) {
        wb_value outs[2] = {{NULL}, {NULL}};
        c->depth++;
        if (wb_call(c->w, a, na, outs, 2) != WB_OK)
            c->nested_failed++;
        c->depth--;
        wb_tensor_release(outs[0].t);
        wb_tensor_release(outs[1].t);
    }
    life_act(c, LIFE_GRAPH);
    if (nv != 3)
        return -1;
    vals[0].t = wb_tensor_retain(c->xu);
    vals[1].t = wb_tensor_retain(c->o);
    vals[2].t = wb_tensor_retain(c->v);
    return 3;
}

static int life_before_call(void *ud)
{
    life_act(ud, LIFE_BEFORE_CALL);
    return 0;
}

static int life_first_call(void *ud)
{
    life_act(ud, LIFE_FIRST_CALL);
    return 0;
}

static int life_guard_enter(void *ud)
{
    life_act(ud, LIFE_GUARD_ENTER);
    return 0;
}

static void life_guard_leave(void *ud)
{
    life_act(ud, LIFE_GUARD_LEAVE);
}

/* ---- the fixture ---- */

/*
 * Spec 'life':
 *   input 0 'x': data mutation, 4 elements
 *   input 1 'y': not mutated, 4 elements
 *   output 0 'o': non-alias
 *   output 1 'v': alias of input 1
 * The graph returns x's updated value, o and v, so each call still has its
 * epilogue to run (a copy, a view) after the graph and every hook: the
 * part that ran in freed memory when a free did not wait.
 */
typedef struct life_fix {
    wb_spec *spec;
    wb_tensor *x, *y, *xu, *o, *vb, *v;
    wb_arg args[2];
    life_ctx c;
} life_fix;

/* The spec 'life', with the hook or guard where names (none for the
   graph) over ud; o_grad sets output o's requires_grad, which gives an
   equal spec but for that, with code of its own. */
static wb_spec *life_spec(life_where hooks, void *ud, bool o_grad)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("life", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, o_grad, 0,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 1, false, 0,
                              NULL));
    switch (hooks) {
    case LIFE_BEFORE_CALL:
        WBT_OK(wb_spec_set_before_call(s, life_before_call, ud));
        break;
    case LIFE_FIRST_CALL:
        WBT_OK(wb_spec_set_first_call(s, life_first_call, ud));
        break;
    case LIFE_GUARD_ENTER:
    case LIFE_GUARD_LEAVE:
        WBT_OK(wb_spec_add_guard(s, life_guard_enter, life_guard_leave, ud));
        break;
    default:
        break;
    }
    return s;
}

static void life_fix_spec(life_fix *f, life_where hooks)
{
    memset(f, 0, sizeof *f);
    f->spec = life_spec(hooks, &f->c, false);
    f->x = wbt_f32(0, 1, 4);
    f->y = wbt_f32(50, 1, 4);
    f->xu = wbt_f32(100, 1, 4);
    f->o = wbt_f32(7, 1, 2);
    f->vb = wbt_f32(0, 1, 4);
    WBT_OK(wb_tensor_as_strided(f->vb, 1, (int64_t[]){2}, (int64_t[]){1}, 1,
                                &f->v));
    f->args[0].t = f->x;
    f->args[1].t = f->y;
    f->c.xu = f->xu;
    f->c.o = f->o;
    f->c.v = f->v;
    f->c.where = hooks;
}

/* Calls w on the fixture and checks that the call did all its work: x
   holds the updated value, bumped once per call (bumps, nested calls
   included), o comes back as it is, v as a view of y. */
static void life_call(life_fix *f, wb_wrapper *w, int bumps,
                      const char *what)
{
    wb_value outs[2] = {{NULL}, {NULL}};
    uint64_t version = wb_tensor_version(f->x);
    WBT_OK(wb_call(w, f->args, 2, outs, 2));
    cr_assert_eq(f->c.nested_failed, 0, "%s: a nested call failed: %s",
                 what, wb_last_error());
    for (int i = 0; i < 4; i++)
        cr_assert_eq(wbt_at(f->x, i), 100.0f + (float)i, "%s: x[%d] = %g",
                     what, i, wbt_at(f->x, i));
    cr_assert_eq(wb_tensor_version(f->x), version + (uint64_t)bumps,
                 "%s: x's version", what);
    cr_assert_eq(outs[0].t, f->o, "%s: o is not the graph's value", what);
    cr_assert_eq(wb_tensor_storage(outs[1].t), wb_tensor_storage(f->y),
                 "%s: v is not a view of y", what);
    wbt_assert_view(outs[1].t, 1, (int64_t[]){2}, (int64_t[]){1}, 1);
    cr_assert_eq(wbt_at(outs[1].t, 1), 52.0f, "%s: v[1]", what);
    wb_tensor_release(outs[0].t);
    wbt_release_last(outs[1].t);
}

static void life_fix_end(life_fix *f)
{
    wbt_release_last(f->x);
    wbt_release_last(f->y);
    wbt_release_last(f->xu);
    wbt_release_last(f->o);
    wbt_release_last(f->v);
    wbt_release_last(f->vb);
    wb_spec_free(f->spec);
}

/* Makes the fixture's wrapper on tier, to be freed by itself frees times
   from where, in the innermost of recurse nested calls, and calls it. */
static void life_self_free(wb_tier tier, life_where where, int frees,
                           int recurse)
{
    char what[96];
    snprintf(what, sizeof what, "%s, freed %d time(s) from the %s, %d "
             "nested", wb_tier_name(tier), frees, life_where_names[where],
             recurse);
    life_fix f;
    life_fix_spec(&f, where);
    wb_wrapper *w = wbt_wrap(f.spec, life_graph, &f.c, tier);
    f.c.w = w;
    f.c.victim = w;
    f.c.frees = frees;
    f.c.recurse = recurse;
    if (tier == WB_TIER_TCC)
        f.c.probe = f.spec;
    life_call(&f, w, 1 + recurse, what);
    cr_assert_eq(f.c.calls, 1 + recurse, "%s: %d graph calls", what,
                 f.c.calls);
    if (tier == WB_TIER_TCC) {
        /* Every look after the free, in the call that freed it and in the
           ones around it, found the wrapper alive; once wb_call returned
           it was gone. */
        cr_assert_eq(f.c.probes, 1 + recurse, "%s: %d looks", what,
                     f.c.probes);
        cr_assert_eq(f.c.alive, f.c.probes, "%s: the wrapper went during "
                     "its call (%d of %d looks found it)", what, f.c.alive,
                     f.c.probes);
        cr_assert(!life_code_alive(f.spec), "%s: the wrapper outlived its "
                  "call", what);
    }
    life_fix_end(&f);
}

/* ---- tests ---- */

Test(lifetime, graph_frees_its_own_wrapper)
{
    WBT_EACH_TIER(tier) {
        life_self_free(tier, LIFE_GRAPH, 1, 0);
    }
}

Test(lifetime, hooks_and_guards_free_their_wrapper)
{
    WBT_EACH_TIER(tier) {
        for (life_where h = LIFE_BEFORE_CALL; h < LIFE_NWHERE; h++)
            life_self_free(tier, h, 1, 0);
    }
}

/* The graph calls its own wrapper again and the inner call frees it: the
   inner call returns with the wrapper alive, and the outer call, which
   still has its epilogue to run, frees it. */
Test(lifetime, nested_call_frees_after_the_outermost_returns)
{
    WBT_EACH_TIER(tier) {
        life_self_free(tier, LIFE_GRAPH, 1, 1);
        life_self_free(tier, LIFE_GRAPH, 1, 2);
        life_self_free(tier, LIFE_GUARD_LEAVE, 1, 2);
    }
}

/* A second free inside the call finds the free already scheduled. */
Test(lifetime, two_frees_in_one_call_free_once)
{
    WBT_EACH_TIER(tier) {
        life_self_free(tier, LIFE_GRAPH, 2, 0);
        life_self_free(tier, LIFE_GUARD_LEAVE, 2, 1);
    }
}

/* A wrapper that is not running is freed at once, even from inside a call
   of another. */
Test(lifetime, graph_frees_another_wrapper_at_once)
{
    WBT_EACH_TIER(tier) {
        life_fix f;
        life_fix_spec(&f, LIFE_GRAPH);
        wb_spec *other = NULL;
        WBT_OK(wb_spec_new("other", &other));
        WBT_OK(wb_spec_add_tensor(other, "z", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(other, "z2", WB_OUT_NON_ALIAS, -1, false,
                                  0, NULL));
        wb_wrapper *w = wbt_wrap(f.spec, life_graph, &f.c, tier);
        wb_wrapper *w2 = wbt_wrap(other, life_noop, NULL, tier);
        f.c.w = w;
        f.c.victim = w2;
        f.c.frees = 1;
        if (tier == WB_TIER_TCC) {
            cr_assert(life_code_alive(other), "the other wrapper's code");
            f.c.probe = other;
        }
        life_call(&f, w, 1, wb_tier_name(tier));
        if (tier == WB_TIER_TCC)
            cr_assert_eq(f.c.alive, 0, "the other wrapper outlived its "
                         "free");
        /* The caller's wrapper is untouched: it still serves calls. */
        f.c.frees = 0;
        f.c.probe = NULL;
        life_call(&f, w, 1, wb_tier_name(tier));
        wb_wrapper_free(w);
        wb_spec_free(other);
        life_fix_end(&f);
    }
}

/* A wrapper running further out on the thread is found too: w's graph
   calls w2, whose graph frees w; w goes when its own call returns. */
static int life_outer_graph(void *ctx, const wb_arg *a, int na,
                            wb_value *vals, int nv)
{
    life_ctx *c = ctx;
    wb_value outs[2] = {{NULL}, {NULL}};
    c->calls++;
    if (wb_call(c->w, a, na, outs, 2) != WB_OK)
        c->nested_failed++;
    wb_tensor_release(outs[0].t);
    wb_tensor_release(outs[1].t);
    if (c->probe) {
        c->probes++;
        c->alive += life_code_alive(c->probe);
    }
    if (nv != 3)
        return -1;
    vals[0].t = wb_tensor_retain(c->xu);
    vals[1].t = wb_tensor_retain(c->o);
    vals[2].t = wb_tensor_retain(c->v);
    return 3;
}

Test(lifetime, inner_wrapper_frees_the_one_calling_it)
{
    WBT_EACH_TIER(tier) {
        life_fix f;
        life_fix_spec(&f, LIFE_GRAPH);
        /* The outer wrapper has code of its own, for the probe to find. */
        life_ctx oc = f.c;
        wb_spec *outer_spec = life_spec(LIFE_GRAPH, NULL, true);
        wb_wrapper *outer = wbt_wrap(outer_spec, life_outer_graph, &oc, tier);
        wb_wrapper *inner = wbt_wrap(f.spec, life_graph, &f.c, tier);
        oc.w = inner;
        f.c.w = inner;
        f.c.victim = outer;
        f.c.frees = 1;
        if (tier == WB_TIER_TCC)
            oc.probe = outer_spec;
        life_call(&f, outer, 2, wb_tier_name(tier));
        cr_assert_eq(oc.nested_failed, 0, "the inner call failed");
        cr_assert_eq(oc.calls, 1, "the outer graph ran %d times", oc.calls);
        cr_assert_eq(f.c.calls, 1, "the inner graph ran %d times",
                     f.c.calls);
        if (tier == WB_TIER_TCC) {
            cr_assert_eq(oc.alive, 1, "the outer wrapper went during its "
                         "call");
            cr_assert(!life_code_alive(outer_spec), "the outer wrapper "
                      "outlived its call");
        }
        /* The inner wrapper still serves. */
        f.c.frees = 0;
        life_call(&f, inner, 1, wb_tier_name(tier));
        wb_wrapper_free(inner);
        wb_spec_free(outer_spec);
        life_fix_end(&f);
    }
}
