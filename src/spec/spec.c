/*
 * spec.c -- the spec builder, validation and derived facts.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"
#include "../core/core.h"

/* ---- names ---- */

static const char *const wb_mutation_names[] = {
    [WB_MUT_NONE] = "none",
    [WB_MUT_DATA] = "data",
    [WB_MUT_METADATA] = "metadata",
    [WB_MUT_DATA_METADATA] = "data+metadata",
    [WB_MUT_STORAGE] = "storage",
    [WB_MUT_RESIZE] = "resize",
    [WB_MUT_IN_GRAPH] = "in-graph",
};

static const char *const wb_alias_names[] = {
    [WB_OUT_NON_ALIAS] = "non-alias",
    [WB_OUT_UNSAFE_VIEW_ALIAS] = "unsafe-view-alias",
    [WB_OUT_CUSTOM_FUNCTION_VIEW] = "custom-function-view",
    [WB_OUT_IS_INPUT] = "is-input",
    [WB_OUT_ALIAS_OF_INPUT] = "alias-of-input",
    [WB_OUT_ALIAS_OF_INTERMEDIATE] = "alias-of-intermediate",
    [WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT] =
        "alias-of-intermediate-save-as-output",
    [WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT] =
        "alias-of-intermediate-base-is-user-output",
};

#define WB_COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

const char *wb_mutation_name(wb_mutation m)
{
    return (unsigned)m < (unsigned)WB_COUNT(wb_mutation_names)
               ? wb_mutation_names[m] : "?";
}

const char *wb_alias_name(wb_alias a)
{
    return (unsigned)a < (unsigned)WB_COUNT(wb_alias_names)
               ? wb_alias_names[a] : "?";
}

const char *wb_scalar_c_type(wb_scalar_type t)
{
    switch (t) {
    case WB_SCALAR_INT: return "int64_t";
    case WB_SCALAR_FLOAT: return "double";
    case WB_SCALAR_BOOL: return "bool";
    case WB_SCALAR_OPAQUE: return "const void *";
    case WB_SCALAR_NONE: return "None";
    }
    return NULL;
}

const char *wb_direction_name(wb_direction d)
{
    switch (d) {
    case WB_DIR_IN: return "IN";
    case WB_DIR_INOUT: return "INOUT";
    case WB_DIR_OUT: return "OUT";
    case WB_DIR_SCALAR: return "SCALAR";
    }
    return "?";
}

/* Writes at most 64 bytes of name into buf, with every byte for which
   escape() holds written as \xHH.  Inline, so that each caller's test
   is inlined into the loop: the parser names every item it reads. */
static inline void wb_spec_escape_name(const char *name, char *buf,
                                       size_t n,
                                       bool (*escape)(const unsigned char *p))
{
    size_t o = 0;
    if (n == 0)
        return;
    for (const unsigned char *p = (const unsigned char *)(name ? name : "");
         *p && o + 5 < n; p++) {
        if (p - (const unsigned char *)name >= 64) {
            o += (size_t)snprintf(buf + o, n - o, "...");
            break;
        }
        if (escape(p))
            o += (size_t)snprintf(buf + o, n - o, "\\x%02x", *p);
        else
            buf[o++] = (char)*p;
    }
    buf[o < n ? o : n - 1] = '\0';
}

/* In generated code: nothing that could end a comment, splice a line
   (a backslash, or a trigraph's '?') or be anything but printable ASCII. */
static bool wb_spec_escape_for_code(const unsigned char *p)
{
    return *p < 0x20 || *p > 0x7e || *p == '*' || *p == '/' || *p == '\\' ||
           *p == '?';
}

/* In messages: readable text, but only printable ASCII, an unambiguous
   backslash, and no comment delimiters, so a message can be pasted into a
   comment as it is. */
static bool wb_spec_escape_for_text(const unsigned char *p)
{
    return *p < 0x20 || *p > 0x7e || *p == '\\' ||
           (*p == '*' && p[1] == '/') || (*p == '/' && p[1] == '*');
}

void wb_spec_safe_name(const char *name, char *buf, size_t n)
{
    wb_spec_escape_name(name, buf, n, wb_spec_escape_for_code);
}

bool wb_spec_mut_on_device(const wb_spec *s, const wb_spec_mut *m)
{
    /* A synthetic base is on its first member's device. */
    int base = wb_spec_synth(s, m->input);
    int input = base >= 0 ? s->group_first[base] : m->input;
    return wb_mutation_copies(m->kind) &&
           s->inputs[input].device.device_type != kDLCPU;
}

const char *wb_spec_print_name(const char *name, char *buf, size_t n)
{
    wb_spec_escape_name(name, buf, n, wb_spec_escape_for_text);
    return buf;
}

/* ---- builder ---- */

static wb_status wb_spec_dup_name(const char *name, const char *dflt,
                                  char **out)
{
    const char *s = name ? name : dflt;
    size_t n = strlen(s);
    if (n > WB_MAX_NAME)
        return wb_rt_fail(WB_ERR_SPEC, "name of %zu bytes is longer than "
                          "WB_MAX_NAME (%d)", n, WB_MAX_NAME);
    if (!(*out = malloc(n + 1)))
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a name");
    memcpy(*out, s, n + 1);
    return WB_OK;
}

wb_status wb_spec_new(const char *name, wb_spec **out)
{
    wb_status st;
    if (!out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_new: out is NULL");
    wb_spec *s = calloc(1, sizeof *s);
    if (!s)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a spec");
    if ((st = wb_spec_dup_name(name, "graph", &s->name)) != WB_OK) {
        free(s);
        return st;
    }
    s->grad_at_end = -1;
    *out = s;
    return WB_OK;
}

/* Frees what validation derived and marks s not valid. */
static void wb_spec_drop_derived(wb_spec *s)
{
    free(s->tensor_inputs);
    free(s->declared);
    free(s->bumped);
    free(s->hidden);
    free(s->arg_at);
    free(s->dups);
    free(s->detached);
    free(s->muts);
    free(s->mut_at);
    free(s->reshaped);
    free(s->outs);
    free(s->dirs);
    free(s->signature);
    free(s->group_of);
    free(s->group_first);
    free(s->meta_members);
    s->group_of = s->group_first = s->meta_members = NULL;
    s->ngroups = s->nmeta_members = 0;
    s->tensor_inputs = s->declared = s->bumped = s->hidden = NULL;
    s->arg_at = s->dups = s->mut_at = NULL;
    s->detached = NULL;
    s->muts = NULL;
    s->reshaped = NULL;
    s->outs = NULL;
    s->dirs = NULL;
    s->signature = NULL;
    s->valid = false;
}

/* What every change to s does first: only a valid spec holds anything
   derived (a validation that fails drops what it made), so building a
   spec item by item frees nothing. */
static void wb_spec_forget(wb_spec *s)
{
    if (s->valid)
        wb_spec_drop_derived(s);
}

void wb_spec_free(wb_spec *s)
{
    if (!s)
        return;
    wb_spec_forget(s);
    for (int i = 0; i < s->ninputs; i++)
        free(s->inputs[i].name);
    for (int i = 0; i < s->noutputs; i++)
        free(s->outputs[i].name);
    free(s->inputs);
    free(s->outputs);
    free(s->name);
    free(s);
}

/* Grows an item array by one; the caller fills the new last slot. */
static wb_status wb_spec_grow(void **items, int *cap, int n, size_t size,
                              int limit, const char *what)
{
    if (n >= limit)
        return wb_rt_fail(WB_ERR_SPEC, "more than %d %s", limit, what);
    if (n < *cap)
        return WB_OK;
    int ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*items, (size_t)ncap * size);
    if (!p)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for %s", what);
    *items = p;
    *cap = ncap;
    return WB_OK;
}

static wb_status wb_spec_add_input(wb_spec *s, const char *name,
                                   wb_input in, int *index_out)
{
    wb_status st = wb_spec_grow((void **)&s->inputs, &s->cap_inputs,
                                s->ninputs, sizeof *s->inputs, WB_MAX_INPUTS,
                                "inputs");
    if (st != WB_OK || (st = wb_spec_dup_name(name, "", &in.name)) != WB_OK)
        return st;
    wb_spec_forget(s);
    s->inputs[s->ninputs] = in;
    if (index_out)
        *index_out = s->ninputs;
    s->ninputs++;
    return WB_OK;
}

wb_status wb_spec_add_tensor(wb_spec *s, const char *name,
                             wb_mutation mutation, unsigned flags,
                             int *index_out)
{
    wb_input in = {.is_tensor = true, .mutation = mutation, .flags = flags,
                   .ndim = -1, .dup_of = -1, .alias_of = -1};
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_add_tensor: spec is NULL");
    if ((unsigned)mutation > WB_MUT_IN_GRAPH)
        return wb_rt_fail(WB_ERR_SPEC, "input %d: unknown mutation kind %d",
                          s->ninputs, (int)mutation);
    if (flags & ~(WB_INPUT_DETACH | WB_INPUT_HIDDEN | WB_INPUT_OUT |
                  WB_INPUT_OPTIONAL))
        return wb_rt_fail(WB_ERR_SPEC, "input %d: unknown flags 0x%x",
                          s->ninputs, flags);
    return wb_spec_add_input(s, name, in, index_out);
}

wb_status wb_spec_add_scalar(wb_spec *s, const char *name,
                             wb_scalar_type type, int *index_out)
{
    wb_input in = {.is_tensor = false, .scalar = type, .ndim = -1,
                   .dup_of = -1, .alias_of = -1};
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_add_scalar: spec is NULL");
    if (type < WB_SCALAR_INT || type > WB_SCALAR_OPAQUE)
        return wb_rt_fail(WB_ERR_SPEC, "input %d: unknown scalar type %d",
                          s->ninputs, (int)type);
    return wb_spec_add_input(s, name, in, index_out);
}

wb_status wb_spec_declare_input(wb_spec *s, int index, DLDataType dtype,
                                int ndim)
{
    char dt[32];
    if (!s || index < 0 || index >= s->ninputs)
        return wb_rt_fail(WB_ERR_INVALID,
                          "wb_spec_declare_input: no input %d", index);
    if (!s->inputs[index].is_tensor)
        return wb_rt_fail(WB_ERR_SPEC, "input %d: a scalar has no dtype or "
                          "ndim to declare", index);
    if (dtype.bits != 0 && wb_dtype_size(dtype) == 0)
        return wb_rt_fail(WB_ERR_SPEC, "input %d: dtype %s is not "
                          "byte-addressable", index,
                          wb_rt_dtype_str(dtype, dt, sizeof dt));
    if (ndim < -1 || ndim > WB_MAX_DIMS)
        return wb_rt_fail(WB_ERR_SPEC, "input %d: ndim %d is outside -1..%d",
                          index, ndim, WB_MAX_DIMS);
    wb_spec_forget(s);
    s->inputs[index].dtype = dtype;
    s->inputs[index].ndim = ndim;
    return WB_OK;
}

wb_status wb_spec_declare_device(wb_spec *s, int index, DLDevice device)
{
    if (!s || index < 0 || index >= s->ninputs)
        return wb_rt_fail(WB_ERR_INVALID,
                          "wb_spec_declare_device: no input %d", index);
    if (!s->inputs[index].is_tensor)
        return wb_rt_fail(WB_ERR_SPEC, "input %d: a scalar has no device to "
                          "declare", index);
    if ((device.device_type != kDLCPU && device.device_type != kDLCUDA &&
         device.device_type != 0) || device.device_id < 0 ||
        device.device_id > WB_MAX_DEVICE_ID ||
        (device.device_type == kDLCPU && device.device_id != 0))
        return wb_rt_fail(WB_ERR_SPEC, "input %d: device %d:%d is neither "
                          "cpu nor cuda:N with N at most %d", index,
                          (int)device.device_type, (int)device.device_id,
                          WB_MAX_DEVICE_ID);
    wb_spec_forget(s);
    s->inputs[index].device = device;
    return WB_OK;
}

/* Appends output o, its name copied from name. */
static wb_status wb_spec_add_output_item(wb_spec *s, const char *name,
                                         wb_output o, int *index_out)
{
    wb_status st = wb_spec_grow((void **)&s->outputs, &s->cap_outputs,
                                s->noutputs, sizeof *s->outputs,
                                WB_MAX_OUTPUTS, "outputs");
    if (st != WB_OK || (st = wb_spec_dup_name(name, "", &o.name)) != WB_OK)
        return st;
    wb_spec_forget(s);
    s->outputs[s->noutputs] = o;
    if (index_out)
        *index_out = s->noutputs;
    s->noutputs++;
    return WB_OK;
}

wb_status wb_spec_add_output(wb_spec *s, const char *name, wb_alias kind,
                             int base, bool requires_grad,
                             uint64_t dynamic_dims, int *index_out)
{
    wb_output o = {.kind = kind, .base = base, .requires_grad = requires_grad,
                   .dyn = dynamic_dims};
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_add_output: spec is NULL");
    if ((unsigned)kind > WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT)
        return wb_rt_fail(WB_ERR_SPEC, "output %d: unknown alias kind %d",
                          s->noutputs, (int)kind);
    if (dynamic_dims >> WB_MAX_DIMS)
        return wb_rt_fail(WB_ERR_SPEC, "output %d: dynamic dims 0x%llx name "
                          "a dim past %d", s->noutputs,
                          (unsigned long long)dynamic_dims, WB_MAX_DIMS - 1);
    return wb_spec_add_output_item(s, name, o, index_out);
}

wb_status wb_spec_add_scalar_output(wb_spec *s, const char *name,
                                    wb_scalar_type type, int *index_out)
{
    wb_output o = {.scalar = type, .kind = WB_OUT_NON_ALIAS, .base = -1};
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_add_scalar_output: spec "
                          "is NULL");
    if (type != WB_SCALAR_INT && type != WB_SCALAR_FLOAT &&
        type != WB_SCALAR_BOOL && type != WB_SCALAR_NONE)
        return wb_rt_fail(WB_ERR_SPEC, "output %d: scalar type %d is not "
                          "an output's (int, float, bool or None)",
                          s->noutputs, (int)type);
    return wb_spec_add_output_item(s, name, o, index_out);
}

/* Whether input `input` of s may be tied to `of`, an earlier input (-1
   unties it), by fn; `what` says what `of` is to it. */
static wb_status wb_spec_check_tie(const wb_spec *s, const char *fn,
                                   int input, int of, const char *what)
{
    if (!s || input < 0 || input >= s->ninputs)
        return wb_rt_fail(WB_ERR_INVALID, "%s: no input %d", fn, input);
    if (of < -1 || of >= input)
        return wb_rt_fail(WB_ERR_SPEC, "input %d: %s, %d, is not an earlier "
                          "one (0..%d, or -1 for none)", input, what, of,
                          input - 1);
    return WB_OK;
}

wb_status wb_spec_set_duplicate(wb_spec *s, int input, int of)
{
    wb_status st = wb_spec_check_tie(s, "wb_spec_set_duplicate", input, of,
                                     "the input it duplicates");
    if (st != WB_OK)
        return st;
    wb_spec_forget(s);
    s->inputs[input].dup_of = of;
    return WB_OK;
}

wb_status wb_spec_set_synthetic_base(wb_spec *s, int input, int of)
{
    wb_status st = wb_spec_check_tie(s, "wb_spec_set_synthetic_base", input,
                                     of, "the input whose storage it lies on");
    if (st != WB_OK)
        return st;
    wb_spec_forget(s);
    s->inputs[input].alias_of = of;
    return WB_OK;
}

wb_status wb_spec_set_rng(wb_spec *s, wb_rng_get_fn get, wb_rng_set_fn set,
                          void *ud)
{
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_set_rng: spec is NULL");
    if (!get != !set)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_set_rng: get and set go "
                          "together (both, or both NULL)");
    wb_spec_forget(s);
    s->rng = get != NULL;
    s->rng_get = get;
    s->rng_set = set;
    s->rng_ud = ud;
    return WB_OK;
}

wb_status wb_spec_set_effect_tokens(wb_spec *s, int count)
{
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_set_effect_tokens: "
                          "spec is NULL");
    if (count < 0 || count > WB_MAX_TOKENS)
        return wb_rt_fail(WB_ERR_SPEC, "%d effect tokens is outside 0..%d",
                          count, WB_MAX_TOKENS);
    wb_spec_forget(s);
    s->ntokens = count;
    return WB_OK;
}

wb_status wb_spec_set_intermediate_bases(wb_spec *s, int count)
{
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_set_intermediate_bases: "
                          "spec is NULL");
    if (count < 0 || count > WB_MAX_BASES)
        return wb_rt_fail(WB_ERR_SPEC, "%d intermediate bases is outside "
                          "0..%d", count, WB_MAX_BASES);
    wb_spec_forget(s);
    s->nbases = count;
    return WB_OK;
}

#define WB_SPEC_SETTER(fn, type, field)                                     \
    wb_status fn(wb_spec *s, type v)                                        \
    {                                                                       \
        if (!s)                                                             \
            return wb_rt_fail(WB_ERR_INVALID, #fn ": spec is NULL");        \
        wb_spec_forget(s);                                                  \
        s->field = v;                                                       \
        return WB_OK;                                                       \
    }

WB_SPEC_SETTER(wb_spec_set_training, bool, training)
WB_SPEC_SETTER(wb_spec_set_keep_input_mutations, bool, keep_input_mutations)

wb_status wb_spec_set_grad_mode_at_end(wb_spec *s, int mode)
{
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_set_grad_mode_at_end: "
                          "spec is NULL");
    if (mode < -1 || mode > 1)
        return wb_rt_fail(WB_ERR_SPEC, "grad mode at end %d is not -1, 0 "
                          "or 1", mode);
    wb_spec_forget(s);
    s->grad_at_end = mode;
    return WB_OK;
}

wb_status wb_spec_set_before_call(wb_spec *s, wb_hook_fn fn, void *ud)
{
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_set_before_call: "
                          "spec is NULL");
    wb_spec_forget(s);
    s->before_call = fn;
    s->before_call_ud = ud;
    return WB_OK;
}

wb_status wb_spec_set_first_call(wb_spec *s, wb_hook_fn fn, void *ud)
{
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_set_first_call: "
                          "spec is NULL");
    wb_spec_forget(s);
    s->first_call = fn;
    s->first_call_ud = ud;
    return WB_OK;
}

wb_status wb_spec_add_guard(wb_spec *s, wb_hook_fn enter, wb_leave_fn leave,
                            void *ud)
{
    if (!s || !enter || !leave)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_add_guard: NULL spec, "
                          "enter or leave");
    if (s->nguards >= WB_MAX_GUARDS)
        return wb_rt_fail(WB_ERR_SPEC, "more than %d guards", WB_MAX_GUARDS);
    wb_spec_forget(s);
    s->guards[s->nguards++] = (wb_guard){enter, leave, ud};
    return WB_OK;
}

wb_status wb_spec_clone(const wb_spec *src, wb_spec **out)
{
    wb_spec *s;
    wb_status st;
    if (!src || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_clone: NULL argument");
    if ((st = wb_spec_new(src->name, &s)) != WB_OK)
        return st;
    for (int i = 0; i < src->ninputs && st == WB_OK; i++) {
        wb_input in = src->inputs[i];
        st = wb_spec_add_input(s, in.name, in, NULL);
    }
    for (int i = 0; i < src->noutputs && st == WB_OK; i++)
        st = wb_spec_add_output_item(s, src->outputs[i].name,
                                     src->outputs[i], NULL);
    if (st != WB_OK) {
        wb_spec_free(s);
        return st;
    }
    s->nbases = src->nbases;
    s->ntokens = src->ntokens;
    s->rng = src->rng;
    s->rng_get = src->rng_get;
    s->rng_set = src->rng_set;
    s->rng_ud = src->rng_ud;
    s->training = src->training;
    s->keep_input_mutations = src->keep_input_mutations;
    s->grad_at_end = src->grad_at_end;
    s->before_call = src->before_call;
    s->before_call_ud = src->before_call_ud;
    s->first_call = src->first_call;
    s->first_call_ud = src->first_call_ud;
    memcpy(s->guards, src->guards, sizeof s->guards);
    s->nguards = src->nguards;
    *out = s;
    return WB_OK;
}

/* ---- validation ---- */

/* Messages name the spec and the item: "spec 'f': input 2 'x': ...". */
#define WB_SPEC_ERR(s, ...) wb_spec_errorf(s, __VA_ARGS__)

static wb_status wb_spec_errorf(const wb_spec *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static wb_status wb_spec_errorf(const wb_spec *s, const char *fmt, ...)
{
    char name[300], msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wb_spec_print_name(s->name, name, sizeof name);
    return wb_rt_fail(WB_ERR_SPEC, "spec '%s': %s", name, msg);
}

/* The same for input or output i: "spec 'f': input 2 'x': ...", the
   item's name printed only once there is a message to give. */
static wb_status wb_spec_item_errorf(const wb_spec *s, const char *item,
                                     int i, const char *name,
                                     const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static wb_status wb_spec_item_errorf(const wb_spec *s, const char *item,
                                     int i, const char *name,
                                     const char *fmt, ...)
{
    char nm[300], msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wb_spec_print_name(name, nm, sizeof nm);
    return wb_spec_errorf(s, "%s %d '%s': %s", item, i, nm, msg);
}
#define WB_INPUT_ERR(s, i, ...)                                             \
    wb_spec_item_errorf(s, "input", i, (s)->inputs[i].name, __VA_ARGS__)
#define WB_OUTPUT_ERR(s, k, ...)                                            \
    wb_spec_item_errorf(s, "output", k, (s)->outputs[k].name, __VA_ARGS__)

static wb_status wb_spec_check_input(const wb_spec *s, int i)
{
    const wb_input *in = &s->inputs[i];
    if (in->dup_of >= 0) {
        const wb_input *of = &s->inputs[in->dup_of];
        if (!in->is_tensor || !of->is_tensor)
            return WB_INPUT_ERR(s, i, "duplicates input %d, but only tensor "
                                "inputs are deduplicated", in->dup_of);
        if (of->dup_of >= 0)
            return WB_INPUT_ERR(s, i, "duplicates input %d, itself a "
                                "duplicate of input %d; expected the kept "
                                "one", in->dup_of, of->dup_of);
        if ((in->flags | of->flags) & WB_INPUT_OPTIONAL)
            return WB_INPUT_ERR(s, i, "duplicates input %d, but an optional "
                                "tensor may be NULL", in->dup_of);
        if (in->mutation != WB_MUT_NONE || in->flags)
            return WB_INPUT_ERR(s, i, "a duplicate of input %d has no "
                                "mutation or flag of its own; give them to "
                                "input %d", in->dup_of, in->dup_of);
    }
    if (in->alias_of >= 0) {
        const wb_input *of = &s->inputs[in->alias_of];
        if (!in->is_tensor || !of->is_tensor)
            return WB_INPUT_ERR(s, i, "lies on the storage of input %d, but "
                                "only tensors make a synthetic base",
                                in->alias_of);
        if ((in->flags | of->flags) & WB_INPUT_OPTIONAL)
            return WB_INPUT_ERR(s, i, "lies on the storage of input %d, but "
                                "an optional tensor may be NULL",
                                in->alias_of);
        if (in->dup_of >= 0 || of->dup_of >= 0)
            return WB_INPUT_ERR(s, i, "lies on the storage of input %d, but "
                                "a duplicate is its kept input's tensor; "
                                "merge the kept one", in->alias_of);
    }
    if (!in->is_tensor)
        return WB_OK;
    if ((in->flags & WB_INPUT_HIDDEN) && in->mutation != WB_MUT_IN_GRAPH &&
        in->mutation != WB_MUT_DATA)
        return WB_INPUT_ERR(s, i, "hidden from autograd, but its mutation is "
                            "%s, not data or in-graph",
                            wb_mutation_name(in->mutation));
    if (in->mutation == WB_MUT_IN_GRAPH && !s->keep_input_mutations)
        return WB_INPUT_ERR(s, i, "an in-graph mutation needs "
                            "keep-input-mutations on");
    if ((in->flags & WB_INPUT_DETACH) && !s->training)
        return WB_INPUT_ERR(s, i, "detached before the call, but the spec is "
                            "for inference");
    if ((in->flags & WB_INPUT_OUT) && in->mutation == WB_MUT_NONE)
        return WB_INPUT_ERR(s, i, "an out argument must be mutated");
    if ((in->flags & WB_INPUT_OPTIONAL) &&
        (in->mutation != WB_MUT_NONE || (in->flags & WB_INPUT_DETACH) ||
         in->dtype.bits || in->ndim >= 0 || in->device.device_type))
        return WB_INPUT_ERR(s, i, "an optional tensor may be NULL, so it can "
                            "be neither mutated, detached nor declared");
    return WB_OK;
}

static bool wb_alias_is_plain(wb_alias k)
{
    return k == WB_OUT_NON_ALIAS || k == WB_OUT_UNSAFE_VIEW_ALIAS ||
           k == WB_OUT_CUSTOM_FUNCTION_VIEW;
}

static bool wb_alias_of_intermediate(wb_alias k)
{
    return k == WB_OUT_ALIAS_OF_INTERMEDIATE ||
           k == WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT;
}

static wb_status wb_spec_check_output(const wb_spec *s, int k)
{
    const wb_output *o = &s->outputs[k];
    const char *kind = wb_alias_name(o->kind);
    if (wb_alias_is_plain(o->kind)) {
        if (o->base != -1)
            return WB_OUTPUT_ERR(s, k, "%s output has base %d; expected -1",
                                 kind, o->base);
        return WB_OK;
    }
    if (o->kind == WB_OUT_IS_INPUT || o->kind == WB_OUT_ALIAS_OF_INPUT) {
        if (o->base < 0 || o->base >= s->ninputs)
            return WB_OUTPUT_ERR(s, k, "%s base %d is out of range; expected "
                                 "an input 0..%d", kind, o->base,
                                 s->ninputs - 1);
        if (!s->inputs[o->base].is_tensor)
            return WB_OUTPUT_ERR(s, k, "%s base %d is a scalar; expected a "
                                 "tensor input", kind, o->base);
        if (s->inputs[o->base].flags & WB_INPUT_OPTIONAL)
            return WB_OUTPUT_ERR(s, k, "%s base %d is an optional tensor, "
                                 "which may be NULL", kind, o->base);
        if (s->inputs[o->base].dup_of >= 0)
            return WB_OUTPUT_ERR(s, k, "%s base %d duplicates input %d; "
                                 "expected the kept input", kind, o->base,
                                 s->inputs[o->base].dup_of);
        return WB_OK;
    }
    if (wb_alias_of_intermediate(o->kind)) {
        if (o->base < 0 || o->base >= s->nbases)
            return WB_OUTPUT_ERR(s, k, "%s base %d is out of range; the spec "
                                 "has %d intermediate base%s", kind, o->base,
                                 s->nbases, WB_PLURAL(s->nbases));
        return WB_OK;
    }
    /* alias of an intermediate whose base is a user output */
    if (o->base < 0 || o->base >= s->noutputs || o->base == k)
        return WB_OUTPUT_ERR(s, k, "%s base %d is out of range; expected "
                             "another output 0..%d", kind, o->base,
                             s->noutputs - 1);
    if (!wb_alias_is_plain(s->outputs[o->base].kind))
        return WB_OUTPUT_ERR(s, k, "%s base %d is itself %s; expected a "
                             "non-aliased output", kind, o->base,
                             wb_alias_name(s->outputs[o->base].kind));
    if (s->outputs[o->base].scalar)
        return WB_OUTPUT_ERR(s, k, "%s base %d is a number, not a tensor",
                             kind, o->base);
    return WB_OK;
}

static wb_status wb_spec_check(const wb_spec *s)
{
    wb_status st;
    for (int i = 0; i < s->ninputs; i++)
        if ((st = wb_spec_check_input(s, i)) != WB_OK)
            return st;
    for (int k = 0; k < s->noutputs; k++)
        if ((st = wb_spec_check_output(s, k)) != WB_OK)
            return st;
    /* Output k's base is below nbases (wb_spec_check_output). */
    bool used[s->nbases + 1];
    memset(used, 0, sizeof used);
    for (int k = 0; k < s->noutputs; k++)
        if (wb_alias_of_intermediate(s->outputs[k].kind))
            used[s->outputs[k].base] = true;
    for (int b = 0; b < s->nbases; b++)
        if (!used[b])
            return WB_SPEC_ERR(s, "intermediate base %d is not the base of "
                               "any output; %d base%s declared, more than "
                               "the outputs reference", b, s->nbases,
                               WB_PLURAL(s->nbases));
    return WB_OK;
}

static wb_status wb_spec_derive_signature(wb_spec *s)
{
    size_t n = 3;
    for (int i = 0; i < s->ninputs; i++)
        if (s->inputs[i].is_tensor)
            n += strlen(s->inputs[i].name) + 10;
    if (!(s->signature = malloc(n)))
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for a signature");
    /* Pieces copied one by one: sprintf cost a third of validating a
       spec of 20 tensors. */
    char *p = s->signature;
    *p++ = '(';
    for (int i = 0, first = 1; i < s->ninputs; i++) {
        if (!s->inputs[i].is_tensor)
            continue;
        if (!first)
            p = stpcpy(p, ", ");
        p = stpcpy(p, wb_direction_name(s->dirs[i]));
        *p++ = ' ';
        p = stpcpy(p, s->inputs[i].name);
        first = 0;
    }
    strcpy(p, ")");
    return WB_OK;
}

/* Allocates every derived list at its largest size (n + 1 so that no
   allocation is of zero bytes). */
static wb_status wb_spec_alloc_derived(wb_spec *s)
{
    size_t ni = (size_t)s->ninputs + 1, no = (size_t)s->noutputs + 1;
    s->tensor_inputs = malloc(ni * sizeof(int));
    s->declared = malloc(ni * sizeof(int));
    s->bumped = malloc(ni * sizeof(int));
    s->hidden = malloc(ni * sizeof(int));
    s->arg_at = malloc(ni * sizeof(int));
    s->dups = malloc(ni * sizeof(int));
    s->detached = malloc(ni * sizeof(int));
    s->muts = malloc(ni * sizeof *s->muts);
    s->mut_at = malloc(ni * sizeof(int));
    s->reshaped = malloc(ni * sizeof(int));
    s->dirs = malloc(ni * sizeof *s->dirs);
    s->outs = malloc(no * sizeof *s->outs);
    s->group_of = malloc(ni * sizeof(int));
    s->group_first = malloc(ni * sizeof(int));
    s->meta_members = malloc(ni * sizeof(int));
    if (!s->tensor_inputs || !s->declared || !s->bumped || !s->hidden ||
        !s->arg_at || !s->dups || !s->detached || !s->muts || !s->mut_at ||
        !s->reshaped || !s->dirs || !s->outs || !s->group_of ||
        !s->group_first || !s->meta_members)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory validating a spec");
    return WB_OK;
}

static wb_direction wb_input_direction(const wb_input *in)
{
    if (!in->is_tensor)
        return WB_DIR_SCALAR;
    if (in->mutation == WB_MUT_NONE)
        return WB_DIR_IN;
    return (in->flags & WB_INPUT_OUT) ? WB_DIR_OUT : WB_DIR_INOUT;
}

/* Numbers the synthetic bases in order of their first members: an input
   that lies on an earlier one's storage is in the group of the first
   input of that chain. */
static void wb_spec_derive_groups(wb_spec *s)
{
    int root[s->ninputs + 1], group[s->ninputs + 1];
    s->ngroups = s->nmeta_members = 0;
    for (int i = 0; i < s->ninputs; i++) {
        int of = s->inputs[i].alias_of;
        root[i] = of >= 0 ? root[of] : i;
        group[i] = -1;
    }
    for (int i = 0; i < s->ninputs; i++)
        if (s->inputs[i].alias_of >= 0)
            group[root[i]] = 0;  /* a first member, numbered below */
    for (int i = 0; i < s->ninputs; i++)
        if (group[i] == 0 && root[i] == i) {
            group[i] = s->ngroups;
            s->group_first[s->ngroups++] = i;
        }
    for (int i = 0; i < s->ninputs; i++) {
        const wb_input *in = &s->inputs[i];
        s->group_of[i] = group[root[i]];
        if (s->group_of[i] >= 0 && (in->mutation == WB_MUT_METADATA ||
                                    in->mutation == WB_MUT_DATA_METADATA))
            s->meta_members[s->nmeta_members++] = i;
    }
}

/* What a synthetic base's members may be: mutated in data (in the graph
   or after it) or view, or not at all, and no more (the base takes the
   data, each member its own view); one of them is mutated in data, which
   the base exists for.  The base's data mutation is in the graph for all
   its members or for none, as AOTAutograd decides it for the base
   (_check_if_mutation_can_be_in_graph).  Only a member returned itself
   may require grad. */
static wb_status wb_spec_check_groups(const wb_spec *s)
{
    int data[s->ngroups + 1], in_graph[s->ngroups + 1];
    memset(data, -1, sizeof data);
    memset(in_graph, -1, sizeof in_graph);
    for (int i = 0; i < s->ninputs; i++) {
        const wb_input *in = &s->inputs[i];
        int g = s->group_of[i];
        if (g < 0)
            continue;
        if (in->mutation != WB_MUT_NONE && in->mutation != WB_MUT_DATA &&
            in->mutation != WB_MUT_METADATA &&
            in->mutation != WB_MUT_DATA_METADATA &&
            in->mutation != WB_MUT_IN_GRAPH)
            return WB_INPUT_ERR(s, i, "a member of a synthetic base has a "
                                "data, metadata or in-graph mutation, or "
                                "none; not %s",
                                wb_mutation_name(in->mutation));
        if (in->flags & WB_INPUT_DETACH)
            return WB_INPUT_ERR(s, i, "a member of a synthetic base is not "
                                "detached");
        if (in->mutation == WB_MUT_IN_GRAPH && data[g] >= 0 && !in_graph[g])
            return WB_INPUT_ERR(s, i, "its synthetic base's data mutation "
                                "is in the graph, where input %d's is "
                                "after it; it is one for all the members",
                                data[g]);
        if ((in->mutation == WB_MUT_DATA ||
             in->mutation == WB_MUT_DATA_METADATA) && in_graph[g] > 0)
            return WB_INPUT_ERR(s, i, "its synthetic base's data mutation "
                                "is after the graph, where input %d's is "
                                "in it; it is one for all the members",
                                data[g]);
        if (in->mutation == WB_MUT_DATA ||
            in->mutation == WB_MUT_DATA_METADATA ||
            in->mutation == WB_MUT_IN_GRAPH) {
            in_graph[g] = in->mutation == WB_MUT_IN_GRAPH;
            if (data[g] < 0)
                data[g] = i;
        }
    }
    for (int g = 0; g < s->ngroups; g++)
        if (data[g] < 0) {
            return WB_INPUT_ERR(s, s->group_first[g], "its synthetic base "
                                "has no member whose data the graph mutates, "
                                "which is what merging them is for");
        }
    /* Returned itself, a member is a view of the base, whose requires-grad
       the spec may set; any other input is the caller's own tensor. */
    for (int k = 0; k < s->noutputs; k++) {
        const wb_output *o = &s->outputs[k];
        if (o->kind == WB_OUT_IS_INPUT && o->requires_grad &&
            s->group_of[o->base] < 0)
            return WB_OUTPUT_ERR(s, k, "is-input returns the caller's own "
                                 "tensor, whose requires-grad it cannot "
                                 "set");
    }
    return WB_OK;
}

static void wb_spec_derive_inputs(wb_spec *s)
{
    s->ntensor_inputs = s->ndeclared = s->nbumped = s->nhidden = 0;
    s->ndetached = s->ndups = 0;
    s->nreshaped = 0;
    /* The graph's arguments: the effect tokens, the synthetic bases, the
       kept inputs outside them, then each member, for its view. */
    s->nargs = s->ntokens + s->ngroups;
    for (int i = 0; i < s->ninputs; i++)
        s->arg_at[i] = s->inputs[i].dup_of >= 0 || s->group_of[i] >= 0
                           ? -1
                           : s->nargs++;
    for (int i = 0; i < s->ninputs; i++)
        if (s->group_of[i] >= 0)
            s->arg_at[i] = s->nargs++;
    /* The bases' data mutations come first, as the graph's inputs do:
       after the call, or in it, where the base's version is bumped before
       it, or put back after it when the mutation is hidden from
       autograd (a base is the input g - ngroups, as in wb_spec_mut). */
    bool in_graph[s->ngroups + 1], hidden[s->ngroups + 1];
    for (int g = 0; g < s->ngroups; g++)
        in_graph[g] = false, hidden[g] = true;
    /* Hidden when every member that writes is (an unwritten member's
       mutations are all hidden, as AOTAutograd counts them). */
    for (int i = 0; i < s->ninputs; i++) {
        int g = s->group_of[i];
        if (g >= 0 && s->inputs[i].mutation == WB_MUT_IN_GRAPH) {
            in_graph[g] = true;
            hidden[g] &= (s->inputs[i].flags & WB_INPUT_HIDDEN) != 0;
        }
    }
    s->nupdated = 0;
    for (int g = 0; g < s->ngroups; g++) {
        if (!in_graph[g])
            s->muts[s->nupdated++] = (wb_spec_mut){g - s->ngroups,
                                                   WB_MUT_DATA};
        else if (hidden[g])
            s->hidden[s->nhidden++] = g - s->ngroups;
        else
            s->bumped[s->nbumped++] = g - s->ngroups;
    }
    for (int i = 0; i < s->ninputs; i++) {
        const wb_input *in = &s->inputs[i];
        s->dirs[i] = wb_input_direction(in);
        s->mut_at[i] = -1;
        if (in->dup_of >= 0)
            s->dups[s->ndups++] = i;
        if (!in->is_tensor || (in->flags & WB_INPUT_OPTIONAL))
            continue;
        s->tensor_inputs[s->ntensor_inputs++] = i;
        if (in->dtype.bits != 0 || in->ndim >= 0 || in->device.device_type)
            s->declared[s->ndeclared++] = i;
        if (in->mutation == WB_MUT_IN_GRAPH && s->group_of[i] >= 0)
            ;  /* its base's, above */
        else if (in->mutation == WB_MUT_IN_GRAPH &&
                 !(in->flags & WB_INPUT_HIDDEN))
            s->bumped[s->nbumped++] = i;
        else if (in->mutation == WB_MUT_IN_GRAPH)
            s->hidden[s->nhidden++] = i;
        if (in->flags & WB_INPUT_DETACH)
            s->detached[s->ndetached++] = i;
        if (in->mutation != WB_MUT_NONE && in->mutation != WB_MUT_IN_GRAPH &&
            s->group_of[i] < 0) {
            s->mut_at[i] = s->nupdated;
            s->muts[s->nupdated++] = (wb_spec_mut){i, in->mutation};
        }
        if (wb_mutation_moves(in->mutation))
            s->reshaped[s->nreshaped++] = i;
    }
}

/* Views of input i must fit the storage it will have after its mutation:
   set_ brings the updated value's storage, resize_ may grow its own. */
static void wb_spec_view_storage(const wb_spec *s, int input, wb_spec_out *d)
{
    int j = s->mut_at[input];
    if (j >= 0 && s->muts[j].kind == WB_MUT_STORAGE)
        d->holder = j;
    else if (j >= 0 && s->muts[j].kind == WB_MUT_RESIZE)
        d->grow = j;
}

static void wb_spec_derive_outputs(wb_spec *s)
{
    int m = s->nupdated;
    s->nviews = 0;
    s->nscalar_outs = 0;
    for (int k = 0; k < s->noutputs; k++) {
        const wb_output *o = &s->outputs[k];
        wb_spec_out *d = &s->outs[k];
        d->value = m + k;
        d->base = -1;
        d->holder = -1;
        d->grow = -1;
        d->group = -1;
        d->requires_grad = o->requires_grad ? 1 : 0;
        d->dyn = o->dyn;
        d->scalar = o->scalar;
        s->nscalar_outs += o->scalar != 0;
        if (wb_alias_is_plain(o->kind)) {
            d->kind = WB_OUT_NON_ALIAS;
            continue;
        }
        d->kind = o->kind;
        switch (o->kind) {
        case WB_OUT_IS_INPUT:
            /* A member of a synthetic base is not returned itself but as
               a view of the base, as AOTAutograd's synthetic-base wrapper
               turns it into an alias (create_synthetic_base_metadata). */
            if (s->group_of[o->base] < 0) {
                d->base = o->base;
                continue;
            }
            d->kind = WB_OUT_ALIAS_OF_INPUT;
            /* fall through */
        case WB_OUT_ALIAS_OF_INPUT:
            d->base = o->base;
            d->group = s->group_of[o->base];
            wb_spec_view_storage(s, o->base, d);
            break;
        case WB_OUT_ALIAS_OF_INTERMEDIATE:
        case WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT:
            d->kind = WB_OUT_ALIAS_OF_INTERMEDIATE;
            d->base = m + s->noutputs + s->nmeta_members + o->base;
            break;
        default:
            d->base = m + o->base;
            break;
        }
        s->nviews++;
    }
}

wb_status wb_spec_validate(wb_spec *s)
{
    wb_status st;
    if (!s)
        return wb_rt_fail(WB_ERR_INVALID, "wb_spec_validate: spec is NULL");
    if (s->valid)
        return WB_OK;
    if ((st = wb_spec_check(s)) != WB_OK ||
        (st = wb_spec_alloc_derived(s)) != WB_OK)
        goto fail;
    wb_spec_derive_groups(s);
    if ((st = wb_spec_check_groups(s)) != WB_OK)
        goto fail;
    wb_spec_derive_inputs(s);
    s->nargs += s->rng ? 2 : 0;  /* the seed and the offset */
    wb_spec_derive_outputs(s);
    s->nvalues = s->nupdated + s->noutputs + s->nmeta_members + s->nbases;
    /* A value read after an input's view or storage changes may be that
       input: the later mutations', the views', the members' new views,
       which come one after another. */
    s->moved_reads = s->nmeta_members > 1;
    for (int j = 0; j < s->nupdated; j++)
        s->moved_reads |= s->muts[j].input >= 0 &&
                          wb_mutation_moves(s->muts[j].kind) &&
                          (j + 1 < s->nupdated || s->nviews > 0 ||
                           s->nmeta_members > 0);
    s->grad_writes = false;
    for (int j = 0; j < s->nupdated; j++)
        s->grad_writes |= s->training && wb_mutation_copies(s->muts[j].kind);
    s->nreturned = s->ntokens + s->nvalues + s->rng;
    if ((st = wb_spec_derive_signature(s)) != WB_OK)
        goto fail;
    s->device_copies = false;
    for (int j = 0; j < s->nupdated; j++)
        s->device_copies |= wb_spec_mut_on_device(s, &s->muts[j]);
    s->valid = true;
    return WB_OK;
fail:
    wb_spec_drop_derived(s);
    return st;
}

/* ---- facts ---- */

const char *wb_spec_name(const wb_spec *s) { return s ? s->name : NULL; }
int wb_spec_num_inputs(const wb_spec *s) { return s ? s->ninputs : -1; }
int wb_spec_num_outputs(const wb_spec *s) { return s ? s->noutputs : -1; }
int wb_spec_num_values(const wb_spec *s)
{
    return s && s->valid ? s->nreturned : -1;
}

int wb_spec_num_graph_args(const wb_spec *s)
{
    return s && s->valid ? s->nargs : -1;
}
int wb_spec_num_updated(const wb_spec *s) { return s && s->valid ? s->nupdated : -1; }

wb_direction wb_spec_direction(const wb_spec *s, int i)
{
    if (!s || !s->valid || i < 0 || i >= s->ninputs)
        return (wb_direction)0;
    return s->dirs[i];
}

const char *wb_spec_c_type(const wb_spec *s, int i)
{
    if (!s || i < 0 || i >= s->ninputs)
        return NULL;
    /* No input is None. */
    return s->inputs[i].is_tensor ? "wb_tensor *"
                                  : wb_scalar_c_type(s->inputs[i].scalar);
}

const char *wb_spec_signature(const wb_spec *s)
{
    return s && s->valid ? s->signature : NULL;
}
