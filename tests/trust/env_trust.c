/*
 * env-trust: prints what the library made of its environment, for
 * tests/trust/run.sh, which runs it plainly and setuid.  One line each:
 * the real and effective user ids; the disk cache's directory
 * (wb_cache_dir, which reads WRAPBAKE_CACHE_DIR first); what making a
 * CUDA tensor gave, which loads the CUDA runtime ($WRAPBAKE_CUDART names
 * the file); what a cc wrapper gave, which runs the system compiler found
 * on $PATH; and an auto wrapper's note.
 */
#include <stdio.h>
#include <unistd.h>

#include "wrapbake.h"

static int graph(void *ctx, const wb_arg *a, int na, wb_value *v, int nv)
{
    (void)ctx, (void)na, (void)nv;
    v[0].t = wb_tensor_retain(a[0].t);
    return 1;
}

/* A wrapper of spec on tier: its status, and its note or the error. */
static void wrapper(const char *what, const wb_spec *spec, wb_tier tier)
{
    wb_options o = {.tier = tier};
    wb_wrapper *w = NULL;
    wb_status st = wb_wrapper_new(spec, graph, NULL, &o, &w);
    const char *note = st == WB_OK ? wb_wrapper_note(w) : wb_last_error();
    printf("%s %s: %s\n", what, wb_status_str(st), note ? note : "(none)");
    wb_wrapper_free(w);
}

int main(void)
{
    const char *dir = wb_cache_dir();
    int64_t size = 1;
    wb_tensor *t = NULL;
    wb_spec *spec = NULL;
    wb_status st = wb_tensor_new((DLDataType){kDLFloat, 32, 1},
                                 (DLDevice){kDLCUDA, 0}, 1, &size, &t);
    printf("uid %u euid %u\n", (unsigned)getuid(), (unsigned)geteuid());
    printf("cache %s\n", dir ? dir : "(none)");
    printf("cuda %s: %s\n", wb_status_str(st),
           st == WB_OK ? "a tensor" : wb_last_error());
    wb_tensor_release(t);
    if (wb_spec_parse("trust(Tensor x) -> Tensor", &spec) != WB_OK) {
        printf("spec: %s\n", wb_last_error());
        return 1;
    }
    wrapper("cc", spec, WB_TIER_CC);
    wrapper("auto", spec, WB_TIER_AUTO);
    wb_spec_free(spec);
    return 0;
}
