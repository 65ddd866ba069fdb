/*
 * aot.c -- the builtin cases as ahead-of-time code.
 *
 * The Makefile runs `wrapbake emit --aot --prefix wb_bench_aot` on
 * bench/cases.txt and builds the files it writes into wrapbake-bench.  This
 * file is the one part of the benchmark that sees the generated header, so
 * that only it needs the generated directory on its include path.  The
 * builtin specs of every column come from the text the dispatch unit
 * embeds: the aot code was generated for exactly the specs the other tiers
 * run, and wb_wrapper_new_aot refuses it if they ever differ.
 */
#include "wrapbake.h"
#include "bench.h"
#include "wb_bench_aot.h"

int bench_aot_lookup(const char *name)
{
    return wb_bench_aot_lookup(name);
}

wb_status bench_aot_spec(int graph, wb_spec **out)
{
    return wb_bench_aot_spec(graph, out);
}

wb_status bench_aot_new(int graph, wb_graph_fn fn, void *ctx,
                        wb_wrapper **out)
{
    return wb_bench_aot_new(graph, fn, ctx, out);
}
