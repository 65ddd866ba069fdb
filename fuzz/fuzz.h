/*
 * fuzz.h -- what the fuzz targets share.
 *
 * Each target defines LLVMFuzzerTestOneInput.  Built with clang and
 * -fsanitize=fuzzer it is a libFuzzer binary (`make fuzz`); built with any
 * compiler next to replay.c it is a plain program that runs the files of a
 * corpus once each (`make fuzz-replay`, part of `make test`).  A target
 * reports a broken invariant with wbf_fail, which aborts, so that both
 * libFuzzer and the replay driver stop on it with the input in hand.
 */
#ifndef WB_FUZZ_H
#define WB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrapbake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void wbf_fail(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

#include <stdarg.h>
static void wbf_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: invariant broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define WBF_CHECK(cond, ...)                                                 \
    do {                                                                     \
        if (!(cond))                                                         \
            wbf_fail(__VA_ARGS__);                                           \
    } while (0)

/* Every status a library call returns is one of the enum's. */
static inline void wbf_status_ok(wb_status st, const char *call)
{
    WBF_CHECK((unsigned)st <= (unsigned)WB_ERR_UNSUPPORTED,
              "%s returned %d, not a wb_status", call, (int)st);
    WBF_CHECK(st == WB_OK || wb_last_error()[0] != '\0',
              "%s failed with %s and no message", call, wb_status_str(st));
}

/* A graph that is never meant to run: wrappers built by the parser and
   builder targets are compiled, not called. */
static inline int wbf_graph(void *ctx, const wb_arg *a, int na,
                            wb_value *v, int nv)
{
    (void)ctx; (void)a; (void)na; (void)v; (void)nv;
    return -1;
}

/* Holds the generated C of a validated spec to the rules that keep spec
   text out of code: comments close, splice no line, and every byte in or
   out of them is printable ASCII or a newline.  Then it must compile. */
static inline void wbf_check_code(const wb_spec *spec)
{
    char *src = NULL;
    wb_status st = wb_emit_c(spec, &src);
    wbf_status_ok(st, "wb_emit_c");
    if (st == WB_ERR_NOMEM)
        return;
    WBF_CHECK(st == WB_OK, "a validated spec did not emit: %s",
              wb_last_error());
    for (const char *p = src; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            WBF_CHECK(end, "an unterminated comment in generated code");
            for (const char *q = p + 2; q < end; q++)
                WBF_CHECK(*q == '\n' || ((unsigned char)*q >= 0x20 &&
                                         (unsigned char)*q < 0x7f),
                          "byte 0x%02x inside a comment of generated code",
                          (unsigned char)*q);
            /* A backslash before a newline would splice the next line of
               code into the comment. */
            for (const char *q = p + 2; q + 1 < end; q++)
                WBF_CHECK(!(q[0] == '\\' && q[1] == '\n'),
                          "a line splice inside a comment of generated code");
            p = end + 1;
            continue;
        }
        WBF_CHECK(*p == '\n' || ((unsigned char)*p >= 0x20 &&
                                 (unsigned char)*p < 0x7f),
                  "byte 0x%02x in generated code", (unsigned char)*p);
    }
    free(src);
    wb_options o = {.tier = WB_TIER_TCC};
    wb_wrapper *w = NULL;
    st = wb_wrapper_new(spec, wbf_graph, NULL, &o, &w);
    wbf_status_ok(st, "wb_wrapper_new");
    WBF_CHECK(st == WB_OK || st == WB_ERR_NOMEM,
              "a validated spec did not compile: %s: %s", wb_status_str(st),
              wb_last_error());
    wb_wrapper_free(w);
}

#endif /* WB_FUZZ_H */
