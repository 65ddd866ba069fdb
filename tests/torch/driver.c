/*
 * driver.c -- replays PyTorch's behaviour, recorded as conformance cases,
 * through wrapbake's wrappers and compares what a caller observes.
 *
 * tests/torch/gen.py runs real ATen ops eagerly and writes what each call
 * did as a case (docs/conformance.md has the format): the storages and
 * inputs before the call (tensors, numbers, Nones), a wrapbake spec of
 * it, the arguments its graph gets, the values its
 * functionalized graph returns, and what PyTorch left behind -- where each
 * input lies, its view, how far its version counter moved, its elements,
 * the bytes of each storage, and for each output its storage, view,
 * version counter and elements, or that it is an input itself.  A
 * training case also says which inputs and graph values require grad
 * before the call and the grad mode it runs in, and expects whether each
 * input requires grad after it.  A case marked `refuse` is one wrapbake
 * is known to refuse: the wrapper cannot be made or the call fails, and
 * every input is left as it was.
 *
 *   driver CASES [TIER...]   every case on each tier (interp tcc cc)
 *   driver --specs CASES     the specs wrapbake accepts, one a line: the
 *                            input of `wrapbake emit --aot`
 *
 * Built with -DDRIVER_AOT and the code `wrapbake emit --aot` generated from
 * those specs, it also knows the tier aot, whose wrappers come from the
 * generated dispatch unit.
 *
 * For each case, tier and mode the driver makes fresh storages and inputs,
 * parses the spec, makes a wrapper, calls it once and checks every
 * expectation; then it bumps each input's version counter to see which
 * outputs share it, releases everything and checks that every storage is
 * back to the references the driver holds.  The graph stand-in checks that
 * it gets the spec's graph arguments, each the case's `arg` record says
 * (the caller's tensor object, number or NULL, or a synthetic base of the
 * members' storage), and returns
 * the case's values, made from the driver's own inputs, in one of three
 * modes:
 *
 *   handed  new values on each call, their only reference handed over
 *   kept    the same, but the graph keeps a reference to each value
 *   fixed   kept, and every value it makes marked wb_tensor_fix_storage
 *
 * It prints a line per failed check ("FAIL case NAME tier T mode M: ..."),
 * a line per refused case, and a summary.  Exit status: 0 when every check
 * passed, 1 when one failed, 2 when the case file is malformed or the
 * driver cannot run.
 */
#define _POSIX_C_SOURCE 200809L /* getline */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wrapbake.h"
#ifdef DRIVER_AOT
#include "wb_aot.h"
#endif

#define TC_MAX_FIELDS 12   /* the most fields a record has */
#define TC_MAX_ITEMS 4096  /* storages, inputs or values of a case */
#define TC_MSG 512         /* a message, wrapbake's included */
#define TC_SHOW 16         /* bytes shown of a differing byte string */
#define TC_MAX_THREADS 8   /* threads compiling the specs ahead */
/* A view as text: ndim, two lists of up to 16 numbers, the offset. */
#define TC_LIST_LEN (WB_MAX_DIMS * 21)
#define TC_VIEW_LEN (2 * TC_LIST_LEN + 32)

#if defined(__GNUC__)
#define TC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TC_PRINTF(f, a)
#endif

static const DLDevice tc_cpu = {kDLCPU, 0};

/* ---- the cases ----------------------------------------------------------- */

typedef struct tc_bytes {
    unsigned char *p;
    size_t n;
} tc_bytes;

/* Sizes, strides and offset in elements, as torch's size(), stride() and
   storage_offset(). */
typedef struct tc_view {
    int ndim;
    int64_t sizes[WB_MAX_DIMS], strides[WB_MAX_DIMS];
    int64_t offset;
} tc_view;

typedef struct tc_storage {
    DLDataType dtype;
    tc_bytes bytes;
} tc_storage;

typedef enum tc_input_kind {
    TC_IN_TENSOR, TC_IN_NUMBER, TC_IN_NONE
} tc_input_kind;

/* The longest text of an opaque number input. */
#define TC_OPAQUE_LEN 64

typedef struct tc_input {
    tc_input_kind kind;
    int storage;
    long group;  /* the version-counter group */
    int same;    /* the input whose object this is, or -1 */
    bool requires_grad;  /* before the call */
    tc_view view;
    /* A number: its type and value; an opaque one (WB_SCALAR_OPAQUE) is
       passed as a pointer to its text, which the graph must get. */
    wb_scalar_type type;
    wb_value num;
    char text[TC_OPAQUE_LEN];
} tc_input;

/* What graph argument A must be: input I as the caller passed it (the
   tensor object, the number, NULL for None), or the synthetic base whose
   first member is input I. */
typedef struct tc_arg {
    bool base;
    int input;
} tc_arg;

typedef enum tc_value_kind {
    TC_NEW, TC_VIEW, TC_OF, TC_INPUT, TC_NUMBER
} tc_value_kind;

typedef struct tc_value {
    tc_value_kind kind;
    int of;            /* the user's input (view, input) or the value (of) */
    DLDataType dtype;  /* new */
    tc_bytes bytes;    /* new */
    tc_view view;      /* new, view, of */
    wb_scalar_type type;  /* number: its type, and its value in num */
    wb_value num;
    bool requires_grad;  /* new, view, of: the graph's value requires grad */
    int line;
} tc_value;

/* A storage after the call: case storage `index` ('s') or the storage of
   graph value `index` ('v'). */
typedef struct tc_where {
    char kind;
    int index;
} tc_where;

typedef enum tc_expect_kind {
    TC_EXPECT_INPUT,     /* expect input I WHERE VIEW DVERSION */
    TC_EXPECT_ELEMS,     /* expect elems I BYTES */
    TC_EXPECT_STORAGE,   /* expect storage S BYTES */
    TC_EXPECT_IS_INPUT,  /* expect output O is_input I */
    TC_EXPECT_OUTPUT,    /* expect output O WHERE VIEW SHARES BYTES */
    TC_EXPECT_NUMBER,    /* expect output O number TYPE [V] */
    TC_EXPECT_GRAD       /* expect requires_grad I 0|1 */
} tc_expect_kind;

typedef struct tc_expect {
    tc_expect_kind kind;
    int index;        /* the input, storage or output */
    int input;        /* is_input: the input; output: SHARES's, -1 for - */
    tc_where where;
    tc_view view;
    int64_t dversion;
    tc_bytes bytes;
    wb_scalar_type type;  /* number */
    wb_value num;
    bool requires_grad;  /* requires_grad */
} tc_expect;

typedef struct tc_case {
    char *name, *spec, *refuse;
    tc_storage *storages;
    tc_input *inputs;
    tc_value *values;
    tc_expect *expects;
    tc_arg *args;
    int nstorages, ninputs, nvalues, nexpects, nargs;
    bool grad_off;  /* the call runs with grad mode off */
} tc_case;

typedef struct tc_suite {
    tc_case *cases;
    int ncases;
} tc_suite;

static void *tc_alloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "driver: out of memory\n");
        exit(2);
    }
    return p;
}

/* Room for one more zeroed item at the end of an array of n. */
static void *tc_append(void *items, int n, size_t size)
{
    unsigned char *p = realloc(items, ((size_t)n + 1) * size);
    if (!p) {
        fprintf(stderr, "driver: out of memory\n");
        exit(2);
    }
    memset(p + (size_t)n * size, 0, size);
    return p;
}

static char *tc_strdup(const char *s)
{
    char *p = tc_alloc(strlen(s) + 1);
    return strcpy(p, s);
}

static void tc_case_free(tc_case *c)
{
    for (int i = 0; i < c->nstorages; i++)
        free(c->storages[i].bytes.p);
    for (int i = 0; i < c->nvalues; i++)
        free(c->values[i].bytes.p);
    for (int i = 0; i < c->nexpects; i++)
        free(c->expects[i].bytes.p);
    free(c->storages), free(c->inputs), free(c->values), free(c->expects);
    free(c->args);
    free(c->name), free(c->spec), free(c->refuse);
}

static void tc_suite_free(tc_suite *s)
{
    for (int i = 0; i < s->ncases; i++)
        tc_case_free(&s->cases[i]);
    free(s->cases);
}

/* The input whose tensor object input i is (i itself unless `same`). */
static int tc_object(const tc_case *c, int i)
{
    return c->inputs[i].same >= 0 ? c->inputs[i].same : i;
}

/* ---- reading a case file ------------------------------------------------- */

typedef struct tc_reader {
    const char *file;
    int line;
    tc_suite *suite;
    tc_case *c;  /* the case being read, NULL between cases */
} tc_reader;

/* Reports what is wrong at the current line; returns false. */
static TC_PRINTF(2, 3) bool tc_bad(const tc_reader *rd, const char *fmt,
                                    ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", rd->file, rd->line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return false;
}

/* A decimal number 0..max, digits only. */
static bool tc_number(const tc_reader *rd, const char *what, const char *s,
                      int64_t max, int64_t *out)
{
    int64_t v = 0;
    if (!*s)
        return tc_bad(rd, "%s: expected a number, got nothing", what);
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return tc_bad(rd, "%s: expected a number, got '%s'", what, s);
        if (v > (max - (*p - '0')) / 10)
            return tc_bad(rd, "%s: %s is larger than %lld", what, s,
                          (long long)max);
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return true;
}

/* An index below `limit`: the number of items of its kind defined so far. */
static bool tc_index(const tc_reader *rd, const char *what, const char *s,
                     int limit, int *out)
{
    int64_t v;
    if (!tc_number(rd, what, s, TC_MAX_ITEMS, &v))
        return false;
    if (v >= limit)
        return tc_bad(rd, "%s %lld is not defined (%d defined before this "
                      "line)", what, (long long)v, limit);
    *out = (int)v;
    return true;
}

/* An index of a tensor input: not a number or None. */
static bool tc_tensor_index(const tc_reader *rd, const char *s, int *out)
{
    if (!tc_index(rd, "input", s, rd->c->ninputs, out))
        return false;
    if (rd->c->inputs[*out].kind != TC_IN_TENSOR)
        return tc_bad(rd, "input %d is a %s, not a tensor", *out,
                      rd->c->inputs[*out].kind == TC_IN_NONE ? "None"
                                                             : "number");
    return true;
}

/* The next item's number, which must be `next`. */
static bool tc_next(const tc_reader *rd, const char *what, const char *s,
                    int next)
{
    int64_t v;
    if (!tc_number(rd, what, s, TC_MAX_ITEMS, &v))
        return false;
    if (v != next)
        return tc_bad(rd, "%s %lld out of order: expected %s %d", what,
                      (long long)v, what, next);
    return true;
}

static const struct {
    const char *name;
    DLDataType dtype;
} tc_dtypes[] = {
    {"float16", {kDLFloat, 16, 1}}, {"bfloat16", {kDLBfloat, 16, 1}},
    {"float32", {kDLFloat, 32, 1}}, {"float64", {kDLFloat, 64, 1}},
    {"int8", {kDLInt, 8, 1}},       {"int16", {kDLInt, 16, 1}},
    {"int32", {kDLInt, 32, 1}},     {"int64", {kDLInt, 64, 1}},
    {"uint8", {kDLUInt, 8, 1}},
/* As wrapbake's spec reader: before DLPack 0.8 bool travels as uint8. */
#if defined(DLPACK_VERSION) && DLPACK_VERSION >= 80
    {"bool", {kDLBool, 8, 1}},
#else
    {"bool", {kDLUInt, 8, 1}},
#endif
};

static bool tc_dtype(const tc_reader *rd, const char *s, DLDataType *out)
{
    for (size_t i = 0; i < sizeof tc_dtypes / sizeof *tc_dtypes; i++)
        if (strcmp(s, tc_dtypes[i].name) == 0) {
            *out = tc_dtypes[i].dtype;
            return true;
        }
    return tc_bad(rd, "unknown dtype '%s'", s);
}

static int tc_hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                                 : -1;
}

/* BYTES: lowercase hex, two digits a byte, or - for none. */
static bool tc_hex(const tc_reader *rd, const char *what, const char *s,
                   tc_bytes *out)
{
    size_t n = strcmp(s, "-") == 0 ? 0 : strlen(s);
    if (n % 2)
        return tc_bad(rd, "%s: an odd number of hex digits", what);
    unsigned char *p = tc_alloc(n / 2);
    for (size_t i = 0; i < n; i += 2) {
        int hi = tc_hex_digit(s[i]), lo = tc_hex_digit(s[i + 1]);
        if (hi < 0 || lo < 0) {
            free(p);
            return tc_bad(rd, "%s: '%c%c' at digit %zu is not lowercase "
                          "hex", what, s[i], s[i + 1], i + 1);
        }
        p[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    *out = (tc_bytes){p, n / 2};
    return true;
}

/* A list of exactly n numbers, comma-separated; - is the empty list. */
static bool tc_list(const tc_reader *rd, const char *what, const char *s,
                    int n, int64_t *out)
{
    char buf[32];
    int k = 0;
    if (strcmp(s, "-") == 0)
        s = "";
    for (const char *p = s; *p; k++) {
        size_t len = strcspn(p, ",");
        if (k == n)
            return tc_bad(rd, "%s: more than the %d numbers of ndim", what, n);
        if (len >= sizeof buf)
            return tc_bad(rd, "%s: a number of %zu digits", what, len);
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (!tc_number(rd, what, buf, INT64_MAX, &out[k]))
            return false;
        p += len;
        if (*p == ',' && !*++p)
            return tc_bad(rd, "%s: a comma at the end", what);
    }
    if (k != n)
        return tc_bad(rd, "%s: %d numbers, ndim says %d", what, k, n);
    return true;
}

/* VIEW: the four fields NDIM SIZES STRIDES OFFSET. */
static bool tc_view_read(const tc_reader *rd, char **f, tc_view *v)
{
    int64_t ndim;
    if (!tc_number(rd, "ndim", f[0], WB_MAX_DIMS, &ndim))
        return false;
    v->ndim = (int)ndim;
    return tc_list(rd, "sizes", f[1], v->ndim, v->sizes) &&
           tc_list(rd, "strides", f[2], v->ndim, v->strides) &&
           tc_number(rd, "offset", f[3], INT64_MAX, &v->offset);
}

/* WHERE: sS (a case storage) or vK (a graph value). */
static bool tc_where_read(const tc_reader *rd, const char *s, tc_where *w)
{
    const tc_case *c = rd->c;
    w->kind = s[0];
    if (s[0] == 's')
        return tc_index(rd, "storage", s + 1, c->nstorages, &w->index);
    if (s[0] == 'v')
        return tc_index(rd, "value", s + 1, c->nvalues, &w->index);
    return tc_bad(rd, "expected sS or vK where the tensor lies, got '%s'", s);
}

static bool tc_fields(const tc_reader *rd, const char *record, int n, int want)
{
    return n == want ||
           tc_bad(rd, "'%s' takes %d fields, got %d", record, want, n);
}

static bool tc_read_case(tc_reader *rd, char **f, int n)
{
    if (!tc_fields(rd, "case", n, 2))
        return false;
    if (rd->c)
        return tc_bad(rd, "case '%s' before the end of case '%s'", f[1],
                      rd->c->name);
    if (strspn(f[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789_.:/+-") != strlen(f[1]))
        return tc_bad(rd, "case name '%s' is not [A-Za-z0-9_.:/+-]+", f[1]);
    for (int i = 0; i < rd->suite->ncases; i++)
        if (strcmp(rd->suite->cases[i].name, f[1]) == 0)
            return tc_bad(rd, "a second case named '%s'", f[1]);
    tc_suite *s = rd->suite;
    s->cases = tc_append(s->cases, s->ncases, sizeof *s->cases);
    rd->c = &s->cases[s->ncases++];
    rd->c->name = tc_strdup(f[1]);
    return true;
}

/* spec TEXT and refuse WHY: the rest of the line, once a case. */
static bool tc_read_text(const tc_reader *rd, const char *record,
                         const char *rest, char **out)
{
    if (!*rest)
        return tc_bad(rd, "'%s' without its text", record);
    if (*out)
        return tc_bad(rd, "a second '%s' line in case '%s'", record,
                      rd->c->name);
    *out = tc_strdup(rest);
    return true;
}

/* storage S DTYPE NBYTES BYTES */
static bool tc_read_storage(tc_reader *rd, char **f, int n)
{
    tc_case *c = rd->c;
    int64_t nbytes;
    tc_storage st = {0};
    if (!tc_fields(rd, "storage", n, 5) ||
        !tc_next(rd, "storage", f[1], c->nstorages) ||
        !tc_dtype(rd, f[2], &st.dtype) ||
        !tc_number(rd, "nbytes", f[3], INT32_MAX, &nbytes) ||
        !tc_hex(rd, "bytes", f[4], &st.bytes))
        return false;
    if (st.bytes.n != (size_t)nbytes) {
        free(st.bytes.p);
        return tc_bad(rd, "storage %s: %lld bytes announced, %zu given", f[1],
                      (long long)nbytes, st.bytes.n);
    }
    c->storages = tc_append(c->storages, c->nstorages, sizeof *c->storages);
    c->storages[c->nstorages++] = st;
    return true;
}

static bool tc_number_value(const tc_reader *rd, char **f, int n,
                            wb_scalar_type *type, wb_value *v);

/* input I number opaque TEXT: a number the caller passes as a pointer of
   its own (Scalar, a list of numbers), to its text here. */
static bool tc_read_opaque(const tc_reader *rd, const char *text,
                           tc_input *in)
{
    if (strlen(text) >= sizeof in->text)
        return tc_bad(rd, "an opaque number of more than %d characters",
                      TC_OPAQUE_LEN - 1);
    strcpy(in->text, text);
    in->type = WB_SCALAR_OPAQUE;
    return true;
}

/* input I S C VIEW, input I same J, input I number TYPE V, input I none */
static bool tc_read_input(tc_reader *rd, char **f, int n)
{
    tc_case *c = rd->c;
    tc_input in = {.same = -1, .storage = -1, .group = -1};
    int64_t group;
    if (n < 3)
        return tc_bad(rd, "'input' takes 8 fields, 4 with same, 5 with "
                      "number or 3 with none");
    if (!tc_next(rd, "input", f[1], c->ninputs))
        return false;
    if (strcmp(f[2], "none") == 0) {
        if (!tc_fields(rd, "input I none", n, 3))
            return false;
        in.kind = TC_IN_NONE;
    } else if (strcmp(f[2], "number") == 0) {
        in.kind = TC_IN_NUMBER;
        if (!tc_fields(rd, "input I number", n, 5))
            return false;
        if (strcmp(f[3], "opaque") == 0 ? !tc_read_opaque(rd, f[4], &in)
                                        : !tc_number_value(rd, f + 3, 2,
                                                           &in.type, &in.num))
            return false;
    } else if (strcmp(f[2], "same") == 0) {
        if (!tc_fields(rd, "input I same", n, 4) ||
            !tc_tensor_index(rd, f[3], &in.same))
            return false;
        in.same = tc_object(c, in.same);
        in.storage = c->inputs[in.same].storage;
        in.group = c->inputs[in.same].group;
        in.view = c->inputs[in.same].view;
    } else {
        if (!tc_fields(rd, "input", n, 8) ||
            !tc_index(rd, "storage", f[2], c->nstorages, &in.storage) ||
            !tc_number(rd, "group", f[3], INT32_MAX, &group) ||
            !tc_view_read(rd, f + 4, &in.view))
            return false;
        in.group = (long)group;
        for (int i = 0; i < c->ninputs; i++)
            if (c->inputs[i].kind == TC_IN_TENSOR &&
                c->inputs[i].group == in.group &&
                c->inputs[i].storage != in.storage)
                return tc_bad(rd, "input %d shares counter group %ld with "
                              "input %d, which lies on another storage",
                              c->ninputs, in.group, i);
    }
    c->inputs = tc_append(c->inputs, c->ninputs, sizeof *c->inputs);
    c->inputs[c->ninputs++] = in;
    return true;
}

/* A number of TYPE (int, float, bool, None) with its text V: a decimal
   int, a float as Python's float.hex() writes it, 0 or 1; None has no
   V.  f[0] is TYPE; n counts the fields from it. */
static bool tc_number_value(const tc_reader *rd, char **f, int n,
                            wb_scalar_type *type, wb_value *v)
{
    char *end = NULL;
    v->i = 0;
    if (strcmp(f[0], "None") == 0 && n == 1) {
        *type = WB_SCALAR_NONE;
        return true;
    }
    if (n != 2)
        return tc_bad(rd, "a number is TYPE V, or None");
    errno = 0;
    if (strcmp(f[0], "int") == 0) {
        *type = WB_SCALAR_INT;
        v->i = strtoll(f[1], &end, 10);
    } else if (strcmp(f[0], "float") == 0) {
        *type = WB_SCALAR_FLOAT;
        v->f = strtod(f[1], &end);
    } else if (strcmp(f[0], "bool") == 0 &&
               (strcmp(f[1], "0") == 0 || strcmp(f[1], "1") == 0)) {
        *type = WB_SCALAR_BOOL;
        v->b = f[1][0] == '1';
        return true;
    } else {
        return tc_bad(rd, "number type '%s' is not int, float, bool or None",
                      f[0]);
    }
    if (errno || !end || *end || end == f[1])
        return tc_bad(rd, "'%s' is not a %s", f[1], f[0]);
    return true;
}

/* value K new DTYPE NBYTES BYTES VIEW | view I VIEW | of J VIEW | input I |
   number TYPE [V] */
static bool tc_read_value(tc_reader *rd, char **f, int n)
{
    tc_case *c = rd->c;
    tc_value v = {.line = rd->line};
    int64_t nbytes, of;
    if (n < 3)
        return tc_bad(rd, "'value' without its kind");
    if (!tc_next(rd, "value", f[1], c->nvalues))
        return false;
    if (strcmp(f[2], "new") == 0) {
        v.kind = TC_NEW;
        if (!tc_fields(rd, "value K new", n, 10) ||
            !tc_dtype(rd, f[3], &v.dtype) ||
            !tc_number(rd, "nbytes", f[4], INT32_MAX, &nbytes) ||
            !tc_view_read(rd, f + 6, &v.view) ||
            !tc_hex(rd, "bytes", f[5], &v.bytes))
            return false;
        if (v.bytes.n != (size_t)nbytes) {
            free(v.bytes.p);
            return tc_bad(rd, "value %s: %lld bytes announced, %zu given",
                          f[1], (long long)nbytes, v.bytes.n);
        }
    } else if (strcmp(f[2], "view") == 0) {
        v.kind = TC_VIEW;
        if (!tc_fields(rd, "value K view", n, 8) ||
            !tc_tensor_index(rd, f[3], &v.of) ||
            !tc_view_read(rd, f + 4, &v.view))
            return false;
    } else if (strcmp(f[2], "of") == 0) {
        /* J may come later: it is checked at the end of the case. */
        v.kind = TC_OF;
        if (!tc_fields(rd, "value K of", n, 8) ||
            !tc_number(rd, "value", f[3], TC_MAX_ITEMS, &of) ||
            !tc_view_read(rd, f + 4, &v.view))
            return false;
        v.of = (int)of;
    } else if (strcmp(f[2], "input") == 0) {
        v.kind = TC_INPUT;
        if (!tc_fields(rd, "value K input", n, 4) ||
            !tc_tensor_index(rd, f[3], &v.of))
            return false;
    } else if (strcmp(f[2], "number") == 0 && n > 3) {
        v.kind = TC_NUMBER;
        if (!tc_number_value(rd, f + 3, n - 3, &v.type, &v.num))
            return false;
    } else {
        return tc_bad(rd, "value kind '%s' is not new, view, of, input or "
                      "number", f[2]);
    }
    c->values = tc_append(c->values, c->nvalues, sizeof *c->values);
    c->values[c->nvalues++] = v;
    return true;
}

/* SHARES: iN or -. */
static bool tc_shares(const tc_reader *rd, const char *s, int *out)
{
    if (strcmp(s, "-") == 0) {
        *out = -1;
        return true;
    }
    if (s[0] != 'i')
        return tc_bad(rd, "expected iN or - for the version counter, got "
                      "'%s'", s);
    return tc_tensor_index(rd, s + 1, out);
}

/* An output's number; the spec, parsed later, says how many there are. */
static bool tc_output_number(const tc_reader *rd, const char *s, int *out)
{
    int64_t v;
    if (!tc_number(rd, "output", s, WB_MAX_OUTPUTS - 1, &v))
        return false;
    *out = (int)v;
    return true;
}

/* 0 or 1. */
static bool tc_flag(const tc_reader *rd, const char *s, bool *out)
{
    if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0)
        return tc_bad(rd, "expected 0 or 1, got '%s'", s);
    *out = s[0] == '1';
    return true;
}

/* requires_grad input I, or requires_grad value K: a tensor the graph
   makes (new, view, of), which the driver marks as it makes it. */
static bool tc_read_requires_grad(tc_reader *rd, char **f, int n)
{
    tc_case *c = rd->c;
    int k = 0;
    if (!tc_fields(rd, "requires_grad", n, 3))
        return false;
    if (strcmp(f[1], "input") == 0) {
        if (!tc_tensor_index(rd, f[2], &k))
            return false;
        if (c->inputs[k].same >= 0)
            return tc_bad(rd, "input %d is input %d's object: mark that one",
                          k, c->inputs[k].same);
        c->inputs[k].requires_grad = true;
        return true;
    }
    if (strcmp(f[1], "value") != 0)
        return tc_bad(rd, "'requires_grad %s' is not input or value", f[1]);
    if (!tc_index(rd, "value", f[2], c->nvalues, &k))
        return false;
    if (c->values[k].kind == TC_INPUT || c->values[k].kind == TC_NUMBER)
        return tc_bad(rd, "value %d is an input or a number, which the "
                      "graph does not make", k);
    c->values[k].requires_grad = true;
    return true;
}

/* grad_mode on|off: the grad mode the call runs in (on by default). */
static bool tc_read_grad_mode(tc_reader *rd, char **f, int n)
{
    if (!tc_fields(rd, "grad_mode", n, 2))
        return false;
    if (strcmp(f[1], "on") != 0 && strcmp(f[1], "off") != 0)
        return tc_bad(rd, "grad_mode '%s' is not on or off", f[1]);
    rd->c->grad_off = strcmp(f[1], "off") == 0;
    return true;
}

static bool tc_read_expect(tc_reader *rd, char **f, int n)
{
    tc_case *c = rd->c;
    tc_expect e = {0};
    bool ok;
    if (n < 3)
        return tc_bad(rd, "'expect' without what it expects");
    if (strcmp(f[1], "input") == 0) {
        e.kind = TC_EXPECT_INPUT;
        ok = tc_fields(rd, "expect input", n, 9) &&
             tc_tensor_index(rd, f[2], &e.index) &&
             tc_where_read(rd, f[3], &e.where) &&
             tc_view_read(rd, f + 4, &e.view) &&
             tc_number(rd, "dversion", f[8], INT32_MAX, &e.dversion);
    } else if (strcmp(f[1], "elems") == 0) {
        e.kind = TC_EXPECT_ELEMS;
        ok = tc_fields(rd, "expect elems", n, 4) &&
             tc_tensor_index(rd, f[2], &e.index) &&
             tc_hex(rd, "bytes", f[3], &e.bytes);
    } else if (strcmp(f[1], "storage") == 0) {
        e.kind = TC_EXPECT_STORAGE;
        ok = tc_fields(rd, "expect storage", n, 4) &&
             tc_index(rd, "storage", f[2], c->nstorages, &e.index) &&
             tc_hex(rd, "bytes", f[3], &e.bytes);
    } else if (strcmp(f[1], "output") == 0 && n > 3 &&
               strcmp(f[3], "is_input") == 0) {
        e.kind = TC_EXPECT_IS_INPUT;
        ok = tc_fields(rd, "expect output O is_input", n, 5) &&
             tc_output_number(rd, f[2], &e.index) &&
             tc_tensor_index(rd, f[4], &e.input);
    } else if (strcmp(f[1], "output") == 0 && n > 4 &&
               strcmp(f[3], "number") == 0) {
        e.kind = TC_EXPECT_NUMBER;
        ok = tc_output_number(rd, f[2], &e.index) &&
             tc_number_value(rd, f + 4, n - 4, &e.type, &e.num);
    } else if (strcmp(f[1], "output") == 0) {
        e.kind = TC_EXPECT_OUTPUT;
        ok = tc_fields(rd, "expect output", n, 10) &&
             tc_output_number(rd, f[2], &e.index) &&
             tc_where_read(rd, f[3], &e.where) &&
             tc_view_read(rd, f + 4, &e.view) &&
             tc_shares(rd, f[8], &e.input) &&
             tc_hex(rd, "bytes", f[9], &e.bytes);
    } else if (strcmp(f[1], "requires_grad") == 0) {
        e.kind = TC_EXPECT_GRAD;
        ok = tc_fields(rd, "expect requires_grad", n, 4) &&
             tc_tensor_index(rd, f[2], &e.index) &&
             tc_flag(rd, f[3], &e.requires_grad);
    } else {
        return tc_bad(rd, "'expect %s' is not input, elems, storage, "
                      "output or requires_grad", f[1]);
    }
    if (!ok)
        return false;
    c->expects = tc_append(c->expects, c->nexpects, sizeof *c->expects);
    c->expects[c->nexpects++] = e;
    return true;
}

/* arg A input I, or arg A base I: what graph argument A must be. */
static bool tc_read_arg(tc_reader *rd, char **f, int n)
{
    tc_case *c = rd->c;
    tc_arg a = {0};
    if (!tc_fields(rd, "arg", n, 4) || !tc_next(rd, "arg", f[1], c->nargs))
        return false;
    if (strcmp(f[2], "base") == 0) {
        a.base = true;
        if (!tc_tensor_index(rd, f[3], &a.input))
            return false;
    } else if (strcmp(f[2], "input") != 0) {
        return tc_bad(rd, "'arg %s' is not input or base", f[2]);
    } else if (!tc_index(rd, "input", f[3], c->ninputs, &a.input)) {
        return false;
    }
    c->args = tc_append(c->args, c->nargs, sizeof *c->args);
    c->args[c->nargs++] = a;
    return true;
}

/* end: what can only be checked once the whole case is read. */
static bool tc_read_end(tc_reader *rd, int n)
{
    const tc_case *c = rd->c;
    if (!tc_fields(rd, "end", n, 1))
        return false;
    if (!c->spec)
        return tc_bad(rd, "case '%s' has no spec", c->name);
    if (c->refuse && c->nexpects)
        return tc_bad(rd, "case '%s' is refused but expects something",
                      c->name);
    for (int k = 0; k < c->nvalues; k++) {
        const tc_value *v = &c->values[k];
        tc_reader at = *rd;  /* reports at the value's line */
        at.line = v->line;
        if (v->kind != TC_OF)
            continue;
        if (v->of >= c->nvalues)
            return tc_bad(&at, "value %d is a view of value %d, which the "
                          "case does not have", k, v->of);
        if (c->values[v->of].kind == TC_OF)
            return tc_bad(&at, "value %d is a view of value %d, which is a "
                          "view itself, not an intermediate base", k, v->of);
    }
    rd->c = NULL;
    return true;
}

/* Splits line at single spaces into at most TC_MAX_FIELDS fields. */
static bool tc_split(const tc_reader *rd, char *line, char **f, int *n)
{
    *n = 0;
    for (char *p = line;; p++) {
        if (*n == TC_MAX_FIELDS)
            return tc_bad(rd, "more than %d fields", TC_MAX_FIELDS);
        f[(*n)++] = p;
        p += strcspn(p, " ");
        if (p == f[*n - 1])
            return tc_bad(rd, "an empty field (two spaces, or a space at "
                          "either end)");
        if (!*p)
            return true;
        *p = '\0';
    }
}

static bool tc_read_line(tc_reader *rd, char *line)
{
    char *f[TC_MAX_FIELDS];
    int n;
    size_t word = strcspn(line, " ");
    const char *rest = line[word] ? line + word + 1 : "";
    if (!rd->c && !(word == 4 && strncmp(line, "case", 4) == 0))
        return tc_bad(rd, "a record outside a case (expected 'case NAME')");
    if (word == 4 && strncmp(line, "spec", 4) == 0)
        return tc_read_text(rd, "spec", rest, &rd->c->spec);
    if (word == 6 && strncmp(line, "refuse", 6) == 0)
        return tc_read_text(rd, "refuse", rest, &rd->c->refuse);
    if (!tc_split(rd, line, f, &n))
        return false;
    if (strcmp(f[0], "case") == 0)
        return tc_read_case(rd, f, n);
    if (strcmp(f[0], "storage") == 0)
        return tc_read_storage(rd, f, n);
    if (strcmp(f[0], "input") == 0)
        return tc_read_input(rd, f, n);
    if (strcmp(f[0], "value") == 0)
        return tc_read_value(rd, f, n);
    if (strcmp(f[0], "requires_grad") == 0)
        return tc_read_requires_grad(rd, f, n);
    if (strcmp(f[0], "grad_mode") == 0)
        return tc_read_grad_mode(rd, f, n);
    if (strcmp(f[0], "expect") == 0)
        return tc_read_expect(rd, f, n);
    if (strcmp(f[0], "arg") == 0)
        return tc_read_arg(rd, f, n);
    if (strcmp(f[0], "end") == 0)
        return tc_read_end(rd, n);
    return tc_bad(rd, "unknown record '%s'", f[0]);
}

/* Reads the case file at path into s; false, having said why, when it
   cannot be read or is malformed. */
static bool tc_read(const char *path, tc_suite *s)
{
    tc_reader rd = {.file = path, .suite = s};
    FILE *fp = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    bool ok = true;
    if (!fp) {
        perror(path);
        return false;
    }
    while (ok && (len = getline(&line, &cap, fp)) >= 0) {
        rd.line++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (strlen(line) != (size_t)len)
            ok = tc_bad(&rd, "a NUL byte in the line");
        else if (len > 0 && line[0] != '#')
            ok = tc_read_line(&rd, line);
    }
    if (ok && ferror(fp))
        ok = tc_bad(&rd, "read error");
    else if (ok && rd.c)
        ok = tc_bad(&rd, "case '%s' has no end", rd.c->name);
    else if (ok && s->ncases == 0)
        ok = tc_bad(&rd, "no case in the file");
    free(line);
    fclose(fp);
    return ok;
}

/* ---- one run: a case on one tier in one mode ----------------------------- */

typedef enum tc_mode { TC_HANDED, TC_KEPT, TC_FIXED, TC_MODES } tc_mode;
static const char *const tc_mode_names[TC_MODES] = {"handed", "kept",
                                                    "fixed"};

typedef struct tc_tier {
    const char *name;
    wb_tier tier;
} tc_tier;

static const tc_tier tc_tiers[] = {
    {"interp", WB_TIER_INTERP},
    {"tcc", WB_TIER_TCC},
    {"cc", WB_TIER_CC},
#ifdef DRIVER_AOT
    {"aot", WB_TIER_AOT},
#endif
};

/* What the whole run counts. */
static long tc_checks, tc_failed;

typedef struct tc_run {
    const tc_case *c;
    const char *tier;
    tc_mode mode;
    wb_storage **storages;  /* the case's storages, one reference each */
    wb_tensor **inputs;     /* the inputs, one reference per input */
    uint64_t *before;       /* their versions before the call */
    wb_value *outs;         /* the outputs of the call */
    int nouts;
    int nupdated;           /* M: output k is graph value M + k */
    /* The graph stand-in's: the arguments it gets (the spec's graph
       arguments: its effect tokens and its inputs that are not
       duplicates), how often it ran, the storages of the values it made
       (a reference each, so that they are compared by pointer while
       alive), the values it kept, and why it failed. */
    int nargs;
    int calls;
    wb_storage **made;
    wb_tensor **kept;
    char graph_error[TC_MSG];
} tc_run;

static TC_PRINTF(2, 0) void tc_report(const tc_run *r, const char *fmt,
                                       va_list ap)
{
    tc_failed++;
    printf("FAIL case %s tier %s mode %s: ", r->c->name, r->tier,
           tc_mode_names[r->mode]);
    vprintf(fmt, ap);
    putchar('\n');
}

/* Counts a check and reports it when it failed; returns ok. */
static TC_PRINTF(3, 4) bool tc_check(const tc_run *r, bool ok,
                                      const char *fmt, ...)
{
    va_list ap;
    tc_checks++;
    if (!ok) {
        va_start(ap, fmt);
        tc_report(r, fmt, ap);
        va_end(ap);
    }
    return ok;
}

/* Reports what kept a run from its checks (a case at odds with its spec,
   the graph stand-in failing): a failed check.  Returns false. */
static TC_PRINTF(2, 3) bool tc_fail(const tc_run *r, const char *fmt, ...)
{
    va_list ap;
    tc_checks++;
    va_start(ap, fmt);
    tc_report(r, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- the graph stand-in ---- */

static wb_status tc_from_view(wb_storage *s, DLDataType dtype,
                              const tc_view *v, wb_tensor **out)
{
    return wb_tensor_from_storage(s, dtype, v->ndim, v->sizes, v->strides,
                                  v->offset, out);
}

static wb_status tc_as_strided(const wb_tensor *base, const tc_view *v,
                               wb_tensor **out)
{
    return wb_tensor_as_strided(base, v->ndim, v->sizes, v->strides,
                                v->offset, out);
}

/* A tensor with a storage of its own holding bytes, viewed so. */
static wb_status tc_fresh(DLDataType dtype, const tc_bytes *bytes,
                          const tc_view *v, wb_tensor **out)
{
    wb_storage *s;
    wb_status st = wb_storage_new(tc_cpu, bytes->n, &s);
    if (st != WB_OK)
        return st;
    if (bytes->n)
        memcpy(wb_storage_data(s), bytes->p, bytes->n);
    st = tc_from_view(s, dtype, v, out);
    wb_storage_release(s);
    return st;
}

/* Makes value k into values[k], as the mode says.  `view I` and `input I`
   name the user's input I, the driver's own object, which is what it
   passed to the call: the graph's arguments leave duplicates out. */
static bool tc_make_value(tc_run *r, wb_value *values, int k)
{
    const tc_value *v = &r->c->values[k];
    wb_tensor *t = NULL;
    wb_status st = WB_OK;
    switch (v->kind) {
    case TC_NEW:
        st = tc_fresh(v->dtype, &v->bytes, &v->view, &t);
        break;
    case TC_VIEW:
        st = tc_as_strided(r->inputs[v->of], &v->view, &t);
        break;
    case TC_OF:
        st = tc_as_strided(values[v->of].t, &v->view, &t);
        break;
    case TC_INPUT:
        t = wb_tensor_retain(r->inputs[v->of]);
        break;
    case TC_NUMBER:
        /* A number, in its member; None writes nothing. */
        if (v->type != WB_SCALAR_NONE)
            values[k] = v->num;
        return true;
    }
    if (st != WB_OK) {
        snprintf(r->graph_error, sizeof r->graph_error,
                 "the graph could not make value %d: %s", k, wb_last_error());
        return false;
    }
    if (v->requires_grad)
        wb_tensor_set_requires_grad(t, true);
    if (r->mode == TC_FIXED && v->kind != TC_INPUT)
        wb_tensor_fix_storage(t);
    if (r->mode != TC_HANDED)
        r->kept[k] = wb_tensor_retain(t);
    r->made[k] = wb_storage_retain(wb_tensor_storage(t));
    values[k].t = t;
    return true;
}

/* Whether graph argument a is input i as the caller passed it: the
   tensor object itself, NULL for None, the same number (the same pointer
   for an opaque one). */
static bool tc_arg_is_input(const tc_run *r, const wb_arg *a, int i)
{
    const tc_input *in = &r->c->inputs[i];
    if (in->kind != TC_IN_NUMBER)
        return a->t == r->inputs[i];
    switch (in->type) {
    case WB_SCALAR_INT:
        return a->i == in->num.i;
    case WB_SCALAR_FLOAT:
        return memcmp(&a->f, &in->num.f, sizeof a->f) == 0;
    case WB_SCALAR_BOOL:
        return a->b == in->num.b;
    default:
        return a->p == (const void *)in->text;
    }
}

/* Whether graph argument a is the synthetic base of input i, a member: a
   1-D view of the member's whole storage with its dtype. */
static bool tc_arg_is_base(const tc_run *r, const wb_arg *a, int i)
{
    const wb_tensor *m = r->inputs[i], *t = a->t;
    size_t es = wb_dtype_size(wb_tensor_dtype(m));
    DLDataType x, y;
    if (!t || wb_tensor_storage(t) != wb_tensor_storage(m) ||
        wb_tensor_ndim(t) != 1 || wb_tensor_offset(t) != 0 ||
        wb_tensor_strides(t)[0] != 1)
        return false;
    x = wb_tensor_dtype(t), y = wb_tensor_dtype(m);
    return x.code == y.code && x.bits == y.bits && x.lanes == y.lanes &&
           (uint64_t)wb_tensor_sizes(t)[0] * es ==
               wb_storage_nbytes(wb_tensor_storage(m));
}

/* The graph's arguments are the case's `arg` records; false, with the
   first that is not in graph_error. */
static bool tc_check_args(tc_run *r, const wb_arg *args)
{
    const tc_case *c = r->c;
    for (int a = 0; a < c->nargs; a++) {
        const tc_arg *want = &c->args[a];
        if (want->base ? tc_arg_is_base(r, &args[a], want->input)
                       : tc_arg_is_input(r, &args[a], want->input))
            continue;
        snprintf(r->graph_error, sizeof r->graph_error,
                 want->base ? "graph argument %d is not the synthetic base "
                              "of input %d"
                            : "graph argument %d is not input %d as the "
                              "caller passed it",
                 a, want->input);
        return false;
    }
    return true;
}

/* Checks the arguments, then returns the case's values, intermediate
   bases (the values views are made `of`) first. */
static int tc_graph(void *ctx, const wb_arg *args, int nargs,
                    wb_value *values, int nvalues)
{
    tc_run *r = ctx;
    const tc_case *c = r->c;
    if (++r->calls > 1)
        return -1;
    if (nargs != r->nargs || nargs != c->nargs || nvalues != c->nvalues) {
        snprintf(r->graph_error, sizeof r->graph_error,
                 "the graph got %d arguments and room for %d values "
                 "(expected %d, the case %d, and %d)", nargs, nvalues,
                 r->nargs, c->nargs, c->nvalues);
        return -1;
    }
    if (!tc_check_args(r, args))
        return -1;
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < c->nvalues; k++)
            if ((c->values[k].kind == TC_OF) == (pass == 1) &&
                !tc_make_value(r, values, k))
                return -1;
    return c->nvalues;
}

/* ---- before and after the call ---- */

/* The first input of input i's version-counter group (i itself when it is
   the first). */
static int tc_group_first(const tc_case *c, int i)
{
    int j = 0;
    while (j < i && (c->inputs[j].same >= 0 ||
                     c->inputs[j].kind != TC_IN_TENSOR ||
                     c->inputs[j].group != c->inputs[i].group))
        j++;
    return j;
}

/* Fresh storages and inputs; false, having reported it, when one of them
   cannot be made. */
static bool tc_setup(tc_run *r)
{
    const tc_case *c = r->c;
    r->storages = tc_alloc(sizeof *r->storages * (size_t)c->nstorages);
    r->inputs = tc_alloc(sizeof *r->inputs * (size_t)c->ninputs);
    r->before = tc_alloc(sizeof *r->before * (size_t)c->ninputs);
    r->made = tc_alloc(sizeof *r->made * (size_t)c->nvalues);
    r->kept = tc_alloc(sizeof *r->kept * (size_t)c->nvalues);
    for (int s = 0; s < c->nstorages; s++) {
        const tc_bytes *b = &c->storages[s].bytes;
        if (wb_storage_new(tc_cpu, b->n, &r->storages[s]) != WB_OK)
            return tc_fail(r, "storage %d cannot be made: %s", s,
                           wb_last_error());
        if (b->n)
            memcpy(wb_storage_data(r->storages[s]), b->p, b->n);
    }
    for (int i = 0; i < c->ninputs; i++) {
        const tc_input *in = &c->inputs[i];
        wb_status st = WB_OK;
        if (in->kind != TC_IN_TENSOR)
            continue;  /* a number or None: no tensor */
        int first = tc_group_first(c, i);
        if (in->same >= 0)
            r->inputs[i] = wb_tensor_retain(r->inputs[in->same]);
        else if (first < i)
            st = tc_as_strided(r->inputs[first], &in->view, &r->inputs[i]);
        else
            st = tc_from_view(r->storages[in->storage],
                              c->storages[in->storage].dtype, &in->view,
                              &r->inputs[i]);
        if (st != WB_OK)
            return tc_fail(r, "input %d cannot be made: %s", i,
                           wb_last_error());
        if (in->requires_grad)
            wb_tensor_set_requires_grad(r->inputs[i], true);
        r->before[i] = wb_tensor_version(r->inputs[i]);
    }
    return true;
}

/* Whether output k is a number: its graph value is one. */
static bool tc_out_is_number(const tc_run *r, int k)
{
    int v = r->nupdated + k;
    return v < r->c->nvalues && r->c->values[v].kind == TC_NUMBER;
}

/* Releases what the call and the graph left (outputs, kept values) and
   the inputs, which leaves the storages alone. */
static void tc_release(tc_run *r)
{
    for (int k = 0; r->outs && k < r->nouts; k++)
        if (!tc_out_is_number(r, k))
            wb_tensor_release(r->outs[k].t);
    for (int k = 0; k < r->c->nvalues; k++)
        wb_tensor_release(r->kept[k]);
    for (int i = 0; i < r->c->ninputs; i++)
        wb_tensor_release(r->inputs[i]);
    free(r->outs), free(r->kept), free(r->inputs), free(r->before);
    r->outs = NULL, r->kept = NULL, r->inputs = NULL, r->before = NULL;
}

static int tc_count(wb_storage *const *items, int n, const wb_storage *s)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += items[i] == s;
    return k;
}

/* Once everything else is released, every storage holds exactly the
   references the driver holds: nothing leaked.  Then releases them. */
static void tc_check_leaks(tc_run *r)
{
    const tc_case *c = r->c;
    for (int s = 0; s < c->nstorages && r->storages[s]; s++) {
        wb_storage *p = r->storages[s];
        long held = 1 + tc_count(r->made, c->nvalues, p);
        tc_check(r, wb_storage_refcount(p) == held,
                 "storage s%d has %ld references once everything was "
                 "released (expected the driver's %ld)", s,
                 wb_storage_refcount(p), held);
    }
    for (int k = 0; k < c->nvalues; k++) {
        wb_storage *p = r->made[k];
        long held = tc_count(r->made, c->nvalues, p);
        if (!p || tc_count(r->storages, c->nstorages, p) ||
            tc_count(r->made, k, p))
            continue;  /* checked above, or for an earlier value */
        tc_check(r, wb_storage_refcount(p) == held,
                 "the storage of value %d has %ld references once "
                 "everything was released (expected the driver's %ld)", k,
                 wb_storage_refcount(p), held);
    }
    for (int k = 0; k < c->nvalues; k++)
        wb_storage_release(r->made[k]);
    for (int s = 0; s < c->nstorages; s++)
        wb_storage_release(r->storages[s]);
    free(r->made), free(r->storages);
}

/* ---- comparing ---- */

static void tc_view_of(const wb_tensor *t, tc_view *v)
{
    v->ndim = wb_tensor_ndim(t);
    memcpy(v->sizes, wb_tensor_sizes(t), sizeof(int64_t) * (size_t)v->ndim);
    memcpy(v->strides, wb_tensor_strides(t),
           sizeof(int64_t) * (size_t)v->ndim);
    v->offset = wb_tensor_offset(t);
}

static bool tc_view_eq(const tc_view *a, const tc_view *b)
{
    size_t n = sizeof(int64_t) * (size_t)a->ndim;
    return a->ndim == b->ndim && a->offset == b->offset &&
           memcmp(a->sizes, b->sizes, n) == 0 &&
           memcmp(a->strides, b->strides, n) == 0;
}

/* The list as the case file writes it ("2,3", "-"). */
static void tc_list_str(const int64_t *v, int n, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "%s", n ? "" : "-");
    for (int d = 0; d < n && k < cap; d++)
        k += (size_t)snprintf(out + k, cap - k, "%s%lld", d ? "," : "",
                              (long long)v[d]);
}

/* A view as the case file writes it ("2 2,3 3,1 0"). */
static const char *tc_view_str(const tc_view *v, char *out, size_t cap)
{
    char sizes[TC_LIST_LEN], strides[TC_LIST_LEN];
    tc_list_str(v->sizes, v->ndim, sizes, sizeof sizes);
    tc_list_str(v->strides, v->ndim, strides, sizeof strides);
    snprintf(out, cap, "%d %s %s %lld", v->ndim, sizes, strides,
             (long long)v->offset);
    return out;
}

static bool tc_check_view(const tc_run *r, const char *what,
                          const wb_tensor *t, const tc_view *want)
{
    char a[TC_VIEW_LEN], b[TC_VIEW_LEN];
    tc_view got;
    tc_view_of(t, &got);
    return tc_check(r, tc_view_eq(&got, want), "%s view (expected %s, got %s)",
                    what, tc_view_str(want, a, sizeof a),
                    tc_view_str(&got, b, sizeof b));
}

/* At most TC_SHOW bytes of p in hex, "..." when there are more. */
static const char *tc_hex_str(const unsigned char *p, size_t n, char *out)
{
    size_t k = 0, m = n < TC_SHOW ? n : TC_SHOW;
    for (size_t i = 0; i < m; i++)
        k += (size_t)sprintf(out + k, "%02x", p[i]);
    strcpy(out + k, n > m ? "..." : n ? "" : "-");
    return out;
}

/* got is want, byte for byte; if not, shows them from the element of
   es bytes where they first differ. */
static bool tc_check_bytes(const tc_run *r, const char *what,
                           const tc_bytes *want, const unsigned char *got,
                           size_t n, size_t es)
{
    char a[2 * TC_SHOW + 4], b[2 * TC_SHOW + 4];
    size_t at = 0;
    if (n != want->n)
        return tc_check(r, false, "%s: %zu bytes (expected %zu)", what, n,
                        want->n);
    while (at < n && got[at] == want->p[at])
        at++;
    if (at < n && es)
        at -= at % es;
    return tc_check(r, at == n, "%s differ from byte %zu of %zu (expected "
                    "%s, got %s)", what, at, n,
                    tc_hex_str(want->p + at, n - at, a),
                    tc_hex_str(got + at, n - at, b));
}

/* t's elements in row-major order of its view, malloc'ed into *out; false
   when the view leaves its storage, which wrapbake never allows. */
static bool tc_elems(const wb_tensor *t, tc_bytes *out)
{
    const unsigned char *data = wb_storage_data(wb_tensor_storage(t));
    size_t es = wb_dtype_size(wb_tensor_dtype(t));
    int nd = wb_tensor_ndim(t);
    const int64_t *sizes = wb_tensor_sizes(t), *strides = wb_tensor_strides(t);
    int64_t numel = wb_tensor_numel(t), last = wb_tensor_offset(t);
    int64_t idx[WB_MAX_DIMS] = {0};
    for (int d = 0; d < nd && numel > 0; d++)
        last += (sizes[d] - 1) * strides[d];
    if (numel > 0 && (last < 0 || (uint64_t)(last + 1) * es >
                                      wb_storage_nbytes(wb_tensor_storage(t))))
        return false;
    out->n = (size_t)numel * es;
    out->p = tc_alloc(out->n);
    for (int64_t i = 0; i < numel; i++) {
        int64_t at = wb_tensor_offset(t);
        for (int d = 0; d < nd; d++)
            at += idx[d] * strides[d];
        memcpy(out->p + (size_t)i * es, data + (size_t)at * es, es);
        for (int d = nd - 1; d >= 0 && ++idx[d] == sizes[d]; d--)
            idx[d] = 0;
    }
    return true;
}

static bool tc_check_elems(const tc_run *r, const char *what,
                           const wb_tensor *t, const tc_bytes *want)
{
    char label[64];
    tc_bytes got;
    if (!tc_elems(t, &got))
        return tc_check(r, false, "%s lies outside its storage", what);
    snprintf(label, sizeof label, "%s elements", what);
    bool ok = tc_check_bytes(r, label, want, got.p, got.n,
                             wb_dtype_size(wb_tensor_dtype(t)));
    free(got.p);
    return ok;
}

/* Names a storage as the case file does (s0, v2), into out. */
static const char *tc_storage_name(const tc_run *r, const wb_storage *s,
                                   char *out, size_t cap)
{
    for (int i = 0; i < r->c->nstorages; i++)
        if (r->storages[i] == s) {
            snprintf(out, cap, "s%d", i);
            return out;
        }
    for (int k = 0; k < r->c->nvalues; k++)
        if (r->made[k] == s) {
            snprintf(out, cap, "v%d", k);
            return out;
        }
    return "a storage of neither the case nor the graph";
}

static bool tc_check_where(const tc_run *r, const char *what,
                           const wb_tensor *t, const tc_where *want)
{
    const wb_storage *got = wb_tensor_storage(t);
    const wb_storage *s = want->kind == 's' ? r->storages[want->index]
                                            : r->made[want->index];
    char name[32];
    return tc_check(r, got == s, "%s storage (expected %c%d, got %s)", what,
                    want->kind, want->index,
                    tc_storage_name(r, got, name, sizeof name));
}

static bool tc_check_version(const tc_run *r, int i, int64_t want)
{
    int64_t got = (int64_t)(wb_tensor_version(r->inputs[i]) - r->before[i]);
    return tc_check(r, got == want, "input %d version delta (expected %lld, "
                    "got %lld)", i, (long long)want, (long long)got);
}

/* Names the input t is, or says it is none, into out. */
static const char *tc_object_name(const tc_run *r, const wb_tensor *t,
                                  char *out, size_t cap)
{
    for (int i = 0; i < r->c->ninputs; i++)
        if (r->inputs[i] == t) {
            snprintf(out, cap, "input %d", i);
            return out;
        }
    return "a tensor of its own";
}

/* The output an expectation names, or NULL (reported) when the spec
   returns fewer. */
static const wb_tensor *tc_output(const tc_run *r, const tc_expect *e)
{
    if (!tc_check(r, e->index < r->nouts, "output %d expected, but the spec "
                  "returns %d", e->index, r->nouts) ||
        !tc_check(r, !tc_out_is_number(r, e->index), "output %d is a "
                  "number; expected a tensor", e->index))
        return NULL;
    return r->outs[e->index].t;
}

static void tc_check_expect(const tc_run *r, const tc_expect *e)
{
    char what[64];
    const wb_tensor *t;
    switch (e->kind) {
    case TC_EXPECT_INPUT:
        snprintf(what, sizeof what, "input %d", e->index);
        tc_check_where(r, what, r->inputs[e->index], &e->where);
        tc_check_view(r, what, r->inputs[e->index], &e->view);
        tc_check_version(r, e->index, e->dversion);
        break;
    case TC_EXPECT_ELEMS:
        snprintf(what, sizeof what, "input %d", e->index);
        tc_check_elems(r, what, r->inputs[e->index], &e->bytes);
        break;
    case TC_EXPECT_STORAGE: {
        const wb_storage *s = r->storages[e->index];
        snprintf(what, sizeof what, "storage s%d bytes", e->index);
        tc_check_bytes(r, what, &e->bytes, wb_storage_data(s),
                       wb_storage_nbytes(s),
                       wb_dtype_size(r->c->storages[e->index].dtype));
        break;
    }
    case TC_EXPECT_IS_INPUT:
        if (!(t = tc_output(r, e)))
            break;
        tc_check(r, t == r->inputs[e->input], "output %d identity (expected "
                 "input %d, got %s)", e->index, e->input,
                 tc_object_name(r, t, what, sizeof what));
        break;
    case TC_EXPECT_OUTPUT:
        if (!(t = tc_output(r, e)))
            break;
        snprintf(what, sizeof what, "output %d", e->index);
        tc_check_where(r, what, t, &e->where);
        tc_check_view(r, what, t, &e->view);
        tc_check_elems(r, what, t, &e->bytes);
        break;
    case TC_EXPECT_GRAD:
        tc_check(r, wb_tensor_requires_grad(r->inputs[e->index]) ==
                        e->requires_grad,
                 "input %d: requires grad %d, PyTorch's %d", e->index,
                 (int)!e->requires_grad, (int)e->requires_grad);
        break;
    case TC_EXPECT_NUMBER: {
        if (!tc_check(r, e->index < r->nouts && tc_out_is_number(r, e->index),
                      "output %d: expected a number", e->index))
            break;
        wb_value got = r->outs[e->index];
        bool same = e->type == WB_SCALAR_INT     ? got.i == e->num.i
                    : e->type == WB_SCALAR_FLOAT ? got.f == e->num.f
                    : e->type == WB_SCALAR_BOOL  ? got.b == e->num.b
                                                 : got.p == NULL;
        char text[64];
        if (e->type == WB_SCALAR_INT)
            snprintf(text, sizeof text, "%lld", (long long)got.i);
        else if (e->type == WB_SCALAR_FLOAT)
            snprintf(text, sizeof text, "%a", got.f);
        else if (e->type == WB_SCALAR_BOOL)
            snprintf(text, sizeof text, "%d", (int)got.b);
        else
            snprintf(text, sizeof text, "%p", got.p);
        tc_check(r, same, "output %d: got %s, a number other than PyTorch's",
                 e->index, text);
        break;
    }
    }
}

/* An expectation whose output's version counter tc_check_shares checks. */
static bool tc_shares_checked(const tc_run *r, const tc_expect *e)
{
    return e->kind == TC_EXPECT_OUTPUT && e->index < r->nouts;
}

/* Bumps t's version counter once, its elements unchanged: copies its
   first element (a 0-d view, which shares t's counter) out and back, or,
   when t has no element, its empty self. */
static wb_status tc_bump(const wb_tensor *t)
{
    bool empty = wb_tensor_numel(t) == 0;
    wb_tensor *v = NULL, *tmp = NULL;
    wb_status st = wb_tensor_as_strided(t, empty ? wb_tensor_ndim(t) : 0,
                                        wb_tensor_sizes(t),
                                        wb_tensor_strides(t),
                                        wb_tensor_offset(t), &v);
    if (st == WB_OK)
        st = wb_tensor_new(wb_tensor_dtype(t), tc_cpu, wb_tensor_ndim(v),
                           wb_tensor_sizes(v), &tmp);
    if (st == WB_OK)
        st = wb_tensor_copy_(tmp, v);
    if (st == WB_OK)
        st = wb_tensor_copy_(v, tmp);
    wb_tensor_release(tmp);
    wb_tensor_release(v);
    return st;
}

/* Which outputs share which input's version counter: bumps each input
   object in turn and sees which outputs move.  An output that shares
   input N's counter moves with every input of N's counter group; one
   with a counter of its own moves with none.  One check an output. */
static void tc_check_shares(const tc_run *r)
{
    const tc_case *c = r->c;
    /* Per expectation: its output's version before a bump, and the first
       input whose bump it answered wrongly (-1: none yet). */
    uint64_t *was = tc_alloc(sizeof *was * (size_t)c->nexpects);
    int *wrong = tc_alloc(sizeof *wrong * (size_t)c->nexpects);
    bool *moved = tc_alloc(sizeof *moved * (size_t)c->nexpects);
    for (int x = 0; x < c->nexpects; x++)
        wrong[x] = -1;
    for (int i = 0; i < c->ninputs; i++) {
        if (tc_object(c, i) != i || c->inputs[i].kind != TC_IN_TENSOR)
            continue;  /* bumped as the input whose object it is, or none */
        for (int x = 0; x < c->nexpects; x++)
            if (tc_shares_checked(r, &c->expects[x]))
                was[x] = wb_tensor_version(r->outs[c->expects[x].index].t);
        if (tc_bump(r->inputs[i]) != WB_OK) {
            tc_fail(r, "input %d: its version cannot be bumped: %s", i,
                    wb_last_error());
            continue;
        }
        for (int x = 0; x < c->nexpects; x++) {
            const tc_expect *e = &c->expects[x];
            if (!tc_shares_checked(r, e) || wrong[x] >= 0)
                continue;
            bool shares = e->input >= 0 &&
                          c->inputs[e->input].group == c->inputs[i].group;
            moved[x] = wb_tensor_version(r->outs[e->index].t) != was[x];
            if (moved[x] != shares)
                wrong[x] = i;
        }
    }
    for (int x = 0; x < c->nexpects; x++) {
        const tc_expect *e = &c->expects[x];
        char want[32];
        if (!tc_shares_checked(r, e))
            continue;
        if (e->input < 0)
            snprintf(want, sizeof want, "its own");
        else
            snprintf(want, sizeof want, "input %d's", e->input);
        tc_check(r, wrong[x] < 0, "output %d version counter (expected %s, "
                 "got one that %s when input %d's was bumped)", e->index,
                 want, moved[x] ? "moved" : "did not move", wrong[x]);
    }
    free(was), free(wrong), free(moved);
}

/* A refused call left every input as it was: its storage, view, version
   and the bytes of every storage. */
static void tc_check_unchanged(const tc_run *r)
{
    const tc_case *c = r->c;
    char what[64];
    for (int i = 0; i < c->ninputs; i++) {
        const tc_where where = {'s', c->inputs[i].storage};
        if (c->inputs[i].kind != TC_IN_TENSOR)
            continue;
        snprintf(what, sizeof what, "input %d", i);
        tc_check_where(r, what, r->inputs[i], &where);
        tc_check_view(r, what, r->inputs[i], &c->inputs[i].view);
        tc_check_version(r, i, 0);
    }
    for (int s = 0; s < c->nstorages; s++) {
        snprintf(what, sizeof what, "storage s%d bytes", s);
        tc_check_bytes(r, what, &c->storages[s].bytes,
                       wb_storage_data(r->storages[s]),
                       wb_storage_nbytes(r->storages[s]),
                       wb_dtype_size(c->storages[s].dtype));
    }
}

/* ---- making the wrapper, calling it ---- */

/* The spec parsed and validated, into *out; false, with wrapbake's message
   in why, when wrapbake refuses it. */
static bool tc_spec(const tc_case *c, wb_spec **out, char *why)
{
    wb_spec *spec = NULL;
    if (wb_spec_parse(c->spec, &spec) == WB_OK &&
        wb_spec_validate(spec) == WB_OK) {
        *out = spec;
        return true;
    }
    snprintf(why, TC_MSG, "%s", wb_last_error());
    wb_spec_free(spec);
    return false;
}

static wb_status tc_wrapper(const tc_tier *tier, const wb_spec *spec,
                            void *ctx, wb_wrapper **out, char *why)
{
    wb_status st;
#ifdef DRIVER_AOT
    if (tier->tier == WB_TIER_AOT) {
        int g = wb_aot_lookup(wb_spec_name(spec));
        if (g < 0) {
            snprintf(why, TC_MSG, "no ahead-of-time code for spec '%s' "
                     "(generate it from `driver --specs`)", wb_spec_name(spec));
            return WB_ERR_INVALID;
        }
        st = wb_aot_new(g, tc_graph, ctx, out);
    } else
#endif
    {
        wb_options o = {.tier = tier->tier};
        st = wb_wrapper_new(spec, tc_graph, ctx, &o, out);
    }
    if (st != WB_OK)
        snprintf(why, TC_MSG, "%s", wb_last_error());
    return st;
}

/* What became of a call. */
typedef enum tc_outcome {
    TC_CALLED,   /* it succeeded */
    TC_REFUSED,  /* wrapbake refused the spec, the wrapper or the call */
    TC_BROKEN    /* the case or the graph stand-in failed (reported) */
} tc_outcome;

/* The spec's arity is the case's. */
static bool tc_arity_ok(const tc_run *r, const wb_spec *spec)
{
    const tc_case *c = r->c;
    if (wb_spec_num_inputs(spec) != c->ninputs)
        return tc_fail(r, "the spec takes %d inputs, the case has %d",
                       wb_spec_num_inputs(spec), c->ninputs);
    if (wb_spec_num_values(spec) != c->nvalues)
        return tc_fail(r, "the spec has %d graph values, the case %d",
                       wb_spec_num_values(spec), c->nvalues);
    return true;
}

/* Calls w once on the inputs, the outputs into r->outs. */
static tc_outcome tc_invoke(tc_run *r, wb_wrapper *w, const wb_spec *spec,
                            char *why)
{
    const tc_case *c = r->c;
    wb_arg *args = tc_alloc(sizeof *args * (size_t)c->ninputs);
    for (int i = 0; i < c->ninputs; i++) {
        const tc_input *in = &c->inputs[i];
        if (in->kind != TC_IN_NUMBER)
            args[i].t = r->inputs[i];  /* NULL for None */
        else if (in->type == WB_SCALAR_OPAQUE)
            args[i].p = in->text;
        else
            args[i] = in->num;
    }
    r->nouts = wb_spec_num_outputs(spec);
    r->nupdated = wb_spec_num_updated(spec);
    r->outs = tc_alloc(sizeof *r->outs * (size_t)r->nouts);
    wb_set_grad_enabled(!c->grad_off);
    wb_status st = wb_call(w, args, c->ninputs, r->outs, r->nouts);
    if (st != WB_OK)
        snprintf(why, TC_MSG, "%s", wb_last_error());
    bool mode = wb_grad_enabled();
    wb_set_grad_enabled(true);
    free(args);
    if (r->graph_error[0]) {
        tc_fail(r, "%s", r->graph_error);
        return TC_BROKEN;
    }
    /* A refused call may stop before the graph runs. */
    if (r->calls > 1 || (st == WB_OK && r->calls == 0)) {
        tc_fail(r, "the graph ran %d times (expected once)", r->calls);
        return TC_BROKEN;
    }
    tc_check(r, mode == !c->grad_off, "the call left grad mode %s, where "
             "the caller had it %s", mode ? "on" : "off",
             c->grad_off ? "off" : "on");
    return st == WB_OK ? TC_CALLED : TC_REFUSED;
}

/* Parses the spec, makes the wrapper and calls it once; why receives
   wrapbake's message when it refuses. */
static tc_outcome tc_call(tc_run *r, const tc_tier *tier, char *why)
{
    wb_spec *spec = NULL;
    wb_wrapper *w = NULL;
    tc_outcome out;
    if (!tc_spec(r->c, &spec, why))
        return TC_REFUSED;
    r->nargs = wb_spec_num_graph_args(spec);
    if (!tc_arity_ok(r, spec))
        out = TC_BROKEN;
    else if (tc_wrapper(tier, spec, r, &w, why) != WB_OK)
        out = TC_REFUSED;
    else
        out = tc_invoke(r, w, spec, why);
    wb_wrapper_free(w);
    wb_spec_free(spec);
    return out;
}

/* The case on tier in mode; a refusal is printed when `report` (the
   first tier's first mode). */
static void tc_run_mode(const tc_case *c, const tc_tier *tier, tc_mode mode,
                        bool report)
{
    tc_run r = {.c = c, .tier = tier->name, .mode = mode};
    char why[TC_MSG] = "";
    tc_outcome out = tc_setup(&r) ? tc_call(&r, tier, why) : TC_BROKEN;
    if (out == TC_BROKEN) {
        /* reported */
    } else if (c->refuse) {
        if (tc_check(&r, out == TC_REFUSED, "expected a refusal (%s), but "
                     "the call succeeded", c->refuse)) {
            if (report)
                printf("refused %s (%s): %s: wrapbake says: %s\n", c->name,
                       tier->name, c->refuse, why);
            tc_check_unchanged(&r);
        }
    } else if (tc_check(&r, out == TC_CALLED, "wrapbake refused the call: "
                        "%s", why)) {
        for (int x = 0; x < c->nexpects; x++)
            tc_check_expect(&r, &c->expects[x]);
        tc_check_shares(&r);
    }
    tc_release(&r);
    tc_check_leaks(&r);
}

/* A wrapper of the case's spec that is never called, or NULL: alive while
   each mode makes a wrapper of its own, it keeps the compiled code, which
   wrappers of equal specs share, so that a compiled tier compiles each
   spec once and not once a mode. */
static wb_wrapper *tc_keeper(const tc_case *c, const tc_tier *tier)
{
    char why[TC_MSG];
    wb_spec *spec;
    wb_wrapper *w = NULL;
    if (!tc_spec(c, &spec, why))
        return NULL;  /* each mode sees the refusal itself */
    tc_wrapper(tier, spec, NULL, &w, why);
    wb_spec_free(spec);
    return w;
}

/* The keepers of every case, made by several threads at once. */
typedef struct tc_keepers {
    const tc_suite *s;
    const tc_tier *tier;
    wb_wrapper **w;  /* one a case */
    atomic_int next;
} tc_keepers;

static void *tc_keep_some(void *arg)
{
    tc_keepers *k = arg;
    for (int i; (i = atomic_fetch_add(&k->next, 1)) < k->s->ncases;)
        k->w[i] = tc_keeper(&k->s->cases[i], k->tier);
    wb_thread_cache_flush();
    return NULL;
}

/* How many threads make the keepers of tier: one a processor on cc, where
   each costs a run of the system compiler; one on tcc, where libtcc
   compiles under a lock; none on interp and aot, which compile nothing. */
static int tc_keeper_threads(const tc_tier *tier)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (tier->tier == WB_TIER_TCC)
        return 1;
    if (tier->tier != WB_TIER_CC)
        return 0;
    return cpus < 1 ? 1 : cpus > TC_MAX_THREADS ? TC_MAX_THREADS : (int)cpus;
}

/* The keepers of every case on tier, in a malloc'ed array (NULL each when
   there is nothing to compile). */
static wb_wrapper **tc_keep_all(const tc_suite *s, const tc_tier *tier)
{
    tc_keepers k = {.s = s, .tier = tier};
    pthread_t th[TC_MAX_THREADS];
    int n = tc_keeper_threads(tier), started = 0;
    k.w = tc_alloc(sizeof *k.w * (size_t)s->ncases);
    atomic_init(&k.next, 0);
    if (n == 0)
        return k.w;
    while (started < n - 1 &&
           pthread_create(&th[started], NULL, tc_keep_some, &k) == 0)
        started++;
    tc_keep_some(&k);
    while (started > 0)
        pthread_join(th[--started], NULL);
    return k.w;
}

/* ---- main ---------------------------------------------------------------- */

/* The specs wrapbake accepts, for `wrapbake emit --aot`. */
static void tc_print_specs(const tc_suite *s)
{
    char why[TC_MSG];
    for (int i = 0; i < s->ncases; i++) {
        wb_spec *spec;
        if (tc_spec(&s->cases[i], &spec, why)) {
            printf("%s\n", s->cases[i].spec);
            wb_spec_free(spec);
        }
    }
}

static const tc_tier *tc_tier_named(const char *name)
{
    for (size_t i = 0; i < sizeof tc_tiers / sizeof *tc_tiers; i++)
        if (strcmp(name, tc_tiers[i].name) == 0)
            return &tc_tiers[i];
    return NULL;
}

static TC_PRINTF(1, 2) int tc_usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "driver: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: driver CASES [TIER...]  (tiers:");
    for (size_t i = 0; i < sizeof tc_tiers / sizeof *tc_tiers; i++)
        fprintf(stderr, " %s", tc_tiers[i].name);
    fprintf(stderr, "; default interp tcc cc)\n"
            "       driver --specs CASES\n");
    return 2;
}

/* Every case on each tier in each mode, then the summary. */
static void tc_run_all(const tc_suite *s, const tc_tier *const *tiers,
                       int ntiers)
{
    int refusals = 0;
    for (int i = 0; i < s->ncases; i++)
        refusals += s->cases[i].refuse != NULL;
    for (int t = 0; t < ntiers; t++) {
        wb_wrapper **keepers = tc_keep_all(s, tiers[t]);
        for (int i = 0; i < s->ncases; i++)
            for (int m = 0; m < TC_MODES; m++)
                tc_run_mode(&s->cases[i], tiers[t], (tc_mode)m,
                            t == 0 && m == 0);
        for (int i = 0; i < s->ncases; i++)
            wb_wrapper_free(keepers[i]);
        free(keepers);
    }
    printf("torch conformance: %d cases (%d refusals), %ld checks on",
           s->ncases, refusals, tc_checks);
    for (int t = 0; t < ntiers; t++)
        printf(" %s", tiers[t]->name);
    printf(", %ld failed\n", tc_failed);
}

int main(int argc, char **argv)
{
    static const char *const defaults[] = {"interp", "tcc", "cc"};
    bool specs = argc > 1 && strcmp(argv[1], "--specs") == 0;
    const char *const *names = argc > 2 ? (const char *const *)argv + 2
                                        : defaults;
    int ntiers = argc > 2 ? argc - 2 : 3;
    const tc_tier *tiers[8];
    tc_suite s = {0};
    if (specs && argc != 3)
        return tc_usage("--specs takes one case file");
    if (argc < 2 || (!specs && argv[1][0] == '-'))
        return tc_usage("expected a case file");
    if (!specs && ntiers > 8)
        return tc_usage("more than 8 tiers");
    for (int t = 0; !specs && t < ntiers; t++)
        if (!(tiers[t] = tc_tier_named(names[t])))
            return tc_usage(strcmp(names[t], "aot") == 0
                                ? "the tier aot needs a build with "
                                  "-DDRIVER_AOT and the generated code"
                                : "unknown tier '%s'", names[t]);
    if (!tc_read(argv[1 + specs], &s)) {
        tc_suite_free(&s);
        return 2;
    }
    if (specs)
        tc_print_specs(&s);
    else
        tc_run_all(&s, tiers, ntiers);
    tc_suite_free(&s);
    wb_thread_cache_flush();
    return tc_failed ? 1 : 0;
}
