/* A library that, once loaded, creates the file $WB_TRUST_MARK names: it
   shows whether the library under test loaded the CUDA runtime that
   $WRAPBAKE_CUDART names (tests/trust/run.sh). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void wb_trust_mark(void)
{
    const char *path = getenv("WB_TRUST_MARK");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f)
        fclose(f);
}
