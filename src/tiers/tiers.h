/*
 * tiers.h -- wrappers, the compiled code they share, and the caches and
 * compilers behind the compiled tiers (internal).
 *
 * A wrapper is a wb_env (what generated code sees) plus the entry point of
 * the tier serving it.  Compiled tiers hold a wb_code: one function,
 * reference-counted, shared through the in-process cache by the wrappers
 * of equal specs.  wrapper.c is the part an ahead-of-time program links:
 * nothing in it reaches libtcc or the system compiler.
 */
#ifndef WB_TIERS_H
#define WB_TIERS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "jit.h"
#include "../gen/gen.h"

/* ---- compiled code ---- */

typedef struct wb_code wb_code;
struct wb_code {
    atomic_long refs;
    wb_tier tier;
    wb_entry_fn entry;
    void (*destroy)(wb_code *c);      /* frees what holds entry, then c */
    char key[WB_FINGERPRINT_LEN + 1]; /* the in-process cache's key */
    char *source;  /* tcc: the function compiled, compared when keys match (the
                      key is a fast hash); NULL where the key is SHA-256 */
    wb_code *next;                    /* the in-process cache's chain */
    bool cached;                      /* in the in-process cache */
    char *note;                       /* how it was obtained, or NULL */
};

/* Drops one reference; the last one destroys c (NULL does nothing). */
void wb_code_release(wb_code *c);

/* ---- wrappers (wrapper.c) ---- */

struct wb_wrapper {
    wb_env env;                     /* first: generated code reads it */
    _Atomic(wb_entry_fn) entry;     /* the tier serving now */
    atomic_int tier;                /* and its name */
    wb_spec *spec;
    /* The generated C (compiled tiers): libtcc compiles text of its own,
       so a tcc wrapper's is made when first asked for (wb_wrapper_source,
       a promotion). */
    _Atomic(char *) source;
    wb_code *code;                  /* the code serving from creation */
    _Atomic(wb_code *) promoted;    /* auto: the cc code, once built */
    _Atomic(char *) note;           /* see wb_wrapper_note */
    /* Called by wb_wrapper_free before anything is freed: stops a pending
       promotion. */
    void (*retire)(wb_wrapper *w);
    struct wb_promotion *promotion;
};

/* A wrapper over a validated copy of spec, with no entry point yet. */
wb_status wb_wrapper_alloc(const wb_spec *spec, wb_graph_fn graph,
                           void *graph_ctx, wb_wrapper **out);
/* Sets the wrapper's note (takes text, frees the previous one). */
void wb_wrapper_set_note(wb_wrapper *w, char *text);

/* ---- the compiled tiers (tcc.c, cc.c) ---- */

/* The cc tier's settings, resolved from wb_options and the environment. */
typedef struct wb_cc_opts {
    char **argv;        /* the compiler command, split at blanks */
    int argc;
    char *words;        /* the storage argv points into */
    char shown[256];    /* argv[0] printable, for messages: it comes from
                           $CC or the caller */
    char *path;         /* the program argv[0] names, found as execvp finds
                           it and resolved (no link in it), whose way and
                           file wb_rt_unsafe_file allows: what the disk key
                           names; NULL when none may run */
    char *spawn;        /* the same as found, its links (checked) kept: what
                           runs, so that a script reached through a link of
                           its name sees that name */
    char *why;          /* when path is NULL: why, printable */
    uint32_t timeout_s;
    bool disk_cache;
} wb_cc_opts;

/* The flags every cc-tier object is built with, split at blanks for the
   command line; part of the disk cache's key. */
#define WB_CC_FLAGS "-O2 -fPIC -shared -w"

/* The compiler command of o (NULL: $CC, then "cc"), split, and the
   program its first word names, found and checked once (path, or why
   none may run). */
wb_status wb_cc_opts_init(const wb_options *o, wb_cc_opts *out);
void wb_cc_opts_free(wb_cc_opts *c);
/* WB_OK when cc has a program that may run; else fails with
   WB_ERR_COMPILE, saying why (missing, not executable, not trusted). */
wb_status wb_cc_runnable_or_fail(const wb_cc_opts *cc);

/* A new directory of the user's alone under $TMPDIR (or /tmp), into dir,
   for the compiler's files and the objects loaded.  Refused when others
   could rename what is in $TMPDIR: the files in it are reached by path. */
wb_status wb_cc_tmpdir(char dir[PATH_MAX]);
/* Removes such a directory and what is in it, directories the compiler
   made included (16 levels deep), following no link. */
void wb_cc_tmpdir_free(const char *dir);

/* Compiles source with the system compiler into a shared object in dir
   (the caller's private directory) and returns it as *path (malloc'ed),
   with the compiler's diagnostics in the message on failure.  cancel, when
   not NULL, stops the compiler once it turns true. */
wb_status wb_cc_build(const wb_cc_opts *cc, const char *source,
                      const char *dir, char **path, const atomic_bool *cancel);
/* Loads the shared object at path and binds its runtime helpers; *code
   holds the entry point fn. */
wb_status wb_cc_load(const char *path, const char *fn, wb_code **code);
/* Loads n bytes of a shared object, checked by the caller, from a copy in
   a private directory, named by hex, the hash of the bytes: what is
   loaded is what was checked. */
wb_status wb_cc_load_bytes(const void *bytes, size_t n, const char *hex,
                           const char *fn, wb_code **code);

/* The lock that loads cc code one object at a time (cc.c); only the fork
   handlers (tiers.c) take it outside cc.c. */
extern pthread_mutex_t wb_cc_bind_lock;

/* WB_OK where the cc tier may run the system compiler: not in a process
   running with privileges its user lacks (wb_rt_privileged), whose PATH
   and compiler environment (COMPILER_PATH, GCC_EXEC_PREFIX) that user
   chose. */
wb_status wb_cc_allowed(void);
/* The cc code for source (cc.c), from the in-process cache when share is
   set and code of its disk key (source, compiler, flags, ABI) is there,
   else compiled through the disk cache
   (recording spec, the spec's printable name); cancel may stop the
   compile.  Refused where wb_cc_allowed refuses. */
wb_status wb_cc_code_get(const char *source, bool share, const wb_cc_opts *cc,
                         const char *spec, const atomic_bool *cancel,
                         wb_code **out);
/* The tcc code for n functions the emitter made in libtcc's form (tcc.c),
   the ones not shared compiled in one libtcc state; all or nothing. */
wb_status wb_tcc_codes(int n, const wb_emitted *const *parts, bool share,
                       wb_code **out);

/* ---- the in-process cache and its statistics (cache.c) ---- */

/* The lock of the table and the statistics; only the fork handlers
   (tiers.c) take it outside cache.c. */
extern pthread_mutex_t wb_cache_lock;

/* A live code of tier for key (and source, unless NULL: tcc keys are a
   fast hash, confirmed by comparing sources), with a new reference, or
   NULL; a hit counts as shared. */
wb_code *wb_cache_find(wb_tier tier, const char *key, const char *source);
/* Puts c, whose key is set, in the in-process cache; wb_code_uncache
   takes it out again. */
void wb_cache_insert(wb_code *c);
/* Takes c out of the in-process cache (for its destroy function). */
void wb_code_uncache(wb_code *c);

/* Cache statistics, counted under the cache lock. */
typedef enum wb_stat {
    WB_STAT_SHARED, WB_STAT_COMPILED, WB_STAT_DISK_HITS, WB_STAT_DISK_MISSES,
    WB_STAT_DISK_REBUILT, WB_STAT_DISK_EVICTED
} wb_stat;
void wb_cache_count(wb_stat stat, double ms_saved);

#ifdef WB_TEST_HOOKS
/* Test hook (the test build's library alone): called, when set, by the
   call that triggers an auto wrapper's promotion, between switching the
   wrapper's entry and marking the promotion triggered, under the
   promotion lock. */
extern void (*wb_test_trigger_pause)(void);
#endif

#endif /* WB_TIERS_H */
