/*
 * aot.c -- the builtin cases as ahead-of-time code.
 *
 * The Makefile runs `wrapbake emit --aot --prefix bench_cases` on
 * bench/cases.txt and builds the files it writes into wrapbake-bench.  This
 * file is the one part of the benchmark that sees the generated header, so
 * that only it needs the generated directory on its include path.  The
 * builtin specs of every column come from the text the dispatch unit
 * embeds: the aot code was generated for exactly the specs the other tiers
 * run, and wb_wrapper_new_aot refuses it if they ever differ.
 */
#include "wrapbake.h"
#include "bench.h"
#include "bench_cases.h"

int bench_aot_lookup(const char *name)
{
    return bench_cases_lookup(name);
}

wb_status bench_aot_spec(int graph, wb_spec **out)
{
    return bench_cases_spec(graph, out);
}

wb_status bench_aot_new(int graph, wb_graph_fn fn, void *ctx,
                        wb_wrapper **out)
{
    return bench_cases_new(graph, fn, ctx, out);
}
