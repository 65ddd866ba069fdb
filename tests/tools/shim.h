/*
 * shim.h -- just enough of Criterion's interface to run the concurrency
 * tests without it, for ThreadSanitizer (`make test-tsan`): Criterion's
 * runner maps an arena at an address that ThreadSanitizer's shadow memory
 * already holds, so a Criterion binary cannot start under it.
 *
 * Test() registers a function; the assertions print the failing
 * expression and its arguments as written, and abort.  tests/helpers.h
 * includes this instead of Criterion when WB_TEST_SHIM is defined.
 */
#ifndef WB_TEST_SHIM_H
#define WB_TEST_SHIM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wbs_register(const char *suite, const char *name, void (*fn)(void));
void wbs_fail(const char *file, int line, const char *what)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

#define WBS_FIRST(a, ...) a
#define WBS_EQ(a, b, ...) ((a) == (b))
#define WBS_CHECK(cond, text)                                                \
    do {                                                                     \
        if (!(cond))                                                         \
            wbs_fail(__FILE__, __LINE__, text);                              \
    } while (0)

#define cr_assert(...) WBS_CHECK(WBS_FIRST(__VA_ARGS__, 0), #__VA_ARGS__)
#define cr_assert_eq(...) WBS_CHECK(WBS_EQ(__VA_ARGS__, 0), #__VA_ARGS__)
#define cr_assert_not_null(...)                                              \
    WBS_CHECK(WBS_FIRST(__VA_ARGS__, 0) != NULL, #__VA_ARGS__)
#define cr_log_info(...) (printf(__VA_ARGS__), putchar('\n'))

#define WBS_TEST(suite, name, ...)                                           \
    static void suite##_##name(void);                                        \
    __attribute__((constructor)) static void wbs_reg_##suite##_##name(void)  \
    {                                                                        \
        wbs_register(#suite, #name, suite##_##name);                         \
    }                                                                        \
    static void suite##_##name(void)
#define Test(...) WBS_TEST(__VA_ARGS__, 0)

#endif /* WB_TEST_SHIM_H */
