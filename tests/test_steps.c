/*
 * The step table (src/gen/steps.c): every kind of mutation and output a
 * validated spec can hold has the helpers the interpreter and the emitter
 * need, each row's address is the very function whose name the emitter
 * writes, and the emitter takes its names from the table.  A kind without
 * a row would make the interpreter skip the step and the emitter write
 * helper 0's name, so the table's completeness is checked here rather
 * than left to the differential tests to stumble on.
 */
#include <string.h>

#include "helpers.h"
#include "../src/gen/gen.h"
#include "../src/spec/spec.h"

/* Whether h is a helper called with argument list args. */
static bool steps_is(const wb_gen_helper *h, wb_gen_args args)
{
    return h->args == args;
}

/* Asserts that helper h (or none) of a row names the function it holds,
   and that its name starts with one of the prefixes given (NULL ends
   them). */
static void steps_check_helper(const char *what, const wb_gen_helper *h, ...)
{
    if (h->args == WB_GEN_ARGS_none)
        return;
    cr_assert((unsigned)h->id < WB_ABI_COUNT, "%s: id %d out of range", what,
              (int)h->id);
    const wb_rt_symbol *sym = &wb_rt_symbols[h->id];
    wb_rt_fnptr addr;
    /* Every member of wb_gen_fn is a function pointer of one size. */
    memcpy(&addr, &h->fn, sizeof addr);
    cr_assert(addr == sym->addr, "%s: the address is not that of %s", what,
              sym->name);
    va_list ap;
    va_start(ap, h);
    bool prefixed = false;
    for (const char *p; (p = va_arg(ap, const char *)) != NULL;)
        prefixed |= strncmp(sym->name, p, strlen(p)) == 0;
    va_end(ap);
    cr_assert(prefixed, "%s: %s is not a helper of its phase", what,
              sym->name);
}

static void steps_check_row(const char *what, const wb_gen_step *o)
{
    steps_check_helper(what, &o->check, "wb_rt_prep_", NULL);
    steps_check_helper(what, &o->check_first, "wb_rt_prep_", NULL);
    steps_check_helper(what, &o->check_run, "wb_rt_prep_", NULL);
    steps_check_helper(what, &o->check_run_of, "wb_rt_prep_", NULL);
    steps_check_helper(what, &o->commit, "wb_rt_commit_", "wb_rt_out_", NULL);
    steps_check_helper(what, &o->commit_plain, "wb_rt_commit_", "wb_rt_out_",
                       NULL);
    steps_check_helper(what, &o->commit_end, "wb_rt_out_", NULL);
    steps_check_helper(what, &o->commit_run, "wb_rt_commit_", NULL);
    steps_check_helper(what, &o->commit_run_plain, "wb_rt_commit_", NULL);
}

Test(steps, mutation_rows)
{
    for (int k = 0; k <= WB_MUT_IN_GRAPH; k++) {
        const wb_gen_step *o = &wb_gen_steps.mut[k];
        bool runtime = k != WB_MUT_NONE && k != WB_MUT_IN_GRAPH;
        steps_check_row(wb_mutation_name((wb_mutation)k), o);
        if (!runtime) {
            cr_assert(steps_is(&o->check, WB_GEN_ARGS_none) &&
                          steps_is(&o->commit, WB_GEN_ARGS_none),
                      "%s mutations have no step after the call",
                      wb_mutation_name((wb_mutation)k));
            continue;
        }
        /* A check that plans a growth has a commit that applies it. */
        bool grows = steps_is(&o->check, WB_GEN_ARGS_prep_grow);
        cr_assert(grows || steps_is(&o->check, WB_GEN_ARGS_prep),
                  "%s: no check", wb_mutation_name((wb_mutation)k));
        cr_assert(steps_is(&o->commit, grows ? WB_GEN_ARGS_commit_grow
                                             : WB_GEN_ARGS_commit),
                  "%s: no commit of the check's kind",
                  wb_mutation_name((wb_mutation)k));
    }
    for (int nd = 1; nd <= WB_RT_MAX_ND; nd++) {
        const wb_gen_step *o = &wb_gen_steps.data_nd[nd];
        steps_check_row("data, unrolled", o);
        cr_assert(steps_is(&o->check, WB_GEN_ARGS_prep) &&
                      steps_is(&o->commit, WB_GEN_ARGS_commit) &&
                      steps_is(&o->check_run, WB_GEN_ARGS_prep_run) &&
                      steps_is(&o->commit_run, WB_GEN_ARGS_commit_run),
                  "data mutations of %d dims lack a helper", nd);
        char name[32];
        snprintf(name, sizeof name, "wb_rt_prep_data_%dd", nd);
        cr_assert_str_eq(wb_rt_symbols[o->check.id].name, name);
    }
}

Test(steps, output_rows)
{
    for (int k = 0; k <= WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT;
         k++) {
        const wb_gen_step *o = &wb_gen_steps.out[k];
        const char *what = wb_alias_name((wb_alias)k);
        bool view = k == WB_OUT_ALIAS_OF_INPUT ||
                    k == WB_OUT_ALIAS_OF_INTERMEDIATE ||
                    k == WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT ||
                    k == WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT;
        steps_check_row(what, o);
        cr_assert(!steps_is(&o->commit, WB_GEN_ARGS_none), "%s: no commit",
                  what);
        if (view) {
            cr_assert(steps_is(&o->check, WB_GEN_ARGS_prep_view) &&
                          steps_is(&o->check_first, WB_GEN_ARGS_prep_same) &&
                          steps_is(&o->commit, WB_GEN_ARGS_commit_view) &&
                          steps_is(&o->commit_plain,
                                   WB_GEN_ARGS_commit_view_plain),
                      "%s: not a view's row", what);
        } else {
            cr_assert(steps_is(&o->check, WB_GEN_ARGS_none),
                      "%s: a check for an output that is no view", what);
        }
    }
    /* Views of an input go in runs: of consecutive inputs, or of one. */
    const wb_gen_step *in = &wb_gen_steps.out[WB_OUT_ALIAS_OF_INPUT];
    cr_assert(steps_is(&in->check_run, WB_GEN_ARGS_prep_views) &&
              steps_is(&in->check_run_of, WB_GEN_ARGS_prep_views) &&
              steps_is(&in->commit_run_plain, WB_GEN_ARGS_commit_views_plain));
    /* The non-alias variants end a call in one call, as non-alias does. */
    cr_assert(steps_is(&wb_gen_steps.out[WB_OUT_UNSAFE_VIEW_ALIAS].commit_end,
                       WB_GEN_ARGS_out_plain_end));
    cr_assert(steps_is(&wb_gen_steps.out[WB_OUT_CUSTOM_FUNCTION_VIEW].commit,
                       WB_GEN_ARGS_out_flags));
}

/* The emitter writes the check and the commit of each mutation kind by
   the names of its row. */
Test(steps, emitter_writes_the_rows)
{
    for (int k = WB_MUT_DATA; k <= WB_MUT_RESIZE; k++) {
        wb_spec *s;
        char *text = NULL, call[64];
        WBT_OK(wb_spec_new("steps", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", (wb_mutation)k, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 0, true, 0,
                                  NULL));
        WBT_OK(wb_spec_validate(s));
        WBT_OK(wb_emit(s, WB_EMIT_FN, WB_EMIT_PLAIN, &text));
        const wb_gen_step *m = &wb_gen_steps.mut[k];
        const wb_gen_step *v = &wb_gen_steps.out[WB_OUT_ALIAS_OF_INPUT];
        const wb_gen_helper *used[] = {&m->check, &m->commit, &v->check,
                                       &v->check_first, &v->commit};
        for (size_t i = 0; i < sizeof used / sizeof *used; i++) {
            snprintf(call, sizeof call, "%s(",
                     wb_rt_symbols[used[i]->id].name);
            cr_assert(strstr(text, call) != NULL,
                      "%s mutation: the code does not call %s",
                      wb_mutation_name((wb_mutation)k), call);
        }
        free(text);
        wb_spec_free(s);
    }
}
