/*
 * aot.h -- `wrapbake emit --aot`: ahead-of-time C for a set of specs.
 *
 * The generator writes, into one directory, a C file per graph (the
 * emitter's wrapper function under a name of its own), a dispatch unit that
 * embeds every spec and its fingerprint, and the dispatch unit's header.
 * docs/aot.md shows the files and how a program builds and calls them.
 */
#ifndef WB_CLI_AOT_H
#define WB_CLI_AOT_H

#include "input.h"

/* The prefix of every name the generated files define, when none is
   given; and the longest prefix taken. */
#define WB_AOT_PREFIX "wb_aot"
#define WB_AOT_MAX_PREFIX 24

/* NULL when prefix can prefix the files' C identifiers: [A-Za-z]
   [A-Za-z0-9_]*, at most WB_AOT_MAX_PREFIX bytes, none of the library's
   (wb, wb_* but wb_aot*), and in any case not the name of a header the
   files include (wrapbake, dlpack, the C library's); else what is wrong
   with it. */
const char *wb_cli_aot_prefix_bad(const char *prefix);

/* Generates the files for the specs of files[0..nfiles) into dir (created
   when missing, its parent must exist), taking only the specs al takes when
   al is not NULL.  Every spec must parse and be wrappable, and no two may
   have one name: any failure is reported on stderr and nothing is written.
   A file whose content would not change is left untouched, so that a
   build does not recompile it.  Prints each generated file's path on
   stdout.  Returns the CLI's exit status (0 or 1). */
int wb_cli_aot(const char *dir, const char *prefix, wb_cli_allowlist *al,
               int nfiles, char **files);

#endif /* WB_CLI_AOT_H */
