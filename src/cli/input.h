/*
 * input.h -- the files the wrapbake CLI reads: text files of specs, YAML
 * files in the shape of native_functions.yaml, and allowlists.
 *
 * Each spec read keeps the file and line it came from, so that every message
 * about it can point there.  The formats are described in docs/spec-format.md
 * ("Files"); the CLI's own reading rules are in docs/cli.md ("Input
 * files and allowlists").
 */
#ifndef WB_CLI_INPUT_H
#define WB_CLI_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One spec as read from a file, not yet parsed. */
typedef struct wb_cli_entry {
    char *text;        /* the spec text (owned); lines joined with '\n' */
    const char *file;  /* the file name as given, or "<stdin>" (borrowed) */
    int line;          /* the line of the text's first line, from 1 */
    int col;           /* the column where the entry starts, from 1 */
    char *error;       /* a problem the reader found (owned), or NULL; the
                          entry then has no text */
} wb_cli_entry;

/* A growable list of entries. */
typedef struct wb_cli_entries {
    wb_cli_entry *v;
    size_t n, cap;
} wb_cli_entries;

/* Appends the entries of path ("-" is standard input, read as text) to out.
   A path ending in .yaml or .yml is read as YAML, anything else as text.
   Returns 0, or -1 with *err set to a malloc'ed message when the file cannot
   be read or is not well-formed YAML; the entries read before the problem
   stay in out. */
int wb_cli_read_file(const char *path, wb_cli_entries *out, char **err);
void wb_cli_entries_free(wb_cli_entries *e);

/* The name a spec text starts with ("aten::add.Tensor"), read without
   parsing, for specs the parser rejects; NULL when the text starts with no
   name.  Malloc'ed. */
char *wb_cli_text_name(const char *text);

/* The name a spec is shown and picked by: "ns::name.overload" when the
   schema names a namespace, else "name.overload"; malloc'ed, NULL when out
   of memory. */
struct wb_schema;
char *wb_cli_full_name(const struct wb_schema *sc);

/* Whether want names the spec named name: "add.Tensor" names that overload
   only, "add" every overload of add, "abs.default" the abs without an
   overload (ATen's name for it); a want without a namespace ignores
   the name's ("aten::add" is "add"), one with a namespace must match it. */
bool wb_cli_name_matches(const char *want, const char *name);

/* An allowlist: names of specs to take. */
typedef struct wb_cli_allowlist {
    char **names;      /* each entry, trimmed (owned) */
    int *lines;        /* the line each came from */
    bool *used;        /* whether it took some spec */
    size_t n, cap;
    const char *file;  /* its file name (borrowed) */
} wb_cli_allowlist;

/* Reads an allowlist: one name per line, `#` comments, blank lines and a
   leading UTF-8 byte order mark ignored.  Returns 0, or -1 with *err set
   to a malloc'ed message. */
int wb_cli_allowlist_read(const char *path, wb_cli_allowlist *al, char **err);
/* Whether the allowlist takes the spec named name (with its overload, and
   maybe a namespace); an entry without an overload takes every overload.
   Marks the entries that match as used. */
bool wb_cli_allowlist_takes(wb_cli_allowlist *al, const char *name);
/* Warns on stderr of each entry that took no spec (none for NULL), its
   bytes that are not printable ASCII escaped. */
void wb_cli_allowlist_warn_unused(const wb_cli_allowlist *al);
void wb_cli_allowlist_free(wb_cli_allowlist *al);

/* Reads a whole file ("-": standard input) into a malloc'ed NUL-terminated
   buffer; returns NULL with errno set on failure.  *len gets its length. */
char *wb_cli_slurp(const char *path, size_t *len);

/* Errors go to stderr; stdout is flushed first so that the two stay in
   order when they share a terminal or a file. */
void wb_cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* A message that may or may not end in a newline, printed with exactly
   one. */
void wb_cli_error_text(const char *msg);

/* s as a JSON string, or null for NULL: quotes, backslashes and control
   characters escaped, each byte that is not part of valid UTF-8 written
   as U+FFFD, so the output is always valid JSON. */
void wb_cli_json_string(FILE *f, const char *s);

#endif /* WB_CLI_INPUT_H */
