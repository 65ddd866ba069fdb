/*
 * Loads a plugin that links libwrapbake.so (argv[1]) with dlopen, as a
 * runtime loads an extension module, and runs it.  The host links nothing
 * of wrapbake's.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
    int rc = run ? run() : 1;
    printf("plugin: %s\n", rc == 0 ? "a tcc wrapper ran" : "failed");
    dlclose(h);
    return rc;
}
