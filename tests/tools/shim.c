/*
 * shim.c -- the runner of shim.h: runs every registered test in order, in
 * this process, and prints one line per test.
 */
#include "shim.h"

#define WBS_MAX 64

typedef struct wbs_test {
    const char *suite, *name;
    void (*fn)(void);
} wbs_test;

static wbs_test wbs_tests[WBS_MAX];
static int wbs_ntests;

void wbs_register(const char *suite, const char *name, void (*fn)(void))
{
    if (wbs_ntests < WBS_MAX)
        wbs_tests[wbs_ntests++] = (wbs_test){suite, name, fn};
}

void wbs_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, what);
    abort();
}

int main(void)
{
    for (int i = 0; i < wbs_ntests; i++) {
        wbs_tests[i].fn();
        printf("[PASS] %s::%s\n", wbs_tests[i].suite, wbs_tests[i].name);
    }
    printf("shim: %d tests passed\n", wbs_ntests);
    return wbs_ntests == 0;
}
