/*
 * alloc-count: shows that a call allocates nothing on the heap in steady
 * state, on every tier, by counting every malloc, calloc and realloc the
 * process makes during a thousand calls after a warm-up; and that a view
 * whose value the graph hands over takes no header at all, even with the
 * thread's cache of headers empty; and that calls of 10, 100 and 1,000
 * views, or of 1,000 detached inputs, allocate no more than those of one
 * view.  It replaces the C library's
 * allocator entry points, so it is built without sanitizers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "wrapbake.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static long alloc_calls;
static int alloc_counting;

void *malloc(size_t n)
{
    alloc_calls += alloc_counting;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    alloc_calls += alloc_counting;
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    alloc_calls += alloc_counting;
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

#define NVALUES 9

/* The graph hands out references to values prepared ahead of time. */
typedef struct alloc_graph {
    wb_tensor *values[NVALUES];
    int n;
} alloc_graph;

static int alloc_graph_fn(void *ctx, const wb_arg *a, int na, wb_value *v,
                          int nv)
{
    alloc_graph *g = ctx;
    (void)a;
    (void)na;
    for (int i = 0; i < nv && i < g->n; i++)
        v[i].t = wb_tensor_retain(g->values[i]);
    return g->n;
}

static int alloc_hook(void *ud) { (void)ud; return 0; }
static void alloc_leave(void *ud) { (void)ud; }

static void alloc_check(wb_status st)
{
    if (st != WB_OK) {
        fprintf(stderr, "alloc-count: %s\n", wb_last_error());
        exit(2);
    }
}

static wb_tensor *alloc_tensor(void)
{
    int64_t sizes[2] = {2, 4};
    wb_tensor *t;
    alloc_check(wb_tensor_new((DLDataType){kDLFloat, 32, 1},
                              (DLDevice){kDLCPU, 0}, 2, sizes, &t));
    return t;
}

/* The graph returns its one value; with hand set it hands over the only
   reference, else it keeps its own. */
typedef struct alloc_view_graph {
    wb_tensor *value;
    int hand;
} alloc_view_graph;

static int alloc_view_fn(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    alloc_view_graph *g = ctx;
    (void)a;
    (void)na;
    (void)nv;
    v[0].t = g->hand ? g->value : wb_tensor_retain(g->value);
    return 1;
}

/* Heap allocations in 100 calls of an alias-of-input output whose value
   is a view of the input made by the graph before each call, with the
   thread's cache of headers emptied before each: none when the value is
   handed over (it is the view itself), one header a call when the graph
   keeps it. */
static long alloc_view_calls(wb_tier tier, int hand)
{
    wb_spec *s;
    wb_wrapper *w;
    wb_options o = {.tier = tier};
    wb_tensor *x = alloc_tensor();
    wb_value out;
    wb_arg args[1] = {{.t = x}};
    alloc_view_graph g = {NULL, hand};
    alloc_check(wb_spec_new("view", &s));
    alloc_check(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    alloc_check(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                   0, NULL));
    alloc_check(wb_wrapper_new(s, alloc_view_fn, &g, &o, &w));
    alloc_calls = 0;
    for (int c = 0; c < 100; c++) {
        alloc_check(wb_tensor_as_strided(x, 1, (int64_t[]){4},
                                         (int64_t[]){2}, 0, &g.value));
        wb_thread_cache_flush();
        alloc_counting = 1;
        alloc_check(wb_call(w, args, 1, &out, 1));
        alloc_counting = 0;
        if ((out.t == g.value) != hand) {
            fprintf(stderr, "alloc-count: %s: the view is%s the value\n",
                    wb_tier_name(tier), hand ? " not" : "");
            exit(2);
        }
        wb_tensor_release(out.t);
        if (!hand)
            wb_tensor_release(g.value);
    }
    wb_wrapper_free(w);
    wb_spec_free(s);
    wb_tensor_release(x);
    return alloc_calls;
}

/* The graph returns one value, kept, as each of its nv values. */
static int alloc_same_fn(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)a;
    (void)na;
    for (int i = 0; i < nv; i++)
        v[i].t = wb_tensor_retain(ctx);
    return nv;
}

/* Heap allocations in 100 calls of n alias-of-input views of one input,
   after a warm-up: none for 1,000 views as for one, since every thread's
   cache keeps as many headers as the largest wrapper's calls take. */
static long alloc_many_views(wb_tier tier, int n)
{
    wb_spec *s;
    wb_wrapper *w;
    wb_options o = {.tier = tier};
    wb_tensor *x = alloc_tensor(), *value = alloc_tensor();
    wb_arg args[1] = {{.t = x}};
    wb_value *outs = calloc((size_t)n, sizeof *outs);
    if (!outs)
        alloc_check(WB_ERR_NOMEM);
    alloc_check(wb_spec_new("views", &s));
    alloc_check(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    for (int k = 0; k < n; k++)
        alloc_check(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 0,
                                       false, 0, NULL));
    alloc_check(wb_wrapper_new(s, alloc_same_fn, value, &o, &w));
    alloc_calls = 0;
    for (int c = 0; c < 110; c++) {
        alloc_counting = c >= 10;
        alloc_check(wb_call(w, args, 1, outs, n));
        for (int k = 0; k < n; k++)
            wb_tensor_release(outs[k].t);
        alloc_counting = 0;
    }
    wb_wrapper_free(w);
    wb_spec_free(s);
    wb_tensor_release(value);
    wb_tensor_release(x);
    free(outs);
    return alloc_calls;
}

/* The same for n inputs detached in a training call, each of which takes
   a header, and one output. */
static long alloc_many_detached(wb_tier tier, int n)
{
    wb_spec *s;
    wb_wrapper *w;
    wb_options o = {.tier = tier};
    wb_tensor *x = alloc_tensor(), *value = alloc_tensor();
    wb_arg *args = calloc((size_t)n, sizeof *args);
    wb_value out;
    if (!args)
        alloc_check(WB_ERR_NOMEM);
    alloc_check(wb_spec_new("detached", &s));
    alloc_check(wb_spec_set_training(s, true));
    for (int i = 0; i < n; i++) {
        alloc_check(wb_spec_add_tensor(s, "x", WB_MUT_NONE, WB_INPUT_DETACH,
                                       NULL));
        args[i].t = x;
    }
    alloc_check(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, false, 0,
                                   NULL));
    alloc_check(wb_wrapper_new(s, alloc_same_fn, value, &o, &w));
    alloc_calls = 0;
    for (int c = 0; c < 110; c++) {
        alloc_counting = c >= 10;
        alloc_check(wb_call(w, args, n, &out, 1));
        wb_tensor_release(out.t);
        alloc_counting = 0;
    }
    wb_wrapper_free(w);
    wb_spec_free(s);
    wb_tensor_release(value);
    wb_tensor_release(x);
    free(args);
    return alloc_calls;
}

int main(void)
{
    /* Training, hooks and guards, detached inputs, data, metadata and
       storage mutations, and every kind of aliased output. */
    wb_spec *s;
    alloc_check(wb_spec_new("alloc", &s));
    alloc_check(wb_spec_set_training(s, true));
    alloc_check(wb_spec_set_before_call(s, alloc_hook, NULL));
    alloc_check(wb_spec_set_first_call(s, alloc_hook, NULL));
    alloc_check(wb_spec_add_guard(s, alloc_hook, alloc_leave, NULL));
    alloc_check(wb_spec_add_tensor(s, "d", WB_MUT_DATA, WB_INPUT_DETACH, NULL));
    alloc_check(wb_spec_add_tensor(s, "m", WB_MUT_METADATA, 0, NULL));
    alloc_check(wb_spec_add_tensor(s, "st", WB_MUT_STORAGE, 0, NULL));
    alloc_check(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    alloc_check(wb_spec_set_intermediate_bases(s, 1));
    alloc_check(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, true, 1, NULL));
    alloc_check(wb_spec_add_output(s, "i", WB_OUT_IS_INPUT, 0, false, 0, NULL));
    alloc_check(wb_spec_add_output(s, "a", WB_OUT_ALIAS_OF_INPUT, 3, false, 0, NULL));
    alloc_check(wb_spec_add_output(s, "b", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, false, 0, NULL));
    alloc_check(wb_spec_add_output(s, "u", WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 0, false, 0, NULL));
    alloc_check(wb_spec_validate(s));

    wb_tensor *in[4] = {alloc_tensor(), alloc_tensor(), alloc_tensor(),
                        alloc_tensor()};
    wb_arg args[4] = {{.t = in[0]}, {.t = in[1]}, {.t = in[2]}, {.t = in[3]}};
    alloc_graph g = {.n = NVALUES};
    for (int i = 0; i < NVALUES; i++)
        g.values[i] = alloc_tensor();

    int failed = 0;
    const wb_tier tiers[] = {WB_TIER_INTERP, WB_TIER_TCC};
    for (int ti = 0; ti < 2; ti++) {
        wb_options o = {.tier = tiers[ti]};
        wb_wrapper *w;
        wb_value outs[5];
        /* Building a wrapper allocates: proof that the count sees it. */
        alloc_counting = 1;
        alloc_check(wb_wrapper_new(s, alloc_graph_fn, &g, &o, &w));
        alloc_counting = 0;
        if (alloc_calls == 0) {
            fprintf(stderr, "alloc-count: the allocator is not replaced\n");
            return 2;
        }
        alloc_calls = 0;
        for (int c = 0; c < 1100; c++) {
            alloc_counting = c >= 100;
            alloc_check(wb_call(w, args, 4, outs, 5));
            for (int k = 0; k < 5; k++)
                wb_tensor_release(outs[k].t);
        }
        alloc_counting = 0;
        printf("alloc-count: %-6s %ld heap allocations in 1000 calls\n",
               wb_tier_name(tiers[ti]), alloc_calls);
        failed += alloc_calls != 0;
        alloc_calls = 0;
        wb_wrapper_free(w);

        long handed = alloc_view_calls(tiers[ti], 1);
        long kept = alloc_view_calls(tiers[ti], 0);
        printf("alloc-count: %-6s %ld heap allocations in 100 calls of a "
               "handed-over view, %ld of a kept one\n",
               wb_tier_name(tiers[ti]), handed, kept);
        failed += handed != 0 || kept != 100;

        /* First, while the caches keep no more than 64 (on interp). */
        long detached = alloc_many_detached(tiers[ti], 1000);
        printf("alloc-count: %-6s %ld heap allocations in 100 calls of 1000 "
               "detached inputs\n", wb_tier_name(tiers[ti]), detached);
        failed += detached != 0;
        for (int n = 1; n <= 1000; n *= 10) {
            long views = alloc_many_views(tiers[ti], n);
            printf("alloc-count: %-6s %ld heap allocations in 100 calls of "
                   "%d view%s\n", wb_tier_name(tiers[ti]), views, n,
                   n == 1 ? "" : "s");
            failed += views != 0;
        }
    }
    for (int i = 0; i < NVALUES; i++)
        wb_tensor_release(g.values[i]);
    for (int i = 0; i < 4; i++)
        wb_tensor_release(in[i]);
    wb_spec_free(s);
    printf("%d passed, %d failed\n", 14 - failed, failed);
    return failed != 0;
}
