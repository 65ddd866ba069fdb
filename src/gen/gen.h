/*
 * wrappers.h -- the two consumers of a validated spec (internal): the
 * reference interpreter and the C emitter, and the growable text buffer the
 * emitter writes through.
 */
#ifndef WB_WRAPPERS_H
#define WB_WRAPPERS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "../abi/abi.h"

/* The interpreter's entry point (a wb_entry_fn). */
int wb_interp_call(const wb_env *e, const wb_arg *args, int nargs,
                   wb_tensor **outs, int nouts);

/* A growable NUL-terminated buffer with an indentation level.  An allocation
   failure sets oom and turns every later write into a no-op, so callers check
   once at the end. */
typedef struct wb_buf {
    char *p;
    size_t len, cap;
    int indent;
    bool oom;
} wb_buf;

void wb_buf_printf(wb_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void wb_buf_vprintf(wb_buf *b, const char *fmt, va_list ap);
/* n bytes of p, as they are. */
void wb_buf_write(wb_buf *b, const char *p, size_t n);
/* One line at the current indentation, newline added. */
void wb_buf_line(wb_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void wb_buf_vline(wb_buf *b, const char *fmt, va_list ap);
/* Hands the text to the caller (NULL after oom) and resets b. */
char *wb_buf_take(wb_buf *b);
void wb_buf_free(wb_buf *b);

/* The name the emitter gives the wrapper function. */
#define WB_EMIT_FN "wb_generated"

/* What the emitted C is for. */
typedef enum wb_emit_form {
    WB_EMIT_PLAIN,  /* people and ahead-of-time builds: the whole text */
    WB_EMIT_LINES,  /* a compiler: the whole text, with #line directives
                       into the spec */
    WB_EMIT_LIBTCC  /* libtcc alone: its branch of every run, with the
                       #line directives and no banner or step
                       comments */
} wb_emit_form;

/* Emits the C for validated spec with entry point fn_name, in form. */
wb_status wb_emit(const wb_spec *spec, const char *fn_name, wb_emit_form form,
                  char **out);

#endif /* WB_WRAPPERS_H */
