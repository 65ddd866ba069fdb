/*
 * aot.c -- `wrapbake emit --aot`: ahead-of-time C for a set of specs.
 *
 * For graph i named NAME the generator writes PREFIX_NAME_i.c, the
 * emitter's wrapper function (without #line directives, as the fingerprint
 * is taken) named after the file, under a banner that quotes the spec; and
 * once PREFIX.c and PREFIX.h, the dispatch unit.  The dispatch unit embeds
 * each spec's text and fingerprint: it parses the text when a wrapper is
 * made and hands both to wb_wrapper_new_aot, which refuses code that this
 * library would no longer generate for the spec.  Nothing else of the
 * library is needed at run time, so the program links without libtcc.
 *
 * The output depends only on the input files, their names as given, the
 * prefix and this wrapbake: no time, no absolute path, no order but the
 * input's, so it regenerates byte for byte.  Spec text reaches the output
 * only inside comments and string literals, escaped; names reach
 * identifiers only through wb_aot_ident, which keeps [A-Za-z0-9_].
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aot.h"
#include "../spec/schema.h"
#include "../gen/gen.h"

/* A spec line longer than this is cut into several literals, so that no
   string literal passes the 4095 bytes a C11 compiler must accept. */
#define WB_AOT_PIECE 1024
/* The longest part of a function name taken from a spec's name. */
#define WB_AOT_NAME_PART 32

typedef struct wb_aot_graph {
    const wb_cli_entry *en;  /* where it came from */
    char *name;              /* the full name lookups use */
    char *text;              /* the spec text, trimmed */
    char fn[WB_AOT_MAX_PREFIX + WB_AOT_NAME_PART + 16]; /* function, file */
    char fp[WB_FINGERPRINT_LEN + 1];
    char *code;              /* the emitter's output */
} wb_aot_graph;

typedef struct wb_aot {
    const char *dir, *prefix;
    char upper[WB_AOT_MAX_PREFIX + 1];  /* the prefix in capitals */
    wb_aot_graph *g;
    int n, cap;
    int failed;
} wb_aot;

#define WB_AOT_STR(x) #x
#define WB_AOT_XSTR(x) WB_AOT_STR(x)

const char *wb_cli_aot_prefix_bad(const char *prefix)
{
    static const char not_ident[] = "is not a C identifier of at most "
                                    WB_AOT_XSTR(WB_AOT_MAX_PREFIX) " bytes";
    size_t n = strlen(prefix);
    const char *p = prefix;
    if (n == 0 || n > WB_AOT_MAX_PREFIX || (p[0] >= '0' && p[0] <= '9'))
        return not_ident;
    for (; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return not_ident;
    /* The files declare PREFIX_* and PREFIX.h, which a build finds on
       its include path before the library's wrapbake.h (guard WRAPBAKE_H,
       names wb_*) and the C library's headers. */
    static const char *const headers[] = {
        "wrapbake", "dlpack", "assert", "complex", "ctype", "errno", "fenv",
        "float", "inttypes", "iso646", "limits", "locale", "math", "setjmp",
        "signal", "stdalign", "stdarg", "stdatomic", "stdbool", "stddef",
        "stdint", "stdio", "stdlib", "stdnoreturn", "string", "tgmath",
        "threads", "time", "uchar", "wchar", "wctype"};
    if (prefix[0] == '_')
        return "starts with '_', as names the C library keeps do";
    if (strcmp(prefix, "wb") == 0 ||
        (strncmp(prefix, "wb_", 3) == 0 && strncmp(prefix, "wb_aot", 6) != 0))
        return "names the library's own (wb_*)";
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++)
        if (strcasecmp(prefix, headers[i]) == 0)
            return "would make a header that hides one the files include";
    return NULL;
}

/* ---- text ---- */

/* The spec text as it will be embedded: blanks at the ends of lines, blank
   lines around it and the first line's indentation (a YAML value's
   padding) dropped; none of it changes what the text says. */
static char *wb_aot_trim(const char *text)
{
    wb_buf b = {0};
    const char *p = text;
    bool first = true;
    size_t blank = 0;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        size_t k = n;
        while (k && (p[k - 1] == ' ' || p[k - 1] == '\t' || p[k - 1] == '\r'))
            k--;
        size_t s = 0;
        if (first)
            while (s < k && (p[s] == ' ' || p[s] == '\t'))
                s++;
        if (s == k) {
            blank += !first;
        } else {
            for (; blank; blank--)
                wb_buf_printf(&b, "\n");
            wb_buf_printf(&b, "%s%.*s", first ? "" : "\n", (int)(k - s), p + s);
            first = false;
        }
        p += n + (end != NULL);
    }
    return wb_buf_take(&b);
}

/* One line of text for a C comment: backslashes, non-printable bytes,
   the "/" "*" pairs that open or close a comment and the "??" that starts
   a trigraph are escaped, so the comment says the text and nothing more. */
static void wb_aot_comment_line(wb_buf *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        char next = i + 1 < n ? p[i + 1] : '\0';
        if (c == '\\')
            wb_buf_printf(b, "\\\\");
        else if ((c == '*' && next == '/') || (c == '/' && next == '*'))
            wb_buf_printf(b, "%c\\", c);
        else if (c == '?' && i > 0 && p[i - 1] == '?')
            wb_buf_printf(b, "\\x3f");
        else if (c < 0x20 || c > 0x7e)
            wb_buf_printf(b, "\\x%c%c", "0123456789abcdef"[c >> 4],
                          "0123456789abcdef"[c & 15]);
        else
            wb_buf_printf(b, "%c", c);
    }
}

/* Text over lines, each after lead, as comment lines. */
static void wb_aot_comment(wb_buf *b, const char *lead, const char *text)
{
    for (const char *p = text;;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        wb_buf_printf(b, "%s", lead);
        wb_aot_comment_line(b, p, n);
        wb_buf_printf(b, "\n");
        if (!end)
            break;
        p = end + 1;
    }
}

/* n bytes of p as one C string literal: quotes, backslashes, the second
   '?' of a trigraph and non-printable bytes escaped (the last as three
   octal digits, which never swallow a digit after them). */
static void wb_aot_literal(wb_buf *b, const char *p, size_t n)
{
    wb_buf_printf(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '"' || c == '\\')
            wb_buf_printf(b, "\\%c", c);
        else if (c == '\n')
            wb_buf_printf(b, "\\n");
        else if (c == '?' && i > 0 && p[i - 1] == '?')
            wb_buf_printf(b, "\\?");
        else if (c < 0x20 || c > 0x7e)
            wb_buf_printf(b, "\\%c%c%c", '0' + (c >> 6), '0' + ((c >> 3) & 7),
                          '0' + (c & 7));
        else
            wb_buf_printf(b, "%c", c);
    }
    wb_buf_printf(b, "\"");
}

/* The identifier part of a name: [A-Za-z0-9_] kept, anything else '_',
   at most WB_AOT_NAME_PART bytes, "graph" when nothing is left. */
static void wb_aot_ident(const char *name, char *out)
{
    size_t o = 0;
    for (const char *p = name; *p && o < WB_AOT_NAME_PART; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_';
        out[o++] = ok ? c : '_';
    }
    out[o] = '\0';
    if (!o)
        strcpy(out, "graph");
}

/* ---- reading the specs ---- */

static wb_aot_graph *wb_aot_push(wb_aot *a)
{
    if (a->n == a->cap) {
        int cap = a->cap ? a->cap * 2 : 16;
        wb_aot_graph *g = realloc(a->g, (size_t)cap * sizeof *g);
        if (!g)
            return NULL;
        a->g = g;
        a->cap = cap;
    }
    memset(&a->g[a->n], 0, sizeof *a->g);
    return &a->g[a->n++];
}

/* A message of the library's, prefixed with where the spec is. */
static void wb_aot_fail_at(wb_aot *a, const wb_cli_entry *en, const char *msg)
{
    wb_cli_error("%s:%d: ", en->file, en->line);
    wb_cli_error_text(msg);
    a->failed++;
}

/* Takes one entry: parses it as `wrapbake emit` does, for messages that
   say where, then makes the spec the dispatch unit will make, from the
   trimmed text, and the code and fingerprint for it. */
static void wb_aot_take(wb_aot *a, const wb_cli_entry *en,
                        wb_cli_allowlist *al)
{
    wb_schema *sc = NULL;
    wb_spec *spec = NULL;
    char *name = NULL, *text = NULL, *code = NULL;
    if (en->error) {
        if (!al) {
            wb_cli_error("%s\n", en->error);
            a->failed++;
        }
        return;
    }
    if (wb_schema_parse(en->text, en->file, en->line, &sc) != WB_OK) {
        char *shown = wb_cli_text_name(en->text);
        if (!al || (shown && wb_cli_allowlist_takes(al, shown))) {
            wb_cli_error_text(wb_last_error());
            a->failed++;
        }
        free(shown);
        return;
    }
    if (!(name = wb_cli_full_name(sc)))
        goto oom;
    if (al && !wb_cli_allowlist_takes(al, name))
        goto done;
    if (wb_schema_to_spec(sc, &spec) != WB_OK ||
        wb_spec_validate(spec) != WB_OK) {
        wb_aot_fail_at(a, en, wb_last_error());
        goto done;
    }
    wb_spec_free(spec);
    spec = NULL;
    if (!(text = wb_aot_trim(en->text)))
        goto oom;
    wb_aot_graph *g = wb_aot_push(a);
    if (!g)
        goto oom;
    char ident[WB_AOT_NAME_PART + 1];
    wb_aot_ident(name, ident);
    snprintf(g->fn, sizeof g->fn, "%s_%s_%d", a->prefix, ident, a->n - 1);
    if (wb_spec_parse(text, &spec) != WB_OK ||
        wb_spec_validate(spec) != WB_OK ||
        wb_spec_fingerprint(spec, g->fp) != WB_OK ||
        wb_emit(spec, g->fn, WB_EMIT_PLAIN, &code) != WB_OK) {
        /* The trimmed text says what the entry says; this would be a bug
           of ours, and is reported as one. */
        a->n--;
        wb_aot_fail_at(a, en, wb_last_error());
        goto done;
    }
    g->en = en;
    g->name = name;
    g->text = text;
    g->code = code;
    name = text = NULL;
    goto done;
oom:
    wb_cli_error("wrapbake: out of memory\n");
    a->failed++;
done:
    free(name);
    free(text);
    wb_spec_free(spec);
    wb_schema_free(sc);
}

static const wb_aot *wb_aot_sorting;

static int wb_aot_by_name(const void *x, const void *y)
{
    const wb_aot_graph *g = wb_aot_sorting->g;
    int i = *(const int *)x, j = *(const int *)y;
    int c = strcmp(g[i].name, g[j].name);
    return c ? c : (i > j) - (i < j);
}

/* The graphs' indices in the byte order of their names, as the dispatch
   unit's lookup searches them; two graphs of one name are an error. */
static int *wb_aot_sort(wb_aot *a)
{
    int *order = malloc((size_t)a->n * sizeof *order);
    if (!order) {
        wb_cli_error("wrapbake: out of memory\n");
        a->failed++;
        return NULL;
    }
    for (int i = 0; i < a->n; i++)
        order[i] = i;
    wb_aot_sorting = a;
    qsort(order, (size_t)a->n, sizeof *order, wb_aot_by_name);
    for (int k = 1; k < a->n; k++) {
        const wb_aot_graph *p = &a->g[order[k - 1]], *q = &a->g[order[k]];
        if (strcmp(p->name, q->name) == 0) {
            wb_cli_error("%s:%d: a second spec named '%s'; the first is at "
                         "%s:%d, and a lookup by name must find one\n",
                         q->en->file, q->en->line, q->name, p->en->file,
                         p->en->line);
            a->failed++;
        }
    }
    return order;
}

/* ---- the files ---- */

/* Copies tpl, replacing $P by the prefix, $U by it in capitals, $N by the
   number of graphs, $G by it in words ("1 graph", "2 graphs"), $V by the
   version and $A by the ABI version. */
static void wb_aot_template(wb_buf *b, const wb_aot *a, const char *tpl)
{
    for (const char *p = tpl; *p;) {
        const char *q = strchr(p, '$');
        if (!q) {
            wb_buf_printf(b, "%s", p);
            break;
        }
        wb_buf_printf(b, "%.*s", (int)(q - p), p);
        switch (q[1]) {
        case 'P': wb_buf_printf(b, "%s", a->prefix); break;
        case 'U': wb_buf_printf(b, "%s", a->upper); break;
        case 'N': wb_buf_printf(b, "%d", a->n); break;
        case 'G':
            wb_buf_printf(b, "%d graph%s", a->n, WB_PLURAL(a->n));
            break;
        case 'V': wb_buf_printf(b, "%s", WB_VERSION); break;
        case 'A': wb_buf_printf(b, "%d", WB_ABI_VERSION); break;
        default: wb_buf_printf(b, "$%c", q[1]); break;
        }
        p = q + (q[1] ? 2 : 1);
    }
}

static char *wb_aot_graph_file(const wb_aot *a, int i)
{
    const wb_aot_graph *g = &a->g[i];
    wb_buf b = {0};
    wb_buf_printf(&b, "/*\n * %s.c -- the ahead-of-time wrapper of\n"
                  " * graph %d of %s.c.\n *\n", g->fn, i, a->prefix);
    wb_buf_printf(&b, " * Generated by wrapbake %s (`wrapbake emit --aot`); "
                  "do not edit.\n", WB_VERSION);
    wb_buf_printf(&b, " * The spec, from ");
    wb_aot_comment_line(&b, g->en->file, strlen(g->en->file));
    wb_buf_printf(&b, ":%d:\n *\n", g->en->line);
    wb_aot_comment(&b, " *     ", g->text);
    wb_buf_printf(&b, " *\n * Fingerprint %s.\n", g->fp);
    wb_buf_printf(&b, " * %s.c checks it when it makes a wrapper, so that "
                  "code this library\n * would no longer generate for the "
                  "spec is refused.\n */\n\n", a->prefix);
    wb_buf_printf(&b, "%s", g->code);
    return wb_buf_take(&b);
}

static const char wb_aot_header_top[] =
"/*\n"
" * $P.h -- ahead-of-time wrappers for $G.\n"
" *\n"
" * Generated by wrapbake $V (`wrapbake emit --aot`); do not edit.\n"
" * Build $P.c and every $P_*.c with the program, and link\n"
" * libwrapbake.a (-lwrapbake -lpthread -lm; no libtcc, no compiler at\n"
" * run time).\n"
" *\n"
" * A graph is named by its index, from 0 to $U_GRAPHS - 1; $P_lookup\n"
" * finds it by name.  A wrapper is made from the spec this unit embeds,\n"
" * and wb_wrapper_new_aot refuses it (WB_ERR_SPEC) when the linked\n"
" * library would generate other code for that spec: regenerate these\n"
" * files with the library's `wrapbake emit --aot` then.  Failures set\n"
" * wb_last_error() as every wrapbake call does.\n"
" *\n"
" * Each graph may also have one instance, a wrapper this unit keeps:\n"
" * $P_bind makes it, $P_call calls it,\n"
" * $P_clear frees them all.  Bind and clear change the table of\n"
" * instances: call them when no other thread uses it (start-up,\n"
" * shut-down).  Everything else may be called from any thread.\n"
" *\n"
" * The graphs:\n";

static const char wb_aot_header_api[] =
" */\n"
"#ifndef $U_H\n"
"#define $U_H\n"
"\n"
"#include \"wrapbake.h\"\n"
"\n"
"#ifdef __cplusplus\n"
"extern \"C\" {\n"
"#endif\n"
"\n"
"/* The number of graphs. */\n"
"#define $U_GRAPHS $N\n"
"\n"
"/* The index of the graph named name (\"add_.Tensor\", \"myops::scale_\":\n"
"   the namespace, when the spec names one, and the overload), or -1. */\n"
"int $P_lookup(const char *name);\n"
"/* The graph's name, or NULL when there is no such graph. */\n"
"const char *$P_name(int graph);\n"
"/* The fingerprint the graph's code was generated for, or NULL. */\n"
"const char *$P_fingerprint(int graph);\n"
"/* A new validated spec of the graph, parsed from the text this unit\n"
"   embeds; the caller frees it with wb_spec_free. */\n"
"wb_status $P_spec(int graph, wb_spec **out);\n"
"\n"
"/* A new wrapper of the graph over fn, which the caller frees with\n"
"   wb_wrapper_free; wb_wrapper_tier() says WB_TIER_AOT.  Refused with\n"
"   WB_ERR_SPEC when the code is stale. */\n"
"wb_status $P_new(int graph, wb_graph_fn fn, void *ctx, wb_wrapper **out);\n"
"\n"
"/* Makes the graph's instance over fn, freeing the one it had. */\n"
"wb_status $P_bind(int graph, wb_graph_fn fn, void *ctx);\n"
"/* Calls the graph's instance, as wb_call calls a wrapper. */\n"
"wb_status $P_call(int graph, const wb_arg *args, int nargs,\n"
"                  wb_value *outs, int nouts);\n"
"/* The graph's instance (owned by this unit), or NULL when it has none. */\n"
"wb_wrapper *$P_instance(int graph);\n"
"/* The tier serving the graph's instance (WB_TIER_AOT), or\n"
"   WB_TIER_DEFAULT when it has none. */\n"
"wb_tier $P_active(int graph);\n"
"/* Frees every instance. */\n"
"void $P_clear(void);\n"
"\n"
"/* Makes and frees a wrapper of every graph: WB_OK when the linked\n"
"   library accepts all of this code, else the first refusal. */\n"
"wb_status $P_verify(void);\n"
"\n"
"#ifdef __cplusplus\n"
"}\n"
"#endif\n"
"\n"
"#endif /* $U_H */\n";

static char *wb_aot_header(const wb_aot *a)
{
    wb_buf b = {0};
    wb_aot_template(&b, a, wb_aot_header_top);
    for (int i = 0; i < a->n; i++) {
        wb_buf_printf(&b, " *   %d  ", i);
        wb_aot_comment_line(&b, a->g[i].name, strlen(a->g[i].name));
        wb_buf_printf(&b, "  (%s.c)\n", a->g[i].fn);
    }
    wb_aot_template(&b, a, wb_aot_header_api);
    return wb_buf_take(&b);
}

static const char wb_aot_unit_top[] =
"/*\n"
" * $P.c -- the dispatch unit of the ahead-of-time wrappers for $G:\n"
" * lookup by name, wrappers made from the embedded specs, one instance\n"
" * per graph.\n"
" *\n"
" * Generated by wrapbake $V (`wrapbake emit --aot`); do not edit.\n"
" * $P.h describes the functions.\n"
" */\n"
"#include <stdlib.h>\n"
"#include <string.h>\n"
"\n"
"#include \"$P.h\"\n"
"\n"
"/* The generated wrappers read the library's structures as ABI $A lays\n"
"   them out. */\n"
"#if WB_ABI_VERSION != $A\n"
"#error \"$P.c was generated for wrapbake ABI $A; regenerate it with this wrapbake\"\n"
"#endif\n"
"\n"
"/* The library's helper that sets wb_last_error() for this unit (see\n"
"   src/abi/helpers.def). */\n"
"int wb_rt_unit_fail(int status, const char *fmt, ...);\n"
"\n"
"/* The wrappers, one per $P_*.c. */\n";

static const char wb_aot_unit_api[] =
"\n"
"/* Instances, made by $P_bind. */\n"
"static wb_wrapper *$P_instances[$N];\n"
"\n"
"static wb_status $P_no_graph(const char *fn, int graph)\n"
"{\n"
"    return (wb_status)wb_rt_unit_fail(\n"
"        WB_ERR_INVALID, \"%s: no graph %d; $P has graphs 0 to %d \"\n"
"        \"($P_lookup gives -1 for a name it does not know)\", fn, graph,\n"
"        $N - 1);\n"
"}\n"
"\n"
"int $P_lookup(const char *name)\n"
"{\n"
"    int lo = 0, hi = $N;\n"
"    if (!name)\n"
"        return -1;\n"
"    while (lo < hi) {\n"
"        int mid = lo + (hi - lo) / 2;\n"
"        int c = strcmp(name, $P_graphs[$P_by_name[mid]].name);\n"
"        if (c == 0)\n"
"            return $P_by_name[mid];\n"
"        if (c < 0)\n"
"            hi = mid;\n"
"        else\n"
"            lo = mid + 1;\n"
"    }\n"
"    return -1;\n"
"}\n"
"\n"
"const char *$P_name(int graph)\n"
"{\n"
"    return graph >= 0 && graph < $N ? $P_graphs[graph].name : NULL;\n"
"}\n"
"\n"
"const char *$P_fingerprint(int graph)\n"
"{\n"
"    return graph >= 0 && graph < $N ? $P_graphs[graph].fingerprint : NULL;\n"
"}\n"
"\n"
"wb_status $P_spec(int graph, wb_spec **out)\n"
"{\n"
"    const char *const *piece;\n"
"    size_t len = 0;\n"
"    char *text, *p;\n"
"    wb_spec *spec = NULL;\n"
"    wb_status st;\n"
"    if (graph < 0 || graph >= $N)\n"
"        return $P_no_graph(\"$P_spec\", graph);\n"
"    if (!out)\n"
"        return (wb_status)wb_rt_unit_fail(WB_ERR_INVALID,\n"
"                                          \"$P_spec: NULL out\");\n"
"    /* The text is kept in pieces short enough for any C compiler. */\n"
"    for (piece = $P_graphs[graph].text; *piece; piece++)\n"
"        len += strlen(*piece);\n"
"    if (!(text = malloc(len + 1)))\n"
"        return (wb_status)wb_rt_unit_fail(WB_ERR_NOMEM,\n"
"                                          \"$P_spec: out of memory\");\n"
"    p = text;\n"
"    for (piece = $P_graphs[graph].text; *piece; piece++) {\n"
"        size_t n = strlen(*piece);\n"
"        memcpy(p, *piece, n);\n"
"        p += n;\n"
"    }\n"
"    *p = '\\0';\n"
"    st = wb_spec_parse(text, &spec);\n"
"    free(text);\n"
"    if (st == WB_OK && (st = wb_spec_validate(spec)) == WB_OK)\n"
"        *out = spec;\n"
"    else\n"
"        wb_spec_free(spec);\n"
"    return st;\n"
"}\n"
"\n"
"wb_status $P_new(int graph, wb_graph_fn fn, void *ctx, wb_wrapper **out)\n"
"{\n"
"    wb_spec *spec;\n"
"    wb_status st;\n"
"    if ((st = $P_spec(graph, &spec)) != WB_OK)\n"
"        return st;\n"
"    st = wb_wrapper_new_aot(spec, $P_graphs[graph].entry,\n"
"                            $P_graphs[graph].fingerprint, fn, ctx, out);\n"
"    wb_spec_free(spec);\n"
"    return st;\n"
"}\n"
"\n"
"wb_status $P_bind(int graph, wb_graph_fn fn, void *ctx)\n"
"{\n"
"    wb_wrapper *w;\n"
"    wb_status st = $P_new(graph, fn, ctx, &w);\n"
"    if (st != WB_OK)\n"
"        return st;\n"
"    wb_wrapper_free($P_instances[graph]);\n"
"    $P_instances[graph] = w;\n"
"    return WB_OK;\n"
"}\n"
"\n"
"wb_status $P_call(int graph, const wb_arg *args, int nargs,\n"
"                  wb_value *outs, int nouts)\n"
"{\n"
"    if (graph < 0 || graph >= $N)\n"
"        return $P_no_graph(\"$P_call\", graph);\n"
"    if (!$P_instances[graph])\n"
"        return (wb_status)wb_rt_unit_fail(\n"
"            WB_ERR_INVALID, \"$P_call: graph %d '%s' has no instance; \"\n"
"            \"make one with $P_bind\", graph, $P_graphs[graph].name);\n"
"    return wb_call($P_instances[graph], args, nargs, outs, nouts);\n"
"}\n"
"\n"
"wb_wrapper *$P_instance(int graph)\n"
"{\n"
"    return graph >= 0 && graph < $N ? $P_instances[graph] : NULL;\n"
"}\n"
"\n"
"wb_tier $P_active(int graph)\n"
"{\n"
"    wb_wrapper *w = $P_instance(graph);\n"
"    return w ? wb_wrapper_tier(w) : WB_TIER_DEFAULT;\n"
"}\n"
"\n"
"void $P_clear(void)\n"
"{\n"
"    int g;\n"
"    for (g = 0; g < $N; g++) {\n"
"        wb_wrapper_free($P_instances[g]);\n"
"        $P_instances[g] = NULL;\n"
"    }\n"
"}\n"
"\n"
"/* Stands in for a graph in $P_verify, which never calls it. */\n"
"static int $P_no_call(void *ctx, const wb_arg *args, int nargs,\n"
"                      wb_value *values, int nvalues)\n"
"{\n"
"    (void)ctx;\n"
"    (void)args;\n"
"    (void)nargs;\n"
"    (void)values;\n"
"    (void)nvalues;\n"
"    return -1;\n"
"}\n"
"\n"
"wb_status $P_verify(void)\n"
"{\n"
"    int g;\n"
"    for (g = 0; g < $N; g++) {\n"
"        wb_wrapper *w;\n"
"        wb_status st = $P_new(g, $P_no_call, NULL, &w);\n"
"        if (st != WB_OK)\n"
"            return st;\n"
"        wb_wrapper_free(w);\n"
"    }\n"
"    return WB_OK;\n"
"}\n";

/* The text of graph i as literals of at most WB_AOT_PIECE bytes, one line
   (or part of one) each. */
static void wb_aot_text_pieces(wb_buf *b, const wb_aot *a, int i)
{
    wb_buf_printf(b, "static const char *const %s_%d_text[] = {\n",
                  a->prefix, i);
    for (const char *p = a->g[i].text; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) + 1 : strlen(p);
        if (n > WB_AOT_PIECE)
            n = WB_AOT_PIECE;
        wb_buf_printf(b, "    ");
        wb_aot_literal(b, p, n);
        wb_buf_printf(b, ",\n");
        p += n;
    }
    wb_buf_printf(b, "    NULL\n};\n");
}

static char *wb_aot_unit(const wb_aot *a, const int *order)
{
    wb_buf b = {0};
    wb_aot_template(&b, a, wb_aot_unit_top);
    for (int i = 0; i < a->n; i++)
        wb_buf_printf(&b, "int %s(const wb_env *e, const wb_arg *args, "
                      "int nargs,\n    wb_value *outs, int nouts);\n",
                      a->g[i].fn);
    wb_buf_printf(&b, "\n/* The specs, as their text. */\n");
    for (int i = 0; i < a->n; i++) {
        wb_buf_printf(&b, "/* %d: from ", i);
        wb_aot_comment_line(&b, a->g[i].en->file, strlen(a->g[i].en->file));
        wb_buf_printf(&b, ":%d */\n", a->g[i].en->line);
        wb_aot_text_pieces(&b, a, i);
    }
    wb_buf_printf(&b, "\nstatic const struct %s_graph {\n"
                  "    const char *name;\n"
                  "    const char *const *text;\n"
                  "    const char *fingerprint;\n"
                  "    wb_entry_fn entry;\n"
                  "} %s_graphs[%d] = {\n", a->prefix, a->prefix, a->n);
    for (int i = 0; i < a->n; i++) {
        wb_buf_printf(&b, "    {");
        wb_aot_literal(&b, a->g[i].name, strlen(a->g[i].name));
        wb_buf_printf(&b, ", %s_%d_text,\n     \"%s\",\n     %s},\n",
                      a->prefix, i, a->g[i].fp, a->g[i].fn);
    }
    wb_buf_printf(&b, "};\n\n/* The graphs in the byte order of their names, "
                  "for %s_lookup. */\nstatic const int %s_by_name[%d] = {",
                  a->prefix, a->prefix, a->n);
    for (int k = 0; k < a->n; k++)
        wb_buf_printf(&b, "%s%d", k % 16 ? ", " : (k ? ",\n    " : "\n    "),
                      order[k]);
    wb_buf_printf(&b, "\n};\n");
    wb_aot_template(&b, a, wb_aot_unit_api);
    return wb_buf_take(&b);
}

/* A file of the output: its path, and the temporary file that holds its
   new text until every file is written (NULL when the file already holds
   exactly that text, which is then left as it is, so that a build does
   not recompile it). */
typedef struct wb_aot_out {
    char *path, *tmp;
} wb_aot_out;

/* Whether the file open on fd holds exactly text[0..len): read through
   the descriptor, at most len + 1 bytes; false on a read error too (the
   file is then rewritten). */
static bool wb_aot_holds(int fd, const char *text, size_t len)
{
    char *buf = malloc(len + 1);
    size_t n = 0;
    if (!buf)
        return false;
    while (n < len + 1) {
        ssize_t got = read(fd, buf + n, len + 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            if (got < 0)
                n = len + 1;
            break;
        }
        n += (size_t)got;
    }
    bool same = n == len && memcmp(buf, text, len) == 0;
    free(buf);
    return same;
}

/* Opens a new staging file for o->path beside it, .NAME.XXXXXX, created
   exclusively (never an existing file, never through a link) with the
   mode fopen would give it; the descriptor, or -1 with errno set. */
static int wb_aot_stage_open(const char *dir, const char *name, char *tmp,
                             size_t nt)
{
    snprintf(tmp, nt, "%s/.%s.XXXXXX", dir, name);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    /* mkstemp makes it 0600. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    return fd;
}

/* Stages text for dir/name in o: -1 with a message on failure, when no
   temporary file is left.  The output is looked at without following a
   link: one that is a symbolic link, or anything but a regular file, is
   refused rather than read or replaced. */
static int wb_aot_stage(const char *dir, const char *name, const char *text,
                        wb_aot_out *o)
{
    size_t len = strlen(text);
    size_t np = strlen(dir) + strlen(name) + 2, nt = np + 32;
    if (!(o->path = malloc(np)) || !(o->tmp = malloc(nt))) {
        wb_cli_error("wrapbake: out of memory\n");
        return -1;
    }
    snprintf(o->path, np, "%s/%s", dir, name);
    bool same = false;
    struct stat st;
    if (lstat(o->path, &st) == 0) {
        const char *why = S_ISLNK(st.st_mode) ? "it is a symbolic link"
                        : !S_ISREG(st.st_mode) ? "it is not a file" : NULL;
        /* O_NONBLOCK: a FIFO put in its place after the lstat is opened
           without waiting for a writer, and then refused. */
        int fd = why ? -1 : open(o->path, O_RDONLY | O_NOFOLLOW
                                          | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && !why && errno == ELOOP)
            why = "it is a symbolic link";
        else if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)))
            why = "it is not a file";
        else if (fd >= 0)
            same = wb_aot_holds(fd, text, len);
        if (fd >= 0)
            close(fd);
        if (why) {
            wb_cli_error("wrapbake: cannot write %s: %s\n", o->path, why);
            free(o->tmp);
            o->tmp = NULL;
            return -1;
        }
    }
    if (same) {
        free(o->tmp);
        o->tmp = NULL;
        return 0;
    }
    int fd = wb_aot_stage_open(dir, name, o->tmp, nt);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    bool written = f && fwrite(text, 1, len, f) == len;
    if (f && fclose(f) != 0)
        written = false;
    if (!written) {
        wb_cli_error("wrapbake: cannot write %s: %s\n", o->tmp,
                     strerror(errno));
        if (fd >= 0)
            remove(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    return 0;
}

/* The header, the dispatch unit and a file per graph, each staged; then,
   only when all are, each moved into place and its path printed.  A run
   that fails before the moves changes no file, and removes the directory
   it made; a move that fails (a file another user owns in a sticky
   directory, say) leaves the files moved before it. */
static int wb_aot_write_all(wb_aot *a, const int *order)
{
    char name[256];
    struct stat st;
    bool made = false;
    if (stat(a->dir, &st) != 0) {
        if (errno != ENOENT || mkdir(a->dir, 0777) != 0) {
            /* Only the last part is made, so that the one directory
               removed on failure is all a run made. */
            int e = errno;
            wb_cli_error("wrapbake: cannot create the directory %s: %s%s\n",
                         a->dir, strerror(e),
                         e == ENOENT ? " (its parent must exist)" : "");
            return -1;
        }
        made = true;
    } else if (!S_ISDIR(st.st_mode)) {
        wb_cli_error("wrapbake: %s is not a directory\n", a->dir);
        return -1;
    }
    int nout = a->n + 2, rc = 0;
    wb_aot_out *out = calloc((size_t)nout, sizeof *out);
    if (!out) {
        wb_cli_error("wrapbake: out of memory\n");
        return -1;
    }
    for (int k = 0; k < nout && !rc; k++) {
        char *text = k == 0 ? wb_aot_header(a)
                   : k == 1 ? wb_aot_unit(a, order)
                            : wb_aot_graph_file(a, k - 2);
        if (k < 2)
            snprintf(name, sizeof name, "%s.%c", a->prefix, k ? 'c' : 'h');
        else
            snprintf(name, sizeof name, "%s.c", a->g[k - 2].fn);
        if (!text)
            wb_cli_error("wrapbake: out of memory\n");
        rc = text ? wb_aot_stage(a->dir, name, text, &out[k]) : -1;
        free(text);
    }
    for (int k = 0; k < nout && !rc; k++)
        if (out[k].tmp && rename(out[k].tmp, out[k].path) != 0) {
            wb_cli_error("wrapbake: cannot write %s: %s\n", out[k].path,
                         strerror(errno));
            rc = -1;
        } else {
            free(out[k].tmp);
            out[k].tmp = NULL;
        }
    for (int k = 0; k < nout; k++) {
        if (out[k].tmp)
            remove(out[k].tmp);
        else if (!rc)
            printf("%s\n", out[k].path);
        free(out[k].path);
        free(out[k].tmp);
    }
    free(out);
    if (rc && made)
        rmdir(a->dir);
    return rc;
}

/* Warns of PREFIX_*.c files in the directory that this run did not write:
   an earlier run with more specs may have left them, and a build that
   compiles PREFIX_*.c would take them in. */
static void wb_aot_leftovers(const wb_aot *a)
{
    DIR *d = opendir(a->dir);
    size_t np = strlen(a->prefix);
    if (!d)
        return;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        const char *name = de->d_name;
        size_t n = strlen(name);
        if (n < np + 3 || strncmp(name, a->prefix, np) != 0 ||
            name[np] != '_' || strcmp(name + n - 2, ".c") != 0)
            continue;
        bool ours = false;
        for (int i = 0; i < a->n && !ours; i++)
            ours = strlen(a->g[i].fn) == n - 2 &&
                   strncmp(a->g[i].fn, name, n - 2) == 0;
        if (!ours)
            wb_cli_error("wrapbake: warning: %s/%s is not one of the files "
                         "generated now; remove it if an earlier run left "
                         "it\n", a->dir, name);
    }
    closedir(d);
}

int wb_cli_aot(const char *dir, const char *prefix, wb_cli_allowlist *al,
               int nfiles, char **files)
{
    wb_aot a = {.dir = dir, .prefix = prefix};
    wb_cli_entries *entries = calloc((size_t)nfiles, sizeof *entries);
    int *order = NULL, rc = 1;
    if (!entries) {
        wb_cli_error("wrapbake: out of memory\n");
        return 1;
    }
    for (size_t i = 0; prefix[i] && i < WB_AOT_MAX_PREFIX; i++)
        a.upper[i] = (char)(prefix[i] >= 'a' && prefix[i] <= 'z'
                                ? prefix[i] - 'a' + 'A' : prefix[i]);
    for (int f = 0; f < nfiles; f++) {
        char *err = NULL;
        int r = wb_cli_read_file(files[f], &entries[f], &err);
        for (size_t k = 0; k < entries[f].n; k++)
            wb_aot_take(&a, &entries[f].v[k], al);
        if (r != 0) {
            wb_cli_error("%s\n", err ? err : "wrapbake: out of memory");
            a.failed++;
        }
        free(err);
    }
    wb_cli_allowlist_warn_unused(al);
    if (!a.failed && a.n == 0) {
        wb_cli_error("wrapbake: no spec to generate code for\n");
        a.failed++;
    }
    /* The names too, so that one run reports every problem. */
    if (a.n > 0)
        order = wb_aot_sort(&a);
    if (!a.failed) {
        rc = wb_aot_write_all(&a, order) == 0 ? 0 : 1;
        if (rc == 0)
            wb_aot_leftovers(&a);
    } else {
        wb_cli_error("wrapbake: %d problem%s; nothing written to %s\n",
                     a.failed, WB_PLURAL(a.failed), dir);
    }
    for (int i = 0; i < a.n; i++) {
        free(a.g[i].name);
        free(a.g[i].text);
        free(a.g[i].code);
    }
    free(a.g);
    free(order);
    for (int f = 0; f < nfiles; f++)
        wb_cli_entries_free(&entries[f]);
    free(entries);
    return rc;
}
