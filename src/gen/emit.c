/*
 * emit.c -- turns a validated spec into one straight-line C function.
 *
 * The function does what wb_interp_call does, step for step, with every
 * count, index and branch decided here: a banner naming the spec, a comment
 * per step naming the spec item behind it, literals instead of lookups, no
 * loop over anything known ahead of time.  It includes no header; it
 * declares the few types it needs and the runtime helpers it calls.
 *
 * Every helper's name comes from the symbol table helpers.def expands to
 * (wb_emit_helper_name): the helpers of mutations and outputs from their
 * rows of the step table (steps.c), through which the interpreter calls
 * them, the rest by id.  So the emitter holds no helper name of its own.
 *
 * Names from the spec reach the output only through wb_spec_safe_name,
 * inside comments; #line file names keep only [A-Za-z0-9_.-].  No other text
 * from a spec is ever formatted into code.
 *
 * For the JIT, each step is preceded by a #line directive naming its spec
 * item, so that a compiler message points back into the spec: line 1 is the
 * graph, lines 2.. the inputs in order, then the outputs; the first names
 * the spec as the file, and the rest keep it (the name cost libtcc 5k
 * instructions a wrapper of case E).  Source for people (wb_emit_c,
 * goldens, ahead-of-time files) leaves them out.
 *
 * Where libtcc and other compilers are better served by different code
 * (runs of like steps, below), the text holds both under #ifdef
 * __TINYC__.  The tcc tier compiles a form of its own, WB_EMIT_LIBTCC:
 * libtcc's branch alone, without the banner, the step comments and the
 * descriptions in them, which libtcc would only read past.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "../spec/spec.h"

typedef struct wb_emitter {
    const wb_spec *s;
    wb_buf out;
    wb_buf *tmp;    /* scratch text, see wb_emit_tmp */
    const wb_buf *descs;    /* each input's and output's description */
    const size_t *desc_at;  /* where in descs: inputs, then outputs */
    size_t line_at; /* where the condition's current line starts */
    bool lines;     /* emit #line directives */
    bool libtcc;    /* libtcc's text alone: one branch, few comments */
    bool named;     /* one has named the file; the rest keep it */
    char file[80];  /* their file name */
    /* Who reads the text being written (WB_RT_READ_*), as the
       conditionals written so far say, and the one open; each helper
       named is recorded in used with it. */
    unsigned reader;
    wb_rt_cond cond;
    unsigned char used[WB_ABI_COUNT];
    unsigned types;  /* whose members the text reads (WB_EMIT_TYPE_*) */
} wb_emitter;

/* ---- small pieces ---- */

/* The name generated code calls helper id by, recorded as called by
   whoever reads the text being written.  Every helper's name reaches the
   text through here, from the table helpers.def expands to, never from a
   literal of the emitter's own: a step's helper comes from its row of the
   step table (wb_gen_steps), the rest by id.  So the prelude declares, and
   the JIT registers, what was written, without reading the text again. */
static const char *wb_emit_helper_name(wb_emitter *x, wb_abi_id id)
{
    x->used[id] |= (unsigned char)x->reader;
    return wb_rt_symbols[id].name;
}

/* The name of helper `name` of helpers.def, for emitter x; an unknown one
   fails to compile. */
#define WB_EMIT_NAME(name) wb_emit_helper_name(x, WB_ABI_ID_##name)

/* Writes a conditional directive of kind c (never NONE) as a line of its
   own, and follows who reads what comes after it. */
static void wb_emit_cond(wb_emitter *x, wb_buf *b, wb_rt_cond c)
{
    static const char *const text[] = {
        [WB_RT_COND_TCC] = "#ifdef __TINYC__\n",
        [WB_RT_COND_NOT_TCC] = "#ifndef __TINYC__\n",
        [WB_RT_COND_ELSE] = "#else\n",
        [WB_RT_COND_END] = "#endif\n",
    };
    wb_buf_write(b, text[c], strlen(text[c]));
    x->reader = wb_rt_cond_next(c, &x->cond);
}

static void wb_emit_file_name(const char *name, char *buf, size_t n)
{
    size_t o = 0;
    for (const char *p = name; *p && o + 4 < n && o < 60; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        buf[o++] = ok ? c : '_';
    }
    snprintf(buf + o, n - o, "%s", o ? "" : "spec");
}

static void wb_emit_at(wb_emitter *x, int line)
{
    if (x->lines && x->named)
        wb_buf_printf(&x->out, "#line %d\n", line);
    else if (x->lines)
        wb_buf_printf(&x->out, "#line %d \"%s\"\n", line, x->file);
    x->named = true;
}

static int wb_emit_input_line(int input) { return 2 + input; }

/* The line of mutation input `input` (wb_spec_mut): its input's, or a
   synthetic base's first member's. */
static int wb_emit_mut_line(const wb_spec *s, int input)
{
    int g = wb_spec_synth(s, input);
    return wb_emit_input_line(g >= 0 ? s->group_first[g] : input);
}

/* p, then text, then v in decimal, NUL-terminated in buf (at most 24
   bytes in all); returns buf.  The emitter's short names and indices,
   where a call of snprintf cost 400 instructions. */
static char *wb_emit_cat(char buf[24], const char *p, const char *text,
                         unsigned v)
{
    char digits[12];
    int n = 0;
    size_t o = strlen(p), t = strlen(text);
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    memcpy(buf, p, o);
    memcpy(buf + o, text, t);
    for (o += t; n > 0;)
        buf[o++] = digits[--n];
    buf[o] = '\0';
    return buf;
}

/* "p" for i 0, else "p + i": where a run starts in array p. */
static const char *wb_emit_from(char buf[24], const char *p, int i)
{
    return i ? wb_emit_cat(buf, p, " + ", (unsigned)i) : strcpy(buf, p);
}

static int wb_emit_output_line(const wb_spec *s, int output)
{
    return 2 + s->ninputs + output;
}

/* The emitter's scratch text, emptied for each use (its storage is kept):
   condition terms and holders are formatted there by wb_buf's own
   formatter rather than by snprintf, which cost a third of an emit. */
static wb_buf *wb_emit_tmp(wb_emitter *x)
{
    x->tmp->len = 0;
    if (x->tmp->p)
        x->tmp->p[0] = '\0';
    return x->tmp;
}

static const char *wb_emit_tmp_text(wb_emitter *x)
{
    return x->tmp->p && !x->tmp->oom ? x->tmp->p : "";
}

/* A comment line, which libtcc's text leaves out. */
static void wb_emit_comment(const wb_emitter *x, wb_buf *b, const char *fmt,
                            ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void wb_emit_comment(const wb_emitter *x, wb_buf *b, const char *fmt,
                            ...)
{
    va_list ap;
    if (x->libtcc)
        return;
    va_start(ap, fmt);
    wb_buf_vline(b, fmt, ap);
    va_end(ap);
}

/* A spec name, escaped for a comment. */
static void wb_emit_name(wb_buf *b, const char *name)
{
    char nm[300];
    wb_spec_safe_name(name, nm, sizeof nm);
    wb_buf_write(b, nm, strlen(nm));
}

static void wb_emit_dtype(wb_buf *b, DLDataType d)
{
    static const char *const codes[] = {"int", "uint", "float", "handle",
                                        "bfloat", "complex"};
    wb_buf_printf(b, "%s%u", d.code < 6 ? codes[d.code] : "code?",
                  (unsigned)d.bits);
    if (d.lanes != 1)
        wb_buf_printf(b, "x%u", (unsigned)d.lanes);
}

static void wb_emit_input_desc(const wb_spec *s, wb_buf *b, int i)
{
    const wb_input *in = &s->inputs[i];
    wb_buf_printf(b, "input %d '", i);
    wb_emit_name(b, in->name);
    wb_buf_write(b, "'", 1);
    if (!in->is_tensor) {
        wb_buf_printf(b, ", %s", wb_spec_c_type(s, i));
        return;
    }
    wb_buf_printf(b, ", %s", wb_direction_name(s->dirs[i]));
    if (in->mutation != WB_MUT_NONE)
        wb_buf_printf(b, ", %s mutation", wb_mutation_name(in->mutation));
    if (in->dtype.bits) {
        wb_buf_printf(b, ", ");
        wb_emit_dtype(b, in->dtype);
    }
    if (in->ndim >= 0)
        wb_buf_printf(b, ", %d dims", in->ndim);
    if (in->device.device_type) {
        char dev[32];
        wb_buf_printf(b, ", %s",
                      wb_rt_device_str(in->device, dev, sizeof dev));
    }
    if (s->group_of && s->group_of[i] >= 0)
        wb_buf_printf(b, ", in synthetic base %d", s->group_of[i]);
}

static void wb_emit_output_desc(const wb_spec *s, wb_buf *b, int k)
{
    const wb_output *o = &s->outputs[k];
    wb_buf_printf(b, "output %d '", k);
    wb_emit_name(b, o->name);
    if (o->scalar) {
        wb_buf_printf(b, "', %s", wb_scalar_c_type(o->scalar));
        return;
    }
    wb_buf_printf(b, "', %s", wb_alias_name(o->kind));
    if (o->base >= 0)
        wb_buf_printf(b, " of %d", o->base);
    if (s->outs[k].kind != o->kind && o->kind == WB_OUT_IS_INPUT)
        wb_buf_printf(b, ", a view of its synthetic base");
    if (o->requires_grad)
        wb_buf_printf(b, ", requires grad");
    if (o->dyn)
        wb_buf_printf(b, ", dynamic dims 0x%llx", (unsigned long long)o->dyn);
}

/* Every description, written once: the banner lists them all, and the
   comment of each step repeats its item's.  NUL-separated in descs;
   at[] gets where each starts, inputs then outputs. */
static void wb_emit_descs(const wb_spec *s, wb_buf *descs, size_t *at)
{
    for (int i = 0; i < s->ninputs; i++) {
        *at++ = descs->len;
        wb_emit_input_desc(s, descs, i);
        wb_buf_write(descs, "", 1);
    }
    for (int k = 0; k < s->noutputs; k++) {
        *at++ = descs->len;
        wb_emit_output_desc(s, descs, k);
        wb_buf_write(descs, "", 1);
    }
}

static const char *wb_emit_desc(const wb_emitter *x, int j)
{
    return x->libtcc || x->descs->oom ? "" : x->descs->p + x->desc_at[j];
}

static const char *wb_emit_in_desc(const wb_emitter *x, int i)
{
    return wb_emit_desc(x, i);
}

static const char *wb_emit_out_desc(const wb_emitter *x, int k)
{
    return wb_emit_desc(x, x->s->ninputs + k);
}

/* ---- the banner and the declarations ---- */

static void wb_emit_banner(wb_emitter *x)
{
    const wb_spec *s = x->s;
    wb_buf *b = &x->out;
    wb_buf_printf(b, "/*\n * Generated by wrapbake %s from spec '",
                  WB_VERSION);
    wb_emit_name(b, s->name);
    wb_buf_printf(b, "'.\n *\n");
    wb_buf_printf(b, " * inputs (%d):\n", s->ninputs);
    for (int i = 0; i < s->ninputs; i++)
        wb_buf_printf(b, " *   %s\n", wb_emit_in_desc(x, i));
    wb_buf_printf(b, " * outputs (%d):\n", s->noutputs);
    for (int k = 0; k < s->noutputs; k++)
        wb_buf_printf(b, " *   %s\n", wb_emit_out_desc(x, k));
    wb_buf_printf(b, " * intermediate bases: %d\n", s->nbases);
    wb_buf_printf(b, " * the graph returns N = %d value%s:\n *   %d updated "
                  "input%s, %d output%s, ", s->nvalues, WB_PLURAL(s->nvalues),
                  s->nupdated, WB_PLURAL(s->nupdated), s->noutputs,
                  WB_PLURAL(s->noutputs));
    if (s->ngroups)
        wb_buf_printf(b, "new views of %d member%s, ", s->nmeta_members,
                      WB_PLURAL(s->nmeta_members));
    wb_buf_printf(b, "%d intermediate base%s\n", s->nbases,
                  WB_PLURAL(s->nbases));
    if (s->ngroups) {
        int after = 0;
        for (int j = 0; j < s->nupdated; j++)
            after += s->muts[j].input < 0;
        wb_buf_printf(b, " * synthetic bases: %d, %d updated first, %d "
                      "written by the graph\n", s->ngroups, after,
                      s->ngroups - after);
    }
    wb_buf_printf(b, " * %s: grad mode %s during the call",
                  s->training ? "training" : "inference",
                  s->training ? "on" : "off");
    if (s->grad_at_end >= 0)
        wb_buf_printf(b, ", %s after it", s->grad_at_end ? "on" : "off");
    wb_buf_printf(b, "\n */\n\n");
}

/* A new line indented by n columns. */
static void wb_emit_newline(wb_buf *b, size_t n)
{
    static const char line[] = "\n                                        ";
    if (n < sizeof line - 1)
        wb_buf_write(b, line, n + 1);
    else
        wb_buf_printf(b, "\n%*s", (int)n, "");
}

/* A prototype, broken after a comma where it would pass column 78, the
   continuation aligned after the opening parenthesis. */
static void wb_emit_proto(wb_buf *b, const char *proto)
{
    const char *open = strchr(proto, '(');
    size_t indent = open ? (size_t)(open - proto) + 1 : 4, col = 0;
    for (const char *p = proto; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) + 1 : strlen(p);
        if (col > indent && col + n > 78) {
            wb_emit_newline(b, indent);
            col = indent;
            while (*p == ' ') {
                p++;
                n--;
            }
        }
        wb_buf_write(b, p, n);
        col += n;
        p += n;
    }
    wb_buf_write(b, "\n", 1);
}

_Static_assert(WB_EMIT_TYPE_ENV == 1 << 0 && WB_EMIT_TYPE_GROW == 1 << 1 &&
                   WB_EMIT_NTYPES == 2,
               "wb_emit_type_text completes type 1 << k at k");
const char *const wb_emit_type_text[WB_EMIT_NTYPES] = {
    "struct wb_env {\n"
    "    int (*graph)(void *ctx, const wb_arg *args, int nargs,\n"
    "                 wb_value *values, int nvalues);\n"
    "    void *graph_ctx;\n"
    "};\n",
    "struct wb_rt_grow { void *data; unsigned long nbytes; void *husk; };\n",
};

/* The types generated code needs, completed where the body reads their
   members (types, WB_EMIT_TYPE_*), and the prototypes of the helpers the
   body calls (used), as the body's emitter recorded them. */
static void wb_emit_prelude(wb_emitter *x, const unsigned char *used,
                            unsigned types)
{
    wb_buf *b = &x->out;
    /* A batch compiled as one unit keeps the banner and these from its
       first source only, and of each later one the function, from the
       line that opens it, with the completions and prototypes the first
       did not have (wb_jit_unit).  libtcc reads a type's members for
       several thousand instructions, a declaration without them for
       about one thousand. */
    wb_buf_printf(b,
        "/* The leading members of a tensor; the rest is the runtime's. */\n"
        "typedef struct wb_storage wb_storage;\n"
        "typedef struct wb_tensor {\n"
        "    long refcount;\n"
        "    wb_storage *storage;\n"
        "    /* DLDataType, then ndim << 32, then the device's type << 48\n"
        "       and id << 56 */\n"
        "    unsigned long long meta;\n"
        "} wb_tensor;\n"
        "typedef union wb_value { wb_tensor *t; long long i; double f; "
        "_Bool b; const void *p; } wb_value;\n"
        "typedef wb_value wb_arg;\n"
        "typedef struct wb_env wb_env;\n"
        "typedef struct wb_rt_grow wb_rt_grow;\n");
    for (int k = 0; k < WB_EMIT_NTYPES; k++)
        if (types & 1u << k)
            wb_buf_write(b, wb_emit_type_text[k],
                         strlen(wb_emit_type_text[k]));
    wb_buf_write(b, "\n", 1);
    /* Prototypes of exactly the helpers the body calls; those that only
       the steps of runs call, which libtcc does not read, libtcc does not
       read either. */
    bool steps = false;
    for (int i = 0; wb_rt_symbols[i].name; i++) {
        if (used[i] & WB_RT_READ_TCC)
            wb_emit_proto(b, wb_rt_symbols[i].proto);
        steps |= used[i] == WB_RT_READ_CC;
    }
    if (steps && !x->libtcc) {
        wb_buf_write(b, "#ifndef __TINYC__\n", 18);
        for (int i = 0; wb_rt_symbols[i].name; i++)
            if (used[i] == WB_RT_READ_CC)
                wb_emit_proto(b, wb_rt_symbols[i].proto);
        wb_buf_write(b, "#endif\n", 7);
    }
    wb_buf_write(b, "\n", 1);
}

/* ---- the function ---- */

/* A run of steps opens with "#ifdef __TINYC__" and the one call of a
   runtime loop that stands for them under libtcc (with check, a call
   that goes to fail when it fails), then "#else", after which the caller
   writes the steps one by one (when wb_emit_steps says so) and
   wb_emit_run_end closes the run.  libtcc's text has the call alone.  The
   call's line is head, the name of helper id, then args formatted; the
   name is taken once the "#ifdef" is written, so that it is recorded as
   libtcc's. */
static void wb_emit_run_call(wb_emitter *x, wb_buf *b, bool check,
                             const char *head, wb_abi_id id,
                             const char *args, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

static void wb_emit_run_call(wb_emitter *x, wb_buf *b, bool check,
                             const char *head, wb_abi_id id,
                             const char *args, ...)
{
    va_list ap;
    if (!x->libtcc)
        wb_emit_cond(x, b, WB_RT_COND_TCC);
    va_start(ap, args);
    wb_buf_vprintf(wb_emit_tmp(x), args, ap);
    va_end(ap);
    wb_buf_line(b, "%s%s%s", head, wb_emit_helper_name(x, id),
                wb_emit_tmp_text(x));
    if (check)
        wb_buf_line(b, "    goto fail;");
    if (!x->libtcc)
        wb_emit_cond(x, b, WB_RT_COND_ELSE);
}

/* Whether the n steps from here are written one by one: n is 1, or the
   text is not libtcc's alone. */
static bool wb_emit_steps(const wb_emitter *x, int n)
{
    return n == 1 || !x->libtcc;
}

static void wb_emit_run_end(wb_emitter *x, wb_buf *b, bool run)
{
    if (run && !x->libtcc)
        wb_emit_cond(x, b, WB_RT_COND_END);
}

/* A condition of terms joined by ||, wrapped before column 78 with the
   continuation indented one level: "if (" term... ")" tail. */
static void wb_emit_if(wb_emitter *x, wb_buf *b)
{
    x->line_at = b->len;
    wb_buf_printf(b, "%*sif (", b->indent * 4, "");
}

static void wb_emit_term(wb_emitter *x, wb_buf *b, int *k, const char *fmt,
                         ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void wb_emit_term(wb_emitter *x, wb_buf *b, int *k, const char *fmt,
                         ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_buf_vprintf(wb_emit_tmp(x), fmt, ap);
    va_end(ap);
    const char *t = wb_emit_tmp_text(x);
    size_t col = b->len - x->line_at, n = strlen(t);
    if (*k > 0 && col + n + 7 <= 78) {
        wb_buf_write(b, " || ", 4);
    } else if (*k > 0) {
        wb_buf_write(b, " ||\n", 4);
        x->line_at = b->len;
        wb_buf_printf(b, "%*s", b->indent * 4 + 4, "");
    }
    wb_buf_write(b, t, n);
    (*k)++;
}

/* array[0] to array[n - 1] set to 0, through member (".t", or "" for an
   array of pointers). */
static void wb_emit_zero(wb_emitter *x, wb_buf *b, const char *array,
                         const char *member, int n)
{
    if (n > 16) {
        wb_buf_line(b, "%s(%s, 0, sizeof %s);", WB_EMIT_NAME(memset), array,
                    array);
        return;
    }
    size_t indent = (size_t)b->indent * 4, col = indent;
    wb_buf_printf(b, "%*s", (int)indent, "");
    for (int i = 0; i < n; i++) {
        /* "r[12].t =", then room for " 0;" on the last line. */
        char item[24];
        size_t m = strlen(member);
        size_t w = strlen(wb_emit_cat(item, array, "[", (unsigned)i)) + 3 + m;
        if (i > 0 && col + 1 + w + 3 > 78) {
            wb_emit_newline(b, indent + 4);
            col = indent + 4;
        } else if (i > 0) {
            wb_buf_write(b, " ", 1);
            col++;
        }
        wb_buf_write(b, item, w - 3 - m);
        wb_buf_write(b, "]", 1);
        wb_buf_write(b, member, m);
        wb_buf_write(b, " =", 2);
        col += w;
    }
    wb_buf_printf(b, " 0;\n");
}

/* Whether the graph gets arguments of its own (ca) rather than the
   call's: detached ones, effect tokens first, or the kept inputs alone
   when some are duplicates. */
static bool wb_emit_own_args(const wb_spec *s)
{
    return s->ndetached || s->ndups || s->ntokens || s->rng || s->ngroups;
}

/* The array the graph writes its values into: r, or rt when effect
   tokens come before them (r then points past the tokens). */
static const char *wb_emit_values(const wb_spec *s)
{
    return s->ntokens ? "rt" : "r";
}

/* The value of the k-th member whose view the graph changes: after the
   outputs, as AOTAutograd's synthetic-base wrapper adds them to the
   user's outputs, before the intermediate bases. */
static int wb_emit_meta_value(const wb_spec *s, int k)
{
    return s->nupdated + s->noutputs + k;
}

/* Whether anything stands around the graph call (guards, arguments of
   the graph's own, the before-call hook, versions put back after it);
   without it one helper sets grad mode, calls the graph and puts the mode
   back (wb_rt_grad_swap's rule). */
static bool wb_emit_call_wrapped(const wb_spec *s)
{
    return s->nguards || wb_emit_own_args(s) || s->before_call ||
           s->nhidden;
}

/* Whether a step before the graph call can fail: a guard, a detach, the
   before-call hook or the RNG's get. */
static bool wb_emit_call_may_fail(const wb_spec *s)
{
    return s->nguards || s->ndetached || s->before_call || s->rng;
}

/* A data mutation of an input declared with 1 to WB_RT_MAX_ND dimensions
   uses the primitives unrolled for that count: their number, else 0. */
static int wb_emit_nd(const wb_spec *s, const wb_spec_mut *m)
{
    if (wb_spec_synth(s, m->input) >= 0)
        return 0;  /* a synthetic base, declared nothing */
    const wb_input *in = &s->inputs[m->input];
    return m->kind == WB_MUT_DATA && in->ndim >= 1 &&
                   in->ndim <= WB_RT_MAX_ND &&
                   in->device.device_type != kDLCUDA
               ? in->ndim : 0;
}

/* The row of the step table that mutation m takes its helpers from: that
   of the unrolled data primitives where wb_emit_nd says so, else its
   kind's. */
static const wb_gen_step *wb_emit_mut_step(const wb_spec *s,
                                           const wb_spec_mut *m)
{
    int nd = wb_emit_nd(s, m);
    return nd ? &wb_gen_steps.data_nd[nd] : wb_gen_mut_step(m);
}

/* Whether mutation m's check plans a growth that its commit applies (or
   the failure path frees), which the code holds in a local of its own. */
static bool wb_emit_grows(const wb_spec_mut *m)
{
    return wb_gen_steps.mut[m->kind].check.args == WB_GEN_ARGS_prep_grow;
}

static bool wb_emit_checks_inline(const wb_emitter *x);

static void wb_emit_locals(wb_emitter *x, wb_buf *b)
{
    const wb_spec *s = x->s;
    if (s->ntokens) {
        wb_buf_line(b, "wb_value rt[%d]; /* the graph's values: %d effect "
                    "token%s, then r's */", s->nreturned,
                    s->ntokens, s->ntokens == 1 ? "" : "s");
        /* Without other values, no line reads r; -Wall would reject it in
           ahead-of-time builds. */
        if (s->nvalues || s->rng)
            wb_buf_line(b, "wb_value *const r = rt + %d;", s->ntokens);
    } else {
        wb_buf_line(b, "wb_value r[%d]; /* the graph's values */",
                    s->nreturned ? s->nreturned : 1);
    }
    if (s->nviews)
        wb_buf_line(b, "wb_tensor *v[%d]; /* views for aliased outputs */",
                    s->nviews);
    for (int j = 0; j < s->nupdated; j++)
        if (wb_emit_grows(&s->muts[j])) {
            wb_buf_line(b, "wb_rt_grow g%d = {0}; /* growth for input %d */",
                        j, s->muts[j].input);
            x->types |= WB_EMIT_TYPE_GROW;
        }
    if (wb_emit_own_args(s))
        wb_buf_line(b, "wb_arg ca[%d]; /* the graph's arguments */",
                    s->nargs);
    if (s->nhidden)
        wb_buf_line(b, "unsigned long long kept[%d]; /* versions put back "
                    "after the call */", s->nhidden);
    if (wb_emit_checks_inline(x))
        wb_buf_line(b, "const wb_tensor *t; /* the argument being checked */");
    /* st is set on every path to fail.  When a guard, a detach or the
       before-call hook can skip the call, n and st are read only on
       paths that set them, but gcc -O2 -Wall cannot tell and warns in
       ahead-of-time builds. */
    if (wb_emit_call_wrapped(s))
        wb_buf_line(b, "int n = 0, st = 0, grad;");
    else
        wb_buf_line(b, "int n, st;");
    wb_buf_printf(b, "\n");
    /* Failure paths release every non-NULL slot.  Up to 16 stores beat
       the memset libtcc would call for an initializer; longer arrays take
       it. */
    wb_emit_zero(x, b, wb_emit_values(s), ".t",
                 s->nreturned ? s->nreturned : 1);
    if (s->nviews)
        wb_emit_zero(x, b, "v", "", s->nviews);
    /* A graph with no user outputs writes none; -Wextra rejects the unused
       parameter in ahead-of-time builds. */
    if (!s->noutputs)
        wb_buf_line(b, "(void)outs; /* no outputs */");
}

/* DLDataType as the 32-bit word generated code compares: code in the low
   byte, then bits, then lanes (x86-64 is little-endian). */
static unsigned wb_emit_dtype_word(DLDataType d)
{
    return (unsigned)d.code | (unsigned)d.bits << 8 | (unsigned)d.lanes << 16;
}

/* The declared part of tensor input i's word (dtype, ndim << 32, device
   << 48) as the mask of what is declared and the value wanted there. */
static void wb_emit_word(const wb_spec *s, int i, unsigned long long *mask,
                         unsigned long long *want)
{
    const wb_input *in = &s->inputs[i];
    *mask = *want = 0;
    if (in->dtype.bits) {
        *mask |= 0xffffffffull;
        *want |= wb_emit_dtype_word(in->dtype);
    }
    if (in->ndim >= 0) {
        *mask |= 0xffffull << 32;
        *want |= (unsigned long long)in->ndim << 32;
    }
    if (in->device.device_type) {
        *mask |= 0xffffull << 48;
        *want |= (unsigned long long)wb_rt_device_word(in->device) << 48;
    }
}

/* The checks of the t-th tensor input: its word's mask and wanted value,
   and how many tensor inputs from it on are one run: consecutive
   arguments with equal words, as many as make one call of the runtime's
   loop cheaper under libtcc than checking each inline (1 otherwise).
   Inline, libtcc spends 11 instructions on the check of a word and 5 on
   a NULL check; the loop spends 5 and 2, and the call about 20. */
static int wb_emit_run(const wb_spec *s, int t, unsigned long long *mask,
                       unsigned long long *want)
{
    unsigned long long m, w;
    int i = s->tensor_inputs[t], n = 1;
    wb_emit_word(s, i, mask, want);
    while (t + n < s->ntensor_inputs && s->tensor_inputs[t + n] == i + n) {
        wb_emit_word(s, i + n, &m, &w);
        if (m != *mask || w != *want)
            break;
        n++;
    }
    return n >= (*mask ? 3 : 6) ? n : 1;
}

/* Whether the code checks a declared argument inline, through t: every
   text of a spec that declares one, but libtcc's alone only when a check
   is not part of a run. */
static bool wb_emit_checks_inline(const wb_emitter *x)
{
    const wb_spec *s = x->s;
    unsigned long long mask, want;
    if (!x->libtcc || !s->ndeclared)
        return s->ndeclared;
    for (int t = 0, n; t < s->ntensor_inputs; t += n)
        if ((n = wb_emit_run(s, t, &mask, &want)) == 1 && mask)
            return true;
    return false;
}

/* The check of n (3 to 16) tensors with full words: helpers.def lists
   one helper per count, in order. */
static const char *wb_emit_args_bad_n(wb_emitter *x, int n)
{
    _Static_assert(WB_ABI_ID_wb_rt_args_bad16 - WB_ABI_ID_wb_rt_args_bad3 ==
                       13, "the checks of 3 to 16 tensors, in order");
    return wb_emit_helper_name(
        x, (wb_abi_id)(WB_ABI_ID_wb_rt_args_bad3 + (n - 3)));
}

/* The condition of the argument checks, "if (...)".  With runs set, the
   condition for libtcc: each run is one call of the runtime's loop, and
   the text opens with the "#ifdef __TINYC__" that the caller's #else
   closes (libtcc's text alone has no such line, nor any #else); when the
   spec has no run, nothing is emitted and the result is false. */
static bool wb_emit_arg_checks(wb_emitter *x, wb_buf *b, bool runs)
{
    const wb_spec *s = x->s;
    unsigned long long mask, want;
    int k = 0;
    if (runs) {
        int t = 0;
        while (t < s->ntensor_inputs && wb_emit_run(s, t, &mask, &want) == 1)
            t++;
        if (t == s->ntensor_inputs)
            return false;
        if (!x->libtcc)
            wb_emit_cond(x, b, WB_RT_COND_TCC);
    }
    wb_emit_if(x, b);
    for (int t = 0, n; t < s->ntensor_inputs; t += n) {
        int i = s->tensor_inputs[t];
        if (runs) {
            n = wb_emit_run(s, t, &mask, &want);
        } else {
            n = 1;
            wb_emit_word(s, i, &mask, &want);
        }
        if (n > 1) {
            char from[24];
            wb_emit_from(from, "a", i);
            if (!mask)
                wb_emit_term(x, b, &k, "%s(%s, %d)",
                             WB_EMIT_NAME(wb_rt_args_missing), from, n);
            else if (mask == ~0ull && n <= 16)
                wb_emit_term(x, b, &k, "%s(%s, 0x%llxull)",
                             wb_emit_args_bad_n(x, n), from, want);
            else if (mask == ~0ull)
                wb_emit_term(x, b, &k, "%s(%s, %d, 0x%llxull)",
                             WB_EMIT_NAME(wb_rt_args_bad), from, n, want);
            else
                wb_emit_term(x, b, &k, "%s(%s, %d, 0x%llxull, 0x%llxull)",
                             WB_EMIT_NAME(wb_rt_args_bad_masked), from, n,
                             mask, want);
        } else if (!mask) {
            wb_emit_term(x, b, &k, "!a[%d].t", i);
        } else if (mask == ~0ull) {
            wb_emit_term(x, b, &k, "!(t = a[%d].t) || t->meta != 0x%llxull",
                         i, want);
        } else if (mask == 0xffffffffull) {
            wb_emit_term(x, b, &k, "!(t = a[%d].t) || (unsigned)t->meta "
                         "!= 0x%llxu", i, want);
        } else {
            wb_emit_term(x, b, &k, "!(t = a[%d].t) || (t->meta & "
                         "0x%llxull) != 0x%llxull", i, mask, want);
        }
    }
    wb_buf_printf(b, ")\n");
    return runs;
}

/* A condition written by cond (wb_emit_arg_checks, wb_emit_value_checks):
   with runs, libtcc's, then for other compilers without them after the
   #else; libtcc's text has its own alone, and a spec without runs the one
   condition. */
static void wb_emit_cond_runs(wb_emitter *x, wb_buf *b,
                              bool (*cond)(wb_emitter *, wb_buf *, bool))
{
    bool runs = cond(x, b, true);
    if (runs && !x->libtcc)
        wb_emit_cond(x, b, WB_RT_COND_ELSE);
    if (!runs || !x->libtcc)
        cond(x, b, false);
    wb_emit_run_end(x, b, runs);
}

static void wb_emit_arguments(wb_emitter *x, wb_buf *b)
{
    const wb_spec *s = x->s;
    wb_emit_at(x, 1);
    wb_emit_comment(x, b, "/* %d argument%s, room for at least %d output%s "
                    "*/", s->ninputs, WB_PLURAL(s->ninputs), s->noutputs,
                    WB_PLURAL(s->noutputs));
    wb_buf_line(b, "if (nargs != %d || nouts < %d)", s->ninputs, s->noutputs);
    wb_buf_line(b, "    return %s(e, nargs, nouts);",
                WB_EMIT_NAME(wb_rt_err_arity));
    if (s->ntensor_inputs) {
        /* Each tensor present, then its declared dtype, dimensions and
           device, read from the leading members the prelude declares, so
           the common case costs a few compares and no call.  The error
           path finds which check failed first in the interpreter's order
           (every NULL before any declaration). */
        wb_emit_comment(x, b, "/* every tensor argument present%s */",
                        s->ndeclared ? ", as declared" : "");
        wb_emit_cond_runs(x, b, wb_emit_arg_checks);
        wb_buf_line(b, "    return %s(e, a);", WB_EMIT_NAME(wb_rt_err_inputs));
    }
    if (s->ndups) {
        wb_emit_comment(x, b, "/* deduplicated inputs are the tensors they "
                        "duplicate */");
        wb_buf_line(b, "if ((st = %s(e, a)) != 0)",
                    WB_EMIT_NAME(wb_rt_check_dups));
        wb_buf_line(b, "    return st;");
    }
    if (s->nreshaped) {
        wb_emit_comment(x, b, "/* inputs whose view or storage changes are "
                        "not passed twice */");
        wb_buf_line(b, "if ((st = %s(e, a)) != 0)",
                    WB_EMIT_NAME(wb_rt_check_distinct));
        wb_buf_line(b, "    return st;");
    }
    if (s->first_call) {
        wb_emit_at(x, 1);
        wb_emit_comment(x, b, "/* the first-call hook, once per wrapper */");
        wb_buf_line(b, "if ((st = %s(e)) != 0)",
                    WB_EMIT_NAME(wb_rt_first_call));
        wb_buf_line(b, "    return st;");
    }
    if (s->ngroups) {
        /* Made last, so that every later way out releases them. */
        wb_emit_at(x, 1);
        wb_emit_comment(x, b, "/* the synthetic bases, the graph's first "
                        "arguments: members on one storage, one dtype */");
        wb_buf_line(b, "if ((st = %s(e, a, ca + %d)) != 0)",
                    WB_EMIT_NAME(wb_rt_synth_bases), s->ntokens);
        wb_buf_line(b, "    return st;");
    }
    wb_buf_printf(b, "\n");
}

/* The graph's own arguments (wb_emit_own_args): the effect tokens, NULL,
   then the kept inputs, copied in runs of consecutive ones. */
static void wb_emit_graph_args(wb_emitter *x, wb_buf *b)
{
    const wb_spec *s = x->s;
    char f1[24], f2[24];
    if (!wb_emit_own_args(s))
        return;
    for (int k = 0; k < s->ntokens; k++)
        wb_buf_line(b, "ca[%d].t = 0; /* effect token %d */", k, k);
    if (!s->ndups && !s->ngroups && s->ninputs) {
        wb_buf_line(b, "%s(%s, a, sizeof *a * %d);", WB_EMIT_NAME(memcpy),
                    wb_emit_from(f1, "ca", s->ntokens), s->ninputs);
        return;
    }
    /* The synthetic bases are in place; members follow the other inputs,
       so a run ends where the arguments stop being consecutive. */
    for (int i = 0, n; i < s->ninputs; i += n) {
        for (n = 0; i + n < s->ninputs && s->arg_at[i + n] >= 0 &&
                    s->arg_at[i + n] == s->arg_at[i] + n;
             n++)
            ;
        if (n == 0) {
            wb_emit_at(x, wb_emit_input_line(i));
            wb_emit_comment(x, b, "/* %s: the same tensor as input %d, "
                            "not passed again */", wb_emit_in_desc(x, i),
                            s->inputs[i].dup_of);
            n = 1;
        } else {
            /* memcpy even for one: libtcc copies a union by calling
               memmove, which the code cannot reach. */
            wb_buf_line(b, "%s(%s, %s, sizeof *a * %d);",
                        WB_EMIT_NAME(memcpy),
                        wb_emit_from(f1, "ca", s->arg_at[i]),
                        wb_emit_from(f2, "a", i), n);
        }
    }
}

/* The tensor input `input` of a wb_spec_mut (or of bumped and hidden)
   names: the input, or its synthetic base, which the graph's arguments
   hold. */
static const char *wb_emit_target(wb_emitter *x, int input)
{
    int g = wb_spec_synth(x->s, input);
    wb_buf *b = wb_emit_tmp(x);
    if (g >= 0)
        wb_buf_printf(b, "ca[%d].t", x->s->ntokens + g);
    else
        wb_buf_printf(b, "a[%d].t", input);
    return wb_emit_tmp_text(x);
}

/* Bumps, guards, grad mode, detaches, the before-call hook and the call,
   with a ladder of labels that undoes exactly what was done. */
static void wb_emit_call(wb_emitter *x, wb_buf *b)
{
    const wb_spec *s = x->s;
    const char *args = wb_emit_own_args(s) ? "ca" : "a";
    const char *bail = s->nbumped    ? "goto unbump"
                       : s->ngroups ? "goto drop"
                                    : "return st";
    for (int k = 0; k < s->nbumped; k++) {
        int i = s->bumped[k];
        wb_emit_at(x, wb_emit_mut_line(s, i));
        if (i >= 0)
            wb_emit_comment(x, b, "/* %s: the graph writes it */",
                            wb_emit_in_desc(x, i));
        else
            wb_emit_comment(x, b, "/* synthetic base %d: the graph writes "
                            "it */", wb_spec_synth(s, i));
        wb_buf_line(b, "%s(%s);", WB_EMIT_NAME(wb_rt_bump),
                    wb_emit_target(x, i));
    }
    if (!wb_emit_call_wrapped(s))
        return;  /* made in the check's condition (wb_emit_checks) */
    wb_emit_at(x, 1);
    wb_emit_comment(x, b, "/* the call: %d guard%s, grad mode %s */",
                    s->nguards, WB_PLURAL(s->nguards),
                    s->training ? "on" : "off");
    for (int g = 0; g < s->nguards; g++) {
        wb_buf_line(b, "if ((st = %s(e, %d)) != 0)",
                    WB_EMIT_NAME(wb_rt_guard_enter), g);
        wb_buf_line(b, "    goto leave%d;", g);
    }
    wb_buf_line(b, "grad = %s(%d);", WB_EMIT_NAME(wb_rt_grad_swap),
                s->training ? 1 : 0);
    wb_emit_graph_args(x, b);
    for (int d = 0; d < s->ndetached; d++) {
        int i = s->detached[d];
        wb_emit_at(x, wb_emit_input_line(i));
        wb_buf_line(b, "if ((st = %s(e, %d, a[%d].t, &ca[%d])) != 0)",
                    WB_EMIT_NAME(wb_rt_detach), i, i, s->arg_at[i]);
        wb_buf_line(b, "    goto undetach%d;", d);
    }
    if (s->before_call) {
        wb_buf_line(b, "if ((st = %s(e)) != 0)",
                    WB_EMIT_NAME(wb_rt_before_call));
        wb_buf_line(b, "    goto undetach%d;", s->ndetached);
    }
    if (s->rng) {
        wb_buf_line(b, "if ((st = %s(e, ca + %d)) != 0) /* seed, offset */",
                    WB_EMIT_NAME(wb_rt_rng_get), s->nargs - 2);
        wb_buf_line(b, "    goto undetach%d;", s->ndetached);
    }
    for (int k = 0; k < s->nhidden; k++)
        wb_buf_line(b, "kept[%d] = %s(%s); /* hidden from autograd */", k,
                    WB_EMIT_NAME(wb_rt_version_get),
                    wb_emit_target(x, s->hidden[k]));
    wb_buf_line(b, "n = e->graph(e->graph_ctx, %s, %d, %s, %d);", args,
                s->nargs, wb_emit_values(s), s->nreturned);
    x->types |= WB_EMIT_TYPE_ENV;
    for (int k = 0; k < s->nhidden; k++)
        wb_buf_line(b, "%s(%s, kept[%d]);", WB_EMIT_NAME(wb_rt_version_put),
                    wb_emit_target(x, s->hidden[k]), k);
    if (s->rng)
        wb_buf_line(b, "%s(ca + %d);", WB_EMIT_NAME(wb_rt_rng_put),
                    s->nargs - 2);
    for (int d = s->ndetached; d >= 0; d--) {
        if (d < s->ndetached || s->before_call || s->rng)
            wb_buf_printf(b, "undetach%d:\n", d);
        if (d > 0)
            wb_buf_line(b, "%s(ca[%d].t);", WB_EMIT_NAME(wb_tensor_release),
                        s->arg_at[s->detached[d - 1]]);
    }
    wb_buf_line(b, "%s(grad);", WB_EMIT_NAME(wb_rt_grad_set));
    for (int g = s->nguards - 1; g >= 0; g--) {
        if (g + 1 < s->nguards)
            wb_buf_printf(b, "leave%d:\n", g + 1);
        wb_buf_line(b, "%s(e, %d);", WB_EMIT_NAME(wb_rt_guard_leave), g);
    }
    if (s->nguards)
        wb_buf_printf(b, "leave0:\n");
    if (wb_emit_call_may_fail(s)) {
        wb_buf_line(b, "if (st != 0)");
        wb_buf_line(b, "    %s;", bail);
    }
    wb_buf_printf(b, "\n");
}

/* The tensor whose storage a view output will share (see wb_interp_holder). */
static const char *wb_emit_holder(wb_emitter *x, const wb_spec_out *d)
{
    wb_buf *b = wb_emit_tmp(x);
    if (d->holder >= 0)
        wb_buf_printf(b, "r[%d].t", d->holder);
    else if (d->group >= 0)
        wb_buf_printf(b, "ca[%d].t", x->s->ntokens + d->group);
    else if (d->kind == WB_OUT_ALIAS_OF_INPUT)
        wb_buf_printf(b, "a[%d].t", d->base);
    else
        wb_buf_printf(b, "r[%d].t", d->base);
    return wb_emit_tmp_text(x);
}


/* Mutation j's check. */
static void wb_emit_prep_mut(wb_emitter *x, wb_buf *b, int j)
{
    const wb_spec_mut *m = &x->s->muts[j];
    const wb_gen_helper *h = &wb_emit_mut_step(x->s, m)->check;
    const char *fn = wb_emit_helper_name(x, h->id);
    char t[24];
    snprintf(t, sizeof t, "%s", wb_emit_target(x, m->input));
    if (h->args == WB_GEN_ARGS_prep_grow)
        wb_buf_line(b, "if ((st = %s(e, %d, %s, r[%d].t, &g%d)) != 0)", fn,
                    m->input, t, j, j);
    else
        wb_buf_line(b, "if ((st = %s(e, %d, %s, r[%d].t)) != 0)", fn,
                    m->input, t, j);
    wb_buf_line(b, "    goto fail;");
}

/* Whether output d is made from a view prepared in the check phase: its
   row has a check. */
static bool wb_emit_is_view(const wb_spec_out *d)
{
    return wb_gen_steps.out[d->kind].check.args != WB_GEN_ARGS_none;
}

/* The check of output k, a view, into v[vi]. */
static void wb_emit_prep_view(wb_emitter *x, wb_buf *b, int k, int vi)
{
    const wb_spec_out *d = &x->s->outs[k];
    const wb_gen_step *o = &wb_gen_steps.out[d->kind];
    char holder[32], grown[32];
    const char *h = wb_emit_holder(x, d);
    memcpy(holder, h, strlen(h) + 1);
    if (d->grow >= 0)
        wb_emit_cat(grown, "&g", "", (unsigned)d->grow);
    else
        memcpy(grown, "0", 2);
    /* A value on the very storage its base will hold needs at most a
       header; anything else, or a failed allocation, gets the full check,
       which words the message. */
    wb_buf_line(b, "if (%s(%s, r[%d].t, &v[%d]))",
                wb_emit_helper_name(x, o->check_first.id), holder, d->value,
                vi);
    wb_buf_line(b, "    if ((st = %s(e, %d, %s, %s, r[%d].t, &v[%d])) != 0)",
                wb_emit_helper_name(x, o->check.id), k, holder, grown,
                d->value, vi);
    wb_buf_line(b, "        goto fail;");
}

static void wb_emit_commit_mut(wb_emitter *x, wb_buf *b, int j)
{
    const wb_spec_mut *m = &x->s->muts[j];
    const wb_gen_helper *h = &wb_emit_mut_step(x->s, m)->commit;
    const char *fn = wb_emit_helper_name(x, h->id);
    char t[24];
    snprintf(t, sizeof t, "%s", wb_emit_target(x, m->input));
    if (h->args == WB_GEN_ARGS_commit_grow)
        wb_buf_line(b, "%s(%s, r[%d].t, &g%d);", fn, t, j, j);
    else
        wb_buf_line(b, "%s(%s, r[%d].t);", fn, t, j);
}

/* Whether the call ends with its last output, one that aliases nothing,
   neither requires grad nor has dynamic dims, and has nothing after it:
   then one call stores it and returns the call's 0, which spares libtcc's
   code a store, a reload and the move of the 0 (3 of its instructions). */
static bool wb_emit_ends_plain(const wb_spec *s)
{
    const wb_spec_out *d = s->noutputs ? &s->outs[s->noutputs - 1] : NULL;
    return d && !d->scalar && !s->ngroups &&
           wb_gen_steps.out[d->kind].commit_end.args != WB_GEN_ARGS_none &&
           !d->requires_grad && !d->dyn && !s->nbases && !s->ntokens &&
           !s->rng && s->grad_at_end < 0 && !s->device_copies;
}

/* Output k, from v[vi] when it is a view: its row's commit, or the
   cheaper one for an output without flags, or for one that ends the
   call. */
static void wb_emit_commit_out(wb_emitter *x, wb_buf *b, int k, int vi)
{
    const wb_spec_out *d = &x->s->outs[k];
    const wb_gen_step *o = &wb_gen_steps.out[d->kind];
    const wb_gen_helper *h = &o->commit;
    unsigned long long dyn = (unsigned long long)d->dyn;
    /* A number is copied through its member; None is NULL.  No step
       helper: there is nothing to check or to own. */
    if (d->scalar) {
        static const char *const member[] = {
            [WB_SCALAR_INT] = "i", [WB_SCALAR_FLOAT] = "f",
            [WB_SCALAR_BOOL] = "b"};
        if (d->scalar == WB_SCALAR_NONE)
            wb_buf_line(b, "outs[%d].p = 0;", k);
        else
            wb_buf_line(b, "outs[%d].%s = r[%d].%s;", k, member[d->scalar],
                        d->value, member[d->scalar]);
        return;
    }
    if (k == x->s->noutputs - 1 && wb_emit_ends_plain(x->s))
        h = &o->commit_end;
    else if (!d->requires_grad && !dyn &&
             o->commit_plain.args != WB_GEN_ARGS_none)
        h = &o->commit_plain;
    const char *fn = wb_emit_helper_name(x, h->id);
    switch (h->args) {
    case WB_GEN_ARGS_out_plain_end:
        wb_buf_line(b, "return %s(&outs[%d].t, r[%d].t);", fn, k, d->value);
        break;
    case WB_GEN_ARGS_out_plain:
        wb_buf_line(b, "outs[%d].t = %s(r[%d].t);", k, fn, d->value);
        break;
    case WB_GEN_ARGS_out_flags:
        wb_buf_line(b, "outs[%d].t = %s(r[%d].t, %d, 0x%llxull);", k, fn,
                    d->value, d->requires_grad, dyn);
        break;
    case WB_GEN_ARGS_out_input:
        wb_buf_line(b, "outs[%d].t = %s(a[%d].t, 0x%llxull);", k, fn,
                    d->base, dyn);
        wb_buf_line(b, "%s(r[%d].t);", WB_EMIT_NAME(wb_tensor_release),
                    d->value);
        break;
    case WB_GEN_ARGS_commit_view_plain:
        wb_buf_line(b, "outs[%d].t = %s(v[%d], r[%d].t);", k, fn, vi,
                    d->value);
        break;
    default: /* commit_view */
        wb_buf_line(b, "outs[%d].t = %s(v[%d], r[%d].t, %d, 0x%llxull);", k,
                    fn, vi, d->value, d->requires_grad, dyn);
        break;
    }
    if (d->holder >= 0 && d->kind == WB_OUT_ALIAS_OF_INPUT)
        wb_buf_line(b, "%s(outs[%d].t, a[%d].t); /* the counter set_ kept */",
                    WB_EMIT_NAME(wb_rt_view_counter), k, d->base);
}

/* Runs: consecutive steps alike, which one call of a runtime helper's
   loop does in order.  libtcc compiles that call in a fraction of the
   time the steps take one by one (for case E of the benchmark, what a
   wrapper costs in a batch fell from 877k instructions to 576k, and
   alone from 1,581k to 1,326k), and runs it about as fast (per call, 6%
   fewer instructions on case E, 1% more on D).  Other compilers get the
   steps one by one, which they run faster than the loop: gcc -O2 took 7%
   more instructions per call of case E with the loops. */

/* How many mutations from j on are data mutations of consecutive inputs,
   with the primitives unrolled for one count of dimensions (1 for a
   mutation that starts no run). */
static int wb_emit_mut_run(const wb_spec *s, int j)
{
    const wb_spec_mut *m = &s->muts[j];
    int nd = wb_emit_nd(s, m), n = 1;
    while (nd && j + n < s->nupdated &&
           s->muts[j + n].input == m->input + n &&
           wb_emit_nd(s, &s->muts[j + n]) == nd)
        n++;
    return n;
}

/* Whether output d is a view of its input's own storage, made as any
   other: no growth planned, no storage brought by another value. */
static bool wb_emit_plain_view(const wb_spec_out *d)
{
    return d->kind == WB_OUT_ALIAS_OF_INPUT && d->holder < 0 &&
           d->grow < 0 && d->group < 0;
}

/* How many outputs from k on are plain views of consecutive inputs, or
   all of one input (outputs that split it), from consecutive values, with
   the same flags, when they are at least three (1 otherwise); *of, where
   of is not NULL, says whether they view one input.  For two (case B of
   the benchmark) the loops would take a wrapper in a batch from 280k
   instructions to 194k, but cost each call 16 more with fixed values, 29
   with kept ones and 22 with fresh ones; for three (case D) they take it
   from 399k to 263k, and cost 9 more per call with fresh values, 1 with
   kept ones and none with fixed ones.  A run of data mutations costs
   less from two on. */
static int wb_emit_view_run(const wb_spec *s, int k, bool *of)
{
    const wb_spec_out *d = &s->outs[k];
    int n = 1;
    bool one = k + 1 < s->noutputs && s->outs[k + 1].base == d->base;
    if (of)
        *of = one;
    while (wb_emit_plain_view(d) && k + n < s->noutputs) {
        const wb_spec_out *o = &s->outs[k + n];
        if (!wb_emit_plain_view(o) || o->base != d->base + (one ? 0 : n) ||
            o->value != d->value + n ||
            o->requires_grad != d->requires_grad || o->dyn != d->dyn)
            break;
        n++;
    }
    return n >= 3 ? n : 1;
}

/* How many values from i on are tensors, when they are more than 16 (1
   otherwise): libtcc reads a term "!r[i].t" of the check that each is
   there for about 4,400 instructions, and one call of the runtime's loop
   for less than two terms, while the loop costs a call more. */
static int wb_emit_value_run(const wb_spec *s, int i)
{
    int n = 0;
    while (i + n < s->nvalues + s->rng && wb_spec_value_is_tensor(s, i + n))
        n++;
    return n > 16 ? n : 1;
}

/* The condition of the check after the graph's call, "if (...) {": the
   count it returned, then each tensor value there.  With runs set, the
   condition for libtcc, in which each run of values (wb_emit_value_run)
   is one call of wb_rt_args_missing, opening with the "#ifdef __TINYC__"
   that the caller's #else closes; when the values have no run, nothing is
   emitted and the result is false (as wb_emit_arg_checks does). */
static bool wb_emit_value_checks(wb_emitter *x, wb_buf *b, bool runs)
{
    const wb_spec *s = x->s;
    int k = 0, nv = s->nvalues + s->rng;
    if (runs) {
        int i = 0;
        while (i < nv && wb_emit_value_run(s, i) == 1)
            i++;
        if (i == nv)
            return false;
        if (!x->libtcc)
            wb_emit_cond(x, b, WB_RT_COND_TCC);
    }
    wb_emit_if(x, b);
    /* A call with nothing around it is made in the condition: libtcc
       compares the count it returned as it stores it, where a statement of
       its own would store and reload it. */
    if (!wb_emit_call_wrapped(s))
        wb_emit_term(x, b, &k, "(n = %s(e, a, %d, r, %d)) != %d",
                     s->training ? WB_EMIT_NAME(wb_rt_call_grad)
                                 : WB_EMIT_NAME(wb_rt_call_nograd),
                     s->ninputs, s->nvalues, s->nvalues);
    else
        wb_emit_term(x, b, &k, "n != %d", s->nreturned);
    for (int i = 0, n; i < nv; i += n) {
        char from[24];
        n = runs ? wb_emit_value_run(s, i) : 1;
        if (n > 1)
            wb_emit_term(x, b, &k, "%s(%s, %d)",
                         WB_EMIT_NAME(wb_rt_args_missing),
                         wb_emit_from(from, "r", i), n);
        else if (wb_spec_value_is_tensor(s, i))
            wb_emit_term(x, b, &k, "!r[%d].t", i);
    }
    wb_buf_printf(b, ") {\n");
    return runs;
}

static void wb_emit_checks(wb_emitter *x, wb_buf *b)
{
    const wb_spec *s = x->s;
    char f1[24], f2[24], f3[24];
    wb_emit_at(x, 1);
    if (!wb_emit_call_wrapped(s))
        wb_emit_comment(x, b, "/* the call: 0 guards, grad mode %s */",
                        s->training ? "on" : "off");
    wb_emit_comment(x, b, "/* check: every value, mutation and view; may "
                    "fail */");
    wb_emit_cond_runs(x, b, wb_emit_value_checks);
    wb_buf_line(b, "    st = %s(e, n, %s);", WB_EMIT_NAME(wb_rt_err_values),
                wb_emit_values(s));
    wb_buf_line(b, "    goto fail;");
    wb_buf_line(b, "}");
    for (int j = 0, n; j < s->nupdated; j += n) {
        const wb_spec_mut *m = &s->muts[j];
        n = wb_emit_mut_run(s, j);
        wb_emit_at(x, wb_emit_mut_line(s, m->input));
        if (wb_spec_synth(s, m->input) >= 0)
            wb_emit_comment(x, b, "/* synthetic base %d, data mutation, "
                            "from value %d */", wb_spec_synth(s, m->input),
                            j);
        for (int i = 0; i < n && m->input >= 0; i++)
            wb_emit_comment(x, b, "/* %s, from value %d */",
                            wb_emit_in_desc(x, m->input + i), j + i);
        if (n > 1)
            wb_emit_run_call(x, b, true, "if ((st = ",
                             wb_emit_mut_step(s, m)->check_run.id,
                             "(e, %d, %s, %s, %d)) != 0)",
                             m->input, wb_emit_from(f1, "a", m->input),
                             wb_emit_from(f2, "r", j), n);
        for (int i = 0; i < n && wb_emit_steps(x, n); i++) {
            if (i > 0)
                wb_emit_at(x, wb_emit_input_line(m->input + i));
            wb_emit_prep_mut(x, b, j + i);
        }
        wb_emit_run_end(x, b, n > 1);
    }
    /* The members whose views change take them from the values after
       the outputs, as metadata mutations do. */
    for (int k = 0; k < s->nmeta_members; k++) {
        int i = s->meta_members[k];
        wb_emit_at(x, wb_emit_input_line(i));
        wb_emit_comment(x, b, "/* %s: its view, from value %d */",
                        wb_emit_in_desc(x, i), wb_emit_meta_value(s, k));
        wb_buf_line(b, "if ((st = %s(e, %d, a[%d].t, r[%d].t)) != 0)",
                    wb_emit_helper_name(
                        x, wb_gen_steps.mut[WB_MUT_METADATA].check.id),
                    i, i, wb_emit_meta_value(s, k));
        wb_buf_line(b, "    goto fail;");
    }
    if (s->moved_reads) {
        wb_emit_at(x, 1);
        wb_emit_comment(x, b, "/* no value is an input a mutation moves "
                        "before it is read */");
        wb_buf_line(b, "if ((st = %s(e, a, r)) != 0)",
                    WB_EMIT_NAME(wb_rt_check_moved));
        wb_buf_line(b, "    goto fail;");
    }
    for (int k = 0, vi = 0, n; k < s->noutputs; k += n) {
        const wb_spec_out *d = &s->outs[k];
        const wb_gen_step *o = &wb_gen_steps.out[d->kind];
        bool of;
        n = wb_emit_view_run(s, k, &of);
        if (!wb_emit_is_view(d))
            continue;
        wb_emit_at(x, wb_emit_output_line(s, k));
        for (int i = 0; i < n; i++)
            wb_emit_comment(x, b, "/* %s */", wb_emit_out_desc(x, k + i));
        if (n > 1)
            wb_emit_run_call(x, b, true, "if ((st = ",
                             of ? o->check_run_of.id : o->check_run.id,
                             "(e, %d, %s, %s, %s, %d)) != 0)", k,
                             wb_emit_from(f1, "a", d->base),
                             wb_emit_from(f2, "r", d->value),
                             wb_emit_from(f3, "v", vi), n);
        for (int i = 0; i < n && wb_emit_steps(x, n); i++) {
            if (i > 0)
                wb_emit_at(x, wb_emit_output_line(s, k + i));
            wb_emit_prep_view(x, b, k + i, vi + i);
        }
        vi += n;
        wb_emit_run_end(x, b, n > 1);
    }
    wb_buf_printf(b, "\n");
}

static void wb_emit_commits(wb_emitter *x, wb_buf *b)
{
    const wb_spec *s = x->s;
    char f1[24], f2[24], f3[24];
    /* libtcc's text has no comment here for the line to point at, when
       a mutation or an output sets its own. */
    if (!x->libtcc || !(s->nupdated || s->noutputs))
        wb_emit_at(x, 1);
    wb_emit_comment(x, b, "/* commit: mutations, then outputs; cannot "
                    "fail */");
    if (s->grad_writes) {
        wb_emit_at(x, 1);
        wb_emit_comment(x, b, "/* with grad on, inputs written back take "
                        "requires-grad from their values */");
        wb_buf_line(b, "%s(e, a, r);", WB_EMIT_NAME(wb_rt_take_grads));
    }
    for (int j = 0, n; j < s->nupdated; j += n) {
        const wb_spec_mut *m = &s->muts[j];
        n = wb_emit_mut_run(s, j);
        wb_emit_at(x, wb_emit_mut_line(s, m->input));
        if (n > 1)
            wb_emit_run_call(x, b, false, "",
                             wb_emit_mut_step(s, m)->commit_run.id,
                             "(%s, %s, %d);", wb_emit_from(f1, "a", m->input),
                             wb_emit_from(f2, "r", j), n);
        for (int i = 0; i < n && wb_emit_steps(x, n); i++) {
            if (i > 0)
                wb_emit_at(x, wb_emit_input_line(m->input + i));
            wb_emit_commit_mut(x, b, j + i);
        }
        wb_emit_run_end(x, b, n > 1);
    }
    for (int k = 0, vi = 0, n; k < s->noutputs; k += n) {
        const wb_spec_out *d = &s->outs[k];
        const wb_gen_step *o = &wb_gen_steps.out[d->kind];
        n = wb_emit_view_run(s, k, NULL);
        wb_emit_at(x, wb_emit_output_line(s, k));
        for (int i = 0; i < n; i++)
            wb_emit_comment(x, b, "/* %s */", wb_emit_out_desc(x, k + i));
        if (n > 1 && !d->requires_grad && !d->dyn)
            wb_emit_run_call(x, b, false, "", o->commit_run_plain.id,
                             "(%s, %s, %s, %d);", wb_emit_from(f1, "outs", k),
                             wb_emit_from(f2, "v", vi),
                             wb_emit_from(f3, "r", d->value), n);
        else if (n > 1)
            wb_emit_run_call(x, b, false, "", o->commit_run.id,
                             "(%s, %s, %s, %d, %d, 0x%llxull);",
                             wb_emit_from(f1, "outs", k),
                             wb_emit_from(f2, "v", vi),
                             wb_emit_from(f3, "r", d->value), n,
                             d->requires_grad, (unsigned long long)d->dyn);
        for (int i = 0; i < n && wb_emit_steps(x, n); i++) {
            if (i > 0)
                wb_emit_at(x, wb_emit_output_line(s, k + i));
            wb_emit_commit_out(x, b, k + i, vi + i);
        }
        /* A run's outputs are all views. */
        vi += n > 1 ? n : wb_emit_is_view(d);
        wb_emit_run_end(x, b, n > 1);
    }
    if (s->nbases) {
        wb_emit_at(x, 1);
        wb_emit_comment(x, b, "/* the intermediate bases are not returned */");
        wb_buf_line(b, "%s(r + %d, %d);", WB_EMIT_NAME(wb_rt_release_values),
                    wb_emit_meta_value(s, s->nmeta_members), s->nbases);
    }
    /* The members' new views once the outputs are made from the bases,
       as AOTAutograd's synthetic-base wrapper applies them after its
       inner one; then the bases go. */
    for (int k = 0; k < s->nmeta_members; k++) {
        int i = s->meta_members[k];
        wb_emit_at(x, wb_emit_input_line(i));
        wb_emit_comment(x, b, "/* %s: its view */", wb_emit_in_desc(x, i));
        wb_buf_line(b, "%s(a[%d].t, r[%d].t);",
                    wb_emit_helper_name(
                        x, wb_gen_steps.mut[WB_MUT_METADATA].commit.id),
                    i, wb_emit_meta_value(s, k));
    }
    if (s->ngroups) {
        wb_emit_at(x, 1);
        wb_buf_line(b, "%s(ca + %d, %d); /* the synthetic bases */",
                    WB_EMIT_NAME(wb_rt_release_values), s->ntokens,
                    s->ngroups);
    }
    if (s->ntokens) {
        wb_emit_at(x, 1);
        wb_buf_line(b, "%s(rt, %d); /* the effect tokens are dropped */",
                    WB_EMIT_NAME(wb_rt_release_values), s->ntokens);
    }
    if (s->grad_at_end >= 0) {
        wb_emit_at(x, 1);
        wb_buf_line(b, "%s(%d); /* grad mode at the end */",
                    WB_EMIT_NAME(wb_rt_grad_set), s->grad_at_end);
    }
    if (s->device_copies) {
        wb_emit_at(x, 1);
        wb_emit_comment(x, b, "/* device copies, all at once on the call's "
                        "stream */");
        if (!s->rng) {
            wb_buf_line(b, "return %s(e, outs, %d);",
                        WB_EMIT_NAME(wb_rt_flush), s->noutputs);
        } else {
            wb_buf_line(b, "if ((st = %s(e, outs, %d)) != 0) {",
                        WB_EMIT_NAME(wb_rt_flush), s->noutputs);
            wb_buf_line(b, "    %s(r[%d].t);", WB_EMIT_NAME(wb_tensor_release),
                        s->nvalues);
            wb_buf_line(b, "    return st;");
            wb_buf_line(b, "}");
        }
    }
    if (s->rng) {
        /* Only now, so that a failed call leaves the generator as it
           was. */
        wb_emit_at(x, 1);
        wb_buf_line(b, "%s(e, r[%d].t); /* the RNG's new offset */",
                    WB_EMIT_NAME(wb_rt_rng_set), s->nvalues);
        wb_buf_line(b, "return 0;");
    } else if (!s->device_copies && !wb_emit_ends_plain(s)) {
        wb_buf_line(b, "return 0;");
    }
    wb_buf_printf(b, "\n");
}

static void wb_emit_failure(wb_emitter *x, wb_buf *b)
{
    const wb_spec *s = x->s;
    wb_emit_comment(x, b, "/* after the graph ran, its in-graph writes and "
                    "their version bumps stand */");
    const char *release = WB_EMIT_NAME(wb_rt_release_values);
    wb_buf_printf(b, "fail:\n");
    /* First, so that a deleter the releases run may make a call. */
    if (s->device_copies)
        wb_buf_line(b, "%s(e); /* the device copies checked */",
                    WB_EMIT_NAME(wb_rt_drop_copies));
    for (int k = 0; k < s->noutputs; k++)
        if (s->outs[k].scalar)
            wb_buf_line(b, "r[%d].t = 0; /* a number, not a tensor */",
                        s->outs[k].value);
    wb_buf_line(b, "%s(%s, %d);", release, wb_emit_values(s), s->nreturned);
    if (s->nviews)
        wb_buf_line(b, "%s(v, %d);", WB_EMIT_NAME(wb_rt_release_all),
                    s->nviews);
    for (int j = 0; j < s->nupdated; j++)
        if (wb_emit_grows(&s->muts[j]))
            wb_buf_line(b, "%s(&g%d);", WB_EMIT_NAME(wb_rt_grow_free), j);
    /* Every way out releases the synthetic bases: fail, unbump, and drop
       for a bail-out before the call when nothing was bumped. */
    if (s->ngroups)
        wb_buf_line(b, "%s(ca + %d, %d); /* the synthetic bases */", release,
                    s->ntokens, s->ngroups);
    wb_buf_line(b, "return st;");
    /* Only a guard, a detach, the before-call hook or the RNG's get can
       bail out after the bumps and before the call; without one the
       label would be unused, which -Wall rejects in ahead-of-time
       builds. */
    if (!wb_emit_call_may_fail(s))
        return;
    if (s->nbumped) {
        wb_buf_printf(b, "unbump:\n");
        for (int k = 0; k < s->nbumped; k++)
            wb_buf_line(b, "%s(%s);", WB_EMIT_NAME(wb_rt_unbump),
                        wb_emit_target(x, s->bumped[k]));
    } else if (s->ngroups) {
        wb_buf_printf(b, "drop:\n");
    }
    if (s->nbumped || s->ngroups) {
        if (s->ngroups)
            wb_buf_line(b, "%s(ca + %d, %d);", release, s->ntokens,
                        s->ngroups);
        wb_buf_line(b, "return st;");
    }
}

static void wb_emit_function(wb_emitter *x, wb_buf *b, const char *fn)
{
    wb_buf_line(b, "int %s(const wb_env *e, const wb_arg *a, int nargs,", fn);
    wb_buf_line(b, "        wb_value *outs, int nouts)");
    wb_buf_line(b, "{");
    b->indent++;
    wb_emit_locals(x, b);
    wb_emit_arguments(x, b);
    wb_emit_call(x, b);
    wb_emit_checks(x, b);
    wb_emit_commits(x, b);
    wb_emit_failure(x, b);
    b->indent--;
    wb_buf_line(b, "}");
}

static bool wb_emit_ident_ok(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

wb_status wb_emit_parts(const wb_spec *spec, const char *fn_name,
                        wb_emit_form form, wb_emitted *out)
{
    wb_buf tmp = {0}, descs = {0};
    wb_emitter x = {.s = spec, .lines = form != WB_EMIT_PLAIN,
                    .libtcc = form == WB_EMIT_LIBTCC, .tmp = &tmp,
                    .descs = &descs, .reader = WB_RT_READ_TCC | WB_RT_READ_CC,
                    .cond = WB_RT_COND_NONE};
    if (!spec || !out || !fn_name)
        return wb_rt_fail(WB_ERR_INVALID, "wb_emit: NULL argument");
    if (!spec->valid)
        return wb_rt_fail(WB_ERR_INVALID, "wb_emit: the spec is not "
                          "validated");
    if (!wb_emit_ident_ok(fn_name) || strlen(fn_name) > 64)
        return wb_rt_fail(WB_ERR_INVALID, "wb_emit: the function name is "
                          "not a C identifier of at most 64 bytes");
    /* The descriptions are for comments, which libtcc's text has none of. */
    size_t *at = NULL;
    if (!x.libtcc) {
        at = malloc(sizeof *at * (size_t)(spec->ninputs + spec->noutputs + 1));
        if (!at)
            return wb_rt_fail(WB_ERR_NOMEM, "out of memory emitting C");
        wb_emit_descs(spec, &descs, at);
        x.desc_at = at;
    }
    wb_emit_file_name(spec->name, x.file, sizeof x.file);
    /* The body goes first, into a buffer of its own, so that the prelude
       can declare exactly the helpers it called. */
    wb_emitter bx = x;
    wb_emit_function(&bx, &bx.out, fn_name);
    if (!x.libtcc)
        wb_emit_banner(&x);
    wb_emit_prelude(&x, bx.used, bx.types);
    bool oom = bx.out.oom || x.out.oom || tmp.oom || descs.oom;
    memset(out, 0, sizeof *out);
    out->prelude = wb_buf_take(&x.out);
    out->body = wb_buf_take(&bx.out);
    snprintf(out->entry, sizeof out->entry, "%s", fn_name);
    memcpy(out->used, bx.used, sizeof out->used);
    out->types = bx.types;
    wb_buf_free(&tmp);
    wb_buf_free(&descs);
    free(at);
    if (oom || !out->prelude || !out->body) {
        wb_emitted_free(out);
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory emitting C");
    }
    return WB_OK;
}

void wb_emitted_free(wb_emitted *e)
{
    if (e) {
        free(e->prelude);
        free(e->body);
        e->prelude = e->body = NULL;
    }
}

wb_status wb_emit(const wb_spec *spec, const char *fn_name, wb_emit_form form,
                  char **out)
{
    wb_emitted parts;
    wb_status st;
    if (!out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_emit: NULL argument");
    if ((st = wb_emit_parts(spec, fn_name, form, &parts)) != WB_OK)
        return st;
    size_t a = strlen(parts.prelude), b = strlen(parts.body);
    char *text = malloc(a + b + 1);
    if (text) {
        memcpy(text, parts.prelude, a);
        memcpy(text + a, parts.body, b + 1);
    }
    wb_emitted_free(&parts);
    if (!text)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory emitting C");
    *out = text;
    return WB_OK;
}

wb_status wb_emit_c(const wb_spec *spec, char **out)
{
    return wb_emit(spec, WB_EMIT_FN, WB_EMIT_PLAIN, out);
}
