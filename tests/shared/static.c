/*
 * Programs that link libwrapbake.a: built with OWN_LIBTCC, one that links
 * a libtcc of its own beside it (-ltcc), whose libtcc compiles and runs
 * its code; built without, one that defines globals of names libtcc uses
 * inside (file, tok, next), which stay its own.  Both run the README's
 * graph on wrapbake's tcc tier.  Prints a line per check; exits nonzero
 * on a wrong result.
 */
#include "add_one.h"

#ifdef OWN_LIBTCC
#include <libtcc.h>

static int own_libtcc(void)
{
    TCCState *s = tcc_new();
    if (!s)
        return 1;
    tcc_set_options(s, "-nostdlib");
    tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
    if (tcc_compile_string(s, "int twice(int x) { return 2 * x; }") < 0 ||
        tcc_relocate(s, TCC_RELOCATE_AUTO) < 0) {
        puts("static: the program's libtcc failed");
        return 1;
    }
    int (*twice)(int) = (int (*)(int))tcc_get_symbol(s, "twice");
    printf("static: the program's libtcc: twice(21) = %d\n",
           twice ? twice(21) : -1);
    tcc_delete(s);
    return 0;
}
#else
int file = 7;
int tok = 5;
int next(int x);
int next(int x) { return x + 1; }

static int own_libtcc(void)
{
    printf("static: the program's own: file %d, tok %d, next(1) %d\n", file,
           tok, next(1));
    return 0;
}
#endif

int main(void)
{
    if (own_libtcc())
        return 1;

    wb_spec *spec = NULL;
    wb_wrapper *w = NULL;
    wb_options o = {.tier = WB_TIER_TCC};
    if (wb_spec_parse(ADD_ONE_SPEC, &spec) != WB_OK ||
        wb_wrapper_new(spec, add_one, NULL, &o, &w) != WB_OK) {
        printf("static: %s\n", wb_last_error());
        return 1;
    }
    int bad = add_one_run("tcc", w);
    wb_wrapper_free(w);
    wb_spec_free(spec);
    return bad;
}
