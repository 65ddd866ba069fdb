/*
 * bench.h -- wrapbake-bench's pieces: measurement results and the reports
 * made of them.
 */
#ifndef WB_BENCH_H
#define WB_BENCH_H

#include <stdbool.h>
#include <stdio.h>

#include "wrapbake.h"

/* The columns, in order: the floor first. */
enum { BENCH_DIRECT, BENCH_INTERP, BENCH_TCC, BENCH_CC, BENCH_AOT,
       BENCH_NTIERS };
extern const char *const bench_tier_names[BENCH_NTIERS];

typedef struct bench_stat {
    double median, min, max;  /* ns per call over the repetitions */
} bench_stat;

typedef struct bench_tier_result {
    bool available;
    const char *why_not;      /* when not available */
    bench_stat ns;
    double allocs_per_call;   /* -1 when this build cannot count them */
    double compile_us;        /* one wrapper alone (aot: made from its
                                 embedded spec); -1 when none is built */
    double batch_us;          /* tcc: per wrapper in a batch; -1 if none */
    double load_us;           /* cc: a disk-cache hit; -1 if none */
    double launches_per_call; /* CUDA submissions per call; -1 on the CPU */
} bench_tier_result;

/* Wrappers in the batch behind batch_us. */
#define BENCH_BATCH 100
/* Batches timed for batch_us, which is their median. */
#define BENCH_BATCH_REPS 5

typedef struct bench_case_result {
    const char *name, *desc;
    bench_tier_result tiers[BENCH_NTIERS];
} bench_case_result;

/* How the graph stand-in hands out its values. */
typedef enum bench_values {
    BENCH_FIXED,  /* it keeps them, each fixed (wb_tensor_fix_storage) */
    BENCH_KEPT,   /* --unfixed: it keeps them, not fixed */
    BENCH_FRESH   /* --fresh: a new tensor per value, handed over */
} bench_values;

typedef struct bench_report {
    char machine[160];
    char date[32];
    char device[32];          /* where the tensors live: cpu, cuda:N */
    bool own_stream;          /* --stream: not the legacy default stream */
    bench_values values;      /* how the graph hands out its values */
    long calls, reps;
    double libtcc_us;         /* libtcc alone: the floor under tcc us */
    double calibration;       /* instructions per us of a fixed loop (0
                                 where there is none for this machine) */
    const bench_case_result *cases;
    int ncases;
} bench_report;

/* The table fits 100 columns, each tier's ns per call and overhead above
   direct; wide, it has every column. */
void bench_print_table(FILE *f, const bench_report *r, bool wide);
void bench_print_json(FILE *f, const bench_report *r);
void bench_print_csv(FILE *f, const bench_report *r);
void bench_print_svg(FILE *f, const bench_report *r);

/* The builtin cases built ahead of time (aot.c, over the unit the Makefile
   generates from bench/cases.txt): a case's index there, or -1; a new
   validated spec parsed from the text the unit embeds; a wrapper of it on
   the aot tier, which the caller frees. */
int bench_aot_lookup(const char *name);
wb_status bench_aot_spec(int graph, wb_spec **out);
wb_status bench_aot_new(int graph, wb_graph_fn fn, void *ctx,
                        wb_wrapper **out);

/* ---- --scale ---- */

/* What a scaling spec grows, and the sizes it takes (scale.c). */
enum { BENCH_SCALE_ARGS, BENCH_SCALE_MUTATIONS, BENCH_SCALE_VIEWS,
       BENCH_SCALE_KINDS };
#define BENCH_SCALE_SIZES 4
extern const char *const bench_scale_kinds[BENCH_SCALE_KINDS];
extern const int bench_scale_sizes[BENCH_SCALE_SIZES];

/* What one scaling spec costs, counted by callgrind. */
typedef struct bench_scale_point {
    double direct, interp, tcc;  /* instructions per call */
    double build;                /* instructions per tcc build */
    double allocs;               /* heap allocations per tcc call (-1 when
                                    this build cannot count them) */
} bench_scale_point;

typedef struct bench_scale_report {
    char machine[160];
    char date[32];
    char counter[64];         /* valgrind's version */
    bench_values values;      /* how the graph hands out its values */
    int nsizes;               /* the first nsizes of bench_scale_sizes */
    bench_scale_point at[BENCH_SCALE_KINDS][BENCH_SCALE_SIZES];
} bench_scale_report;

/* Whether name is a scaling spec's, "views_100"; its kind and size. */
bool bench_scale_name(const char *name, int *kind, int *n);
/* The text of the scaling spec of kind and size n, which the caller
   frees. */
char *bench_scale_text(int kind, int n);

/* A run of this program under callgrind: its options, and the
   instructions callgrind counted in it. */
#define BENCH_RUN_ARGS 8
typedef struct bench_run {
    char args[BENCH_RUN_ARGS][32];
    int nargs;
    long long refs;
} bench_run;

/* NULL when callgrind can count runs of this program, buf then holding
   valgrind's version; else why not. */
const char *bench_callgrind_version(char *buf, size_t n);
/* Makes the n runs, as many at a time as there are CPUs, and sets their
   counts; a run that fails ends the program, saying which. */
void bench_callgrind(bench_run *runs, int n);

/* The scaling report: a table per call and per build, with each step's
   cost per item and whether growth is linear; JSON; an SVG chart. */
void bench_scale_table(FILE *f, const bench_scale_report *r);
void bench_scale_json(FILE *f, const bench_scale_report *r);
void bench_scale_svg(FILE *f, const bench_scale_report *r);

/* Says what failed and why on stderr, and ends the program. */
void bench_die(const char *what, const char *why);

/* Heap allocations made by the process so far (allocs.c), and whether this
   build can count them at all. */
long bench_allocs(void);
bool bench_allocs_counted(void);

#endif /* WB_BENCH_H */
