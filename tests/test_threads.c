/*
 * One wrapper called from many threads at once on different arguments,
 * while other threads build and free wrappers (and so take the JIT lock);
 * every result is checked.
 */
#include <pthread.h>

#include "helpers.h"

#define THREADS 8
#define CALLS 2000

/* x (data mutation) gets x + 1; output 0 is a view of y's second row. */
static int threads_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)ctx; (void)na; (void)nv;
    const float *x = wb_tensor_data(a[0].t);
    int64_t sizes[1] = {4}, strides[1] = {1};
    if (wb_tensor_new(WBT_F32, WBT_CPU, 2, wb_tensor_sizes(a[0].t), &v[0].t))
        return -1;
    float *nx = wb_tensor_data(v[0].t);
    for (int i = 0; i < 8; i++)
        nx[i] = x[i] + 1;
    if (wb_tensor_as_strided(a[1].t, 1, sizes, strides, 4, &v[1].t))
        return -2;
    return 2;
}

static wb_spec *threads_spec(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("threads", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "row", WB_OUT_ALIAS_OF_INPUT, 1, true, 1, NULL));
    return s;
}

typedef struct threads_job {
    wb_wrapper *w;
    int id;
    int bad;      /* results that were wrong */
} threads_job;

static void *threads_caller(void *p)
{
    threads_job *j = p;
    wb_tensor *x = wbt_f32((float)(j->id * 1000), 2, 2, 4);
    wb_tensor *y = wbt_f32((float)j->id, 2, 2, 4);
    wb_arg a[2] = {{.t = x}, {.t = y}};
    for (int c = 1; c <= CALLS; c++) {
        wb_value row;
        if (wb_call(j->w, a, 2, &row, 1) != WB_OK) {
            j->bad++;
            continue;
        }
        if (wbt_at(x, 1, 3) != (float)(j->id * 1000 + 7 + c) ||
            wb_tensor_version(x) != (uint64_t)c ||
            wb_tensor_storage(row.t) != wb_tensor_storage(y) ||
            wbt_at(row.t, 0) != (float)(j->id + 4))
            j->bad++;
        wb_tensor_release(row.t);
    }
    j->bad += wb_tensor_refcount(x) != 1 || wb_tensor_refcount(y) != 1;
    wb_tensor_release(x);
    wb_tensor_release(y);
    wb_thread_cache_flush();
    return NULL;
}

/* Builds and frees tcc wrappers, so compiles run beside the calls. */
static void *threads_builder(void *p)
{
    threads_job *j = p;
    wb_spec *s = threads_spec();
    wb_options o = {.tier = WB_TIER_TCC};
    for (int i = 0; i < 50; i++) {
        wb_wrapper *w;
        if (wb_wrapper_new(s, threads_graph, NULL, &o, &w) != WB_OK)
            j->bad++;
        else
            wb_wrapper_free(w);
    }
    wb_spec_free(s);
    return NULL;
}

Test(threads, one_wrapper_many_callers, .timeout = 120)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = threads_spec();
        wb_wrapper *w = wbt_wrap(s, threads_graph, NULL, tier);
        pthread_t th[THREADS + 2];
        threads_job jobs[THREADS + 2];
        for (int i = 0; i < THREADS + 2; i++) {
            jobs[i] = (threads_job){.w = w, .id = i};
            cr_assert_eq(pthread_create(&th[i], NULL, i < THREADS
                                        ? threads_caller : threads_builder,
                                        &jobs[i]), 0);
        }
        for (int i = 0; i < THREADS + 2; i++) {
            pthread_join(th[i], NULL);
            cr_assert_eq(jobs[i].bad, 0, "%s: thread %d saw %d wrong results",
                         wb_tier_name(tier), i, jobs[i].bad);
        }
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* ---- a fixed value shared by every caller ---- */

/* The graph keeps one fixed view of y, the input every caller shares, and
   hands out a reference to it on each call (with x's updated value, a
   copy): each output keeps it.  The
   callers trade outputs through one slot, so that a view is often
   released by another thread than the one whose call made it. */
typedef struct threads_fixed {
    wb_tensor *g;
    pthread_mutex_t lock;
    wb_tensor *slot;
} threads_fixed;

static int threads_fixed_graph(void *ctx, const wb_arg *a, int na,
                               wb_value *v, int nv)
{
    threads_fixed *f = ctx;
    (void)na; (void)nv;
    if (wb_tensor_new(WBT_F32, WBT_CPU, 2, wb_tensor_sizes(a[0].t), &v[0].t))
        return -1;
    wb_tensor_copy_(v[0].t, a[0].t);
    v[1].t = wb_tensor_retain(f->g);
    return 2;
}

typedef struct threads_fixed_job {
    wb_wrapper *w;
    threads_fixed *f;
    wb_tensor *y;
    int id;
    int bad;
} threads_fixed_job;

static void *threads_fixed_caller(void *p)
{
    threads_fixed_job *j = p;
    wb_tensor *x = wbt_f32((float)j->id, 2, 2, 4);
    wb_arg a[2] = {{.t = x}, {.t = j->y}};
    for (int c = 0; c < CALLS; c++) {
        wb_value row;
        if (wb_call(j->w, a, 2, &row, 1) != WB_OK) {
            j->bad++;
            continue;
        }
        if (wb_tensor_version(x) != (uint64_t)c + 1 ||
            wb_tensor_storage(row.t) != wb_tensor_storage(j->y) ||
            wbt_at(row.t, 0) != 4.0f || wb_tensor_offset(row.t) != 4)
            j->bad++;
        pthread_mutex_lock(&j->f->lock);
        wb_tensor *other = j->f->slot;
        j->f->slot = row.t;
        pthread_mutex_unlock(&j->f->lock);
        wb_tensor_release(other);
    }
    j->bad += wb_tensor_refcount(x) != 1;
    wb_tensor_release(x);
    wb_thread_cache_flush();
    return NULL;
}

Test(threads, fixed_value_shared_by_many_callers, .timeout = 120)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("threads_fixed", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "row", WB_OUT_ALIAS_OF_INPUT, 1, false,
                                  0, NULL));
        wb_tensor *y = wbt_f32(0, 2, 2, 4);
        threads_fixed f = {.slot = NULL};
        pthread_mutex_init(&f.lock, NULL);
        WBT_OK(wb_tensor_as_strided(y, 1, (int64_t[]){4}, NULL, 4, &f.g));
        wb_tensor_fix_storage(f.g);
        wb_wrapper *w = wbt_wrap(s, threads_fixed_graph, &f, tier);
        pthread_t th[THREADS];
        threads_fixed_job jobs[THREADS];
        for (int i = 0; i < THREADS; i++) {
            jobs[i] = (threads_fixed_job){.w = w, .f = &f, .y = y, .id = i};
            cr_assert_eq(pthread_create(&th[i], NULL, threads_fixed_caller,
                                        &jobs[i]), 0);
        }
        for (int i = 0; i < THREADS; i++) {
            pthread_join(th[i], NULL);
            cr_assert_eq(jobs[i].bad, 0, "%s: thread %d saw %d wrong results",
                         wb_tier_name(tier), i, jobs[i].bad);
        }
        cr_assert_eq(wb_tensor_refcount(f.g), 2, "the graph and the slot");
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(y)), 2,
                     "y and the graph's value: no view took a reference");
        wb_tensor_release(f.slot);
        wbt_release_last(f.g);
        wbt_release_last(y);
        pthread_mutex_destroy(&f.lock);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* ---- outputs that other calls hand out at the same time ---- */

/* y itself with dynamic dims, and k, a value the graph keeps and hands
   to every call, as a plain output: the caller's input and the graph's
   value each go out of every call at once. */
static int threads_shared_graph(void *ctx, const wb_arg *a, int na,
                                wb_value *v, int nv)
{
    (void)na; (void)nv;
    v[0].t = wb_tensor_retain(a[0].t);
    v[1].t = wb_tensor_retain(ctx);
    return 2;
}

typedef struct threads_shared_job {
    wb_wrapper *w;
    wb_tensor *y, *k;
    int bad;
} threads_shared_job;

static void *threads_shared_caller(void *p)
{
    threads_shared_job *j = p;
    wb_arg a[1] = {{.t = j->y}};
    for (int c = 0; c < CALLS; c++) {
        wb_value o[2];
        if (wb_call(j->w, a, 1, o, 2) != WB_OK) {
            j->bad++;
            continue;
        }
        j->bad += o[0].t != j->y || o[1].t != j->k ||
                  wb_tensor_dynamic_dims(j->y) != 0x3 ||
                  wb_tensor_requires_grad(j->k);
        wb_tensor_release(o[0].t);
        wb_tensor_release(o[1].t);
    }
    return NULL;
}

Test(threads, outputs_other_calls_hand_out_at_once, .timeout = 120)
{
    /* The first calls, all at once, give the tensors they share their
       flags and dynamic dims, and later calls write nothing to them
       (ThreadSanitizer checks both under make test-tsan). */
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("threads_shared", &s));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "y_out", WB_OUT_IS_INPUT, 0, false,
                                  0x3, NULL));
        WBT_OK(wb_spec_add_output(s, "k", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        wb_tensor *y = wbt_f32(0, 2, 2, 4), *k = wbt_f32(1, 1, 4);
        wb_wrapper *w = wbt_wrap(s, threads_shared_graph, k, tier);
        threads_shared_job first = {.w = w, .y = y, .k = k};
        wb_tensor_set_requires_grad(k, true);
        pthread_t th[THREADS];
        threads_shared_job jobs[THREADS];
        for (int i = 0; i < THREADS; i++) {
            jobs[i] = first;
            cr_assert_eq(pthread_create(&th[i], NULL, threads_shared_caller,
                                        &jobs[i]), 0);
        }
        for (int i = 0; i < THREADS; i++) {
            pthread_join(th[i], NULL);
            cr_assert_eq(jobs[i].bad, 0, "%s: thread %d saw %d wrong results",
                         wb_tier_name(tier), i, jobs[i].bad);
        }
        wb_wrapper_free(w);
        wbt_release_last(k);
        wbt_release_last(y);
        wb_spec_free(s);
    }
}
