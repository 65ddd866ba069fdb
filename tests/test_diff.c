/*
 * The differential test: random valid specs, random tensors, random faults;
 * every compiled tier must agree with the interpreter in every observable
 * (see diff_gen.h, which fuzz/fuzz_diff.c shares).
 *
 * WB_DIFF_COUNT sets how many specs (default 10000); WB_DIFF_SEED replays
 * one seed, printed on the first difference.
 */
#include <dlfcn.h>
#include <errno.h>

#include "helpers.h"

#define WBD_FAIL(...) cr_assert_fail(__VA_ARGS__)
#include "diff_gen.h"
#include "../src/gen/gen.h"
#include "../src/tiers/jit.h"

static void diff_one(uint64_t seed)
{
    diff_case_on((diff_rng){seed * 0x9E3779B97F4A7C15ULL | 1, NULL, 0}, seed,
                 diff_tiers, DIFF_NTIERS);
}

Test(diff, compiled_tiers_match_interp, .timeout = 600)
{
    const char *one = getenv("WB_DIFF_SEED"), *count = getenv("WB_DIFF_COUNT");
    if (one) {
        diff_one(strtoull(one, NULL, 10));
        return;
    }
    long n = count ? strtol(count, NULL, 10) : 10000;
    for (long seed = 1; seed <= n; seed++)
        diff_one((uint64_t)seed);
    wb_set_grad_enabled(true);
    /* The random specs reached success and every injected failure. */
    long calls = n * DIFF_CALLS;
    cr_assert_gt(diff_status_seen[WB_OK], calls / 4, "only %ld of %ld calls "
                 "succeeded", diff_status_seen[WB_OK], calls);
    const wb_status expect[] = {WB_ERR_ARITY, WB_ERR_TYPE, WB_ERR_SHAPE,
                                WB_ERR_GRAPH, WB_ERR_HOOK};
    for (size_t i = 0; n >= 1000 && i < sizeof expect / sizeof *expect; i++)
        cr_assert_gt(diff_status_seen[expect[i]], 0, "no call ended in %s",
                     wb_status_str(expect[i]));
    for (int i = 0; i <= WB_ERR_UNSUPPORTED; i++)
        cr_log_info("diff: %s %ld", wb_status_str((wb_status)i),
                    diff_status_seen[i]);
}

/* The cc tier on the first seeds of the same sequence: each spec costs a
   run of the system compiler, so four tests of 100 seeds each share the
   work across Criterion's jobs.  WB_DIFF_CC_COUNT sets the seeds per
   test. */
static void diff_cc_range(long part)
{
    static const wb_tier cc[] = {WB_TIER_CC};
    const char *one = getenv("WB_DIFF_SEED");
    const char *count = getenv("WB_DIFF_CC_COUNT");
    long n = count ? strtol(count, NULL, 10) : 100;
    for (long seed = part * n + 1; seed <= (part + 1) * n; seed++) {
        uint64_t s = one ? strtoull(one, NULL, 10) : (uint64_t)seed;
        diff_case_on((diff_rng){s * 0x9E3779B97F4A7C15ULL | 1, NULL, 0}, s,
                     cc, 1);
        if (one)
            break;
    }
    wb_set_grad_enabled(true);
}

Test(diff, cc_matches_interp_0, .timeout = 600) { diff_cc_range(0); }
Test(diff, cc_matches_interp_1, .timeout = 600) { diff_cc_range(1); }
Test(diff, cc_matches_interp_2, .timeout = 600) { diff_cc_range(2); }
Test(diff, cc_matches_interp_3, .timeout = 600) { diff_cc_range(3); }

/* ---- libtcc's text ---- */

/* What a compiler makes of text, line numbers aside: its lines without
   comments (generated code holds no string a comment mark could be in),
   blank lines, a #line directive that the next line overrides, or the
   declaration of t, which libtcc's text leaves out when only the other
   branches use it. */
static char *diff_code_only(const char *text)
{
    size_t n = strlen(text);
    char *bare = malloc(n + 1), *out = malloc(n + 2), *b = bare, *o = out;
    cr_assert(bare && out, "out of memory");
    for (const char *p = text; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            cr_assert(end, "an unterminated comment");
            p = end + 2;
        } else {
            *b++ = *p++;
        }
    }
    *b = '\0';
    char *last = NULL; /* the last line kept, when it is a #line */
    for (char *line = strtok(bare, "\n"); line; line = strtok(NULL, "\n")) {
        if (!line[strspn(line, " \t")])
            continue;
        if (!strcmp(line, "    const wb_tensor *t; "))
            continue;
        bool directive = strncmp(line, "#line ", 6) == 0;
        if (directive && last)
            o = last;
        last = directive ? o : NULL;
        o += sprintf(o, "%s\n", line);
    }
    *o = '\0';
    free(bare);
    return out;
}

/* A spec shaped as the benchmark's cases: nargs float32 2-d inputs, the
   first nmut mutated, nalias views of the next ones, one further output. */
static wb_spec *diff_bench_spec(int nargs, int nmut, int nalias)
{
    wb_spec *s;
    char name[16];
    WBT_OK(wb_spec_new("bench", &s));
    for (int i = 0; i < nargs; i++) {
        snprintf(name, sizeof name, "x%d", i);
        WBT_OK(wb_spec_add_tensor(s, name, i < nmut ? WB_MUT_DATA
                                                    : WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_declare_input(s, i, WBT_F32, 2));
    }
    for (int k = 0; k < nalias; k++)
        WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, nmut + k,
                                  false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    return s;
}

/* The text the tcc tier compiles (WB_EMIT_LIBTCC) is the whole text, which
   wb_wrapper_source gives and the cc tier compiles (WB_EMIT_LINES), as
   libtcc reads it (wb_test_jit_as_read) and less its comments: libtcc's
   branch of every run, the same code line for line.  The differential test runs
   both texts against the interpreter; this holds them to each other. */
/* The fixed specs the texts' checks start with: the benchmark's cases A
   to E, then 20 views of one input (a run of views of one input, and one
   of more than 16 values), whose runs are written in both branches. */
#define DIFF_FIXED_SPECS 6

/* Spec i of the texts' checks, validated: the fixed specs, then random
   ones. */
static wb_spec *diff_text_spec(uint64_t i)
{
    static const int bench[][3] = {{5, 0, 0}, {5, 0, 2}, {5, 2, 0},
                                   {10, 1, 3}, {20, 3, 5}};
    wb_spec *s;
    if (i < 5) {
        s = diff_bench_spec(bench[i][0], bench[i][1], bench[i][2]);
    } else if (i == 5) {
        WBT_OK(wb_spec_new("split", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        for (int k = 0; k < 20; k++)
            WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 0,
                                      false, 0, NULL));
    } else {
        diff_rng r = {(i - DIFF_FIXED_SPECS) * 0x9E3779B97F4A7C15ULL | 1,
                      NULL, 0};
        diff_spec d;
        s = diff_make_spec(&r, &d);
        diff_rng h = {diff_next(&r) | 1, NULL, 0};
        diff_add_hooks(&h, s, &diff_case_world);
    }
    WBT_OK(wb_spec_validate(s));
    return s;
}

Test(diff, libtcc_text_is_the_whole_text_as_libtcc_reads_it)
{
    int runs = 0, views_of = 0;
    for (uint64_t seed = 0; seed < 2000 + DIFF_FIXED_SPECS; seed++) {
        wb_spec *s = diff_text_spec(seed);
        char *whole, *own;
        WBT_OK(wb_emit(s, WB_EMIT_FN, WB_EMIT_LINES, &whole));
        WBT_OK(wb_emit(s, WB_EMIT_FN, WB_EMIT_LIBTCC, &own));
        char *read = malloc(strlen(whole) + 1);
        cr_assert(read, "out of memory");
        wb_test_jit_as_read(read, whole);
        /* Fixed specs 0 to 5, then random seeds from 0. */
        const char *what = seed < DIFF_FIXED_SPECS ? "fixed spec" : "seed";
        unsigned long long which =
            seed < DIFF_FIXED_SPECS ? seed : seed - DIFF_FIXED_SPECS;
        cr_assert_null(strstr(own, "__TINYC__"), "%s %llu: a branch in "
                       "libtcc's text:\n%s", what, which, own);
        runs += strstr(whole, "#ifdef __TINYC__") != NULL;
        views_of += strstr(own, "wb_rt_prep_views_of(") != NULL;
        char *a = diff_code_only(read), *b = diff_code_only(own);
        cr_assert_str_eq(a, b, "%s %llu: libtcc's text is not the whole "
                         "text as libtcc reads it", what, which);
        free(a), free(b), free(read), free(whole), free(own);
        wb_spec_free(s);
    }
    cr_log_info("libtcc's text: %d of %d specs with runs, %d with views of "
                "one input", runs, 2000 + DIFF_FIXED_SPECS, views_of);
}

/* The emitter records which helpers a function calls, and who reads each
   call, as it writes them (wb_emitted.used): the prelude declares them
   and the JIT registers them from the record alone.  Read back from the
   text, in every form, the calls are exactly the ones recorded; the
   prelude is the prelude of the whole text, and the function what
   follows it. */
Test(diff, the_emitter_records_the_helpers_it_calls)
{
    static const wb_emit_form forms[] = {WB_EMIT_PLAIN, WB_EMIT_LINES,
                                         WB_EMIT_LIBTCC};
    int cc_only = 0;
    for (uint64_t seed = 0; seed < 2000 + DIFF_FIXED_SPECS; seed++) {
        wb_spec *s = diff_text_spec(seed);
        for (int f = 0; f < 3; f++) {
            wb_emitted parts;
            unsigned char read[WB_ABI_COUNT];
            char *whole;
            WBT_OK(wb_emit_parts(s, WB_EMIT_FN, forms[f], &parts));
            WBT_OK(wb_emit(s, WB_EMIT_FN, forms[f], &whole));
            size_t n = strlen(parts.prelude);
            cr_assert(!strncmp(whole, parts.prelude, n) &&
                      !strcmp(whole + n, parts.body),
                      "seed %llu, form %d: the parts are not the text",
                      (unsigned long long)seed, f);
            cr_assert_str_eq(parts.entry, WB_EMIT_FN);
            wb_test_symbols_used(parts.body, strlen(parts.body), read);
            for (int i = 0; i < WB_ABI_COUNT; i++) {
                cr_assert_eq(parts.used[i], read[i], "seed %llu, form %d: "
                             "%s recorded %u, read %u",
                             (unsigned long long)seed, f,
                             wb_rt_symbols[i].name, parts.used[i], read[i]);
                cc_only += parts.used[i] == WB_RT_READ_CC;
            }
            free(whole);
            wb_emitted_free(&parts);
        }
        wb_spec_free(s);
    }
    /* The runs' steps, which libtcc does not read, were among them. */
    cr_assert_gt(cc_only, 0);
}

/* ---- the aot tier ---- */

/*
 * The random specs' code generated ahead of time and built by the system
 * compiler must agree with the interpreter too.  Ten thousand files would
 * take minutes to build, so the test builds a few translation units: the
 * declarations every emitted file opens with (types and helper prototypes,
 * the same text in each) once at the top, then each spec's function, the
 * emitter's text byte for byte as a `wrapbake emit --aot` file holds it,
 * under a name of its own.  (tests/aot/run.sh builds and links the real
 * files.)  The shared object calls the helpers of this very program, which
 * is linked -rdynamic, as an ahead-of-time program calls its
 * libwrapbake.a; wb_wrapper_new_aot checks each function's fingerprint.
 */
/* Functions per translation unit: a compiler slows down on very large
   ones.  Every fourth unit is built at -O1, where gcc's flow analysis adds
   warnings, the others at -O0 to keep the test quick. */
#define DIFF_AOT_PER_UNIT 250
#define DIFF_AOT_MAX_UNITS 400
#define DIFF_AOT_MAX_DECLS 256

typedef struct diff_aot {
    uint64_t lo, hi;                      /* the seeds built */
    wb_entry_fn *entries;                 /* by seed - lo */
    char (*fps)[WB_FINGERPRINT_LEN + 1];  /* by seed - lo */
    char *decls[DIFF_AOT_MAX_DECLS];      /* distinct declarations */
    int ndecls;
    void *so;
    char dir[256];
} diff_aot;

static diff_aot diff_aot_built;
static uint64_t diff_aot_seed;  /* the seed being run */

static wb_status diff_aot_new(wb_spec *s, diff_world *w, wb_wrapper **out)
{
    diff_aot *a = &diff_aot_built;
    cr_assert(diff_aot_seed >= a->lo && diff_aot_seed <= a->hi);
    wb_status st = wb_wrapper_new_aot(s, a->entries[diff_aot_seed - a->lo],
                                      a->fps[diff_aot_seed - a->lo],
                                      diff_graph, w, out);
    if (st == WB_OK)
        cr_assert_eq(wb_wrapper_tier(*out), WB_TIER_AOT);
    return st;
}

/* The spec diff_case_on makes for seed, its hooks pointed at the case's
   world. */
static wb_spec *diff_seed_spec(uint64_t seed)
{
    diff_rng r = {seed * 0x9E3779B97F4A7C15ULL | 1, NULL, 0};
    diff_spec d;
    wb_spec *s = diff_make_spec(&r, &d);
    diff_rng h = {diff_next(&r) | 1, NULL, 0};
    diff_add_hooks(&h, s, &diff_case_world);
    WBT_OK(wb_spec_validate(s));
    return s;
}

/* Records the declarations of emitted C (what ends in ";" or "}" and a
   newline outside braces, after the banner, before the function) not seen
   yet, and returns where the function starts.  The lines that keep the
   prototypes of helpers only the steps of runs call from libtcc
   ("#ifndef __TINYC__", "#endif") are left out: this code is gcc's. */
static const char *diff_aot_split(diff_aot *a, const char *src)
{
    const char *fn = strstr(src, "\nint wb_generated(");
    const char *p = strstr(src, "*/\n");
    cr_assert(fn && p && p < fn, "emitted C without a banner or function");
    p += 3;
    int depth = 0;
    for (const char *q = p; q < fn; q++) {
        depth += (*q == '{') - (*q == '}');
        /* A declaration ends in ";", a function definition in "}". */
        if ((*q != ';' && *q != '}') || depth || q[1] != '\n')
            continue;
        while (*p == '\n' || *p == ' ' || *p == '#')
            p += *p == '#' ? strcspn(p, "\n") : 1;
        size_t n = (size_t)(q + 1 - p);
        bool seen = false;
        for (int i = 0; i < a->ndecls && !seen; i++)
            seen = strlen(a->decls[i]) == n && memcmp(a->decls[i], p, n) == 0;
        if (!seen) {
            cr_assert_lt(a->ndecls, DIFF_AOT_MAX_DECLS);
            a->decls[a->ndecls] = strndup(p, n);
            cr_assert(a->decls[a->ndecls]);
            a->ndecls++;
        }
        p = q + 1;
    }
    return fn + 1;
}

/* Generates, builds and loads the code of seeds lo..hi. */
static void diff_aot_build(diff_aot *a, uint64_t lo, uint64_t hi)
{
    char path[512], cmd[1024];
    const char *tmp = getenv("TMPDIR");
    FILE *unit[DIFF_AOT_MAX_UNITS];
    size_t n = (size_t)(hi - lo + 1);
    int units = (int)((n + DIFF_AOT_PER_UNIT - 1) / DIFF_AOT_PER_UNIT);
    cr_assert_leq(units, DIFF_AOT_MAX_UNITS, "too many seeds at once");
    a->lo = lo;
    a->hi = hi;
    a->entries = calloc(n, sizeof *a->entries);
    a->fps = calloc(n, sizeof *a->fps);
    cr_assert(a->entries && a->fps);
    snprintf(a->dir, sizeof a->dir, "%s/wrapbake-aot-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    cr_assert(mkdtemp(a->dir), "mkdtemp: %s", strerror(errno));
    for (int u = 0; u < units; u++) {
        snprintf(path, sizeof path, "%s/unit%d_O%d.c", a->dir, u, u % 4 == 0);
        unit[u] = fopen(path, "w");
        cr_assert(unit[u], "cannot write %s", path);
        fprintf(unit[u], "#include \"decls.h\"\n");
    }
    for (uint64_t seed = lo; seed <= hi; seed++) {
        wb_spec *s = diff_seed_spec(seed);
        char *src;
        WBT_OK(wb_emit_c(s, &src));
        WBT_OK(wb_spec_fingerprint(s, a->fps[seed - lo]));
        fprintf(unit[(seed - lo) / DIFF_AOT_PER_UNIT], "\n#define wb_generated "
                "wb_diff_aot_%llu\n%s#undef wb_generated\n",
                (unsigned long long)seed, diff_aot_split(a, src));
        free(src);
        wb_spec_free(s);
    }
    for (int u = 0; u < units; u++)
        cr_assert_eq(fclose(unit[u]), 0);
    snprintf(path, sizeof path, "%s/decls.h", a->dir);
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    for (int i = 0; i < a->ndecls; i++)
        fprintf(f, "%s\n", a->decls[i]);
    cr_assert_eq(fclose(f), 0);
    /* Warnings are errors here as in an ahead-of-time build; two
       compilers at a time. */
    snprintf(cmd, sizeof cmd, "cd %s && ls unit*.c | xargs -P2 -n1 sh -c "
             "'o=${0##*_}; ${CC:-cc} -std=c11 -Wall -Wextra -Wpedantic "
             "-Werror -${o%%.c} -fPIC -c \"$0\" -o \"$0.o\"' && "
             "${CC:-cc} -shared -o aot.so unit*.o", a->dir);
    cr_assert_eq(system(cmd), 0, "building the ahead-of-time code failed: "
                 "%s", cmd);
    snprintf(path, sizeof path, "%s/aot.so", a->dir);
    a->so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert(a->so, "dlopen: %s", dlerror());
    for (uint64_t seed = lo; seed <= hi; seed++) {
        char name[64];
        snprintf(name, sizeof name, "wb_diff_aot_%llu",
                 (unsigned long long)seed);
        void *fn = dlsym(a->so, name);
        cr_assert(fn, "%s missing from the shared object", name);
        memcpy(&a->entries[seed - lo], &fn, sizeof fn);
    }
}

static void diff_aot_free(diff_aot *a)
{
    char cmd[512];
    if (a->so)
        dlclose(a->so);
    snprintf(cmd, sizeof cmd, "rm -rf %s", a->dir);
    cr_assert_eq(system(cmd), 0);
    for (int i = 0; i < a->ndecls; i++)
        free(a->decls[i]);
    free(a->entries);
    free(a->fps);
    memset(a, 0, sizeof *a);
}

/* The aot tier against the interpreter on the first WB_DIFF_AOT_COUNT
   seeds of compiled_tiers_match_interp (default 2000: building the code of all
   10000 takes the system compiler minutes; `make test DIFF_AOT_COUNT=10000`
   runs them all); WB_DIFF_SEED replays one. */
Test(diff, aot_matches_interp, .timeout = 900)
{
    const char *one = getenv("WB_DIFF_SEED");
    const char *count = getenv("WB_DIFF_AOT_COUNT");
    uint64_t lo = 1, hi = count ? strtoull(count, NULL, 10) : 2000;
    if (one)
        lo = hi = strtoull(one, NULL, 10);
    static const wb_tier aot[] = {WB_TIER_AOT};
    diff_aot_build(&diff_aot_built, lo, hi);
    diff_made_wrapper = diff_aot_new;
    for (uint64_t seed = lo; seed <= hi; seed++) {
        diff_aot_seed = seed;
        diff_case_on((diff_rng){seed * 0x9E3779B97F4A7C15ULL | 1, NULL, 0},
                     seed, aot, 1);
    }
    wb_set_grad_enabled(true);
    long calls = (long)(hi - lo + 1) * DIFF_CALLS;
    cr_assert(one || diff_status_seen[WB_OK] > calls / 4, "only %ld of %ld "
              "calls succeeded", diff_status_seen[WB_OK], calls);
    diff_aot_free(&diff_aot_built);
}

/* ---- a batch ---- */

/* The tcc tier with the code of the first WB_DIFF_BATCH_COUNT seeds
   (default 1000) built by one wb_wrappers_new, one libtcc unit in which
   each source declares only the helpers, and completes only the types,
   no earlier source did; libtcc runs with -Werror, so a helper left
   undeclared, or a type read into before its completion, fails the
   batch. */
static wb_wrapper **diff_batch;
static uint64_t diff_batch_seed;

static wb_status diff_batch_take(wb_spec *s, diff_world *w, wb_wrapper **out)
{
    (void)s;
    (void)w;
    *out = diff_batch[diff_batch_seed - 1];
    diff_batch[diff_batch_seed - 1] = NULL;
    return WB_OK;
}

Test(diff, a_batch_matches_interp, .timeout = 600)
{
    const char *count = getenv("WB_DIFF_BATCH_COUNT");
    int n = count ? atoi(count) : 1000;
    static const wb_tier tcc[] = {WB_TIER_TCC};
    wb_options opt = {.tier = WB_TIER_TCC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_spec **specs = calloc((size_t)n, sizeof *specs);
    wb_graph_fn *graphs = calloc((size_t)n, sizeof *graphs);
    void **ctxs = calloc((size_t)n, sizeof *ctxs);
    diff_batch = calloc((size_t)n, sizeof *diff_batch);
    cr_assert(n > 0 && specs && graphs && ctxs && diff_batch);
    for (int i = 0; i < n; i++) {
        specs[i] = diff_seed_spec((uint64_t)i + 1);
        graphs[i] = diff_graph;
        ctxs[i] = &diff_case_world;
    }
    /* Some later source reads the members of a type the first does not
       complete, which the unit then completes ahead of it. */
    unsigned first = 0, later = 0;
    for (int i = 0; i < n; i++) {
        wb_emitted parts;
        WBT_OK(wb_emit_parts(specs[i], WB_EMIT_FN, WB_EMIT_LIBTCC, &parts));
        if (i == 0)
            first = parts.types;
        else
            later |= parts.types;
        wb_emitted_free(&parts);
    }
    cr_assert(n < 100 || later & ~first, "types %#x, then %#x", first, later);
    WBT_OK(wb_wrappers_new(n, (const wb_spec *const *)specs, graphs, ctxs,
                           &opt, diff_batch));
    diff_made_wrapper = diff_batch_take;
    for (int i = 0; i < n; i++) {
        uint64_t seed = (uint64_t)i + 1;
        cr_assert_eq(wb_wrapper_tier(diff_batch[i]), WB_TIER_TCC);
        diff_batch_seed = seed;
        diff_case_on((diff_rng){seed * 0x9E3779B97F4A7C15ULL | 1, NULL, 0},
                     seed, tcc, 1);
        cr_assert_null(diff_batch[i]);
        wb_spec_free(specs[i]);
    }
    wb_set_grad_enabled(true);
    free(specs);
    free(graphs);
    free(ctxs);
    free(diff_batch);
}
