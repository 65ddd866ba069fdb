/*
 * Tests of the text spec format (docs/spec-format.md): the ATen schema
 * grammar construct by construct, every rejection with its exact
 * line:column and caret, the checks that need the whole schema, the mapping
 * onto the spec IR, real schemas from native_functions.yaml, the examples in
 * the document itself, parsed specs against the same specs built with the
 * builder, and arbitrary bytes.
 *
 * Some tests look inside struct wb_spec (src/spec/spec.h) for facts the
 * public API cannot show: the flags and declarations of an input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec_helpers.h"
#include "../src/spec/schema.h"

/* ---- local helpers ---------------------------------------------------- */

static wb_schema *tsc_parse(const char *text)
{
    wb_schema *sc = NULL;
    wb_status st = wb_schema_parse(text, NULL, 1, &sc);
    cr_assert_eq(st, WB_OK, "'%s' -> %s: %s", text, wb_status_str(st),
                 wb_last_error());
    cr_assert_not_null(sc);
    return sc;
}

/* The spec a text describes, validated. */
static wb_spec *tsc_spec(const char *text)
{
    wb_spec *s = NULL;
    wb_status st = wb_spec_parse(text, &s);
    cr_assert_eq(st, WB_OK, "'%s' -> %s: %s", text, wb_status_str(st),
                 wb_last_error());
    WBT_OK(wb_spec_validate(s));
    return s;
}

/* Asserts that text is rejected with exactly the message want. */
static void tsc_rejects_msg(const char *text, const char *want)
{
    wb_schema *sc = NULL;
    wb_status st = wb_schema_parse(text, NULL, 1, &sc);
    cr_assert_eq(st, WB_ERR_SPEC, "'%s' -> %s, expected WB_ERR_SPEC", text,
                 wb_status_str(st));
    cr_assert_null(sc, "the output was written on failure");
    cr_assert_str_eq(wb_last_error(), want, "for '%s':\n%s\nexpected\n%s",
                     text, wb_last_error(), want);
}

/* Whether messages show the byte at c escaped, as wb_spec_print_name
   does: outside printable ASCII, a backslash, or the first byte of a
   comment delimiter. */
static bool tsc_shown_escaped(const char *c)
{
    return *c < 0x20 || *c > 0x7e || *c == '\\' ||
           (*c == '*' && c[1] == '/') || (*c == '/' && c[1] == '*');
}

/* Asserts that a one-line text of at most 64 bytes, none of which is shown
   escaped, is rejected at column col with message msg: the line follows,
   then a caret under the column. */
static void tsc_rejects(const char *text, int col, const char *msg)
{
    char want[1024];
    cr_assert(strlen(text) <= 64, "test text '%s' is too long", text);
    for (const char *c = text; *c; c++)
        cr_assert(!tsc_shown_escaped(c),
                  "test text '%s' holds a byte shown escaped", text);
    snprintf(want, sizeof want, "<text>:1:%d: %s\n    %s\n    %*s^", col,
             msg, text, col - 1, "");
    tsc_rejects_msg(text, want);
}

typedef struct tsc_case {
    const char *text;
    int col;
    const char *msg;
} tsc_case;

static void tsc_rejects_all(const tsc_case *c, int n)
{
    for (int i = 0; i < n; i++)
        tsc_rejects(c[i].text, c[i].col, c[i].msg);
}

#define TSC_COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

/* Every byte of the calling thread's message is printable ASCII or a
   newline. */
static void tsc_assert_tame(void)
{
    const char *m = wb_last_error();
    for (const unsigned char *p = (const unsigned char *)m; *p; p++)
        cr_assert((*p >= 0x20 && *p <= 0x7e) || *p == '\n',
                  "byte 0x%02x at %d of the message is not printable", *p,
                  (int)(p - (const unsigned char *)m));
}

static char *tsc_read_file(const char *path)
{
    char *p = wbt_read_file(path);
    cr_assert_not_null(p, "cannot open %s (tests run from the repository "
                       "root)", path);
    return p;
}

/* A graph that is never called: wrappers are built, not run. */
static int tsc_no_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                        int nv)
{
    (void)ctx; (void)a; (void)na; (void)v; (void)nv;
    return -1;
}

/* Parses, validates and wraps text on both tiers. */
static int tsc_rng_get(void *ud, wb_tensor **seed, wb_tensor **offset)
{
    (void)ud;
    (void)seed;
    (void)offset;
    return 1;
}

static void tsc_rng_set(void *ud, wb_tensor *offset)
{
    (void)ud;
    (void)offset;
}

static void tsc_wraps(const char *text)
{
    wb_spec *s = tsc_spec(text);
    /* A spec that asks for functionalized RNG wraps once it has the
       generator's callbacks. */
    if (strstr(text, "functional_rng"))
        WBT_OK(wb_spec_set_rng(s, tsc_rng_get, tsc_rng_set, NULL));
    WBT_EACH_TIER(tier) {
        wb_wrapper *w = wbt_wrap(s, tsc_no_graph, NULL, tier);
        wb_wrapper_free(w);
    }
    wb_spec_free(s);
}

/* ---- names ------------------------------------------------------------ */

Test(schema, operator_names_namespaces_and_overloads)
{
    static const struct {
        const char *text, *ns, *name, *base;
    } c[] = {
        {"add(Tensor self) -> Tensor", "", "add", "add"},
        {"add.Tensor(Tensor self) -> Tensor", "", "add.Tensor", "add"},
        {"aten::add_.Tensor(Tensor(a!) self) -> Tensor(a!)", "aten",
         "add_.Tensor", "add_"},
        {"_foreach_add_.List(Tensor x, Tensor y) -> ()", "",
         "_foreach_add_.List", "_foreach_add_"},
        {"__iand__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)", "",
         "__iand__.Scalar", "__iand__"},
        {"my_ns2::op_3.over_load4(Tensor x) -> Tensor", "my_ns2",
         "op_3.over_load4", "op_3"},
        {"  aten :: add . out ( Tensor x ) -> Tensor", "aten", "add.out",
         "add"},
        {"x.default_(Tensor x) -> Tensor", "", "x.default_", "x"},
        {"x._private(Tensor x) -> Tensor", "", "x._private", "x"},
    };
    for (int i = 0; i < TSC_COUNT(c); i++) {
        wb_schema *sc = tsc_parse(c[i].text);
        cr_assert_str_eq(wb_schema_namespace(sc), c[i].ns);
        cr_assert_str_eq(wb_schema_name(sc), c[i].name);
        cr_assert_str_eq(wb_schema_base_name(sc), c[i].base);
        wb_spec *s;
        WBT_OK(wb_schema_to_spec(sc, &s));
        cr_assert_str_eq(wb_spec_name(s), c[i].name,
                         "the spec is named without the namespace");
        wb_spec_free(s);
        wb_schema_free(sc);
    }
}

/* ---- types ------------------------------------------------------------ */

Test(schema, every_base_type_and_its_c_type)
{
    static const struct {
        const char *type, *ctype;
        wb_direction dir;
    } c[] = {
        {"Tensor", "wb_tensor *", WB_DIR_IN},
        {"int", "int64_t", WB_DIR_SCALAR},
        {"SymInt", "int64_t", WB_DIR_SCALAR},
        {"float", "double", WB_DIR_SCALAR},
        {"bool", "bool", WB_DIR_SCALAR},
        {"str", "const void *", WB_DIR_SCALAR},
        {"Scalar", "const void *", WB_DIR_SCALAR},
        {"ScalarType", "const void *", WB_DIR_SCALAR},
        {"Layout", "const void *", WB_DIR_SCALAR},
        {"Device", "const void *", WB_DIR_SCALAR},
        {"DeviceIndex", "const void *", WB_DIR_SCALAR},
        {"MemoryFormat", "const void *", WB_DIR_SCALAR},
        {"Generator", "const void *", WB_DIR_SCALAR},
        {"Dimname", "const void *", WB_DIR_SCALAR},
        {"Storage", "const void *", WB_DIR_SCALAR},
        {"Stream", "const void *", WB_DIR_SCALAR},
        {"QScheme", "const void *", WB_DIR_SCALAR},
        {"SymBool", "const void *", WB_DIR_SCALAR},
        {"DimVector", "const void *", WB_DIR_SCALAR},
        {"GraphModule", "const void *", WB_DIR_SCALAR},
        {"ConstQuantizerPtr", "const void *", WB_DIR_SCALAR},
        /* Those the C++ schema parser knows besides. */
        {"complex", "const void *", WB_DIR_SCALAR},
        {"Quantizer", "const void *", WB_DIR_SCALAR},
        {"None", "const void *", WB_DIR_SCALAR},
        {"NoneType", "const void *", WB_DIR_SCALAR},
        {"Capsule", "const void *", WB_DIR_SCALAR},
        {"Any", "const void *", WB_DIR_SCALAR},
        {"AnyClassType", "const void *", WB_DIR_SCALAR},
        {"AnyEnumType", "const void *", WB_DIR_SCALAR},
        {"PyObject", "const void *", WB_DIR_SCALAR},
    };
    char text[1024] = "f(";
    for (int i = 0; i < TSC_COUNT(c); i++) {
        char p[64];
        snprintf(p, sizeof p, "%s%s p%d", i ? ", " : "", c[i].type, i);
        strcat(text, p);
    }
    strcat(text, ") -> ()");
    wb_schema *sc = tsc_parse(text);
    wb_spec *s = tsc_spec(text);
    cr_assert_eq(wb_schema_num_args(sc), TSC_COUNT(c));
    for (int i = 0; i < TSC_COUNT(c); i++) {
        cr_assert_str_eq(wb_schema_arg_type(sc, i), c[i].type);
        cr_assert_str_eq(wb_schema_arg_ctype(sc, i), c[i].ctype, "%s",
                         c[i].type);
        cr_assert_eq(wb_schema_arg_dir(sc, i), c[i].dir, "%s", c[i].type);
        cr_assert_str_eq(wb_spec_c_type(s, i), c[i].ctype, "%s", c[i].type);
        cr_assert_eq(wb_spec_direction(s, i), c[i].dir, "%s", c[i].type);
    }
    /* Scalars map onto the builder's scalar types. */
    cr_assert_eq(s->inputs[1].scalar, WB_SCALAR_INT);
    cr_assert_eq(s->inputs[2].scalar, WB_SCALAR_INT);
    cr_assert_eq(s->inputs[3].scalar, WB_SCALAR_FLOAT);
    cr_assert_eq(s->inputs[4].scalar, WB_SCALAR_BOOL);
    for (int i = 5; i < TSC_COUNT(c); i++)
        cr_assert_eq(s->inputs[i].scalar, WB_SCALAR_OPAQUE, "%s", c[i].type);
    wb_spec_free(s);
    wb_schema_free(sc);
}

Test(schema, type_forms_print_as_aten_prints_them)
{
    static const struct {
        const char *written, *printed, *ctype;
        wb_direction dir;
    } c[] = {
        {"Tensor?", "Tensor?", "wb_tensor *", WB_DIR_IN},
        {"Tensor[]", "Tensor[]", "wb_tensor **", WB_DIR_IN},
        {"Tensor?[]", "Tensor?[]", "wb_tensor **", WB_DIR_IN},
        {"int[]", "int[]", "const void *", WB_DIR_SCALAR},
        {"int[2]", "int[2]", "const void *", WB_DIR_SCALAR},
        {"SymInt[1]", "SymInt[1]", "const void *", WB_DIR_SCALAR},
        {"int[1]?", "int[1]?", "const void *", WB_DIR_SCALAR},
        {"int?", "int?", "const void *", WB_DIR_SCALAR},
        {"float?", "float?", "const void *", WB_DIR_SCALAR},
        {"bool?", "bool?", "const void *", WB_DIR_SCALAR},
        {"float[]?", "float[]?", "const void *", WB_DIR_SCALAR},
        {"bool[3]", "bool[3]", "const void *", WB_DIR_SCALAR},
        {"Dimname[1]?", "Dimname[1]?", "const void *", WB_DIR_SCALAR},
        {"int?[]", "int?[]", "const void *", WB_DIR_SCALAR},
        {"int[0]", "int[]", "const void *", WB_DIR_SCALAR},
        {"int[007]", "int[7]", "const void *", WB_DIR_SCALAR},
        {"Tensor(a)", "Tensor(a)", "wb_tensor *", WB_DIR_IN},
        {"Tensor(b!)", "Tensor(b!)", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor(c|d)", "Tensor(c|d)", "wb_tensor *", WB_DIR_IN},
        {"Tensor(e -> *)", "Tensor(e -> *)", "wb_tensor *", WB_DIR_IN},
        {"Tensor(f! -> f|g)", "Tensor(f! -> f|g)", "wb_tensor *",
         WB_DIR_INOUT},
        {"Tensor(h!)[]", "Tensor(h!)[]", "wb_tensor **", WB_DIR_INOUT},
        {"Tensor(i!)?", "Tensor(i!)?", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor(j)?[]", "Tensor(j)?[]", "wb_tensor **", WB_DIR_IN},
        {"int [ 2 ] ?", "int[2]?", "const void *", WB_DIR_SCALAR},
        {"Tensor ( k ! )", "Tensor(k!)", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor(l|m!->n)", "Tensor(l|m! -> n)", "wb_tensor *",
         WB_DIR_INOUT},
        /* The '!' shorthand, named sets, the wildcard, annotated lists. */
        {"Tensor!", "Tensor!", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor !", "Tensor!", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor!?", "Tensor!?", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor![]", "Tensor![]", "wb_tensor **", WB_DIR_INOUT},
        {"Tensor(self)", "Tensor(self)", "wb_tensor *", WB_DIR_IN},
        {"Tensor(o|self!)", "Tensor(o|self!)", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor(Big_2 -> x1|*)", "Tensor(Big_2 -> x1|*)", "wb_tensor *",
         WB_DIR_IN},
        {"Tensor(*)", "Tensor(*)", "wb_tensor *", WB_DIR_IN},
        {"Tensor( * ! )", "Tensor(*!)", "wb_tensor *", WB_DIR_INOUT},
        {"Tensor(p|*|*)", "Tensor(p|*|*)", "wb_tensor *", WB_DIR_IN},
        {"Tensor[](q!)", "Tensor[](q!)", "wb_tensor **", WB_DIR_INOUT},
        {"Tensor(r)[](s)?", "Tensor(r)[](s)?", "wb_tensor **", WB_DIR_IN},
        {"Tensor[]!", "Tensor[]!", "wb_tensor **", WB_DIR_INOUT},
    };
    char text[2048] = "f(";
    for (int i = 0; i < TSC_COUNT(c); i++) {
        char p[64];
        snprintf(p, sizeof p, "%s%s p%d", i ? ", " : "", c[i].written, i);
        strcat(text, p);
    }
    strcat(text, ") -> ()");
    wb_schema *sc = tsc_parse(text);
    for (int i = 0; i < TSC_COUNT(c); i++) {
        cr_assert_str_eq(wb_schema_arg_type(sc, i), c[i].printed);
        cr_assert_str_eq(wb_schema_arg_ctype(sc, i), c[i].ctype, "%s",
                         c[i].written);
        cr_assert_eq(wb_schema_arg_dir(sc, i), c[i].dir, "%s", c[i].written);
    }
    wb_schema_free(sc);
}

/* ---- defaults and the keyword-only marker ------------------------------ */

Test(schema, defaults_of_every_form)
{
    static const struct {
        const char *param, *dflt;
    } c[] = {
        {"int a=1", "1"},
        {"int b=-1", "-1"},
        {"SymInt c=-100", "-100"},
        {"float d=0.5", "0.5"},
        {"float e=1e-05", "1e-05"},
        {"float f=-inf", "-inf"},
        {"float g=inf", "inf"},
        {"float h=nan", "nan"},
        {"float i=2.", "2."},
        {"float j=1.5E+3", "1.5E+3"},
        {"float k=-0.0", "-0.0"},
        {"str l='none'", "'none'"},
        {"str m=\"mean\"", "\"mean\""},
        {"str n=\"it's \\\"so\\\"\"", "\"it's \\x5c\"so\\x5c\"\""},
        {"str o='#not a comment'", "'#not a comment'"},
        {"int[] p=[]", "[]"},
        {"int[2] q=[1, 1]", "[1, 1]"},
        {"int[2] r=[0,1]", "[0, 1]"},
        {"int[2] s=1", "1"},
        {"Tensor? t=None", "None"},
        {"bool u=True", "True"},
        {"bool v=False", "False"},
        {"MemoryFormat w=contiguous_format", "contiguous_format"},
        {"int x=Mean", "Mean"},
        {"ScalarType y=long", "long"},
        {"int[] z=[[1], [2, -3], []]", "[[1], [2, -3], []]"},
        {"str zz = 'spaced'", "'spaced'"},
        {"complex c1=1j", "1j"},
        {"complex c2=-2.5j", "-2.5j"},
        {"complex c3=1e-3j", "1e-3j"},
        {"int nodefault", NULL},
    };
    char text[2048] = "f(";
    for (int i = 0; i < TSC_COUNT(c); i++) {
        strcat(text, i ? ", " : "");
        strcat(text, c[i].param);
    }
    strcat(text, ") -> ()");
    wb_schema *sc = tsc_parse(text);
    cr_assert_eq(wb_schema_num_args(sc), TSC_COUNT(c));
    for (int i = 0; i < TSC_COUNT(c); i++) {
        if (c[i].dflt)
            cr_assert_str_eq(wb_schema_arg_default(sc, i), c[i].dflt, "%s",
                             c[i].param);
        else
            cr_assert_null(wb_schema_arg_default(sc, i));
    }
    cr_assert_str_eq(wb_schema_arg_name(sc, 26), "zz");
    cr_assert_str_eq(wb_schema_arg_name(sc, 29), "c3");
    wb_schema_free(sc);
}

/* Defaults leave the parser as messages show text: bytes outside printable
   ASCII, backslashes and the first byte of a comment delimiter as \xHH, at
   most 64 bytes of the default, then "...". */
Test(schema, defaults_are_shown_escaped)
{
    static const struct {
        const char *param, *dflt;
    } c[] = {
        {"str a='x\x01y\tz'", "'x\\x01y\\x09z'"},
        {"str b='\\n'", "'\\x5cn'"},
        {"str c='/*x*/'", "'\\x2f*x\\x2a/'"},
        {"str d='a*b/c'", "'a*b/c'"},
        {"str e='caf\xc3\xa9'", "'caf\\xc3\\xa9'"},
        {"str f=\"\x7f\"", "\"\\x7f\""},
        {"str g='#x'", "'#x'"},
        {"int[] i=[1, -2, 3]", "[1, -2, 3]"},
    };
    char text[1024] = "f(";
    for (int i = 0; i < TSC_COUNT(c); i++) {
        strcat(text, i ? ", " : "");
        strcat(text, c[i].param);
    }
    strcat(text, ") -> ()");
    wb_schema *sc = tsc_parse(text);
    cr_assert_eq(wb_schema_num_args(sc), TSC_COUNT(c));
    for (int i = 0; i < TSC_COUNT(c); i++) {
        const char *d = wb_schema_arg_default(sc, i);
        cr_assert_str_eq(d, c[i].dflt, "%s", c[i].param);
        for (const unsigned char *b = (const unsigned char *)d; *b; b++)
            cr_assert(*b >= 0x20 && *b <= 0x7e, "byte 0x%02x in the default "
                      "of %s", *b, c[i].param);
    }
    wb_schema_free(sc);
    /* A long default: its first 64 bytes, then "...". */
    char t[256], want[80];
    strcpy(t, "f(str s='");
    memset(t + 9, 'a', 100);
    strcpy(t + 109, "') -> ()");
    want[0] = '\'';
    memset(want + 1, 'a', 63);
    strcpy(want + 64, "...");
    sc = tsc_parse(t);
    cr_assert_str_eq(wb_schema_arg_default(sc, 0), want);
    wb_schema_free(sc);
}

Test(schema, keyword_only_marker)
{
    wb_schema *sc = tsc_parse("f(Tensor a, *, Tensor b, Tensor(a!) out) -> "
                              "Tensor(a!)");
    cr_assert_eq(wb_schema_num_args(sc), 3, "'*' is no parameter");
    cr_assert(!wb_schema_arg_kwonly(sc, 0));
    cr_assert(wb_schema_arg_kwonly(sc, 1));
    cr_assert(wb_schema_arg_kwonly(sc, 2));
    cr_assert_eq(wb_schema_arg_dir(sc, 1), WB_DIR_IN);
    cr_assert_eq(wb_schema_arg_dir(sc, 2), WB_DIR_OUT);
    wb_schema_free(sc);
    sc = tsc_parse("_make_dep_token(*, ScalarType? dtype=None) -> Tensor");
    cr_assert(wb_schema_arg_kwonly(sc, 0));
    wb_schema_free(sc);
    sc = tsc_parse("f(Tensor a, *) -> ()");
    cr_assert_eq(wb_schema_num_args(sc), 1);
    wb_schema_free(sc);
}

/* ---- returns ------------------------------------------------------------ */

Test(schema, returns_of_every_form)
{
    static const struct {
        const char *returns;
        int n;
        const char *types[3], *names[3];
    } c[] = {
        {"()", 0, {0}, {0}},
        {"( )", 0, {0}, {0}},
        {"Tensor", 1, {"Tensor"}, {""}},
        {"Tensor(a!)", 1, {"Tensor(a!)"}, {""}},
        {"(Tensor)", 1, {"Tensor"}, {""}},
        {"Tensor out", 1, {"Tensor"}, {"out"}},
        {"(Tensor, Tensor)", 2, {"Tensor", "Tensor"}, {"", ""}},
        {"(Tensor values, Tensor indices)", 2, {"Tensor", "Tensor"},
         {"values", "indices"}},
        {"(Tensor(a!) values, Tensor(b) indices)", 2,
         {"Tensor(a!)", "Tensor(b)"}, {"values", "indices"}},
        {"Tensor[]", 1, {"Tensor[]"}, {""}},
        {"Tensor(a)[]", 1, {"Tensor(a)[]"}, {""}},
        {"int", 1, {"int"}, {""}},
        {"float", 1, {"float"}, {""}},
        {"bool", 1, {"bool"}, {""}},
        {"Scalar", 1, {"Scalar"}, {""}},
        {"SymInt", 1, {"SymInt"}, {""}},
        {"ScalarType", 1, {"ScalarType"}, {""}},
        {"QScheme", 1, {"QScheme"}, {""}},
        {"(Tensor, float, int)", 3, {"Tensor", "float", "int"}, {"", "", ""}},
        {"(Tensor[] a, Tensor? b, SymInt[] c)", 3,
         {"Tensor[]", "Tensor?", "SymInt[]"}, {"a", "b", "c"}},
    };
    for (int i = 0; i < TSC_COUNT(c); i++) {
        char text[256];
        snprintf(text, sizeof text, "f(Tensor(a!) self, Tensor(b) x) -> %s",
                 c[i].returns);
        wb_schema *sc = tsc_parse(text);
        cr_assert_eq(wb_schema_num_returns(sc), c[i].n, "%s", text);
        for (int k = 0; k < c[i].n; k++) {
            cr_assert_str_eq(wb_schema_return_type(sc, k), c[i].types[k]);
            cr_assert_str_eq(wb_schema_return_name(sc, k), c[i].names[k]);
        }
        wb_schema_free(sc);
    }
}

/* Newlines, tabs and comments stand between tokens like spaces. */
Test(schema, layout_is_free)
{
    wb_schema *a = tsc_parse("aten::add_.Tensor(Tensor(a!) self, Tensor "
                             "other, *, Scalar alpha=1) -> Tensor(a!)");
    wb_schema *b = tsc_parse("aten::add_.Tensor(   # in place\n"
                             "\tTensor(a!) self,\r\n"
                             "    Tensor other,  # the addend\n"
                             "    *, Scalar alpha = 1\n"
                             ")->Tensor ( a ! )\n");
    cr_assert_str_eq(wb_schema_name(a), wb_schema_name(b));
    cr_assert_eq(wb_schema_num_args(a), wb_schema_num_args(b));
    for (int i = 0; i < wb_schema_num_args(a); i++) {
        cr_assert_str_eq(wb_schema_arg_type(a, i), wb_schema_arg_type(b, i));
        cr_assert_str_eq(wb_schema_arg_name(a, i), wb_schema_arg_name(b, i));
        cr_assert_eq(wb_schema_arg_kwonly(a, i), wb_schema_arg_kwonly(b, i));
    }
    cr_assert_str_eq(wb_schema_return_type(a, 0), wb_schema_return_type(b, 0));
    wb_schema_free(a);
    wb_schema_free(b);
}

/* ---- rejections by the grammar ------------------------------------------ */

Test(schema, grammar_rejections_name_and_parameters)
{
    static const tsc_case c[] = {
        {"", 1, "expected an operator name"},
        {"(Tensor x) -> Tensor", 1, "expected an operator name"},
        {"1f(Tensor x) -> Tensor", 1, "expected an operator name"},
        {"aten::(Tensor x) -> Tensor", 7,
         "expected an operator name after '::'"},
        {"aten:add(Tensor x) -> Tensor", 5,
         "expected '(' after the operator name 'aten'"},
        {"add.(Tensor x) -> Tensor", 5, "expected an overload name after '.'"},
        {"x.default(Tensor self, Tensor o) -> Tensor", 3,
         "'default' is not a legal overload name: it names 'x' without an "
         "overload"},
        {"aten::x.__call__(Tensor self) -> Tensor", 9,
         "'__call__' is not a legal overload name: one that starts with "
         "'__' would be a Python special attribute"},
        {"x.__(Tensor self) -> Tensor", 3,
         "'__' is not a legal overload name: one that starts with '__' "
         "would be a Python special attribute"},
        {"add.Tensor.x(Tensor x) -> Tensor", 11,
         "expected '(' after the operator name 'add'"},
        {"f Tensor x) -> Tensor", 3,
         "expected '(' after the operator name 'f'"},
        {"f(", 3, "expected a parameter type or '*'"},
        {"f(Tensor x,) -> Tensor", 12, "expected a parameter type or '*'"},
        {"f(, Tensor x) -> Tensor", 3, "expected a parameter type or '*'"},
        {"f(Tens x) -> Tensor", 3, "expected a type; 'Tens' is not an ATen "
                                   "type"},
        {"f(tensor x) -> Tensor", 3, "expected a type; 'tensor' is not an "
                                     "ATen type"},
        {"f(Tensor a, Tensor(a!) , int b) -> Tensor", 24,
         "expected a parameter name after the type 'Tensor(a!)'"},
        {"f(Tensor) -> Tensor", 9,
         "expected a parameter name after the type 'Tensor'"},
        {"f(int[ x) -> Tensor", 6,
         "expected a parameter name after the type 'int'"},
        {"f(int[2 x) -> Tensor", 9, "expected ']' to close the list type"},
        {"f(int[1000000000] x) -> Tensor", 7,
         "expected a list size of at most 999999999"},
        {"f(Tensor x", 11, "expected ',' or ')' after parameter 0 'x'"},
        {"f(Tensor x Tensor y) -> Tensor", 12,
         "expected ',' or ')' after parameter 0 'x'"},
        {"f(Tensor x) Tensor", 13, "expected '->' after the parameters"},
        {"f(Tensor x) - > Tensor", 13, "expected '->' after the parameters"},
        {"f(Tensor x) ->", 15, "expected a return type or '('"},
        {"f(Tensor x) -> 3", 16, "expected a return type or '('"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
}

Test(schema, grammar_rejections_annotations)
{
    static const tsc_case c[] = {
        {"f(Tensor(1) x) -> Tensor", 10,
         "expected an alias set (a name or '*') after '('"},
        {"f(Tensor(1a) x) -> Tensor", 10,
         "expected an alias set (a name or '*') after '('"},
        {"f(Tensor() x) -> Tensor", 10,
         "expected an alias set (a name or '*') after '('"},
        {"f(Tensor(!) x) -> Tensor", 10,
         "expected an alias set (a name or '*') after '('"},
        {"f(Tensor(a b) x) -> Tensor", 12,
         "expected '|', '!', '->' or ')' in the alias annotation"},
        {"f(Tensor(a x) -> Tensor", 12,
         "expected '|', '!', '->' or ')' in the alias annotation"},
        {"f(Tensor(a.b) x) -> Tensor", 11,
         "expected '|', '!', '->' or ')' in the alias annotation"},
        {"f(Tensor(a|) x) -> Tensor", 12,
         "expected an alias set (a name or '*') after '|'"},
        {"f(Tensor(*|) x) -> Tensor", 12,
         "expected an alias set (a name or '*') after '|'"},
        {"f(Tensor(*|a) x) -> Tensor", 12,
         "alias set 'a' follows the wildcard '*', which stands for every "
         "set; write it before the '*'"},
        {"f(Tensor(a -> *|b) x) -> Tensor", 17,
         "alias set 'b' follows the wildcard '*', which stands for every "
         "set; write it before the '*'"},
        {"f(Tensor(* x) -> Tensor", 12,
         "expected '|', '!', '->' or ')' in the alias annotation"},
        {"f(Tensor(a!b) x) -> Tensor", 12,
         "expected '->' or ')' in the alias annotation"},
        {"f(Tensor(a!!) x) -> Tensor", 12,
         "expected '->' or ')' in the alias annotation"},
        {"f(Tensor(a ->) x) -> Tensor", 14,
         "expected an alias set (a name or '*') after '->'"},
        {"f(Tensor(a -> b c) x) -> Tensor", 17,
         "expected '|' or ')' in the alias annotation"},
        {"f(Tensor(a -> b|) x) -> Tensor", 17,
         "expected an alias set (a name or '*') after '|'"},
        {"f(Tensor x) -> Tensor(", 23,
         "expected an alias set (a name or '*') after '('"},
        /* The '!' shorthand is the whole annotation, before any '?'. */
        {"f(Tensor!! x) -> Tensor", 10,
         "expected a parameter name after the type 'Tensor!'"},
        {"f(Tensor!(a) x) -> Tensor", 10,
         "expected a parameter name after the type 'Tensor!'"},
        {"f(Tensor(a)! x) -> Tensor", 12,
         "expected a parameter name after the type 'Tensor(a)'"},
        {"f(Tensor[]!! x) -> Tensor", 12,
         "expected a parameter name after the type 'Tensor[]!'"},
        {"f(Tensor[](a x) -> Tensor", 14,
         "expected '|', '!', '->' or ')' in the alias annotation"},
        {"f(Tensor x) -> Tensor(a", 24,
         "expected '|', '!', '->' or ')' in the alias annotation"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
    /* Texts whose echo shows an escaped '*' or '?'. */
    tsc_rejects_msg("f(Tensor(a -> *!) x) -> Tensor",
                    "<text>:1:16: expected '|' or ')' in the alias "
                    "annotation\n"
                    "    f(Tensor(a -> *!) x) -> Tensor\n"
                    "                   ^");
    tsc_rejects_msg("f(Tensor(a)?? x) -> Tensor",
                    "<text>:1:13: expected a parameter name after the type "
                    "'Tensor(a)?'\n"
                    "    f(Tensor(a)?? x) -> Tensor\n"
                    "                ^");
    tsc_rejects_msg("f(Tensor?! x) -> Tensor",
                    "<text>:1:10: expected a parameter name after the type "
                    "'Tensor?'\n"
                    "    f(Tensor?! x) -> Tensor\n"
                    "             ^");
}

Test(schema, grammar_rejections_defaults)
{
    static const tsc_case c[] = {
        {"f(int x=) -> Tensor", 9, "expected a default value after '='"},
        {"f(int x=, int y) -> Tensor", 9,
         "expected a default value after '='"},
        {"f(int x=-) -> Tensor", 10, "expected a number after '-'"},
        {"f(int x=-a) -> Tensor", 10, "expected a number after '-'"},
        {"f(int x=-infinity) -> Tensor", 10, "expected a number after '-'"},
        {"f(int x=+1) -> Tensor", 9, "expected a default value after '='"},
        {"f(float x=1e) -> Tensor", 13, "expected the digits of the "
                                        "exponent"},
        {"f(float x=1e+) -> Tensor", 14, "expected the digits of the "
                                         "exponent"},
        {"f(float x=.5) -> Tensor", 11, "expected a default value after '='"},
        {"f(float x=1.5.2) -> Tensor", 14,
         "expected ',' or ')' after parameter 0 'x'"},
        {"f(int x=1abc) -> Tensor", 10,
         "expected ',' or ')' after parameter 0 'x'"},
        {"f(int[] x=[1, 2) -> Tensor", 16,
         "expected ',' or ']' in the list default"},
        {"f(int[] x=[1,]) -> Tensor", 14, "expected a default value in the "
                                          "list"},
        {"f(int[] x=[,]) -> Tensor", 12, "expected a default value in the "
                                         "list"},
        {"f(str x=\"abc) -> Tensor", 24, "expected '\"' to close the string"},
        {"f(str x='abc) -> Tensor", 24, "expected \"'\" to close the string"},
        {"f(str x='abc\") -> Tensor", 25,
         "expected \"'\" to close the string"},
        {"f(int x==1) -> Tensor", 9, "expected a default value after '='"},
        {"f(int x=1=2) -> Tensor", 10,
         "expected ',' or ')' after parameter 0 'x'"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
    /* A string ends on its line; a backslash before the newline escapes
       nothing. */
    tsc_rejects_msg("f(str x='ab\\\n') -> Tensor",
                    "<text>:1:13: expected \"'\" to close the string\n"
                    "    f(str x='ab\\x5c\n"
                    "                   ^");
    /* Lists nest at most 16 deep. */
    tsc_rejects_msg("f(int x=[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]) -> ()",
                    "<text>:1:25: expected a default value; lists nest at "
                    "most 16 deep\n"
                    "    f(int x=[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]) -> ()\n"
                    "                            ^");
    wb_schema_free(tsc_parse("f(int x=[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]) -> "
                             "()"));
}

Test(schema, grammar_rejections_returns_and_extension)
{
    static const tsc_case c[] = {
        {"f(Tensor x) -> (Tensor,)", 24, "expected a return type"},
        {"f(Tensor x) -> (Tensor", 23, "expected ',' or ')' after return 0"},
        {"f(Tensor x) -> (Tensor a b)", 26,
         "expected ',' or ')' after return 0 'a'"},
        {"f(Tensor x) -> (Tensor with)", 24,
         "expected ',' or ')' after return 0"},
        {"f(Tensor x) -> (Tensor a, Tensor b", 35,
         "expected ',' or ')' after return 1 'b'"},
        {"f(Tensor x) -> (, Tensor)", 17, "expected a return type"},
        {"f(Tensor x) -> Tensor foo bar", 27,
         "expected 'with' or the end of the spec"},
        {"f(Tensor x) -> Tensor, Tensor", 22,
         "expected 'with' or the end of the spec"},
        {"f(Tensor x) -> Tensor) ", 22,
         "expected 'with' or the end of the spec"},
        {"f(Tensor x) -> Tensor with", 27,
         "expected a graph attribute after 'with'"},
        {"f(Tensor x) -> Tensor with ,", 28,
         "expected a graph attribute after 'with'"},
        {"f(Tensor x) -> Tensor with training,", 37,
         "expected a graph attribute after ','"},
        {"f(Tensor x) -> Tensor with training foo", 37,
         "expected ',' or the end of the spec after graph attribute "
         "'training'"},
        {"f(Tensor x) -> Tensor with grad_at_end=", 40,
         "expected a value for attribute 'grad_at_end' after '='"},
        {"f(Tensor x) -> Tensor with grad_at_end=-1", 40,
         "expected a value for attribute 'grad_at_end' after '='"},
        {"f(Tensor x) -> Tensor [", 24,
         "expected an attribute name after '['"},
        {"f(Tensor x) -> Tensor [requires_grad]]", 38,
         "expected 'with' or the end of the spec"},
        {"f(Tensor x) -> Tensor [requires_grad", 37,
         "expected ',' or ']' after attribute 'requires_grad'"},
        {"f(Tensor x) -> Tensor [requires_grad,]", 38,
         "expected an attribute name after ','"},
        {"f(Tensor x) -> Tensor [dynamic=]", 32,
         "expected a value for attribute 'dynamic' after '='"},
        {"f(Tensor x) -> Tensor [dynamic=1|]", 34,
         "expected a number after '|'"},
        {"f(Tensor x) -> Tensor [dynamic=1||2]", 34,
         "expected a number after '|'"},
        {"f(Tensor x [1]) -> Tensor", 13,
         "expected an attribute name after '['"},
        {"f(Tensor(a!) x [data detach]) -> Tensor", 22,
         "expected ',' or ']' after attribute 'data'"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
}

/* Where the message puts the error: the file and line given, lines counted
   within the text, the caret right after the last token at the end of the
   text, a window of the line around the column, escaped bytes. */
Test(schema, error_positions_and_echo)
{
    wb_schema *sc = NULL;
    WBT_FAILS(wb_schema_parse("f(Tensor a,\n  Tensor(a!) ,\n  int b) -> "
                              "Tensor", "specs.txt", 3, &sc),
              WB_ERR_SPEC, "x");
    cr_assert_str_eq(wb_last_error(),
                     "specs.txt:4:14: expected a parameter name after the "
                     "type 'Tensor(a!)'\n"
                     "      Tensor(a!) ,\n"
                     "                 ^");
    /* At the end of the text, after the last token, not after the
       newline or the comment that follow it. */
    WBT_FAILS(wb_schema_parse("f(Tensor x)  # a comment\n\n", "a.txt", 10,
                              &sc),
              WB_ERR_SPEC, "x");
    cr_assert_str_eq(wb_last_error(),
                     "a.txt:10:12: expected '->' after the parameters\n"
                     "    f(Tensor x)  # a comment\n"
                     "               ^");
    WBT_FAILS(wb_schema_parse("  \n  # only a comment\n", NULL, 1, &sc),
              WB_ERR_SPEC, "x");
    cr_assert_str_eq(wb_last_error(), "<text>:1:1: expected an operator "
                                      "name\n      \n    ^");
    /* A long line is shown as 64 bytes around the column. */
    tsc_rejects_msg(
        "_scaled_dot_product_flash_attention(Tensor query, Tensor key, "
        "Tensor value, float dropout_p=0., bool is_causal=False) -> (Tensor "
        "output, Tensor logsumexp]",
        "<text>:1:154: expected ',' or ')' after return 1 'logsumexp'\n"
        "    ...(Tensor output, Tensor logsumexp]\n"
        "                                       ^");
    tsc_rejects_msg(
        "f(Tensor x, Tensorr y, Tensor z, Tensor w, Tensor v, Tensor u, "
        "Tensor t) -> Tensor",
        "<text>:1:13: expected a type; 'Tensorr' is not an ATen type\n"
        "    f(Tensor x, Tensorr y, Tensor z, Tensor w, Tensor v, Tensor u, "
        "T...\n"
        "                ^");
    tsc_rejects_msg(
        "f(Tensor x, Tensor y, Tensor z, Tensor w, Tensor v, Tensor u, Tensor "
        "t, Tensor s, Tensor r, Tensor q, Tensor p, Tensor o, Tensorr n) -> "
        "Tensor",
        "<text>:1:123: expected a type; 'Tensorr' is not an ATen type\n"
        "    ..., Tensor q, Tensor p, Tensor o, Tensorr n) -> Tensor\n"
        "                                       ^");
    /* Control bytes, non-ASCII bytes and comment characters are escaped,
       and the caret still stands under the column. */
    tsc_rejects_msg("f(Tensor\tx, \x01) -> Tensor",
                    "<text>:1:13: expected a parameter type or '*'\n"
                    "    f(Tensor\\x09x, \\x01) -> Tensor\n"
                    "                   ^");
    tsc_rejects_msg("f(Tensor x, \xc3\xa9t\xc3\xa9 y) -> Tensor",
                    "<text>:1:13: expected a parameter type or '*'\n"
                    "    f(Tensor x, \\xc3\\xa9t\\xc3\\xa9 y) -> Tensor\n"
                    "                ^");
    tsc_rejects_msg("f(Tensor? x, */ y) -> Tensor",
                    "<text>:1:15: expected ',' or ')' after '*'\n"
                    "    f(Tensor? x, \\x2a/ y) -> Tensor\n"
                    "                  ^");
    /* The file name is the caller's, shown as given. */
    WBT_FAILS(wb_schema_parse("f(", "dir/specs.txt", 1, &sc), WB_ERR_SPEC,
              "dir/specs.txt:1:3: expected a parameter type or '*'\n");
    cr_assert_null(sc);
    WBT_FAILS(wb_schema_parse("f(", "caf\xc3\xa9.txt", 7, &sc),
              WB_ERR_SPEC, "caf\xc3\xa9.txt:7:3: expected a parameter type "
              "or '*'\n");
}

/* Numbers of any length saturate instead of overflowing. */
Test(schema, long_numbers_saturate)
{
    static const tsc_case c[] = {
        {"f(int[99999999999999999999999999999999] x) -> ()", 7,
         "expected a list size of at most 999999999"},
        {"f(int[1000000000] x) -> ()", 7,
         "expected a list size of at most 999999999"},
        {"f(Tensor x) -> Tensor [dynamic=99999999999999999999999]", 32,
         "return 0: dynamic takes dims 0..15 separated by '|'"},
        {"f(Tensor x) -> Tensor [dynamic=1|99999999999999999999999]", 32,
         "return 0: dynamic takes dims 0..15 separated by '|'"},
        {"f(Tensor x [ndim=9999999999999999999999999999]) -> ()", 18,
         "parameter 0 'x': ndim takes one number 0..16"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
    wb_schema *sc = tsc_parse("f(int[999999999] a, "
                              "int[00000000000000000000001] b) -> ()");
    cr_assert_str_eq(wb_schema_arg_type(sc, 0), "int[999999999]");
    cr_assert_str_eq(wb_schema_arg_type(sc, 1), "int[1]");
    wb_schema_free(sc);
    wb_spec *s = tsc_spec("f(Tensor x [ndim=00000000000000000000016]) -> "
                          "Tensor [dynamic=0000000000000000000015]");
    cr_assert_eq(s->inputs[0].ndim, 16);
    cr_assert_eq(s->outputs[0].dyn, (uint64_t)1 << 15);
    wb_spec_free(s);
}

/* ---- rejections that need the whole schema ------------------------------ */

Test(schema, semantic_rejections)
{
    static const tsc_case c[] = {
        {"f(Tensor x, Tensor y, Tensor x) -> Tensor", 30,
         "parameter 2 'x': parameter 0 has the same name"},
        {"f(Tensor x) -> (Tensor a, Tensor b, Tensor a)", 44,
         "return 2 'a': return 0 has the same name"},
        {"f(int(a) x) -> Tensor", 6,
         "parameter 0 'x': only a Tensor has an alias annotation, not 'int'"},
        {"f(Storage(a!) x) -> Tensor", 10, "parameter 0 'x': only a Tensor "
                                           "has an alias annotation, not "
                                           "'Storage'"},
        {"f(Tensor x) -> Scalar(a)", 22,
         "return 0: only a Tensor has an alias annotation, not 'Scalar'"},
        {"f(int! x) -> Tensor", 6,
         "parameter 0 'x': only a Tensor has an alias annotation, not 'int'"},
        {"f(int[2](a) x) -> Tensor", 9,
         "parameter 0 'x': only a Tensor has an alias annotation, not 'int'"},
        {"f(complex(a) x) -> Tensor", 10,
         "parameter 0 'x': only a Tensor has an alias annotation, not "
         "'complex'"},
        {"f(Tensor x) -> float!", 21,
         "return 0: only a Tensor has an alias annotation, not 'float'"},
        {"f(Tensor x) -> Tensor(c) [base, base]", 33,
         "return 0: attribute 'base' is given twice"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
    tsc_rejects_msg("f(Tensor x, *, Tensor y, *) -> Tensor",
                    "<text>:1:26: the keyword-only marker '*' appears twice\n"
                    "    f(Tensor x, *, Tensor y, *) -> Tensor\n"
                    "                             ^");
}

/* device= declares where an input lives; the generated code checks it
   and names it. */
Test(schema, extension_declares_devices)
{
    wb_spec *s;
    char *c;
    WBT_OK(wb_spec_parse("f(Tensor(a!) x [device=cuda:1], Tensor y "
                         "[device=cpu], Tensor z [device=cuda]) -> Tensor",
                         &s));
    WBT_OK(wb_spec_validate(s));
    WBT_OK(wb_emit_c(s, &c));
    cr_assert(strstr(c, "input 0 'x', INOUT, data mutation, cuda:1"), "%s", c);
    cr_assert(strstr(c, "input 1 'y', IN, cpu"), "%s", c);
    /* The device is the top 16 bits of the word each argument check
       compares: its type, then its id. */
    cr_assert(strstr(c, "(t->meta & 0xffff000000000000ull) != "
                        "0x102000000000000ull"), "%s", c);
    cr_assert(strstr(c, "(t->meta & 0xffff000000000000ull) != "
                        "0x1000000000000ull"), "%s", c);
    cr_assert(strstr(c, "(t->meta & 0xffff000000000000ull) != "
                        "0x2000000000000ull"), "%s", c);
    /* x is on a device: the call ends with the device write-back. */
    cr_assert(strstr(c, "return wb_rt_flush(e, outs, 1);"), "%s", c);
    free(c);
    wb_spec_free(s);
    /* All copies declared on the CPU: no write-back step. */
    WBT_OK(wb_spec_parse("f(Tensor(a!) x [device=cpu]) -> Tensor", &s));
    WBT_OK(wb_spec_validate(s));
    WBT_OK(wb_emit_c(s, &c));
    cr_assert(!strstr(c, "wb_rt_flush"), "%s", c);
    free(c);
    wb_spec_free(s);
}

Test(schema, extension_rejections_parameters)
{
    static const tsc_case c[] = {
        {"f(Tensor x, Tensor y [duplicate=z]) -> Tensor", 33,
         "parameter 1 'y': duplicate takes the name of an earlier "
         "parameter"},
        {"f(Tensor(a) x, Tensor(a) y [duplicate=x]) -> Tensor(a)", 22,
         "parameter 1 'y': a duplicate has no alias set or mutation of its "
         "own; annotate parameter 0 'x'"},
        {"f(Tensor x, Tensor(a!) y [duplicate=x]) -> Tensor", 19,
         "parameter 1 'y': a duplicate has no alias set or mutation of its "
         "own; annotate parameter 0 'x'"},
        {"f(Tensor x, Tensor(*) y [duplicate=x]) -> Tensor", 19,
         "parameter 1 'y': a duplicate has no alias set or mutation of its "
         "own; annotate parameter 0 'x'"},
        {"f(Tensor x [duplicate=x]) -> Tensor", 23,
         "parameter 0 'x': duplicate takes the name of an earlier "
         "parameter"},
        {"f(Tensor x, int n [duplicate=x]) -> Tensor", 20,
         "parameter 1 'n': attribute 'duplicate' applies to a Tensor "
         "parameter, not to 'int'"},
        {"f(Tensor(a) x [metadata]) -> Tensor", 16,
         "parameter 0 'x': attribute 'metadata' needs a mutable annotation "
         "such as Tensor(a!)"},
        {"f(Tensor x [in_graph]) -> Tensor", 13,
         "parameter 0 'x': attribute 'in_graph' needs a mutable annotation "
         "such as Tensor(a!)"},
        {"f(Tensor x [data]) -> Tensor", 13,
         "parameter 0 'x': attribute 'data' needs a mutable annotation such "
         "as Tensor(a!)"},
        {"f(Tensor(a!) x [metadata, storage]) -> Tensor", 27,
         "parameter 0 'x': attribute 'storage' conflicts with 'metadata'; a "
         "parameter has one mutation kind"},
        {"f(Tensor(a!) x [resize, resize]) -> Tensor", 25,
         "parameter 0 'x': attribute 'resize' is given twice"},
        {"f(Tensor x [device=tpu]) -> Tensor", 20,
         "parameter 0 'x': device is cpu, cuda or cuda:N with N at most 255"},
        {"f(Tensor x [device=cpu:1]) -> Tensor", 20,
         "parameter 0 'x': device is cpu, cuda or cuda:N with N at most 255"},
        {"f(Tensor x [device=cuda:256]) -> Tensor", 20,
         "parameter 0 'x': device is cpu, cuda or cuda:N with N at most 255"},
        {"f(Tensor(a!) x [bogus]) -> Tensor", 17,
         "parameter 0 'x': unknown attribute 'bogus'; a parameter takes "
         "data, metadata, data_metadata, storage, resize, in_graph, hidden, "
         "detach, dtype=NAME, ndim=N, device=DEVICE, duplicate=NAME or "
         "aliases=NAME"},
        {"f(Tensor(a!) x [requires_grad]) -> Tensor", 17,
         "parameter 0 'x': unknown attribute 'requires_grad'; a parameter "
         "takes data, metadata, data_metadata, storage, resize, in_graph, "
         "hidden, detach, dtype=NAME, ndim=N, device=DEVICE, "
         "duplicate=NAME or aliases=NAME"},
        {"f(Tensor(a!) x [data=1]) -> Tensor", 22,
         "parameter 0 'x': attribute 'data' takes no value"},
        {"f(Tensor x [detach=yes]) -> Tensor", 20,
         "parameter 0 'x': attribute 'detach' takes no value"},
        {"f(Tensor x [dtype]) -> Tensor", 13,
         "parameter 0 'x': attribute 'dtype' needs a value, as in dtype=..."},
        {"f(Tensor x [dtype=float33]) -> Tensor", 19,
         "parameter 0 'x': dtype 'float33' is not one of float16, bfloat16, "
         "float32, float64, int8, int16, int32, int64, uint8, bool"},
        {"f(Tensor x [dtype=32]) -> Tensor", 19,
         "parameter 0 'x': dtype 'a number' is not one of float16, "
         "bfloat16, float32, float64, int8, int16, int32, int64, uint8, "
         "bool"},
        {"f(Tensor x [ndim=17]) -> Tensor", 18,
         "parameter 0 'x': ndim takes one number 0..16"},
        {"f(Tensor x [ndim=1|2]) -> Tensor", 18,
         "parameter 0 'x': ndim takes one number 0..16"},
        {"f(Tensor x [ndim=two]) -> Tensor", 18,
         "parameter 0 'x': ndim takes one number 0..16"},
        {"f(Tensor x [ndim=99999999999999999999]) -> Tensor", 18,
         "parameter 0 'x': ndim takes one number 0..16"},
        {"f(int x [detach]) -> Tensor", 10,
         "parameter 0 'x': attribute 'detach' applies to a Tensor "
         "parameter, not to 'int'"},
        {"f(Tensor x, Tensor y [aliases=z]) -> Tensor", 31,
         "parameter 1 'y': aliases takes the name of an earlier parameter"},
        {"f(Tensor[2] x, Tensor y [aliases=x]) -> Tensor", 34,
         "parameter 1 'y': aliases names parameter 0 'x', a list; it takes "
         "a single tensor"},
        {"f(Tensor x, Tensor[2] y [aliases=x]) -> Tensor", 26,
         "parameter 1 'y': attribute 'aliases' applies to a single Tensor "
         "parameter, not to the list 'Tensor[2]'"},
        {"f(Tensor[2] x, Tensor y [duplicate=x]) -> Tensor", 36,
         "parameter 1 'y': duplicate names parameter 0 'x', a list; it "
         "takes a single tensor"},
        {"f(Tensor x, Tensor[2] y [duplicate=x]) -> Tensor", 26,
         "parameter 1 'y': attribute 'duplicate' applies to a single Tensor "
         "parameter, not to the list 'Tensor[2]'"},
        {"f(Tensor?[2] x [ndim=2]) -> Tensor", 17,
         "parameter 0 'x': attribute 'ndim' does not apply to an optional "
         "tensor ('Tensor?[2]'), which may be NULL"},
        {"f(Tensor[2]? x [ndim=2]) -> Tensor", 17,
         "parameter 0 'x': attribute 'ndim' does not apply to an optional "
         "tensor ('Tensor[2]?'), which may be NULL"},
        {"f(Tensor(a!) x [metadata, hidden]) -> Tensor", 27,
         "parameter 0 'x': attribute 'hidden' qualifies a data or in_graph "
         "mutation, which this parameter lacks"},
        {"f(Tensor(a!) x [in_graph]) -> Tensor", 17,
         "parameter 0 'x': attribute 'in_graph' needs the graph attribute "
         "keep_input_mutations"},
        {"f(Tensor x [detach]) -> Tensor with keep_input_mutations", 13,
         "parameter 0 'x': attribute 'detach' needs the graph attribute "
         "training"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
    tsc_rejects_msg("f(Tensor? w [detach]) -> Tensor with training",
                    "<text>:1:14: parameter 0 'w': attribute 'detach' does "
                    "not apply to an optional tensor ('Tensor?'), which "
                    "may be NULL\n"
                    "    f(Tensor? w [detach]) -> Tensor with training\n"
                    "                 ^");
}

Test(schema, extension_rejections_returns_and_graph)
{
    static const tsc_case c[] = {
        {"f(Tensor x) -> Tensor [bogus]", 24,
         "return 0: unknown attribute 'bogus'; a return takes "
         "requires_grad, dynamic=D|D..., unsafe_view, custom_function_view, "
         "save_as_output, base or is_input"},
        {"f(Tensor x) -> Tensor y [detach]", 26,
         "return 0 'y': unknown attribute 'detach'; a return takes "
         "requires_grad, dynamic=D|D..., unsafe_view, custom_function_view, "
         "save_as_output, base or is_input"},
        {"f(Tensor x) -> Tensor [requires_grad=1]", 38,
         "return 0: attribute 'requires_grad' takes no value"},
        {"f(Tensor x) -> Tensor [dynamic]", 24,
         "return 0: attribute 'dynamic' needs a value, as in dynamic=..."},
        {"f(Tensor x) -> Tensor [dynamic=0|16]", 32,
         "return 0: dynamic takes dims 0..15 separated by '|'"},
        {"f(Tensor x) -> Tensor [dynamic=all]", 32,
         "return 0: dynamic takes dims 0..15 separated by '|'"},
        {"f(Tensor x) -> Tensor [unsafe_view, custom_function_view]", 37,
         "return 0: attribute 'custom_function_view' conflicts with "
         "'unsafe_view'"},
        {"f(Tensor x) -> int [requires_grad]", 21,
         "return 0: attribute 'requires_grad' applies to a Tensor return, "
         "not to 'int'"},
        {"f(Tensor x) -> Tensor?[2] y [requires_grad]", 30,
         "return 0 'y': attribute 'requires_grad' applies to a Tensor "
         "return, not to 'Tensor?[2]'"},
        {"f(Tensor x) -> (Tensor(c)[2] y [base], Tensor(c))", 33,
         "return 0 'y': attribute 'base' applies to a single Tensor return, "
         "not to the list 'Tensor(c)[2]': an alias set has one base"},
        {"f(Tensor(a) x) -> Tensor(a) [unsafe_view]", 30,
         "return 0: attribute 'unsafe_view' applies to a return that "
         "aliases nothing"},
        {"f(Tensor x) -> Tensor(c) [custom_function_view]", 27,
         "return 0: attribute 'custom_function_view' applies to a return "
         "that aliases nothing"},
        {"f(Tensor(a!) x) -> Tensor(a!) y [requires_grad]", 34,
         "return 0 'y': attribute 'requires_grad' does not apply: the "
         "return is parameter 0 'x' itself, the caller's own tensor"},
        {"f(Tensor x) -> Tensor [base]", 24,
         "return 0: attribute 'base' applies to a return whose alias set no "
         "parameter has"},
        {"f(Tensor(a) x) -> Tensor(a) [save_as_output]", 30,
         "return 0: attribute 'save_as_output' applies to a return whose "
         "alias set no parameter has"},
        {"f(Tensor x) -> Tensor(c) [is_input]", 27,
         "return 0: attribute 'is_input' applies to a return whose alias "
         "set a parameter has"},
        {"f(Tensor x) -> Tensor [is_input]", 24,
         "return 0: attribute 'is_input' applies to a return whose alias "
         "set a parameter has"},
        {"f(Tensor(a) x) -> Tensor(a) y [is_input, requires_grad]", 42,
         "return 0 'y': attribute 'requires_grad' does not apply: the "
         "return is parameter 0 'x' itself, the caller's own tensor"},
        {"f(Tensor x) -> (Tensor(c) a [base], Tensor(c) b [base])", 50,
         "return 1 'b': alias set 'c' already has its base, return 0 'a'"},
        {"f() -> (Tensor(c) a [base], Tensor(c) b [save_as_output])", 42,
         "return 1 'b': attribute 'save_as_output' does not apply: alias "
         "set 'c' has a base return, return 0 'a'"},
        {"f(Tensor x) -> Tensor(c) a [base, save_as_output]", 35,
         "return 0 'a': attribute 'save_as_output' does not apply to the "
         "base of alias set 'c'"},
        {"f(Tensor x) -> Tensor with bogus", 28,
         "graph: unknown attribute 'bogus'; the graph takes training, "
         "keep_input_mutations, inplace_view, grad_at_end=on|off, "
         "effect_tokens=N or functional_rng"},
        {"f(Tensor x) -> Tensor with inplace_view, inplace_view", 42,
         "graph: attribute 'inplace_view' is given twice"},
        {"f(Tensor x) -> Tensor with inplace_view=on", 41,
         "graph: attribute 'inplace_view' takes no value"},
        {"f(Tensor x) -> Tensor with training, training", 38,
         "graph: attribute 'training' is given twice"},
        {"f(Tensor x) -> Tensor with training=1", 37,
         "graph: attribute 'training' takes no value"},
        {"f(Tensor x) -> Tensor with grad_at_end", 28,
         "graph: attribute 'grad_at_end' needs a value, as in "
         "grad_at_end=..."},
        {"f(Tensor x) -> Tensor with grad_at_end=maybe", 40,
         "graph: grad_at_end takes on or off"},
        {"f(Tensor x) -> Tensor with grad_at_end=1", 40,
         "graph: grad_at_end takes on or off"},
        {"f(Tensor x) -> Tensor with effect_tokens=17", 42,
         "graph: effect_tokens takes one number 0..16"},
        {"f(Tensor x) -> Tensor with effect_tokens=on", 42,
         "graph: effect_tokens takes one number 0..16"},
    };
    tsc_rejects_all(c, TSC_COUNT(c));
}

/* ---- the mapping onto the spec ------------------------------------------ */

Test(schema, mapping_of_parameters)
{
    const char *text = "f(Tensor a, Tensor(b) b, Tensor? c, Tensor(d!) d, "
                       "int e, float f, bool g, Scalar h, int? i, int[2] j, "
                       "*, Tensor(k!) k, Tensor l, Tensor? m=None) -> ()";
    wb_schema *sc = tsc_parse(text);
    wb_spec *s = tsc_spec(text);
    static const wb_direction dirs[] = {
        WB_DIR_IN, WB_DIR_IN, WB_DIR_IN, WB_DIR_INOUT, WB_DIR_SCALAR,
        WB_DIR_SCALAR, WB_DIR_SCALAR, WB_DIR_SCALAR, WB_DIR_SCALAR,
        WB_DIR_SCALAR, WB_DIR_OUT, WB_DIR_IN, WB_DIR_IN};
    static const unsigned flags[] = {0, 0, WB_INPUT_OPTIONAL, 0, 0, 0, 0, 0,
                                     0, 0, WB_INPUT_OUT, 0,
                                     WB_INPUT_OPTIONAL};
    cr_assert_eq(wb_spec_num_inputs(s), TSC_COUNT(dirs));
    for (int i = 0; i < TSC_COUNT(dirs); i++) {
        cr_assert_eq(wb_spec_direction(s, i), dirs[i], "input %d", i);
        cr_assert_eq(wb_schema_arg_dir(sc, i), dirs[i], "input %d", i);
        cr_assert_str_eq(wb_spec_c_type(s, i), wb_schema_arg_ctype(sc, i));
        cr_assert_str_eq(s->inputs[i].name, wb_schema_arg_name(sc, i));
        if (s->inputs[i].is_tensor)
            cr_assert_eq(s->inputs[i].flags, flags[i], "input %d", i);
    }
    cr_assert_eq(s->inputs[3].mutation, WB_MUT_DATA);
    cr_assert_eq(s->inputs[10].mutation, WB_MUT_DATA);
    cr_assert_eq(s->inputs[0].mutation, WB_MUT_NONE);
    cr_assert_eq(s->inputs[8].scalar, WB_SCALAR_OPAQUE, "int? is opaque");
    cr_assert_eq(s->inputs[9].scalar, WB_SCALAR_OPAQUE, "int[2] is opaque");
    cr_assert_eq(wb_spec_num_updated(s), 2);
    cr_assert_eq(wb_spec_num_values(s), 2);
    cr_assert_str_eq(wb_spec_signature(s), "(IN a, IN b, IN c, INOUT d, "
                                           "OUT k, IN l, IN m)");
    wb_spec_free(s);
    wb_schema_free(sc);
}

/* An op that returns its input as it is (contiguous() of a contiguous
   tensor) returns the parameter itself without mutating it: is_input. */
Test(schema, is_input_of_an_unmutated_parameter)
{
    const char *text = "contiguous(Tensor(a) self, Tensor(b) other) -> "
                       "(Tensor(a) [is_input], Tensor(b))";
    wb_spec *s = tsc_spec(text);
    cr_assert_eq(s->inputs[0].mutation, WB_MUT_NONE);
    cr_assert_eq(s->outputs[0].kind, WB_OUT_IS_INPUT);
    cr_assert_eq(s->outputs[0].base, 0);
    cr_assert_eq(s->outputs[1].kind, WB_OUT_ALIAS_OF_INPUT);
    cr_assert_eq(s->outputs[1].base, 1);
    WBT_OK(wb_spec_validate(s));
    wb_spec_free(s);
    /* On a mutated parameter it says what the `!` already does. */
    s = tsc_spec("add_(Tensor(a!) self) -> Tensor(a!) [is_input]");
    cr_assert_eq(s->outputs[0].kind, WB_OUT_IS_INPUT);
    cr_assert_eq(s->inputs[0].mutation, WB_MUT_DATA);
    wb_spec_free(s);
}

Test(schema, mapping_of_mutation_attributes)
{
    const char *text =
        "f(Tensor(a!) a [data], Tensor(b!) b [metadata], Tensor(c!) c "
        "[data_metadata], Tensor(d!) d [storage], Tensor(e!) e [resize], "
        "Tensor(f!) f [in_graph], Tensor(g!) g [in_graph, hidden], Tensor(h!) "
        "h, Tensor i [detach, dtype=bfloat16, ndim=0], Tensor j [dtype=int8], "
        "Tensor k [ndim=16]) -> () with training, keep_input_mutations";
    static const wb_mutation muts[] = {
        WB_MUT_DATA, WB_MUT_METADATA, WB_MUT_DATA_METADATA, WB_MUT_STORAGE,
        WB_MUT_RESIZE, WB_MUT_IN_GRAPH, WB_MUT_IN_GRAPH, WB_MUT_DATA,
        WB_MUT_NONE, WB_MUT_NONE, WB_MUT_NONE};
    wb_spec *s = tsc_spec(text);
    for (int i = 0; i < TSC_COUNT(muts); i++)
        cr_assert_eq(s->inputs[i].mutation, muts[i], "input %d", i);
    cr_assert_eq(s->inputs[6].flags, WB_INPUT_HIDDEN);
    cr_assert_eq(s->inputs[8].flags, WB_INPUT_DETACH);
    cr_assert_eq(s->inputs[8].dtype.code, kDLBfloat);
    cr_assert_eq(s->inputs[8].dtype.bits, 16);
    cr_assert_eq(s->inputs[8].ndim, 0);
    cr_assert_eq(s->inputs[9].dtype.code, kDLInt);
    cr_assert_eq(s->inputs[9].dtype.bits, 8);
    cr_assert_eq(s->inputs[9].ndim, -1);
    cr_assert_eq(s->inputs[10].dtype.bits, 0);
    cr_assert_eq(s->inputs[10].ndim, 16);
    cr_assert(s->training);
    cr_assert(s->keep_input_mutations);
    cr_assert_eq(s->grad_at_end, -1);
    /* Six runtime mutations; in-graph ones are not written back. */
    cr_assert_eq(wb_spec_num_updated(s), 6);
    cr_assert_eq(wb_spec_num_values(s), 6);
    wb_spec_free(s);
    static const struct {
        const char *name;
        uint8_t code, bits;
    } dt[] = {
        {"float16", kDLFloat, 16}, {"bfloat16", kDLBfloat, 16},
        {"float32", kDLFloat, 32}, {"float64", kDLFloat, 64},
        {"int8", kDLInt, 8},       {"int16", kDLInt, 16},
        {"int32", kDLInt, 32},     {"int64", kDLInt, 64},
        {"uint8", kDLUInt, 8},
    };
    for (int i = 0; i < TSC_COUNT(dt); i++) {
        char t[128];
        snprintf(t, sizeof t, "f(Tensor x [dtype=%s]) -> ()", dt[i].name);
        s = tsc_spec(t);
        cr_assert_eq(s->inputs[0].dtype.code, dt[i].code, "%s", dt[i].name);
        cr_assert_eq(s->inputs[0].dtype.bits, dt[i].bits, "%s", dt[i].name);
        cr_assert_eq(s->inputs[0].dtype.lanes, 1);
        wb_spec_free(s);
    }
    s = tsc_spec("f(Tensor x [dtype=bool]) -> () with grad_at_end=off");
    cr_assert_eq(s->inputs[0].dtype.bits, 8);
    cr_assert_eq(s->grad_at_end, 0);
    wb_spec_free(s);
}

Test(schema, mapping_of_returns)
{
    const char *text =
        "f(Tensor(a!) x, Tensor(b) y, Tensor(c|d) z) -> (Tensor plain, "
        "Tensor(a!) same, Tensor(a) view, Tensor(b) yv, Tensor(d) zv, "
        "Tensor(e) i0, Tensor(f) i1 [save_as_output], Tensor(e) i0b, "
        "Tensor(g) whole [base], Tensor(g) part, Tensor u [unsafe_view], "
        "Tensor cf [custom_function_view, requires_grad, dynamic=0|3|15], "
        "Tensor(h) i2, Tensor(g) part2)";
    static const struct {
        const char *name;
        wb_schema_alias alias;
        int base;
        wb_alias kind;
        int spec_base;
    } c[] = {
        {"plain", WB_SCHEMA_NONE, -1, WB_OUT_NON_ALIAS, -1},
        {"same", WB_SCHEMA_IS_INPUT, 0, WB_OUT_IS_INPUT, 0},
        {"view", WB_SCHEMA_ALIAS_OF_INPUT, 0, WB_OUT_ALIAS_OF_INPUT, 0},
        {"yv", WB_SCHEMA_ALIAS_OF_INPUT, 1, WB_OUT_ALIAS_OF_INPUT, 1},
        {"zv", WB_SCHEMA_ALIAS_OF_INPUT, 2, WB_OUT_ALIAS_OF_INPUT, 2},
        {"i0", WB_SCHEMA_ALIAS_OF_INTERMEDIATE, 0,
         WB_OUT_ALIAS_OF_INTERMEDIATE, 0},
        {"i1", WB_SCHEMA_ALIAS_OF_INTERMEDIATE, 1,
         WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 1},
        {"i0b", WB_SCHEMA_ALIAS_OF_INTERMEDIATE, 0,
         WB_OUT_ALIAS_OF_INTERMEDIATE, 0},
        {"whole", WB_SCHEMA_NONE, -1, WB_OUT_NON_ALIAS, -1},
        {"part", WB_SCHEMA_ALIAS_OF_INTERMEDIATE, -1,
         WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 8},
        {"u", WB_SCHEMA_NONE, -1, WB_OUT_UNSAFE_VIEW_ALIAS, -1},
        {"cf", WB_SCHEMA_NONE, -1, WB_OUT_CUSTOM_FUNCTION_VIEW, -1},
        {"i2", WB_SCHEMA_ALIAS_OF_INTERMEDIATE, 2,
         WB_OUT_ALIAS_OF_INTERMEDIATE, 2},
        {"part2", WB_SCHEMA_ALIAS_OF_INTERMEDIATE, -1,
         WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 8},
    };
    wb_schema *sc = tsc_parse(text);
    wb_spec *s = tsc_spec(text);
    cr_assert_null(wb_schema_unwrappable(sc));
    cr_assert_eq(wb_schema_num_returns(sc), TSC_COUNT(c));
    cr_assert_eq(wb_schema_num_bases(sc), 3, "e, f and h; g has a base");
    for (int k = 0; k < TSC_COUNT(c); k++) {
        cr_assert_str_eq(wb_schema_return_name(sc, k), c[k].name);
        cr_assert_eq(wb_schema_return_alias(sc, k), c[k].alias, "%s",
                     c[k].name);
        cr_assert_eq(wb_schema_return_base(sc, k), c[k].base, "%s",
                     c[k].name);
        cr_assert_eq(wb_schema_return_kind(sc, k), c[k].kind, "%s",
                     c[k].name);
        cr_assert_eq(wb_schema_return_spec_base(sc, k), c[k].spec_base, "%s",
                     c[k].name);
        cr_assert_str_eq(s->outputs[k].name, c[k].name);
        cr_assert_eq(s->outputs[k].kind, c[k].kind, "%s", c[k].name);
        cr_assert_eq(s->outputs[k].base, c[k].spec_base, "%s", c[k].name);
    }
    cr_assert(s->outputs[11].requires_grad);
    cr_assert_eq(s->outputs[11].dyn, 0x8009u);
    cr_assert(!s->outputs[0].requires_grad);
    cr_assert_eq(s->nbases, 3);
    cr_assert_eq(wb_spec_num_updated(s), 1);
    cr_assert_eq(wb_spec_num_values(s), 1 + 14 + 3);
    cr_assert_str_eq(wb_schema_alias_name(WB_SCHEMA_NONE), "none");
    cr_assert_str_eq(wb_schema_alias_name(WB_SCHEMA_IS_INPUT), "is_input");
    cr_assert_str_eq(wb_schema_alias_name(WB_SCHEMA_ALIAS_OF_INPUT),
                     "alias_of_input");
    cr_assert_str_eq(wb_schema_alias_name(WB_SCHEMA_ALIAS_OF_INTERMEDIATE),
                     "alias_of_intermediate");
    cr_assert_str_eq(wb_schema_alias_name((wb_schema_alias)99), "?");
    wb_spec_free(s);
    wb_schema_free(sc);
}

/* A list of known length is an input or output per element, each with
   the list's attributes; bases and duplicates name inputs and outputs. */
Test(schema, mapping_of_lists)
{
    const char *text =
        "f(Tensor(a!)[2] xs [metadata, dtype=float32], Tensor?[2] idx, "
        "Tensor(b) y, Tensor z [duplicate=y], Tensor(c!)[3] outs [resize]) -> "
        "(Tensor(a!)[2] same, Tensor(b)[3] parts [requires_grad, dynamic=1], "
        "Tensor(d)[2] inter, Tensor(c)[3] views, Tensor(e) whole [base], "
        "Tensor(e)[2] halves, Tensor[1] one)";
    static const struct {
        const char *name;
        wb_alias kind;
        int base;
    } out[] = {
        {"same[0]", WB_OUT_IS_INPUT, 0},
        {"same[1]", WB_OUT_IS_INPUT, 1},
        {"parts[0]", WB_OUT_ALIAS_OF_INPUT, 4},
        {"parts[1]", WB_OUT_ALIAS_OF_INPUT, 4},
        {"parts[2]", WB_OUT_ALIAS_OF_INPUT, 4},
        {"inter[0]", WB_OUT_ALIAS_OF_INTERMEDIATE, 0},
        {"inter[1]", WB_OUT_ALIAS_OF_INTERMEDIATE, 0},
        {"views[0]", WB_OUT_ALIAS_OF_INPUT, 6},
        {"views[1]", WB_OUT_ALIAS_OF_INPUT, 7},
        {"views[2]", WB_OUT_ALIAS_OF_INPUT, 8},
        {"whole", WB_OUT_NON_ALIAS, -1},
        {"halves[0]", WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 10},
        {"halves[1]", WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 10},
        {"one[0]", WB_OUT_NON_ALIAS, -1},
    };
    static const char *const in[] = {"xs[0]",   "xs[1]",   "idx[0]",
                                     "idx[1]",  "y",       "z",
                                     "outs[0]", "outs[1]", "outs[2]"};
    wb_schema *sc = tsc_parse(text);
    wb_spec *s = tsc_spec(text);
    long long first;
    cr_assert_null(wb_schema_unwrappable(sc));
    cr_assert_eq(wb_schema_arg_inputs(sc, 0, &first), 2);
    cr_assert_eq(first, 0);
    cr_assert_eq(wb_schema_arg_inputs(sc, 1, &first), 2);
    cr_assert_eq(first, 2);
    cr_assert_eq(wb_schema_arg_inputs(sc, 4, &first), 3);
    cr_assert_eq(first, 6);
    cr_assert(wb_schema_arg_listed(sc, 1) && !wb_schema_arg_listed(sc, 2));
    cr_assert_str_eq(wb_schema_arg_ctype(sc, 0), "wb_tensor *[]");
    cr_assert_eq(wb_schema_return_outputs(sc, 1, &first), 3);
    cr_assert_eq(first, 2);
    cr_assert(wb_schema_return_elementwise(sc, 0));
    cr_assert(wb_schema_return_elementwise(sc, 3));
    cr_assert(!wb_schema_return_elementwise(sc, 1));
    cr_assert(wb_schema_return_listed(sc, 6) && !wb_schema_return_listed(sc, 4));
    cr_assert_eq(s->ninputs, TSC_COUNT(in));
    for (int i = 0; i < TSC_COUNT(in); i++)
        cr_assert_str_eq(s->inputs[i].name, in[i]);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(s->inputs[i].mutation, WB_MUT_METADATA);
        cr_assert_eq(s->inputs[i].dtype.bits, 32);
        cr_assert(s->inputs[2 + i].flags & WB_INPUT_OPTIONAL);
        cr_assert_eq(s->inputs[2 + i].mutation, WB_MUT_NONE);
    }
    for (int i = 6; i < 9; i++)
        cr_assert_eq(s->inputs[i].mutation, WB_MUT_RESIZE);
    cr_assert_eq(s->inputs[5].dup_of, 4, "y is input 4, after a list");
    cr_assert_eq(s->noutputs, TSC_COUNT(out));
    for (int k = 0; k < TSC_COUNT(out); k++) {
        cr_assert_str_eq(s->outputs[k].name, out[k].name);
        cr_assert_eq(s->outputs[k].kind, out[k].kind, "%s", out[k].name);
        cr_assert_eq(s->outputs[k].base, out[k].base, "%s", out[k].name);
    }
    for (int k = 2; k < 5; k++) {
        cr_assert(s->outputs[k].requires_grad);
        cr_assert_eq(s->outputs[k].dyn, 2u);
    }
    cr_assert_eq(s->nbases, 1);
    cr_assert_eq(wb_spec_num_updated(s), 5);
    cr_assert_eq(wb_spec_num_values(s), 5 + 14 + 1);
    cr_assert_eq(wb_spec_num_graph_args(s), 8);
    wb_spec_free(s);
    wb_schema_free(sc);

    /* The real schemas wrap once the list has its length. */
    static const char *const real[] = {
        "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
        "Tensor(a)[3]",
        "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[2]",
        "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[4]",
        "index_put_(Tensor(a!) self, Tensor?[2] indices, Tensor values, bool "
        "accumulate=False) -> Tensor(a!)",
        "_foreach_add_.List(Tensor(a!)[2] self, Tensor[2] other, *, Scalar "
        "alpha=1) -> ()",
        "cat(Tensor[3] tensors, int dim=0) -> Tensor",
    };
    static const int nin[] = {3, 2, 3, 5, 5, 4}, nout[] = {3, 2, 4, 1, 0, 1};
    for (int i = 0; i < TSC_COUNT(real); i++) {
        s = tsc_spec(real[i]);
        cr_assert_eq(s->ninputs, nin[i], "%s", real[i]);
        cr_assert_eq(s->noutputs, nout[i], "%s", real[i]);
        wb_spec_free(s);
    }
}

/* Returns that are numbers become outputs that are numbers, a list of
   them one per element; None is an output too. */
Test(schema, mapping_of_returns_that_are_numbers)
{
    const char *text = "f(Tensor(a!) x) -> (Tensor(a!), int n, SymInt s, "
                       "float m, bool ok, SymBool b, SymInt[2] sizes, "
                       "NoneType nothing, None none)";
    static const struct {
        const char *name, *number;
        wb_scalar_type type;
    } c[] = {
        {"", NULL, 0},
        {"n", "int64_t", WB_SCALAR_INT},
        {"s", "int64_t", WB_SCALAR_INT},
        {"m", "double", WB_SCALAR_FLOAT},
        {"ok", "bool", WB_SCALAR_BOOL},
        {"b", "bool", WB_SCALAR_BOOL},
        {"sizes[0]", "int64_t", WB_SCALAR_INT},
        {"sizes[1]", "int64_t", WB_SCALAR_INT},
        {"nothing", "None", WB_SCALAR_NONE},
        {"none", "None", WB_SCALAR_NONE},
    };
    wb_schema *sc = tsc_parse(text);
    wb_spec *s = tsc_spec(text);
    cr_assert_null(wb_schema_unwrappable(sc));
    cr_assert_eq(s->noutputs, TSC_COUNT(c));
    for (int k = 0; k < TSC_COUNT(c); k++) {
        cr_assert_str_eq(s->outputs[k].name, c[k].name);
        cr_assert_eq(s->outputs[k].scalar, c[k].type, "%s", c[k].name);
        /* sizes[0] and sizes[1] are both return 6. */
        const char *number = wb_schema_return_number(sc, k < 7 ? k : k - 1);
        if (c[k].number)
            cr_assert_str_eq(number, c[k].number, "%s", c[k].name);
        else
            cr_assert_null(number);
    }
    cr_assert_eq(wb_spec_num_values(s), 1 + TSC_COUNT(c));
    wb_spec_free(s);
    wb_schema_free(sc);
}

/* [aliases=NAME] ties a parameter to an earlier one's storage: both are
   members of one synthetic base. */
Test(schema, mapping_of_synthetic_bases)
{
    const char *text = "f(Tensor[2] xs, Tensor(a!) x, Tensor(b) y [aliases=x], "
                       "Tensor(c!) u [metadata, aliases=y]) -> Tensor(b)";
    wb_schema *sc = tsc_parse(text);
    wb_spec *s = tsc_spec(text);
    cr_assert_eq(wb_schema_arg_alias_of(sc, 2), 1);
    cr_assert_eq(wb_schema_arg_alias_of(sc, 3), 2);
    cr_assert_eq(wb_schema_arg_alias_of(sc, 1), -1);
    /* The spec's inputs: xs[0], xs[1], x, y, u. */
    cr_assert_eq(s->inputs[3].alias_of, 2);
    cr_assert_eq(s->inputs[4].alias_of, 3);
    cr_assert_eq(s->ngroups, 1);
    cr_assert_eq(s->group_first[0], 2);
    cr_assert_eq(s->nmeta_members, 1);
    cr_assert_eq(s->outs[0].group, 0);
    wb_spec_free(s);
    wb_schema_free(sc);
}

/* N and M for schemas of every shape. */
Test(schema, values_and_updates)
{
    static const struct {
        const char *text;
        int n, m;
    } c[] = {
        {"f() -> ()", 0, 0},
        {"f(Tensor x) -> Tensor", 1, 0},
        {"add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
         "Tensor(a!)", 2, 1},
        {"add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) "
         "out) -> Tensor(a!)", 2, 1},
        {"f(Tensor(a!) x, Tensor(b!) y) -> ()", 2, 2},
        {"f(Tensor(a!) x [in_graph]) -> () with keep_input_mutations", 0, 0},
        {"f(Tensor x) -> (Tensor(c) a, Tensor(d) b, Tensor(c) e)", 5, 0},
        {"f(Tensor x) -> (Tensor(c) a [base], Tensor(c) b)", 2, 0},
        {"decode_step(Tensor(a!) cache, Tensor(b) x, Tensor w, int pos, "
         "float scale) -> (Tensor, Tensor(b), Tensor(a!))", 4, 1},
    };
    for (int i = 0; i < TSC_COUNT(c); i++) {
        wb_spec *s = tsc_spec(c[i].text);
        cr_assert_eq(wb_spec_num_values(s), c[i].n, "N of %s", c[i].text);
        cr_assert_eq(wb_spec_num_updated(s), c[i].m, "M of %s", c[i].text);
        wb_spec_free(s);
    }
}

Test(schema, unwrappable_reasons)
{
    static const struct {
        const char *text, *reason;
    } c[] = {
        {"_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar "
         "alpha=1) -> ()",
         "parameter 0 'self': a tensor list ('Tensor(a!)[]') has no fixed "
         "length; give it one, as in Tensor[2]"},
        {"index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
         "parameter 1 'indices': a tensor list ('Tensor?[]') has no "
         "fixed length; give it one, as in Tensor[2]"},
        {"split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
         "Tensor(a)[]",
         "return 0: a list ('Tensor(a)[]') has no fixed length; "
         "give it one, as in Tensor[2]"},
        {"f(Tensor x) -> int[] sizes",
         "return 0 'sizes': a list ('int[]') has no fixed length; "
         "give it one, as in Tensor[2]"},
        {"_local_scalar_dense(Tensor self) -> Scalar",
         "return 0: 'Scalar' is neither a tensor nor a number the wrapper "
         "passes (int, SymInt, float, bool, SymBool, None)"},
        {"f(Tensor x) -> (Tensor a, bool? ok)",
         "return 1 'ok': an optional number ('bool?') may be None or not"},
        {"f(Tensor x) -> Tensor?",
         "return 0: an optional tensor ('Tensor?') may be None"},
        {"f(Tensor(a!)? x) -> ()",
         "parameter 0 'x': an optional tensor ('Tensor(a!)?') may be "
         "NULL, so it cannot be mutated"},
        {"f(Tensor(a)? x) -> Tensor(a)",
         "return 0: aliases parameter 0 'x', an optional tensor that may be "
         "NULL"},
        {"f(Tensor(a) x) -> Tensor(a -> *)",
         "return 0: the '->' of 'Tensor(a -> *)' leaves open what it "
         "aliases after the call"},
        {"f(Tensor(a) x) -> Tensor(a -> b)",
         "return 0: the '->' of 'Tensor(a -> b)' leaves open what it "
         "aliases after the call"},
        {"f(Tensor(a) x, Tensor(b) y) -> Tensor(a|b)",
         "return 0: 'Tensor(a|b)' names the alias sets of more than one "
         "base; an output has one"},
        {"f(Tensor(a) x) -> Tensor(a|c)",
         "return 0: 'Tensor(a|c)' names the alias sets of more than one "
         "base; an output has one"},
        {"f(Tensor x) -> Tensor(c|d)",
         "return 0: 'Tensor(c|d)' names the alias sets of more than one "
         "base; an output has one"},
        {"f(Tensor(a) x) -> Tensor(a!)",
         "return 0: writes alias set 'a', which parameter 0 'x' only reads"},
        {"f(Tensor x) -> (Tensor, Tensor(c!) w)",
         "return 1 'w': writes alias set 'c', which no parameter has"},
        {"f(Tensor x) -> (Tensor, Tensor! w)",
         "return 1 'w': writes a fresh alias set ('!'), which no parameter "
         "has"},
        {"f(Tensor(self) x) -> Tensor(self!)",
         "return 0: writes alias set 'self', which parameter 0 'x' only "
         "reads"},
        {"f(Tensor!? x) -> ()",
         "parameter 0 'x': an optional tensor ('Tensor!?') may be NULL, so "
         "it cannot be mutated"},
        {"copy_blocks(Tensor(a!)[] key_caches, Tensor[](b!) value_caches, "
         "Tensor block_mapping) -> ()",
         "parameter 0 'key_caches': a tensor list ('Tensor(a!)[]') has no "
         "fixed length; give it one, as in Tensor[2]"},
        {"f(Tensor x) -> Tensor[](c)",
         "return 0: a list ('Tensor[](c)') has no fixed length; "
         "give it one, as in Tensor[2]"},
        {"f(Tensor(*) x) -> Tensor(*)",
         "return 0: 'Tensor(*)' is in the wildcard set '*', so it may alias "
         "any tensor; an output needs one known base"},
        {"f(Tensor(a!) x, Tensor(a!) y) -> Tensor(a!)",
         "return 0: 'Tensor(a!)' names alias set 'a', which parameters 0 "
         "'x' and 1 'y' share, so its base is ambiguous; an output has one"},
        {"f(Tensor x) -> complex",
         "return 0: 'complex' is neither a tensor nor a number the wrapper "
         "passes (int, SymInt, float, bool, SymBool, None)"},
        {"f(Tensor[2]? x) -> ()",
         "parameter 0 'x': an optional list ('Tensor[2]?') may be None, so "
         "it has no fixed length"},
        {"f(Tensor x) -> Tensor[2]?",
         "return 0: an optional list ('Tensor[2]?') may be None, so it has "
         "no fixed length"},
        {"f(Tensor x) -> Tensor?[2]",
         "return 0: an optional tensor ('Tensor?[2]') may be None"},
        {"f(Tensor x) -> str[2]",
         "return 0: 'str[2]' is neither a tensor nor a number the wrapper "
         "passes (int, SymInt, float, bool, SymBool, None)"},
        {"f(Tensor(a!)[2] xs) -> Tensor(a!)",
         "return 0: 'Tensor(a!)' names alias set 'a' of parameter 0 'xs', a "
         "list whose elements share it, so its base is ambiguous; an output "
         "has one (a list return as long as the parameter pairs them up)"},
        {"f(Tensor(a)[2] xs) -> Tensor(a)[3]",
         "return 0: 'Tensor(a)[3]' names alias set 'a' of parameter 0 'xs', "
         "a list whose elements share it, so its base is ambiguous; an "
         "output has one (a list return as long as the parameter pairs them "
         "up)"},
    };
    for (int i = 0; i < TSC_COUNT(c); i++) {
        wb_schema *sc = tsc_parse(c[i].text);
        char want[1024];
        wb_spec *s = NULL;
        cr_assert_not_null(wb_schema_unwrappable(sc), "%s", c[i].text);
        cr_assert_str_eq(wb_schema_unwrappable(sc), c[i].reason);
        snprintf(want, sizeof want, "spec '%s' cannot be wrapped: %s",
                 wb_schema_name(sc), c[i].reason);
        WBT_FAILS(wb_schema_to_spec(sc, &s), WB_ERR_SPEC, c[i].reason);
        cr_assert_str_eq(wb_last_error(), want);
        cr_assert_null(s);
        WBT_FAILS(wb_spec_parse(c[i].text, &s), WB_ERR_SPEC, want);
        cr_assert_null(s);
        wb_schema_free(sc);
    }
    /* The parts that can be shown still are: directions, C types, alias
       kinds. */
    wb_schema *sc = tsc_parse("_foreach_add.List_out(Tensor[] self, Tensor[] "
                              "other, *, Scalar alpha=1, Tensor(a!)[] out) -> "
                              "()");
    cr_assert_eq(wb_schema_arg_dir(sc, 0), WB_DIR_IN);
    cr_assert_eq(wb_schema_arg_dir(sc, 3), WB_DIR_OUT);
    cr_assert_str_eq(wb_schema_arg_ctype(sc, 3), "wb_tensor **");
    wb_schema_free(sc);
    sc = tsc_parse("unbind.int(Tensor(a -> *) self, int dim=0) -> "
                   "Tensor(a)[]");
    cr_assert_eq(wb_schema_return_alias(sc, 0), WB_SCHEMA_ALIAS_OF_INPUT);
    cr_assert_eq(wb_schema_return_base(sc, 0), 0);
    wb_schema_free(sc);
}

/* The documented limits make a schema unwrappable, with the limit named. */
Test(schema, limits)
{
    size_t cap = 1100 * 16 + 64, n = 0;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    n += (size_t)sprintf(t + n, "many(");
    for (int i = 0; i < 1100; i++)
        n += (size_t)sprintf(t + n, "%sint p%d", i ? ", " : "", i);
    sprintf(t + n, ") -> ()");
    wb_schema *sc = tsc_parse(t);
    cr_assert_eq(wb_schema_num_args(sc), 1100);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "1100 parameters, more than "
                                                "WB_MAX_INPUTS (1024)");
    wb_schema_free(sc);
    n = (size_t)sprintf(t, "many() -> (");
    for (int i = 0; i < 1100; i++)
        n += (size_t)sprintf(t + n, "%sTensor r%d", i ? ", " : "", i);
    sprintf(t + n, ")");
    sc = tsc_parse(t);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "1100 returns, more than "
                                                "WB_MAX_OUTPUTS (1024)");
    wb_schema_free(sc);
    sc = tsc_parse("f(Tensor[1000] x, Tensor[25] y) -> Tensor[1025]");
    cr_assert_str_eq(wb_schema_unwrappable(sc), "the parameters' lists make "
                                                "1025 inputs, more than "
                                                "WB_MAX_INPUTS (1024)");
    wb_schema_free(sc);
    sc = tsc_parse("f(Tensor x) -> (Tensor[999999999], Tensor[999999999])");
    cr_assert_str_eq(wb_schema_unwrappable(sc), "the returns' lists make "
                                                "1999999998 outputs, more "
                                                "than WB_MAX_OUTPUTS (1024)");
    wb_schema_free(sc);
    strcpy(t, "f(Tensor[10] ");
    memset(t + 13, 'x', 254);
    strcpy(t + 13 + 254, ") -> Tensor");
    sc = tsc_parse(t);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "parameter 0 'xxxxxxxxxxxxxxxx"
                     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': the "
                     "names of its elements, up to 257 bytes, are longer "
                     "than WB_MAX_NAME (256)");
    wb_schema_free(sc);
    memset(t, 'n', 300);
    strcpy(t + 300, "(Tensor x) -> Tensor");
    sc = tsc_parse(t);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "its name of 300 bytes is "
                                                "longer than WB_MAX_NAME "
                                                "(256)");
    wb_schema_free(sc);
    strcpy(t, "f(Tensor ");
    memset(t + 9, 'x', 257);
    strcpy(t + 9 + 257, ") -> Tensor");
    sc = tsc_parse(t);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "parameter 0: its name of "
                                                "257 bytes is longer than "
                                                "WB_MAX_NAME (256)");
    wb_schema_free(sc);
    free(t);
}

Test(schema, interface_arguments)
{
    wb_schema *sc = NULL;
    wb_spec *s = NULL;
    WBT_FAILS(wb_schema_parse(NULL, NULL, 1, &sc), WB_ERR_INVALID, "NULL");
    WBT_FAILS(wb_schema_parse("f() -> ()", NULL, 1, NULL), WB_ERR_INVALID,
              "NULL");
    WBT_FAILS(wb_spec_parse(NULL, &s), WB_ERR_INVALID, "NULL");
    WBT_FAILS(wb_spec_parse("f() -> ()", NULL), WB_ERR_INVALID, "NULL");
    WBT_FAILS(wb_schema_to_spec(NULL, &s), WB_ERR_INVALID, "NULL");
    cr_assert_null(s);
    WBT_FAILS(wb_spec_parse("f(Tensor x", &s), WB_ERR_SPEC,
              "<text>:1:11: expected ',' or ')' after parameter 0 'x'\n");
    cr_assert_null(s);
    wb_schema_free(NULL);
    sc = tsc_parse("f(Tensor x) -> Tensor y");
    cr_assert_null(wb_schema_arg_name(sc, 1));
    cr_assert_null(wb_schema_arg_name(sc, -1));
    cr_assert_null(wb_schema_arg_type(sc, 1));
    cr_assert_null(wb_schema_arg_ctype(sc, 1));
    cr_assert_null(wb_schema_arg_default(sc, 1));
    cr_assert_eq((int)wb_schema_arg_dir(sc, 1), 0);
    cr_assert_null(wb_schema_return_name(sc, 1));
    cr_assert_null(wb_schema_return_type(sc, -1));
    cr_assert_eq(wb_schema_return_base(sc, 1), -1);
    cr_assert_eq(wb_schema_return_spec_base(sc, 1), -1);
    cr_assert_null(wb_schema_unwrappable(NULL));
    cr_assert_eq(wb_schema_num_args(NULL), -1);
    cr_assert_eq(wb_schema_num_returns(NULL), -1);
    cr_assert_null(wb_schema_name(NULL));
    wb_schema_free(sc);
}

/* ---- real schemas ------------------------------------------------------- */

/* Schemas as native_functions.yaml and the operator registry print them;
   wrappable says whether the mapping can wrap each. */
static const struct {
    const char *text;
    bool wrappable;
} tsc_real[] = {
    {"add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", 1},
    {"add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
     "Tensor(a!)", 1},
    {"add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) "
     "-> Tensor(a!)", 1},
    {"add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", 1},
    {"_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar "
     "alpha=1) -> ()", 0},
    {"native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? "
     "running_mean, Tensor? running_var, bool training, float momentum, "
     "float eps) -> (Tensor, Tensor, Tensor)", 1},
    {"max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
     "Tensor indices)", 1},
    {"topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool "
     "sorted=True) -> (Tensor values, Tensor indices)", 1},
    {"split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
     "Tensor(a)[]", 0},
    {"unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", 0},
    {"as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? "
     "storage_offset=None) -> Tensor(a!)", 1},
    {"resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? "
     "memory_format=None) -> Tensor(a!)", 1},
    {"set_.source_Storage(Tensor(a!) self, Storage source) -> Tensor(a!)", 1},
    {"set_.source_Storage_storage_offset(Tensor(a!) self, Storage source, "
     "SymInt storage_offset, SymInt[] size, SymInt[] stride=[]) -> "
     "Tensor(a!)", 1},
    {"convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] "
     "stride, SymInt[] padding, SymInt[] dilation, bool transposed, "
     "SymInt[] output_padding, SymInt groups) -> Tensor", 1},
    {"nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int "
     "reduction, SymInt ignore_index) -> (Tensor output, Tensor "
     "total_weight)", 1},
    {"nll_loss(Tensor self, Tensor target, Tensor? weight=None, int "
     "reduction=Mean, SymInt ignore_index=-100) -> Tensor", 1},
    {"index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", 0},
    {"index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
     "accumulate=False) -> Tensor(a!)", 0},
    {"_fused_adam_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] "
     "exp_avgs, Tensor(d!)[] exp_avg_sqs, Tensor(e!)[] max_exp_avg_sqs, "
     "Tensor[] state_steps, *, float lr, float beta1, float beta2, float "
     "weight_decay, float eps, bool amsgrad, bool maximize, Tensor? "
     "grad_scale=None, Tensor? found_inf=None) -> ()", 0},
    {"embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool "
     "scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? "
     "per_sample_weights=None, bool include_last_offset=False) -> (Tensor, "
     "Tensor, Tensor, Tensor)", 1},
    {"native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] "
     "normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? "
     "bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)", 1},
    {"layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? "
     "weight=None, Tensor? bias=None, float eps=1e-05, bool "
     "cudnn_enable=True) -> Tensor", 1},
    {"aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? "
     "bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, "
     "float momentum, float eps) -> (Tensor, Tensor, Tensor)", 1},
    {"aten::_batch_norm_with_update.out(Tensor input, Tensor? weight, "
     "Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, float "
     "momentum, float eps, *, Tensor(d!) out, Tensor(e!) save_mean, "
     "Tensor(f!) save_invstd, Tensor(g!) reserve) -> (Tensor(d!), "
     "Tensor(e!), Tensor(f!), Tensor(g!))", 1},
    {"aten::_fused_moving_avg_obs_fq_helper(Tensor self, Tensor observer_on, "
     "Tensor fake_quant_on, Tensor(a!) running_min, Tensor(b!) running_max, "
     "Tensor(c!) scale, Tensor(d!) zero_point, float averaging_const, int "
     "quant_min, int quant_max, int ch_axis, bool per_row_fake_quant=False, "
     "bool symmetric_quant=False) -> (Tensor output, Tensor mask)", 1},
    {"aten::_linalg_eigh(Tensor A, str UPLO=\"L\", bool compute_v=True) -> "
     "(Tensor eigenvalues, Tensor eigenvectors)", 1},
    {"aten::_linalg_svd.U(Tensor A, bool full_matrices=False, bool "
     "compute_uv=True, *, str? driver=None, Tensor(a!) U, Tensor(b!) S, "
     "Tensor(c!) Vh) -> (Tensor(a!) U, Tensor(b!) S, Tensor(c!) Vh)", 1},
    {"aten::_local_scalar_dense(Tensor self) -> Scalar", 0},
    {"aten::_make_dep_token(*, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, MemoryFormat? "
     "memory_format=None) -> Tensor", 1},
    {"aten::_pdist_forward(Tensor self, float p=2.) -> Tensor", 1},
    {"aten::_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) "
     "-> Tensor(a)", 1},
    {"aten::_resize_output_(Tensor(a!) self, SymInt[] size, Device device) "
     "-> Tensor(a!)", 1},
    {"aten::_scaled_dot_product_flash_attention(Tensor query, Tensor key, "
     "Tensor value, float dropout_p=0., bool is_causal=False, bool "
     "return_debug_mask=False, *, float? scale=None) -> (Tensor output, "
     "Tensor logsumexp, Tensor cum_seq_q, Tensor cum_seq_k, SymInt max_q, "
     "SymInt max_k, Tensor rng_state, Tensor unused, Tensor "
     "debug_attn_mask)", 1},
    {"aten::_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? "
     "layout=None, Device? device=None, bool? pin_memory=None, bool "
     "non_blocking=False, MemoryFormat? memory_format=None) -> Tensor", 1},
    {"aten::_unsafe_index_put(Tensor self, Tensor?[] indices, Tensor values, "
     "bool accumulate=False) -> Tensor", 0},
    {"aten::_upsample_bilinear2d_aa.vec(Tensor input, SymInt[]? "
     "output_size, bool align_corners, float[]? scale_factors) -> Tensor", 1},
    {"aten::alias(Tensor(a) self) -> Tensor(a)", 1},
    {"aten::aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, "
     "Tensor(a!) min, Tensor(b!) max) -> (Tensor(a!) min, Tensor(b!) max)",
     1},
    {"aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
     1},
    {"aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
     "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None) -> Tensor", 1},
    {"aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
     "SymInt? storage_offset=None) -> Tensor(a)", 1},
    {"aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], "
     "int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, "
     "int? divisor_override=None) -> Tensor", 1},
    {"aten::batch_norm_backward(Tensor grad_out, Tensor input, Tensor "
     "weight, Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
     "Tensor? save_var, bool update, float eps, bool[3] output_mask, Tensor "
     "reserve) -> (Tensor, Tensor, Tensor)", 1},
    {"aten::bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? "
     "generator=None) -> Tensor(a!)", 1},
    {"aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? "
     "weight=None, int reduction=1) -> Tensor", 1},
    {"aten::__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
     1},
    {"aten::_assert_async.msg(Tensor self, str assert_msg) -> ()", 1},
    {"aten::_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, "
     "Tensor(b!) found_inf, Tensor inv_scale) -> ()", 0},
    {"aten::_efficient_attention_forward(Tensor query, Tensor key, Tensor "
     "value, Tensor? bias, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, "
     "SymInt? max_seqlen_q, SymInt? max_seqlen_k, float dropout_p, int "
     "custom_mask_type, bool compute_log_sumexp=False, *, float? "
     "scale=None, Tensor? seqlen_k=None, int? window_size=None) -> (Tensor "
     "output, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, "
     "SymInt max_seqlen_batch_q, SymInt max_seqlen_batch_k)", 1},
    {"aten::all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> "
     "Tensor", 1},
    {"aten::_cslt_sparse_mm(Tensor compressed_A, Tensor dense_B, Tensor? "
     "bias=None, Tensor? alpha=None, ScalarType? out_dtype=None, bool "
     "transpose_result=False, int alg_id=0, int split_k=1, int "
     "split_k_mode=-1) -> Tensor", 1},
    {"aten::_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? "
     "stride=None, ScalarType? dtype=None, *, Device? device=None, Layout? "
     "layout=None) -> ()", 1},
    {"aten::_softmax_backward_data.out(Tensor grad_output, Tensor output, "
     "int dim, ScalarType input_dtype, *, Tensor(a!) grad_input) -> "
     "Tensor(a!)", 1},
    {"aten::_nested_view_from_buffer(Tensor(a) self, Tensor nested_size, "
     "Tensor nested_strides, Tensor offsets) -> Tensor(a)", 1},
    {"gelu(Tensor self, *, str approximate='none') -> Tensor", 1},
    {"clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", 1},
    {"contiguous(Tensor(a) self, *, MemoryFormat "
     "memory_format=contiguous_format) -> Tensor(a)", 1},
    {"hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
     1},
    {"nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? "
     "neginf=None) -> Tensor", 1},
    {"sym_size.int(Tensor self, int dim) -> SymInt", 1},
    {"is_nonzero(Tensor self) -> bool", 1},
    {"result_type.Tensor(Tensor tensor, Tensor other) -> ScalarType", 0},
    {"q_scale(Tensor self) -> float", 1},
    {"qscheme(Tensor self) -> QScheme", 0},
    {"random_.from(Tensor(a!) self, int from, int? to, *, Generator? "
     "generator=None) -> Tensor(a!)", 1},
    {"rename_(Tensor(a!) self, Dimname[]? names) -> Tensor(a!)", 1},
    {"align_to(Tensor(a) self, Dimname[] names) -> Tensor(a)", 1},
    {"record_stream(Tensor(a!) self, Stream s) -> ()", 1},
    {"chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", 0},
    {"scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str "
     "reduce, *, bool include_self=True) -> Tensor", 1},
    {"linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool "
     "keepdim=False, *, ScalarType? dtype=None) -> Tensor", 1},
    {"_empty_affine_quantized(SymInt[] size, *, ScalarType? dtype=None, "
     "Layout? layout=None, Device? device=None, bool? pin_memory=None, float "
     "scale=1, int zero_point=0, MemoryFormat? "
     "memory_format=contiguous_format) -> Tensor", 1},
    {"fbgemm_linear_quantize_weight(Tensor input) -> (Tensor, Tensor, float, "
     "int)", 1},
    {"to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? "
     "layout=None, Device? device=None, bool? pin_memory=None, bool "
     "non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) "
     "-> Tensor(a)", 1},
    {"_foreach_norm.Scalar(Tensor[] self, Scalar ord=2, ScalarType? "
     "dtype=None) -> Tensor[]", 0},
    {"einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
     0},
    {"copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> "
     "Tensor(a!)", 1},
    {"view(Tensor(a) self, SymInt[] size) -> Tensor(a)", 1},
    {"transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", 1},
    {"sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool "
     "descending=False, Tensor(a!) values, Tensor(b!) indices) -> "
     "(Tensor(a!) values, Tensor(b!) indices)", 1},
    {"normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? "
     "generator=None) -> Tensor(a!)", 1},
    {"cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", 1},
    {"squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)", 1},
    {"t_(Tensor(a!) self) -> Tensor(a!)", 1},
    {"logspace(Scalar start, Scalar end, int steps, float base=10.0, *, "
     "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None) -> Tensor", 1},
    {"_histogramdd_bin_edges(Tensor self, int[] bins, *, float[]? "
     "range=None, Tensor? weight=None, bool density=False) -> Tensor[]", 0},
    {"segment_reduce(Tensor data, str reduce, *, Tensor? lengths=None, "
     "Tensor? indices=None, Tensor? offsets=None, int axis=0, bool "
     "unsafe=False, Scalar? initial=None) -> Tensor", 1},
    {"gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) "
     "-> Tensor", 1},
    {"_cudnn_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, "
     "int[] target_lengths, int blank, bool deterministic, bool "
     "zero_infinity) -> (Tensor, Tensor)", 1},
    {"quantized_max_pool2d(Tensor self, int[2] kernel_size, int[2] "
     "stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) "
     "-> Tensor", 1},
    {"_functional_sym_constrain_range(Scalar size, int? min, int? max, "
     "Tensor dep_token) -> Tensor", 1},
    /* TORCH_LIBRARY definitions (vLLM's), as the C++ parser takes them. */
    {"rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon) "
     "-> ()", 1},
    {"fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, "
     "float epsilon) -> ()", 1},
    {"rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int "
     "head_size, Tensor cos_sin_cache, bool is_neox) -> ()", 0},
    {"copy_blocks(Tensor(a!)[] key_caches, Tensor[](b!) value_caches, "
     "Tensor block_mapping) -> ()", 0},
    {"merge_attn_states(Tensor! output, Tensor!? output_lse, Tensor "
     "prefix_output, Tensor prefix_lse, Tensor suffix_output, Tensor "
     "suffix_lse) -> ()", 0},
};

/* Prints a schema as ATen does (torchgen's FunctionSchema.__str__). */
static void tsc_print(const wb_schema *sc, char *buf, size_t n)
{
    size_t o = 0;
#define TSC_PUT(...) (o += (size_t)snprintf(buf + o, n - o, __VA_ARGS__))
    if (*wb_schema_namespace(sc))
        TSC_PUT("%s::", wb_schema_namespace(sc));
    TSC_PUT("%s(", wb_schema_name(sc));
    for (int i = 0; i < wb_schema_num_args(sc); i++) {
        if (i)
            TSC_PUT(", ");
        if (wb_schema_arg_kwonly(sc, i) &&
            (i == 0 || !wb_schema_arg_kwonly(sc, i - 1)))
            TSC_PUT("*, ");
        TSC_PUT("%s %s", wb_schema_arg_type(sc, i), wb_schema_arg_name(sc, i));
        if (wb_schema_arg_default(sc, i))
            TSC_PUT("=%s", wb_schema_arg_default(sc, i));
    }
    TSC_PUT(") -> ");
    int nr = wb_schema_num_returns(sc);
    if (nr != 1)
        TSC_PUT("(");
    for (int k = 0; k < nr; k++)
        TSC_PUT("%s%s%s%s", k ? ", " : "", wb_schema_return_type(sc, k),
                *wb_schema_return_name(sc, k) ? " " : "",
                wb_schema_return_name(sc, k));
    if (nr != 1)
        TSC_PUT(")");
#undef TSC_PUT
}

Test(schema, real_schemas_from_native_functions)
{
    cr_assert_geq(TSC_COUNT(tsc_real), 40);
    for (int i = 0; i < TSC_COUNT(tsc_real); i++) {
        const char *text = tsc_real[i].text;
        char printed[2048];
        wb_schema *sc = tsc_parse(text);
        tsc_print(sc, printed, sizeof printed);
        cr_assert_str_eq(printed, text, "printed back differently");
        cr_assert_eq(wb_schema_unwrappable(sc) == NULL, tsc_real[i].wrappable,
                     "%s: %s", text,
                     wb_schema_unwrappable(sc) ? wb_schema_unwrappable(sc)
                                               : "wrappable");
        if (tsc_real[i].wrappable) {
            wb_spec *s;
            WBT_OK(wb_schema_to_spec(sc, &s));
            WBT_OK(wb_spec_validate(s));
            cr_assert_eq(wb_spec_num_inputs(s), wb_schema_num_args(sc));
            cr_assert_eq(wb_spec_num_outputs(s), wb_schema_num_returns(sc));
            for (int a = 0; a < wb_schema_num_args(sc); a++) {
                cr_assert_eq(wb_spec_direction(s, a),
                             wb_schema_arg_dir(sc, a), "%s: %d", text, a);
                cr_assert_str_eq(wb_spec_c_type(s, a),
                                 wb_schema_arg_ctype(sc, a));
            }
            wb_wrapper *w = wbt_wrap(s, tsc_no_graph, NULL, WB_TIER_TCC);
            wb_wrapper_free(w);
            wb_spec_free(s);
        }
        wb_schema_free(sc);
    }
}

/* What the schema says of real operators, spelled out. */
Test(schema, real_schemas_mapped)
{
    wb_spec *s = tsc_spec("aten::_batch_norm_with_update.out(Tensor input, "
                          "Tensor? weight, Tensor? bias, Tensor(a!) "
                          "running_mean, Tensor(b!) running_var, float "
                          "momentum, float eps, *, Tensor(d!) out, Tensor(e!) "
                          "save_mean, Tensor(f!) save_invstd, Tensor(g!) "
                          "reserve) -> (Tensor(d!), Tensor(e!), Tensor(f!), "
                          "Tensor(g!))");
    cr_assert_str_eq(wb_spec_signature(s),
                     "(IN input, IN weight, IN bias, INOUT running_mean, "
                     "INOUT running_var, OUT out, OUT save_mean, OUT "
                     "save_invstd, OUT reserve)");
    cr_assert_eq(wb_spec_num_updated(s), 6);
    cr_assert_eq(wb_spec_num_values(s), 10);
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(s->outputs[k].kind, WB_OUT_IS_INPUT);
        cr_assert_eq(s->outputs[k].base, 7 + k);
    }
    wb_spec_free(s);
    s = tsc_spec("max.dim(Tensor self, int dim, bool keepdim=False) -> "
                 "(Tensor values, Tensor indices)");
    cr_assert_str_eq(s->outputs[0].name, "values");
    cr_assert_str_eq(s->outputs[1].name, "indices");
    cr_assert_str_eq(wb_spec_c_type(s, 1), "int64_t");
    cr_assert_str_eq(wb_spec_c_type(s, 2), "bool");
    wb_spec_free(s);
    s = tsc_spec("aten::as_strided(Tensor(a) self, SymInt[] size, SymInt[] "
                 "stride, SymInt? storage_offset=None) -> Tensor(a)");
    cr_assert_eq(s->outputs[0].kind, WB_OUT_ALIAS_OF_INPUT);
    cr_assert_eq(s->outputs[0].base, 0);
    cr_assert_str_eq(s->outputs[0].name, "");
    wb_spec_free(s);
}

/* ---- the document ------------------------------------------------------- */

/* The lines of the first ``` block after the line holding marker; *count
   receives how many.  The returned lines point into doc. */
static int tsc_doc_block(char *doc, const char *marker, char **lines, int max)
{
    char *p = strstr(doc, marker);
    cr_assert_not_null(p, "docs/spec-format.md lacks '%s'", marker);
    p = strstr(p, "\n```");
    cr_assert_not_null(p);
    p = strchr(p + 1, '\n');
    cr_assert_not_null(p);
    p++;
    int n = 0;
    while (strncmp(p, "```", 3) != 0) {
        char *e = strchr(p, '\n');
        cr_assert_not_null(e, "unterminated block after '%s'", marker);
        *e = '\0';
        cr_assert_lt(n, max);
        lines[n++] = p;
        p = e + 1;
    }
    return n;
}

Test(schema, every_example_of_the_document_parses_and_wraps)
{
    char *doc = tsc_read_file("docs/spec-format.md"), *lines[32];
    int n = tsc_doc_block(doc, "Examples (the test suite parses each of "
                               "them):", lines, 32);
    cr_assert_geq(n, 4);
    for (int i = 0; i < n; i++)
        if (*lines[i])
            tsc_wraps(lines[i]);
    free(doc);
    doc = tsc_read_file("docs/spec-format.md");
    n = tsc_doc_block(doc, "# The text spec format", lines, 32);
    cr_assert_eq(n, 2);
    for (int i = 0; i < n; i++)
        tsc_wraps(lines[i]);
    free(doc);
}

/* The error examples of the document are what the parser says. */
Test(schema, error_examples_of_the_document)
{
    static const char *markers[] = {
        "and a caret under the spot:",
        "attribute where it does not apply (below):",
    };
    for (int i = 0; i < TSC_COUNT(markers); i++) {
        char *doc = tsc_read_file("docs/spec-format.md"), *lines[4], want[1024];
        int n = tsc_doc_block(doc, markers[i], lines, 4), line;
        cr_assert_eq(n, 3);
        cr_assert_eq(sscanf(lines[0], "specs.txt:%d:", &line), 1);
        cr_assert_eq(strncmp(lines[1], "    ", 4), 0);
        snprintf(want, sizeof want, "%s\n%s\n%s", lines[0], lines[1],
                 lines[2]);
        wb_schema *sc = NULL;
        WBT_FAILS(wb_schema_parse(lines[1] + 4, "specs.txt", line, &sc),
                  WB_ERR_SPEC, "specs.txt");
        cr_assert_str_eq(wb_last_error(), want);
        free(doc);
    }
}

/* ---- text and builder agree: the same IR, the same C ---------------------- */

static void tsc_assert_same_c(const char *text, wb_spec *built)
{
    wb_spec *parsed = tsc_spec(text);
    char *a, *b;
    WBT_OK(wb_spec_validate(built));
    wbt_assert_same_items(parsed, built);
    WBT_OK(wb_emit_c(parsed, &a));
    WBT_OK(wb_emit_c(built, &b));
    cr_assert_str_eq(a, b, "the parsed and the built spec emit different C");
    free(a);
    free(b);
    wb_spec_free(parsed);
    wb_spec_free(built);
}

Test(schema, decode_step_emits_the_same_c_as_the_builder)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("decode_step", &s));
    WBT_OK(wb_spec_add_tensor(s, "cache", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "w", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_scalar(s, "pos", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "scale", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_add_output(s, "", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "", WB_OUT_ALIAS_OF_INPUT, 1, false, 0,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "", WB_OUT_IS_INPUT, 0, false, 0, NULL));
    tsc_assert_same_c("decode_step(Tensor(a!) cache, Tensor(b) x, Tensor w, "
                      "int pos, float scale) -> (Tensor, Tensor(b), "
                      "Tensor(a!))", s);
}

/* Every extension attribute, every mutation kind, every alias kind. */
static const char *const tsc_train_text =
    "aten::train_step(Tensor params [detach], Tensor(a!) running_mean "
    "[in_graph], Tensor(b!) step [in_graph, hidden], Tensor(c!) buf "
    "[storage], Tensor(d!) kv [resize, detach], Tensor(e!) shape [metadata], "
    "Tensor(g!) x [data, dtype=float32, ndim=2], Tensor? bias, *, Tensor(f!) "
    "out [data_metadata], float lr, bool flag, SymInt n, Scalar alpha) -> "
    "(Tensor loss [requires_grad], Tensor(h) h [requires_grad, "
    "dynamic=0|1], Tensor(h) h2 [save_as_output], Tensor(i) whole [base, "
    "unsafe_view], Tensor(i) part, Tensor(c) buf_view, Tensor(d) kv_view, "
    "Tensor(f!) out [dynamic=0], Tensor u [unsafe_view], Tensor v "
    "[custom_function_view]) with training, keep_input_mutations, "
    "grad_at_end=off";

static wb_spec *tsc_train_built(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("train_step", &s));
    WBT_OK(wb_spec_set_training(s, true));
    WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    WBT_OK(wb_spec_set_grad_mode_at_end(s, 0));
    WBT_OK(wb_spec_set_intermediate_bases(s, 1));
    WBT_OK(wb_spec_add_tensor(s, "params", WB_MUT_NONE, WB_INPUT_DETACH,
                              NULL));
    WBT_OK(wb_spec_add_tensor(s, "running_mean", WB_MUT_IN_GRAPH, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "step", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN,
                              NULL));
    WBT_OK(wb_spec_add_tensor(s, "buf", WB_MUT_STORAGE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "kv", WB_MUT_RESIZE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_add_tensor(s, "shape", WB_MUT_METADATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_declare_input(s, 6, WBT_F32, 2));
    WBT_OK(wb_spec_add_tensor(s, "bias", WB_MUT_NONE, WB_INPUT_OPTIONAL,
                              NULL));
    WBT_OK(wb_spec_add_tensor(s, "out", WB_MUT_DATA_METADATA, WB_INPUT_OUT,
                              NULL));
    WBT_OK(wb_spec_add_scalar(s, "lr", WB_SCALAR_FLOAT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "flag", WB_SCALAR_BOOL, NULL));
    WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_scalar(s, "alpha", WB_SCALAR_OPAQUE, NULL));
    WBT_OK(wb_spec_add_output(s, "loss", WB_OUT_NON_ALIAS, -1, true, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "h", WB_OUT_ALIAS_OF_INTERMEDIATE, 0, true,
                              0x3, NULL));
    WBT_OK(wb_spec_add_output(s, "h2",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 0,
                              false, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "whole", WB_OUT_UNSAFE_VIEW_ALIAS, -1, false,
                              0, NULL));
    WBT_OK(wb_spec_add_output(
        s, "part", WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT, 3, false,
        0, NULL));
    WBT_OK(wb_spec_add_output(s, "buf_view", WB_OUT_ALIAS_OF_INPUT, 3, false,
                              0, NULL));
    WBT_OK(wb_spec_add_output(s, "kv_view", WB_OUT_ALIAS_OF_INPUT, 4, false,
                              0, NULL));
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_IS_INPUT, 8, false, 0x1,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "u", WB_OUT_UNSAFE_VIEW_ALIAS, -1, false, 0,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "v", WB_OUT_CUSTOM_FUNCTION_VIEW, -1, false,
                              0, NULL));
    return s;
}

Test(schema, training_step_emits_the_same_c_as_the_builder)
{
    tsc_assert_same_c(tsc_train_text, tsc_train_built());
}

/* A spec from text runs: add_ on both tiers, through the wrapper. */
static int tsc_add_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)ctx; (void)na; (void)nv;
    int64_t n = wb_tensor_numel(a[0].t);
    if (wb_tensor_new(WBT_F32, WBT_CPU, wb_tensor_ndim(a[0].t),
                      wb_tensor_sizes(a[0].t), &v[0].t) != WB_OK)
        return -1;
    const float *x = wb_tensor_data(a[0].t), *y = wb_tensor_data(a[1].t);
    float *z = wb_tensor_data(v[0].t);
    for (int64_t i = 0; i < n; i++)
        z[i] = x[i] + y[i];
    v[1].t = wb_tensor_retain(v[0].t);
    return 2;
}

Test(schema, a_parsed_spec_runs)
{
    wb_spec *s = tsc_spec("aten::add_.Tensor(Tensor(a!) self, Tensor other, "
                          "*, Scalar alpha=1) -> Tensor(a!)");
    WBT_EACH_TIER(tier) {
        wb_wrapper *w = wbt_wrap(s, tsc_add_graph, NULL, tier);
        wb_tensor *x = wbt_f32(1, 1, 4), *y = wbt_f32(10, 1, 4);
        wb_value out = {NULL};
        wb_arg args[3] = {{.t = x}, {.t = y}, {.p = NULL}};
        WBT_OK(wb_call(w, args, 3, &out, 1));
        cr_assert_eq(out.t, x, "add_ returns self itself");
        cr_assert_float_eq(wbt_at(x, 3), 4.0f + 13.0f, 1e-6);
        cr_assert_eq(wb_tensor_version(x), 1);
        wb_tensor_release(out.t);
        wbt_release_last(x);
        wbt_release_last(y);
        wb_wrapper_free(w);
    }
    wb_spec_free(s);
}

/* ---- alias sets --------------------------------------------------------- */

/* Tensor! is a mutable tensor with a fresh, anonymous write set of its own,
   as in TORCH_LIBRARY definitions. */
Test(schema, bang_shorthand_is_a_fresh_write_set)
{
    const char *text = "forward_static(Tensor q, Tensor! out, float scale) -> "
                       "()";
    wb_schema *sc = tsc_parse(text);
    cr_assert_null(wb_schema_unwrappable(sc));
    cr_assert_str_eq(wb_schema_arg_type(sc, 1), "Tensor!");
    cr_assert_eq(wb_schema_arg_dir(sc, 1), WB_DIR_INOUT);
    cr_assert_eq(wb_schema_arg_mutation(sc, 1), WB_MUT_DATA);
    cr_assert_eq(wb_schema_arg_mutation(sc, 0), WB_MUT_NONE);
    wb_schema_free(sc);
    wb_spec *s = tsc_spec(text);
    cr_assert_eq(s->inputs[1].mutation, WB_MUT_DATA);
    cr_assert_eq(s->inputs[1].flags, 0);
    cr_assert_str_eq(wb_spec_signature(s), "(IN q, INOUT out)");
    cr_assert_eq(wb_spec_num_updated(s), 1);
    wb_spec_free(s);
    tsc_wraps(text);
    /* Keyword-only, it is an out argument. */
    sc = tsc_parse("f(Tensor x, *, Tensor! out) -> ()");
    cr_assert_eq(wb_schema_arg_dir(sc, 1), WB_DIR_OUT);
    cr_assert(wb_schema_arg_kwonly(sc, 1));
    wb_schema_free(sc);
    s = tsc_spec("f(Tensor x, *, Tensor! out) -> ()");
    cr_assert_eq(s->inputs[1].flags, WB_INPUT_OUT);
    cr_assert_eq(s->inputs[1].mutation, WB_MUT_DATA);
    wb_spec_free(s);
    /* Every '!' makes a set of its own: two never share one. */
    sc = tsc_parse("fused_add_rms_norm(Tensor! input, Tensor! residual, "
                   "Tensor weight, float epsilon) -> (Tensor, Tensor)");
    cr_assert_null(wb_schema_unwrappable(sc));
    cr_assert_eq(wb_schema_arg_mutation(sc, 0), WB_MUT_DATA);
    cr_assert_eq(wb_schema_arg_mutation(sc, 1), WB_MUT_DATA);
    wb_schema_free(sc);
    /* The extension's mutation attributes apply as to Tensor(a!). */
    s = tsc_spec("f(Tensor! x [metadata], Tensor ! y [in_graph], Tensor! z "
                 "[resize, detach]) -> () with keep_input_mutations, "
                 "training");
    cr_assert_eq(s->inputs[0].mutation, WB_MUT_METADATA);
    cr_assert_eq(s->inputs[1].mutation, WB_MUT_IN_GRAPH);
    cr_assert_eq(s->inputs[2].mutation, WB_MUT_RESIZE);
    cr_assert_eq(s->inputs[2].flags, WB_INPUT_DETACH);
    wb_spec_free(s);
    /* On a return, the set is one no parameter has. */
    sc = tsc_parse("f(Tensor x) -> Tensor!");
    cr_assert_eq(wb_schema_return_alias(sc, 0),
                 WB_SCHEMA_ALIAS_OF_INTERMEDIATE);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "return 0: writes a fresh "
                     "alias set ('!'), which no parameter has");
    wb_schema_free(sc);
    /* The same C as Tensor(a!), and as the builder. */
    wb_spec *a = tsc_spec("rms_norm(Tensor! result, Tensor input, Tensor "
                          "weight, float epsilon) -> ()");
    wb_spec *b = tsc_spec("rms_norm(Tensor(a!) result, Tensor input, Tensor "
                          "weight, float epsilon) -> ()");
    char *ca, *cb;
    WBT_OK(wb_emit_c(a, &ca));
    WBT_OK(wb_emit_c(b, &cb));
    cr_assert_str_eq(ca, cb);
    free(ca);
    free(cb);
    wb_spec_free(a);
    wb_spec_free(b);
    WBT_OK(wb_spec_new("rms_norm", &s));
    WBT_OK(wb_spec_add_tensor(s, "result", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "input", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "weight", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_scalar(s, "epsilon", WB_SCALAR_FLOAT, NULL));
    tsc_assert_same_c("rms_norm(Tensor! result, Tensor input, Tensor weight, "
                      "float epsilon) -> ()", s);
}

/* Alias sets are identifiers, compared whole and case by case. */
Test(schema, alias_sets_are_names)
{
    static const struct {
        const char *text;
        int k;
        wb_schema_alias alias;
        int base;
    } c[] = {
        {"g(Tensor(self) self, Tensor(other!) other) -> (Tensor(self), "
         "Tensor(other!))", 0, WB_SCHEMA_ALIAS_OF_INPUT, 0},
        {"g(Tensor(self) self, Tensor(other!) other) -> (Tensor(self), "
         "Tensor(other!))", 1, WB_SCHEMA_IS_INPUT, 1},
        {"g(Tensor(a|self!) x, Tensor y) -> Tensor(self!)", 0,
         WB_SCHEMA_IS_INPUT, 0},
        {"g(Tensor(a|self!) x, Tensor y) -> Tensor(a|self!)", 0,
         WB_SCHEMA_IS_INPUT, 0},
        {"g(Tensor(A) x, Tensor(a) y) -> (Tensor(A), Tensor(a))", 0,
         WB_SCHEMA_ALIAS_OF_INPUT, 0},
        {"g(Tensor(A) x, Tensor(a) y) -> (Tensor(A), Tensor(a))", 1,
         WB_SCHEMA_ALIAS_OF_INPUT, 1},
        {"g(Tensor(ab) x, Tensor(a) y) -> Tensor(ab)", 0,
         WB_SCHEMA_ALIAS_OF_INPUT, 0},
        {"g(Tensor(a_1) x, Tensor(a_2) y) -> Tensor(a_2)", 0,
         WB_SCHEMA_ALIAS_OF_INPUT, 1},
        {"g(Tensor x) -> (Tensor(tmp), Tensor(view) v, Tensor(tmp))", 2,
         WB_SCHEMA_ALIAS_OF_INTERMEDIATE, 0},
        {"g(Tensor x) -> (Tensor(tmp), Tensor(view) v, Tensor(tmp))", 1,
         WB_SCHEMA_ALIAS_OF_INTERMEDIATE, 1},
    };
    for (int i = 0; i < TSC_COUNT(c); i++) {
        wb_schema *sc = tsc_parse(c[i].text);
        cr_assert_null(wb_schema_unwrappable(sc), "%s: %s", c[i].text,
                       wb_schema_unwrappable(sc));
        cr_assert_eq(wb_schema_return_alias(sc, c[i].k), c[i].alias, "%s",
                     c[i].text);
        cr_assert_eq(wb_schema_return_base(sc, c[i].k), c[i].base, "%s",
                     c[i].text);
        wb_schema_free(sc);
        tsc_wraps(c[i].text);
    }
    /* Messages name the sets. */
    static const tsc_case r[] = {
        {"f(Tensor x) -> (Tensor(view) a [base], Tensor(view) b [base])", 56,
         "return 1 'b': alias set 'view' already has its base, return 0 "
         "'a'"},
        {"f() -> (Tensor(tmp) a [base], Tensor(tmp) b [save_as_output])", 46,
         "return 1 'b': attribute 'save_as_output' does not apply: alias "
         "set 'tmp' has a base return, return 0 'a'"},
    };
    tsc_rejects_all(r, TSC_COUNT(r));
}

/* At most WB_SCHEMA_MAX_SETS (256) distinct sets, fresh ones included;
   repeated names and the sets after '->' do not count. */
Test(schema, alias_set_limit)
{
    size_t cap = 300 * 32 + 64, n;
    char *t = malloc(cap), want[256];
    cr_assert_not_null(t);
    wb_schema *sc = NULL;
    /* 256 named sets, each named twice. */
    n = (size_t)sprintf(t, "f(");
    for (int i = 0; i < 256; i++)
        n += (size_t)sprintf(t + n, "%sTensor(s%d) p%d", i ? ", " : "", i, i);
    sprintf(t + n, ") -> (Tensor(s0), Tensor(s255!), Tensor(s1))");
    sc = tsc_parse(t);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "return 1: writes alias set "
                     "'s255', which parameter 255 'p255' only reads");
    cr_assert_eq(wb_schema_return_base(sc, 2), 1);
    wb_schema_free(sc);
    sc = NULL;
    /* A 257th, on a parameter or a return. */
    n = (size_t)sprintf(t, "f(");
    for (int i = 0; i < 257; i++)
        n += (size_t)sprintf(t + n, "%sTensor(s%d) p%d", i ? ", " : "", i, i);
    sprintf(t + n, ") -> ()");
    snprintf(want, sizeof want, "<text>:1:%d: too many alias sets: 's256' "
             "would be set 257, and a schema has at most 256 (each "
             "'Tensor!' makes one of its own)\n",
             (int)(strstr(t, "(s256)") - t) + 2);
    WBT_FAILS(wb_schema_parse(t, NULL, 1, &sc), WB_ERR_SPEC, want);
    cr_assert_null(sc);
    tsc_assert_tame();
    n = (size_t)sprintf(t, "f() -> (");
    for (int i = 0; i < 257; i++)
        n += (size_t)sprintf(t + n, "%sTensor(r%d)", i ? ", " : "", i);
    sprintf(t + n, ")");
    WBT_FAILS(wb_schema_parse(t, NULL, 1, &sc), WB_ERR_SPEC,
              ": too many alias sets: 'r256' would be set 257, and a schema "
              "has at most 256");
    /* Fresh sets count: 256 '!' parameters parse, a 257th does not. */
    n = (size_t)sprintf(t, "f(");
    for (int i = 0; i < 256; i++)
        n += (size_t)sprintf(t + n, "%sTensor! p%d", i ? ", " : "", i);
    sprintf(t + n, ") -> ()");
    sc = tsc_parse(t);
    cr_assert_null(wb_schema_unwrappable(sc));
    cr_assert_eq(wb_schema_arg_mutation(sc, 255), WB_MUT_DATA);
    wb_schema_free(sc);
    sc = NULL;
    sprintf(t + n, ", Tensor! q) -> ()");
    snprintf(want, sizeof want, "<text>:1:%d: too many alias sets: this '!' "
             "would make set 257, and a schema has at most 256 (each "
             "'Tensor!' makes one of its own)\n",
             (int)(strstr(t, "Tensor! q") - t) + 7);
    WBT_FAILS(wb_schema_parse(t, NULL, 1, &sc), WB_ERR_SPEC, want);
    cr_assert_null(sc);
    sprintf(t + n, ", Tensor(s) q) -> ()");
    WBT_FAILS(wb_schema_parse(t, NULL, 1, &sc), WB_ERR_SPEC,
              ": too many alias sets: 's' would be set 257");
    /* One set named 300 times, and 300 sets after '->', are fine. */
    n = (size_t)sprintf(t, "f(");
    for (int i = 0; i < 300; i++)
        n += (size_t)sprintf(t + n, "%sTensor(a) p%d", i ? ", " : "", i);
    sprintf(t + n, ") -> ()");
    wb_schema_free(tsc_parse(t));
    n = (size_t)sprintf(t, "f(Tensor(a -> ");
    for (int i = 0; i < 300; i++)
        n += (size_t)sprintf(t + n, "%sb%d", i ? "|" : "", i);
    sprintf(t + n, ") x) -> ()");
    wb_schema_free(tsc_parse(t));
    free(t);
}

/* Tensor(*) may alias anything: fine on a parameter, checkable but not
   wrappable on a return. */
Test(schema, wildcard_set)
{
    const char *text = "f(Tensor(*) x, Tensor(*) y, Tensor(*!) z, Tensor(a|*) "
                       "w) -> (Tensor, Tensor(a))";
    wb_schema *sc = tsc_parse(text);
    cr_assert_null(wb_schema_unwrappable(sc));
    cr_assert_eq(wb_schema_arg_dir(sc, 0), WB_DIR_IN);
    cr_assert_eq(wb_schema_arg_dir(sc, 2), WB_DIR_INOUT);
    cr_assert_eq(wb_schema_arg_mutation(sc, 2), WB_MUT_DATA);
    cr_assert_eq(wb_schema_return_alias(sc, 1), WB_SCHEMA_ALIAS_OF_INPUT);
    cr_assert_eq(wb_schema_return_base(sc, 1), 3);
    wb_schema_free(sc);
    tsc_wraps(text);
    static const struct {
        const char *text;
        int k;
        wb_schema_alias alias;
        const char *reason;
    } c[] = {
        {"f(Tensor(*) x) -> Tensor(*)", 0, WB_SCHEMA_ALIAS_OF_INPUT,
         "return 0: 'Tensor(*)' is in the wildcard set '*', so it may alias "
         "any tensor; an output needs one known base"},
        {"f(Tensor(a!) x) -> Tensor(a|*!) y", 0, WB_SCHEMA_IS_INPUT,
         "return 0 'y': 'Tensor(a|*!)' is in the wildcard set '*', so it may "
         "alias any tensor; an output needs one known base"},
        {"f(Tensor(a) x) -> (Tensor(a), Tensor(*))", 1,
         WB_SCHEMA_ALIAS_OF_INPUT,
         "return 1: 'Tensor(*)' is in the wildcard set '*', so it may alias "
         "any tensor; an output needs one known base"},
    };
    for (int i = 0; i < TSC_COUNT(c); i++) {
        sc = tsc_parse(c[i].text);
        cr_assert_str_eq(wb_schema_unwrappable(sc), c[i].reason);
        cr_assert_eq(wb_schema_return_alias(sc, c[i].k), c[i].alias);
        cr_assert_eq(wb_schema_return_base(sc, c[i].k), -1,
                     "which input cannot be told");
        cr_assert_eq(wb_schema_return_spec_base(sc, c[i].k), -1);
        wb_schema_free(sc);
    }
    sc = tsc_parse("f(Tensor(a) x) -> (Tensor(a), Tensor(*))");
    cr_assert_eq(wb_schema_return_base(sc, 0), 0);
    wb_schema_free(sc);
    static const tsc_case r[] = {
        {"f(Tensor x) -> Tensor(*) [unsafe_view]", 27,
         "return 0: attribute 'unsafe_view' applies to a return that "
         "aliases nothing"},
        {"f(Tensor x) -> Tensor(*) [base]", 27,
         "return 0: attribute 'base' applies to a return whose alias set no "
         "parameter has"},
    };
    tsc_rejects_all(r, TSC_COUNT(r));
}

/* Several parameters may share a set; a return that names it has no one
   base. */
Test(schema, shared_alias_sets)
{
    /* Parses; the optional mutated parameter is what keeps it from being
       wrapped. */
    wb_schema *sc = tsc_parse("f(Tensor(a!) grad_input, Tensor(a!)? "
                              "grad_weight) -> ()");
    cr_assert_eq(wb_schema_arg_dir(sc, 0), WB_DIR_INOUT);
    cr_assert_eq(wb_schema_arg_dir(sc, 1), WB_DIR_INOUT);
    cr_assert_str_eq(wb_schema_unwrappable(sc), "parameter 1 'grad_weight': "
                     "an optional tensor ('Tensor(a!)?') may be NULL, so it "
                     "cannot be mutated");
    wb_schema_free(sc);
    /* Returns that do not name the shared set stay wrappable. */
    const char *ok[] = {
        "f(Tensor(a!) x, Tensor(a!) y, Tensor(b) z) -> (Tensor, Tensor(b))",
        "f(Tensor(a|b) x, Tensor(b) y) -> Tensor(a)",
        "f(Tensor x, *, Tensor(a!) out, Tensor(a!) out2) -> ()",
        "f(Tensor(a) x, Tensor(a) y, Tensor(a|b) z) -> (Tensor(c), "
        "Tensor(b))",
    };
    for (int i = 0; i < TSC_COUNT(ok); i++) {
        sc = tsc_parse(ok[i]);
        cr_assert_null(wb_schema_unwrappable(sc), "%s: %s", ok[i],
                       wb_schema_unwrappable(sc));
        wb_schema_free(sc);
        tsc_wraps(ok[i]);
    }
    wb_spec *s = tsc_spec(ok[0]);
    cr_assert_eq(s->inputs[0].mutation, WB_MUT_DATA);
    cr_assert_eq(s->inputs[1].mutation, WB_MUT_DATA);
    cr_assert_eq(s->outputs[1].kind, WB_OUT_ALIAS_OF_INPUT);
    cr_assert_eq(s->outputs[1].base, 2);
    wb_spec_free(s);
    sc = tsc_parse(ok[1]);
    cr_assert_eq(wb_schema_return_alias(sc, 0), WB_SCHEMA_ALIAS_OF_INPUT);
    cr_assert_eq(wb_schema_return_base(sc, 0), 0);
    wb_schema_free(sc);
    /* Returns that name it: the alias kind, no base, and who shares it. */
    static const struct {
        const char *text;
        wb_schema_alias alias;
        const char *reason;
    } c[] = {
        {"f(Tensor(a!) x, Tensor(a!) y) -> Tensor(a!)", WB_SCHEMA_IS_INPUT,
         "return 0: 'Tensor(a!)' names alias set 'a', which parameters 0 "
         "'x' and 1 'y' share, so its base is ambiguous; an output has one"},
        {"f(Tensor(a|b) x, Tensor(b) y) -> Tensor(b) v",
         WB_SCHEMA_ALIAS_OF_INPUT,
         "return 0 'v': 'Tensor(b)' names alias set 'b', which parameters 0 "
         "'x' and 1 'y' share, so its base is ambiguous; an output has one"},
        {"f(Tensor(a|b) x, Tensor(b) y) -> Tensor(a|b)",
         WB_SCHEMA_ALIAS_OF_INPUT,
         "return 0: 'Tensor(a|b)' names alias set 'b', which parameters 0 "
         "'x' and 1 'y' share, so its base is ambiguous; an output has one"},
        {"f(Tensor(s) a, int n, Tensor(s) b, Tensor(s!) c) -> Tensor(s)",
         WB_SCHEMA_ALIAS_OF_INPUT,
         "return 0: 'Tensor(s)' names alias set 's', which parameters 0 'a', "
         "2 'b' and 3 'c' share, so its base is ambiguous; an output has "
         "one"},
        {"f(Tensor(s) a, Tensor(s) b, Tensor(s) c, Tensor(s) d, Tensor(s) e) "
         "-> Tensor(s)", WB_SCHEMA_ALIAS_OF_INPUT,
         "return 0: 'Tensor(s)' names alias set 's', which parameters 0 'a', "
         "1 'b', 2 'c', 3 'd' and 1 more share, so its base is ambiguous; "
         "an output has one"},
    };
    for (int i = 0; i < TSC_COUNT(c); i++) {
        sc = tsc_parse(c[i].text);
        cr_assert_str_eq(wb_schema_unwrappable(sc), c[i].reason);
        cr_assert_eq(wb_schema_return_alias(sc, 0), c[i].alias);
        cr_assert_eq(wb_schema_return_base(sc, 0), -1);
        wb_schema_free(sc);
    }
}

/* ATen's set_ re-homes its self onto the source's storage, and resize_
   and resize_as_ resize it, growing its storage: what they do to it, not
   a data mutation (nor, for the resizes that 1.13 tags inplace_view, a
   metadata one, whose view must fit the storage it has). */
Test(schema, set_and_resize_ops_mutate_as_they_do)
{
    static const struct {
        const char *text;
        wb_mutation mut;
    } ops[] = {
        {"set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!)",
         WB_MUT_STORAGE},
        {"aten::set_(Tensor(a!) self) -> Tensor(a!)", WB_MUT_STORAGE},
        {"resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? "
         "memory_format=None) -> Tensor(a!) with inplace_view",
         WB_MUT_RESIZE},
        {"resize_as_(Tensor(a!) self, Tensor the_template, *, "
         "MemoryFormat? memory_format=None) -> Tensor(a!)", WB_MUT_RESIZE},
        /* An attribute of the parameter's own wins. */
        {"set_(Tensor(a!) self [data]) -> Tensor(a!)", WB_MUT_DATA},
        /* Another namespace's set_ is no ATen op. */
        {"mylib::set_(Tensor(a!) self) -> Tensor(a!)", WB_MUT_DATA},
        {"set_x(Tensor(a!) self) -> Tensor(a!)", WB_MUT_DATA},
    };
    for (int i = 0; i < TSC_COUNT(ops); i++) {
        wb_schema *sc = tsc_parse(ops[i].text);
        cr_assert_eq(wb_schema_arg_mutation(sc, 0), ops[i].mut, "%s",
                     ops[i].text);
        wb_schema_free(sc);
        wb_spec *s = tsc_spec(ops[i].text);
        cr_assert_eq(s->inputs[0].mutation, ops[i].mut, "%s", ops[i].text);
        wb_spec_free(s);
        tsc_wraps(ops[i].text);
    }
}

/* with inplace_view: every '!' parameter without a mutation attribute of
   its own is a metadata mutation, as for the ops native_functions.yaml
   tags inplace_view. */
Test(schema, inplace_view_graph_attribute)
{
    static const char *const views[] = {
        "transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!) with "
        "inplace_view",
        "unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!) with "
        "inplace_view",
        "as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, "
        "SymInt? storage_offset=None) -> Tensor(a!) with inplace_view",
        "rename_(Tensor(a!) self, Dimname[]? names) -> Tensor(a!) with "
        "inplace_view",
    };
    for (int i = 0; i < TSC_COUNT(views); i++) {
        wb_schema *sc = tsc_parse(views[i]);
        cr_assert_eq(wb_schema_arg_mutation(sc, 0), WB_MUT_METADATA, "%s",
                     views[i]);
        cr_assert_eq(wb_schema_return_alias(sc, 0), WB_SCHEMA_IS_INPUT);
        wb_schema_free(sc);
        wb_spec *s = tsc_spec(views[i]);
        cr_assert_eq(s->inputs[0].mutation, WB_MUT_METADATA);
        wb_spec_free(s);
        tsc_wraps(views[i]);
    }
    /* An attribute of the parameter's own wins; parameters without '!'
       stay unmutated. */
    const char *text = "f(Tensor(a!) x [data], Tensor! y, Tensor(c!) z "
                       "[resize], Tensor w, Tensor(e!) v [in_graph], *, "
                       "Tensor(d!) out) -> () with keep_input_mutations, "
                       "inplace_view, training";
    static const wb_mutation muts[] = {WB_MUT_DATA, WB_MUT_METADATA,
                                       WB_MUT_RESIZE, WB_MUT_NONE,
                                       WB_MUT_IN_GRAPH, WB_MUT_METADATA};
    wb_schema *sc = tsc_parse(text);
    wb_spec *s = tsc_spec(text);
    for (int i = 0; i < TSC_COUNT(muts); i++) {
        cr_assert_eq(wb_schema_arg_mutation(sc, i), muts[i], "arg %d", i);
        cr_assert_eq(s->inputs[i].mutation, muts[i], "input %d", i);
    }
    cr_assert_eq(wb_schema_arg_dir(sc, 5), WB_DIR_OUT);
    cr_assert(s->training);
    wb_schema_free(sc);
    wb_spec_free(s);
    /* Without it, '!' is a data mutation. */
    sc = tsc_parse("transpose_(Tensor(a!) self, int dim0, int dim1) -> "
                   "Tensor(a!)");
    cr_assert_eq(wb_schema_arg_mutation(sc, 0), WB_MUT_DATA);
    wb_schema_free(sc);
    /* Lists too, for check. */
    sc = tsc_parse("f(Tensor(a!)[] x, Tensor[](b!) y) -> () with "
                   "inplace_view");
    cr_assert_eq(wb_schema_arg_mutation(sc, 0), WB_MUT_METADATA);
    cr_assert_eq(wb_schema_arg_mutation(sc, 1), WB_MUT_METADATA);
    wb_schema_free(sc);
    /* The builder agrees. */
    WBT_OK(wb_spec_new("t_", &s));
    WBT_OK(wb_spec_add_tensor(s, "self", WB_MUT_METADATA, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "", WB_OUT_IS_INPUT, 0, false, 0, NULL));
    tsc_assert_same_c("t_(Tensor(a!) self) -> Tensor(a!) with inplace_view",
                      s);
}

/* ---- arbitrary bytes ---------------------------------------------------- */

/* Parses a copy of n bytes of text in a buffer of exactly n + 1 bytes, so
   that the sanitizers see any read past the NUL; the result is either a
   schema or WB_ERR_SPEC with a well-formed message. */
static void tsc_parse_anything(const char *text, size_t n)
{
    char *t = malloc(n + 1);
    cr_assert_not_null(t);
    memcpy(t, text, n);
    t[n] = '\0';
    wb_schema *sc = NULL;
    wb_status st = wb_schema_parse(t, NULL, 1, &sc);
    if (st == WB_OK) {
        wb_spec *s = NULL;
        st = wb_schema_to_spec(sc, &s);
        cr_assert(st == WB_OK || st == WB_ERR_SPEC, "to_spec -> %s",
                  wb_status_str(st));
        if (st == WB_OK)
            cr_assert(wb_spec_validate(s) == WB_OK ||
                      strncmp(wb_last_error(), "spec '", 6) == 0);
        else
            cr_assert_eq(strncmp(wb_last_error(), "spec '", 6), 0);
        tsc_assert_tame();
        wb_spec_free(s);
        wb_schema_free(sc);
    } else {
        const char *m = wb_last_error();
        cr_assert_eq(st, WB_ERR_SPEC, "'%s' -> %s", t, wb_status_str(st));
        cr_assert_null(sc);
        cr_assert_eq(strncmp(m, "<text>:", 7), 0, "message '%s'", m);
        const char *nl1 = strchr(m, '\n'), *nl2 = nl1 ? strchr(nl1 + 1, '\n')
                                                      : NULL;
        cr_assert(nl2 && !strchr(nl2 + 1, '\n'), "message '%s' is not three "
                                                  "lines", m);
        cr_assert_eq(m[strlen(m) - 1], '^', "message '%s' lacks its caret",
                     m);
        tsc_assert_tame();
    }
    free(t);
}

static const char *const tsc_seeds[] = {
    "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> "
    "Tensor(a!)",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> "
    "Tensor(a)[]",
    "foo(Tensor(a! -> a|b) x, int[2]? y=[1, [2, -3e-5]], Tensor?[] z, str "
    "s=\"q\\\"\", str t='#', float e=-inf) -> (Tensor(b) q, Tensor(c) w "
    "[save_as_output], Tensor(c) w2)",
    "fwd(Tensor w [detach], Tensor x [dtype=float32, ndim=2]) -> (Tensor "
    "loss [requires_grad], Tensor(c) h [dynamic=0|1], Tensor(c) h2 "
    "[save_as_output]) with training, grad_at_end=on",
    "split(Tensor x) -> (Tensor(c) whole [base], Tensor(c) half)",
    "bn(Tensor(a!) running_mean [in_graph], Tensor(b!) count [in_graph, "
    "hidden], Tensor x) -> Tensor with keep_input_mutations # end\n",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
    "Tensor indices)",
    "f(int[1]? a=None, Tensor(a!)[] b, *, Tensor(c!) out) -> (int, "
    "Tensor(c!), Scalar)",
    "g(Tensor(self) x, Tensor(a|self!) y, Tensor! z, Tensor(*) w, Tensor[](b!)"
    " v, complex c=-1.5j, str s='a*/b') -> (Tensor(self), Tensor(a!) t, "
    "Tensor(*), Tensor!) with inplace_view",
};

Test(schema, every_prefix_of_valid_schemas)
{
    for (int i = 0; i < TSC_COUNT(tsc_seeds); i++) {
        size_t n = strlen(tsc_seeds[i]);
        tsc_parse_anything(tsc_seeds[i], n);
        for (size_t k = 0; k < n; k++)
            tsc_parse_anything(tsc_seeds[i], k);
    }
    for (int i = 0; i < TSC_COUNT(tsc_real); i++) {
        size_t n = strlen(tsc_real[i].text);
        for (size_t k = 0; k < n; k++)
            tsc_parse_anything(tsc_real[i].text, k);
    }
}

/* Each byte of valid schemas replaced by each of the bytes that matter to
   the grammar, and by bytes that do not belong in it. */
Test(schema, every_byte_of_valid_schemas_replaced)
{
    static const char subst[] = "()[],!?*->|=\"'#\\\n:. a1_e\x01\x7f\x80\xff";
    char buf[512];
    for (int i = 0; i < TSC_COUNT(tsc_seeds); i++) {
        size_t n = strlen(tsc_seeds[i]);
        cr_assert_lt(n, sizeof buf);
        for (size_t k = 0; k < n; k++) {
            for (const char *c = subst; *c; c++) {
                memcpy(buf, tsc_seeds[i], n);
                buf[k] = *c;
                tsc_parse_anything(buf, n);
            }
            /* And the byte deleted. */
            memcpy(buf, tsc_seeds[i], k);
            memcpy(buf + k, tsc_seeds[i] + k + 1, n - k - 1);
            tsc_parse_anything(buf, n - 1);
        }
    }
}

Test(schema, garbage)
{
    static const char alphabet[] = "()[],!?*->|=\"'#\\\n:. \tabcTensorint0129e"
                                   "with";
    uint64_t r = 0x9e3779b97f4a7c15u;
    char buf[300];
    for (int i = 0; i < 4000; i++) {
        size_t n = (size_t)(i % 280);
        for (size_t k = 0; k < n; k++) {
            r = r * 6364136223846793005u + 1442695040888963407u;
            unsigned v = (unsigned)(r >> 33);
            /* Half the strings from the grammar's own bytes, half from
               any byte but NUL. */
            buf[k] = i & 1 ? alphabet[v % (sizeof alphabet - 1)]
                           : (char)(1 + v % 255);
        }
        tsc_parse_anything(buf, n);
    }
    /* Deep nesting, long tokens, many items. */
    size_t big = 200000;
    char *t = malloc(big + 64);
    cr_assert_not_null(t);
    strcpy(t, "f(int x=");
    memset(t + 8, '[', big);
    strcpy(t + 8 + big, ") -> ()");
    tsc_parse_anything(t, strlen(t));
    memset(t, 'a', big);
    strcpy(t + big, "(Tensor x) -> Tensor");
    tsc_parse_anything(t, strlen(t));
    memset(t, 'a', big);
    tsc_parse_anything(t, big);
    strcpy(t, "f(");
    size_t o = 2;
    while (o < big)
        o += (size_t)sprintf(t + o, "Tensor(a) x%zu, ", o);
    strcpy(t + o, "Tensor y) -> ()");
    tsc_parse_anything(t, strlen(t));
    strcpy(t, "f(int ");
    memset(t + 6, 'x', big);
    strcpy(t + 6 + big, "=\"unterminated");
    tsc_parse_anything(t, strlen(t));
    free(t);
}
