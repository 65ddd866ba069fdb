/*
 * wrapbake.c -- the wrapbake command: checks text specs, prints the C the
 * tcc tier compiles for one, and writes ahead-of-time C for many (aot.c).
 *
 *   wrapbake check [--json] [--allowlist LIST] FILE...
 *   wrapbake emit [--name NAME] [--libtcc] FILE
 *   wrapbake emit --aot -o DIR [--prefix PREFIX] [--allowlist LIST] FILE...
 *
 * Exit status: 0 on success, 1 when any spec or file failed, 2 on a usage
 * error.  docs/cli.md describes the output.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrapbake.h"
#include "aot.h"
#include "input.h"
#include "../spec/schema.h"
#include "../spec/spec.h"
#include "../gen/gen.h"

enum { WB_CLI_OK = 0, WB_CLI_FAILED = 1, WB_CLI_USAGE = 2 };


static const char wb_cli_usage_text[] =
    "Usage: wrapbake [--help] [--version] COMMAND [OPTIONS] FILE...\n"
    "\n"
    "Checks wrapbake text specs (ATen function schemas, optionally with\n"
    "wrapbake's extension; see docs/spec-format.md), prints the C that\n"
    "wrapbake compiles for one, and writes ahead-of-time C for a build that\n"
    "links no JIT.\n"
    "\n"
    "Commands:\n"
    "  check [--json] [--allowlist LIST] FILE...\n"
    "      Validates each spec of each FILE and prints its name, arity (the\n"
    "      number of outputs, each element of a list return one), argument\n"
    "      directions and C types, return alias kinds, and whether it can\n"
    "      be wrapped, and why not.  A spec that fails is reported and the\n"
    "      run goes on.\n"
    "  emit [--name NAME] [--libtcc] FILE\n"
    "      Prints the C of a wrapper of a spec of FILE, as\n"
    "      wb_wrapper_source gives it: for every compiler, with #line\n"
    "      directives into the spec.  With --libtcc, the text the tcc tier\n"
    "      compiles: libtcc's branch of every run, no step comments.\n"
    "  emit --aot -o DIR [--prefix PREFIX] [--allowlist LIST] FILE...\n"
    "      Writes ahead-of-time C for every spec of every FILE into DIR:\n"
    "      PREFIX_NAME_I.c per spec (its wrapper function; NAME the spec's\n"
    "      name in [A-Za-z0-9_], cut to 32 bytes), and the dispatch\n"
    "      unit PREFIX.c with its header PREFIX.h (lookup by name, make,\n"
    "      call, active tier, clear).  Prints the paths of the files; leaves\n"
    "      a file whose content is unchanged untouched.  Any spec that fails\n"
    "      fails the run, and then nothing is written.\n"    "\n"
    "Options:\n"
    "  -j, --json            check: one JSON object per spec per line\n"
    "  -a, --allowlist LIST  check, emit --aot: take only the specs LIST\n"
    "                        names, one per line (`add` takes every\n"
    "                        overload of add, `add.Tensor` only that one,\n"
    "                        `abs.default` the abs without one; `#`\n"
    "                        comments)\n"
    "  -n, --name NAME       emit: the spec to print; needed when FILE holds\n"
    "                        more than one (`add.Tensor`, `add` when add\n"
    "                        has one overload in FILE, `abs.default`)\n"
    "      --libtcc          emit: the text the tcc tier compiles\n"
    "      --aot             emit: ahead-of-time C, into the directory -o\n"
    "                        names (created when missing; its parent must\n"
    "                        exist)\n"
    "  -o, --output DIR      emit --aot: the directory to write\n"
    "  -p, --prefix PREFIX   emit --aot: the prefix of every file and name\n"
    "                        generated (a C identifier of at most 24 bytes,\n"
    "                        not the library's wb_* nor a header's name;\n"
    "                        default wb_aot)\n"
    "  -h, --help            print this help and exit\n"
    "  -V, --version         print the version and exit\n"
    "\n"
    "FILE is a text file of specs (one per line; `#` comments; a spec\n"
    "continues on a next line that is indented or starts with `)`, `]` or\n"
    "`->`, if its brackets are open, if it ends in `->`, a comma or `with`,\n"
    "or if that line, past its indentation, starts with `->`, `[` or\n"
    "`with`: docs/cli.md), or, when its name ends in .yaml or .yml, a YAML\n"
    "list of mappings with a `func:` key, as native_functions.yaml is.  `-`\n"
    "reads a text file from standard input.\n"
    "\n"
    "Exit status: 0 on success, 1 when any spec or file failed, 2 on a usage\n"
    "error.\n";

/* ---- messages ---- */

static int wb_cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int wb_cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("wrapbake: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nTry 'wrapbake --help' for more information.\n", stderr);
    return WB_CLI_USAGE;
}

/* ---- what check says about one spec ---- */

static const char *wb_cli_dir_name(wb_direction d)
{
    switch (d) {
    case WB_DIR_IN: return "in";
    case WB_DIR_INOUT: return "inout";
    case WB_DIR_OUT: return "out";
    case WB_DIR_SCALAR: return "scalar";
    }
    return "?";
}

typedef struct wb_cli_counts {
    int wrappable, unwrappable, failed, skipped;
} wb_cli_counts;

static void wb_cli_json_failure(const char *name, const char *error)
{
    fputs("{\"name\": ", stdout);
    wb_cli_json_string(stdout, name);
    fputs(", \"ok\": false, \"error\": ", stdout);
    wb_cli_json_string(stdout, error);
    fputs("}\n", stdout);
}

/* The spec outputs the returns make: an element each of a list of known
   length. */
static long long wb_cli_num_outputs(const wb_schema *sc)
{
    long long n = 0;
    for (int k = 0; k < wb_schema_num_returns(sc); k++)
        n += wb_schema_return_outputs(sc, k, NULL);
    return n;
}

/* The spec inputs the graph gets, in the order of its arguments (arg_at:
   after the effect tokens and the synthetic bases, where the members come
   last), into order; returns how many. */
static int wb_cli_graph_inputs(const wb_spec *spec, int *order)
{
    int n = 0, from = spec->ntokens + spec->ngroups;
    for (int i = 0; i < spec->ninputs; i++)
        if (spec->arg_at[i] >= 0) {
            order[spec->arg_at[i] - from] = i;
            n++;
        }
    return n;
}

/* What the text output notes beside an argument (wb_cli_print_note), as
   members present only when they say something. */
static void wb_cli_json_note(FILE *f, const wb_schema *sc, int i)
{
    wb_mutation m = wb_schema_arg_mutation(sc, i);
    unsigned flags = wb_schema_arg_flags(sc, i);
    const char *def = wb_schema_arg_default(sc, i);
    const char *dtype = wb_schema_arg_dtype(sc, i);
    char dev[32];
    const char *device = wb_schema_arg_device(sc, i, dev, sizeof dev);
    if (m != WB_MUT_NONE)
        fprintf(f, ", \"mutation\": \"%s\"", wb_mutation_name(m));
    if (flags & WB_INPUT_HIDDEN)
        fputs(", \"hidden\": true", f);
    if (flags & WB_INPUT_DETACH)
        fputs(", \"detach\": true", f);
    if (wb_schema_arg_dup_of(sc, i) >= 0)
        fprintf(f, ", \"duplicate_of\": %d", wb_schema_arg_dup_of(sc, i));
    if (wb_schema_arg_alias_of(sc, i) >= 0)
        fprintf(f, ", \"aliases\": %d", wb_schema_arg_alias_of(sc, i));
    if (dtype)
        fprintf(f, ", \"dtype\": \"%s\"", dtype);
    if (wb_schema_arg_ndim(sc, i) >= 0)
        fprintf(f, ", \"ndim\": %d", wb_schema_arg_ndim(sc, i));
    if (device)
        fprintf(f, ", \"device\": \"%s\"", device);
    if (wb_schema_arg_kwonly(sc, i))
        fputs(", \"kwonly\": true", f);
    if (def) {
        fputs(", \"default\": ", f);
        wb_cli_json_string(f, def);
    }
    long long first;
    long count = wb_schema_arg_inputs(sc, i, &first);
    if (wb_schema_arg_listed(sc, i))
        fprintf(f, ", \"elements\": %ld, \"first_input\": %lld", count,
                first);
}

static void wb_cli_json_spec(const wb_schema *sc, const wb_spec *spec,
                             const char *why)
{
    FILE *f = stdout;
    int nargs = wb_schema_num_args(sc), nret = wb_schema_num_returns(sc);
    fputs("{\"name\": ", f);
    char *name = wb_cli_full_name(sc);
    wb_cli_json_string(f, name ? name : wb_schema_name(sc));
    free(name);
    fprintf(f, ", \"ok\": true, \"wrappable\": %s", why ? "false" : "true");
    if (why) {
        fputs(", \"reason\": ", f);
        wb_cli_json_string(f, why);
    }
    fprintf(f, ", \"arity\": %lld, \"args\": [", wb_cli_num_outputs(sc));
    for (int i = 0; i < nargs; i++) {
        fputs(i ? ", {\"name\": " : "{\"name\": ", f);
        wb_cli_json_string(f, wb_schema_arg_name(sc, i));
        fputs(", \"type\": ", f);
        wb_cli_json_string(f, wb_schema_arg_type(sc, i));
        fprintf(f, ", \"dir\": \"%s\", \"ctype\": ",
                wb_cli_dir_name(wb_schema_arg_dir(sc, i)));
        wb_cli_json_string(f, wb_schema_arg_ctype(sc, i));
        wb_cli_json_note(f, sc, i);
        putc('}', f);
    }
    fputs("], \"returns\": [", f);
    for (int k = 0; k < nret; k++) {
        wb_schema_alias a = wb_schema_return_alias(sc, k);
        int base = wb_schema_return_base(sc, k);
        fprintf(f, "%s{\"alias\": \"%s\", \"base\": ", k ? ", " : "",
                wb_schema_alias_name(a));
        /* Only the input kinds have an argument index; an intermediate
           base is no argument. */
        if ((a == WB_SCHEMA_IS_INPUT || a == WB_SCHEMA_ALIAS_OF_INPUT) &&
            base >= 0)
            fprintf(f, "%d", base);
        else
            fputs("null", f);
        long long first;
        long count = wb_schema_return_outputs(sc, k, &first);
        if (wb_schema_return_number(sc, k))
            fprintf(f, ", \"ctype\": \"%s\"", wb_schema_return_number(sc, k));
        if (wb_schema_return_listed(sc, k))
            fprintf(f, ", \"elements\": %ld, \"first_output\": %lld%s",
                    count, first,
                    wb_schema_return_elementwise(sc, k)
                        ? ", \"elementwise\": true"
                        : "");
        putc('}', f);
    }
    fputs("], \"signature\": [", f);
    bool first = true;
    for (int i = 0; i < nargs; i++) {
        wb_direction d = wb_schema_arg_dir(sc, i);
        if (d == WB_DIR_SCALAR)
            continue;
        fprintf(f, "%s\"%s\"", first ? "" : ", ", wb_cli_dir_name(d));
        first = false;
    }
    fputc(']', f);
    if (spec) {
        /* The graph's side of the call, in order (wrapbake.h). */
        fprintf(f, ", \"effect_tokens\": %d, \"functional_rng\": %s, "
                "\"graph_args\": [", wb_schema_num_tokens(sc),
                wb_schema_rng(sc) ? "true" : "false");
        /* Spec inputs, which are the parameters unless a list makes an
           input per element, after the bases (synthetic_bases). */
        int order[spec->ninputs + 1];
        int n = wb_cli_graph_inputs(spec, order);
        for (int k = 0; k < n; k++)
            fprintf(f, "%s%d", k ? ", " : "", order[k]);
        fputs("], \"synthetic_bases\": [", f);
        for (int g = 0; g < spec->ngroups; g++) {
            fputs(g ? ", [" : "[", f);
            first = true;
            for (int i = 0; i < spec->ninputs; i++)
                if (spec->group_of[i] == g) {
                    fprintf(f, "%s%d", first ? "" : ", ", i);
                    first = false;
                }
            putc(']', f);
        }
        /* The updated values: the bases' mutated after the graph, then
           the inputs'. */
        fputs("], \"updated_bases\": [", f);
        first = true;
        for (int m = 0; m < spec->nupdated; m++)
            if (spec->muts[m].input < 0) {
                fprintf(f, "%s%d", first ? "" : ", ",
                        wb_spec_synth(spec, spec->muts[m].input));
                first = false;
            }
        fputs("], \"updated\": [", f);
        first = true;
        for (int m = 0; m < spec->nupdated; m++)
            if (spec->muts[m].input >= 0) {
                fprintf(f, "%s%d", first ? "" : ", ", spec->muts[m].input);
                first = false;
            }
        fprintf(f, "], \"outputs\": %d, \"intermediate_bases\": %d, "
                "\"new_views\": [", spec->noutputs, spec->nbases);
        for (int k = 0; k < spec->nmeta_members; k++)
            fprintf(f, "%s%d", k ? ", " : "", spec->meta_members[k]);
        fprintf(f, "], \"values\": %d", wb_spec_num_values(spec));
    }
    fputs("}\n", f);
}

static int wb_cli_width(const char *s) { return (int)strlen(s); }

/* A list of known length: "3 elements, inputs 1..3". */
static void wb_cli_print_elements(FILE *f, long count, const char *what,
                                  long long first)
{
    fprintf(f, "%ld element%s, %s%s %lld", count, WB_PLURAL(count),
            what, WB_PLURAL(count), first);
    if (count > 1)
        fprintf(f, "..%lld", first + count - 1);
}

/* What a person reviewing an argument wants beside its type: whether it is
   keyword-only and its default, as ATen prints it. */
static bool wb_cli_has_note(const wb_schema *sc, int i)
{
    char dev[32];
    return wb_schema_arg_listed(sc, i) || wb_schema_arg_kwonly(sc, i) ||
           wb_schema_arg_default(sc, i) ||
           wb_schema_arg_mutation(sc, i) != WB_MUT_NONE ||
           wb_schema_arg_flags(sc, i) || wb_schema_arg_dup_of(sc, i) >= 0 ||
           wb_schema_arg_alias_of(sc, i) >= 0 ||
           wb_schema_arg_dtype(sc, i) || wb_schema_arg_ndim(sc, i) >= 0 ||
           wb_schema_arg_device(sc, i, dev, sizeof dev);
}

/* What a reviewer wants next to an argument: how the wrapper writes it back
   and what the extension says of it, then keyword-only and the default. */
static void wb_cli_print_note(FILE *f, const wb_schema *sc, int i)
{
    const char *def = wb_schema_arg_default(sc, i);
    wb_mutation m = wb_schema_arg_mutation(sc, i);
    unsigned flags = wb_schema_arg_flags(sc, i);
    const char *sep = "";
    if (wb_schema_arg_listed(sc, i)) {
        long long first;
        long count = wb_schema_arg_inputs(sc, i, &first);
        wb_cli_print_elements(f, count, "input", first);
        fputs(m != WB_MUT_NONE ? ", each: " : "", f);
        sep = m != WB_MUT_NONE ? "" : ", ";
    }
    if (m != WB_MUT_NONE) {
        fprintf(f, "%s mutation", wb_mutation_name(m));
        sep = ", ";
    }
    if (flags & WB_INPUT_HIDDEN) {
        fprintf(f, "%shidden from autograd", sep);
        sep = ", ";
    }
    if (flags & WB_INPUT_DETACH) {
        fprintf(f, "%sdetached", sep);
        sep = ", ";
    }
    if (wb_schema_arg_dup_of(sc, i) >= 0) {
        int j = wb_schema_arg_dup_of(sc, i);
        fprintf(f, "%sduplicate of arg %d '%s'", sep, j,
                wb_schema_arg_name(sc, j));
        sep = ", ";
    }
    if (wb_schema_arg_alias_of(sc, i) >= 0) {
        int j = wb_schema_arg_alias_of(sc, i);
        fprintf(f, "%son the storage of arg %d '%s' (a synthetic base)", sep,
                j, wb_schema_arg_name(sc, j));
        sep = ", ";
    }
    /* The facts the extension declares, checked at every call. */
    char dev[32];
    const char *dtype = wb_schema_arg_dtype(sc, i);
    const char *device = wb_schema_arg_device(sc, i, dev, sizeof dev);
    if (dtype) {
        fprintf(f, "%sdtype %s", sep, dtype);
        sep = ", ";
    }
    if (wb_schema_arg_ndim(sc, i) >= 0) {
        fprintf(f, "%sndim %d", sep, wb_schema_arg_ndim(sc, i));
        sep = ", ";
    }
    if (device) {
        fprintf(f, "%son %s", sep, device);
        sep = ", ";
    }
    if (wb_schema_arg_kwonly(sc, i)) {
        fprintf(f, "%skeyword-only", sep);
        sep = ", ";
    }
    if (def)
        fprintf(f, "%sdefault %s", sep, def);
}

/* A return as ATen writes it: its type, then its name if it has one,
   padded to width. */
static int wb_cli_ret_width(const wb_schema *sc, int k)
{
    const char *name = wb_schema_return_name(sc, k);
    return wb_cli_width(wb_schema_return_type(sc, k)) +
           (name && *name ? 1 + wb_cli_width(name) : 0);
}

static void wb_cli_print_ret(FILE *f, const wb_schema *sc, int k, int width)
{
    const char *name = wb_schema_return_name(sc, k);
    bool named = name && *name;
    fprintf(f, "%s%s%s%*s", wb_schema_return_type(sc, k), named ? " " : "",
            named ? name : "", width - wb_cli_ret_width(sc, k), "");
}

/* Whether return j views return k as its [base]. */
static bool wb_cli_ret_views(const wb_schema *sc, int j, int k)
{
    return j != k &&
           wb_schema_return_kind(sc, j) ==
               WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT &&
           wb_schema_return_spec_base(sc, j) == k;
}

/* Which returns other returns view, one flag a return, in one pass; NULL
   when out of memory, and then wb_cli_ret_viewed looks at every return. */
static bool *wb_cli_rets_viewed(const wb_schema *sc)
{
    int nret = wb_schema_num_returns(sc);
    bool *viewed = calloc((size_t)nret + 1, sizeof *viewed);
    for (int j = 0; viewed && j < nret; j++) {
        int k = wb_schema_return_spec_base(sc, j);
        if (k >= 0 && k < nret && wb_cli_ret_views(sc, j, k))
            viewed[k] = true;
    }
    return viewed;
}

static bool wb_cli_ret_viewed(const wb_schema *sc, const bool *viewed, int k)
{
    if (viewed)
        return viewed[k];
    for (int j = 0; j < wb_schema_num_returns(sc); j++)
        if (wb_cli_ret_views(sc, j, k))
            return true;
    return false;
}

/* How a return relates to the rest, in words: its alias kind, what it
   aliases, and the spec's variant of the kind when there is one; viewed
   from wb_cli_rets_viewed. */
static void wb_cli_ret_relation(FILE *f, const wb_schema *sc,
                                const bool *viewed, int k)
{
    int nargs = wb_schema_num_args(sc), nret = wb_schema_num_returns(sc);
    wb_schema_alias a = wb_schema_return_alias(sc, k);
    int base = wb_schema_return_base(sc, k);
    wb_alias kind = wb_schema_return_kind(sc, k);
    int spec_base = wb_schema_return_spec_base(sc, k);
    if (wb_schema_return_listed(sc, k)) {
        long long first;
        long count = wb_schema_return_outputs(sc, k, &first);
        wb_cli_print_elements(f, count, "output", first);
        fputs(", each ", f);
    }
    const char *number = wb_schema_return_number(sc, k);
    if (number && strcmp(number, "None") == 0) {
        fputs("None, passed as NULL", f);
        return;
    }
    if (number) {
        fprintf(f, "a number (%s), passed as it is", number);
        return;
    }
    fputs(wb_schema_alias_name(a), f);
    if ((a == WB_SCHEMA_IS_INPUT || a == WB_SCHEMA_ALIAS_OF_INPUT) &&
        base >= 0 && base < nargs) {
        fprintf(f, " of arg %d '%s'%s", base, wb_schema_arg_name(sc, base),
                wb_schema_return_elementwise(sc, k) ? ", element by element"
                                                    : "");
        if (a == WB_SCHEMA_IS_INPUT && wb_schema_arg_member(sc, base))
            fputs(", a view of its synthetic base", f);
    } else if (kind == WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT &&
               spec_base >= 0 && spec_base < nret) {
        const char *name = wb_schema_return_name(sc, spec_base);
        fprintf(f, " of return %d '%s', its base", spec_base,
                name && *name ? name : wb_schema_return_type(sc, spec_base));
    } else if (a == WB_SCHEMA_ALIAS_OF_INTERMEDIATE && base >= 0) {
        fprintf(f, " (intermediate base %d%s)", base,
                kind == WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT
                    ? ", saved as an output"
                    : "");
    } else if (kind == WB_OUT_UNSAFE_VIEW_ALIAS) {
        fputs(" (an unsafe view)", f);
    } else if (kind == WB_OUT_CUSTOM_FUNCTION_VIEW) {
        fputs(" (a custom-function view)", f);
    }
    /* A [base] return is a plain output that other returns view. */
    if (wb_cli_ret_viewed(sc, viewed, k))
        fputs(" (the base its alias set views)", f);
}

/* The block a person reads: the verdict first, then what the wrapper's
   signature will be, one aligned row per argument and per return. */
/* What the graph gets and returns, in order (wrapbake.h): its arguments
   and its values, for a spec that validated. */
static void wb_cli_text_graph(FILE *f, const wb_spec *spec)
{
    int tokens = spec->ntokens;
    const char *sep = "";
    int nga = wb_spec_num_graph_args(spec);
    fprintf(f, "  graph      %d arg%s: ", nga, WB_PLURAL(nga));
    if (tokens) {
        fprintf(f, "%d effect token%s", tokens, WB_PLURAL(tokens));
        sep = ", ";
    }
    /* The synthetic bases, the inputs outside them, then the members for
       their views: the graph's order (wb_spec_num_graph_args). */
    for (int g = 0; g < spec->ngroups; g++) {
        fprintf(f, "%sthe synthetic base of %s", sep,
                spec->inputs[spec->group_first[g]].name);
        sep = ", ";
    }
    int order[spec->ninputs + 1];
    int n = wb_cli_graph_inputs(spec, order);
    for (int k = 0; k < n; k++) {
        fprintf(f, "%s%s%s", sep, spec->inputs[order[k]].name,
                spec->group_of[order[k]] >= 0 ? "'s view" : "");
        sep = ", ";
    }
    if (spec->rng)
        fprintf(f, "%sthe RNG's seed and offset", sep);
    int values = wb_spec_num_values(spec);
    fprintf(f, "\n             %d value%s: ", values, WB_PLURAL(values));
    sep = "";
    if (tokens) {
        fprintf(f, "%d effect token%s", tokens, WB_PLURAL(tokens));
        sep = ", ";
    }
    for (int m = 0; m < spec->nupdated; m++) {
        int g = wb_spec_synth(spec, spec->muts[m].input);
        fprintf(f, "%supdated %s%s", sep, g >= 0 ? "base of " : "",
                spec->inputs[g >= 0 ? spec->group_first[g]
                                    : spec->muts[m].input].name);
        sep = ", ";
    }
    int nout = spec->noutputs, bases = spec->nbases;
    fprintf(f, "%s%d return%s", sep, nout, WB_PLURAL(nout));
    for (int k = 0; k < spec->nmeta_members; k++)
        fprintf(f, ", %s's new view",
                spec->inputs[spec->meta_members[k]].name);
    fprintf(f, ", %d intermediate base%s%s\n", bases, WB_PLURAL(bases),
            spec->rng ? ", the RNG's new offset" : "");
}

static void wb_cli_text_spec(const wb_schema *sc, const wb_spec *spec,
                             const char *why, const wb_cli_entry *en)
{
    FILE *f = stdout;
    int nargs = wb_schema_num_args(sc), nret = wb_schema_num_returns(sc);
    int wname = 0, wtype = 0, wdir = 0, wctype = 0, wret = 0;
    for (int i = 0; i < nargs; i++) {
        int w = wb_cli_width(wb_schema_arg_name(sc, i));
        wname = w > wname ? w : wname;
        w = wb_cli_width(wb_schema_arg_type(sc, i));
        wtype = w > wtype ? w : wtype;
        w = wb_cli_width(wb_cli_dir_name(wb_schema_arg_dir(sc, i)));
        wdir = w > wdir ? w : wdir;
        w = wb_cli_width(wb_schema_arg_ctype(sc, i));
        wctype = w > wctype ? w : wctype;
    }
    for (int k = 0; k < nret; k++) {
        int w = wb_cli_ret_width(sc, k);
        wret = w > wret ? w : wret;
    }
    /* The widest index is that of the last argument or return. */
    int widx = 1;
    for (int last = (nargs > nret ? nargs : nret) - 1; last >= 10; last /= 10)
        widx++;

    char *name = wb_cli_full_name(sc);
    fprintf(f, "%s  (%s:%d)\n", name ? name : wb_schema_name(sc), en->file,
            en->line);
    free(name);
    if (why)
        fprintf(f, "  wrappable  no: %s\n", why);
    else
        fputs("  wrappable  yes\n", f);
    fprintf(f, "  arity      %lld\n", wb_cli_num_outputs(sc));
    if (nargs == 0)
        fputs("  args       (none)\n", f);
    for (int i = 0; i < nargs; i++) {
        bool note = wb_cli_has_note(sc, i);
        fprintf(f, "%s%*d  %-*s  %-*s  %-*s  %-*s",
                i ? "             " : "  args       ", widx, i, wname,
                wb_schema_arg_name(sc, i), wtype, wb_schema_arg_type(sc, i),
                wdir, wb_cli_dir_name(wb_schema_arg_dir(sc, i)),
                note ? wctype : 0, wb_schema_arg_ctype(sc, i));
        if (note) {
            fputs("  ", f);
            wb_cli_print_note(f, sc, i);
        }
        putc('\n', f);
    }
    if (nret == 0)
        fputs("  returns    (none)\n", f);
    bool *viewed = wb_cli_rets_viewed(sc);
    for (int k = 0; k < nret; k++) {
        fprintf(f, "%s%*d  ", k ? "             " : "  returns    ", widx, k);
        wb_cli_print_ret(f, sc, k, wret);
        fputs("  ", f);
        wb_cli_ret_relation(f, sc, viewed, k);
        putc('\n', f);
    }
    free(viewed);
    fputs("  signature  (", f);
    bool first = true;
    for (int i = 0; i < nargs; i++) {
        wb_direction d = wb_schema_arg_dir(sc, i);
        if (d == WB_DIR_SCALAR)
            continue;
        fprintf(f, "%s%s %s", first ? "" : ", ", wb_cli_dir_name(d),
                wb_schema_arg_name(sc, i));
        first = false;
    }
    fputs(")\n", f);
    if (spec)
        wb_cli_text_graph(f, spec);
    putc('\n', f);
}

/* A spec that failed: name is what names it, if anything, and error the
   whole message (which says where). */
static void wb_cli_report_failure(bool json, const char *name,
                                  const char *error, wb_cli_counts *counts)
{
    counts->failed++;
    if (json)
        wb_cli_json_failure(name, error);
    else
        wb_cli_error_text(error);
}

/* A message of the library's that does not say where: prefixed with the
   spec's file and line. */
static char *wb_cli_located(const wb_cli_entry *en, const char *msg)
{
    size_t n = strlen(en->file) + strlen(msg) + 32;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s:%d: %s", en->file, en->line, msg);
    return p;
}

/* Checks one entry: parses it, and when it can be wrapped builds and
   validates its spec, which is what wrapping it would do first. */
static void wb_cli_check_entry(const wb_cli_entry *en, bool json,
                               wb_cli_allowlist *al, wb_cli_counts *counts)
{
    if (en->error) {
        /* A reader error names no spec, so an allowlist does not take it. */
        if (al)
            counts->skipped++;
        else
            wb_cli_report_failure(json, NULL, en->error, counts);
        return;
    }
    wb_schema *sc = NULL;
    if (wb_schema_parse(en->text, en->file, en->line, &sc) != WB_OK) {
        char *name = wb_cli_text_name(en->text);
        if (al && (!name || !wb_cli_allowlist_takes(al, name)))
            counts->skipped++;
        else
            wb_cli_report_failure(json, name, wb_last_error(), counts);
        free(name);
        return;
    }
    char *full = wb_cli_full_name(sc);
    const char *shown = full ? full : wb_schema_name(sc);
    if (al && !wb_cli_allowlist_takes(al, shown)) {
        counts->skipped++;
        free(full);
        wb_schema_free(sc);
        return;
    }
    const char *why = wb_schema_unwrappable(sc);
    wb_spec *spec = NULL;
    if (!why) {
        if (wb_schema_to_spec(sc, &spec) != WB_OK ||
            wb_spec_validate(spec) != WB_OK) {
            char *msg = wb_cli_located(en, wb_last_error());
            wb_cli_report_failure(json, shown, msg ? msg : "out of memory",
                                  counts);
            free(msg);
            free(full);
            wb_spec_free(spec);
            wb_schema_free(sc);
            return;
        }
    }
    if (why)
        counts->unwrappable++;
    else
        counts->wrappable++;
    if (json)
        wb_cli_json_spec(sc, spec, why);
    else
        wb_cli_text_spec(sc, spec, why, en);
    free(full);
    wb_spec_free(spec);
    wb_schema_free(sc);
}

static int wb_cli_check(bool json, const char *allowlist, int nfiles,
                        char **files)
{
    wb_cli_allowlist al = {0};
    wb_cli_counts counts = {0};
    char *err = NULL;
    int files_failed = 0;
    if (allowlist && wb_cli_allowlist_read(allowlist, &al, &err) != 0) {
        wb_cli_error_text(err ? err : "out of memory");
        free(err);
        wb_cli_allowlist_free(&al);
        return WB_CLI_FAILED;
    }
    for (int i = 0; i < nfiles; i++) {
        wb_cli_entries entries = {0};
        int rc = wb_cli_read_file(files[i], &entries, &err);
        /* The entries read before a problem in the file are still
           checked; the problem is reported after them, where it is. */
        for (size_t k = 0; k < entries.n; k++)
            wb_cli_check_entry(&entries.v[k], json, allowlist ? &al : NULL,
                               &counts);
        if (rc != 0) {
            wb_cli_error_text(err ? err : "out of memory");
            files_failed++;
        }
        free(err);
        err = NULL;
        wb_cli_entries_free(&entries);
    }
    wb_cli_allowlist_warn_unused(&al);
    if (!json) {
        int total = counts.wrappable + counts.unwrappable + counts.failed;
        printf("%d spec%s: %d wrappable, %d not wrappable, %d failed",
               total, WB_PLURAL(total), counts.wrappable,
               counts.unwrappable, counts.failed);
        if (allowlist)
            printf("; %d left out by the allowlist", counts.skipped);
        if (files_failed)
            printf("; %d file%s could not be read whole", files_failed,
                   WB_PLURAL(files_failed));
        putchar('\n');
    }
    wb_cli_allowlist_free(&al);
    return counts.failed || files_failed ? WB_CLI_FAILED : WB_CLI_OK;
}

/* ---- emit ---- */

/* The spec's name for picking it: the parser's, else the text's. */
static char *wb_cli_entry_name(const wb_cli_entry *en)
{
    if (en->error)
        return NULL;
    wb_schema *sc = NULL;
    if (wb_schema_parse(en->text, en->file, en->line, &sc) != WB_OK)
        return wb_cli_text_name(en->text);
    char *name = wb_cli_full_name(sc);
    wb_schema_free(sc);
    return name;
}

/* Prints the C of the chosen entry in form, exactly as a wrapper's
   source (WB_EMIT_LINES) or the tcc tier's text (WB_EMIT_LIBTCC) is
   emitted (src/tiers/tiers.c), with the tiers' function name. */
static int wb_cli_emit_entry(const wb_cli_entry *en, wb_emit_form form)
{
    if (en->error) {
        wb_cli_error_text(en->error);
        return WB_CLI_FAILED;
    }
    wb_schema *sc = NULL;
    wb_spec *spec = NULL;
    char *c = NULL, *msg = NULL;
    int rc = WB_CLI_FAILED;
    if (wb_schema_parse(en->text, en->file, en->line, &sc) != WB_OK) {
        wb_cli_error_text(wb_last_error());
        return WB_CLI_FAILED;
    }
    if (wb_schema_to_spec(sc, &spec) != WB_OK ||
        wb_spec_validate(spec) != WB_OK ||
        wb_emit(spec, WB_EMIT_FN, form, &c) != WB_OK) {
        msg = wb_cli_located(en, wb_last_error());
        wb_cli_error_text(msg ? msg : "out of memory");
    } else {
        fputs(c, stdout);
        rc = WB_CLI_OK;
    }
    free(msg);
    free(c);
    wb_spec_free(spec);
    wb_schema_free(sc);
    return rc;
}

static int wb_cli_emit(const char *want, const char *path,
                       wb_emit_form form)
{
    wb_cli_entries entries = {0};
    char *err = NULL;
    int rc = WB_CLI_FAILED;
    if (wb_cli_read_file(path, &entries, &err) != 0) {
        wb_cli_error_text(err ? err : "out of memory");
        goto done;
    }
    const char *file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    if (entries.n == 0) {
        wb_cli_error("%s: holds no spec\n", file);
        goto done;
    }
    if (!want && entries.n == 1) {
        rc = wb_cli_emit_entry(&entries.v[0], form);
        goto done;
    }
    /* Several specs: list them when none was named, else find the one;
       when several match, the first is listed once the second shows. */
    size_t found = 0, pick = 0;
    char *first = NULL;
    for (size_t i = 0; i < entries.n; i++) {
        char *name = wb_cli_entry_name(&entries.v[i]);
        if (!want) {
            if (i == 0)
                wb_cli_error("wrapbake: %s holds %zu specs; pick one with "
                             "--name:\n", file, entries.n);
            wb_cli_error("  %s:%d: %s\n", file, entries.v[i].line,
                         name ? name : "(no name)");
        } else if (name && wb_cli_name_matches(want, name)) {
            if (found == 1)
                wb_cli_error("wrapbake: several specs in %s are named "
                             "'%s':\n  %s:%d: %s\n", file, want, file,
                             entries.v[pick].line, first);
            if (found >= 1)
                wb_cli_error("  %s:%d: %s\n", file, entries.v[i].line, name);
            if (found == 0) {
                pick = i;
                first = name;
                name = NULL;
            }
            found++;
        }
        free(name);
    }
    free(first);
    if (!want) {
        fputs("Try 'wrapbake --help' for more information.\n", stderr);
        rc = WB_CLI_USAGE;
    } else if (found == 0) {
        wb_cli_error("wrapbake: no spec in %s is named '%s'\n", file, want);
    } else if (found == 1) {
        rc = wb_cli_emit_entry(&entries.v[pick], form);
    }
done:
    free(err);
    wb_cli_entries_free(&entries);
    return rc;
}

/* ---- the command line ---- */

/* Reports what getopt_long rejected (its own messages are off, so that
   they name the command). */
static int wb_cli_bad_option(const char *cmd, int c, char **argv)
{
    const char *arg = argv[optind - 1], *sep = cmd[0] ? ": " : "";
    if (c == ':')
        return wb_cli_usage_error("%s%soption '%s' needs an argument", cmd,
                                  sep, arg);
    /* A long option given a value it does not take names itself up to
       the '='; getopt_long then sets optopt to the option's code. */
    const char *eq = strchr(arg, '=');
    if (strncmp(arg, "--", 2) == 0 && eq && optopt)
        return wb_cli_usage_error("%s%soption '%.*s' takes no argument", cmd,
                                  sep, (int)(eq - arg), arg);
    if (strncmp(arg, "--", 2) != 0 && optopt > ' ' && optopt < 127)
        return wb_cli_usage_error("%s%sunknown option '-%c'", cmd, sep,
                                  optopt);
    return wb_cli_usage_error("%s%sunknown option '%s'", cmd, sep, arg);
}

static int wb_cli_main_check(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"allowlist", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    bool json = false;
    const char *allowlist = NULL;
    int c;
    while ((c = getopt_long(argc, argv, ":ja:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json = true; break;
        case 'a':
            if (allowlist)
                return wb_cli_usage_error("check: --allowlist given twice");
            allowlist = optarg;
            break;
        case 'h': fputs(wb_cli_usage_text, stdout); return WB_CLI_OK;
        default: return wb_cli_bad_option("check", c, argv);
        }
    }
    if (optind >= argc)
        return wb_cli_usage_error("check: no FILE given ('-' reads standard "
                                  "input)");
    return wb_cli_check(json, allowlist, argc - optind, argv + optind);
}

/* emit --aot: the options checked, the allowlist read. */
static int wb_cli_main_aot(const char *dir, const char *prefix,
                           const char *allowlist, int nfiles, char **files)
{
    wb_cli_allowlist al = {0};
    char *err = NULL;
    if (!dir)
        return wb_cli_usage_error("emit --aot: no output directory (-o DIR)");
    if (!prefix)
        prefix = WB_AOT_PREFIX;
    const char *bad = wb_cli_aot_prefix_bad(prefix);
    if (bad)
        return wb_cli_usage_error("emit --aot: the prefix '%s' %s", prefix,
                                  bad);
    if (nfiles < 1)
        return wb_cli_usage_error("emit: no FILE given ('-' reads standard "
                                  "input)");
    if (allowlist && wb_cli_allowlist_read(allowlist, &al, &err) != 0) {
        wb_cli_error_text(err ? err : "out of memory");
        free(err);
        wb_cli_allowlist_free(&al);
        return WB_CLI_FAILED;
    }
    int rc = wb_cli_aot(dir, prefix, allowlist ? &al : NULL, nfiles, files);
    wb_cli_allowlist_free(&al);
    return rc;
}

static int wb_cli_main_emit(int argc, char **argv)
{
    enum { WB_CLI_OPT_AOT = 256, WB_CLI_OPT_LIBTCC };
    static const struct option opts[] = {
        {"name", required_argument, NULL, 'n'},
        {"libtcc", no_argument, NULL, WB_CLI_OPT_LIBTCC},
        {"aot", no_argument, NULL, WB_CLI_OPT_AOT},
        {"output", required_argument, NULL, 'o'},
        {"prefix", required_argument, NULL, 'p'},
        {"allowlist", required_argument, NULL, 'a'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *name = NULL, *dir = NULL, *prefix = NULL, *allowlist = NULL;
    bool aot = false, libtcc = false;
    int c;
    while ((c = getopt_long(argc, argv, ":n:o:p:a:h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (name)
                return wb_cli_usage_error("emit: --name given twice");
            name = optarg;
            break;
        case WB_CLI_OPT_AOT: aot = true; break;
        case WB_CLI_OPT_LIBTCC: libtcc = true; break;
        case 'o':
            if (dir)
                return wb_cli_usage_error("emit: --output given twice");
            dir = optarg;
            break;
        case 'p':
            if (prefix)
                return wb_cli_usage_error("emit: --prefix given twice");
            prefix = optarg;
            break;
        case 'a':
            if (allowlist)
                return wb_cli_usage_error("emit: --allowlist given twice");
            allowlist = optarg;
            break;
        case 'h': fputs(wb_cli_usage_text, stdout); return WB_CLI_OK;
        default: return wb_cli_bad_option("emit", c, argv);
        }
    }
    if (aot) {
        if (name)
            return wb_cli_usage_error("emit --aot: --name does not apply; "
                                      "every spec is generated (--allowlist "
                                      "picks some)");
        if (libtcc)
            return wb_cli_usage_error("emit --aot: --libtcc does not apply; "
                                      "ahead-of-time C is for the system "
                                      "compiler");
        return wb_cli_main_aot(dir, prefix, allowlist, argc - optind,
                               argv + optind);
    }
    if (dir || prefix || allowlist)
        return wb_cli_usage_error("emit: --output, --prefix and --allowlist "
                                  "go with --aot");
    if (optind >= argc)
        return wb_cli_usage_error("emit: no FILE given ('-' reads standard "
                                  "input)");
    if (argc - optind > 1)
        return wb_cli_usage_error("emit: one FILE only, %d given",
                                  argc - optind);
    return wb_cli_emit(name, argv[optind],
                       libtcc ? WB_EMIT_LIBTCC : WB_EMIT_LINES);
}

/* --help and --version stand alone: an argument after either is a usage
   error.  getopt_long has just returned the first option, and leaves
   optind on a bundle whose later letters it has yet to read (-Vh). */
static int wb_cli_alone(char **argv)
{
    if (optind == 1)
        return wb_cli_usage_error("-%c takes no argument, '-%s' given",
                                  argv[1][1], argv[1] + 2);
    return wb_cli_usage_error("%s takes no argument, '%s' given",
                              argv[optind - 1], argv[optind]);
}

static int wb_cli_finish(int rc)
{
    /* A full disk or a closed pipe shows up here, not in the printing. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fputs("wrapbake: error writing the output\n", stderr);
        return rc == WB_CLI_OK ? WB_CLI_FAILED : rc;
    }
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int c;
    opterr = 0;
    /* "+": stop at the command, whose options are its own. */
    while ((c = getopt_long(argc, argv, "+:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            if (optind < argc)
                return wb_cli_alone(argv);
            fputs(wb_cli_usage_text, stdout);
            return wb_cli_finish(0);
        case 'V':
            if (optind < argc)
                return wb_cli_alone(argv);
            printf("wrapbake %s\n", wb_version());
            return wb_cli_finish(0);
        default: return wb_cli_bad_option("", c, argv);
        }
    }
    if (optind >= argc)
        return wb_cli_usage_error("no COMMAND given (check or emit)");
    const char *cmd = argv[optind];
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    /* glibc starts a fresh scan, its internal state included, at optind
       0; the command's own argv[0] is the command name. */
    optind = 0;
    int rc;
    if (strcmp(cmd, "check") == 0)
        rc = wb_cli_main_check(sub_argc, sub_argv);
    else if (strcmp(cmd, "emit") == 0)
        rc = wb_cli_main_emit(sub_argc, sub_argv);
    else
        rc = wb_cli_usage_error("unknown command '%s' (check or emit)", cmd);
    return wb_cli_finish(rc);
}
