/*
 * abi.h -- what generated code links to: the graph-facing part of a
 * wrapper, the helpers of helpers.def and their symbol table, and the
 * check and commit primitives they are made of (internal).
 *
 * Both tiers run the same primitives: the interpreter calls them from loops
 * over precomputed lists, the generated C calls them with literal arguments.
 * A call runs in two phases.  The check phase (wb_rt_prep_*) looks at every
 * value the graph returned, allocates what the commit will need and may fail;
 * the commit phase (wb_rt_commit_*) cannot fail.  So a failed call has
 * changed nothing.
 */
#ifndef WB_ABI_H
#define WB_ABI_H

#include "../core/core.h"

/* The graph-facing part of a wrapper, passed first to every entry point.
   Generated code declares only the first two members (see emit.c), so they
   must stay first and in this order. */
struct wb_env {
    wb_graph_fn graph;
    void *graph_ctx;
    const wb_spec *spec;
    atomic_int first_call_state;
    void *stream;         /* CUDA work of a call, unless the thread sets one */
};

/* ---- per-call primitives (args.c, hooks.c, mutate.c, views.c, device.c;
   the table of them and its scanner in symbols.c) ---- */

/* Fails with st and "spec 'NAME': " before the formatted text. */
wb_status wb_rt_callf(const wb_env *e, wb_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "input 2 'x'" into buf. */
const char *wb_rt_input_label(const wb_env *e, int i, char *buf, size_t n);

/* The first tensor input that is NULL. */
wb_status wb_rt_err_null_input(const wb_env *e, const wb_arg *args);
/* Checks input's declared dtype and ndim. */
wb_status wb_rt_check_input(const wb_env *e, int input, const wb_tensor *t);

/* Readies the first-call hooks for fork, once, before the first wrapper
   with one is called: in a child, a hook that another thread of the
   parent was running runs again at the wrapper's next call (hooks.c). */
void wb_rt_first_call_init(void);

/* The helpers generated code calls (helpers.def), declared.  They leave
   the library with the public API (WB_API): ahead-of-time code built as a
   shared object links to them by name.  What the
   less obvious ones do:
   - wb_rt_check_distinct refuses one tensor passed for two inputs when a
     mutation changes its view or storage, and a resized storage shared
     with another mutated input; wb_rt_err_inputs words why a tensor
     argument failed its checks (the first NULL one, else the first
     declared one whose dtype or ndim differs).
   - wb_rt_synth_bases checks the members of each synthetic base and
     makes the bases into bases[0..ngroups) (a new reference each, which
     the call releases at its end), or fails having made none.
   - wb_rt_check_moved (a spec with moved_reads): no graph value that the
     commit reads (a later mutation's, a view's value or base, a member's
     new view) is an input whose metadata, set_ or resize mutation commits
     first and changes it, where the check saw it as it was; a mutation
     handed its input itself, or a tensor on its storage with its very
     view, changes nothing.
   - wb_rt_prep_view: output `output` will be a view of the storage
     `holder` will have (at least `grown` bytes), with value v's view.
     Sets *view to a new header, which holds a reference to that storage
     from now on, or to NULL when v lies on that storage and the caller
     holds its only reference: v is then the view itself.  wb_rt_prep_same
     does the same for a v on that storage alone, with a header from the
     thread's cache, and is nonzero for any other v (or when the cache is
     empty), which then needs wb_rt_prep_view.  wb_rt_prep_views does
     either for outputs output to output + n - 1, each a view of the
     storage of a[i].t with value r[i]'s view, in views[i];
     wb_rt_prep_views_of the same with every view of a[0].t's storage
     (outputs that split one input, as split, chunk and unbind do).
   - wb_rt_prep_data_Nd_run and wb_rt_commit_data_Nd_run: inputs input to
     input + n - 1 (at a[0] to a[n - 1]) against values r[0] to r[n - 1],
     in order, up to the first failure; libtcc compiles one call much
     faster than n.
   - wb_rt_commit_view makes the prepared header a view with v's view and
     the flags, then releases v, and returns the view; without one (view
     NULL) v itself is the view, returned with the flags.  The _plain
     variants are for outputs that neither require grad nor have dynamic
     dims, the common case, in cheaper calls.
   - wb_rt_out_flags sets requires-grad (0 or 1; -1 leaves it) and or-s dyn
     into t's mask; wb_rt_out_input returns input t itself, one more
     reference; wb_rt_out_plain_end stores the last output and returns 0.
   - wb_rt_release_all releases n views, wb_rt_release_values n tensor
     values (NULLs skipped; a value that is a number must be a NULL
     tensor by then); wb_rt_grow_free
     frees a planned growth; wb_rt_drop_copies forgets the device copies a
     failed call checked; wb_rt_flush enqueues the copies recorded on the
     call's stream, and on a CUDA failure releases the tensors of
     outs[0..nouts) and returns WB_ERR_DEVICE. */
#define WB_ABI(ret, ptr, name, params, temp) WB_API ret ptr name params;
#define WB_ABI_EXTERN(ret, ptr, name, params, temp)
#include "helpers.def"
#undef WB_ABI_EXTERN

/* The helpers' ids, in the order of helpers.def. */
typedef enum wb_abi_id {
#define WB_ABI(ret, ptr, name, params, temp) WB_ABI_ID_##name,
#include "helpers.def"
    WB_ABI_COUNT
} wb_abi_id;

/* The inputs declared with 1 to WB_RT_MAX_ND dims have helpers of their
   own for data mutations. */
#define WB_RT_MAX_ND 4

/* The helpers as a table, for the emitter's prototypes, the JIT's symbol
   table and the cc tier's binding header; terminated by a NULL name. */
typedef void (*wb_rt_fnptr)(void);
typedef struct wb_rt_symbol {
    const char *name;
    size_t len;         /* strlen(name) */
    wb_rt_fnptr addr;
    const char *proto;  /* the C declaration generated code sees */
    bool cold;          /* called only once a call has failed */
} wb_rt_symbol;
extern const wb_rt_symbol wb_rt_symbols[];

/* Generated code says what only libtcc compiles between "#ifdef __TINYC__"
   and "#else", and what only other compilers compile from there to
   "#endif" or between "#ifndef __TINYC__" and "#endif", each directive a
   line of its own, never nested. */
typedef enum wb_rt_cond {
    WB_RT_COND_NONE,    /* not one of these directives */
    WB_RT_COND_TCC,     /* #ifdef __TINYC__ */
    WB_RT_COND_NOT_TCC, /* #ifndef __TINYC__ */
    WB_RT_COND_ELSE,    /* #else */
    WB_RT_COND_END      /* #endif */
} wb_rt_cond;

/* Who reads a piece of generated code: libtcc, other compilers, or both. */
#define WB_RT_READ_TCC 1u
#define WB_RT_READ_CC 2u
/* Follows one directive: who reads the lines after a directive of kind c,
   when *in is the kind of the conditional open before it (NONE, TCC or
   NOT_TCC), which it updates. */
unsigned wb_rt_cond_next(wb_rt_cond c, wb_rt_cond *in);

#ifdef WB_TEST_HOOKS
/* Test hooks that read generated text back, to hold the emitter's record
   of it (wb_emitted.used) and libtcc's form to the text: the kind of the
   directive line at p; used[i] set, for each helper i that the n bytes at
   src call or declare, to who reads those calls (WB_RT_READ_*, or-ed), 0
   for the rest, and how many are used. */
wb_rt_cond wb_test_cond_at(const char *p);
int wb_test_symbols_used(const char *src, size_t n,
                         unsigned char used[WB_ABI_COUNT]);
#endif

/* Check phase of a copy into input t (on a CUDA device) from v: one device
   per call, the call's stream, a layout the copy kernel takes. */
wb_status wb_rt_prep_device_copy(const wb_env *e, int input,
                                 const wb_tensor *t, const wb_tensor *v);

#endif /* WB_ABI_H */
