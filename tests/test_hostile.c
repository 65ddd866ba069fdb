/*
 * Hostile specs: names with comment delimiters, newlines, quotes,
 * backslashes, format directives and bytes that are not UTF-8; thousands of
 * arguments and outputs; nesting and numbers past every limit; alias
 * references that cycle or point nowhere.  Each is rejected with a message
 * that names the problem, or is handled, and no text of a spec ever
 * reaches generated code outside a comment, escaped.
 */
#include <limits.h>

#include "helpers.h"

/* Hostile cases tried, for the figure of docs/testing.md. */
static int hostile_cases;

/* Every name below is wrapped in these markers; generated code must not
   contain them anywhere but inside comments. */
#define MARK_A "QZXW"
#define MARK_B "WXZQ"

static const char *const hostile_names[] = {
    "*/ int evil(void) { return 1; } /*",
    "x */\n#include <stdlib.h>\n/* y",
    "\n#define wb_call system\n",
    "a\\\nb",                 /* a line splice */
    "?\?/\n",                 /* a trigraph splice */
    "\"quoted\" 'single'",
    "%s%n%x%%",
    "#pragma comment(option, \"-run\")",
    "\xff\xfe\xc3\x28\xe2\x82",  /* not UTF-8 */
    "\x01\x02\x1b[31m\x7f",    /* control bytes */
    "//line comment",
    "/* nested /* comment */",
    "",
};
#define NHOSTILE (int)(sizeof hostile_names / sizeof *hostile_names)

/* Whether the code holds the markers, a raw byte that is not printable
   ASCII, an unterminated comment or a line splice inside one.  #line
   directives (JIT source) hold a number and may name a file, of
   [A-Za-z0-9_.-] only; their names are left out of the marker check,
   being filtered spec names. */
static void hostile_check_code(const char *src, const char *what)
{
    size_t n = strlen(src);
    char *code = malloc(n + 1);
    size_t o = 0;
    cr_assert_not_null(code);
    for (const char *p = src; *p;) {
        unsigned char c = (unsigned char)*p;
        cr_assert(c == '\n' || (c >= 0x20 && c < 0x7f), "%s: raw byte 0x%02x "
                  "in generated code", what, c);
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            cr_assert_not_null(end, "%s: an unterminated comment", what);
            for (const char *q = p; q < end; q++)
                cr_assert(!(q[0] == '\\' && q[1] == '\n'), "%s: a line splice "
                          "in a comment", what);
            p = end + 2;
            code[o++] = ' ';
            continue;
        }
        if (strncmp(p, "#line ", 6) == 0 && (p == src || p[-1] == '\n')) {
            const char *q = p + 6;
            while (*q >= '0' && *q <= '9')
                q++;
            cr_assert(q > p + 6, "%s: #line without a number", what);
            if (*q == '\n') {  /* keeps the file of the one before */
                p = q;
                continue;
            }
            cr_assert(q[0] == ' ' && q[1] == '"', "%s: #line with more than "
                      "a number and a file", what);
            for (q += 2; *q != '"'; q++)
                cr_assert((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                              (*q >= '0' && *q <= '9') || *q == '_' ||
                              *q == '.' || *q == '-',
                          "%s: byte 0x%02x in a #line file name", what,
                          (unsigned char)*q);
            p = q + 1;
            continue;
        }
        code[o++] = *p++;
    }
    code[o] = '\0';
    cr_assert_null(strstr(code, MARK_A), "%s: spec text outside a comment:\n"
                   "%s", what, code);
    cr_assert_null(strstr(code, MARK_B), "%s: spec text outside a comment",
                   what);
    cr_assert_null(strstr(code, "evil"), "%s: spec text outside a comment",
                   what);
    free(code);
}

/* Messages escape the name too: printable ASCII, no comment end. */
static void hostile_check_message(const char *what)
{
    const char *m = wb_last_error();
    for (const unsigned char *p = (const unsigned char *)m; *p; p++)
        cr_assert(*p == '\n' || (*p >= 0x20 && *p < 0x7f), "%s: raw byte "
                  "0x%02x in the message '%s'", what, *p, m);
    cr_assert_null(strstr(m, "*/"), "%s: '*/' in the message '%s'", what, m);
}

static int hostile_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)ctx; (void)na;
    for (int i = 0; i < nv; i++)
        v[i].t = wb_tensor_retain(a[0].t);
    return nv;
}

Test(hostile, names_reach_code_only_escaped_inside_comments)
{
    for (int h = 0; h < NHOSTILE; h++) {
        char name[WB_MAX_NAME + 1];
        snprintf(name, sizeof name, MARK_A "%s" MARK_B, hostile_names[h]);
        wb_spec *s;
        WBT_OK(wb_spec_new(name, &s));
        WBT_OK(wb_spec_add_tensor(s, name, WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_scalar(s, name, WB_SCALAR_FLOAT, NULL));
        WBT_OK(wb_spec_add_output(s, name, WB_OUT_NON_ALIAS, -1, true, 1,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, name, WB_OUT_IS_INPUT, 0, false, 0,
                                  NULL));
        WBT_OK(wb_spec_validate(s));
        char *src = NULL;
        WBT_OK(wb_emit_c(s, &src));
        hostile_check_code(src, hostile_names[h]);
        free(src);
        WBT_EACH_TIER(tier) {
            wb_wrapper *w = wbt_wrap(s, hostile_graph, NULL, tier);
            if (tier == WB_TIER_TCC)
                hostile_check_code(wb_wrapper_source(w), hostile_names[h]);
            wb_tensor *x = wbt_f32(1, 1, 3);
            wb_value outs[2];
            wb_arg args[2] = {{.t = x}, {.f = 0.5}};
            WBT_OK(wb_call(w, args, 2, outs, 2));
            cr_assert_eq(outs[1].t, x);
            wb_tensor_release(outs[0].t);
            wb_tensor_release(outs[1].t);
            wbt_release_last(x);
            wb_wrapper_free(w);
        }
        /* A mistake on the item so named: the message quotes it escaped. */
        WBT_OK(wb_spec_add_output(s, name, WB_OUT_ALIAS_OF_INPUT, 1, false, 0,
                                  NULL));
        WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC, "is a scalar");
        hostile_check_message(hostile_names[h]);
        wb_spec_free(s);
        hostile_cases++;
    }
    cr_log_info("hostile: %d names through both tiers", hostile_cases);
}

/* Text specs past the grammar's limits and at them. */
typedef struct hostile_text {
    const char *label;
    wb_status status;     /* after parse and validate */
    const char *needle;   /* in the message */
} hostile_text;

static void hostile_try(const char *label, const char *text, wb_status want,
                        const char *needle)
{
    wb_spec *s = NULL;
    wb_status st = wb_spec_parse(text, &s);
    if (st == WB_OK)
        st = wb_spec_validate(s);
    cr_assert_eq(st, want, "%s: %s, expected %s: %s", label,
                 wb_status_str(st), wb_status_str(want), wb_last_error());
    if (st != WB_OK) {
        cr_assert_not_null(strstr(wb_last_error(), needle), "%s: message "
                           "'%s' lacks '%s'", label, wb_last_error(), needle);
        hostile_check_message(label);
    } else {
        char *src = NULL;
        WBT_OK(wb_emit_c(s, &src));
        hostile_check_code(src, label);
        free(src);
        wb_wrapper *w = wbt_wrap(s, hostile_graph, NULL, WB_TIER_TCC);
        wb_wrapper_free(w);
    }
    wb_spec_free(s);
    hostile_cases++;
}

/* A text made of head, then n copies of item (the last without sep),
   then tail. */
static char *hostile_repeat(const char *head, const char *item,
                            const char *sep, int n, const char *tail)
{
    size_t len = strlen(head) + (size_t)n * (strlen(item) + strlen(sep) + 12) +
                 strlen(tail) + 1;
    char *p = malloc(len), *o = p;
    cr_assert_not_null(p);
    o += sprintf(o, "%s", head);
    for (int i = 0; i < n; i++)
        o += sprintf(o, item, i), o += sprintf(o, "%s", i + 1 < n ? sep : "");
    sprintf(o, "%s", tail);
    return p;
}

Test(hostile, text_specs_rejected_precisely_or_handled)
{
    static const struct {
        const char *label, *text;
        wb_status st;
        const char *needle;
    } cases[] = {
        {"comment end in a name", "f*/x(Tensor x) -> Tensor", WB_ERR_SPEC,
         "1:2: expected '('"},
        {"comment end in a parameter", "f(Tensor x*/y) -> Tensor", WB_ERR_SPEC,
         "expected ',' or ')'"},
        {"string default with */ and quotes",
         "f(Tensor x, str s=\"*/\\\" QZXW\\n\") -> Tensor", WB_OK, ""},
        {"trigraph default", "f(Tensor x, str s='?\?/') -> Tensor", WB_OK, ""},
        {"not UTF-8", "f(Tensor \xff\xfe) -> Tensor", WB_ERR_SPEC,
         "expected a parameter name"},
        {"hash comment and newline", "f(Tensor # c */\nx) -> Tensor", WB_OK,
         ""},
        {"cut short (a NUL)", "f(Tensor x\0) -> Tensor", WB_ERR_SPEC,
         "1:11: expected ',' or ')'"},
        {"format directives", "f%s%n(Tensor x) -> Tensor", WB_ERR_SPEC,
         "expected '('"},
        {"list size overflows", "f(int[99999999999999999999999] x) -> Tensor",
         WB_ERR_SPEC, "at most 999999999"},
        {"ndim overflows", "f(Tensor x [ndim=99999999999999]) -> Tensor",
         WB_ERR_SPEC, "ndim takes one number 0..16"},
        {"ndim past WB_MAX_DIMS", "f(Tensor x [ndim=17]) -> Tensor",
         WB_ERR_SPEC, "0..16"},
        {"dynamic dim past the limit", "f(Tensor x) -> Tensor [dynamic=64]",
         WB_ERR_SPEC, "dynamic takes dims"},
        {"alias set written by nobody", "f(Tensor x) -> Tensor(z!)",
         WB_ERR_SPEC, "writes alias set 'z', which no parameter has"},
        {"alias set of nobody", "f(Tensor x) -> Tensor(z)", WB_OK, ""},
        {"two bases of one set",
         "f(Tensor(a) x) -> (Tensor(a) r [base], Tensor(a) s [base])",
         WB_ERR_SPEC, "attribute 'base'"},
        {"unknown graph attribute", "f(Tensor x) -> Tensor with bases=5",
         WB_ERR_SPEC, "unknown attribute 'bases'"},
        {"empty", "", WB_ERR_SPEC, "expected"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        hostile_try(cases[i].label, cases[i].text, cases[i].st,
                    cases[i].needle);

    char *t;
    t = hostile_repeat("f(", "Tensor a%d", ", ", WB_MAX_INPUTS, ") -> Tensor");
    hostile_try("WB_MAX_INPUTS parameters", t, WB_OK, "");
    free(t);
    t = hostile_repeat("f(", "Tensor a%d", ", ", WB_MAX_INPUTS + 1,
                       ") -> Tensor");
    hostile_try("one parameter too many", t, WB_ERR_SPEC,
                "1025 parameters, more than WB_MAX_INPUTS (1024)");
    free(t);
    t = hostile_repeat("f(Tensor x) -> (", "Tensor", ", ", WB_MAX_OUTPUTS + 1,
                       ")");
    hostile_try("one return too many", t, WB_ERR_SPEC,
                "1025 returns, more than WB_MAX_OUTPUTS (1024)");
    free(t);
    t = hostile_repeat("f(int[] x=", "[", "", 5000, ") -> Tensor");
    hostile_try("default lists nested 5000 deep", t, WB_ERR_SPEC,
                "lists nest at most 16 deep");
    free(t);
    t = hostile_repeat("f(Tensor(", "s%d", "|", 300, ") x) -> Tensor");
    hostile_try("300 alias sets", t, WB_ERR_SPEC, "too many alias sets");
    free(t);
    char name[WB_MAX_NAME + 40];
    memset(name, 'n', WB_MAX_NAME);
    strcpy(name + WB_MAX_NAME, "(Tensor x) -> Tensor");
    hostile_try("a name of WB_MAX_NAME bytes", name, WB_OK, "");
    memset(name, 'n', WB_MAX_NAME + 1);
    strcpy(name + WB_MAX_NAME + 1, "(Tensor x) -> Tensor");
    hostile_try("a name one byte too long", name, WB_ERR_SPEC,
                "longer than WB_MAX_NAME (256)");
    cr_log_info("hostile: %d text specs", hostile_cases);
}

/* The builder's limits: exactly at each works, one past it names it. */
Test(hostile, builder_limits)
{
    wb_spec *s;
    char name[WB_MAX_NAME + 2];
    memset(name, 'q', WB_MAX_NAME + 1);
    name[WB_MAX_NAME + 1] = '\0';
    WBT_FAILS(wb_spec_new(name, &s), WB_ERR_SPEC,
              "longer than WB_MAX_NAME (256)");
    name[WB_MAX_NAME] = '\0';
    WBT_OK(wb_spec_new(name, &s));

    /* WB_MAX_INPUTS tensors, WB_MAX_OUTPUTS outputs, each input itself. */
    for (int i = 0; i < WB_MAX_INPUTS; i++)
        WBT_OK(wb_spec_add_tensor(s, "t", WB_MUT_NONE, 0, NULL));
    WBT_FAILS(wb_spec_add_tensor(s, "t", WB_MUT_NONE, 0, NULL), WB_ERR_SPEC,
              "more than 1024 inputs");
    WBT_FAILS(wb_spec_add_scalar(s, "k", WB_SCALAR_INT, NULL), WB_ERR_SPEC,
              "more than 1024 inputs");
    for (int k = 0; k < WB_MAX_OUTPUTS; k++)
        WBT_OK(wb_spec_add_output(s, "o", WB_OUT_IS_INPUT, k, false, 0, NULL));
    WBT_FAILS(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, false, 0, NULL),
              WB_ERR_SPEC, "more than 1024 outputs");
    WBT_OK(wb_spec_validate(s));
    wb_tensor *x = wbt_f32(0, 1, 2);
    wb_arg *args = calloc(WB_MAX_INPUTS, sizeof *args);
    wb_value *outs = calloc(WB_MAX_OUTPUTS, sizeof *outs);
    cr_assert(args && outs);
    for (int i = 0; i < WB_MAX_INPUTS; i++)
        args[i].t = x;
    WBT_EACH_TIER(tier) {
        wb_wrapper *w = wbt_wrap(s, hostile_graph, NULL, tier);
        WBT_OK(wb_call(w, args, WB_MAX_INPUTS, outs, WB_MAX_OUTPUTS));
        for (int k = 0; k < WB_MAX_OUTPUTS; k++) {
            cr_assert_eq(outs[k].t, x, "%s: output %d", wb_tier_name(tier), k);
            wb_tensor_release(outs[k].t);
        }
        wb_wrapper_free(w);
    }
    wbt_release_last(x);
    free(args);
    free(outs);

    WBT_FAILS(wb_spec_set_intermediate_bases(s, WB_MAX_BASES + 1), WB_ERR_SPEC,
              "outside 0..1024");
    WBT_FAILS(wb_spec_set_intermediate_bases(s, INT_MIN), WB_ERR_SPEC,
              "outside 0..1024");
    WBT_FAILS(wb_spec_declare_input(s, 0, WBT_F32, WB_MAX_DIMS + 1),
              WB_ERR_SPEC, "outside -1..16");
    WBT_FAILS(wb_spec_declare_input(s, INT_MIN, WBT_F32, 1), WB_ERR_INVALID,
              "no input");
    WBT_FAILS(wb_spec_declare_input(s, 0, ((DLDataType){kDLFloat, 255, 65535}),
                                    1), WB_ERR_SPEC, "not byte-addressable");
    for (int g = 0; g < WB_MAX_GUARDS; g++)
        WBT_OK(wb_spec_add_guard(s, (wb_hook_fn)1, (wb_leave_fn)1, NULL));
    WBT_FAILS(wb_spec_add_guard(s, (wb_hook_fn)1, (wb_leave_fn)1, NULL),
              WB_ERR_SPEC, "more than 16 guards");
    WBT_FAILS(wb_spec_add_tensor(s, "t", (wb_mutation)INT_MAX, 0, NULL),
              WB_ERR_SPEC, "unknown mutation kind");
    WBT_FAILS(wb_spec_add_output(s, "o", (wb_alias)-1, -1, false, 0, NULL),
              WB_ERR_SPEC, "unknown alias kind");
    wb_spec_free(s);

    /* Tensors: sizes and strides whose byte counts overflow. */
    wb_tensor *t = NULL;
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, 2,
                            (int64_t[]){INT64_MAX / 2, 4}, &t),
              WB_ERR_SHAPE, "");
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, WB_MAX_DIMS + 1,
                            (int64_t[WB_MAX_DIMS + 1]){0}, &t),
              WB_ERR_SHAPE, "");
    cr_assert_null(t);
    wb_tensor *b = wbt_f32(0, 1, 8);
    WBT_FAILS(wb_tensor_as_strided(b, 2, (int64_t[]){2, 2},
                                   (int64_t[]){INT64_MAX, 1}, 0, &t),
              WB_ERR_SHAPE, "");
    WBT_FAILS(wb_tensor_as_strided(b, 1, (int64_t[]){2}, NULL, INT64_MAX, &t),
              WB_ERR_SHAPE, "");
    cr_assert_null(t);
    wbt_release_last(b);
    /* 16 refusals above, and the name and the counts at their limits. */
    hostile_cases += 18;
    cr_log_info("hostile: %d builder limits", hostile_cases);
}

/* Outputs whose base is themselves, another alias, or nothing at all. */
Test(hostile, alias_references_that_cycle_or_point_nowhere)
{
    static const struct {
        wb_alias kind;
        int base;
        const char *needle;
    } cases[] = {
        {WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 1,
         "base 1 is out of range"},                          /* itself */
        {WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 0,
         "is itself alias-of-input"},                        /* a chain */
        {WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 7,
         "expected another output"},
        {WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, INT_MIN,
         "out of range"},
        {WB_OUT_ALIAS_OF_INPUT, 5, "expected an input 0..0"},
        {WB_OUT_ALIAS_OF_INPUT, -1, "out of range"},
        {WB_OUT_IS_INPUT, INT_MAX, "out of range"},
        {WB_OUT_ALIAS_OF_INTERMEDIATE, 0, "the spec has 0 intermediate bases"},
        {WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, -2, "out of range"},
        {WB_OUT_NON_ALIAS, 0, "expected -1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        wb_spec *s;
        WBT_OK(wb_spec_new("cycle", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "a", WB_OUT_ALIAS_OF_INPUT, 0, false, 0,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "o", cases[i].kind, cases[i].base, false,
                                  0, NULL));
        WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC, cases[i].needle);
        cr_assert_eq(wb_spec_num_values(s), -1, "case %zu validated", i);
        wb_options o = {.tier = WB_TIER_TCC};
        wb_wrapper *w = NULL;
        WBT_FAILS(wb_wrapper_new(s, hostile_graph, NULL, &o, &w), WB_ERR_SPEC,
                  cases[i].needle);
        cr_assert_null(w);
        wb_spec_free(s);
        hostile_cases++;
    }
    /* An intermediate base no output refers to. */
    wb_spec *s;
    WBT_OK(wb_spec_new("orphan", &s));
    WBT_OK(wb_spec_set_intermediate_bases(s, 2));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, false,
                              0, NULL));
    WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC,
              "intermediate base 1 is not the base of any output");
    wb_spec_free(s);
    hostile_cases++;
}
