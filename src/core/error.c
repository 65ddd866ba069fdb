/*
 * error.c -- status names, the per-thread error message, and the one way
 * the library reads its environment.
 */
#define _GNU_SOURCE  /* secure_getenv */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

#include "core.h"

/* Nonzero while the calling thread is inside libtcc, the dynamic loader
   or the CUDA runtime (see core.h).  libtcc exits the process when one of
   its own allocations fails, so the allocation-failure test
   (tests/tools/alloc_fail.c) reads this to fail only allocations made
   outside them.  It lives here, apart from the JIT, because ahead-of-time
   programs link the runtime without libtcc. */
_Thread_local int wb_rt_inside_dependency;

/* A variable of the environment, unless the process runs with privileges
   the user who started it lacks (setuid, file capabilities): there that
   user must not choose the compiler, the CUDA runtime or where code is
   loaded from. */
const char *wb_rt_getenv(const char *name)
{
    return secure_getenv(name);
}

const char *wb_rt_printable(const char *text, char *buf, size_t n)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)text;
         *p && k + 5 < n; p++) {
        if (*p < 0x20 || *p > 0x7e || *p == '\\')
            k += (size_t)snprintf(buf + k, n - k, "\\x%02x", *p);
        else
            buf[k++] = (char)*p;
    }
    if (n)
        buf[k < n ? k : n - 1] = '\0';
    return buf;
}

bool wb_rt_privileged(void)
{
    return getauxval(AT_SECURE) != 0;
}

/* Each thread owns its message, so a failing call never races another
   thread's read of wb_last_error(). */
static _Thread_local char wb_rt_errmsg[1024];

static const char *const wb_status_names[] = {
    [WB_OK] = "WB_OK",
    [WB_ERR_INVALID] = "WB_ERR_INVALID",
    [WB_ERR_SPEC] = "WB_ERR_SPEC",
    [WB_ERR_NOMEM] = "WB_ERR_NOMEM",
    [WB_ERR_ARITY] = "WB_ERR_ARITY",
    [WB_ERR_TYPE] = "WB_ERR_TYPE",
    [WB_ERR_SHAPE] = "WB_ERR_SHAPE",
    [WB_ERR_DEVICE] = "WB_ERR_DEVICE",
    [WB_ERR_GRAPH] = "WB_ERR_GRAPH",
    [WB_ERR_HOOK] = "WB_ERR_HOOK",
    [WB_ERR_COMPILE] = "WB_ERR_COMPILE",
    [WB_ERR_UNSUPPORTED] = "WB_ERR_UNSUPPORTED",
};

const char *wb_status_str(wb_status status)
{
    if ((unsigned)status < sizeof wb_status_names / sizeof *wb_status_names)
        return wb_status_names[status];
    return "WB_ERR_UNKNOWN";
}

const char *wb_last_error(void)
{
    return wb_rt_errmsg;
}

wb_status wb_rt_vfail(wb_status status, const char *fmt, va_list ap)
{
    vsnprintf(wb_rt_errmsg, sizeof wb_rt_errmsg, fmt, ap);
    return status;
}

wb_status wb_rt_fail(wb_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_rt_vfail(status, fmt, ap);
    va_end(ap);
    return status;
}

const char *wb_version(void)
{
    return WB_VERSION;
}

int wb_abi_version(void)
{
    return WB_ABI_VERSION;
}
