/*
 * env-trust: prints what the library made of its environment, for
 * tests/trust/run.sh, which runs it plainly and setuid.  One line each:
 * the real and effective user ids; the disk cache's directory
 * (wb_cache_dir, which reads WRAPBAKE_CACHE_DIR first); and what making a
 * CUDA tensor gave, which loads the CUDA runtime ($WRAPBAKE_CUDART names
 * the file).
 */
#include <stdio.h>
#include <unistd.h>

#include "wrapbake.h"

int main(void)
{
    const char *dir = wb_cache_dir();
    int64_t size = 1;
    wb_tensor *t = NULL;
    wb_status st = wb_tensor_new((DLDataType){kDLFloat, 32, 1},
                                 (DLDevice){kDLCUDA, 0}, 1, &size, &t);
    printf("uid %u euid %u\n", (unsigned)getuid(), (unsigned)geteuid());
    printf("cache %s\n", dir ? dir : "(none)");
    printf("cuda %s: %s\n", wb_status_str(st),
           st == WB_OK ? "a tensor" : wb_last_error());
    wb_tensor_release(t);
    return 0;
}
