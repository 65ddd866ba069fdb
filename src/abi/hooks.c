/*
 * hooks.c -- what runs around the graph: the thread's grad mode, the
 * first-call and before-call hooks, the guards, the detached inputs, the
 * version bumps of in-graph mutations, and the graph call itself.
 *
 * The graph call sits beside the grad mode it swaps, so that the swap
 * stays inlined into it.
 */
#include <pthread.h>

#include "abi.h"
#include "../spec/spec.h"

/* ---- grad mode, the graph call ---- */

/* The grad mode is per thread, as in PyTorch. */
static _Thread_local bool wb_rt_grad_off;

bool wb_grad_enabled(void) { return !wb_rt_grad_off; }
void wb_set_grad_enabled(bool on) { wb_rt_grad_off = !on; }

/* The mode to put back after the graph: the one before, but for an
   inference call made with grad mode off, which, as AOTAutograd's runtime
   wrapper does, touches nothing and keeps whatever the graph left (-1). */
int wb_rt_grad_swap(int on)
{
    int prev = !wb_rt_grad_off;
    wb_rt_grad_off = !on;
    return on || prev ? prev : -1;
}

/* Grad mode on or off; -1 leaves it. */
void wb_rt_grad_set(int on)
{
    if (on >= 0)
        wb_rt_grad_off = !on;
}

/* wb_rt_grad_swap and wb_rt_grad_set around the graph, with the rule as
   one operation: after an inference call the mode is off only if it was
   off before and the graph left it off. */
static inline int wb_rt_call_graph(const wb_env *e, const wb_arg *a,
                                   int nargs, wb_value *r, int nvalues,
                                   bool on)
{
    bool off = wb_rt_grad_off;
    wb_rt_grad_off = !on;
    int n = e->graph(e->graph_ctx, a, nargs, r, nvalues);
    if (on)
        wb_rt_grad_off = off;
    else
        wb_rt_grad_off &= off;
    return n;
}

int wb_rt_call_nograd(const wb_env *e, const wb_arg *a, int nargs,
                      wb_value *r, int nvalues)
{
    return wb_rt_call_graph(e, a, nargs, r, nvalues, false);
}

int wb_rt_call_grad(const wb_env *e, const wb_arg *a, int nargs,
                    wb_value *r, int nvalues)
{
    return wb_rt_call_graph(e, a, nargs, r, nvalues, true);
}

/* In training, the write-back of an input's data is AOTAutograd's
   original.copy_(updated) in the caller's grad mode: with grad on, an
   input whose updated value requires grad requires grad afterwards (one
   that did already keeps it, as its detach().copy_ leaves it), and so do
   the members of a synthetic base written so, views of one tensor, as
   the views of a tensor copied into do.  Runs in the commit phase,
   before the commits release the values. */
void wb_rt_take_grads(const wb_env *e, const wb_arg *a, const wb_value *r)
{
    const wb_spec *s = e->spec;
    if (wb_rt_grad_off)
        return;
    for (int q = 0; q < s->nupdated; q++) {
        const wb_spec_mut *m = &s->muts[q];
        if (!wb_mutation_copies(m->kind) ||
            !(__atomic_load_n(&r[q].t->flags, __ATOMIC_RELAXED) &
              WB_TENSOR_REQUIRES_GRAD))
            continue;
        /* Set as an output's flag is (wb_rt_out_flags), no dim added. */
        int g = wb_spec_synth(s, m->input);
        if (g < 0)
            wb_rt_out_flags(a[m->input].t, 1, 0);
        for (int i = 0; g >= 0 && i < s->ninputs; i++)
            if (s->group_of[i] == g)
                wb_rt_out_flags(a[i].t, 1, 0);
    }
}

/* ---- hooks, guards, detached inputs, versions ---- */

/* The first-call hooks running on this thread, innermost first, so that a
   hook calling its own wrapper again goes through instead of waiting for
   itself. */
typedef struct wb_rt_first_frame {
    const wb_env *env;
    const struct wb_rt_first_frame *up;
} wb_rt_first_frame;
static _Thread_local const wb_rt_first_frame *wb_rt_first_running;

/* A wrapper's first_call_state: the phase in the low two bits, and above
   them the fork generation of the process that marked it running. */
enum { WB_RT_FIRST_NOT_RUN, WB_RT_FIRST_RUNNING, WB_RT_FIRST_DONE,
       WB_RT_FIRST_PHASE = 3 };

/* How many forks deep this process is, counted from the first wrapper
   with a hook (wb_rt_first_call_init). */
static atomic_uint wb_rt_fork_gen;

/* The calls waiting for another thread's hook sleep on this condition,
   which each hook that ends broadcasts. */
static pthread_mutex_t wb_rt_first_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wb_rt_first_ended = PTHREAD_COND_INITIALIZER;

static int wb_rt_first_running_now(void)
{
    return (int)(atomic_load_explicit(&wb_rt_fork_gen, memory_order_relaxed)
                 << 2 | WB_RT_FIRST_RUNNING);
}

static void wb_rt_fork_prepare(void) { pthread_mutex_lock(&wb_rt_first_lock); }
static void wb_rt_fork_parent(void) { pthread_mutex_unlock(&wb_rt_first_lock); }

/* In a child of fork, whose one thread is the one that forked: a hook
   marked running in an older generation ran on a thread the child does
   not have, and the next call runs it again, as after a hook that
   failed; the hooks the forking thread is inside are marked again as
   running here, so that they stay its own. */
static void wb_rt_fork_child(void)
{
    pthread_mutex_init(&wb_rt_first_lock, NULL);
    pthread_cond_init(&wb_rt_first_ended, NULL);
    atomic_fetch_add_explicit(&wb_rt_fork_gen, 1, memory_order_relaxed);
    for (const wb_rt_first_frame *f = wb_rt_first_running; f; f = f->up)
        atomic_store((atomic_int *)&f->env->first_call_state,
                     wb_rt_first_running_now());
}

static pthread_once_t wb_rt_fork_once = PTHREAD_ONCE_INIT;

static void wb_rt_fork_register(void)
{
    /* It fails only out of memory, and then a child may wait for a hook
       as it would without it. */
    (void)pthread_atfork(wb_rt_fork_prepare, wb_rt_fork_parent,
                         wb_rt_fork_child);
}

void wb_rt_first_call_init(void)
{
    pthread_once(&wb_rt_fork_once, wb_rt_fork_register);
}

static bool wb_rt_first_is_mine(const wb_env *e)
{
    for (const wb_rt_first_frame *f = wb_rt_first_running; f; f = f->up)
        if (f->env == e)
            return true;
    return false;
}

/* The first-call hook runs once per wrapper, and no call gets past this
   point before it has finished: other threads wait while it runs.  A hook
   that fails puts the wrapper back to "not run", so that the failed call
   changes nothing and the next call runs the hook again. */
int wb_rt_first_call(const wb_env *e)
{
    const wb_spec *s = e->spec;
    atomic_int *state = (atomic_int *)&e->first_call_state;
    int running;
    for (;;) {
        int now = atomic_load_explicit(state, memory_order_acquire);
        if ((now & WB_RT_FIRST_PHASE) == WB_RT_FIRST_DONE)
            return WB_OK;
        running = wb_rt_first_running_now();
        if ((now & WB_RT_FIRST_PHASE) == WB_RT_FIRST_RUNNING) {
            if (wb_rt_first_is_mine(e))
                return WB_OK;
            if (now == running) {
                /* Not a cancellation point: a thread cancelled in the
                   wait would leave holding the lock. */
                int cancel;
                pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
                pthread_mutex_lock(&wb_rt_first_lock);
                while (atomic_load_explicit(state, memory_order_acquire) ==
                       now)
                    pthread_cond_wait(&wb_rt_first_ended, &wb_rt_first_lock);
                pthread_mutex_unlock(&wb_rt_first_lock);
                pthread_setcancelstate(cancel, NULL);
                continue;
            }
        }
        if (atomic_compare_exchange_weak(state, &now, running))
            break;
    }
    wb_rt_first_frame frame = {e, wb_rt_first_running};
    wb_rt_first_running = &frame;
    int rc = s->first_call(s->first_call_ud);
    wb_rt_first_running = frame.up;
    atomic_store_explicit(state, rc ? WB_RT_FIRST_NOT_RUN : WB_RT_FIRST_DONE,
                          memory_order_release);
    pthread_mutex_lock(&wb_rt_first_lock);
    pthread_cond_broadcast(&wb_rt_first_ended);
    pthread_mutex_unlock(&wb_rt_first_lock);
    if (rc)
        return wb_rt_callf(e, WB_ERR_HOOK, "the first-call hook failed with "
                           "code %d", rc);
    return WB_OK;
}

int wb_rt_before_call(const wb_env *e)
{
    const wb_spec *s = e->spec;
    int rc = s->before_call(s->before_call_ud);
    if (rc)
        return wb_rt_callf(e, WB_ERR_HOOK, "the before-call hook failed "
                           "with code %d", rc);
    return WB_OK;
}

int wb_rt_guard_enter(const wb_env *e, int guard)
{
    const wb_guard *g = &e->spec->guards[guard];
    int rc = g->enter(g->ud);
    if (rc)
        return wb_rt_callf(e, WB_ERR_HOOK, "guard %d failed to enter with "
                           "code %d", guard, rc);
    return WB_OK;
}

void wb_rt_guard_leave(const wb_env *e, int guard)
{
    const wb_guard *g = &e->spec->guards[guard];
    g->leave(g->ud);
}

/* Functionalized RNG: the generator's seed and offset for the graph, and
   its new offset once the call has succeeded. */
int wb_rt_rng_get(const wb_env *e, wb_arg *seed_offset)
{
    const wb_spec *s = e->spec;
    seed_offset[0].t = seed_offset[1].t = NULL;
    int rc = s->rng_get(s->rng_ud, &seed_offset[0].t, &seed_offset[1].t);
    if (!rc && seed_offset[0].t && seed_offset[1].t)
        return WB_OK;
    const char *missing = seed_offset[0].t ? "offset" : "seed";
    wb_rt_rng_put(seed_offset);
    if (rc)
        return wb_rt_callf(e, WB_ERR_HOOK, "the RNG's get callback failed "
                           "with code %d", rc);
    return wb_rt_callf(e, WB_ERR_HOOK, "the RNG's get callback gave no %s",
                       missing);
}

void wb_rt_rng_put(wb_arg *seed_offset)
{
    wb_tensor_release(seed_offset[0].t);
    wb_tensor_release(seed_offset[1].t);
}

void wb_rt_rng_set(const wb_env *e, wb_tensor *offset)
{
    const wb_spec *s = e->spec;
    s->rng_set(s->rng_ud, offset);
    wb_rt_release(offset);
}

int wb_rt_detach(const wb_env *e, int input, const wb_tensor *t,
                       wb_arg *slot)
{
    char lb[400];
    if (wb_tensor_detach(t, &slot->t) != WB_OK)
        return wb_rt_callf(e, WB_ERR_NOMEM, "%s: out of memory detaching it",
                           wb_rt_input_label(e, input, lb, sizeof lb));
    return WB_OK;
}

void wb_rt_bump(wb_tensor *t)
{
    wb_rt_bump_by(t, 1);
}

void wb_rt_unbump(wb_tensor *t)
{
    atomic_fetch_sub_explicit(wb_rt_version(t), 1, memory_order_relaxed);
}

unsigned long long wb_rt_version_get(const wb_tensor *t)
{
    return atomic_load_explicit(wb_rt_version(t), memory_order_relaxed);
}

void wb_rt_version_put(wb_tensor *t, unsigned long long version)
{
    atomic_store_explicit(wb_rt_version(t), version, memory_order_relaxed);
}
