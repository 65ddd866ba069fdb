/*
 * schema.c -- ATen function schemas with wrapbake's extension: a
 * hand-written recursive-descent parser, the checks that need the whole
 * schema, and the mapping onto the spec IR (docs/spec-format.md).
 *
 * The parser reads straight from the NUL-terminated text with a cursor; it
 * never looks past the NUL, because every look-ahead stops at the first byte
 * that cannot continue the token, and NUL continues none.  Nothing from the
 * text reaches a message or a default except through wb_spec_print_name, so
 * a hostile schema cannot put control bytes or unbounded text into
 * wb_last_error() or wb_schema_arg_default(); what else it exposes (names,
 * types) is made of identifiers, digits and punctuation.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"
#include "spec.h"
#include "../core/core.h"

/* ---- the model ---------------------------------------------------------- */

/* ATen's base types: torchgen's BaseTy and every base type the C++ schema
   parser (torch/csrc/jit/frontend/schema_type_parser.cpp) knows; the first
   five map onto scalars the wrapper passes by value, every other non-tensor
   is opaque. */
enum {
    WB_SCHEMA_TENSOR = 0,
    WB_SCHEMA_INT,
    WB_SCHEMA_SYMINT,
    WB_SCHEMA_FLOAT,
    WB_SCHEMA_BOOL
};

static const char *const wb_schema_base_names[] = {
    "Tensor", "int", "SymInt", "float", "bool", "str", "Scalar",
    "ScalarType", "Layout", "Device", "DeviceIndex", "MemoryFormat",
    "Generator", "Dimname", "Storage", "Stream", "QScheme", "SymBool",
    "DimVector", "GraphModule", "ConstQuantizerPtr", "complex", "Quantizer",
    "None", "NoneType", "Capsule", "Any", "AnyClassType", "AnyEnumType",
    "PyObject",
};

#define WB_SCHEMA_COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

/* "No position": a field holding the offset of an attribute that was not
   given. */
#define WB_SCHEMA_NOPOS SIZE_MAX

/* Default lists nest at most this deep, so that recursion is bounded
   whatever the input. */
#define WB_SCHEMA_MAX_DEPTH 16

/* The largest fixed list size accepted, far above any real one; numbers
   saturate just above it (wb_schema_digits). */
#define WB_SCHEMA_MAX_LIST 999999999

/* The distinct alias sets one schema may have, named or fresh (each
   'Tensor!' makes one of its own), far above any real schema. */
#define WB_SCHEMA_MAX_SETS 256

/* A set of alias sets, a bit for each index into wb_schema.sets. */
typedef struct wb_schema_bits {
    uint64_t w[WB_SCHEMA_MAX_SETS / 64];
} wb_schema_bits;

static void wb_schema_bits_add(wb_schema_bits *b, int i)
{
    b->w[i / 64] |= (uint64_t)1 << (i % 64);
}

static bool wb_schema_bits_has(const wb_schema_bits *b, int i)
{
    return (b->w[i / 64] >> (i % 64)) & 1;
}

/* The first set at or after from in b, or -1. */
static int wb_schema_bits_next(const wb_schema_bits *b, int from)
{
    for (int i = from; i < WB_SCHEMA_MAX_SETS;) {
        uint64_t w = b->w[i / 64] >> (i % 64);
        if (!w) {
            i = (i / 64 + 1) * 64;
            continue;
        }
        while (!(w & 1)) {
            w >>= 1;
            i++;
        }
        return i;
    }
    return -1;
}

typedef struct wb_schema_type {
    int base;              /* index into wb_schema_base_names */
    bool annotated;        /* an alias annotation follows the base */
    wb_schema_bits sets;   /* the named or fresh sets before any "->" */
    int first_set;         /* the first of them written, or -1 */
    bool wildcard;         /* '*' among the sets before any "->" */
    bool write;            /* '!', or the '!' shorthand */
    bool after;            /* a "->" part (wildcard or sets) */
    bool optional;         /* '?' on the element: Tensor?, int?[] */
    bool list;             /* a list suffix: [] or [n], optional or not */
    long len;              /* n of a list [n]; 0 when not given ([]) */
    bool list_optional;    /* '?' on the list: Tensor[]?, int[2]? */
    size_t annot_pos;      /* where the annotation starts */
    char *text;            /* the type as ATen prints it */
} wb_schema_type;

typedef struct wb_schema_arg {
    char *name;
    char *dflt;            /* the default as ATen prints it, or NULL */
    wb_schema_type type;
    bool kwonly;           /* after the '*' marker */
    size_t name_pos;
    /* The extension. */
    wb_mutation mutation;  /* for '!' parameters; data unless an attribute
                              says otherwise */
    unsigned flags;        /* WB_INPUT_DETACH and WB_INPUT_HIDDEN */
    DLDataType dtype;
    int ndim;
    DLDevice device;       /* device_type 0: not declared */
    int dup_of;            /* the earlier parameter it duplicates, or -1 */
    int alias_of;          /* the earlier parameter whose storage it lies
                              on, in one synthetic base, or -1 */
    bool aliased;          /* a later parameter lies on its storage */
    long long input;       /* the first spec input it makes */
    long count;            /* how many: a tensor list of known length
                              makes one each, anything else one */
    unsigned seen;         /* attributes given, a bit each */
    const char *mut_attr;  /* the mutation attribute given, or NULL */
    size_t mut_pos, hidden_pos, detach_pos;
} wb_schema_arg;

/* How a return relates to the parameters, before it becomes an output:
   it aliases nothing, one parameter, an intermediate (sets no parameter
   has), or an input it cannot name (the wildcard, or a set several
   parameters share). */
enum { WB_SCHEMA_CLS_NONE, WB_SCHEMA_CLS_PARAM, WB_SCHEMA_CLS_INTER,
       WB_SCHEMA_CLS_AMBIG };

typedef struct wb_schema_ret {
    char *name;            /* "" when unnamed */
    wb_schema_type type;
    size_t name_pos;
    /* The extension. */
    bool requires_grad;
    uint64_t dyn;
    wb_alias variant;      /* non-alias, unsafe-view or custom-function-view */
    bool save_as_output;
    bool is_base;
    bool is_input;         /* the parameter itself, mutated or not */
    long long output;      /* the first spec output it makes */
    long count;            /* how many: a list of known length makes one
                              each, anything else one */
    unsigned seen;
    size_t rg_pos, variant_pos, save_pos, base_pos, is_input_pos;
    /* Resolved. */
    int cls;               /* WB_SCHEMA_CLS_* */
    int key;               /* the parameter, or the set (an index) */
    int shared;            /* a set of its that parameters share, or -1 */
    bool multi;            /* its sets name more than one target */
    bool elementwise;      /* a list return of a list parameter's set,
                              as long as it: element j is element j's */
    wb_schema_alias alias;
    int base;              /* as wb_schema_return_base says */
    wb_alias kind;         /* what the output becomes */
    int spec_base;         /* the base wb_spec_add_output gets */
} wb_schema_ret;

/* An alias set of the schema. */
typedef struct wb_schema_set {
    char *name;            /* NULL for the fresh set of a '!' shorthand */
    int owner;             /* the first parameter that has it, or -1 */
    int nowners;           /* how many parameters have it */
} wb_schema_set;

struct wb_schema {
    char *ns;              /* the namespace, "" when none */
    char *name;            /* name.overload */
    char *base_name;
    wb_schema_arg *args;
    int nargs, cap_args;
    wb_schema_ret *rets;
    int nrets, cap_rets;
    wb_schema_set *sets;   /* in order of first appearance */
    int nsets, cap_sets;
    long long ninputs;     /* spec inputs the parameters make */
    long long noutputs;    /* spec outputs the returns make */
    int nbases;
    bool training;
    bool keep_input_mutations;
    bool inplace_view;
    int grad_at_end;
    int ntokens;           /* effect tokens */
    bool rng;              /* functionalized RNG */
    unsigned graph_seen;
    char *unwrappable;     /* why it cannot be wrapped, or NULL */
};

/* ---- growing strings ---------------------------------------------------- */

typedef struct wb_schema_buf {
    char *p;
    size_t n, cap;
    bool nomem;
} wb_schema_buf;

static void wb_schema_buf_add(wb_schema_buf *b, const char *s, size_t n)
{
    if (b->nomem)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->nomem = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void wb_schema_buf_str(wb_schema_buf *b, const char *s)
{
    wb_schema_buf_add(b, s, strlen(s));
}

/* Hands the string over to *out, or fails with WB_ERR_NOMEM; either way b
   is left empty. */
static wb_status wb_schema_buf_take(wb_schema_buf *b, char **out)
{
    wb_schema_buf_add(b, "", 0);
    if (b->nomem) {
        free(b->p);
        *b = (wb_schema_buf){0};
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory parsing a schema");
    }
    *out = b->p;
    *b = (wb_schema_buf){0};
    return WB_OK;
}

static wb_status wb_schema_dup(const char *s, size_t n, char **out)
{
    wb_schema_buf b = {0};
    wb_schema_buf_add(&b, s, n);
    return wb_schema_buf_take(&b, out);
}

/* Makes room for item n of an array of *cap. */
static wb_status wb_schema_grow(void **items, int *cap, int n, size_t size)
{
    if (n < *cap)
        return WB_OK;
    if (*cap > INT32_MAX / 4)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory parsing a schema");
    int ncap = *cap ? *cap * 2 : 8;
    void *q = realloc(*items, (size_t)ncap * size);
    if (!q)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory parsing a schema");
    *items = q;
    *cap = ncap;
    return WB_OK;
}

/* ---- characters --------------------------------------------------------- */

/* ASCII classes of our own: <ctype.h> depends on the locale and takes no
   negative char. */
static bool wb_schema_is_digit(char c) { return c >= '0' && c <= '9'; }

static bool wb_schema_is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool wb_schema_is_ident_char(char c)
{
    return wb_schema_is_ident_start(c) || wb_schema_is_digit(c);
}

static bool wb_schema_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
           c == '\v';
}

static size_t wb_schema_ident_len(const char *s)
{
    size_t n = 0;
    if (!wb_schema_is_ident_start(s[0]))
        return 0;
    while (wb_schema_is_ident_char(s[n]))
        n++;
    return n;
}

/* The escaped rendering of n bytes of text: at most 64 of them, as
   wb_spec_print_name shows names. */
static const char *wb_schema_q(const char *s, size_t n, char *buf,
                               size_t size)
{
    char tmp[66];
    if (n > 65)
        n = 65;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    wb_spec_print_name(tmp, buf, size);
    return buf;
}

/* ---- the parser --------------------------------------------------------- */

typedef struct wb_schema_parser {
    const char *text;
    size_t pos;            /* the cursor */
    size_t tok_end;        /* the end of the last token taken */
    const char *file;
    int line;
    bool kwonly;           /* a '*' was seen */
    wb_schema *sc;
} wb_schema_parser;

/* Formats "FILE:LINE:COL: MESSAGE", then the line of pos (at most 64 bytes
   of it around the column, escaped) and a caret under the column. */
static wb_status wb_schema_vfail(const wb_schema_parser *p, size_t pos,
                                 const char *prefix, const char *fmt,
                                 va_list ap)
{
    char msg[640], before[300], shown[300], seg[66], file[129];
    const char *t = p->text, *f = p->file ? p->file : "<text>";
    size_t ls = 0, le = pos, start, n;
    long line = p->line;
    for (size_t i = 0; i < pos; i++)
        if (t[i] == '\n') {
            line++;
            ls = i + 1;
        }
    while (t[le] && t[le] != '\n')
        le++;
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* The file name is the caller's, not the input's: it is shown as given
       (slashes and all, at most 128 bytes), and a caller that prints it
       escapes it as it escapes its own file names. */
    snprintf(file, sizeof file, "%s", f);
    /* Show the whole line when it is short or the column near its start,
       else from 32 bytes before the column, so that the caret is always in
       view. */
    start = le - ls <= 64 || pos - ls < 48 ? ls : pos - 32;
    n = pos - start;
    memcpy(seg, t + start, n);
    seg[n] = '\0';
    wb_spec_print_name(seg, before, sizeof before);
    n = le - start < 65 ? le - start : 65;
    memcpy(seg, t + start, n);
    seg[n] = '\0';
    wb_spec_print_name(seg, shown, sizeof shown);
    const char *dots = start > ls ? "..." : "";
    return wb_rt_fail(WB_ERR_SPEC, "%s:%ld:%zu: %s%s\n    %s%s\n    %*s^",
                      file, line, pos - ls + 1,
                      prefix, msg, dots, shown,
                      (int)(strlen(dots) + strlen(before)), "");
}

static wb_status wb_schema_fail_at(const wb_schema_parser *p, size_t pos,
                                   const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static wb_status wb_schema_fail_at(const wb_schema_parser *p, size_t pos,
                                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_status st = wb_schema_vfail(p, pos, "", fmt, ap);
    va_end(ap);
    return st;
}

static void wb_schema_skip(wb_schema_parser *p);

static wb_status wb_schema_expected(wb_schema_parser *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* "expected ..." at the next token; at the end of the text, right after
   the last token, where the reader looks for what is missing. */
static wb_status wb_schema_expected(wb_schema_parser *p, const char *fmt, ...)
{
    va_list ap;
    wb_schema_skip(p);
    size_t pos = p->text[p->pos] ? p->pos : p->tok_end;
    va_start(ap, fmt);
    wb_status st = wb_schema_vfail(p, pos, "expected ", fmt, ap);
    va_end(ap);
    return st;
}

/* Skips spaces, newlines and comments (from '#' to the end of the line). */
static size_t wb_schema_skip_from(const char *t, size_t i)
{
    for (;;) {
        if (wb_schema_is_space(t[i]))
            i++;
        else if (t[i] == '#')
            while (t[i] && t[i] != '\n')
                i++;
        else
            return i;
    }
}

static void wb_schema_skip(wb_schema_parser *p)
{
    p->pos = wb_schema_skip_from(p->text, p->pos);
}

static char wb_schema_peek(wb_schema_parser *p)
{
    wb_schema_skip(p);
    return p->text[p->pos];
}

static void wb_schema_advance(wb_schema_parser *p, size_t n)
{
    p->pos += n;
    p->tok_end = p->pos;
}

/* Takes the punctuation tok if it is next. */
static bool wb_schema_accept(wb_schema_parser *p, const char *tok)
{
    size_t n = strlen(tok);
    wb_schema_skip(p);
    if (strncmp(p->text + p->pos, tok, n) != 0)
        return false;
    wb_schema_advance(p, n);
    return true;
}

/* Takes an identifier if one is next. */
static bool wb_schema_ident(wb_schema_parser *p, size_t *start, size_t *len)
{
    wb_schema_skip(p);
    size_t n = wb_schema_ident_len(p->text + p->pos);
    if (n == 0)
        return false;
    *start = p->pos;
    *len = n;
    wb_schema_advance(p, n);
    return true;
}

static bool wb_schema_is_word(const char *s, size_t n, const char *word)
{
    /* Compared a byte at a time, which stops at the first that differs:
       the parser tries each keyword of a table in turn. */
    for (size_t i = 0; i < n; i++)
        if (!word[i] || word[i] != s[i])
            return false;
    return !word[n];
}

/* Takes digits; a value above WB_SCHEMA_MAX_LIST reads as
   WB_SCHEMA_MAX_LIST + 1, so that the arithmetic stays far inside even a
   32-bit long, however many digits there are. */
static long wb_schema_digits(wb_schema_parser *p)
{
    long v = 0;
    while (wb_schema_is_digit(p->text[p->pos])) {
        int d = p->text[p->pos] - '0';
        v = v > (WB_SCHEMA_MAX_LIST - d) / 10 ? WB_SCHEMA_MAX_LIST + 1L
                                              : v * 10 + d;
        p->pos++;
    }
    p->tok_end = p->pos;
    return v;
}

/* Who an item is, for messages: "parameter 2 'x'", "return 0 'values'",
   "return 1".  The parser names each item before it knows whether a
   message needs it, so this is written without printf, which was close to
   half of what parsing a spec cost. */
static const char *wb_schema_who(char *buf, size_t n, const char *what,
                                 int i, const char *name)
{
    char num[12], nm[300], *d = num + sizeof num;
    size_t o = 0;
    unsigned u = (unsigned)i;
    *--d = '\0';
    do
        *--d = (char)('0' + u % 10);
    while (u /= 10);
    const char *part[] = {what, " ", d, " '", nm, "'"};
    int nparts = 3;
    if (name && *name) {
        wb_spec_print_name(name, nm, sizeof nm);
        nparts = 6;
    }
    for (int k = 0; k < nparts; k++)
        for (const char *c = part[k]; *c && o + 1 < n; c++)
            buf[o++] = *c;
    if (n)
        buf[o] = '\0';
    return buf;
}

static const char *wb_schema_who_arg(const wb_schema *sc, int i, char *buf,
                                     size_t n)
{
    return wb_schema_who(buf, n, "parameter", i, sc->args[i].name);
}

static const char *wb_schema_who_ret(const wb_schema *sc, int k, char *buf,
                                     size_t n)
{
    return wb_schema_who(buf, n, "return", k, sc->rets[k].name);
}

/* ---- types -------------------------------------------------------------- */

/* How a set is named in messages: "alias set 'a'", or "a fresh alias set
   ('!')" for the set of a '!' shorthand. */
static const char *wb_schema_set_desc(const wb_schema *sc, int set, char *buf,
                                      size_t n)
{
    char nm[300];
    if (!sc->sets[set].name) {
        snprintf(buf, n, "a fresh alias set ('!')");
        return buf;
    }
    wb_spec_print_name(sc->sets[set].name, nm, sizeof nm);
    snprintf(buf, n, "alias set '%s'", nm);
    return buf;
}

/* The index of the set named by the n bytes at name, made the next one if
   the schema has no such set yet; name NULL makes a fresh set.  pos is
   where the set is written, for the message when there are too many. */
static wb_status wb_schema_intern_set(wb_schema_parser *p, size_t pos,
                                      const char *name, size_t n, int *out)
{
    wb_schema *sc = p->sc;
    wb_status st;
    char q[300];
    for (int i = 0; name && i < sc->nsets; i++)
        if (sc->sets[i].name && wb_schema_is_word(name, n, sc->sets[i].name)) {
            *out = i;
            return WB_OK;
        }
    if (sc->nsets >= WB_SCHEMA_MAX_SETS) {
        if (!name)
            return wb_schema_fail_at(p, pos, "too many alias sets: this '!' "
                                     "would make set %d, and a schema has at "
                                     "most %d (each 'Tensor!' makes one of "
                                     "its own)", WB_SCHEMA_MAX_SETS + 1,
                                     WB_SCHEMA_MAX_SETS);
        return wb_schema_fail_at(p, pos, "too many alias sets: '%s' would be "
                                 "set %d, and a schema has at most %d (each "
                                 "'Tensor!' makes one of its own)",
                                 wb_schema_q(name, n, q, sizeof q),
                                 WB_SCHEMA_MAX_SETS + 1, WB_SCHEMA_MAX_SETS);
    }
    if ((st = wb_schema_grow((void **)&sc->sets, &sc->cap_sets, sc->nsets,
                             sizeof *sc->sets)) != WB_OK)
        return st;
    wb_schema_set *set = &sc->sets[sc->nsets];
    *set = (wb_schema_set){.owner = -1};
    if (name && (st = wb_schema_dup(name, n, &set->name)) != WB_OK)
        return st;
    *out = sc->nsets++;
    return WB_OK;
}

/* set { "|" set }, set = ident | "*", as ATen prints it to b.  The sets
   before "->" (before true) are the type's own; those after it are only
   shown.  As in ATen, no name follows a '*': the wildcard takes them all. */
static wb_status wb_schema_parse_sets(wb_schema_parser *p, wb_schema_type *ty,
                                      bool before, wb_schema_buf *b,
                                      const char *what)
{
    wb_status st;
    bool wild = false;
    size_t s, n;
    char q[300];
    for (bool initial = true;; initial = false) {
        if (!initial)
            wb_schema_buf_str(b, "|");
        if (wb_schema_accept(p, "*")) {
            wild = true;
            wb_schema_buf_str(b, "*");
            if (before)
                ty->wildcard = true;
        } else if (wb_schema_ident(p, &s, &n)) {
            if (wild)
                return wb_schema_fail_at(p, s, "alias set '%s' follows the "
                                         "wildcard '*', which stands for "
                                         "every set; write it before the "
                                         "'*'",
                                         wb_schema_q(p->text + s, n, q,
                                                     sizeof q));
            wb_schema_buf_add(b, p->text + s, n);
            if (before) {
                int set;
                if ((st = wb_schema_intern_set(p, s, p->text + s, n, &set)) !=
                    WB_OK)
                    return st;
                wb_schema_bits_add(&ty->sets, set);
                if (ty->first_set < 0)
                    ty->first_set = set;
            }
        } else {
            return initial ? wb_schema_expected(p, "%s", what)
                           : wb_schema_expected(p, "an alias set (a name or "
                                                   "'*') after '|'");
        }
        if (!wb_schema_accept(p, "|"))
            return WB_OK;
    }
}

/* annotation = "(" sets [ "!" ] [ "->" sets ] ")" | "!"; a list may have
   one on its elements and one on itself ("Tensor(a!)[](b)"), and the type
   then has the sets of both, and is written if either is. */
static wb_status wb_schema_parse_annotation(wb_schema_parser *p,
                                            wb_schema_type *ty,
                                            wb_schema_buf *b)
{
    wb_status st;
    wb_schema_skip(p);
    if (!ty->annotated)
        ty->annot_pos = p->pos;
    ty->annotated = true;
    if (wb_schema_peek(p) == '!') {
        /* Tensor!: a fresh, anonymous set of its own, written. */
        int set;
        if ((st = wb_schema_intern_set(p, p->pos, NULL, 0, &set)) != WB_OK)
            return st;
        wb_schema_advance(p, 1);
        wb_schema_bits_add(&ty->sets, set);
        if (ty->first_set < 0)
            ty->first_set = set;
        ty->write = true;
        wb_schema_buf_str(b, "!");
        return WB_OK;
    }
    wb_schema_advance(p, 1);
    wb_schema_buf_str(b, "(");
    if ((st = wb_schema_parse_sets(p, ty, true, b,
                                   "an alias set (a name or '*') after "
                                   "'('")) != WB_OK)
        return st;
    if (wb_schema_accept(p, "!")) {
        ty->write = true;
        wb_schema_buf_str(b, "!");
    }
    if (wb_schema_accept(p, "->")) {
        ty->after = true;
        wb_schema_buf_str(b, " -> ");
        if ((st = wb_schema_parse_sets(p, ty, false, b,
                                       "an alias set (a name or '*') after "
                                       "'->'")) != WB_OK)
            return st;
    }
    if (!wb_schema_accept(p, ")")) {
        if (ty->after)
            return wb_schema_expected(p, "'|' or ')' in the alias "
                                      "annotation");
        if (ty->write)
            return wb_schema_expected(p, "'->' or ')' in the alias "
                                      "annotation");
        return wb_schema_expected(p, "'|', '!', '->' or ')' in the alias "
                                  "annotation");
    }
    wb_schema_buf_str(b, ")");
    return WB_OK;
}

/* Whether a list suffix starts here: '[' then a digit or ']'.  Anything
   else after '[' opens the attributes of the item. */
static bool wb_schema_list_follows(wb_schema_parser *p)
{
    if (wb_schema_peek(p) != '[')
        return false;
    size_t i = wb_schema_skip_from(p->text, p->pos + 1);
    return p->text[i] == ']' || wb_schema_is_digit(p->text[i]);
}

/* type = base [ annotation ] [ "?" ]
          [ "[" [ int ] "]" [ annotation ] [ "?" ] ] */
static wb_status wb_schema_parse_type(wb_schema_parser *p, wb_schema_type *ty,
                                      const char *what)
{
    wb_schema_buf b = {0};
    wb_status st;
    size_t s, n;
    char q[300];
    if (!wb_schema_ident(p, &s, &n))
        return wb_schema_expected(p, "%s", what);
    ty->base = ty->first_set = -1;
    for (int i = 0; i < WB_SCHEMA_COUNT(wb_schema_base_names); i++)
        if (wb_schema_is_word(p->text + s, n, wb_schema_base_names[i]))
            ty->base = i;
    if (ty->base < 0)
        return wb_schema_fail_at(p, s, "expected a type; '%s' is not an "
                                 "ATen type",
                                 wb_schema_q(p->text + s, n, q, sizeof q));
    wb_schema_buf_str(&b, wb_schema_base_names[ty->base]);
    if ((wb_schema_peek(p) == '(' || wb_schema_peek(p) == '!') &&
        (st = wb_schema_parse_annotation(p, ty, &b)) != WB_OK)
        goto fail;
    if (wb_schema_accept(p, "?")) {
        ty->optional = true;
        wb_schema_buf_str(&b, "?");
    }
    if (wb_schema_list_follows(p)) {
        wb_schema_accept(p, "[");
        ty->list = true;
        wb_schema_buf_str(&b, "[");
        wb_schema_skip(p);
        if (wb_schema_is_digit(p->text[p->pos])) {
            size_t at = p->pos;
            long size = wb_schema_digits(p);
            if (size > WB_SCHEMA_MAX_LIST) {
                st = wb_schema_fail_at(p, at, "expected a list size of at "
                                       "most %d", WB_SCHEMA_MAX_LIST);
                goto fail;
            }
            /* ATen prints a size of 0 as no size at all. */
            if (size > 0) {
                snprintf(q, sizeof q, "%ld", size);
                wb_schema_buf_str(&b, q);
            }
            ty->len = size;
        }
        if (!wb_schema_accept(p, "]")) {
            st = wb_schema_expected(p, "']' to close the list type");
            goto fail;
        }
        wb_schema_buf_str(&b, "]");
        if ((wb_schema_peek(p) == '(' || wb_schema_peek(p) == '!') &&
            (st = wb_schema_parse_annotation(p, ty, &b)) != WB_OK)
            goto fail;
        if (wb_schema_accept(p, "?")) {
            ty->list_optional = true;
            wb_schema_buf_str(&b, "?");
        }
    }
    return wb_schema_buf_take(&b, &ty->text);
fail:
    free(b.p);
    return st;
}

/* Tensors that are always there, one or a list of them: what the
   wrapper handles as tensor outputs, an element each. */
static bool wb_schema_plain_tensor(const wb_schema_type *ty)
{
    return ty->base == WB_SCHEMA_TENSOR && !ty->optional &&
           !ty->list_optional;
}

/* ---- defaults ----------------------------------------------------------- */

/* number = [ "-" ] ( digits [ "." [ digits ] ] [ exponent ] [ "j" ]
                    | "inf" | "nan" ); a "j" makes it imaginary, as in
   the defaults of complex parameters. */
static wb_status wb_schema_parse_number(wb_schema_parser *p, wb_schema_buf *b)
{
    const char *t = p->text;
    size_t i = p->pos;
    if (t[i] == '-')
        i++;
    if ((strncmp(t + i, "inf", 3) == 0 || strncmp(t + i, "nan", 3) == 0) &&
        !wb_schema_is_ident_char(t[i + 3])) {
        i += 3;
    } else if (wb_schema_is_digit(t[i])) {
        while (wb_schema_is_digit(t[i]))
            i++;
        if (t[i] == '.')
            for (i++; wb_schema_is_digit(t[i]); i++)
                ;
        if (t[i] == 'e' || t[i] == 'E') {
            size_t j = i + 1;
            if (t[j] == '+' || t[j] == '-')
                j++;
            if (!wb_schema_is_digit(t[j]))
                return wb_schema_fail_at(p, j, "expected the digits of the "
                                         "exponent");
            while (wb_schema_is_digit(t[j]))
                j++;
            i = j;
        }
        if (t[i] == 'j' && !wb_schema_is_ident_char(t[i + 1]))
            i++;
    } else {
        return wb_schema_fail_at(p, i, "expected a number after '-'");
    }
    wb_schema_buf_add(b, t + p->pos, i - p->pos);
    wb_schema_advance(p, i - p->pos);
    return WB_OK;
}

/* string = "'" { char } "'" | '"' { char } '"', a backslash escaping the
   next character; a string ends on its line. */
static wb_status wb_schema_parse_string(wb_schema_parser *p, wb_schema_buf *b)
{
    const char *t = p->text;
    char quote = t[p->pos];
    size_t i = p->pos + 1;
    while (t[i] && t[i] != quote && t[i] != '\n') {
        if (t[i] == '\\' && t[i + 1] && t[i + 1] != '\n')
            i++;
        i++;
    }
    if (t[i] != quote)
        return wb_schema_fail_at(p, i, quote == '"'
                                           ? "expected '\"' to close the "
                                             "string"
                                           : "expected \"'\" to close the "
                                             "string");
    wb_schema_buf_add(b, t + p->pos, i + 1 - p->pos);
    wb_schema_advance(p, i + 1 - p->pos);
    return WB_OK;
}

/* default = number | string | "None" | "True" | "False" | ident
           | "[" [ default { "," default } ] "]" */
static wb_status wb_schema_parse_default(wb_schema_parser *p, wb_schema_buf *b,
                                         int depth)
{
    wb_status st;
    size_t s, n;
    char c = wb_schema_peek(p);
    if (c == '[') {
        if (depth >= WB_SCHEMA_MAX_DEPTH)
            return wb_schema_fail_at(p, p->pos, "expected a default value; "
                                     "lists nest at most %d deep",
                                     WB_SCHEMA_MAX_DEPTH);
        wb_schema_advance(p, 1);
        wb_schema_buf_str(b, "[");
        if (!wb_schema_accept(p, "]")) {
            for (;;) {
                if ((st = wb_schema_parse_default(p, b, depth + 1)) != WB_OK)
                    return st;
                if (wb_schema_accept(p, ",")) {
                    wb_schema_buf_str(b, ", ");
                    continue;
                }
                if (wb_schema_accept(p, "]"))
                    break;
                return wb_schema_expected(p, "',' or ']' in the list "
                                          "default");
            }
        }
        wb_schema_buf_str(b, "]");
        return WB_OK;
    }
    if (c == '"' || c == '\'')
        return wb_schema_parse_string(p, b);
    if (c == '-' || wb_schema_is_digit(c))
        return wb_schema_parse_number(p, b);
    if (wb_schema_ident(p, &s, &n)) {
        wb_schema_buf_add(b, p->text + s, n);
        return WB_OK;
    }
    return depth ? wb_schema_expected(p, "a default value in the list")
                 : wb_schema_expected(p, "a default value after '='");
}

/* ---- attributes --------------------------------------------------------- */

/* An indexed value is ident ":" int (cuda:1), the int in first. */
typedef enum { WB_SCHEMA_V_NONE, WB_SCHEMA_V_IDENT, WB_SCHEMA_V_INDEXED,
               WB_SCHEMA_V_INTS } wb_schema_vkind;

/* One attribute as written: ident [ "=" value ]. */
typedef struct wb_schema_attr {
    size_t pos, len;       /* the name */
    wb_schema_vkind vkind;
    size_t vpos, vlen;     /* the value; vlen for an identifier */
    int nints;
    long first, max;       /* the first and the largest number */
    uint64_t mask;         /* the numbers below 64, a bit each */
} wb_schema_attr;

/* value = ident [ ":" int ] | int { "|" int } */
static wb_status wb_schema_parse_attr(wb_schema_parser *p, wb_schema_attr *a,
                                      const char *what)
{
    char q[300];
    *a = (wb_schema_attr){0};
    if (!wb_schema_ident(p, &a->pos, &a->len))
        return wb_schema_expected(p, "%s", what);
    if (!wb_schema_accept(p, "="))
        return WB_OK;
    wb_schema_skip(p);
    a->vpos = p->pos;
    if (wb_schema_ident(p, &a->vpos, &a->vlen)) {
        a->vkind = WB_SCHEMA_V_IDENT;
        if (!wb_schema_accept(p, ":"))
            return WB_OK;
        wb_schema_skip(p);
        if (!wb_schema_is_digit(p->text[p->pos]))
            return wb_schema_expected(p, "a number after ':'");
        a->vkind = WB_SCHEMA_V_INDEXED;
        a->first = wb_schema_digits(p);
        return WB_OK;
    }
    if (!wb_schema_is_digit(p->text[p->pos]))
        return wb_schema_expected(p, "a value for attribute '%s' after '='",
                                  wb_schema_q(p->text + a->pos, a->len, q,
                                              sizeof q));
    a->vkind = WB_SCHEMA_V_INTS;
    for (bool more = true; more; more = wb_schema_accept(p, "|")) {
        wb_schema_skip(p);
        if (!wb_schema_is_digit(p->text[p->pos]))
            return wb_schema_expected(p, "a number after '|'");
        long v = wb_schema_digits(p);
        if (a->nints++ == 0)
            a->first = v;
        if (v > a->max)
            a->max = v;
        if (v < 64)
            a->mask |= (uint64_t)1 << v;
    }
    return WB_OK;
}

/* Finds an attribute's name in a table; -1 when it is not there. */
static int wb_schema_attr_index(const wb_schema_parser *p,
                                const wb_schema_attr *a,
                                const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (wb_schema_is_word(p->text + a->pos, a->len, names[i]))
            return i;
    return -1;
}

/* The checks every attribute kind shares: known, given once, a value when
   and only when one is taken.  takes_value is a bitmask over names. */
static wb_status wb_schema_attr_common(const wb_schema_parser *p,
                                       const wb_schema_attr *a,
                                       const char *who, const char *kind,
                                       const char *const *names, int n,
                                       unsigned takes_value, unsigned *seen,
                                       const char *expected, int *index)
{
    int i = wb_schema_attr_index(p, a, names, n);
    if (i >= 0 && !(*seen & (1u << i)) &&
        !(takes_value & (1u << i)) == (a->vkind == WB_SCHEMA_V_NONE)) {
        *seen |= 1u << i;
        *index = i;
        return WB_OK;
    }
    /* Only the messages below show the attribute. */
    char q[300];
    wb_schema_q(p->text + a->pos, a->len, q, sizeof q);
    if (i < 0)
        return wb_schema_fail_at(p, a->pos, "%s: unknown attribute '%s'; %s "
                                 "takes %s", who, q, kind, expected);
    if (*seen & (1u << i))
        return wb_schema_fail_at(p, a->pos, "%s: attribute '%s' is given "
                                 "twice", who, q);
    if (!(takes_value & (1u << i)) && a->vkind != WB_SCHEMA_V_NONE)
        return wb_schema_fail_at(p, a->vpos, "%s: attribute '%s' takes no "
                                 "value", who, q);
    return wb_schema_fail_at(p, a->pos, "%s: attribute '%s' needs a value, "
                             "as in %s=...", who, q, q);
}

static const char *const wb_schema_param_attrs[] = {
    "data", "metadata", "data_metadata", "storage", "resize", "in_graph",
    "hidden", "detach", "dtype", "ndim", "device", "duplicate", "aliases",
};
static const wb_mutation wb_schema_param_muts[] = {
    WB_MUT_DATA, WB_MUT_METADATA, WB_MUT_DATA_METADATA, WB_MUT_STORAGE,
    WB_MUT_RESIZE, WB_MUT_IN_GRAPH,
};
enum { WB_SCHEMA_PA_HIDDEN = 6, WB_SCHEMA_PA_DETACH, WB_SCHEMA_PA_DTYPE,
       WB_SCHEMA_PA_NDIM, WB_SCHEMA_PA_DEVICE, WB_SCHEMA_PA_DUPLICATE,
       WB_SCHEMA_PA_ALIASES };

/* DLPack 0.8 brought a code for bool; before it, bool travels as uint8, as
   PyTorch exported it then. */
#if defined(DLPACK_VERSION) && DLPACK_VERSION >= 80
#define WB_SCHEMA_DL_BOOL kDLBool
#else
#define WB_SCHEMA_DL_BOOL kDLUInt
#endif

static const struct {
    const char *name;
    DLDataType dtype;
} wb_schema_dtypes[] = {
    {"float16", {kDLFloat, 16, 1}},  {"bfloat16", {kDLBfloat, 16, 1}},
    {"float32", {kDLFloat, 32, 1}},  {"float64", {kDLFloat, 64, 1}},
    {"int8", {kDLInt, 8, 1}},        {"int16", {kDLInt, 16, 1}},
    {"int32", {kDLInt, 32, 1}},      {"int64", {kDLInt, 64, 1}},
    {"uint8", {kDLUInt, 8, 1}},      {"bool", {WB_SCHEMA_DL_BOOL, 8, 1}},
};

/* Attribute a of parameter i, who in messages. */
static wb_status wb_schema_param_attr(const wb_schema_parser *p, int i,
                                      const char *who,
                                      const wb_schema_attr *a)
{
    wb_schema_arg *arg = &p->sc->args[i];
    char other[340], q[300], ty[300];
    int k;
    wb_status st;
    st = wb_schema_attr_common(
        p, a, who, "a parameter", wb_schema_param_attrs,
        WB_SCHEMA_COUNT(wb_schema_param_attrs),
        (1u << WB_SCHEMA_PA_DTYPE) | (1u << WB_SCHEMA_PA_NDIM) |
            (1u << WB_SCHEMA_PA_DEVICE) | (1u << WB_SCHEMA_PA_DUPLICATE) |
            (1u << WB_SCHEMA_PA_ALIASES),
        &arg->seen,
        "data, metadata, data_metadata, storage, resize, in_graph, hidden, "
        "detach, dtype=NAME, ndim=N, device=DEVICE, duplicate=NAME or "
        "aliases=NAME", &k);
    if (st != WB_OK)
        return st;
    if (arg->type.base != WB_SCHEMA_TENSOR)
        return wb_schema_fail_at(
            p, a->pos, "%s: attribute '%s' applies to a Tensor parameter, "
            "not to '%s'", who, wb_schema_param_attrs[k],
            wb_spec_print_name(arg->type.text, ty, sizeof ty));
    /* On a list, an attribute is each element's; a duplicate, or a
       member of a synthetic base, is one tensor. */
    if (arg->type.list &&
        (k == WB_SCHEMA_PA_DUPLICATE || k == WB_SCHEMA_PA_ALIASES))
        return wb_schema_fail_at(
            p, a->pos, "%s: attribute '%s' applies to a single Tensor "
            "parameter, not to the list '%s'", who, wb_schema_param_attrs[k],
            wb_spec_print_name(arg->type.text, ty, sizeof ty));
    if (arg->type.optional || arg->type.list_optional)
        return wb_schema_fail_at(
            p, a->pos, "%s: attribute '%s' does not apply to an optional "
            "tensor ('%s'), which may be NULL", who, wb_schema_param_attrs[k],
            wb_spec_print_name(arg->type.text, ty, sizeof ty));
    if (k < WB_SCHEMA_COUNT(wb_schema_param_muts)) {
        if (!arg->type.write)
            return wb_schema_fail_at(p, a->pos, "%s: attribute '%s' needs a "
                                     "mutable annotation such as "
                                     "Tensor(a!)", who,
                                     wb_schema_param_attrs[k]);
        if (arg->mut_attr)
            return wb_schema_fail_at(p, a->pos, "%s: attribute '%s' "
                                     "conflicts with '%s'; a parameter has "
                                     "one mutation kind", who,
                                     wb_schema_param_attrs[k], arg->mut_attr);
        arg->mut_attr = wb_schema_param_attrs[k];
        arg->mutation = wb_schema_param_muts[k];
        arg->mut_pos = a->pos;
        return WB_OK;
    }
    switch (k) {
    case WB_SCHEMA_PA_HIDDEN:
        arg->flags |= WB_INPUT_HIDDEN;
        arg->hidden_pos = a->pos;
        return WB_OK;
    case WB_SCHEMA_PA_DETACH:
        arg->flags |= WB_INPUT_DETACH;
        arg->detach_pos = a->pos;
        return WB_OK;
    case WB_SCHEMA_PA_DUPLICATE:
    case WB_SCHEMA_PA_ALIASES:
        if (a->vkind == WB_SCHEMA_V_IDENT)
            for (int j = 0; j < i; j++)
                if (wb_schema_is_word(p->text + a->vpos, a->vlen,
                                      p->sc->args[j].name)) {
                    if (p->sc->args[j].type.list)
                        return wb_schema_fail_at(
                            p, a->vpos, "%s: %s names %s, a list; it takes "
                            "a single tensor", who, wb_schema_param_attrs[k],
                            wb_schema_who_arg(p->sc, j, other,
                                              sizeof other));
                    if (k == WB_SCHEMA_PA_DUPLICATE && arg->type.annotated)
                        return wb_schema_fail_at(
                            p, arg->type.annot_pos, "%s: a duplicate has no "
                            "alias set or mutation of its own; annotate %s",
                            who,
                            wb_schema_who_arg(p->sc, j, other,
                                              sizeof other));
                    if (k == WB_SCHEMA_PA_DUPLICATE)
                        arg->dup_of = j;
                    else
                        arg->alias_of = j, p->sc->args[j].aliased = true;
                    return WB_OK;
                }
        return wb_schema_fail_at(p, a->vpos, "%s: %s takes the name of an "
                                 "earlier parameter", who,
                                 wb_schema_param_attrs[k]);
    case WB_SCHEMA_PA_DTYPE:
        if (a->vkind == WB_SCHEMA_V_IDENT)
            for (int d = 0; d < WB_SCHEMA_COUNT(wb_schema_dtypes); d++)
                if (wb_schema_is_word(p->text + a->vpos, a->vlen,
                                      wb_schema_dtypes[d].name)) {
                    arg->dtype = wb_schema_dtypes[d].dtype;
                    return WB_OK;
                }
        if (a->vkind == WB_SCHEMA_V_INDEXED)
            return wb_schema_fail_at(p, a->vpos, "%s: dtype takes a name, "
                                     "not NAME:N", who);
        return wb_schema_fail_at(p, a->vpos, "%s: dtype '%s' is not one of "
                                 "float16, bfloat16, float32, float64, int8, "
                                 "int16, int32, int64, uint8, bool", who,
                                 a->vkind == WB_SCHEMA_V_IDENT
                                     ? wb_schema_q(p->text + a->vpos,
                                                   a->vlen, q, sizeof q)
                                     : "a number");
    case WB_SCHEMA_PA_DEVICE:
        if (a->vkind == WB_SCHEMA_V_IDENT &&
            wb_schema_is_word(p->text + a->vpos, a->vlen, "cpu")) {
            arg->device = (DLDevice){kDLCPU, 0};
            return WB_OK;
        }
        if ((a->vkind == WB_SCHEMA_V_IDENT ||
             a->vkind == WB_SCHEMA_V_INDEXED) &&
            a->first <= WB_MAX_DEVICE_ID &&
            wb_schema_is_word(p->text + a->vpos, a->vlen, "cuda")) {
            arg->device = (DLDevice){kDLCUDA, (int32_t)a->first};
            return WB_OK;
        }
        return wb_schema_fail_at(p, a->vpos, "%s: device is cpu, cuda or "
                                 "cuda:N with N at most %d", who,
                                 WB_MAX_DEVICE_ID);
    default: /* ndim */
        if (a->vkind != WB_SCHEMA_V_INTS || a->nints != 1 ||
            a->first > WB_MAX_DIMS)
            return wb_schema_fail_at(p, a->vpos, "%s: ndim takes one number "
                                     "0..%d", who, WB_MAX_DIMS);
        arg->ndim = (int)a->first;
        return WB_OK;
    }
}

static const char *const wb_schema_ret_attrs[] = {
    "requires_grad", "dynamic", "unsafe_view", "custom_function_view",
    "save_as_output", "base", "is_input",
};
enum { WB_SCHEMA_RA_RG, WB_SCHEMA_RA_DYN, WB_SCHEMA_RA_UNSAFE,
       WB_SCHEMA_RA_CUSTOM, WB_SCHEMA_RA_SAVE, WB_SCHEMA_RA_BASE,
       WB_SCHEMA_RA_IS_INPUT };

/* Attribute a of return k, who in messages. */
static wb_status wb_schema_ret_attr(const wb_schema_parser *p, int k,
                                    const char *who, const wb_schema_attr *a)
{
    wb_schema_ret *r = &p->sc->rets[k];
    char ty[300];
    int i;
    wb_status st;
    st = wb_schema_attr_common(
        p, a, who, "a return", wb_schema_ret_attrs,
        WB_SCHEMA_COUNT(wb_schema_ret_attrs), 1u << WB_SCHEMA_RA_DYN,
        &r->seen, "requires_grad, dynamic=D|D..., unsafe_view, "
        "custom_function_view, save_as_output, base or is_input", &i);
    if (st != WB_OK)
        return st;
    if (!wb_schema_plain_tensor(&r->type))
        return wb_schema_fail_at(
            p, a->pos, "%s: attribute '%s' applies to a Tensor return, not "
            "to '%s'", who, wb_schema_ret_attrs[i],
            wb_spec_print_name(r->type.text, ty, sizeof ty));
    /* On a list, an attribute is each element's; a set has one base. */
    if (r->type.list && i == WB_SCHEMA_RA_BASE)
        return wb_schema_fail_at(
            p, a->pos, "%s: attribute 'base' applies to a single Tensor "
            "return, not to the list '%s': an alias set has one base", who,
            wb_spec_print_name(r->type.text, ty, sizeof ty));
    switch (i) {
    case WB_SCHEMA_RA_RG:
        r->requires_grad = true;
        r->rg_pos = a->pos;
        return WB_OK;
    case WB_SCHEMA_RA_DYN:
        if (a->vkind != WB_SCHEMA_V_INTS || a->max >= WB_MAX_DIMS)
            return wb_schema_fail_at(p, a->vpos, "%s: dynamic takes dims "
                                     "0..%d separated by '|'", who,
                                     WB_MAX_DIMS - 1);
        r->dyn = a->mask;
        return WB_OK;
    case WB_SCHEMA_RA_UNSAFE:
    case WB_SCHEMA_RA_CUSTOM:
        if (r->variant != WB_OUT_NON_ALIAS)
            return wb_schema_fail_at(p, a->pos, "%s: attribute '%s' "
                                     "conflicts with '%s'", who,
                                     wb_schema_ret_attrs[i],
                                     wb_schema_ret_attrs[i ^ 1]);
        r->variant = i == WB_SCHEMA_RA_UNSAFE ? WB_OUT_UNSAFE_VIEW_ALIAS
                                              : WB_OUT_CUSTOM_FUNCTION_VIEW;
        r->variant_pos = a->pos;
        return WB_OK;
    case WB_SCHEMA_RA_SAVE:
        r->save_as_output = true;
        r->save_pos = a->pos;
        return WB_OK;
    case WB_SCHEMA_RA_IS_INPUT:
        r->is_input = true;
        r->is_input_pos = a->pos;
        return WB_OK;
    default: /* base */
        r->is_base = true;
        r->base_pos = a->pos;
        return WB_OK;
    }
}

static const char *const wb_schema_graph_attrs[] = {
    "training", "keep_input_mutations", "grad_at_end", "inplace_view",
    "effect_tokens", "functional_rng",
};
enum { WB_SCHEMA_GA_TRAINING, WB_SCHEMA_GA_KEEP, WB_SCHEMA_GA_GRAD,
       WB_SCHEMA_GA_INPLACE_VIEW, WB_SCHEMA_GA_TOKENS, WB_SCHEMA_GA_RNG };

static wb_status wb_schema_graph_attr(const wb_schema_parser *p,
                                      const wb_schema_attr *a)
{
    wb_schema *sc = p->sc;
    int i;
    wb_status st = wb_schema_attr_common(
        p, a, "graph", "the graph", wb_schema_graph_attrs,
        WB_SCHEMA_COUNT(wb_schema_graph_attrs),
        (1u << WB_SCHEMA_GA_GRAD) | (1u << WB_SCHEMA_GA_TOKENS),
        &sc->graph_seen, "training, keep_input_mutations, inplace_view, "
        "grad_at_end=on|off, effect_tokens=N or functional_rng", &i);
    if (st != WB_OK)
        return st;
    if (i == WB_SCHEMA_GA_TRAINING) {
        sc->training = true;
    } else if (i == WB_SCHEMA_GA_KEEP) {
        sc->keep_input_mutations = true;
    } else if (i == WB_SCHEMA_GA_INPLACE_VIEW) {
        sc->inplace_view = true;
    } else if (i == WB_SCHEMA_GA_RNG) {
        sc->rng = true;
    } else if (i == WB_SCHEMA_GA_TOKENS) {
        if (a->vkind != WB_SCHEMA_V_INTS || a->nints != 1 ||
            a->first > WB_MAX_TOKENS)
            return wb_schema_fail_at(p, a->vpos, "graph: effect_tokens takes "
                                     "one number 0..%d", WB_MAX_TOKENS);
        sc->ntokens = (int)a->first;
    } else {
        bool on = a->vkind == WB_SCHEMA_V_IDENT &&
                  wb_schema_is_word(p->text + a->vpos, a->vlen, "on");
        bool off = a->vkind == WB_SCHEMA_V_IDENT &&
                   wb_schema_is_word(p->text + a->vpos, a->vlen, "off");
        if (!on && !off)
            return wb_schema_fail_at(p, a->vpos, "graph: grad_at_end takes "
                                     "on or off");
        sc->grad_at_end = on ? 1 : 0;
    }
    return WB_OK;
}

/* attrs = "[" attr { "," attr } "]", each applied to parameter or return
   `index` (who in messages) as soon as it is read, so that errors come in
   text order. */
static wb_status wb_schema_parse_attrs(wb_schema_parser *p, bool param,
                                       int index, const char *who)
{
    wb_schema_attr a;
    wb_status st;
    char q[300];
    wb_schema_accept(p, "[");
    for (bool first = true;; first = false) {
        st = wb_schema_parse_attr(p, &a, first ? "an attribute name after "
                                                 "'['"
                                               : "an attribute name after "
                                                 "','");
        if (st == WB_OK)
            st = param ? wb_schema_param_attr(p, index, who, &a)
                       : wb_schema_ret_attr(p, index, who, &a);
        if (st != WB_OK)
            return st;
        if (wb_schema_accept(p, ","))
            continue;
        if (wb_schema_accept(p, "]"))
            return WB_OK;
        return wb_schema_expected(p, "',' or ']' after attribute '%s'",
                                  wb_schema_q(p->text + a.pos, a.len, q,
                                              sizeof q));
    }
}

/* ---- parameters and returns --------------------------------------------- */

/* An alias annotation belongs to a tensor; torchgen takes it only on
   Tensor. */
static wb_status wb_schema_check_annotated(const wb_schema_parser *p,
                                           const wb_schema_type *ty,
                                           const char *who)
{
    if (!ty->annotated || ty->base == WB_SCHEMA_TENSOR)
        return WB_OK;
    return wb_schema_fail_at(p, ty->annot_pos, "%s: only a Tensor has an "
                             "alias annotation, not '%s'", who,
                             wb_schema_base_names[ty->base]);
}

/* param = "*" | type ident [ "=" default ] [ attrs ] */
static wb_status wb_schema_parse_param(wb_schema_parser *p)
{
    wb_schema *sc = p->sc;
    wb_schema_buf b = {0};
    wb_status st;
    size_t s, n;
    char who[340], q[300];
    wb_schema_skip(p);
    if (p->text[p->pos] == '*') {
        if (p->kwonly)
            return wb_schema_fail_at(p, p->pos, "the keyword-only marker '*' "
                                     "appears twice");
        wb_schema_advance(p, 1);
        p->kwonly = true;
        return WB_OK;
    }
    if ((st = wb_schema_grow((void **)&sc->args, &sc->cap_args, sc->nargs,
                             sizeof *sc->args)) != WB_OK)
        return st;
    int i = sc->nargs++;
    wb_schema_arg *a = &sc->args[i];
    *a = (wb_schema_arg){.kwonly = p->kwonly, .ndim = -1, .dup_of = -1,
                         .alias_of = -1,
                         .mut_pos = WB_SCHEMA_NOPOS,
                         .hidden_pos = WB_SCHEMA_NOPOS,
                         .detach_pos = WB_SCHEMA_NOPOS};
    if ((st = wb_schema_parse_type(p, &a->type, "a parameter type or '*'")) !=
        WB_OK)
        return st;
    if (!wb_schema_ident(p, &s, &n))
        return wb_schema_expected(p, "a parameter name after the type '%s'",
                                  wb_schema_q(a->type.text,
                                              strlen(a->type.text), q,
                                              sizeof q));
    a->name_pos = s;
    if ((st = wb_schema_dup(p->text + s, n, &a->name)) != WB_OK)
        return st;
    wb_schema_who_arg(sc, i, who, sizeof who);
    if ((st = wb_schema_check_annotated(p, &a->type, who)) != WB_OK)
        return st;
    if (a->type.write)
        a->mutation = WB_MUT_DATA;
    if (wb_schema_accept(p, "=")) {
        /* Kept as wb_spec_print_name shows text, so that no raw byte of
           the input leaves the parser through a default. */
        char shown[300] = "";
        if ((st = wb_schema_parse_default(p, &b, 0)) == WB_OK)
            wb_schema_buf_add(&b, "", 0);
        if (st == WB_OK && !b.nomem)
            wb_spec_print_name(b.p, shown, sizeof shown);
        if (st == WB_OK && b.nomem)
            st = wb_rt_fail(WB_ERR_NOMEM, "out of memory parsing a schema");
        free(b.p);
        if (st != WB_OK ||
            (st = wb_schema_dup(shown, strlen(shown), &a->dflt)) != WB_OK)
            return st;
    }
    if (wb_schema_peek(p) == '[' &&
        (st = wb_schema_parse_attrs(p, true, i, who)) != WB_OK)
        return st;
    if ((a->flags & WB_INPUT_HIDDEN) && a->mutation != WB_MUT_IN_GRAPH &&
        a->mutation != WB_MUT_DATA)
        return wb_schema_fail_at(p, a->hidden_pos, "%s: attribute 'hidden' "
                                 "qualifies a data or in_graph mutation, "
                                 "which this parameter lacks", who);
    return WB_OK;
}

/* ret = type [ ident ] [ attrs ]; `with` never names a return, so that
   "-> Tensor with training" reads as the graph attributes it means. */
static wb_status wb_schema_parse_ret(wb_schema_parser *p, const char *what)
{
    wb_schema *sc = p->sc;
    wb_status st;
    size_t n;
    char who[340];
    if ((st = wb_schema_grow((void **)&sc->rets, &sc->cap_rets, sc->nrets,
                             sizeof *sc->rets)) != WB_OK)
        return st;
    int k = sc->nrets++;
    wb_schema_ret *r = &sc->rets[k];
    *r = (wb_schema_ret){.rg_pos = WB_SCHEMA_NOPOS,
                         .variant_pos = WB_SCHEMA_NOPOS,
                         .save_pos = WB_SCHEMA_NOPOS,
                         .base_pos = WB_SCHEMA_NOPOS,
                         .is_input_pos = WB_SCHEMA_NOPOS, .base = -1,
                         .spec_base = -1};
    if ((st = wb_schema_parse_type(p, &r->type, what)) != WB_OK)
        return st;
    wb_schema_skip(p);
    n = wb_schema_ident_len(p->text + p->pos);
    r->name_pos = p->pos;
    if (n && !wb_schema_is_word(p->text + p->pos, n, "with")) {
        st = wb_schema_dup(p->text + p->pos, n, &r->name);
        wb_schema_advance(p, n);
    } else {
        st = wb_schema_dup("", 0, &r->name);
    }
    if (st != WB_OK)
        return st;
    wb_schema_who_ret(sc, k, who, sizeof who);
    if ((st = wb_schema_check_annotated(p, &r->type, who)) != WB_OK)
        return st;
    if (wb_schema_peek(p) == '[')
        return wb_schema_parse_attrs(p, false, k, who);
    return WB_OK;
}

/* name = [ ident "::" ] ident [ "." ident ] */
static wb_status wb_schema_parse_name(wb_schema_parser *p)
{
    wb_schema *sc = p->sc;
    size_t s, n, os, on;
    wb_status st;
    if (!wb_schema_ident(p, &s, &n))
        return wb_schema_expected(p, "an operator name");
    if (wb_schema_accept(p, "::")) {
        if ((st = wb_schema_dup(p->text + s, n, &sc->ns)) != WB_OK)
            return st;
        if (!wb_schema_ident(p, &s, &n))
            return wb_schema_expected(p, "an operator name after '::'");
    } else if ((st = wb_schema_dup("", 0, &sc->ns)) != WB_OK) {
        return st;
    }
    if ((st = wb_schema_dup(p->text + s, n, &sc->base_name)) != WB_OK)
        return st;
    if (!wb_schema_accept(p, "."))
        return wb_schema_dup(p->text + s, n, &sc->name);
    if (!wb_schema_ident(p, &os, &on))
        return wb_schema_expected(p, "an overload name after '.'");
    /* ATen refuses these too: NAME.default is NAME without an overload
       (torch.ops names it so, as the CLI's --name and allowlists do), and a
       name starting with "__" would be a Python special attribute. */
    char q[300];
    if (wb_schema_is_word(p->text + os, on, "default"))
        return wb_schema_fail_at(p, os, "'default' is not a legal overload "
                                 "name: it names '%s' without an "
                                 "overload",
                                 wb_schema_q(p->text + s, n, q, sizeof q));
    if (p->text[os] == '_' && p->text[os + 1] == '_')
        return wb_schema_fail_at(p, os, "'%s' is not a legal overload name: "
                                 "one that starts with '__' would be a "
                                 "Python special attribute",
                                 wb_schema_q(p->text + os, on, q, sizeof q));
    wb_schema_buf b = {0};
    wb_schema_buf_add(&b, p->text + s, n);
    wb_schema_buf_str(&b, ".");
    wb_schema_buf_add(&b, p->text + os, on);
    return wb_schema_buf_take(&b, &sc->name);
}

/* spec = schema [ "with" graph-attr { "," graph-attr } ]
   schema = name "(" [ params ] ")" "->" returns */
static wb_status wb_schema_parse_spec(wb_schema_parser *p)
{
    wb_schema *sc = p->sc;
    wb_status st;
    char q[300], who[340];
    if ((st = wb_schema_parse_name(p)) != WB_OK)
        return st;
    if (!wb_schema_accept(p, "("))
        return wb_schema_expected(p, "'(' after the operator name '%s'",
                                  wb_schema_q(sc->base_name,
                                              strlen(sc->base_name), q,
                                              sizeof q));
    if (!wb_schema_accept(p, ")")) {
        for (;;) {
            int before = sc->nargs;
            if ((st = wb_schema_parse_param(p)) != WB_OK)
                return st;
            if (wb_schema_accept(p, ","))
                continue;
            if (wb_schema_accept(p, ")"))
                break;
            if (sc->nargs == before)
                return wb_schema_expected(p, "',' or ')' after '*'");
            return wb_schema_expected(p, "',' or ')' after %s",
                                      wb_schema_who_arg(sc, sc->nargs - 1,
                                                        who, sizeof who));
        }
    }
    if (!wb_schema_accept(p, "->"))
        return wb_schema_expected(p, "'->' after the parameters");
    /* returns = "()" | ret | "(" ret { "," ret } ")" */
    if (wb_schema_accept(p, "(")) {
        if (!wb_schema_accept(p, ")")) {
            for (;;) {
                if ((st = wb_schema_parse_ret(p, "a return type")) != WB_OK)
                    return st;
                if (wb_schema_accept(p, ","))
                    continue;
                if (wb_schema_accept(p, ")"))
                    break;
                return wb_schema_expected(p, "',' or ')' after %s",
                                          wb_schema_who_ret(sc, sc->nrets - 1,
                                                            who, sizeof who));
            }
        }
    } else if ((st = wb_schema_parse_ret(p, "a return type or '('")) !=
               WB_OK) {
        return st;
    }
    if (wb_schema_peek(p) == '\0')
        return WB_OK;
    size_t n = wb_schema_ident_len(p->text + p->pos);
    if (!wb_schema_is_word(p->text + p->pos, n, "with"))
        return wb_schema_fail_at(p, p->pos, "expected 'with' or the end of "
                                 "the spec");
    wb_schema_advance(p, n);
    for (bool first = true;; first = false) {
        wb_schema_attr a;
        st = wb_schema_parse_attr(p, &a, first ? "a graph attribute after "
                                                 "'with'"
                                               : "a graph attribute after "
                                                 "','");
        if (st != WB_OK || (st = wb_schema_graph_attr(p, &a)) != WB_OK)
            return st;
        if (wb_schema_accept(p, ","))
            continue;
        if (wb_schema_peek(p) == '\0')
            return WB_OK;
        return wb_schema_expected(p, "',' or the end of the spec after "
                                  "graph attribute '%s'",
                                  wb_schema_q(p->text + a.pos, a.len, q,
                                              sizeof q));
    }
}

/* ---- checks over the whole schema --------------------------------------- */

typedef struct wb_schema_named {
    const char *name;
    int index;
} wb_schema_named;

static int wb_schema_named_cmp(const void *x, const void *y)
{
    const wb_schema_named *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* The first item (in text order) whose name an earlier item has, in
   O(n log n) whatever the count; -1 when the names are distinct.  *earlier
   receives the first holder of the name. */
static int wb_schema_first_duplicate(const char *const *names, int n,
                                     int *earlier, wb_status *st)
{
    int found = -1;
    *st = WB_OK;
    if (n < 2)
        return -1;
    wb_schema_named *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        *st = wb_rt_fail(WB_ERR_NOMEM, "out of memory parsing a schema");
        return -1;
    }
    for (int i = 0; i < n; i++)
        v[i] = (wb_schema_named){names[i], i};
    qsort(v, (size_t)n, sizeof *v, wb_schema_named_cmp);
    for (int i = 1, head = 0; i < n; i++) {
        if (strcmp(v[i].name, v[head].name) != 0) {
            head = i;
            continue;
        }
        if (*v[i].name && (found < 0 || v[i].index < found)) {
            found = v[i].index;
            *earlier = v[head].index;
        }
    }
    free(v);
    return found;
}

static wb_status wb_schema_check_names(const wb_schema_parser *p)
{
    const wb_schema *sc = p->sc;
    int n = sc->nargs > sc->nrets ? sc->nargs : sc->nrets, j, earlier = -1;
    char who[340];
    wb_status st;
    const char **names = malloc(((size_t)n + 1) * sizeof *names);
    if (!names)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory parsing a schema");
    for (int i = 0; i < sc->nargs; i++)
        names[i] = sc->args[i].name;
    j = wb_schema_first_duplicate(names, sc->nargs, &earlier, &st);
    if (st == WB_OK && j >= 0)
        st = wb_schema_fail_at(p, sc->args[j].name_pos, "%s: parameter %d "
                               "has the same name",
                               wb_schema_who_arg(sc, j, who, sizeof who),
                               earlier);
    for (int k = 0; st == WB_OK && k < sc->nrets; k++)
        names[k] = sc->rets[k].name;
    if (st == WB_OK)
        j = wb_schema_first_duplicate(names, sc->nrets, &earlier, &st);
    if (st == WB_OK && j >= 0)
        st = wb_schema_fail_at(p, sc->rets[j].name_pos, "%s: return %d has "
                               "the same name",
                               wb_schema_who_ret(sc, j, who, sizeof who),
                               earlier);
    free(names);
    return st;
}

/* Which parameters have each set: several may share one. */
static void wb_schema_find_owners(wb_schema *sc)
{
    for (int i = 0; i < sc->nargs; i++) {
        const wb_schema_bits *b = &sc->args[i].type.sets;
        for (int s = wb_schema_bits_next(b, 0); s >= 0;
             s = wb_schema_bits_next(b, s + 1)) {
            if (sc->sets[s].owner < 0)
                sc->sets[s].owner = i;
            sc->sets[s].nowners++;
        }
    }
}

/* What ATen's ops that re-home or resize their '!' parameter do to it,
   rather than write its data: set_ puts it on the source's storage,
   resize_ and resize_as_ resize it, growing its storage (1.13 tags the
   resizes inplace_view, set_ nothing).  WB_MUT_NONE for any other op. */
static wb_mutation wb_schema_op_mutation(const wb_schema *sc)
{
    if (*sc->ns && strcmp(sc->ns, "aten"))
        return WB_MUT_NONE;
    if (!strcmp(sc->base_name, "set_"))
        return WB_MUT_STORAGE;
    if (!strcmp(sc->base_name, "resize_") ||
        !strcmp(sc->base_name, "resize_as_"))
        return WB_MUT_RESIZE;
    return WB_MUT_NONE;
}

/* Attributes whose meaning needs a graph attribute; set_ and the resizes
   make each '!' parameter that has no mutation attribute of its own what
   they do to it (wb_schema_op_mutation), and inplace_view, for any other
   op, a metadata mutation. */
static wb_status wb_schema_check_graph_needs(const wb_schema_parser *p)
{
    wb_schema *sc = p->sc;
    wb_mutation op = wb_schema_op_mutation(sc);
    char who[340];
    for (int i = 0; i < sc->nargs; i++) {
        wb_schema_arg *a = &sc->args[i];
        if (op && a->type.write && !a->mut_attr)
            a->mutation = op;
        else if (sc->inplace_view && a->type.write && !a->mut_attr)
            a->mutation = WB_MUT_METADATA;
        if (a->mutation == WB_MUT_IN_GRAPH && a->mut_attr &&
            !sc->keep_input_mutations)
            return wb_schema_fail_at(p, a->mut_pos, "%s: attribute "
                                     "'in_graph' needs the graph attribute "
                                     "keep_input_mutations",
                                     wb_schema_who_arg(sc, i, who,
                                                       sizeof who));
        if ((a->flags & WB_INPUT_DETACH) && !sc->training)
            return wb_schema_fail_at(p, a->detach_pos, "%s: attribute "
                                     "'detach' needs the graph attribute "
                                     "training",
                                     wb_schema_who_arg(sc, i, who,
                                                       sizeof who));
    }
    return WB_OK;
}

/* Numbers the spec inputs and outputs the items make: a tensor list of
   known length makes one per element, a list return of known length one
   per element, anything else one. */
static void wb_schema_count_items(wb_schema *sc)
{
    long long n = 0;
    for (int i = 0; i < sc->nargs; i++) {
        wb_schema_arg *a = &sc->args[i];
        a->input = n;
        a->count = a->type.base == WB_SCHEMA_TENSOR && a->type.len > 0
                       ? a->type.len
                       : 1;
        n += a->count;
    }
    sc->ninputs = n;
    n = 0;
    for (int k = 0; k < sc->nrets; k++) {
        wb_schema_ret *r = &sc->rets[k];
        r->output = n;
        r->count = r->type.len > 0 ? r->type.len : 1;
        n += r->count;
    }
    sc->noutputs = n;
}

/* Classifies each return by what its alias sets name: one parameter, an
   intermediate (sets no parameter has), nothing, or an input it cannot
   tell (the wildcard, or a set several parameters share). */
static void wb_schema_classify(wb_schema *sc)
{
    for (int k = 0; k < sc->nrets; k++) {
        wb_schema_ret *r = &sc->rets[k];
        const wb_schema_type *ty = &r->type;
        r->shared = -1;
        if (!ty->annotated) {
            r->cls = WB_SCHEMA_CLS_NONE;
            continue;
        }
        const wb_schema_bits *b = &ty->sets;
        for (int s = wb_schema_bits_next(b, 0); s >= 0 && r->shared < 0;
             s = wb_schema_bits_next(b, s + 1))
            if (sc->sets[s].nowners > 1)
                r->shared = s;
        if (ty->wildcard || r->shared >= 0 || ty->first_set < 0) {
            r->cls = WB_SCHEMA_CLS_AMBIG;
            r->key = -1;
            continue;
        }
        int first = ty->first_set, o = sc->sets[first].owner;
        r->cls = o >= 0 ? WB_SCHEMA_CLS_PARAM : WB_SCHEMA_CLS_INTER;
        r->key = o >= 0 ? o : first;
        /* A list of a list parameter's set, as long as it, pairs them
           up: the only way such a return has one base per element. */
        r->elementwise = o >= 0 && sc->args[o].type.list && ty->list &&
                         ty->len > 0 && ty->len == sc->args[o].type.len;
        for (int s = wb_schema_bits_next(b, 0); s >= 0;
             s = wb_schema_bits_next(b, s + 1))
            if (o >= 0 ? sc->sets[s].owner != o : s != first)
                r->multi = true;
    }
}

/* Resolves every return to its alias, base and output kind; numbers the
   intermediate bases in order of first appearance, leaving out the sets
   that have a [base] return. */
static wb_status wb_schema_resolve_returns(const wb_schema_parser *p)
{
    wb_schema *sc = p->sc;
    int base_ret[WB_SCHEMA_MAX_SETS], base_index[WB_SCHEMA_MAX_SETS];
    char who[340], other[340], arg[340], set[340];
    for (int c = 0; c < WB_SCHEMA_MAX_SETS; c++)
        base_ret[c] = base_index[c] = -1;
    for (int k = 0; k < sc->nrets; k++) {
        const wb_schema_ret *r = &sc->rets[k];
        wb_schema_who_ret(sc, k, who, sizeof who);
        if (r->is_base && r->cls != WB_SCHEMA_CLS_INTER)
            return wb_schema_fail_at(p, r->base_pos, "%s: attribute 'base' "
                                     "applies to a return whose alias set no "
                                     "parameter has", who);
        if (r->save_as_output && r->cls != WB_SCHEMA_CLS_INTER)
            return wb_schema_fail_at(p, r->save_pos, "%s: attribute "
                                     "'save_as_output' applies to a return "
                                     "whose alias set no parameter has", who);
        if (r->is_input && r->cls != WB_SCHEMA_CLS_PARAM &&
            r->cls != WB_SCHEMA_CLS_AMBIG)
            return wb_schema_fail_at(p, r->is_input_pos, "%s: attribute "
                                     "'is_input' applies to a return whose "
                                     "alias set a parameter has", who);
        if (!r->is_base)
            continue;
        if (base_ret[r->key] >= 0)
            return wb_schema_fail_at(
                p, r->base_pos, "%s: %s already has its base, %s", who,
                wb_schema_set_desc(sc, r->key, set, sizeof set),
                wb_schema_who_ret(sc, base_ret[r->key], other, sizeof other));
        base_ret[r->key] = k;
    }
    sc->nbases = 0;
    for (int k = 0; k < sc->nrets; k++) {
        wb_schema_ret *r = &sc->rets[k];
        wb_schema_who_ret(sc, k, who, sizeof who);
        r->alias = WB_SCHEMA_NONE;
        r->base = r->spec_base = -1;
        r->kind = r->variant;
        /* A return written `!`, or said to be the parameter itself, is
           the parameter, whether the op mutates it or not (an op that
           returns its input as it is, as contiguous() may). */
        bool itself = r->type.write || r->is_input;
        if (r->cls == WB_SCHEMA_CLS_PARAM) {
            r->alias = itself ? WB_SCHEMA_IS_INPUT : WB_SCHEMA_ALIAS_OF_INPUT;
            r->kind = itself ? WB_OUT_IS_INPUT : WB_OUT_ALIAS_OF_INPUT;
            r->base = r->spec_base = r->key;
            /* A member returned itself is a view of its synthetic base,
               whose requires-grad the spec may set. */
            if (r->kind == WB_OUT_IS_INPUT && r->requires_grad &&
                !wb_schema_arg_member(sc, r->key))
                return wb_schema_fail_at(
                    p, r->rg_pos, "%s: attribute 'requires_grad' does not "
                    "apply: the return is %s itself, the caller's own "
                    "tensor", who,
                    wb_schema_who_arg(sc, r->key, arg, sizeof arg));
        } else if (r->cls == WB_SCHEMA_CLS_INTER && base_ret[r->key] == k) {
            if (r->save_as_output)
                return wb_schema_fail_at(p, r->save_pos, "%s: attribute "
                                         "'save_as_output' does not apply to "
                                         "the base of %s", who,
                                         wb_schema_set_desc(sc, r->key, set,
                                                            sizeof set));
            continue;  /* the base itself: a plain output */
        } else if (r->cls == WB_SCHEMA_CLS_INTER && base_ret[r->key] >= 0) {
            if (r->save_as_output)
                return wb_schema_fail_at(
                    p, r->save_pos, "%s: attribute 'save_as_output' does not "
                    "apply: %s has a base return, %s", who,
                    wb_schema_set_desc(sc, r->key, set, sizeof set),
                    wb_schema_who_ret(sc, base_ret[r->key], other,
                                      sizeof other));
            r->alias = WB_SCHEMA_ALIAS_OF_INTERMEDIATE;
            r->kind = WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT;
            r->spec_base = base_ret[r->key];
        } else if (r->cls == WB_SCHEMA_CLS_INTER) {
            if (base_index[r->key] < 0)
                base_index[r->key] = sc->nbases++;
            r->alias = WB_SCHEMA_ALIAS_OF_INTERMEDIATE;
            r->kind = r->save_as_output
                          ? WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT
                          : WB_OUT_ALIAS_OF_INTERMEDIATE;
            r->base = r->spec_base = base_index[r->key];
        } else if (r->cls == WB_SCHEMA_CLS_AMBIG) {
            /* An input, but which one cannot be told: no base. */
            r->alias = itself ? WB_SCHEMA_IS_INPUT : WB_SCHEMA_ALIAS_OF_INPUT;
            r->kind = itself ? WB_OUT_IS_INPUT : WB_OUT_ALIAS_OF_INPUT;
        } else {
            continue;  /* no annotation: the variant as given */
        }
        if (r->variant != WB_OUT_NON_ALIAS)
            return wb_schema_fail_at(p, r->variant_pos, "%s: attribute '%s' "
                                     "applies to a return that aliases "
                                     "nothing", who,
                                     r->variant == WB_OUT_UNSAFE_VIEW_ALIAS
                                         ? "unsafe_view"
                                         : "custom_function_view");
    }
    return WB_OK;
}

/* ---- list elements ------------------------------------------------------ */

/* The name of element j of a list item ("xs[1]"), in buf of n bytes. */
static const char *wb_schema_elem_name(const char *name, long j, char *buf,
                                       size_t n)
{
    snprintf(buf, n, "%s[%ld]", name, j);
    return buf;
}

/* The longest name an item's elements have: the item's own unless it is
   a list of known length, whose last element has the longest. */
static size_t wb_schema_elem_name_len(const char *name,
                                      const wb_schema_type *ty)
{
    size_t n = strlen(name);
    if (!ty->list || ty->len <= 0)
        return n;
    n += 3;  /* "[" and "]", and the first digit */
    for (long j = ty->len - 1; j >= 10; j /= 10)
        n++;
    return n;
}

/* ---- returns that are numbers ------------------------------------------ */

/* The number a base type is passed as: int and SymInt as int64_t, float
   as double, bool as bool; 0 for every other. */
static wb_scalar_type wb_schema_number(int base)
{
    switch (base) {
    case WB_SCHEMA_INT:
    case WB_SCHEMA_SYMINT:
        return WB_SCALAR_INT;
    case WB_SCHEMA_FLOAT:
        return WB_SCALAR_FLOAT;
    case WB_SCHEMA_BOOL:
        return WB_SCALAR_BOOL;
    default:
        return (wb_scalar_type)0;
    }
}

/* What a non-tensor return is, an element of it for a list: a number
   the wrapper passes through (int and SymInt, float, bool and SymBool),
   None, or 0 for anything else (complex, Scalar, str, ...), which it
   cannot pass. */
static wb_scalar_type wb_schema_ret_scalar(const wb_schema_type *ty)
{
    const char *name = wb_schema_base_names[ty->base];
    wb_scalar_type t = wb_schema_number(ty->base);
    if (ty->optional)
        return (wb_scalar_type)0;
    if (t)
        return t;
    if (strcmp(name, "SymBool") == 0)
        return WB_SCALAR_BOOL;
    if (strcmp(name, "None") == 0 || strcmp(name, "NoneType") == 0)
        return WB_SCALAR_NONE;
    return (wb_scalar_type)0;
}

/* ---- what cannot be wrapped --------------------------------------------- */

static wb_status wb_schema_set_reason(wb_schema *sc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static wb_status wb_schema_set_reason(wb_schema *sc, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wb_schema_dup(msg, strlen(msg), &sc->unwrappable);
}

/* Sets why item `who` (named name, "" for none, of type ty, spelled t)
   cannot make a spec item per element, if it cannot: its elements' names
   are too long, or it is a list (`list` says what kind) of no fixed
   length.  As wb_schema_set_reason, fails only for memory. */
static wb_status wb_schema_list_reason(wb_schema *sc, const char *who,
                                       const char *name,
                                       const wb_schema_type *ty,
                                       const char *t, const char *list)
{
    if (*name && wb_schema_elem_name_len(name, ty) > WB_MAX_NAME)
        return wb_schema_set_reason(sc, "%s: the names of its elements, up "
                                    "to %zu bytes, are longer than "
                                    "WB_MAX_NAME (%d)", who,
                                    wb_schema_elem_name_len(name, ty),
                                    WB_MAX_NAME);
    if (ty->list && ty->list_optional)
        return wb_schema_set_reason(sc, "%s: an optional list ('%s') may be "
                                    "None, so it has no fixed length", who,
                                    t);
    if (ty->list && !ty->len)
        return wb_schema_set_reason(sc, "%s: %s ('%s') has no fixed length; "
                                    "give it one, as in Tensor[2]", who,
                                    list, t);
    return WB_OK;
}

static wb_status wb_schema_arg_reason(wb_schema *sc, int i)
{
    const wb_schema_arg *a = &sc->args[i];
    char who[340], ty[300];
    wb_schema_who_arg(sc, i, who, sizeof who);
    wb_spec_print_name(a->type.text, ty, sizeof ty);
    if (strlen(a->name) > WB_MAX_NAME)
        return wb_schema_set_reason(sc, "parameter %d: its name of %zu bytes "
                                    "is longer than WB_MAX_NAME (%d)", i,
                                    strlen(a->name), WB_MAX_NAME);
    /* A list of scalars is one opaque argument; a list of tensors is a
       tensor argument per element. */
    wb_status st;
    if (a->type.base == WB_SCHEMA_TENSOR &&
        ((st = wb_schema_list_reason(sc, who, a->name, &a->type, ty,
                                     "a tensor list")) != WB_OK ||
         sc->unwrappable))
        return st;
    if (a->type.base == WB_SCHEMA_TENSOR && a->type.optional &&
        a->type.write)
        return wb_schema_set_reason(sc, "%s: an optional tensor ('%s') may "
                                    "be NULL, so it cannot be mutated", who,
                                    ty);
    return WB_OK;
}

/* The parameters that share set s, as "parameters 0 'x' and 2 'y'" (the
   first four, then how many more). */
static const char *wb_schema_owners(const wb_schema *sc, int s, char *buf,
                                    size_t n)
{
    int shown = 0, total = sc->sets[s].nowners;
    size_t o = (size_t)snprintf(buf, n, "parameters");
    for (int i = sc->sets[s].owner; i < sc->nargs && shown < 4 && o < n;
         i++) {
        char nm[300];
        if (!wb_schema_bits_has(&sc->args[i].type.sets, s))
            continue;
        wb_spec_print_name(sc->args[i].name, nm, sizeof nm);
        shown++;
        o += (size_t)snprintf(buf + o, n - o, "%s %d '%s'",
                              shown == 1       ? ""
                              : shown == total ? " and"
                                               : ",",
                              i, nm);
    }
    if (shown < total && o < n)
        snprintf(buf + o, n - o, " and %d more", total - shown);
    return buf;
}

static wb_status wb_schema_ret_reason(wb_schema *sc, int k)
{
    const wb_schema_ret *r = &sc->rets[k];
    const wb_schema_type *ty = &r->type;
    char who[340], t[300], arg[340], set[340], owners[1400];
    wb_schema_who_ret(sc, k, who, sizeof who);
    wb_spec_print_name(ty->text, t, sizeof t);
    if (strlen(r->name) > WB_MAX_NAME)
        return wb_schema_set_reason(sc, "return %d: its name of %zu bytes is "
                                    "longer than WB_MAX_NAME (%d)", k,
                                    strlen(r->name), WB_MAX_NAME);
    wb_status st = wb_schema_list_reason(sc, who, r->name, ty, t, "a list");
    if (st != WB_OK || sc->unwrappable)
        return st;
    if (ty->base != WB_SCHEMA_TENSOR && ty->optional)
        return wb_schema_set_reason(sc, "%s: an optional number ('%s') may "
                                    "be None or not", who, t);
    if (ty->base != WB_SCHEMA_TENSOR && !wb_schema_ret_scalar(ty))
        return wb_schema_set_reason(sc, "%s: '%s' is neither a tensor nor a "
                                    "number the wrapper passes (int, "
                                    "SymInt, float, bool, SymBool, None)",
                                    who, t);
    if (ty->optional)
        return wb_schema_set_reason(sc, "%s: an optional tensor ('%s') may "
                                    "be None", who, t);
    if (ty->after)
        return wb_schema_set_reason(sc, "%s: the '->' of '%s' leaves open "
                                    "what it aliases after the call", who,
                                    t);
    if (ty->wildcard)
        return wb_schema_set_reason(sc, "%s: '%s' is in the wildcard set "
                                    "'*', so it may alias any tensor; an "
                                    "output needs one known base", who, t);
    if (r->shared >= 0)
        return wb_schema_set_reason(
            sc, "%s: '%s' names %s, which %s share, so its base is "
            "ambiguous; an output has one", who, t,
            wb_schema_set_desc(sc, r->shared, set, sizeof set),
            wb_schema_owners(sc, r->shared, owners, sizeof owners));
    if (r->multi)
        return wb_schema_set_reason(sc, "%s: '%s' names the alias sets of "
                                    "more than one base; an output has one",
                                    who, t);
    if (r->cls == WB_SCHEMA_CLS_PARAM) {
        const wb_schema_arg *a = &sc->args[r->key];
        wb_schema_who_arg(sc, r->key, arg, sizeof arg);
        if (ty->write && !a->type.write)
            return wb_schema_set_reason(sc, "%s: writes %s, which %s only "
                                        "reads", who,
                                        wb_schema_set_desc(sc, ty->first_set,
                                                           set, sizeof set),
                                        arg);
        if (a->type.optional)
            return wb_schema_set_reason(sc, "%s: aliases %s, an optional "
                                        "tensor that may be NULL", who, arg);
        if (a->type.list && a->type.len != 1 && !r->elementwise)
            return wb_schema_set_reason(
                sc, "%s: '%s' names %s of %s, a list whose elements share "
                "it, so its base is ambiguous; an output has one (a list "
                "return as long as the parameter pairs them up)", who, t,
                wb_schema_set_desc(sc, ty->first_set, set, sizeof set), arg);
    }
    if (r->cls == WB_SCHEMA_CLS_INTER && ty->write)
        return wb_schema_set_reason(sc, "%s: writes %s, which no parameter "
                                    "has", who,
                                    wb_schema_set_desc(sc, ty->first_set, set,
                                                       sizeof set));
    return WB_OK;
}

/* Records the first reason the schema cannot be wrapped, in text order. */
static wb_status wb_schema_find_reason(wb_schema *sc)
{
    wb_status st = WB_OK;
    if (strlen(sc->name) > WB_MAX_NAME)
        return wb_schema_set_reason(sc, "its name of %zu bytes is longer "
                                    "than WB_MAX_NAME (%d)", strlen(sc->name),
                                    WB_MAX_NAME);
    if (sc->nargs > WB_MAX_INPUTS)
        return wb_schema_set_reason(sc, "%d parameters, more than "
                                    "WB_MAX_INPUTS (%d)", sc->nargs,
                                    WB_MAX_INPUTS);
    if (sc->nrets > WB_MAX_OUTPUTS)
        return wb_schema_set_reason(sc, "%d returns, more than "
                                    "WB_MAX_OUTPUTS (%d)", sc->nrets,
                                    WB_MAX_OUTPUTS);
    if (sc->ninputs > WB_MAX_INPUTS)
        return wb_schema_set_reason(sc, "the parameters' lists make %lld "
                                    "inputs, more than WB_MAX_INPUTS (%d)",
                                    sc->ninputs, WB_MAX_INPUTS);
    if (sc->noutputs > WB_MAX_OUTPUTS)
        return wb_schema_set_reason(sc, "the returns' lists make %lld "
                                    "outputs, more than WB_MAX_OUTPUTS (%d)",
                                    sc->noutputs, WB_MAX_OUTPUTS);
    for (int i = 0; i < sc->nargs && st == WB_OK && !sc->unwrappable; i++)
        st = wb_schema_arg_reason(sc, i);
    for (int k = 0; k < sc->nrets && st == WB_OK && !sc->unwrappable; k++)
        st = wb_schema_ret_reason(sc, k);
    return st;
}

/* ---- the interface ------------------------------------------------------ */

void wb_schema_free(wb_schema *sc)
{
    if (!sc)
        return;
    for (int i = 0; i < sc->nargs; i++) {
        free(sc->args[i].name);
        free(sc->args[i].dflt);
        free(sc->args[i].type.text);
    }
    for (int k = 0; k < sc->nrets; k++) {
        free(sc->rets[k].name);
        free(sc->rets[k].type.text);
    }
    for (int s = 0; s < sc->nsets; s++)
        free(sc->sets[s].name);
    free(sc->sets);
    free(sc->args);
    free(sc->rets);
    free(sc->ns);
    free(sc->name);
    free(sc->base_name);
    free(sc->unwrappable);
    free(sc);
}

wb_status wb_schema_parse(const char *text, const char *file, int line,
                          wb_schema **out)
{
    wb_status st;
    if (!text || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_schema_parse: NULL text or "
                          "out");
    wb_schema *sc = calloc(1, sizeof *sc);
    if (!sc)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory parsing a schema");
    sc->grad_at_end = -1;
    wb_schema_parser p = {.text = text, .file = file, .line = line, .sc = sc};
    if ((st = wb_schema_parse_spec(&p)) == WB_OK &&
        (st = wb_schema_check_names(&p)) == WB_OK &&
        (st = wb_schema_check_graph_needs(&p)) == WB_OK) {
        wb_schema_find_owners(sc);
        wb_schema_count_items(sc);
        wb_schema_classify(sc);
        if ((st = wb_schema_resolve_returns(&p)) == WB_OK)
            st = wb_schema_find_reason(sc);
    }
    if (st != WB_OK) {
        wb_schema_free(sc);
        return st;
    }
    *out = sc;
    return WB_OK;
}

const char *wb_schema_name(const wb_schema *sc)
{
    return sc ? sc->name : NULL;
}

const char *wb_schema_base_name(const wb_schema *sc)
{
    return sc ? sc->base_name : NULL;
}

const char *wb_schema_namespace(const wb_schema *sc)
{
    return sc ? sc->ns : NULL;
}

int wb_schema_num_args(const wb_schema *sc)
{
    return sc ? sc->nargs : -1;
}

static const wb_schema_arg *wb_schema_get_arg(const wb_schema *sc, int i)
{
    return sc && i >= 0 && i < sc->nargs ? &sc->args[i] : NULL;
}

static const wb_schema_ret *wb_schema_get_ret(const wb_schema *sc, int k)
{
    return sc && k >= 0 && k < sc->nrets ? &sc->rets[k] : NULL;
}

const char *wb_schema_arg_name(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->name : NULL;
}

const char *wb_schema_arg_type(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->type.text : NULL;
}

const char *wb_schema_arg_default(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->dflt : NULL;
}

bool wb_schema_arg_kwonly(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->kwonly : false;
}

wb_mutation wb_schema_arg_mutation(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a && a->type.write ? a->mutation : WB_MUT_NONE;
}

unsigned wb_schema_arg_flags(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->flags : 0;
}

const char *wb_schema_arg_dtype(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    for (int d = 0; a && a->dtype.bits &&
                    d < WB_SCHEMA_COUNT(wb_schema_dtypes); d++)
        if (wb_rt_dtype_eq(a->dtype, wb_schema_dtypes[d].dtype))
            return wb_schema_dtypes[d].name;
    return NULL;
}

int wb_schema_arg_ndim(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->ndim : -1;
}

const char *wb_schema_arg_device(const wb_schema *sc, int i, char *buf,
                                 size_t n)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    if (!a || !a->device.device_type)
        return NULL;
    return wb_rt_device_str(a->device, buf, n);
}

int wb_schema_arg_dup_of(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->dup_of : -1;
}

int wb_schema_arg_alias_of(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a ? a->alias_of : -1;
}

bool wb_schema_arg_member(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a && (a->alias_of >= 0 || a->aliased);
}

long wb_schema_arg_inputs(const wb_schema *sc, int i, long long *first)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    if (first)
        *first = a ? a->input : -1;
    return a ? a->count : 0;
}

long wb_schema_return_outputs(const wb_schema *sc, int k, long long *first)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    if (first)
        *first = r ? r->output : -1;
    return r ? r->count : 0;
}

bool wb_schema_arg_listed(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    return a && a->type.base == WB_SCHEMA_TENSOR && a->type.list &&
           a->type.len > 0 && !a->type.list_optional;
}

bool wb_schema_return_listed(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r && r->type.list && r->type.len > 0 && !r->type.list_optional;
}

const char *wb_schema_return_number(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    if (!r || r->type.base == WB_SCHEMA_TENSOR)
        return NULL;
    /* 0, hence NULL, for a return that is no number the wrapper passes. */
    return wb_scalar_c_type(wb_schema_ret_scalar(&r->type));
}

bool wb_schema_return_elementwise(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r && r->elementwise;
}

int wb_schema_num_tokens(const wb_schema *sc)
{
    return sc ? sc->ntokens : 0;
}

bool wb_schema_rng(const wb_schema *sc)
{
    return sc && sc->rng;
}

wb_direction wb_schema_arg_dir(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    if (!a)
        return (wb_direction)0;
    if (a->type.base != WB_SCHEMA_TENSOR)
        return WB_DIR_SCALAR;
    if (!a->type.write)
        return WB_DIR_IN;
    return a->kwonly ? WB_DIR_OUT : WB_DIR_INOUT;
}

/* The scalar type a non-tensor parameter is passed as. */
static wb_scalar_type wb_schema_scalar(const wb_schema_type *ty)
{
    wb_scalar_type t = wb_schema_number(ty->base);
    return ty->optional || ty->list || !t ? WB_SCALAR_OPAQUE : t;
}

const char *wb_schema_arg_ctype(const wb_schema *sc, int i)
{
    const wb_schema_arg *a = wb_schema_get_arg(sc, i);
    if (!a)
        return NULL;
    if (a->type.base == WB_SCHEMA_TENSOR && a->type.list)
        return a->type.len > 0 && !a->type.list_optional ? "wb_tensor *[]"
                                                          : "wb_tensor **";
    if (a->type.base == WB_SCHEMA_TENSOR)
        return "wb_tensor *";
    return wb_scalar_c_type(wb_schema_scalar(&a->type));
}

int wb_schema_num_returns(const wb_schema *sc)
{
    return sc ? sc->nrets : -1;
}

const char *wb_schema_return_name(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r ? r->name : NULL;
}

const char *wb_schema_return_type(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r ? r->type.text : NULL;
}

wb_schema_alias wb_schema_return_alias(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r ? r->alias : WB_SCHEMA_NONE;
}

int wb_schema_return_base(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r ? r->base : -1;
}

wb_alias wb_schema_return_kind(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r ? r->kind : WB_OUT_NON_ALIAS;
}

int wb_schema_return_spec_base(const wb_schema *sc, int k)
{
    const wb_schema_ret *r = wb_schema_get_ret(sc, k);
    return r ? r->spec_base : -1;
}

int wb_schema_num_bases(const wb_schema *sc)
{
    return sc ? sc->nbases : -1;
}

const char *wb_schema_alias_name(wb_schema_alias a)
{
    switch (a) {
    case WB_SCHEMA_NONE: return "none";
    case WB_SCHEMA_IS_INPUT: return "is_input";
    case WB_SCHEMA_ALIAS_OF_INPUT: return "alias_of_input";
    case WB_SCHEMA_ALIAS_OF_INTERMEDIATE: return "alias_of_intermediate";
    }
    return "?";
}

const char *wb_schema_unwrappable(const wb_schema *sc)
{
    return sc ? sc->unwrappable : NULL;
}

wb_status wb_schema_to_spec(const wb_schema *sc, wb_spec **out)
{
    wb_spec *s;
    wb_status st;
    char nm[300];
    if (!sc || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_schema_to_spec: NULL schema "
                          "or out");
    if (sc->unwrappable) {
        wb_spec_print_name(sc->name, nm, sizeof nm);
        return wb_rt_fail(WB_ERR_SPEC, "spec '%s' cannot be wrapped: %s", nm,
                          sc->unwrappable);
    }
    if ((st = wb_spec_new(sc->name, &s)) != WB_OK)
        return st;
    /* A list of known length is an input or output per element, each
       with the list's attributes. */
    for (int i = 0; i < sc->nargs && st == WB_OK; i++) {
        const wb_schema_arg *a = &sc->args[i];
        if (a->type.base != WB_SCHEMA_TENSOR) {
            st = wb_spec_add_scalar(s, a->name, wb_schema_scalar(&a->type),
                                    NULL);
            continue;
        }
        unsigned flags = a->flags;
        if (a->type.optional)
            flags |= WB_INPUT_OPTIONAL;
        if (a->kwonly && a->type.write)
            flags |= WB_INPUT_OUT;
        for (long j = 0; j < a->count && st == WB_OK; j++) {
            int in = (int)(a->input + j);
            st = wb_spec_add_tensor(
                s, a->type.list ? wb_schema_elem_name(a->name, j, nm,
                                                      sizeof nm)
                                : a->name,
                a->mutation, flags, NULL);
            if (st == WB_OK && a->dup_of >= 0)
                st = wb_spec_set_duplicate(s, in,
                                           (int)sc->args[a->dup_of].input);
            if (st == WB_OK && a->alias_of >= 0)
                st = wb_spec_set_synthetic_base(
                    s, in, (int)sc->args[a->alias_of].input);
            if (st == WB_OK && (a->dtype.bits != 0 || a->ndim >= 0))
                st = wb_spec_declare_input(s, in, a->dtype, a->ndim);
            if (st == WB_OK && a->device.device_type)
                st = wb_spec_declare_device(s, in, a->device);
        }
    }
    for (int k = 0; k < sc->nrets && st == WB_OK; k++) {
        const wb_schema_ret *r = &sc->rets[k];
        for (long j = 0; j < r->count && st == WB_OK; j++) {
            const char *name = r->type.list && *r->name
                                   ? wb_schema_elem_name(r->name, j, nm,
                                                         sizeof nm)
                                   : r->name;
            if (r->type.base != WB_SCHEMA_TENSOR) {
                st = wb_spec_add_scalar_output(
                    s, name, wb_schema_ret_scalar(&r->type), NULL);
                continue;
            }
            /* The schema's bases are parameters and returns; the spec's
               are inputs and outputs. */
            int base = r->spec_base;
            if (r->cls == WB_SCHEMA_CLS_PARAM)
                base = (int)(sc->args[base].input + (r->elementwise ? j : 0));
            else if (r->kind ==
                     WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT)
                base = (int)sc->rets[base].output;
            st = wb_spec_add_output(s, name, r->kind, base, r->requires_grad,
                                    r->dyn, NULL);
        }
    }
    if (st == WB_OK)
        st = wb_spec_set_intermediate_bases(s, sc->nbases);
    if (st == WB_OK)
        st = wb_spec_set_training(s, sc->training);
    if (st == WB_OK)
        st = wb_spec_set_keep_input_mutations(s, sc->keep_input_mutations);
    if (st == WB_OK)
        st = wb_spec_set_grad_mode_at_end(s, sc->grad_at_end);
    if (st == WB_OK)
        st = wb_spec_set_effect_tokens(s, sc->ntokens);
    /* Asked for; the caller gives the callbacks (wb_spec_set_rng). */
    s->rng = sc->rng;
    if (st != WB_OK) {
        wb_spec_free(s);
        return st;
    }
    *out = s;
    return WB_OK;
}

wb_status wb_spec_parse(const char *text, wb_spec **out)
{
    wb_schema *sc;
    wb_spec *s;
    wb_status st;
    if (!text || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_parse: NULL text or out");
    if ((st = wb_schema_parse(text, NULL, 1, &sc)) != WB_OK)
        return st;
    st = wb_schema_to_spec(sc, &s);
    wb_schema_free(sc);
    if (st == WB_OK)
        *out = s;
    return st;
}
