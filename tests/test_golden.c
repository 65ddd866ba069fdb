/*
 * Golden files for generated C: the text a compiler engineer reviews.  Each
 * spec's emitted source must match tests/golden/NAME.c byte for byte, and
 * must compile warning-free with the system compiler as well as with libtcc.
 * `make golden` rewrites the files; review the diff before committing.
 */
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "../src/gen/gen.h"

static int golden_hook(void *ud) { (void)ud; return 0; }
static void golden_leave(void *ud) { (void)ud; }

/* decode_step(Tensor(a!) cache, Tensor(b) x, Tensor w, int pos, float scale)
       -> (Tensor, Tensor(b), Tensor(a!)) */
static wb_spec *golden_decode_step(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("decode_step", &s));
    WBT_OK(wb_spec_add_tensor(s, "cache", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "w", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_scalar(s, "pos", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "scale", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_declare_input(s, 0, WBT_F32, 3));
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "x_view", WB_OUT_ALIAS_OF_INPUT, 1, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "cache", WB_OUT_IS_INPUT, 0, false, 0, NULL));
    return s;
}

/* The wrappers that change the argument list: an input passed three
   times and deduplicated, around a scalar and another tensor, an effect
   token and functionalized RNG.
   dedup_step(Tensor(a!) x [data_metadata], Tensor y [duplicate=x], int n,
              Tensor w, Tensor z [duplicate=x]) -> (Tensor(a), Tensor)
       with effect_tokens=1, functional_rng */
static wb_spec *golden_dedup(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_parse("dedup_step(Tensor(a!) x [data_metadata], "
                         "Tensor y [duplicate=x], int n, Tensor w, "
                         "Tensor z [duplicate=x]) -> (Tensor(a), Tensor) "
                         "with effect_tokens=1, functional_rng", &s));
    return s;
}

/* Lists of known length and returns that are numbers: a list parameter
   is an argument per element, a list return an output per element, and
   numbers are copied through their members. */
static wb_spec *golden_lists_and_numbers(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_parse("split_sizes(Tensor(a!) x, Tensor[2] ys, int dim) "
                         "-> (Tensor(a)[2] parts, SymInt[2] sizes, float "
                         "scale, bool ok, NoneType nothing)", &s));
    return s;
}

/* Synthetic bases: x and y on one storage, y's view changing too, w
   apart, v a member read only; outputs alias members. */
static wb_spec *golden_synthetic(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_parse("synth_step(Tensor(a!) x, Tensor(b!) y "
                         "[data_metadata, aliases=x], Tensor(c!) w, Tensor v "
                         "[aliases=y]) -> (Tensor(a), Tensor(b))", &s));
    return s;
}

/* The benchmark's case E: 5 alias, 3 mut, 20 args. */
static wb_spec *golden_case_e(void)
{
    wb_spec *s;
    char name[16];
    WBT_OK(wb_spec_new("case_E", &s));
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "x%d", i);
        WBT_OK(wb_spec_add_tensor(s, name, i < 3 ? WB_MUT_DATA : WB_MUT_NONE,
                                  0, NULL));
        WBT_OK(wb_spec_declare_input(s, i, WBT_F32, 2));
    }
    for (int k = 0; k < 5; k++) {
        snprintf(name, sizeof name, "view%d", k);
        WBT_OK(wb_spec_add_output(s, name, WB_OUT_ALIAS_OF_INPUT, 3 + k,
                                  false, 0, NULL));
    }
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    return s;
}

/* Training with every graph-level feature: hooks, guards, detached inputs,
   in-graph mutations, storage and resize mutations, intermediate bases. */
static wb_spec *golden_training(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("train_step", &s));
    WBT_OK(wb_spec_set_training(s, true));
    WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    WBT_OK(wb_spec_set_grad_mode_at_end(s, 1));
    WBT_OK(wb_spec_set_intermediate_bases(s, 1));
    WBT_OK(wb_spec_set_before_call(s, golden_hook, NULL));
    WBT_OK(wb_spec_set_first_call(s, golden_hook, NULL));
    WBT_OK(wb_spec_add_guard(s, golden_hook, golden_leave, NULL));
    WBT_OK(wb_spec_add_guard(s, golden_hook, golden_leave, NULL));
    WBT_OK(wb_spec_add_tensor(s, "params", WB_MUT_NONE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_add_tensor(s, "running_mean", WB_MUT_IN_GRAPH, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "step", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN, NULL));
    WBT_OK(wb_spec_add_tensor(s, "buf", WB_MUT_STORAGE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "kv", WB_MUT_RESIZE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_add_tensor(s, "shape", WB_MUT_METADATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "out", WB_MUT_DATA_METADATA, WB_INPUT_OUT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "lr", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "flag", WB_SCALAR_BOOL, NULL));
    WBT_OK(wb_spec_add_output(s, "loss", WB_OUT_NON_ALIAS, -1, true, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "h", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, true, 0x3, NULL));
    WBT_OK(wb_spec_add_output(s, "h2", WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 0, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "loss_view", WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 0, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "buf_view", WB_OUT_ALIAS_OF_INPUT, 3, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "kv_view", WB_OUT_ALIAS_OF_INPUT, 4, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_IS_INPUT, 6, false, 0x1, NULL));
    WBT_OK(wb_spec_add_output(s, "unsafe", WB_OUT_UNSAFE_VIEW_ALIAS, -1, false, 0, NULL));
    return s;
}


/* The emitted C compiles with the system compiler, warnings as errors. */
static void golden_compiles(const char *path)
{
    char cmd[512];
    const char *cc = getenv("CC") ? getenv("CC") : "cc";
    snprintf(cmd, sizeof cmd, "%s -std=c11 -Wall -Wextra -Wpedantic -Werror "
             "-fsyntax-only %s", cc, path);
    cr_assert_eq(system(cmd), 0, "%s does not compile cleanly: %s", path, cmd);
}

static void golden_check_form(const char *name, wb_spec *s,
                              wb_emit_form form)
{
    char path[256], *text;
    snprintf(path, sizeof path, "tests/golden/%s.c", name);
    WBT_OK(wb_spec_validate(s));
    WBT_OK(wb_emit(s, WB_EMIT_FN, form, &text));
    if (getenv("WB_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        cr_assert(f, "cannot write %s", path);
        fputs(text, f);
        fclose(f);
    }
    char *want = wbt_read_file(path);
    cr_assert(want, "%s is missing; run `make golden` and review it", path);
    cr_assert_str_eq(text, want, "%s differs from the emitter's output; if "
                     "the change is intended, run `make golden` and review "
                     "the diff", path);
    golden_compiles(path);
    free(want);
    free(text);
    wb_spec_free(s);
}

static void golden_check(const char *name, wb_spec *s)
{
    golden_check_form(name, s, WB_EMIT_PLAIN);
}

Test(golden, decode_step) { golden_check("decode_step", golden_decode_step()); }
Test(golden, case_e) { golden_check("case_E", golden_case_e()); }
Test(golden, training) { golden_check("train_step", golden_training()); }
Test(golden, dedup_and_tokens) { golden_check("dedup_step", golden_dedup()); }
Test(golden, synthetic_bases)
{
    golden_check("synth_step", golden_synthetic());
}
Test(golden, lists_and_numbers)
{
    golden_check("split_sizes", golden_lists_and_numbers());
}

/* What the tcc tier compiles of case E: libtcc's branch of every run, the
   #line directives, no banner or step comments. */
Test(golden, case_e_as_libtcc_compiles_it)
{
    golden_check_form("case_E.libtcc", golden_case_e(), WB_EMIT_LIBTCC);
}

/* The same text, regenerated, is byte-identical. */
Test(golden, deterministic)
{
    wb_spec *s = golden_training();
    char *a, *b;
    WBT_OK(wb_spec_validate(s));
    WBT_OK(wb_emit_c(s, &a));
    WBT_OK(wb_emit_c(s, &b));
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    wb_spec_free(s);
}
