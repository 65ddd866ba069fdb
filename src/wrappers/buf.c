/*
 * buf.c -- the emitter's growable text buffer (after sds): every write goes
 * through one checked vsnprintf append.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrappers.h"

static bool wb_buf_reserve(wb_buf *b, size_t more)
{
    if (b->oom)
        return false;
    if (b->len + more + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void wb_buf_vprintf(wb_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    if (!wb_buf_reserve(b, 128))
        return;
    /* Most writes fit the room already there: one vsnprintf. */
    va_copy(again, ap);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->p + b->len, room, fmt, ap);
    if (n < 0) {
        b->oom = true;
    } else if ((size_t)n < room) {
        b->len += (size_t)n;
    } else if (wb_buf_reserve(b, (size_t)n)) {
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void wb_buf_printf(wb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void wb_buf_line(wb_buf *b, const char *fmt, ...)
{
    va_list ap;
    if (*fmt)
        wb_buf_printf(b, "%*s", b->indent * 4, "");
    va_start(ap, fmt);
    wb_buf_vprintf(b, fmt, ap);
    va_end(ap);
    wb_buf_printf(b, "\n");
}

char *wb_buf_take(wb_buf *b)
{
    char *p = b->oom ? NULL : b->p;
    if (b->oom)
        free(b->p);
    else if (!p)
        p = calloc(1, 1);
    *b = (wb_buf){0};
    return p;
}

void wb_buf_free(wb_buf *b)
{
    free(b->p);
    *b = (wb_buf){0};
}
