/*
 * tier_source.c -- prints the C of a tcc-tier wrapper for the spec text
 * given as its one argument, through the public API alone (wb_spec_parse,
 * wb_wrapper_new, wb_wrapper_source).  tests/cli/run.sh holds `wrapbake
 * emit` to it: the command must print exactly a wrapper's source, not a
 * text that merely looks alike.
 */
#include <stdio.h>

#include "wrapbake.h"

/* Never called: building a wrapper compiles it without calling the graph. */
static int tier_source_graph(void *ctx, const wb_arg *args, int nargs,
                             wb_value *values, int nvalues)
{
    (void)ctx;
    (void)args;
    (void)nargs;
    (void)values;
    (void)nvalues;
    return -1;
}

int main(int argc, char **argv)
{
    wb_spec *spec = NULL;
    wb_wrapper *w = NULL;
    wb_options options = {.tier = WB_TIER_TCC};
    if (argc != 2) {
        fputs("usage: tier-source SPEC-TEXT\n", stderr);
        return 2;
    }
    if (wb_spec_parse(argv[1], &spec) != WB_OK ||
        wb_wrapper_new(spec, tier_source_graph, NULL, &options, &w) !=
            WB_OK) {
        fprintf(stderr, "tier-source: %s\n", wb_last_error());
        wb_spec_free(spec);
        return 1;
    }
    fputs(wb_wrapper_source(w), stdout);
    wb_wrapper_free(w);
    wb_spec_free(spec);
    return 0;
}
