/*
 * The thread stress test: caller threads call shared wrappers of three
 * specs on both tiers, each on tensors of its own, while builder threads
 * parse, validate, emit, compile (under the libtcc lock), call and free
 * wrappers of the same specs.  Every result is checked: values, versions,
 * identities, storages, and at the end every reference count.
 *
 * WB_STRESS_CALLS sets the calls per caller thread (default 50000).
 */
#include <pthread.h>

#include "helpers.h"

#define STRESS_CALLERS 8
#define STRESS_BUILDERS 4
#define STRESS_SPECS 3
#define STRESS_BUILDS 40

/* Spec 0: x data-mutated to x + 1, output 0 a view of y's second row. */
static int stress_graph0(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)ctx; (void)na; (void)nv;
    const float *x = wb_tensor_data(a[0].t);
    if (wb_tensor_new(WBT_F32, WBT_CPU, 2, wb_tensor_sizes(a[0].t), &v[0].t))
        return -1;
    float *nx = wb_tensor_data(v[0].t);
    for (int i = 0; i < 8; i++)
        nx[i] = x[i] + 1;
    if (wb_tensor_as_strided(a[1].t, 1, (int64_t[]){4}, NULL, 4, &v[1].t))
        return -2;
    return 2;
}

/* Spec 1: x read only; output 0 is 2x, output 1 is x itself. */
static int stress_graph1(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)ctx; (void)na; (void)nv;
    const float *x = wb_tensor_data(a[0].t);
    if (wb_tensor_new(WBT_F32, WBT_CPU, 2, wb_tensor_sizes(a[0].t), &v[0].t))
        return -1;
    float *o = wb_tensor_data(v[0].t);
    for (int i = 0; i < 8; i++)
        o[i] = 2 * x[i];
    v[1].t = wb_tensor_retain(a[0].t);
    return 2;
}

/* Spec 2: x mutated in the graph (x + k, k a scalar), no outputs. */
static int stress_graph2(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)ctx; (void)na; (void)v; (void)nv;
    float *x = wb_tensor_data(a[0].t);
    for (int i = 0; i < 8; i++)
        x[i] += (float)a[1].i;
    return 0;
}

static const wb_graph_fn stress_graphs[STRESS_SPECS] = {
    stress_graph0, stress_graph1, stress_graph2};

/* The specs as text, so that builders parse them too. */
static const char *const stress_texts[STRESS_SPECS] = {
    "stress0(Tensor(a!) x, Tensor(b) y) -> Tensor(b) [requires_grad]",
    "stress1(Tensor(a) x) -> (Tensor, Tensor(a))",
    "stress2(Tensor(a!) x [in_graph], int k) -> () with keep_input_mutations",
};

static wb_spec *stress_specs[STRESS_SPECS];
static wb_wrapper *stress_shared[STRESS_SPECS][WBT_NTIERS];

static wb_spec *stress_build_spec(int k)
{
    wb_spec *s;
    switch (k) {
    case 0:
        WBT_OK(wb_spec_new("stress0", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "row", WB_OUT_ALIAS_OF_INPUT, 1, true, 0,
                                  NULL));
        break;
    case 1:
        WBT_OK(wb_spec_new("stress1", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "twice", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "self", WB_OUT_IS_INPUT, 0, false, 0,
                                  NULL));
        break;
    default:
        WBT_OK(wb_spec_new("stress2", &s));
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_IN_GRAPH, 0, NULL));
        WBT_OK(wb_spec_add_scalar(s, "k", WB_SCALAR_INT, NULL));
        break;
    }
    return s;
}

/* One thread's tensors for one spec and what it expects of them. */
typedef struct stress_state {
    wb_tensor *x, *y;
    float x0;           /* x[0] now */
    uint64_t version;   /* x's version now */
} stress_state;

static void stress_state_init(stress_state *st, float first)
{
    st->x = wbt_f32(first, 2, 2, 4);
    st->y = wbt_f32(first + 100, 2, 2, 4);
    st->x0 = first;
    st->version = 0;
}

/* Calls w (of spec k) once and checks everything; returns the number of
   wrong facts. */
static int stress_call(wb_wrapper *w, int k, stress_state *st)
{
    wb_value outs[2] = {{NULL}, {NULL}};
    wb_arg a[2] = {{.t = st->x}, {.t = st->y}};
    int bad = 0;
    if (k == 2)
        a[1].i = 3;
    if (wb_call(w, a, 2 - (k == 1), outs, 2) != WB_OK)
        return 1;
    const float *x = wb_tensor_data(st->x);
    switch (k) {
    case 0:
        st->x0 += 1;
        st->version++;
        bad += wb_tensor_storage(outs[0].t) != wb_tensor_storage(st->y);
        bad += ((const float *)wb_tensor_data(outs[0].t))[0] !=
               ((const float *)wb_tensor_data(st->y))[4];
        bad += !wb_tensor_requires_grad(outs[0].t);
        break;
    case 1:
        bad += outs[1].t != st->x;
        bad += ((const float *)wb_tensor_data(outs[0].t))[7] != 2 * x[7];
        break;
    default:
        st->x0 += 3;
        st->version++;
        break;
    }
    bad += x[0] != st->x0 || x[7] != st->x0 + 7;
    bad += wb_tensor_version(st->x) != st->version;
    wb_tensor_release(outs[0].t);
    wb_tensor_release(outs[1].t);
    return bad;
}

static int stress_state_free(stress_state *st)
{
    int bad = wb_tensor_refcount(st->x) != 1 || wb_tensor_refcount(st->y) != 1 ||
              wb_storage_refcount(wb_tensor_storage(st->x)) != 1;
    wb_tensor_release(st->x);
    wb_tensor_release(st->y);
    return bad;
}

typedef struct stress_job {
    int id;
    long calls;
    long done;
    int bad;
} stress_job;

static void *stress_caller(void *p)
{
    stress_job *j = p;
    stress_state st[STRESS_SPECS][WBT_NTIERS];
    for (int k = 0; k < STRESS_SPECS; k++)
        for (int t = 0; t < WBT_NTIERS; t++)
            stress_state_init(&st[k][t], (float)(j->id * 1000 + k * 10 + t));
    for (long c = 0; c < j->calls; c++) {
        int k = (int)(c % STRESS_SPECS), t = (int)((c / STRESS_SPECS + j->id) %
                                                    WBT_NTIERS);
        j->bad += stress_call(stress_shared[k][t], k, &st[k][t]);
        j->done++;
    }
    for (int k = 0; k < STRESS_SPECS; k++)
        for (int t = 0; t < WBT_NTIERS; t++)
            j->bad += stress_state_free(&st[k][t]);
    wb_thread_cache_flush();
    return NULL;
}

/* Parses the spec text, checks it names what the builder spec does, then
   builds a wrapper of the shared spec, calls it and frees it. */
static void *stress_builder(void *p)
{
    stress_job *j = p;
    for (int i = 0; i < STRESS_BUILDS; i++) {
        int k = (i + j->id) % STRESS_SPECS;
        wb_tier tier = (i % 4) ? WB_TIER_TCC : WB_TIER_INTERP;
        wb_spec *parsed = NULL;
        char *src = NULL;
        if (wb_spec_parse(stress_texts[k], &parsed) != WB_OK ||
            wb_spec_validate(parsed) != WB_OK ||
            wb_spec_num_inputs(parsed) != wb_spec_num_inputs(stress_specs[k]) ||
            wb_spec_num_outputs(parsed) != wb_spec_num_outputs(stress_specs[k]) ||
            wb_emit_c(parsed, &src) != WB_OK) {
            j->bad++;
        }
        free(src);
        wb_spec_free(parsed);
        wb_options o = {.tier = tier};
        wb_wrapper *w = NULL;
        if (wb_wrapper_new(stress_specs[k], stress_graphs[k], NULL, &o, &w) !=
            WB_OK) {
            j->bad++;
            continue;
        }
        stress_state st;
        stress_state_init(&st, (float)(j->id * 7 + i));
        for (int c = 0; c < 5; c++) {
            j->bad += stress_call(w, k, &st);
            j->done++;
        }
        j->bad += stress_state_free(&st);
        wb_wrapper_free(w);
    }
    wb_thread_cache_flush();
    return NULL;
}

Test(stress, shared_wrappers_and_builders, .timeout = 600)
{
    const char *env = getenv("WB_STRESS_CALLS");
    long calls = env ? strtol(env, NULL, 10) : 50000;
    for (int k = 0; k < STRESS_SPECS; k++) {
        stress_specs[k] = stress_build_spec(k);
        WBT_OK(wb_spec_validate(stress_specs[k]));
        for (int t = 0; t < WBT_NTIERS; t++)
            stress_shared[k][t] = wbt_wrap(stress_specs[k], stress_graphs[k],
                                           NULL, WBT_TIERS[t]);
    }
    enum { N = STRESS_CALLERS + STRESS_BUILDERS };
    pthread_t th[N];
    stress_job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (stress_job){.id = i, .calls = calls};
        cr_assert_eq(pthread_create(&th[i], NULL, i < STRESS_CALLERS
                                    ? stress_caller : stress_builder,
                                    &jobs[i]), 0);
    }
    long total = 0, wrappers = (long)STRESS_BUILDERS * STRESS_BUILDS;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(jobs[i].bad, 0, "thread %d (%s) saw %d wrong results", i,
                     i < STRESS_CALLERS ? "caller" : "builder", jobs[i].bad);
        total += jobs[i].done;
    }
    cr_assert_eq(total, STRESS_CALLERS * calls + wrappers * 5);
    cr_log_info("stress: %d threads, %ld checked calls, %ld wrappers built "
                "and freed beside them", N, total, wrappers);
    for (int k = 0; k < STRESS_SPECS; k++) {
        for (int t = 0; t < WBT_NTIERS; t++)
            wb_wrapper_free(stress_shared[k][t]);
        wb_spec_free(stress_specs[k]);
    }
}
