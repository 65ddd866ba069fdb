/*
 * The libtcc driver: compiler messages point back into the spec, the code
 * never sits in memory that is writable and executable at once, and the
 * generated source is what the tcc tier runs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"
#include "../src/runtime/rt.h"

typedef int (*jit_int_fn)(int);

static jit_int_fn jit_compile_ok(const char *src, const char *fn,
                                 wb_jit_code **code)
{
    void *entry;
    jit_int_fn f;
    WBT_OK(wb_jit_compile(src, fn, code, &entry));
    memcpy(&f, &entry, sizeof f);
    return f;
}

Test(jit, compiles_and_runs)
{
    wb_jit_code *code;
    jit_int_fn f = jit_compile_ok("int twice(int x) { return 2 * x; }",
                                  "twice", &code);
    cr_assert_eq(f(21), 42);
    wb_jit_free(code);
}

Test(jit, messages_point_into_the_spec)
{
    wb_jit_code *code = NULL;
    void *entry = NULL;
    WBT_FAILS(wb_jit_compile("#line 7 \"decode_step\"\n"
                             "int f(void) { return no_such_name; }",
                             "f", &code, &entry),
              WB_ERR_COMPILE, "decode_step:7");
    cr_assert_null(code);
    WBT_FAILS(wb_jit_compile("int f(void) { return 1; }", "g", &code, &entry),
              WB_ERR_COMPILE, "no function 'g'");
}

/* The permissions of the mapping holding addr, from /proc/self/maps; and
   whether any mapping of the process is writable and executable. */
static void jit_maps(const void *addr, char perms[5], bool *any_wx)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    cr_assert(f, "cannot read /proc/self/maps");
    perms[0] = '\0';
    *any_wx = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char p[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) != 3)
            continue;
        if (p[1] == 'w' && p[2] == 'x')
            *any_wx = true;
        if ((unsigned long)addr >= lo && (unsigned long)addr < hi)
            memcpy(perms, p, 5);
    }
    fclose(f);
}

Test(jit, code_is_never_writable_and_executable)
{
    wb_jit_code *code;
    char perms[5];
    bool any_wx;
    jit_int_fn f = jit_compile_ok("int inc(int x) { return x + 1; }", "inc",
                                  &code);
    void *addr;
    memcpy(&addr, &f, sizeof addr);
    jit_maps(addr, perms, &any_wx);
    cr_assert_str_eq(perms, "r-xp", "JIT code lies in a %s mapping", perms);
    cr_assert_not(any_wx, "some mapping is writable and executable");
    cr_assert_eq(f(1), 2);
    wb_jit_free(code);
}

static int jit_graph(void *ctx, const wb_arg *a, int na, wb_tensor **v, int nv)
{
    (void)ctx; (void)a; (void)na; (void)v; (void)nv;
    return 0;
}

Test(jit, wrapper_source_is_the_compiled_text)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("tiny", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    wb_wrapper *wt = wbt_wrap(s, jit_graph, NULL, WB_TIER_TCC);
    wb_wrapper *wi = wbt_wrap(s, jit_graph, NULL, WB_TIER_INTERP);
    const char *src = wb_wrapper_source(wt);
    cr_assert(src && strstr(src, "from spec 'tiny'"));
    cr_assert(strstr(src, "#line 1 \"tiny\""), "no #line into the spec");
    cr_assert_null(wb_wrapper_source(wi));
    cr_assert_str_eq(wb_tier_name(wb_wrapper_tier(wt)), "tcc");
    wb_tensor *x = wbt_f32(0, 1, 2);
    wb_arg args[1] = {{.t = x}};
    WBT_OK(wb_call(wt, args, 1, NULL, 0));
    wbt_release_last(x);
    wb_wrapper_free(wt);
    wb_wrapper_free(wi);
    wb_spec_free(s);
}
