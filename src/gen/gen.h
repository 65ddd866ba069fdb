/*
 * gen.h -- the two consumers of a validated spec (internal): the
 * reference interpreter and the C emitter, the table of steps both take
 * their helpers from, and the growable text buffer the emitter writes
 * through.
 */
#ifndef WB_GEN_H
#define WB_GEN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "../abi/abi.h"
#include "../spec/spec.h"

/* ---- steps: the helper behind each kind of step (steps.c) ---- */

/* How a step's helper is called: its argument list, which the
   interpreter passes and the emitter writes, and so which member of
   wb_gen_fn holds its address.  none marks a step a row does not have. */
typedef enum wb_gen_args {
    WB_GEN_ARGS_none = 0,
    /* Mutations of input `input`, t, from its updated value v. */
    WB_GEN_ARGS_prep,               /* int (e, input, t, v) */
    WB_GEN_ARGS_prep_grow,          /* int (e, input, t, v, &grow) */
    WB_GEN_ARGS_prep_run,           /* int (e, input, a, r, n) */
    WB_GEN_ARGS_commit,             /* void (t, v) */
    WB_GEN_ARGS_commit_grow,        /* void (t, v, &grow) */
    WB_GEN_ARGS_commit_run,         /* void (a, r, n) */
    /* Outputs, from the graph's value v, and views. */
    WB_GEN_ARGS_out_flags,          /* tensor (v, requires_grad, dyn) */
    WB_GEN_ARGS_out_plain,          /* tensor (v) */
    WB_GEN_ARGS_out_plain_end,      /* int (&outs[k], v) */
    WB_GEN_ARGS_out_input,          /* tensor (input, dyn) */
    WB_GEN_ARGS_prep_same,          /* int (holder, v, &view) */
    WB_GEN_ARGS_prep_view,          /* int (e, output, holder, grown, v,
                                       &view) */
    WB_GEN_ARGS_prep_views,         /* int (e, output, a, r, views, n) */
    WB_GEN_ARGS_commit_view,        /* tensor (view, v, requires_grad,
                                       dyn) */
    WB_GEN_ARGS_commit_view_plain,  /* tensor (view, v) */
    WB_GEN_ARGS_commit_views,       /* void (outs, views, r, n,
                                       requires_grad, dyn) */
    WB_GEN_ARGS_commit_views_plain  /* void (outs, views, r, n) */
} wb_gen_args;

/* A helper's address, in the type of its argument list. */
typedef union wb_gen_fn {
    int (*prep)(const wb_env *e, int input, const wb_tensor *t,
                const wb_tensor *v);
    int (*prep_grow)(const wb_env *e, int input, const wb_tensor *t,
                     const wb_tensor *v, wb_rt_grow *g);
    int (*prep_run)(const wb_env *e, int input, const wb_arg *a,
                    const wb_value *r, int n);
    void (*commit)(wb_tensor *t, wb_tensor *v);
    void (*commit_grow)(wb_tensor *t, wb_tensor *v, wb_rt_grow *g);
    void (*commit_run)(const wb_arg *a, const wb_value *r, int n);
    wb_tensor *(*out_flags)(wb_tensor *t, int requires_grad,
                            unsigned long long dyn);
    wb_tensor *(*out_plain)(wb_tensor *t);
    int (*out_plain_end)(wb_tensor **out, wb_tensor *t);
    wb_tensor *(*out_input)(wb_tensor *t, unsigned long long dyn);
    int (*prep_same)(const wb_tensor *holder, const wb_tensor *v,
                     wb_tensor **view);
    int (*prep_view)(const wb_env *e, int output, const wb_tensor *holder,
                     const wb_rt_grow *grown, const wb_tensor *v,
                     wb_tensor **view);
    int (*prep_views)(const wb_env *e, int output, const wb_arg *a,
                      const wb_value *r, wb_tensor **views, int n);
    wb_tensor *(*commit_view)(wb_tensor *view, wb_tensor *v,
                              int requires_grad, unsigned long long dyn);
    wb_tensor *(*commit_view_plain)(wb_tensor *view, wb_tensor *v);
    void (*commit_views)(wb_value *outs, wb_tensor *const *views,
                         const wb_value *r, int n, int requires_grad,
                         unsigned long long dyn);
    void (*commit_views_plain)(wb_value *outs, wb_tensor *const *views,
                               const wb_value *r, int n);
} wb_gen_fn;

/* One helper of a step: its id, from which the emitter writes its name
   (wb_rt_symbols[id].name), and its address, through which the
   interpreter calls it. */
typedef struct wb_gen_helper {
    wb_abi_id id;
    wb_gen_args args;
    wb_gen_fn fn;
} wb_gen_helper;

/* A helper named once, with the argument list it is called with: the id
   and the address come from the one name, so the emitter and the
   interpreter cannot call different helpers, and the compiler checks the
   helper's type against the argument list. */
#define WB_GEN_HELPER(args, name) \
    {WB_ABI_ID_##name, WB_GEN_ARGS_##args, {.args = name}}

/* What one kind of step calls: a row of wb_gen_steps.  Each member is a
   helper or none (args WB_GEN_ARGS_none). */
typedef struct wb_gen_step {
    wb_gen_helper check;        /* the check phase; may fail */
    wb_gen_helper check_first;  /* a cheaper check tried first, nonzero
                                   when check must run (views) */
    wb_gen_helper commit;       /* the commit phase; cannot fail */
    wb_gen_helper commit_plain; /* the commit of an output that neither
                                   requires grad nor has dynamic dims */
    wb_gen_helper commit_end;   /* that of such an output ending the call */
    wb_gen_helper check_run;    /* check of n consecutive like steps */
    wb_gen_helper check_run_of; /* check of n like views of one input */
    wb_gen_helper commit_run;   /* their commit */
    wb_gen_helper commit_run_plain; /* their commit, when plain */
} wb_gen_step;

/* The table of steps, which the interpreter and the emitter both walk. */
typedef struct wb_gen_step_table {
    /* By mutation kind (wb_spec_mut.kind); none and in-graph have no
       step after the call. */
    wb_gen_step mut[WB_MUT_IN_GRAPH + 1];
    /* Data mutations of inputs declared with nd dims, at nd (1 to
       WB_RT_MAX_ND), which the emitter uses for those not on a CUDA
       device: the primitives unrolled for that count, and their runs. */
    wb_gen_step data_nd[WB_RT_MAX_ND + 1];
    /* By output alias kind (wb_spec_out.kind). */
    wb_gen_step out[WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT + 1];
} wb_gen_step_table;
extern const wb_gen_step_table wb_gen_steps;

/* The row mutation m takes its helpers from, for the interpreter and the
   emitter alike (the emitter may take an unrolled data row instead). */
static inline const wb_gen_step *wb_gen_mut_step(const wb_spec_mut *m)
{
    return &wb_gen_steps.mut[m->kind];
}

/* The interpreter's entry point (a wb_entry_fn). */
int wb_interp_call(const wb_env *e, const wb_arg *args, int nargs,
                   wb_value *outs, int nouts);

/* A growable NUL-terminated buffer with an indentation level.  An allocation
   failure sets oom and turns every later write into a no-op, so callers check
   once at the end. */
typedef struct wb_buf {
    char *p;
    size_t len, cap;
    int indent;
    bool oom;
} wb_buf;

void wb_buf_printf(wb_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void wb_buf_vprintf(wb_buf *b, const char *fmt, va_list ap);
/* n bytes of p, as they are. */
void wb_buf_write(wb_buf *b, const char *p, size_t n);
/* One line at the current indentation, newline added. */
void wb_buf_line(wb_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void wb_buf_vline(wb_buf *b, const char *fmt, va_list ap);
/* Hands the text to the caller (NULL after oom) and resets b. */
char *wb_buf_take(wb_buf *b);
void wb_buf_free(wb_buf *b);

/* The name the emitter gives the wrapper function. */
#define WB_EMIT_FN "wb_generated"

/* What the emitted C is for. */
typedef enum wb_emit_form {
    WB_EMIT_PLAIN,  /* people and ahead-of-time builds: the whole text */
    WB_EMIT_LINES,  /* a compiler: the whole text, with #line directives
                       into the spec */
    WB_EMIT_LIBTCC  /* libtcc alone: its branch of every run, with the
                       #line directives and no banner or step
                       comments */
} wb_emit_form;

/* What the emitter made of a spec, in parts, so that no one need read the
   text again to learn what is in it: the text before the function (the
   banner, the types, the prototypes of the helpers it calls), the
   function, whose first line opens its definition, its name, and the
   helpers it calls, recorded as each call was written: used[id] says who
   reads a call of helper id (WB_RT_READ_TCC: libtcc, WB_RT_READ_CC: other
   compilers, or-ed; 0 for a helper not called); and the types whose
   members it reads (WB_EMIT_TYPE_*, or-ed), which the prelude completes,
   as it declares the others without members. */
typedef struct wb_emitted {
    char *prelude;
    char *body;
    char entry[65];
    unsigned char used[WB_ABI_COUNT];
    unsigned types;
} wb_emitted;

/* The types whose members generated code may read but seldom does: the
   environment's graph (a call the code makes itself, with something
   around it: guards, hooks, arguments of the graph's own, hidden
   mutations) and a storage growth (resize mutations).
   wb_emit_type_text[k] completes type 1 << k, after the prelude's
   declarations. */
enum {
    WB_EMIT_TYPE_ENV = 1,
    WB_EMIT_TYPE_GROW = 2,
    WB_EMIT_NTYPES = 2
};
extern const char *const wb_emit_type_text[WB_EMIT_NTYPES];

/* Emits the C for validated spec with entry point fn_name (a C
   identifier of at most 64 bytes), in form, in parts; on failure nothing
   is left to free. */
wb_status wb_emit_parts(const wb_spec *spec, const char *fn_name,
                        wb_emit_form form, wb_emitted *out);
void wb_emitted_free(wb_emitted *e);
/* The same as one text: the prelude, then the function. */
wb_status wb_emit(const wb_spec *spec, const char *fn_name, wb_emit_form form,
                  char **out);

#endif /* WB_GEN_H */
