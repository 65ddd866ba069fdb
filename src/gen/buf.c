/*
 * buf.c -- the emitter's growable text buffer (after sds): every write goes
 * through one checked append, formatted by our own printf subset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

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

static inline void wb_buf_put(wb_buf *b, const char *p, size_t n)
{
    if (n && (b->len + n + 1 <= b->cap || wb_buf_reserve(b, n))) {
        char *o = b->p + b->len;
        /* Most pieces are a few bytes, which a call of memcpy costs more
           than copying them: up to 16 as two words that may overlap, each
           a move or two. */
        if (n >= 8 && n <= 16) {
            memcpy(o, p, 8);
            memcpy(o + n - 8, p + n - 8, 8);
        } else if (n >= 4 && n < 8) {
            memcpy(o, p, 4);
            memcpy(o + n - 4, p + n - 4, 4);
        } else if (n < 4) {
            o[0] = p[0];
            o[n / 2] = p[n / 2];
            o[n - 1] = p[n - 1];
        } else {
            memcpy(o, p, n);
        }
        o[n] = '\0';
        b->len += n;
    }
}

void wb_buf_write(wb_buf *b, const char *p, size_t n)
{
    if (!b->oom)
        wb_buf_put(b, p, n);
}

static void wb_buf_pad(wb_buf *b, size_t n)
{
    if (n && wb_buf_reserve(b, n)) {
        memset(b->p + b->len, ' ', n);
        b->len += n;
        b->p[b->len] = '\0';
    }
}

/* Writes v in base 10 or 16, with a minus sign when neg; each base its
   own loop, so that the divisions are by constants. */
static void wb_buf_num(wb_buf *b, unsigned long long v, bool neg, int base)
{
    char t[24];
    int i = (int)sizeof t;
    if (base == 16) {
        do {
            t[--i] = "0123456789abcdef"[v & 15];
            v >>= 4;
        } while (v);
    } else {
        do {
            t[--i] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
    }
    if (neg)
        t[--i] = '-';
    wb_buf_put(b, t + i, sizeof t - (size_t)i);
}

/* The emitter writes tens of thousands of small pieces per wrapper, and
   glibc's vsnprintf was a third of a compile: this formats the subset of
   printf the emitter and the tools use (%d %u %x %s %c %%, with l, ll and z,
   a '*' width and a '.*' precision on %s) directly into the buffer, with
   printf's meaning, so the compiler's format checks still hold. */
void wb_buf_vprintf(wb_buf *b, const char *fmt, va_list ap)
{
    const char *p = fmt;
    while (*p && !b->oom) {
        const char *q = strchr(p, '%');
        if (!q) {
            wb_buf_put(b, p, strlen(p));
            break;
        }
        wb_buf_put(b, p, (size_t)(q - p));
        q++;
        int width = 0, prec = -1, size = 0;
        if (*q == '*') {
            width = va_arg(ap, int);
            q++;
        }
        if (q[0] == '.' && q[1] == '*') {
            prec = va_arg(ap, int);
            q += 2;
        }
        for (; *q == 'l'; q++)
            size++;
        if (*q == 'z') {
            size = 3;
            q++;
        }
        switch (*q) {
        case 'd': {
            long long v = size == 0 ? va_arg(ap, int)
                        : size == 1 ? va_arg(ap, long)
                        : size == 2 ? va_arg(ap, long long)
                                    : (long long)va_arg(ap, size_t);
            wb_buf_num(b, v < 0 ? 0ULL - (unsigned long long)v
                                : (unsigned long long)v, v < 0, 10);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = size == 0 ? va_arg(ap, unsigned)
                                 : size == 1 ? va_arg(ap, unsigned long)
                                 : size == 2 ? va_arg(ap, unsigned long long)
                                             : va_arg(ap, size_t);
            wb_buf_num(b, v, false, *q == 'x' ? 16 : 10);
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            size_t n = 0;
            if (prec < 0)
                n = strlen(s);
            else
                while (n < (size_t)prec && s[n])
                    n++;
            size_t w = (size_t)(width < 0 ? -width : width);
            if (width > 0 && w > n)
                wb_buf_pad(b, w - n);
            wb_buf_put(b, s, n);
            if (width < 0 && w > n)
                wb_buf_pad(b, w - n);
            break;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            wb_buf_put(b, &c, 1);
            break;
        }
        case '%':
            wb_buf_put(b, "%", 1);
            break;
        default:
            /* Outside the subset: a mistake in the caller, made visible. */
            wb_buf_put(b, "%?", 2);
            if (!*q)
                return;
        }
        p = q + 1;
    }
}

void wb_buf_printf(wb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void wb_buf_vline(wb_buf *b, const char *fmt, va_list ap)
{
    if (*fmt && b->indent > 0 && !b->oom)
        wb_buf_pad(b, (size_t)b->indent * 4);
    wb_buf_vprintf(b, fmt, ap);
    wb_buf_write(b, "\n", 1);
}

void wb_buf_line(wb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wb_buf_vline(b, fmt, ap);
    va_end(ap);
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
