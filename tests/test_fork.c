/*
 * A child of fork goes on using the library: made while another thread
 * compiled, it compiles; made while the promoter compiled, it frees the
 * auto wrappers it inherited, and its auto wrappers, old and new, reach
 * cc.  Each child runs under an alarm, so that one that hangs is killed
 * and reported.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "../src/tiers/tiers.h"

/* x (data mutation) gets x + 1. */
static int fork_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                      int nv)
{
    (void)ctx; (void)na; (void)nv;
    if (wb_tensor_new(WBT_F32, WBT_CPU, 1, wb_tensor_sizes(a[0].t), &v[0].t))
        return -1;
    const float *x = wb_tensor_data(a[0].t);
    float *nx = wb_tensor_data(v[0].t);
    for (int i = 0; i < 4; i++)
        nx[i] = x[i] + 1;
    return 1;
}

static wb_spec *fork_spec(const char *name)
{
    wb_spec *s;
    WBT_OK(wb_spec_new(name, &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    return s;
}

/* Whether a call of w adds 1 to x, as fork_graph has it. */
static bool fork_call_ok(wb_wrapper *w)
{
    int64_t n = 4;
    wb_tensor *x = NULL;
    if (wb_tensor_new(WBT_F32, WBT_CPU, 1, &n, &x) != WB_OK)
        return false;
    float *p = wb_tensor_data(x);
    for (int i = 0; i < 4; i++)
        p[i] = (float)i;
    wb_arg a[1] = {{.t = x}};
    bool ok = wb_call(w, a, 1, NULL, 0) == WB_OK && p[3] == 4.0f;
    wb_tensor_release(x);
    return ok;
}

/* Waits up to 30 s for w to serve on tier. */
static bool fork_wait_tier(wb_wrapper *w, wb_tier tier)
{
    for (int i = 0; i < 3000 && wb_wrapper_tier(w) != tier; i++) {
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    return wb_wrapper_tier(w) == tier;
}

/* Starts child(arg) in a child of fork, killed after secs. */
static pid_t fork_start(int (*child)(void *), void *arg, unsigned secs)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL);
        alarm(secs);
        _exit(child(arg));
    }
    return pid;
}

/* The child's exit code, or 128 and the signal that ended it. */
static int fork_wait(pid_t pid)
{
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int fork_run(int (*child)(void *), void *arg, unsigned secs)
{
    return fork_wait(fork_start(child, arg, secs));
}

/* ---- fork while another thread compiles ---- */

/* AddressSanitizer's allocator holds locks of its own, which it does not
   take around fork: a child forked while another thread allocates may
   hang in it, whatever the library does. */
#if defined(__SANITIZE_ADDRESS__)
#define FORK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORK_ASAN 1
#endif
#endif

typedef struct fork_builder {
    wb_spec *spec;
    atomic_bool stop;
    int built;
} fork_builder;

/* Builds, calls and frees tcc wrappers of their own code until stopped:
   the JIT's locks and the code cache's are taken all the time. */
static void *fork_build_loop(void *p)
{
    fork_builder *b = p;
    wb_options o = {.tier = WB_TIER_TCC, .flags = WB_OPT_NO_SHARE};
    while (!atomic_load(&b->stop)) {
        wb_wrapper *w = NULL;
        wb_cache_stats st;
        if (wb_wrapper_new(b->spec, fork_graph, NULL, &o, &w) == WB_OK &&
            fork_call_ok(w))
            b->built++;
        wb_wrapper_free(w);
        wb_cache_stats_get(&st);
    }
    return NULL;
}

/* A child: a tcc wrapper of its own code, called, and the statistics. */
static int fork_child_compiles(void *spec)
{
    wb_options o = {.tier = WB_TIER_TCC, .flags = WB_OPT_NO_SHARE};
    wb_wrapper *w = NULL;
    wb_cache_stats st;
    if (wb_wrapper_new(spec, fork_graph, NULL, &o, &w) != WB_OK)
        return 1;
    if (!fork_call_ok(w))
        return 2;
    wb_wrapper_free(w);
    wb_cache_stats_get(&st);
    return 0;
}

Test(fork, a_child_compiles_while_the_parent_compiled, .timeout = 240)
{
    enum { FORKS = 60 };
#ifdef FORK_ASAN
    cr_skip_test("AddressSanitizer's allocator is not safe across fork");
#endif
    fork_builder b = {fork_spec("fork_jit"), false, 0};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fork_build_loop, &b), 0);
    int hung = 0, failed = 0, last = 0;
    for (int i = 0; i < FORKS; i++) {
        int rc = fork_run(fork_child_compiles, b.spec, 5);
        hung += rc == 128 + SIGALRM;
        failed += rc != 0 && rc != 128 + SIGALRM;
        if (rc)
            last = rc;
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    atomic_store(&b.stop, true);
    pthread_join(t, NULL);
    cr_assert_gt(b.built, FORKS / 4, "the parent's thread built %d wrappers "
                 "in all: the forks did not meet its compiles", b.built);
    cr_assert_eq(hung, 0, "%d of %d children hung", hung, FORKS);
    cr_assert_eq(failed, 0, "%d of %d children failed (last: %d)", failed,
                 FORKS, last);
    wb_spec_free(b.spec);
}

/* ---- fork while the promoter compiles ---- */

typedef struct fork_promoting {
    wb_spec *spec;
    wb_wrapper *compiling;  /* its promotion runs at the fork */
    wb_wrapper *waiting;    /* its promotion waits for calls */
} fork_promoting;

/* A child: the wrapper whose promotion was running frees at once; the one
   that waited for calls promotes once called enough, and so does a new
   one. */
static int fork_child_promotes(void *arg)
{
    fork_promoting *f = arg;
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 1,
                    .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    wb_wrapper_free(f->compiling);
    for (int i = 0; i < 3; i++)
        if (!fork_call_ok(f->waiting))
            return 1;
    if (!fork_wait_tier(f->waiting, WB_TIER_CC))
        return 2;
    if (wb_wrapper_new(f->spec, fork_graph, NULL, &o, &w) != WB_OK ||
        !fork_call_ok(w))
        return 3;
    if (!fork_wait_tier(w, WB_TIER_CC))
        return 4;
    if (!fork_call_ok(w) || !fork_call_ok(f->waiting))
        return 5;
    wb_wrapper_free(w);
    wb_wrapper_free(f->waiting);
    return 0;
}

/* A child that calls the wrapper whose promotion was running: the
   promotion, back in the child's queue, runs again on its promoter. */
static int fork_child_resumes(void *arg)
{
    fork_promoting *f = arg;
    if (!fork_call_ok(f->compiling))
        return 1;
    if (!fork_wait_tier(f->compiling, WB_TIER_CC))
        return 2;
    if (!fork_call_ok(f->compiling))
        return 3;
    wb_wrapper_free(f->compiling);
    wb_wrapper_free(f->waiting);
    return 0;
}

Test(fork, a_child_frees_and_promotes_auto_wrappers, .timeout = 120)
{
    /* A compiler that says when it starts and then takes its time. */
    char dir[] = "/tmp/wbt-fork-XXXXXX", cc[64], started[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cc, sizeof cc, "%s/cc", dir);
    snprintf(started, sizeof started, "%s/started", dir);
    FILE *f = fopen(cc, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\n: > %s\nsleep 3\nexec cc \"$@\"\n", started);
    fclose(f);
    chmod(cc, 0700);

    fork_promoting p = {fork_spec("fork_auto"), NULL, NULL};
    wb_options slow = {.tier = WB_TIER_AUTO, .promote_calls = 1,
                       .flags = WB_OPT_NO_DISK_CACHE, .cc = cc};
    wb_options later = {.tier = WB_TIER_AUTO, .promote_calls = 3,
                        .flags = WB_OPT_NO_DISK_CACHE};
    WBT_OK(wb_wrapper_new(p.spec, fork_graph, NULL, &slow, &p.compiling));
    WBT_OK(wb_wrapper_new(p.spec, fork_graph, NULL, &later, &p.waiting));
    cr_assert(fork_call_ok(p.compiling));
    for (int i = 0; i < 3000 && access(started, F_OK) != 0; i++) {
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    cr_assert_eq(access(started, F_OK), 0, "the promotion did not start");

    /* Both children start while the parent's promotion runs. */
    pid_t frees = fork_start(fork_child_promotes, &p, 60);
    pid_t resumes = fork_start(fork_child_resumes, &p, 60);
    int rc = fork_wait(frees);
    cr_assert_neq(rc, 128 + SIGALRM, "the child hung");
    cr_assert_eq(rc, 0, "the child failed at step %d", rc);
    rc = fork_wait(resumes);
    cr_assert_neq(rc, 128 + SIGALRM, "the resuming child hung");
    cr_assert_eq(rc, 0, "the resuming child failed at step %d", rc);
    /* The parent's promotion went on. */
    cr_assert(fork_wait_tier(p.compiling, WB_TIER_CC), "note: %s",
              wb_wrapper_note(p.compiling) ? wb_wrapper_note(p.compiling)
                                           : "(none)");
    cr_assert(fork_call_ok(p.compiling));
    wb_wrapper_free(p.compiling);
    wb_wrapper_free(p.waiting);
    wb_spec_free(p.spec);
    unlink(started);
    unlink(cc);
    rmdir(dir);
}

/* ---- fork while another thread runs a first-call hook ---- */

/* The hook counts its runs in this process and, run by the parent's
   thread, holds until the test lets it go. */
typedef struct fork_hook {
    atomic_int runs;
    atomic_bool entered, hold;
    wb_wrapper *w;
} fork_hook;

static int fork_hook_run(void *ud)
{
    fork_hook *h = ud;
    atomic_fetch_add(&h->runs, 1);
    atomic_store(&h->entered, true);
    while (atomic_load(&h->hold)) {
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    return 0;
}

static void *fork_hook_caller(void *arg)
{
    fork_hook *h = arg;
    return fork_call_ok(h->w) ? arg : NULL;
}

/* A child: the hook the parent's other thread was inside did not finish
   here, so the child's first call runs it again, and its later calls go
   straight through. */
static int fork_child_runs_the_hook(void *arg)
{
    fork_hook *h = arg;
    atomic_store(&h->hold, false);
    int before = atomic_load(&h->runs);
    if (!fork_call_ok(h->w) || !fork_call_ok(h->w))
        return 1;
    return atomic_load(&h->runs) == before + 1 ? 0 : 2;
}

Test(fork, a_child_runs_a_first_call_hook_another_thread_was_running,
     .timeout = 60)
{
    fork_hook h = {0};
    atomic_store(&h.hold, true);
    wb_spec *s = fork_spec("fork_first");
    WBT_OK(wb_spec_set_first_call(s, fork_hook_run, &h));
    wb_options o = {.tier = WB_TIER_TCC};
    WBT_OK(wb_wrapper_new(s, fork_graph, NULL, &o, &h.w));
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fork_hook_caller, &h), 0);
    while (!atomic_load(&h.entered)) {
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    int rc = fork_run(fork_child_runs_the_hook, &h, 10);
    cr_assert_neq(rc, 128 + SIGALRM, "the child's call waited for a hook "
                  "no thread of it runs");
    cr_assert_eq(rc, 0, "the child failed at step %d", rc);
    /* The parent's hook, let go, finishes its call; it ran once here. */
    atomic_store(&h.hold, false);
    void *ok;
    cr_assert_eq(pthread_join(t, &ok), 0);
    cr_assert_not_null(ok, "the call that ran the hook failed");
    cr_assert(fork_call_ok(h.w));
    cr_assert_eq(atomic_load(&h.runs), 1);
    wb_wrapper_free(h.w);
    wb_spec_free(s);
}

/* ---- fork while another thread triggers a promotion ---- */

/* The call that triggers the promotion stops between switching its
   wrapper's entry and marking the promotion triggered, and the forking
   thread forks meanwhile: the fork waits for the trigger to finish, so
   the child sees it whole and promotes the wrapper once called. */
static atomic_bool fork_trigger_paused;

static void fork_trigger_pause(void)
{
    atomic_store(&fork_trigger_paused, true);
    struct timespec nap = {0, 300000000};
    nanosleep(&nap, NULL);
}

static int fork_child_promotes_triggered(void *arg)
{
    wb_wrapper *w = arg;
    wb_test_trigger_pause = NULL;
    for (int i = 0; i < 3; i++)
        if (!fork_call_ok(w))
            return 1;
    if (!fork_wait_tier(w, WB_TIER_CC))
        return 2;
    return fork_call_ok(w) ? 0 : 3;
}

static void *fork_during_trigger(void *arg)
{
    while (!atomic_load(&fork_trigger_paused)) {
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    /* fork_run's checks are the test thread's to make. */
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGALRM, SIG_DFL);
        alarm(60);
        _exit(fork_child_promotes_triggered(arg));
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return (void *)(intptr_t)-1;
    return (void *)(intptr_t)(WIFEXITED(status) ? WEXITSTATUS(status)
                                                : 128 + WTERMSIG(status));
}

Test(fork, a_child_sees_a_trigger_whole, .timeout = 120)
{
    wb_spec *s = fork_spec("fork_trigger");
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 1,
                    .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w;
    WBT_OK(wb_wrapper_new(s, fork_graph, NULL, &o, &w));
    wb_test_trigger_pause = fork_trigger_pause;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fork_during_trigger, w), 0);
    cr_assert(fork_call_ok(w));
    wb_test_trigger_pause = NULL;
    void *rc;
    cr_assert_eq(pthread_join(t, &rc), 0);
    cr_assert_neq((intptr_t)rc, 128 + SIGALRM, "the child hung");
    cr_assert_eq((intptr_t)rc, 0, "the child failed at step %d",
                 (int)(intptr_t)rc);
    cr_assert(fork_wait_tier(w, WB_TIER_CC));
    wb_wrapper_free(w);
    wb_spec_free(s);
}
