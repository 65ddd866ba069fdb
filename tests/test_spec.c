/*
 * Unit tests of the spec builder and validator: the facts derived from a
 * spec, every rule wb_spec_validate enforces (status and message), the
 * builder's limits and argument checks, invalidation on change, cloning, and
 * the escaping of hostile names in messages.
 *
 * A few tests look inside struct wb_spec (src/spec/spec.h) where the public
 * API cannot show a fact: what a clone copied, what a declaration recorded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_helpers.h"

/* ---- local helpers ---------------------------------------------------- */

/* Asserts that s has no derived facts, as after a failed or pending
   validation. */
static void ts_assert_unvalidated(const wb_spec *s)
{
    cr_assert_eq(wb_spec_num_values(s), -1, "N is %d on an unvalidated spec",
                 wb_spec_num_values(s));
    cr_assert_eq(wb_spec_num_updated(s), -1, "M is %d on an unvalidated spec",
                 wb_spec_num_updated(s));
    cr_assert_null(wb_spec_signature(s), "a signature on an unvalidated spec");
    for (int i = 0; i < wb_spec_num_inputs(s); i++)
        cr_assert_eq((int)wb_spec_direction(s, i), 0,
                     "input %d has a direction on an unvalidated spec", i);
}

/* Validation fails with WB_ERR_SPEC, a message containing needle, and
   leaves no derived facts behind. */
#define TS_REJECTS(s, needle)                                                \
    do {                                                                     \
        WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC, (needle));               \
        ts_assert_unvalidated(s);                                            \
    } while (0)

/* Asserts that every byte of the calling thread's message is printable
   ASCII and that it holds no comment terminator. */
static void ts_assert_message_is_tame(void)
{
    const char *m = wb_last_error();
    for (const unsigned char *p = (const unsigned char *)m; *p; p++)
        cr_assert(*p >= 0x20 && *p <= 0x7e,
                  "byte 0x%02x at %d of the message is not printable ASCII",
                  *p, (int)(p - (const unsigned char *)m));
    cr_assert_null(strstr(m, "*/"), "message '%s' holds '*/'", m);
    cr_assert_null(strstr(m, "/*"), "message '%s' holds '/*'", m);
}

static int ts_hook(void *ud)
{
    (void)ud;
    return 0;
}

static int ts_hook2(void *ud)
{
    (void)ud;
    return 0;
}

static void ts_leave(void *ud)
{
    (void)ud;
}

/* A spec of one plain tensor input and one plain output, valid as it is. */
static wb_spec *ts_small(const char *name)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new(name, &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "y", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    return s;
}

/* ---- derived facts ---------------------------------------------------- */

Test(spec, facts_of_a_decode_step)
{
    wb_spec *s = NULL;
    int idx = -7;
    WBT_OK(wb_spec_new("decode_step", &s));
    cr_assert_str_eq(wb_spec_name(s), "decode_step");
    WBT_OK(wb_spec_add_tensor(s, "cache", WB_MUT_DATA, 0, &idx));
    cr_assert_eq(idx, 0);
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, &idx));
    cr_assert_eq(idx, 1);
    WBT_OK(wb_spec_add_scalar(s, "pos", WB_SCALAR_INT, &idx));
    cr_assert_eq(idx, 2);
    WBT_OK(wb_spec_add_tensor(s, "w", WB_MUT_NONE, 0, &idx));
    cr_assert_eq(idx, 3);
    WBT_OK(wb_spec_add_scalar(s, "scale", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "causal", WB_SCALAR_BOOL, NULL));
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_NON_ALIAS, -1, false, 0, &idx));
    cr_assert_eq(idx, 0);
    WBT_OK(wb_spec_add_output(s, "x_view", WB_OUT_ALIAS_OF_INPUT, 1, false, 0,
                              &idx));
    cr_assert_eq(idx, 1);
    WBT_OK(wb_spec_add_output(s, "cache", WB_OUT_IS_INPUT, 0, false, 0, NULL));

    /* Plain facts need no validation; derived ones do. */
    cr_assert_eq(wb_spec_num_inputs(s), 6);
    cr_assert_eq(wb_spec_num_outputs(s), 3);
    ts_assert_unvalidated(s);

    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_updated(s), 1);
    cr_assert_eq(wb_spec_num_values(s), 1 + 3 + 0);
    cr_assert_str_eq(wb_spec_signature(s), "(INOUT cache, IN x, IN w)");
    static const wb_direction dirs[] = {WB_DIR_INOUT, WB_DIR_IN,
                                        WB_DIR_SCALAR, WB_DIR_IN,
                                        WB_DIR_SCALAR, WB_DIR_SCALAR};
    static const char *const types[] = {"wb_tensor *", "wb_tensor *",
                                        "int64_t", "wb_tensor *", "double",
                                        "bool"};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(wb_spec_direction(s, i), dirs[i], "input %d", i);
        cr_assert_str_eq(wb_spec_c_type(s, i), types[i], "input %d", i);
    }
    /* Out-of-range inputs have no facts. */
    cr_assert_eq((int)wb_spec_direction(s, 6), 0);
    cr_assert_eq((int)wb_spec_direction(s, -1), 0);
    cr_assert_null(wb_spec_c_type(s, 6));
    cr_assert_null(wb_spec_c_type(s, -1));
    /* Validating again changes nothing. */
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 4);
    wb_spec_free(s);
}

Test(spec, num_updated_counts_write_back_mutations_only)
{
    static const struct {
        const char *name;
        wb_mutation m;
        bool updated;
    } ins[] = {
        {"none", WB_MUT_NONE, false},
        {"data", WB_MUT_DATA, true},
        {"meta", WB_MUT_METADATA, true},
        {"both", WB_MUT_DATA_METADATA, true},
        {"storage", WB_MUT_STORAGE, true},
        {"resize", WB_MUT_RESIZE, true},
        {"graph", WB_MUT_IN_GRAPH, false},
    };
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("mutations", &s));
    WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    int m = 0;
    for (int i = 0; i < 7; i++) {
        WBT_OK(wb_spec_add_tensor(s, ins[i].name, ins[i].m, 0, NULL));
        WBT_OK(wb_spec_validate(s));
        m += ins[i].updated;
        cr_assert_eq(wb_spec_num_updated(s), m, "after input %d ('%s')", i,
                     ins[i].name);
        cr_assert_eq(wb_spec_num_values(s), m);
        cr_assert_eq(wb_spec_direction(s, i),
                     ins[i].m == WB_MUT_NONE ? WB_DIR_IN : WB_DIR_INOUT,
                     "input %d", i);
    }
    cr_assert_eq(m, 5);
    WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_output(s, "y", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_updated(s), 5);
    cr_assert_eq(wb_spec_num_values(s), 5 + 1);
    cr_assert_str_eq(wb_spec_signature(s),
                     "(IN none, INOUT data, INOUT meta, INOUT both, "
                     "INOUT storage, INOUT resize, INOUT graph)");
    wb_spec_free(s);
}

Test(spec, num_values_counts_intermediate_bases)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("bases", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_set_intermediate_bases(s, 2));
    WBT_OK(wb_spec_add_output(s, "h", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, true,
                              0, NULL));
    WBT_OK(wb_spec_add_output(s, "h2",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 1,
                              false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "loss", WB_OUT_NON_ALIAS, -1, true, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "loss_view",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              2, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "u", WB_OUT_UNSAFE_VIEW_ALIAS, -1, false, 0,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "c", WB_OUT_CUSTOM_FUNCTION_VIEW, -1, false,
                              0, NULL));
    WBT_OK(wb_spec_add_output(s, "u_view",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              4, false, 0, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_updated(s), 1);
    cr_assert_eq(wb_spec_num_outputs(s), 7);
    cr_assert_eq(wb_spec_num_values(s), 1 + 7 + 2);
    cr_assert_str_eq(wb_spec_signature(s), "(INOUT x, IN y)");
    wb_spec_free(s);
}

Test(spec, direction_out_needs_the_out_flag_on_a_mutated_tensor)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("outs", &s));
    WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    WBT_OK(wb_spec_add_tensor(s, "out", WB_MUT_DATA, WB_INPUT_OUT, NULL));
    WBT_OK(wb_spec_add_tensor(s, "acc", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_scalar(s, "alpha", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "buf", WB_MUT_IN_GRAPH, WB_INPUT_OUT, NULL));
    WBT_OK(wb_spec_add_tensor(s, "step", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN,
                              NULL));
    WBT_OK(wb_spec_add_tensor(s, "res", WB_MUT_RESIZE, WB_INPUT_OUT, NULL));
    WBT_OK(wb_spec_validate(s));
    static const wb_direction dirs[] = {WB_DIR_OUT, WB_DIR_INOUT,
                                        WB_DIR_SCALAR, WB_DIR_IN, WB_DIR_OUT,
                                        WB_DIR_INOUT, WB_DIR_OUT};
    for (int i = 0; i < 7; i++)
        cr_assert_eq(wb_spec_direction(s, i), dirs[i], "input %d: %d", i,
                     (int)wb_spec_direction(s, i));
    cr_assert_str_eq(wb_spec_signature(s), "(OUT out, INOUT acc, IN x, "
                     "OUT buf, INOUT step, OUT res)");
    cr_assert_eq(wb_spec_num_updated(s), 3);
    wb_spec_free(s);
}

Test(spec, empty_and_scalar_only_specs)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new(NULL, &s));
    cr_assert_str_eq(wb_spec_name(s), "graph");
    cr_assert_eq(wb_spec_num_inputs(s), 0);
    cr_assert_eq(wb_spec_num_outputs(s), 0);
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 0);
    cr_assert_eq(wb_spec_num_updated(s), 0);
    cr_assert_str_eq(wb_spec_signature(s), "()");
    WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "b", WB_SCALAR_BOOL, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_str_eq(wb_spec_signature(s), "()");
    cr_assert_eq(wb_spec_direction(s, 1), WB_DIR_SCALAR);
    wb_spec_free(s);
    /* An empty name is a name. */
    WBT_OK(wb_spec_new("", &s));
    cr_assert_str_eq(wb_spec_name(s), "");
    wb_spec_free(s);
}

Test(spec, facts_of_no_spec)
{
    cr_assert_null(wb_spec_name(NULL));
    cr_assert_eq(wb_spec_num_inputs(NULL), -1);
    cr_assert_eq(wb_spec_num_outputs(NULL), -1);
    cr_assert_eq(wb_spec_num_values(NULL), -1);
    cr_assert_eq(wb_spec_num_updated(NULL), -1);
    cr_assert_eq((int)wb_spec_direction(NULL, 0), 0);
    cr_assert_null(wb_spec_c_type(NULL, 0));
    cr_assert_null(wb_spec_signature(NULL));
    wb_spec_free(NULL);
}

/* ---- validation: outputs ---------------------------------------------- */

Test(spec, rejects_is_input_base_out_of_range)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("f", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_IS_INPUT, 2, false, 0, NULL));
    TS_REJECTS(s, "spec 'f': output 0 'o': is-input base 2 is out of range; "
                  "expected an input 0..1");
    wb_spec_free(s);

    WBT_OK(wb_spec_new("f", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_IS_INPUT, -1, false, 0, NULL));
    TS_REJECTS(s, "is-input base -1 is out of range");
    wb_spec_free(s);

    /* No inputs at all: nothing to be. */
    WBT_OK(wb_spec_new("f", &s));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_IS_INPUT, 0, false, 0, NULL));
    TS_REJECTS(s, "is-input base 0 is out of range");
    wb_spec_free(s);
}

Test(spec, rejects_alias_of_input_base_out_of_range)
{
    wb_spec *s = ts_small("f");
    WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 5, false, 0,
                              NULL));
    TS_REJECTS(s, "output 1 'v': alias-of-input base 5 is out of range; "
                  "expected an input 0..0");
    wb_spec_free(s);

    s = ts_small("f");
    WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, -1, false, 0,
                              NULL));
    TS_REJECTS(s, "alias-of-input base -1 is out of range");
    wb_spec_free(s);
}

Test(spec, rejects_an_alias_of_a_scalar_input)
{
    static const wb_alias kinds[] = {WB_OUT_IS_INPUT, WB_OUT_ALIAS_OF_INPUT};
    static const char *const needles[] = {
        "output 1 'v': is-input base 1 is a scalar; expected a tensor input",
        "output 1 'v': alias-of-input base 1 is a scalar; expected a tensor "
        "input",
    };
    for (int k = 0; k < 2; k++) {
        wb_spec *s = ts_small("f");
        WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
        WBT_OK(wb_spec_add_output(s, "v", kinds[k], 1, false, 0, NULL));
        TS_REJECTS(s, needles[k]);
        wb_spec_free(s);
    }
}

Test(spec, rejects_alias_of_intermediate_base_out_of_range)
{
    static const wb_alias kinds[] = {
        WB_OUT_ALIAS_OF_INTERMEDIATE,
        WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT,
    };
    static const char *const names[] = {
        "alias-of-intermediate", "alias-of-intermediate-save-as-output",
    };
    char needle[200];
    for (int k = 0; k < 2; k++) {
        wb_spec *s = ts_small("f");
        WBT_OK(wb_spec_set_intermediate_bases(s, 1));
        WBT_OK(wb_spec_add_output(s, "h", kinds[k], 1, false, 0, NULL));
        snprintf(needle, sizeof needle, "output 1 'h': %s base 1 is out of "
                 "range; the spec has 1 intermediate base", names[k]);
        TS_REJECTS(s, needle);
        wb_spec_free(s);

        s = ts_small("f");
        WBT_OK(wb_spec_set_intermediate_bases(s, 1));
        WBT_OK(wb_spec_add_output(s, "h", kinds[k], -1, false, 0, NULL));
        snprintf(needle, sizeof needle, "%s base -1 is out of range",
                 names[k]);
        TS_REJECTS(s, needle);
        wb_spec_free(s);

        /* No intermediate bases declared at all. */
        s = ts_small("f");
        WBT_OK(wb_spec_add_output(s, "h", kinds[k], 0, false, 0, NULL));
        TS_REJECTS(s, "base 0 is out of range; the spec has 0 intermediate "
                      "bases");
        wb_spec_free(s);
    }
}

Test(spec, rejects_base_is_user_output_out_of_range_or_itself)
{
    wb_spec *s = ts_small("f");
    WBT_OK(wb_spec_add_output(s, "v",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              2, false, 0, NULL));
    TS_REJECTS(s, "output 1 'v': alias-of-intermediate-base-is-user-output "
                  "base 2 is out of range; expected another output 0..1");
    wb_spec_free(s);

    s = ts_small("f");
    WBT_OK(wb_spec_add_output(s, "v",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              -1, false, 0, NULL));
    TS_REJECTS(s, "base -1 is out of range; expected another output");
    wb_spec_free(s);

    /* Its own base: in range, but not another output. */
    s = ts_small("f");
    WBT_OK(wb_spec_add_output(s, "v",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              1, false, 0, NULL));
    TS_REJECTS(s, "output 1 'v': alias-of-intermediate-base-is-user-output "
                  "base 1 is out of range; expected another output");
    wb_spec_free(s);
}

Test(spec, rejects_base_is_user_output_pointing_at_an_aliased_output)
{
    static const struct {
        wb_alias kind;
        int base;
        const char *name;
    } bases[] = {
        {WB_OUT_IS_INPUT, 0, "is-input"},
        {WB_OUT_ALIAS_OF_INPUT, 0, "alias-of-input"},
        {WB_OUT_ALIAS_OF_INTERMEDIATE, 0, "alias-of-intermediate"},
        {WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 0,
         "alias-of-intermediate-save-as-output"},
        {WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 2,
         "alias-of-intermediate-base-is-user-output"},
    };
    char needle[300];
    for (size_t c = 0; c < sizeof bases / sizeof *bases; c++) {
        wb_spec *s = NULL;
        WBT_OK(wb_spec_new("f", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_intermediate_bases(s, 1));
        /* Output 0 is the aliased one; output 1 points at it; output 2 is
           a plain output the last case's output 0 can point at. */
        WBT_OK(wb_spec_add_output(s, "a", bases[c].kind, bases[c].base, false,
                                  0, NULL));
        WBT_OK(wb_spec_add_output(s, "v",
                                  WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                                  0, false, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "p", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        if (bases[c].kind != WB_OUT_ALIAS_OF_INTERMEDIATE &&
            bases[c].kind != WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT)
            WBT_OK(wb_spec_add_output(s, "b", WB_OUT_ALIAS_OF_INTERMEDIATE, 0,
                                      false, 0, NULL));
        snprintf(needle, sizeof needle, "output 1 'v': "
                 "alias-of-intermediate-base-is-user-output base 0 is itself "
                 "%s; expected a non-aliased output", bases[c].name);
        TS_REJECTS(s, needle);
        wb_spec_free(s);
    }
}

Test(spec, base_is_user_output_may_point_at_any_plain_output)
{
    static const wb_alias plain[] = {WB_OUT_NON_ALIAS,
                                     WB_OUT_UNSAFE_VIEW_ALIAS,
                                     WB_OUT_CUSTOM_FUNCTION_VIEW};
    for (int k = 0; k < 3; k++) {
        wb_spec *s = NULL;
        WBT_OK(wb_spec_new("f", &s));
        WBT_OK(wb_spec_add_output(s, "a", plain[k], -1, true, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "v",
                                  WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                                  0, false, 0, NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_values(s), 2);
        wb_spec_free(s);
    }
}

Test(spec, rejects_a_base_for_a_non_aliased_output)
{
    static const struct {
        wb_alias kind;
        int base;
        const char *needle;
    } cases[] = {
        {WB_OUT_NON_ALIAS, 0,
         "output 1 'o': non-alias output has base 0; expected -1"},
        {WB_OUT_UNSAFE_VIEW_ALIAS, 3,
         "output 1 'o': unsafe-view-alias output has base 3; expected -1"},
        {WB_OUT_CUSTOM_FUNCTION_VIEW, -2,
         "output 1 'o': custom-function-view output has base -2; expected -1"},
    };
    for (int c = 0; c < 3; c++) {
        wb_spec *s = ts_small("f");
        WBT_OK(wb_spec_add_output(s, "o", cases[c].kind, cases[c].base, false,
                                  0, NULL));
        TS_REJECTS(s, cases[c].needle);
        wb_spec_free(s);
    }
}

Test(spec, rejects_is_input_with_requires_grad)
{
    wb_spec *s = ts_small("f");
    WBT_OK(wb_spec_add_output(s, "same", WB_OUT_IS_INPUT, 0, true, 0, NULL));
    TS_REJECTS(s, "output 1 'same': is-input returns the caller's own "
                  "tensor, whose requires-grad it cannot set");
    wb_spec_free(s);

    /* Without requires-grad it is fine, and a view of an input may ask. */
    s = ts_small("f");
    WBT_OK(wb_spec_add_output(s, "same", WB_OUT_IS_INPUT, 0, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "view", WB_OUT_ALIAS_OF_INPUT, 0, true, 0,
                              NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 3);
    wb_spec_free(s);
}

Test(spec, rejects_an_intermediate_base_no_output_references)
{
    /* Two bases, only base 0 used. */
    wb_spec *s = ts_small("f");
    WBT_OK(wb_spec_set_intermediate_bases(s, 2));
    WBT_OK(wb_spec_add_output(s, "h", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, false,
                              0, NULL));
    TS_REJECTS(s, "spec 'f': intermediate base 1 is not the base of any "
                  "output; 2 bases declared, more than the outputs reference");
    wb_spec_free(s);

    /* A base and no output at all. */
    WBT_OK(wb_spec_new("f", &s));
    WBT_OK(wb_spec_set_intermediate_bases(s, 1));
    TS_REJECTS(s, "intermediate base 0 is not the base of any output; 1 "
                  "base declared");
    wb_spec_free(s);

    /* A base-is-user-output alias refers to an output, not to base 0. */
    s = ts_small("f");
    WBT_OK(wb_spec_set_intermediate_bases(s, 1));
    WBT_OK(wb_spec_add_output(s, "v",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              0, false, 0, NULL));
    TS_REJECTS(s, "intermediate base 0 is not the base of any output");
    wb_spec_free(s);

    /* Bases 0 and 2 used, base 1 skipped. */
    s = ts_small("f");
    WBT_OK(wb_spec_set_intermediate_bases(s, 3));
    WBT_OK(wb_spec_add_output(s, "h0", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, false,
                              0, NULL));
    WBT_OK(wb_spec_add_output(s, "h2",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 2,
                              false, 0, NULL));
    TS_REJECTS(s, "intermediate base 1 is not the base of any output; 3 "
                  "bases declared");
    /* Using it makes the spec valid. */
    WBT_OK(wb_spec_add_output(s, "h1", WB_OUT_ALIAS_OF_INTERMEDIATE, 1, false,
                              0, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 0 + 4 + 3);
    wb_spec_free(s);
}

/* ---- validation: inputs ----------------------------------------------- */

Test(spec, rejects_hidden_without_a_data_or_in_graph_mutation)
{
    static const wb_mutation muts[] = {WB_MUT_NONE, WB_MUT_METADATA,
                                       WB_MUT_DATA_METADATA, WB_MUT_STORAGE,
                                       WB_MUT_RESIZE};
    static const char *const names[] = {"none", "metadata", "data+metadata",
                                        "storage", "resize"};
    char needle[200];
    for (int k = 0; k < 5; k++) {
        wb_spec *s = ts_small("f");
        /* keep-input-mutations on, so that only the hidden rule can fire. */
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_add_tensor(s, "z", muts[k], WB_INPUT_HIDDEN, NULL));
        snprintf(needle, sizeof needle, "spec 'f': input 1 'z': hidden from "
                 "autograd, but its mutation is %s, not data or in-graph",
                 names[k]);
        TS_REJECTS(s, needle);
        wb_spec_free(s);
    }
    wb_spec *s = ts_small("f");
    WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN, NULL));
    WBT_OK(wb_spec_add_tensor(s, "d", WB_MUT_DATA, WB_INPUT_HIDDEN, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_updated(s), 1);
    wb_spec_free(s);
}

Test(spec, rejects_in_graph_without_keep_input_mutations)
{
    static const unsigned flags[] = {0, WB_INPUT_HIDDEN};
    for (int k = 0; k < 2; k++) {
        wb_spec *s = ts_small("f");
        WBT_OK(wb_spec_add_tensor(s, "rm", WB_MUT_IN_GRAPH, flags[k], NULL));
        TS_REJECTS(s, "spec 'f': input 1 'rm': an in-graph mutation needs "
                      "keep-input-mutations on");
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_direction(s, 1), WB_DIR_INOUT);
        wb_spec_free(s);
    }
}

Test(spec, rejects_detach_without_training)
{
    wb_spec *s = ts_small("f");
    WBT_OK(wb_spec_add_tensor(s, "p", WB_MUT_NONE, WB_INPUT_DETACH, NULL));
    TS_REJECTS(s, "spec 'f': input 1 'p': detached before the call, but the "
                  "spec is for inference");
    WBT_OK(wb_spec_set_training(s, true));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_direction(s, 1), WB_DIR_IN);
    /* Back to inference: invalid again. */
    WBT_OK(wb_spec_set_training(s, false));
    TS_REJECTS(s, "detached before the call");
    wb_spec_free(s);
}

Test(spec, rejects_out_without_a_mutation)
{
    wb_spec *s = ts_small("f");
    WBT_OK(wb_spec_add_tensor(s, "out", WB_MUT_NONE, WB_INPUT_OUT, NULL));
    TS_REJECTS(s, "spec 'f': input 1 'out': an out argument must be mutated");
    wb_spec_free(s);
}

Test(spec, reports_the_first_bad_input_before_any_output)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("f", &s));
    WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_tensor(s, "b", WB_MUT_NONE, WB_INPUT_OUT, NULL));
    WBT_OK(wb_spec_add_tensor(s, "c", WB_MUT_NONE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, 4, false, 0, NULL));
    TS_REJECTS(s, "input 2 'b': an out argument must be mutated");
    wb_spec_free(s);
}

/* ---- limits and argument checks --------------------------------------- */

Test(spec, limit_on_inputs)
{
    wb_spec *s = NULL;
    char name[16];
    int idx = -1;
    WBT_OK(wb_spec_new("wide", &s));
    for (int i = 0; i < WB_MAX_INPUTS; i++) {
        snprintf(name, sizeof name, "x%d", i);
        if (i % 2)
            WBT_OK(wb_spec_add_tensor(s, name, WB_MUT_DATA, 0, &idx));
        else
            WBT_OK(wb_spec_add_scalar(s, name, WB_SCALAR_INT, &idx));
        cr_assert_eq(idx, i);
    }
    WBT_FAILS(wb_spec_add_tensor(s, "one_more", WB_MUT_NONE, 0, &idx),
              WB_ERR_SPEC, "more than 1024 inputs");
    WBT_FAILS(wb_spec_add_scalar(s, "one_more", WB_SCALAR_INT, &idx),
              WB_ERR_SPEC, "more than 1024 inputs");
    cr_assert_eq(idx, WB_MAX_INPUTS - 1, "a failed add wrote its index");
    cr_assert_eq(wb_spec_num_inputs(s), WB_MAX_INPUTS);
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_updated(s), WB_MAX_INPUTS / 2);
    cr_assert_eq(wb_spec_direction(s, WB_MAX_INPUTS - 1), WB_DIR_INOUT);
    cr_assert_eq(strncmp(wb_spec_signature(s), "(INOUT x1, INOUT x3, ", 21),
                 0, "signature '%.40s...'", wb_spec_signature(s));
    wb_spec_free(s);
}

Test(spec, limit_on_outputs)
{
    wb_spec *s = NULL;
    int idx = -1;
    WBT_OK(wb_spec_new("tall", &s));
    for (int k = 0; k < WB_MAX_OUTPUTS; k++)
        WBT_OK(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, false, 0,
                                  &idx));
    cr_assert_eq(idx, WB_MAX_OUTPUTS - 1);
    WBT_FAILS(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, false, 0,
                                 &idx),
              WB_ERR_SPEC, "more than 1024 outputs");
    cr_assert_eq(idx, WB_MAX_OUTPUTS - 1);
    cr_assert_eq(wb_spec_num_outputs(s), WB_MAX_OUTPUTS);
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), WB_MAX_OUTPUTS);
    wb_spec_free(s);
}

Test(spec, limit_on_names)
{
    char longest[WB_MAX_NAME + 1], too_long[WB_MAX_NAME + 2];
    memset(longest, 'n', WB_MAX_NAME);
    longest[WB_MAX_NAME] = '\0';
    memset(too_long, 'n', WB_MAX_NAME + 1);
    too_long[WB_MAX_NAME + 1] = '\0';
    const char *needle = "name of 257 bytes is longer than WB_MAX_NAME (256)";

    static char canary;
    wb_spec *s = (wb_spec *)(void *)&canary;
    WBT_FAILS(wb_spec_new(too_long, &s), WB_ERR_SPEC, needle);
    cr_assert_eq((void *)s, (void *)&canary, "a failed new wrote its output");
    WBT_OK(wb_spec_new(longest, &s));
    cr_assert_str_eq(wb_spec_name(s), longest);

    int idx = -5;
    WBT_FAILS(wb_spec_add_tensor(s, too_long, WB_MUT_NONE, 0, &idx),
              WB_ERR_SPEC, needle);
    WBT_FAILS(wb_spec_add_scalar(s, too_long, WB_SCALAR_BOOL, &idx),
              WB_ERR_SPEC, needle);
    WBT_FAILS(wb_spec_add_output(s, too_long, WB_OUT_NON_ALIAS, -1, false, 0,
                                 &idx),
              WB_ERR_SPEC, needle);
    cr_assert_eq(idx, -5, "a failed add wrote its index");
    cr_assert_eq(wb_spec_num_inputs(s), 0);
    cr_assert_eq(wb_spec_num_outputs(s), 0);

    WBT_OK(wb_spec_add_tensor(s, longest, WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_scalar(s, longest, WB_SCALAR_BOOL, NULL));
    WBT_OK(wb_spec_add_output(s, longest, WB_OUT_NON_ALIAS, -1, false, 0,
                              NULL));
    WBT_OK(wb_spec_validate(s));
    char want[WB_MAX_NAME + 8];
    snprintf(want, sizeof want, "(IN %s)", longest);
    cr_assert_str_eq(wb_spec_signature(s), want);
    wb_spec_free(s);
}

Test(spec, signature_of_the_longest_names_everywhere)
{
    /* The signature's buffer must hold the longest direction and name for
       every input; build the expected text independently and compare. */
    static const wb_mutation muts[] = {WB_MUT_DATA, WB_MUT_NONE, WB_MUT_DATA};
    static const unsigned flags[] = {0, 0, WB_INPUT_OUT};
    static const char *const dirs[] = {"INOUT", "IN", "OUT"};
    char name[WB_MAX_NAME + 1];
    size_t cap = (size_t)WB_MAX_INPUTS * (WB_MAX_NAME + 8) + 3, n = 0;
    char *want = malloc(cap);
    cr_assert(want);
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("long", &s));
    want[n++] = '(';
    for (int i = 0; i < WB_MAX_INPUTS; i++) {
        memset(name, 'a' + i % 26, WB_MAX_NAME);
        name[WB_MAX_NAME] = '\0';
        WBT_OK(wb_spec_add_tensor(s, name, muts[i % 3], flags[i % 3], NULL));
        n += (size_t)snprintf(want + n, cap - n, "%s%s %s", i ? ", " : "",
                              dirs[i % 3], name);
    }
    snprintf(want + n, cap - n, ")");
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(strlen(wb_spec_signature(s)), strlen(want));
    cr_assert(strcmp(wb_spec_signature(s), want) == 0,
              "the signature differs");
    free(want);
    wb_spec_free(s);
}

Test(spec, limit_on_guards)
{
    wb_spec *s = ts_small("f");
    for (int g = 0; g < WB_MAX_GUARDS; g++)
        WBT_OK(wb_spec_add_guard(s, ts_hook, ts_leave, NULL));
    WBT_FAILS(wb_spec_add_guard(s, ts_hook, ts_leave, NULL), WB_ERR_SPEC,
              "more than 16 guards");
    WBT_FAILS(wb_spec_add_guard(s, NULL, ts_leave, NULL), WB_ERR_INVALID,
              "NULL spec, enter or leave");
    WBT_FAILS(wb_spec_add_guard(s, ts_hook, NULL, NULL), WB_ERR_INVALID,
              "NULL spec, enter or leave");
    cr_assert_eq(s->nguards, WB_MAX_GUARDS);
    WBT_OK(wb_spec_validate(s));
    wb_spec_free(s);
}

Test(spec, rejects_bad_enum_values)
{
    wb_spec *s = ts_small("f");
    int idx = -5;
    WBT_FAILS(wb_spec_add_tensor(s, "t", (wb_mutation)7, 0, &idx),
              WB_ERR_SPEC, "input 1: unknown mutation kind 7");
    WBT_FAILS(wb_spec_add_tensor(s, "t", (wb_mutation)-1, 0, &idx),
              WB_ERR_SPEC, "input 1: unknown mutation kind -1");
    WBT_FAILS(wb_spec_add_tensor(s, "t", WB_MUT_NONE, 0x10, &idx),
              WB_ERR_SPEC, "input 1: unknown flags 0x10");
    WBT_FAILS(wb_spec_add_tensor(s, "t", WB_MUT_NONE,
                                 WB_INPUT_OUT | 0x100u, &idx),
              WB_ERR_SPEC, "unknown flags 0x104");
    WBT_FAILS(wb_spec_add_scalar(s, "n", (wb_scalar_type)0, &idx),
              WB_ERR_SPEC, "input 1: unknown scalar type 0");
    WBT_FAILS(wb_spec_add_scalar(s, "n", (wb_scalar_type)5, &idx),
              WB_ERR_SPEC, "input 1: unknown scalar type 5");
    WBT_FAILS(wb_spec_add_output(s, "o", (wb_alias)8, -1, false, 0, &idx),
              WB_ERR_SPEC, "output 1: unknown alias kind 8");
    WBT_FAILS(wb_spec_add_output(s, "o", (wb_alias)-1, -1, false, 0, &idx),
              WB_ERR_SPEC, "output 1: unknown alias kind -1");
    WBT_FAILS(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, false,
                                 1ull << WB_MAX_DIMS, &idx),
              WB_ERR_SPEC, "output 1: dynamic dims 0x10000 name a dim past 15");
    WBT_FAILS(wb_spec_set_grad_mode_at_end(s, 2), WB_ERR_SPEC,
              "grad mode at end 2 is not -1, 0 or 1");
    WBT_FAILS(wb_spec_set_grad_mode_at_end(s, -2), WB_ERR_SPEC,
              "grad mode at end -2 is not -1, 0 or 1");
    WBT_FAILS(wb_spec_set_intermediate_bases(s, -1), WB_ERR_SPEC,
              "-1 intermediate bases is outside 0..1024");
    WBT_FAILS(wb_spec_set_intermediate_bases(s, WB_MAX_BASES + 1),
              WB_ERR_SPEC, "1025 intermediate bases is outside 0..1024");
    /* Nothing was added or changed by the refusals. */
    cr_assert_eq(idx, -5);
    cr_assert_eq(wb_spec_num_inputs(s), 1);
    cr_assert_eq(wb_spec_num_outputs(s), 1);
    cr_assert_eq(s->grad_at_end, -1);
    cr_assert_eq(s->nbases, 0);
    /* The extremes of the ranges are accepted. */
    for (int mode = -1; mode <= 1; mode++) {
        WBT_OK(wb_spec_set_grad_mode_at_end(s, mode));
        cr_assert_eq(s->grad_at_end, mode);
    }
    WBT_OK(wb_spec_set_intermediate_bases(s, WB_MAX_BASES));
    cr_assert_eq(s->nbases, WB_MAX_BASES);
    WBT_OK(wb_spec_add_tensor(s, "t", WB_MUT_IN_GRAPH,
                              WB_INPUT_DETACH | WB_INPUT_HIDDEN | WB_INPUT_OUT,
                              NULL));
    wb_spec_free(s);
}

Test(spec, null_arguments)
{
    wb_spec *s = ts_small("f");
    WBT_FAILS(wb_spec_new("f", NULL), WB_ERR_INVALID, "out is NULL");
    WBT_FAILS(wb_spec_add_tensor(NULL, "t", WB_MUT_NONE, 0, NULL),
              WB_ERR_INVALID, "wb_spec_add_tensor: spec is NULL");
    WBT_FAILS(wb_spec_add_scalar(NULL, "n", WB_SCALAR_INT, NULL),
              WB_ERR_INVALID, "wb_spec_add_scalar: spec is NULL");
    WBT_FAILS(wb_spec_add_output(NULL, "o", WB_OUT_NON_ALIAS, -1, false, 0,
                                 NULL),
              WB_ERR_INVALID, "wb_spec_add_output: spec is NULL");
    WBT_FAILS(wb_spec_set_intermediate_bases(NULL, 0), WB_ERR_INVALID,
              "spec is NULL");
    WBT_FAILS(wb_spec_set_training(NULL, true), WB_ERR_INVALID,
              "wb_spec_set_training: spec is NULL");
    WBT_FAILS(wb_spec_set_keep_input_mutations(NULL, true), WB_ERR_INVALID,
              "wb_spec_set_keep_input_mutations: spec is NULL");
    WBT_FAILS(wb_spec_set_grad_mode_at_end(NULL, 0), WB_ERR_INVALID,
              "spec is NULL");
    WBT_FAILS(wb_spec_set_before_call(NULL, ts_hook, NULL), WB_ERR_INVALID,
              "spec is NULL");
    WBT_FAILS(wb_spec_set_first_call(NULL, ts_hook, NULL), WB_ERR_INVALID,
              "spec is NULL");
    WBT_FAILS(wb_spec_add_guard(NULL, ts_hook, ts_leave, NULL),
              WB_ERR_INVALID, "NULL spec");
    WBT_FAILS(wb_spec_declare_input(NULL, 0, WBT_F32, 1), WB_ERR_INVALID,
              "no input 0");
    WBT_FAILS(wb_spec_validate(NULL), WB_ERR_INVALID, "spec is NULL");
    WBT_FAILS(wb_spec_clone(NULL, &s), WB_ERR_INVALID, "NULL argument");
    WBT_FAILS(wb_spec_clone(s, NULL), WB_ERR_INVALID, "NULL argument");
    /* NULL item names are empty names. */
    WBT_OK(wb_spec_add_tensor(s, NULL, WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_str_eq(wb_spec_signature(s), "(IN x, IN )");
    wb_spec_free(s);
}

Test(spec, declare_input)
{
    wb_spec *s = ts_small("f");
    DLDataType any = {0, 0, 0}, nibble = {kDLInt, 4, 1}, nolanes = {kDLUInt, 8, 0};
    WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_NONE, 0, NULL));

    WBT_FAILS(wb_spec_declare_input(s, -1, WBT_F32, 1), WB_ERR_INVALID,
              "wb_spec_declare_input: no input -1");
    WBT_FAILS(wb_spec_declare_input(s, 3, WBT_F32, 1), WB_ERR_INVALID,
              "wb_spec_declare_input: no input 3");
    WBT_FAILS(wb_spec_declare_input(s, 1, WBT_F32, 1), WB_ERR_SPEC,
              "input 1: a scalar has no dtype or ndim to declare");
    WBT_FAILS(wb_spec_declare_input(s, 0, nibble, 1), WB_ERR_SPEC,
              "input 0: dtype int4 is not byte-addressable");
    WBT_FAILS(wb_spec_declare_input(s, 0, nolanes, 1), WB_ERR_SPEC,
              "is not byte-addressable");
    WBT_FAILS(wb_spec_declare_input(s, 0, WBT_F32, -2), WB_ERR_SPEC,
              "input 0: ndim -2 is outside -1..16");
    WBT_FAILS(wb_spec_declare_input(s, 0, WBT_F32, WB_MAX_DIMS + 1),
              WB_ERR_SPEC, "input 0: ndim 17 is outside -1..16");
    /* The refusals recorded nothing. */
    cr_assert_eq(s->inputs[0].dtype.bits, 0);
    cr_assert_eq(s->inputs[0].ndim, -1);

    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(s->ndeclared, 0);
    WBT_OK(wb_spec_declare_input(s, 0, WBT_F32, WB_MAX_DIMS));
    ts_assert_unvalidated(s);
    WBT_OK(wb_spec_declare_input(s, 2, any, 0));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(s->inputs[0].dtype.code, kDLFloat);
    cr_assert_eq(s->inputs[0].dtype.bits, 32);
    cr_assert_eq(s->inputs[0].ndim, WB_MAX_DIMS);
    cr_assert_eq(s->inputs[2].ndim, 0);
    cr_assert_eq(s->ndeclared, 2);
    cr_assert_eq(s->declared[0], 0);
    cr_assert_eq(s->declared[1], 2);
    /* Declaring "anything" again takes the declaration back. */
    WBT_OK(wb_spec_declare_input(s, 2, any, -1));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(s->ndeclared, 1);
    wb_spec_free(s);
}

/* ---- invalidation, revalidation, clones ------------------------------- */

Test(spec, a_change_after_validation_needs_validating_again)
{
    wb_spec *s = ts_small("f");
    DLDataType f32 = WBT_F32;
#define TS_CHANGES(call)                                                     \
    do {                                                                     \
        WBT_OK(wb_spec_validate(s));                                         \
        cr_assert_neq(wb_spec_num_values(s), -1);                            \
        WBT_OK(call);                                                        \
        ts_assert_unvalidated(s);                                            \
    } while (0)
    TS_CHANGES(wb_spec_add_tensor(s, "t", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_str_eq(wb_spec_signature(s), "(IN x, INOUT t)");
    cr_assert_eq(wb_spec_num_values(s), 2);
    TS_CHANGES(wb_spec_add_scalar(s, "n", WB_SCALAR_FLOAT, NULL));
    TS_CHANGES(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 0, false, 0,
                                  NULL));
    TS_CHANGES(wb_spec_declare_input(s, 0, f32, 2));
    TS_CHANGES(wb_spec_set_intermediate_bases(s, 0));
    TS_CHANGES(wb_spec_set_training(s, true));
    TS_CHANGES(wb_spec_set_keep_input_mutations(s, true));
    TS_CHANGES(wb_spec_set_grad_mode_at_end(s, 0));
    TS_CHANGES(wb_spec_set_before_call(s, ts_hook, NULL));
    TS_CHANGES(wb_spec_set_first_call(s, ts_hook, NULL));
    TS_CHANGES(wb_spec_add_guard(s, ts_hook, ts_leave, NULL));
#undef TS_CHANGES
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 1 + 2 + 0);
    cr_assert_str_eq(wb_spec_signature(s), "(IN x, INOUT t)");

    /* A change that breaks the spec is caught by the next validation. */
    WBT_OK(wb_spec_set_intermediate_bases(s, 1));
    TS_REJECTS(s, "intermediate base 0 is not the base of any output");
    /* And fixing it brings the facts back. */
    WBT_OK(wb_spec_add_output(s, "h", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, false,
                              0, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 1 + 3 + 1);
    cr_assert_eq(wb_spec_num_updated(s), 1);
    wb_spec_free(s);
}

/* The golden training spec's shape: every kind of input, output and
   setting at once. */
static wb_spec *ts_everything(void)
{
    static int ud_a, ud_b, ud_c;
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("train_step", &s));
    WBT_OK(wb_spec_set_training(s, true));
    WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    WBT_OK(wb_spec_set_grad_mode_at_end(s, 1));
    WBT_OK(wb_spec_set_intermediate_bases(s, 1));
    WBT_OK(wb_spec_set_before_call(s, ts_hook, &ud_a));
    WBT_OK(wb_spec_set_first_call(s, ts_hook2, &ud_b));
    WBT_OK(wb_spec_add_guard(s, ts_hook, ts_leave, &ud_c));
    WBT_OK(wb_spec_add_guard(s, ts_hook2, ts_leave, &ud_a));
    WBT_OK(wb_spec_add_tensor(s, "params", WB_MUT_NONE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_add_tensor(s, "running_mean", WB_MUT_IN_GRAPH, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "step", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN,
                              NULL));
    WBT_OK(wb_spec_add_tensor(s, "buf", WB_MUT_STORAGE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "kv", WB_MUT_RESIZE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_add_tensor(s, "shape", WB_MUT_METADATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "out", WB_MUT_DATA_METADATA, WB_INPUT_OUT,
                              NULL));
    WBT_OK(wb_spec_add_scalar(s, "lr", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "flag", WB_SCALAR_BOOL, NULL));
    WBT_OK(wb_spec_declare_input(s, 3, WBT_F64, 2));
    WBT_OK(wb_spec_declare_input(s, 4, (DLDataType){0, 0, 0}, 3));
    WBT_OK(wb_spec_add_output(s, "loss", WB_OUT_NON_ALIAS, -1, true, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "h", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, true,
                              0x3, NULL));
    WBT_OK(wb_spec_add_output(s, "h2",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 0,
                              false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "loss_view",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              0, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "buf_view", WB_OUT_ALIAS_OF_INPUT, 3, false,
                              0, NULL));
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_IS_INPUT, 6, false,
                              UINT64_C(0x8001), NULL));
    WBT_OK(wb_spec_add_output(s, "unsafe", WB_OUT_UNSAFE_VIEW_ALIAS, -1, false,
                              0, NULL));
    return s;
}

/* Asserts that b holds everything a holds, in storage of its own. */
/* A clone: the same items, each name a copy of its own, the same hooks. */
static void ts_assert_same_spec(const wb_spec *a, const wb_spec *b)
{
    wbt_assert_same_items(a, b);
    cr_assert_neq(a->name, b->name, "the name is shared, not copied");
    for (int i = 0; i < a->ninputs; i++)
        cr_assert_neq(a->inputs[i].name, b->inputs[i].name,
                      "input %d's name is shared", i);
    for (int k = 0; k < a->noutputs; k++)
        cr_assert_neq(a->outputs[k].name, b->outputs[k].name,
                      "output %d's name is shared", k);
    cr_assert_eq(a->before_call, b->before_call);
    cr_assert_eq(a->before_call_ud, b->before_call_ud);
    cr_assert_eq(a->first_call, b->first_call);
    cr_assert_eq(a->first_call_ud, b->first_call_ud);
    cr_assert_eq(a->nguards, b->nguards);
    for (int g = 0; g < a->nguards; g++) {
        cr_assert_eq(a->guards[g].enter, b->guards[g].enter, "guard %d", g);
        cr_assert_eq(a->guards[g].leave, b->guards[g].leave, "guard %d", g);
        cr_assert_eq(a->guards[g].ud, b->guards[g].ud, "guard %d", g);
    }
}

Test(spec, clone_copies_everything)
{
    wb_spec *s = ts_everything(), *c = NULL;
    WBT_OK(wb_spec_validate(s));
    WBT_OK(wb_spec_clone(s, &c));
    cr_assert_neq(c, s);
    ts_assert_same_spec(s, c);
    /* A clone needs validating, and then has the same facts. */
    ts_assert_unvalidated(c);
    WBT_OK(wb_spec_validate(c));
    cr_assert_eq(wb_spec_num_values(c), wb_spec_num_values(s));
    cr_assert_eq(wb_spec_num_updated(c), wb_spec_num_updated(s));
    cr_assert_eq(wb_spec_num_values(c), 4 + 7 + 1);
    cr_assert_str_eq(wb_spec_signature(c), wb_spec_signature(s));
    cr_assert_str_eq(wb_spec_signature(c),
                     "(IN params, INOUT running_mean, INOUT step, INOUT buf, "
                     "INOUT kv, INOUT shape, OUT out)");
    for (int i = 0; i < wb_spec_num_inputs(s); i++) {
        cr_assert_eq(wb_spec_direction(c, i), wb_spec_direction(s, i));
        cr_assert_str_eq(wb_spec_c_type(c, i), wb_spec_c_type(s, i));
    }
    /* The clone is independent: the original can change or go. */
    WBT_OK(wb_spec_add_tensor(s, "extra", WB_MUT_NONE, 0, NULL));
    cr_assert_eq(wb_spec_num_inputs(c), 9);
    cr_assert_neq(wb_spec_num_values(c), -1, "changing the original "
                  "invalidated the clone");
    wb_spec_free(s);
    cr_assert_str_eq(wb_spec_name(c), "train_step");
    cr_assert_str_eq(c->inputs[8].name, "flag");
    cr_assert_str_eq(c->outputs[6].name, "unsafe");
    WBT_OK(wb_spec_add_scalar(c, "more", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_validate(c));
    wb_spec_free(c);
}

Test(spec, clone_of_an_invalid_or_unvalidated_spec)
{
    wb_spec *s = ts_small("bad"), *c = NULL;
    WBT_OK(wb_spec_add_tensor(s, "o", WB_MUT_NONE, WB_INPUT_OUT, NULL));
    WBT_OK(wb_spec_clone(s, &c));
    ts_assert_same_spec(s, c);
    TS_REJECTS(c, "spec 'bad': input 1 'o': an out argument must be mutated");
    wb_spec_free(c);
    wb_spec_free(s);

    /* A full-width spec clones without tripping the limits. */
    WBT_OK(wb_spec_new("wide", &s));
    for (int i = 0; i < WB_MAX_INPUTS; i++)
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    for (int k = 0; k < WB_MAX_OUTPUTS; k++)
        WBT_OK(wb_spec_add_output(s, "y", WB_OUT_ALIAS_OF_INPUT, k, false, 0,
                                  NULL));
    WBT_OK(wb_spec_clone(s, &c));
    ts_assert_same_spec(s, c);
    WBT_OK(wb_spec_validate(c));
    cr_assert_eq(wb_spec_num_values(c), WB_MAX_OUTPUTS);
    wb_spec_free(c);
    wb_spec_free(s);
}

/* ---- hostile names ---------------------------------------------------- */

Test(spec, safe_name_escapes_and_truncates)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"plain name_1.2-x", "plain name_1.2-x"},
        {"a*/b", "a\\x2a\\x2fb"},
        {"/*", "\\x2f\\x2a"},
        {"?\\", "\\x3f\\x5c"},
        {"line\nbreak\ttab", "line\\x0abreak\\x09tab"},
        {"\x01\x1f\x7f\x80\xfe\xff", "\\x01\\x1f\\x7f\\x80\\xfe\\xff"},
        {"caf\xc3\xa9", "caf\\xc3\\xa9"},
        {"~'\"", "~'\""},
        {"", ""},
    };
    char buf[300];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        wb_spec_safe_name(cases[c].in, buf, sizeof buf);
        cr_assert_str_eq(buf, cases[c].out, "case %zu", c);
    }
    wb_spec_safe_name(NULL, buf, sizeof buf);
    cr_assert_str_eq(buf, "");

    /* At most 64 bytes of the name, then an ellipsis. */
    char name[200], want[80];
    memset(name, 'q', 199);
    name[199] = '\0';
    memset(want, 'q', 64);
    strcpy(want + 64, "...");
    wb_spec_safe_name(name, buf, sizeof buf);
    cr_assert_str_eq(buf, want);
    name[64] = '\0';
    wb_spec_safe_name(name, buf, sizeof buf);
    want[64] = '\0';
    cr_assert_str_eq(buf, want, "a name of exactly 64 bytes was cut");
    /* 64 escaped bytes fit a 300-byte buffer whole. */
    memset(name, '\xff', 70);
    name[70] = '\0';
    wb_spec_safe_name(name, buf, sizeof buf);
    cr_assert_eq(strlen(buf), 64 * 4 + 3);
    cr_assert_str_eq(buf + 64 * 4, "...");

    /* A small buffer gets a NUL-terminated prefix of the escaped form. */
    char full[300];
    wb_spec_safe_name("ab*/cd\xff" "ef", full, sizeof full);
    for (size_t n = 1; n <= 12; n++) {
        char small[16];
        memset(small, '#', sizeof small);
        wb_spec_safe_name("ab*/cd\xff" "ef", small, n);
        size_t len = strnlen(small, n);
        cr_assert_lt(len, n, "no NUL within %zu bytes", n);
        cr_assert_eq(strncmp(small, full, len), 0, "n %zu: '%s'", n, small);
        cr_assert_eq(small[n], '#', "wrote past %zu bytes", n);
    }
    /* A zero-size buffer is left alone. */
    char untouched = '#';
    wb_spec_safe_name("abc", &untouched, 0);
    cr_assert_eq(untouched, '#');
}

Test(spec, hostile_names_appear_escaped_in_messages)
{
    const char *spec_name = "evil*/\n\xff?\\end";
    const char *esc_spec = "evil\\x2a/\\x0a\\xff?\\x5cend";
    wb_spec *s = NULL;

    /* An input rule. */
    WBT_OK(wb_spec_new(spec_name, &s));
    WBT_OK(wb_spec_add_tensor(s, "x*/y\n\xfe/*", WB_MUT_METADATA,
                              WB_INPUT_HIDDEN, NULL));
    WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC, esc_spec);
    cr_assert(strstr(wb_last_error(),
                     "input 0 'x\\x2a/y\\x0a\\xfe\\x2f*'"),
              "message '%s'", wb_last_error());
    ts_assert_message_is_tame();
    wb_spec_free(s);

    /* An output rule. */
    WBT_OK(wb_spec_new(spec_name, &s));
    WBT_OK(wb_spec_add_output(s, "o\r*/\x80", WB_OUT_IS_INPUT, 0, false, 0,
                              NULL));
    WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC, esc_spec);
    cr_assert(strstr(wb_last_error(), "output 0 'o\\x0d\\x2a/\\x80'"),
              "message '%s'", wb_last_error());
    ts_assert_message_is_tame();
    wb_spec_free(s);

    /* A spec-level rule names only the spec. */
    WBT_OK(wb_spec_new(spec_name, &s));
    WBT_OK(wb_spec_set_intermediate_bases(s, 1));
    WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC, "spec 'evil\\x2a/");
    ts_assert_message_is_tame();
    wb_spec_free(s);

    /* A long hostile name is cut after 64 bytes in the message. */
    char name[WB_MAX_NAME + 1];
    memset(name, '*', WB_MAX_NAME);
    name[WB_MAX_NAME] = '\0';
    WBT_OK(wb_spec_new(name, &s));
    WBT_OK(wb_spec_add_tensor(s, name, WB_MUT_NONE, WB_INPUT_OUT, NULL));
    WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC, "*...': input 0 '*");
    ts_assert_message_is_tame();
    cr_assert(strlen(wb_last_error()) < 700, "message of %zu bytes",
              strlen(wb_last_error()));
    wb_spec_free(s);
}

/* ---- deduplicated inputs and effect tokens ----------------------------- */

Test(spec, duplicates_follow_the_dedupe_rules)
{
    /* The setter: an earlier input, or -1 to undo. */
    wb_spec *s = ts_small("d");
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_FAILS(wb_spec_set_duplicate(s, 0, 1), WB_ERR_SPEC,
              "input 0: the input it duplicates, 1, is not an earlier one");
    WBT_FAILS(wb_spec_set_duplicate(s, 1, 1), WB_ERR_SPEC, "not an earlier");
    WBT_FAILS(wb_spec_set_duplicate(s, 2, 0), WB_ERR_INVALID, "no input 2");
    WBT_FAILS(wb_spec_set_duplicate(NULL, 0, 0), WB_ERR_INVALID, "no input");
    WBT_OK(wb_spec_set_duplicate(s, 1, 0));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_graph_args(s), 1);
    WBT_OK(wb_spec_set_duplicate(s, 1, -1));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_graph_args(s), 2);
    wb_spec_free(s);

    /* What validation refuses: a duplicate with a mutation or a flag of
       its own, of a duplicate, of or as a scalar or an optional tensor,
       and an output based on a duplicate. */
    static const struct {
        wb_mutation mut;
        unsigned flags;
        const char *needle;
    } own[] = {
        {WB_MUT_DATA, 0, "input 1 'y': a duplicate of input 0 has no "
                         "mutation or flag of its own; give them to input 0"},
        {WB_MUT_NONE, WB_INPUT_OPTIONAL,
         "input 1 'y': duplicates input 0, but an optional tensor may be "
         "NULL"},
    };
    for (size_t k = 0; k < sizeof own / sizeof *own; k++) {
        s = ts_small("d");
        WBT_OK(wb_spec_add_tensor(s, "y", own[k].mut, own[k].flags, NULL));
        WBT_OK(wb_spec_set_duplicate(s, 1, 0));
        TS_REJECTS(s, own[k].needle);
        wb_spec_free(s);
    }
    s = ts_small("d");
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_set_duplicate(s, 1, 0));
    WBT_OK(wb_spec_set_duplicate(s, 2, 1));
    TS_REJECTS(s, "input 2 'z': duplicates input 1, itself a duplicate of "
                  "input 0; expected the kept one");
    wb_spec_free(s);
    s = ts_small("d");
    WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_set_duplicate(s, 1, 0));
    TS_REJECTS(s, "input 1 'n': duplicates input 0, but only tensor inputs "
                  "are deduplicated");
    wb_spec_free(s);
    s = ts_small("d");
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_set_duplicate(s, 1, 0));
    WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 1, false, 0,
                              NULL));
    TS_REJECTS(s, "output 1 'v': alias-of-input base 1 duplicates input 0; "
                  "expected the kept input");
    wb_spec_free(s);
}

Test(spec, effect_tokens_lead_the_arguments_and_values)
{
    wb_spec *s = ts_small("t");
    WBT_FAILS(wb_spec_set_effect_tokens(s, -1), WB_ERR_SPEC,
              "-1 effect tokens is outside 0..16");
    WBT_FAILS(wb_spec_set_effect_tokens(s, WB_MAX_TOKENS + 1), WB_ERR_SPEC,
              "17 effect tokens is outside 0..16");
    WBT_FAILS(wb_spec_set_effect_tokens(NULL, 1), WB_ERR_INVALID,
              "spec is NULL");
    WBT_OK(wb_spec_set_effect_tokens(s, 3));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_graph_args(s), 3 + 1);
    cr_assert_eq(wb_spec_num_values(s), 3 + 1);
    /* A clone keeps them. */
    wb_spec *c = NULL;
    WBT_OK(wb_spec_clone(s, &c));
    WBT_OK(wb_spec_validate(c));
    cr_assert_eq(wb_spec_num_graph_args(c), 4);
    wb_spec_free(c);
    wb_spec_free(s);
}

/* Outputs that are numbers (a SymInt, a float, a bool) or None: values of
   the graph in their place among the outputs, passed through; no base,
   no flags, no output's base. */
Test(spec, outputs_that_are_numbers)
{
    wb_spec *s = NULL, *c = NULL;
    int k = -1;
    WBT_OK(wb_spec_new("sizes", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "y", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    WBT_OK(wb_spec_add_scalar_output(s, "n", WB_SCALAR_INT, &k));
    cr_assert_eq(k, 1);
    WBT_OK(wb_spec_add_scalar_output(s, "m", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_add_scalar_output(s, "ok", WB_SCALAR_BOOL, NULL));
    WBT_OK(wb_spec_add_scalar_output(s, "none", WB_SCALAR_NONE, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_outputs(s), 5);
    cr_assert_eq(wb_spec_num_values(s), 1 + 5, "numbers are values too");
    cr_assert_eq(s->nscalar_outs, 4);
    cr_assert(wb_spec_value_is_tensor(s, 0) && wb_spec_value_is_tensor(s, 1));
    for (int v = 2; v < 6; v++)
        cr_assert(!wb_spec_value_is_tensor(s, v), "value %d", v);
    cr_assert_eq(s->outs[1].scalar, WB_SCALAR_INT);
    cr_assert_eq(s->outs[4].scalar, WB_SCALAR_NONE);
    cr_assert_eq(s->outs[4].kind, WB_OUT_NON_ALIAS);
    WBT_OK(wb_spec_clone(s, &c));
    ts_assert_same_spec(s, c);
    WBT_OK(wb_spec_validate(c));
    cr_assert_eq(c->nscalar_outs, 4);
    wb_spec_free(c);

    /* What is not a number an output can be. */
    static const int bad[] = {0, WB_SCALAR_OPAQUE, 99, -1};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        WBT_FAILS(wb_spec_add_scalar_output(s, "q", (wb_scalar_type)bad[i],
                                            NULL),
                  WB_ERR_SPEC, "is not an output's (int, float, bool or "
                  "None)");
    cr_assert_eq(wb_spec_num_outputs(s), 5, "a refused output was added");
    WBT_FAILS(wb_spec_add_scalar_output(NULL, "q", WB_SCALAR_INT, NULL),
              WB_ERR_INVALID, "spec is NULL");
    /* None is an output's alone. */
    WBT_FAILS(wb_spec_add_scalar(s, "q", WB_SCALAR_NONE, NULL), WB_ERR_SPEC,
              "unknown scalar type 5");
    /* A number is no view's base. */
    WBT_OK(wb_spec_add_output(s, "v",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              1, false, 0, NULL));
    TS_REJECTS(s, "output 5 'v': alias-of-intermediate-base-is-user-output "
                  "base 1 is a number, not a tensor");
    wb_spec_free(s);
}

/* Synthetic bases: inputs tied to an earlier one's storage make one
   group; what a member may be; the graph's arguments and values. */
Test(spec, synthetic_bases_group_members)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("g", &s));
    WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_NONE, 0, NULL));       /* 0 */
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_METADATA, 0, NULL));   /* 1 */
    WBT_OK(wb_spec_add_scalar(s, "k", WB_SCALAR_INT, NULL));        /* 2 */
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA, 0, NULL));       /* 3 */
    WBT_OK(wb_spec_add_tensor(s, "p", WB_MUT_DATA, 0, NULL));       /* 4 */
    WBT_OK(wb_spec_add_tensor(s, "q", WB_MUT_NONE, 0, NULL));       /* 5 */
    WBT_OK(wb_spec_add_tensor(s, "w", WB_MUT_DATA, 0, NULL));       /* 6 */
    WBT_OK(wb_spec_add_tensor(s, "v", WB_MUT_NONE, 0, NULL));       /* 7 */
    WBT_OK(wb_spec_set_synthetic_base(s, 3, 1));
    WBT_OK(wb_spec_set_synthetic_base(s, 7, 3));  /* a chain: x's group */
    WBT_OK(wb_spec_set_synthetic_base(s, 5, 4));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_ALIAS_OF_INPUT, 7, false, 0,
                              NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(s->ngroups, 2);
    cr_assert_eq(s->group_first[0], 1);
    cr_assert_eq(s->group_first[1], 4);
    static const int group[] = {-1, 0, -1, 0, 1, 1, -1, 0};
    /* bases, then a, k, w, then the members x y p q v */
    static const int arg[] = {2, 5, 3, 6, 7, 8, 4, 9};
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(s->group_of[i], group[i], "input %d", i);
        cr_assert_eq(s->arg_at[i], arg[i], "input %d", i);
    }
    cr_assert_eq(wb_spec_num_graph_args(s), 10);
    /* the bases' data, then w's; the output; x's new view */
    cr_assert_eq(wb_spec_num_updated(s), 3);
    cr_assert_eq(s->muts[0].input, -2);
    cr_assert_eq(wb_spec_synth(s, s->muts[1].input), 1);
    cr_assert_eq(s->muts[2].input, 6);
    cr_assert_eq(s->nmeta_members, 1);
    cr_assert_eq(s->meta_members[0], 1);
    cr_assert_eq(wb_spec_num_values(s), 3 + 1 + 1);
    cr_assert_eq(s->outs[0].group, 0, "a view of v is one of x's base");

    /* Undone, and refused where a member cannot be. */
    WBT_OK(wb_spec_set_synthetic_base(s, 5, -1));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(s->ngroups, 1);
    WBT_FAILS(wb_spec_set_synthetic_base(s, 3, 3), WB_ERR_SPEC,
              "input 3: the input whose storage it lies on, 3, is not an "
              "earlier one");
    WBT_FAILS(wb_spec_set_synthetic_base(s, 9, 0), WB_ERR_INVALID,
              "no input 9");
    WBT_OK(wb_spec_set_synthetic_base(s, 2, 1));
    TS_REJECTS(s, "input 2 'k': lies on the storage of input 1, but only "
                  "tensors make a synthetic base");
    WBT_OK(wb_spec_set_synthetic_base(s, 2, -1));
    WBT_OK(wb_spec_set_duplicate(s, 5, 0));
    WBT_OK(wb_spec_set_synthetic_base(s, 5, 1));
    TS_REJECTS(s, "input 5 'q': lies on the storage of input 1, but a "
                  "duplicate is its kept input's tensor");
    WBT_OK(wb_spec_set_duplicate(s, 5, -1));
    wb_spec_free(s);

    static const struct {
        wb_mutation mut;
        unsigned flags;
        const char *why;
    } bad[] = {
        {WB_MUT_STORAGE, 0, "a member of a synthetic base has a data, "
                            "metadata or in-graph mutation, or none; not "
                            "storage"},
        {WB_MUT_RESIZE, 0, "not resize"},
        {WB_MUT_METADATA, 0, "input 0 'x': its synthetic base has no member "
                             "whose data the graph mutates"},
        {WB_MUT_NONE, WB_INPUT_OPTIONAL, "an optional tensor may be NULL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        WBT_OK(wb_spec_new("g", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", bad[i].mut, bad[i].flags, NULL));
        WBT_OK(wb_spec_set_synthetic_base(s, 1, 0));
        TS_REJECTS(s, bad[i].why);
        wb_spec_free(s);
    }
    /* Nor is a member detached, in training. */
    WBT_OK(wb_spec_new("g", &s));
    WBT_OK(wb_spec_set_training(s, true));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_set_synthetic_base(s, 1, 0));
    TS_REJECTS(s, "input 1 'y': a member of a synthetic base is not detached");
    wb_spec_free(s);
    /* A base's data mutation is in the graph for every member, or for
       none. */
    for (int in_graph_first = 0; in_graph_first < 2; in_graph_first++) {
        WBT_OK(wb_spec_new("g", &s));
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_add_tensor(s, "x", in_graph_first ? WB_MUT_IN_GRAPH
                                                         : WB_MUT_DATA,
                                  0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", in_graph_first ? WB_MUT_DATA
                                                         : WB_MUT_IN_GRAPH,
                                  0, NULL));
        WBT_OK(wb_spec_set_synthetic_base(s, 1, 0));
        TS_REJECTS(s, in_graph_first
                          ? "input 1 'y': its synthetic base's data mutation "
                            "is after the graph, where input 0's is in it"
                          : "input 1 'y': its synthetic base's data mutation "
                            "is in the graph, where input 0's is after it");
        wb_spec_free(s);
    }
}
