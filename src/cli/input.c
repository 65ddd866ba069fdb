/*
 * input.c -- reading specs from text and YAML files, and allowlists.
 *
 * The readers only cut a file into entries and remember where each came
 * from; parsing is the schema parser's job.  An entry's text is handed over
 * so that the parser's "LINE:COL" points into the file: a text entry keeps
 * its lines whole (a comment is cut off at its end, which moves nothing),
 * and a YAML `func:` written on one line is padded with spaces up to the
 * column its value starts at.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "input.h"
#include "../spec/schema.h"
#include "../gen/gen.h"

/* ---- small helpers ---- */

/* A malloc'ed message, or NULL when even that fails (callers then report
   that memory ran out). */
static char *wb_cli_format(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static char *wb_cli_format(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

static char *wb_cli_strndup(const char *p, size_t n)
{
    char *q = malloc(n + 1);
    if (q) {
        memcpy(q, p, n);
        q[n] = '\0';
    }
    return q;
}

static bool wb_cli_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

char *wb_cli_slurp(const char *path, size_t *len)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    /* errno then tells a failed read from this failed allocation. */
    errno = buf ? 0 : ENOMEM;
    /* Reading in chunks until EOF works for pipes and terminals as well as
       for regular files, whose size could change under us anyway. */
    while (buf) {
        if (n + 1 >= cap) {
            char *q = realloc(buf, cap * 2);
            if (!q) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = q;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno ? errno : EIO;
                free(buf);
                buf = NULL;
                errno = e;
            }
            break;
        }
    }
    if (!is_stdin)
        fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* ---- entries ---- */

static int wb_cli_entries_push(wb_cli_entries *e, wb_cli_entry en)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 64;
        wb_cli_entry *v = realloc(e->v, cap * sizeof *v);
        if (!v)
            return -1;
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = en;
    return 0;
}

void wb_cli_entries_free(wb_cli_entries *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->v[i].text);
        free(e->v[i].error);
    }
    free(e->v);
    e->v = NULL;
    e->n = e->cap = 0;
}

char *wb_cli_text_name(const char *text)
{
    const char *p = text;
    while (wb_cli_is_space(*p) || *p == '\n')
        p++;
    const char *q = p;
    while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
           (*q >= '0' && *q <= '9') || *q == '_' || *q == '.' || *q == ':')
        q++;
    return q > p ? wb_cli_strndup(p, (size_t)(q - p)) : NULL;
}

/* ---- text files ---- */

/* What one line contributes: its length without the comment, whether
   anything but spaces is left, and how it moves the bracket depth.  A `#`
   or a bracket inside a quoted string is part of the string. */
typedef struct wb_cli_line_scan {
    size_t keep;
    bool blank;      /* nothing but spaces, comment included */
    bool has_text;   /* something but spaces before the comment */
    int depth;       /* the depth after the line */
} wb_cli_line_scan;

static wb_cli_line_scan wb_cli_scan_line(const char *p, size_t n, int depth)
{
    wb_cli_line_scan sc = {.keep = n, .blank = true, .depth = depth};
    char quote = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!wb_cli_is_space(c))
            sc.blank = false;
        if (quote) {
            if (c == '\\' && i + 1 < n)
                i++;
            else if (c == quote)
                quote = 0;
            continue;
        }
        if (c == '#') {
            sc.keep = i;
            break;
        }
        if (!wb_cli_is_space(c))
            sc.has_text = true;
        if (c == '\'' || c == '"')
            quote = c;
        else if (c == '(' || c == '[')
            sc.depth++;
        else if ((c == ')' || c == ']') && sc.depth > 0)
            sc.depth--;
    }
    return sc;
}

static bool wb_cli_is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Whether the n bytes at p start with `with` as a word. */
static bool wb_cli_with_at(const char *p, size_t n)
{
    return n >= 4 && !memcmp(p, "with", 4) &&
           (n == 4 || !wb_cli_is_ident(p[4]));
}

/* Whether the entry so far cannot end: it ends with the arrow, a comma or
   `with`. */
static bool wb_cli_unfinished(const wb_buf *cur)
{
    const char *p = cur->p;
    size_t n = cur->len;
    while (n > 0 && (wb_cli_is_space(p[n - 1]) || p[n - 1] == '\n'))
        n--;
    return (n >= 1 && p[n - 1] == ',') ||
           (n >= 2 && p[n - 2] == '-' && p[n - 1] == '>') ||
           (n >= 4 && wb_cli_with_at(p + n - 4, 4) &&
            (n == 4 || !wb_cli_is_ident(p[n - 5])));
}

/* Whether line, n bytes with text, continues the open entry cur.  It must
   be indented, or start by closing a bracket or with the arrow.  Then it
   continues an entry whose brackets are open; after them, only one that
   cannot end there, or with what no spec starts with: the arrow, a
   return's attributes or the `with` clause. */
static bool wb_cli_continues(const char *line, size_t n, int depth,
                             const wb_buf *cur)
{
    bool arrow = n >= 2 && line[0] == '-' && line[1] == '>';
    if (!wb_cli_is_space(line[0]) && line[0] != ')' && line[0] != ']' &&
        !arrow)
        return false;
    if (depth > 0 || wb_cli_unfinished(cur))
        return true;
    while (n > 0 && wb_cli_is_space(*line))
        line++, n--;
    return (n >= 2 && line[0] == '-' && line[1] == '>') || line[0] == '[' ||
           wb_cli_with_at(line, n);
}

/* Ends the entry being built, if any, and hands it to out. */
static int wb_cli_text_flush(wb_buf *cur, bool *open, const char *file,
                             int line, int col, wb_cli_entries *out)
{
    if (!*open || cur->oom)
        return cur->oom ? -1 : 0;
    wb_cli_entry en = {.text = wb_buf_take(cur), .file = file, .line = line,
                       .col = col};
    if (!en.text || wb_cli_entries_push(out, en) != 0) {
        free(en.text);
        cur->oom = true;
        return -1;
    }
    *open = false;
    return 0;
}

/* Cuts a text file into entries: one per line, an entry continuing on
   the next line when that one is indented or starts with `)`, `]` or `->`,
   and the entry's brackets are open, or it cannot end where it does, or
   the line starts with what no spec starts with (wb_cli_continues).  Any
   other line, or a blank one, ends an entry even when its brackets are
   open, so that one missing `)` costs only its own entry. */
static int wb_cli_read_text(const char *file, const char *buf, size_t len,
                            wb_cli_entries *out, char **err)
{
    wb_buf cur = {0};
    bool open = false;
    int depth = 0, first_line = 0, first_col = 0, lineno = 0;
    size_t pos = 0;
    /* A UTF-8 byte order mark is not part of the first spec. */
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
        pos = 3;
    while (pos < len && !cur.oom) {
        const char *line = buf + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - line) : len - pos;
        pos += n + (nl ? 1 : 0);
        lineno++;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        wb_cli_line_scan sc = wb_cli_scan_line(line, n, open ? depth : 0);
        if (open && (sc.blank || (sc.has_text &&
                                  !wb_cli_continues(line, n, depth, &cur)))) {
            /* The entry ends here; the parser reports what it misses. */
            if (wb_cli_text_flush(&cur, &open, file, first_line, first_col,
                                  out) != 0)
                break;
            if (sc.has_text)
                sc = wb_cli_scan_line(line, n, 0);
        }
        if (!open) {
            if (!sc.has_text)
                continue;
            open = true;
            first_line = lineno;
            first_col = 1;
            while (wb_cli_is_space(line[first_col - 1]))
                first_col++;
        } else {
            /* A comment-only line still counts, so that the parser's line
               numbers stay those of the file. */
            wb_buf_write(&cur, "\n", 1);
        }
        wb_buf_write(&cur, line, sc.keep);
        depth = sc.depth;
    }
    wb_cli_text_flush(&cur, &open, file, first_line, first_col, out);
    bool oom = cur.oom;
    wb_buf_free(&cur);
    if (oom) {
        *err = wb_cli_format("%s: out of memory", file);
        return -1;
    }
    return 0;
}

/* ---- YAML files ---- */

typedef struct wb_cli_yaml {
    yaml_parser_t parser;
    const char *file;
    wb_cli_entries *out;
    char *err;
} wb_cli_yaml;

/* The next event; on a YAML error sets y->err (with the place) and fails. */
static int wb_cli_yaml_next(wb_cli_yaml *y, yaml_event_t *ev)
{
    if (yaml_parser_parse(&y->parser, ev))
        return 0;
    const yaml_parser_t *p = &y->parser;
    if (p->error == YAML_MEMORY_ERROR) {
        y->err = wb_cli_format("%s: out of memory", y->file);
        return -1;
    }
    yaml_mark_t m = p->problem_mark;
    y->err = wb_cli_format("%s:%zu:%zu: not valid YAML: %s%s%s", y->file,
                           m.line + 1, m.column + 1,
                           p->problem ? p->problem : "error",
                           p->context ? " " : "",
                           p->context ? p->context : "");
    return -1;
}

/* Consumes the rest of the node that ev starts (nothing more for a scalar
   or an alias). */
static int wb_cli_yaml_skip(wb_cli_yaml *y, const yaml_event_t *start)
{
    if (start->type != YAML_SEQUENCE_START_EVENT &&
        start->type != YAML_MAPPING_START_EVENT)
        return 0;
    int depth = 1;
    while (depth > 0) {
        yaml_event_t ev;
        if (wb_cli_yaml_next(y, &ev) != 0)
            return -1;
        if (ev.type == YAML_SEQUENCE_START_EVENT ||
            ev.type == YAML_MAPPING_START_EVENT)
            depth++;
        else if (ev.type == YAML_SEQUENCE_END_EVENT ||
                 ev.type == YAML_MAPPING_END_EVENT)
            depth--;
        yaml_event_delete(&ev);
    }
    return 0;
}

static int wb_cli_yaml_entry_error(wb_cli_yaml *y, yaml_mark_t m,
                                   const char *what)
{
    wb_cli_entry en = {.file = y->file, .line = (int)m.line + 1,
                       .col = (int)m.column + 1};
    en.error = wb_cli_format("%s:%d:%d: %s", y->file, en.line, en.col, what);
    if (!en.error || wb_cli_entries_push(y->out, en) != 0) {
        free(en.error);
        y->err = wb_cli_format("%s: out of memory", y->file);
        return -1;
    }
    return 0;
}

/* The entry for a `func:` value.  A plain value on one line is padded to
   its column so that the parser's columns are the file's; other styles
   start where their text does, as near as the YAML allows.  An empty
   value is reported where it starts, right after `func:`, which the
   padded text could not show. */
static int wb_cli_yaml_func(wb_cli_yaml *y, const yaml_event_t *ev)
{
    const yaml_mark_t *s = &ev->start_mark, *e = &ev->end_mark;
    yaml_scalar_style_t style = ev->data.scalar.style;
    const char *v = (const char *)ev->data.scalar.value;
    if (strspn(v, " \t\r\n") == ev->data.scalar.length)
        return wb_cli_yaml_entry_error(y, *s, "expected a spec after "
                                       "`func:`");
    wb_buf t = {0};
    wb_cli_entry en = {.file = y->file, .line = (int)s->line + 1,
                       .col = (int)s->column + 1};
    if (s->line == e->line) {
        size_t pad = s->column;
        if (style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
            style == YAML_DOUBLE_QUOTED_SCALAR_STYLE)
            pad++;
        wb_buf_printf(&t, "%*s", (int)pad, "");
        en.col = (int)pad + 1;
    } else if (style == YAML_LITERAL_SCALAR_STYLE ||
               style == YAML_FOLDED_SCALAR_STYLE) {
        en.line++;  /* the text starts on the line after `|` or `>` */
    }
    wb_buf_write(&t, (const char *)ev->data.scalar.value,
                 ev->data.scalar.length);
    en.text = wb_buf_take(&t);
    if (!en.text || wb_cli_entries_push(y->out, en) != 0) {
        free(en.text);
        y->err = wb_cli_format("%s: out of memory", y->file);
        return -1;
    }
    return 0;
}

/* A `func:` value that is an alias (*NAME): the reader takes no aliases,
   which libyaml hands over without the value they stand for. */
static int wb_cli_yaml_alias(wb_cli_yaml *y, const yaml_event_t *ev)
{
    char *what = wb_cli_format("expected a spec after `func:`, as text: "
                               "YAML aliases (*%s) are not supported",
                               (const char *)ev->data.alias.anchor);
    if (!what) {
        y->err = wb_cli_format("%s: out of memory", y->file);
        return -1;
    }
    int rc = wb_cli_yaml_entry_error(y, ev->start_mark, what);
    free(what);
    return rc;
}

/* Whether a `tags:` value (one scalar or a list of them) names
   inplace_view; consumes the value. */
static int wb_cli_yaml_tags(wb_cli_yaml *y, const yaml_event_t *val,
                            bool *inplace_view)
{
    if (val->type == YAML_SCALAR_EVENT) {
        *inplace_view |= strcmp((const char *)val->data.scalar.value,
                                "inplace_view") == 0;
        return 0;
    }
    if (val->type != YAML_SEQUENCE_START_EVENT)
        return wb_cli_yaml_skip(y, val);
    for (;;) {
        yaml_event_t ev;
        if (wb_cli_yaml_next(y, &ev) != 0)
            return -1;
        bool end = ev.type == YAML_SEQUENCE_END_EVENT;
        int rc = 0;
        if (ev.type == YAML_SCALAR_EVENT)
            *inplace_view |= strcmp((const char *)ev.data.scalar.value,
                                    "inplace_view") == 0;
        else
            rc = wb_cli_yaml_skip(y, &ev);
        yaml_event_delete(&ev);
        if (end || rc != 0)
            return rc;
    }
}

/* Ops tagged inplace_view change their `!` arguments' views, not their
   data: the entry says so with the extension's graph attribute, as a `with`
   clause of its own or added to the one the text has, whichever the
   schema parser takes.  The attribute goes on a line of its own, so that
   a comment the text ends in does not swallow it.  A text that already
   says inplace_view, or does not parse at all, stays as written, so its
   errors point into it. */
static int wb_cli_yaml_mark_view(wb_cli_yaml *y, wb_cli_entry *en)
{
    static const char *const how[] = {"\nwith inplace_view",
                                      "\n, inplace_view"};
    for (size_t i = 0; i < sizeof how / sizeof *how; i++) {
        char *p = wb_cli_format("%s%s", en->text, how[i]);
        wb_schema *sc = NULL;
        if (!p) {
            y->err = wb_cli_format("%s: out of memory", y->file);
            return -1;
        }
        if (wb_schema_parse(p, en->file, en->line, &sc) == WB_OK) {
            wb_schema_free(sc);
            free(en->text);
            en->text = p;
            return 0;
        }
        free(p);
    }
    return 0;
}

/* One item of the top-level list, whose MAPPING_START is start. */
static int wb_cli_yaml_item(wb_cli_yaml *y, const yaml_event_t *start)
{
    bool found = false, inplace_view = false;
    size_t entry = 0;
    for (;;) {
        yaml_event_t key, val;
        if (wb_cli_yaml_next(y, &key) != 0)
            return -1;
        if (key.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&key);
            break;
        }
        bool is_scalar = key.type == YAML_SCALAR_EVENT;
        const char *k = is_scalar ? (const char *)key.data.scalar.value : "";
        bool is_func = is_scalar && strcmp(k, "func") == 0;
        bool is_tags = is_scalar && strcmp(k, "tags") == 0;
        yaml_mark_t at = key.start_mark;
        int rc = wb_cli_yaml_skip(y, &key);
        yaml_event_delete(&key);
        if (rc != 0 || wb_cli_yaml_next(y, &val) != 0)
            return -1;
        if (is_func && found) {
            rc = wb_cli_yaml_entry_error(y, at, "a second `func:` key in "
                                         "this entry");
            if (rc == 0)
                rc = wb_cli_yaml_skip(y, &val);
        } else if (is_func) {
            found = true;
            entry = y->out->n;
            if (val.type == YAML_SCALAR_EVENT)
                rc = wb_cli_yaml_func(y, &val);
            else if (val.type == YAML_ALIAS_EVENT)
                rc = wb_cli_yaml_alias(y, &val);
            else
                rc = wb_cli_yaml_entry_error(y, val.start_mark,
                                             "expected a spec after "
                                             "`func:`, as text");
            if (rc == 0)
                rc = wb_cli_yaml_skip(y, &val);
        } else if (is_tags) {
            rc = wb_cli_yaml_tags(y, &val, &inplace_view);
        } else {
            rc = wb_cli_yaml_skip(y, &val);
        }
        yaml_event_delete(&val);
        if (rc != 0)
            return -1;
    }
    if (!found)
        return wb_cli_yaml_entry_error(y, start->start_mark,
                                       "expected a `func:` key in this "
                                       "entry");
    if (inplace_view && !y->out->v[entry].error)
        return wb_cli_yaml_mark_view(y, &y->out->v[entry]);
    return 0;
}

/* A YAML file: every document a list of mappings, each with a `func:`. */
static int wb_cli_read_yaml(const char *file, const char *buf, size_t len,
                            wb_cli_entries *out, char **err)
{
    wb_cli_yaml y = {.file = file, .out = out};
    if (!yaml_parser_initialize(&y.parser)) {
        *err = wb_cli_format("%s: out of memory", file);
        return -1;
    }
    yaml_parser_set_input_string(&y.parser, (const unsigned char *)buf, len);
    bool done = false;
    while (!done) {
        yaml_event_t ev;
        if (wb_cli_yaml_next(&y, &ev) != 0)
            break;
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_SEQUENCE_START_EVENT:
            /* The top-level list: its items are the entries. */
            for (;;) {
                yaml_event_t item;
                if (wb_cli_yaml_next(&y, &item) != 0) {
                    done = true;
                    break;
                }
                int rc = 0;
                if (item.type == YAML_SEQUENCE_END_EVENT) {
                    yaml_event_delete(&item);
                    break;
                }
                if (item.type == YAML_MAPPING_START_EVENT)
                    rc = wb_cli_yaml_item(&y, &item);
                else if ((rc = wb_cli_yaml_entry_error(
                              &y, item.start_mark,
                              "expected a mapping with a `func:` key")) == 0)
                    rc = wb_cli_yaml_skip(&y, &item);
                yaml_event_delete(&item);
                if (rc != 0) {
                    done = true;
                    break;
                }
            }
            break;
        case YAML_MAPPING_START_EVENT:
        case YAML_SCALAR_EVENT:
        case YAML_ALIAS_EVENT:
            /* A document that is no list cannot be read on from. */
            y.err = wb_cli_format("%s:%zu:%zu: expected a list of mappings "
                                  "with a `func:` key", file,
                                  ev.start_mark.line + 1,
                                  ev.start_mark.column + 1);
            done = true;
            break;
        default:  /* stream and document starts and ends */
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&y.parser);
    if (y.err) {
        *err = y.err;
        return -1;
    }
    return 0;
}

static bool wb_cli_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int wb_cli_read_file(const char *path, wb_cli_entries *out, char **err)
{
    const char *file = strcmp(path, "-") == 0 ? "<stdin>" : path;
    size_t len;
    *err = NULL;
    char *buf = wb_cli_slurp(path, &len);
    if (!buf) {
        *err = wb_cli_format("%s: cannot read: %s", file, strerror(errno));
        return -1;
    }
    int rc;
    if (memchr(buf, '\0', len)) {
        *err = wb_cli_format("%s: contains a NUL byte; not a text file",
                             file);
        rc = -1;
    } else if (strcmp(path, "-") != 0 && (wb_cli_ends_with(path, ".yaml") ||
                                          wb_cli_ends_with(path, ".yml"))) {
        rc = wb_cli_read_yaml(file, buf, len, out, err);
    } else {
        rc = wb_cli_read_text(file, buf, len, out, err);
    }
    free(buf);
    if (rc != 0 && !*err)
        *err = wb_cli_format("%s: out of memory", file);
    return rc;
}

/* ---- allowlists ---- */

int wb_cli_allowlist_read(const char *path, wb_cli_allowlist *al, char **err)
{
    size_t len;
    *err = NULL;
    al->file = path;
    char *buf = wb_cli_slurp(path, &len);
    if (!buf) {
        *err = wb_cli_format("%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    int lineno = 0, rc = 0;
    /* A UTF-8 byte order mark is not part of the first name. */
    char *line = buf;
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
        line += 3;
    while (rc == 0 && line < buf + len) {
        char *nl = memchr(line, '\n', (size_t)(buf + len - line));
        char *end = nl ? nl : buf + len;
        lineno++;
        char *hash = memchr(line, '#', (size_t)(end - line));
        char *stop = hash ? hash : end;
        while (line < stop && wb_cli_is_space(*line))
            line++;
        while (stop > line && wb_cli_is_space(stop[-1]))
            stop--;
        if (stop > line) {
            for (char *c = line; c < stop; c++)
                if (wb_cli_is_space(*c)) {
                    *err = wb_cli_format("%s:%d: expected one name per line",
                                         path, lineno);
                    rc = -1;
                    break;
                }
            if (rc == 0 && al->n == al->cap) {
                size_t cap = al->cap ? al->cap * 2 : 32;
                char **names = realloc(al->names, cap * sizeof *names);
                if (names)
                    al->names = names;
                int *lines = realloc(al->lines, cap * sizeof *lines);
                if (lines)
                    al->lines = lines;
                bool *used = realloc(al->used, cap * sizeof *used);
                if (used)
                    al->used = used;
                if (names && lines && used)
                    al->cap = cap;
                else
                    rc = -1;
            }
            if (rc == 0) {
                char *name = wb_cli_strndup(line, (size_t)(stop - line));
                if (!name) {
                    rc = -1;
                } else {
                    al->names[al->n] = name;
                    al->lines[al->n] = lineno;
                    al->used[al->n] = false;
                    al->n++;
                }
            }
        }
        line = nl ? nl + 1 : buf + len;
    }
    free(buf);
    if (rc != 0 && !*err)
        *err = wb_cli_format("%s: out of memory", path);
    return rc;
}

bool wb_cli_name_matches(const char *want, const char *name)
{
    const char *ns_end = strstr(name, "::");
    const char *bare = ns_end ? ns_end + 2 : name;
    const char *dot = strchr(bare, '.');
    size_t base_len = dot ? (size_t)(dot - bare) : strlen(bare);
    /* A wanted name with a namespace names it; one without matches the
       name whatever its namespace. */
    const char *want_ns = strstr(want, "::");
    const char *subject = want_ns ? name : bare;
    const char *want_tail = want_ns ? want_ns + 2 : want;
    const char *want_dot = strchr(want_tail, '.');
    /* ATen names the overload-less op NAME.default. */
    if (want_dot && !dot && strcmp(want_dot, ".default") == 0) {
        size_t n = (size_t)(want_dot - want);
        return strlen(subject) == n && strncmp(want, subject, n) == 0;
    }
    if (want_dot)
        return strcmp(want, subject) == 0;
    /* Without an overload: the subject up to the end of its base name. */
    size_t n = (size_t)(bare - subject) + base_len;
    return strlen(want) == n && strncmp(want, subject, n) == 0;
}

bool wb_cli_allowlist_takes(wb_cli_allowlist *al, const char *name)
{
    bool taken = false;
    for (size_t i = 0; i < al->n; i++)
        if (wb_cli_name_matches(al->names[i], name)) {
            al->used[i] = true;
            taken = true;
        }
    return taken;
}

/* The entry is shown as the parser shows names, bytes that are not
   printable ASCII as \xHH, so that the warning says what the file holds. */
void wb_cli_allowlist_warn_unused(const wb_cli_allowlist *al)
{
    char shown[300];
    for (size_t i = 0; al && i < al->n; i++)
        if (!al->used[i])
            wb_cli_error("%s:%d: warning: allowlist entry '%s' takes no "
                         "spec\n", al->file, al->lines[i],
                         wb_spec_print_name(al->names[i], shown,
                                            sizeof shown));
}

void wb_cli_allowlist_free(wb_cli_allowlist *al)
{
    for (size_t i = 0; i < al->n; i++)
        free(al->names[i]);
    free(al->names);
    free(al->lines);
    free(al->used);
    al->names = NULL;
    al->lines = NULL;
    al->used = NULL;
    al->n = al->cap = 0;
}

/* The name a spec is shown and picked by: "ns::name.overload" when the
   schema names a namespace, else "name.overload"; the caller frees it, and
   it is NULL when out of memory. */
char *wb_cli_full_name(const wb_schema *sc)
{
    const char *ns = wb_schema_namespace(sc), *name = wb_schema_name(sc);
    size_t n = strlen(ns) + strlen(name) + 3;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s%s", ns, *ns ? "::" : "", name);
    return p;
}

/* ---- messages ---- */

void wb_cli_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

void wb_cli_error_text(const char *msg)
{
    size_t n = strlen(msg);
    wb_cli_error("%s%s", msg, n && msg[n - 1] == '\n' ? "" : "\n");
}

/* ---- JSON ---- */

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when the
   bytes there are not one: overlong forms, surrogates and code points past
   U+10FFFF are invalid.  p is NUL-terminated, and a NUL fails every
   continuation test before anything past it is read. */
static int wb_cli_utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 &&
                       (p[3] & 0xc0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

/* s as a JSON string, or null for NULL.  Quotes, backslashes and control
   characters are escaped; valid UTF-8 is written as it is; each byte that
   is not part of valid UTF-8 becomes U+FFFD, so the output is always valid
   UTF-8 and valid JSON. */
void wb_cli_json_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    putc('"', f);
    /* Runs of bytes that need no escape go out in one fwrite each. */
    const unsigned char *p = (const unsigned char *)s, *run = p;
    while (*p) {
        unsigned c = *p;
        int n = c >= 0x20 && c != '"' && c != '\\' ? wb_cli_utf8_len(p) : 0;
        if (n > 0) {
            p += n;
            continue;
        }
        fwrite(run, 1, (size_t)(p - run), f);
        if (c == '"' || c == '\\') {
            putc('\\', f);
            putc((int)c, f);
        } else if (c < 0x20) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\t': fputs("\\t", f); break;
            case '\r': fputs("\\r", f); break;
            case '\b': fputs("\\b", f); break;
            case '\f': fputs("\\f", f); break;
            default: fprintf(f, "\\u%04x", c); break;
            }
        } else {
            fputs("\\ufffd", f);  /* not UTF-8 */
        }
        run = ++p;
    }
    fwrite(run, 1, (size_t)(p - run), f);
    putc('"', f);
}
