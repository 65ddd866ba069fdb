/*
 * tiers.c -- wrappers on the interpreter, tcc, cc and auto tiers, one at a
 * time or in a batch, and the background promotion of auto wrappers.
 *
 * An auto wrapper serves from tcc at once.  Its entry starts as a counting
 * trampoline; when the count runs out, or its time comes, the promoter (one
 * thread for the process, started when there is work and gone when there
 * is none) builds the cc code and publishes it with one atomic store of the
 * entry.  Callers never wait: they run the old entry or the new one, and
 * the tcc code stays until the wrapper goes.  If the system compiler is
 * missing or fails, the wrapper stays on tcc and its note says why.
 *
 * Around fork, handlers hold the library's locks, so that a child finds
 * none held by a thread it does not have; the child starts with no
 * promoter, and starts one when a promotion is next queued or triggered.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tiers.h"
#include "../spec/spec.h"
#include "../gen/gen.h"

/* A pending promotion. */
struct wb_promotion {
    wb_wrapper *w;
    wb_cc_opts cc;
    bool share;
    wb_entry_fn tcc_entry;
    atomic_uint_fast64_t calls_left;
    double due_ms;            /* when to start by time (0: only by calls) */
    bool triggered;
    atomic_bool cancel;
    struct wb_promotion *next;
};

static pthread_mutex_t wb_promo_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wb_promo_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t wb_promo_finished = PTHREAD_COND_INITIALIZER;
static struct wb_promotion *wb_promo_queue;
static struct wb_promotion *wb_promo_running;  /* off the queue, running */
static bool wb_promo_worker;

static int wb_auto_entry(const wb_env *e, const wb_arg *args, int nargs,
                         wb_value *outs, int nouts);

#ifdef WB_TEST_HOOKS
void (*wb_test_trigger_pause)(void);
#endif

/* Sends w's calls straight to its tcc code, unless they already left the
   counting entry (for cc). */
static void wb_auto_to_tcc(wb_wrapper *w, const struct wb_promotion *p)
{
    wb_entry_fn self = wb_auto_entry;
    atomic_compare_exchange_strong(&w->entry, &self, p->tcc_entry);
}

/* An auto wrapper's note that it serves from tcc for good, and why. */
static void wb_auto_stay(wb_wrapper *w, const char *why)
{
    size_t n = strlen(why) + sizeof "stays on tcc: ";
    char *note = malloc(n);
    if (note)
        snprintf(note, n, "stays on tcc: %s", why);
    wb_wrapper_set_note(w, note);
}

/* Builds the cc code of one promotion (entered without the lock) and
   publishes it (under the lock, which a fork holds, so that a child sees
   all of the publication or none of it).  On failure the calls go
   straight to tcc, as they would have once their count ran out.  Returns
   with the lock held. */
static void wb_promote(struct wb_promotion *p)
{
    wb_wrapper *w = p->w;
    wb_code *code;
    char spec[300];
    wb_spec_print_name(w->spec->name, spec, sizeof spec);
    const char *source = wb_wrapper_source(w);
    wb_status st = source ? wb_cc_code_get(source, p->share, &p->cc, spec,
                                           &p->cancel, &code)
                          : WB_ERR_NOMEM;
    pthread_mutex_lock(&wb_promo_lock);
    if (st == WB_OK) {
        atomic_store(&w->promoted, code);
        atomic_store_explicit(&w->entry, code->entry, memory_order_release);
        atomic_store_explicit(&w->tier, WB_TIER_CC, memory_order_release);
        wb_wrapper_set_note(w, code->note ? strdup(code->note) : NULL);
    } else if (!atomic_load(&p->cancel)) {
        wb_auto_to_tcc(w, p);
        wb_auto_stay(w, wb_last_error());
    }
}

static double wb_promo_earliest(void)
{
    double due = 0;
    for (struct wb_promotion *p = wb_promo_queue; p; p = p->next)
        if (p->due_ms > 0 && (due == 0 || p->due_ms < due))
            due = p->due_ms;
    return due;
}

static void *wb_promoter(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&wb_promo_lock);
    while (wb_promo_queue) {
        double now = wb_now_ms();
        struct wb_promotion **pp = &wb_promo_queue, *p;
        while ((p = *pp) && !(p->triggered || (p->due_ms > 0 &&
                                               p->due_ms <= now)))
            pp = &p->next;
        if (p) {
            *pp = p->next;
            wb_promo_running = p;
            pthread_mutex_unlock(&wb_promo_lock);
            wb_promote(p);
            wb_promo_running = NULL;
            pthread_cond_broadcast(&wb_promo_finished);
            continue;
        }
        double due = wb_promo_earliest();
        if (due == 0) {
            pthread_cond_wait(&wb_promo_work, &wb_promo_lock);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            double wait = due - now;
            ts.tv_sec += (time_t)(wait / 1e3);
            ts.tv_nsec += (long)((wait - (double)(long)(wait / 1e3) * 1e3) *
                                 1e6);
            if (ts.tv_nsec >= 1000000000L)
                ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&wb_promo_work, &wb_promo_lock, &ts);
        }
    }
    wb_promo_worker = false;
    pthread_mutex_unlock(&wb_promo_lock);
    return NULL;
}

/* Wakes the promoter, starting one where none runs; false when none
   could start.  Called with the lock held. */
static bool wb_promo_wake(void)
{
    if (wb_promo_worker) {
        pthread_cond_signal(&wb_promo_work);
        return true;
    }
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    wb_promo_worker = pthread_create(&t, &a, wb_promoter, NULL) == 0;
    pthread_attr_destroy(&a);
    return wb_promo_worker;
}

/* Queues p and makes sure a promoter runs; called with the lock held. */
static wb_status wb_promo_enqueue(struct wb_promotion *p)
{
    p->next = wb_promo_queue;
    wb_promo_queue = p;
    if (wb_promo_wake())
        return WB_OK;
    wb_promo_queue = p->next;
    return wb_rt_fail(WB_ERR_NOMEM, "cannot start the promotion thread");
}

/* The entry of an auto wrapper until its promotion is triggered. */
static int wb_auto_entry(const wb_env *e, const wb_arg *args, int nargs,
                         wb_value *outs, int nouts)
{
    /* The env is the wrapper's first member. */
    wb_wrapper *w = (wb_wrapper *)(void *)e;
    struct wb_promotion *p = w->promotion;
    if (atomic_fetch_sub_explicit(&p->calls_left, 1,
                                  memory_order_relaxed) == 1) {
        /* Under the lock, as a fork holds it: a child sees the entry
           switched only with the promotion triggered, which it re-arms. */
        pthread_mutex_lock(&wb_promo_lock);
        wb_auto_to_tcc(w, p);
#ifdef WB_TEST_HOOKS
        if (wb_test_trigger_pause)
            wb_test_trigger_pause();
#endif
        p->triggered = true;
        wb_promo_wake();  /* a child of fork has no promoter yet */
        pthread_mutex_unlock(&wb_promo_lock);
    }
    return p->tcc_entry(e, args, nargs, outs, nouts);
}

/* Stops w's promotion: dequeued if pending, stopped and waited for if
   running.  The promoter is woken to see the queue without it, and ends
   when nothing is left. */
static void wb_auto_retire(wb_wrapper *w)
{
    struct wb_promotion *p = w->promotion;
    pthread_mutex_lock(&wb_promo_lock);
    for (struct wb_promotion **pp = &wb_promo_queue; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            pthread_cond_signal(&wb_promo_work);
            break;
        }
    atomic_store(&p->cancel, true);
    while (wb_promo_running == p)
        pthread_cond_wait(&wb_promo_finished, &wb_promo_lock);
    pthread_mutex_unlock(&wb_promo_lock);
    wb_cc_opts_free(&p->cc);
    free(p);
    w->promotion = NULL;
}

/* Turns a wrapper with tcc code into an auto one. */
static wb_status wb_auto_start(wb_wrapper *w, const wb_options *o)
{
    struct wb_promotion *p;
    wb_status st;
    if (wb_cc_allowed() != WB_OK) {
        wb_auto_stay(w, wb_last_error());
        return WB_OK;
    }
    if (!(p = calloc(1, sizeof *p)))
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a promotion");
    if ((st = wb_cc_opts_init(o, &p->cc)) != WB_OK) {
        free(p);
        return st;
    }
    p->w = w;
    p->share = !(o->flags & WB_OPT_NO_SHARE);
    p->tcc_entry = w->code->entry;
    atomic_init(&p->calls_left, o->promote_calls ? o->promote_calls : 1000);
    atomic_init(&p->cancel, false);
    if (o->promote_ms)
        p->due_ms = wb_now_ms() + o->promote_ms;
    w->promotion = p;
    w->retire = wb_auto_retire;
    atomic_store(&w->entry, wb_auto_entry);
    pthread_mutex_lock(&wb_promo_lock);
    st = wb_promo_enqueue(p);
    pthread_mutex_unlock(&wb_promo_lock);
    if (st != WB_OK) {
        /* No promoter: the wrapper serves from tcc and says why. */
        atomic_store(&w->entry, p->tcc_entry);
        w->retire = NULL;
        w->promotion = NULL;
        wb_cc_opts_free(&p->cc);
        free(p);
        wb_auto_stay(w, "cannot start the promotion thread");
    }
    return WB_OK;
}

/* ---- fork ---- */

/* The library's locks, in the order the fork handlers take them: the one
   lock ever taken while another is held (the spare pages', under the
   JIT's) comes after it.  The CUDA copy kernel's is not among them: a
   child of fork must not use CUDA (docs/api.md). */
static pthread_mutex_t *const wb_fork_locks[] = {
    &wb_jit_lock, &wb_jit_spare_lock, &wb_cache_lock, &wb_cc_bind_lock,
    &wb_promo_lock};
#define WB_FORK_LOCKS (sizeof wb_fork_locks / sizeof *wb_fork_locks)

static void wb_fork_prepare(void)
{
    for (size_t i = 0; i < WB_FORK_LOCKS; i++)
        pthread_mutex_lock(wb_fork_locks[i]);
}

static void wb_fork_parent(void)
{
    for (size_t i = WB_FORK_LOCKS; i-- > 0;)
        pthread_mutex_unlock(wb_fork_locks[i]);
}

/* The child has the forking thread alone: new locks and conditions, no
   promoter (wb_promo_wake starts one when a promotion is next queued or
   triggered), and the promotion the parent's promoter ran back in the
   queue, unless it was cancelled (one running at the fork has published
   nothing: it publishes under the lock the fork held); the queue's
   triggered promotions wait for their wrappers' next calls. */
static void wb_fork_child(void)
{
    for (size_t i = 0; i < WB_FORK_LOCKS; i++)
        pthread_mutex_init(wb_fork_locks[i], NULL);
    pthread_cond_init(&wb_promo_work, NULL);
    pthread_cond_init(&wb_promo_finished, NULL);
    wb_promo_worker = false;
    struct wb_promotion *p = wb_promo_running;
    wb_promo_running = NULL;
    if (p && !atomic_load(&p->cancel)) {
        p->next = wb_promo_queue;
        wb_promo_queue = p;
    }
    /* A triggered promotion's wrapper no longer counts its calls: it gets
       its counting entry back, and its next call triggers it again, which
       starts the child's promoter. */
    for (p = wb_promo_queue; p; p = p->next)
        if (p->triggered) {
            p->triggered = false;
            atomic_store(&p->calls_left, 1);
            atomic_store(&p->w->entry, wb_auto_entry);
        }
}

static pthread_once_t wb_fork_once = PTHREAD_ONCE_INIT;

static void wb_fork_register(void)
{
    /* It fails only out of memory, and then fork is as unsafe as it was
       without it. */
    (void)pthread_atfork(wb_fork_prepare, wb_fork_parent, wb_fork_child);
}

/* Serves w from code (taking the reference). */
static void wb_wrapper_serve(wb_wrapper *w, wb_code *code)
{
    w->code = code;
    atomic_store(&w->entry, code->entry);
    atomic_store(&w->tier, code->tier);
    if (code->note)
        wb_wrapper_set_note(w, strdup(code->note));
}

static wb_tier wb_tier_of(const wb_options *o)
{
    wb_tier t = o ? o->tier : WB_TIER_DEFAULT;
    return t == WB_TIER_DEFAULT ? WB_TIER_TCC : t;
}

/* Refuses options neither wb_wrapper_new nor wb_wrappers_new can serve;
   fn is the one the caller called, which the message names. */
static wb_status wb_options_check(const char *fn, const wb_options *o)
{
    wb_tier t = wb_tier_of(o);
    if (o->flags & ~WB_OPT_ALL)
        return wb_rt_fail(WB_ERR_INVALID, "%s: unknown option flags 0x%x",
                          fn, o->flags & ~WB_OPT_ALL);
    if (t == WB_TIER_AOT)
        return wb_rt_fail(WB_ERR_INVALID, "%s: aot wrappers come from "
                          "wb_wrapper_new_aot", fn);
    if (t != WB_TIER_INTERP && t != WB_TIER_TCC && t != WB_TIER_CC &&
        t != WB_TIER_AUTO)
        return wb_rt_fail(WB_ERR_INVALID, "%s: unknown tier %d", fn,
                          (int)t);
    return WB_OK;
}

/* Frees wb_wrappers_make's arrays, and the functions libtcc compiled. */
static void wb_wrappers_make_done(int n, wb_wrapper **ws, wb_code **codes,
                                  char **srcs, wb_emitted *parts,
                                  const wb_emitted **pp)
{
    for (int i = 0; parts && i < n; i++)
        wb_emitted_free(&parts[i]);
    free(ws), free(codes), free(srcs), free(parts), free(pp);
}

/* The n wrappers of wb_wrapper_new and wb_wrappers_new, whose arguments
   are checked; fn names the one called. */
static wb_status wb_wrappers_make(const char *fn, int n,
                                  const wb_spec *const *specs,
                                  const wb_graph_fn *graphs,
                                  void *const *ctxs,
                                  const wb_options *options,
                                  wb_wrapper **out)
{
    static const wb_options defaults;
    const wb_options *o = options ? options : &defaults;
    wb_tier tier = wb_tier_of(o);
    bool share = !(o->flags & WB_OPT_NO_SHARE);
    wb_wrapper **ws = NULL;
    wb_code **codes = NULL;
    char **srcs = NULL;
    /* libtcc compiles text of its own, in parts, which the wrappers do
       not keep; the cc tier whole texts, which they do. */
    wb_emitted *parts = NULL;
    const wb_emitted **pp = NULL;
    bool libtcc = tier == WB_TIER_TCC || tier == WB_TIER_AUTO;
    wb_status st;
    if ((st = wb_options_check(fn, o)) != WB_OK)
        return st;
    /* Before the first lock a wrapper takes. */
    pthread_once(&wb_fork_once, wb_fork_register);
    ws = calloc((size_t)n, sizeof *ws);
    codes = calloc((size_t)n, sizeof *codes);
    srcs = calloc((size_t)n, sizeof *srcs);
    if (libtcc) {
        parts = calloc((size_t)n, sizeof *parts);
        pp = calloc((size_t)n, sizeof *pp);
    }
    if (!ws || !codes || !srcs || (libtcc && (!parts || !pp))) {
        st = wb_rt_fail(WB_ERR_NOMEM, "out of memory for %d wrappers", n);
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        if ((st = wb_wrapper_alloc(specs[i], graphs[i], ctxs ? ctxs[i] : NULL,
                                   &ws[i])) != WB_OK)
            goto fail;
        ws[i]->env.stream = o->stream;
        if (tier == WB_TIER_INTERP) {
            atomic_store(&ws[i]->entry, wb_interp_call);
            atomic_store(&ws[i]->tier, WB_TIER_INTERP);
            continue;
        }
        if (libtcc) {
            if ((st = wb_emit_parts(ws[i]->spec, WB_EMIT_FN, WB_EMIT_LIBTCC,
                                    &parts[i])) != WB_OK)
                goto fail;
            pp[i] = &parts[i];
            continue;
        }
        if ((st = wb_emit(ws[i]->spec, WB_EMIT_FN, WB_EMIT_LINES,
                          &srcs[i])) != WB_OK)
            goto fail;
        atomic_store(&ws[i]->source, srcs[i]);
    }
    if (libtcc) {
        if ((st = wb_tcc_codes(n, pp, share, codes)) != WB_OK)
            goto fail;
    } else if (tier == WB_TIER_CC) {
        wb_cc_opts cc;
        if ((st = wb_cc_opts_init(o, &cc)) != WB_OK)
            goto fail;
        for (int i = 0; i < n && st == WB_OK; i++) {
            char name[300];
            wb_spec_print_name(ws[i]->spec->name, name, sizeof name);
            st = wb_cc_code_get(srcs[i], share, &cc, name, NULL, &codes[i]);
        }
        wb_cc_opts_free(&cc);
        if (st != WB_OK)
            goto fail;
    }
    for (int i = 0; i < n && tier != WB_TIER_INTERP; i++) {
        wb_wrapper_serve(ws[i], codes[i]);
        codes[i] = NULL;
        if (tier == WB_TIER_AUTO && (st = wb_auto_start(ws[i], o)) != WB_OK)
            goto fail;
    }
    memcpy(out, ws, (size_t)n * sizeof *ws);
    wb_wrappers_make_done(n, ws, codes, srcs, parts, pp);
    return WB_OK;
fail:
    for (int i = 0; ws && i < n; i++) {
        if (codes)
            wb_code_release(codes[i]);
        wb_wrapper_free(ws[i]);
    }
    wb_wrappers_make_done(n, ws, codes, srcs, parts, pp);
    return st;
}

/* Each public constructor checks its own arguments, so that a message
   names the function the caller called, not the one it is built on. */
wb_status wb_wrapper_new(const wb_spec *spec, wb_graph_fn graph,
                         void *graph_ctx, const wb_options *options,
                         wb_wrapper **out)
{
    if (!spec || !graph || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_wrapper_new: NULL %s",
                          !spec ? "spec" : !graph ? "graph" : "out");
    return wb_wrappers_make("wb_wrapper_new", 1, &spec, &graph,
                            graph_ctx ? &graph_ctx : NULL, options, out);
}

wb_status wb_wrappers_new(int n, const wb_spec *const *specs,
                          const wb_graph_fn *graphs, void *const *ctxs,
                          const wb_options *options, wb_wrapper **out)
{
    if (n < 1 || !specs || !graphs || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_wrappers_new: no specs, "
                          "graphs or out");
    for (int i = 0; i < n; i++)
        if (!specs[i] || !graphs[i])
            return wb_rt_fail(WB_ERR_INVALID, "wb_wrappers_new: %s[%d] is "
                              "NULL", !specs[i] ? "specs" : "graphs", i);
    return wb_wrappers_make("wb_wrappers_new", n, specs, graphs, ctxs,
                            options, out);
}
