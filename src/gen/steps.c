/*
 * steps.c -- which helper does each step of a call: the one table that
 * both the interpreter and the emitter read.
 *
 * The interpreter calls a row's helpers through their addresses, the
 * emitter writes their names from their ids; WB_GEN_HELPER takes both
 * from one name, so the two cannot drift apart.  The interpreter uses
 * check and commit of the rows by kind; the rest of a row are the
 * specialisations only the emitter writes (plain outputs, runs, the
 * unrolled data primitives), which do what the general helper does.
 *
 * To add a mutation kind: its value in wb_mutation (wrapbake.h), its
 * validation and name in src/spec, its helpers in src/abi (a line each
 * in helpers.def), then one row below.  When the helpers take an argument
 * list that wb_gen_args lacks, add it there and in wb_gen_fn, and its
 * case to wb_interp_prep_mut and wb_interp_commit_mut (interp.c) and to
 * wb_emit_prep_mut and wb_emit_commit_mut (emit.c).  An output kind is
 * the same, with one row under .out, and a new argument list's case in
 * the output loops of wb_interp_call and in wb_emit_commit_out.  A new
 * helper for an existing step is one line in helpers.def and one member
 * of a row.  tests/test_steps.c fails for a kind left without its row.
 */
#include "gen.h"

/* An output that is the graph's value itself; validation folds the
   unsafe-view alias and the custom-function view into non-alias, and
   their rows are the same. */
#define WB_GEN_VALUE_OUT                                                   \
    {                                                                      \
        .commit = WB_GEN_HELPER(out_flags, wb_rt_out_flags),               \
        .commit_plain = WB_GEN_HELPER(out_plain, wb_rt_out_plain),         \
        .commit_end = WB_GEN_HELPER(out_plain_end, wb_rt_out_plain_end),   \
    }

/* An output made as a view in the check phase; the view kinds differ
   only in where the base is, which wb_spec_out says. */
#define WB_GEN_VIEW_OUT                                                    \
    .check = WB_GEN_HELPER(prep_view, wb_rt_prep_view),                    \
    .check_first = WB_GEN_HELPER(prep_same, wb_rt_prep_same),              \
    .commit = WB_GEN_HELPER(commit_view, wb_rt_commit_view),               \
    .commit_plain = WB_GEN_HELPER(commit_view_plain,                       \
                                  wb_rt_commit_view_plain)

_Static_assert(WB_RT_MAX_ND == 4, "one data_nd row per count of dims");

const wb_gen_step_table wb_gen_steps = {
    .mut = {
        [WB_MUT_DATA] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_data),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_data),
        },
        [WB_MUT_METADATA] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_meta),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_meta),
        },
        [WB_MUT_DATA_METADATA] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_data_meta),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_data_meta),
        },
        [WB_MUT_STORAGE] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_storage),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_storage),
        },
        /* The check plans the storage's growth; the commit applies it. */
        [WB_MUT_RESIZE] = {
            .check = WB_GEN_HELPER(prep_grow, wb_rt_prep_resize),
            .commit = WB_GEN_HELPER(commit_grow, wb_rt_commit_resize),
        },
    },
    /* The data primitives unrolled for inputs of nd dims, and their
       runs over consecutive inputs. */
    .data_nd = {
        [1] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_data_1d),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_data_1d),
            .check_run = WB_GEN_HELPER(prep_run, wb_rt_prep_data_1d_run),
            .commit_run = WB_GEN_HELPER(commit_run,
                                        wb_rt_commit_data_1d_run),
        },
        [2] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_data_2d),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_data_2d),
            .check_run = WB_GEN_HELPER(prep_run, wb_rt_prep_data_2d_run),
            .commit_run = WB_GEN_HELPER(commit_run,
                                        wb_rt_commit_data_2d_run),
        },
        [3] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_data_3d),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_data_3d),
            .check_run = WB_GEN_HELPER(prep_run, wb_rt_prep_data_3d_run),
            .commit_run = WB_GEN_HELPER(commit_run,
                                        wb_rt_commit_data_3d_run),
        },
        [4] = {
            .check = WB_GEN_HELPER(prep, wb_rt_prep_data_4d),
            .commit = WB_GEN_HELPER(commit, wb_rt_commit_data_4d),
            .check_run = WB_GEN_HELPER(prep_run, wb_rt_prep_data_4d_run),
            .commit_run = WB_GEN_HELPER(commit_run,
                                        wb_rt_commit_data_4d_run),
        },
    },
    .out = {
        [WB_OUT_NON_ALIAS] = WB_GEN_VALUE_OUT,
        [WB_OUT_UNSAFE_VIEW_ALIAS] = WB_GEN_VALUE_OUT,
        [WB_OUT_CUSTOM_FUNCTION_VIEW] = WB_GEN_VALUE_OUT,
        /* The input itself; the graph's value is released. */
        [WB_OUT_IS_INPUT] = {
            .commit = WB_GEN_HELPER(out_input, wb_rt_out_input),
        },
        /* Views of consecutive inputs, or of one input, go in runs (see
           wb_emit_view_run). */
        [WB_OUT_ALIAS_OF_INPUT] = {
            WB_GEN_VIEW_OUT,
            .check_run = WB_GEN_HELPER(prep_views, wb_rt_prep_views),
            .check_run_of = WB_GEN_HELPER(prep_views, wb_rt_prep_views_of),
            .commit_run = WB_GEN_HELPER(commit_views, wb_rt_commit_views),
            .commit_run_plain = WB_GEN_HELPER(commit_views_plain,
                                              wb_rt_commit_views_plain),
        },
        [WB_OUT_ALIAS_OF_INTERMEDIATE] = {WB_GEN_VIEW_OUT},
        [WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT] = {WB_GEN_VIEW_OUT},
        [WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT] = {WB_GEN_VIEW_OUT},
    },
};
