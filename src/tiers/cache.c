/*
 * cache.c -- compiled code shared in the process, and the cc tier's way
 * through the disk cache (disk.c) to the system compiler (cc.c).
 *
 * Code is shared by key (the tier, and for tcc a fast hash of the
 * generated C backed by a comparison of the sources, for cc its disk key,
 * so another compiler or other flags get their own code): wrappers of
 * equal specs hold one wb_code, and the last release frees it.
 *
 * wb_cache_lock guards the in-process table and the statistics; it is
 * never held across a compile.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "disk.h"
#include "tiers.h"
#include "../spec/spec.h"
#include "../gen/gen.h"

static pthread_mutex_t wb_cache_lock = PTHREAD_MUTEX_INITIALIZER;

#define WB_BUCKETS 256
static wb_code *wb_table[WB_BUCKETS];
static wb_cache_stats wb_stats;

void wb_cache_count(wb_stat stat, double ms_saved)
{
    pthread_mutex_lock(&wb_cache_lock);
    switch (stat) {
    case WB_STAT_SHARED: wb_stats.shared++; break;
    case WB_STAT_COMPILED: wb_stats.compiled++; break;
    case WB_STAT_DISK_HITS: wb_stats.disk_hits++; break;
    case WB_STAT_DISK_MISSES: wb_stats.disk_misses++; break;
    case WB_STAT_DISK_REBUILT: wb_stats.disk_rebuilt++; break;
    case WB_STAT_DISK_EVICTED: wb_stats.disk_evicted++; break;
    }
    wb_stats.compile_ms_saved += ms_saved;
    pthread_mutex_unlock(&wb_cache_lock);
}

void wb_cache_stats_get(wb_cache_stats *out)
{
    if (!out)
        return;
    pthread_mutex_lock(&wb_cache_lock);
    *out = wb_stats;
    pthread_mutex_unlock(&wb_cache_lock);
}

/* ---- the in-process table ---- */

static unsigned wb_bucket(const char *key)
{
    return (unsigned)strtoul((char[3]){key[0], key[1], 0}, NULL, 16) %
           WB_BUCKETS;
}

/* A live code for key on tier (and source, unless NULL), with a new
   reference, or NULL.  A code whose count already dropped to zero is on
   its way out and is skipped. */
static wb_code *wb_table_find(wb_tier tier, const char *key,
                              const char *source)
{
    wb_code *found = NULL;
    pthread_mutex_lock(&wb_cache_lock);
    for (wb_code *c = wb_table[wb_bucket(key)]; c && !found; c = c->next) {
        if (c->tier != tier || strcmp(c->key, key) != 0 ||
            (source && (!c->source || strcmp(c->source, source) != 0)))
            continue;
        long r = atomic_load(&c->refs);
        while (r > 0 && !atomic_compare_exchange_weak(&c->refs, &r, r + 1))
            ;
        if (r > 0)
            found = c;
    }
    if (found)
        wb_stats.shared++;
    pthread_mutex_unlock(&wb_cache_lock);
    return found;
}

static void wb_table_insert(wb_code *c)
{
    unsigned b = wb_bucket(c->key);
    pthread_mutex_lock(&wb_cache_lock);
    c->next = wb_table[b];
    wb_table[b] = c;
    c->cached = true;
    pthread_mutex_unlock(&wb_cache_lock);
}

/* Takes a dying code out of the table before it is freed. */
void wb_code_uncache(wb_code *c)
{
    if (!c->cached)
        return;
    pthread_mutex_lock(&wb_cache_lock);
    for (wb_code **p = &wb_table[wb_bucket(c->key)]; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    pthread_mutex_unlock(&wb_cache_lock);
}

/* ---- tcc code ---- */

/* One block of libtcc code, shared by the functions of a batch. */
typedef struct wb_jit_block {
    atomic_long refs;
    wb_jit_code *jit;
} wb_jit_block;

typedef struct wb_tcc_code {
    wb_code code;  /* first */
    wb_jit_block *block;
} wb_tcc_code;

static void wb_tcc_destroy(wb_code *c)
{
    wb_jit_block *b = ((wb_tcc_code *)c)->block;
    wb_code_uncache(c);
    if (atomic_fetch_sub(&b->refs, 1) == 1) {
        wb_jit_free(b->jit);
        free(b);
    }
    free(c->source);
    free(c->note);
    free(c);
}

/* The sharing key of tcc code: FNV-1a of the source, in hex.  SHA-256 cost
   about a fifth of a compile; a match is confirmed by comparing sources. */
static void wb_tcc_key(const char *source, char out[WB_FINGERPRINT_LEN + 1])
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)source; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    snprintf(out, WB_FINGERPRINT_LEN + 1, "%016llx", (unsigned long long)h);
}

wb_status wb_tcc_codes(int n, const char *const *sources, bool share,
                       wb_code **out)
{
    char (*keys)[WB_FINGERPRINT_LEN + 1] = calloc((size_t)n, sizeof *keys);
    int *miss = calloc((size_t)n, sizeof *miss);          /* source index */
    int *first = calloc((size_t)n, sizeof *first);        /* equal source */
    const char **srcs = calloc((size_t)n, sizeof *srcs);
    void **entries = calloc((size_t)n, sizeof *entries);
    wb_tcc_code **made = calloc((size_t)n, sizeof *made);
    wb_jit_block *block = NULL;
    wb_status st = WB_OK;
    int nmiss = 0;
    for (int i = 0; i < n; i++)
        out[i] = NULL;
    if (!keys || !miss || !first || !srcs || !entries || !made) {
        st = wb_rt_fail(WB_ERR_NOMEM, "out of memory for a compile");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (share)
            wb_tcc_key(sources[i], keys[i]);
        first[i] = i;
        for (int j = 0; share && j < i; j++)
            if (!strcmp(keys[j], keys[i]) && !strcmp(sources[j], sources[i])) {
                first[i] = j;
                break;
            }
        if (first[i] == i && !(share && (out[i] = wb_table_find(
                                             WB_TIER_TCC, keys[i],
                                             sources[i])))) {
            miss[nmiss] = i;
            srcs[nmiss++] = sources[i];
        }
    }
    if (nmiss > 0) {
        block = calloc(1, sizeof *block);
        bool ok = block != NULL;
        for (int k = 0; ok && k < nmiss; k++)
            ok = (made[k] = calloc(1, sizeof *made[k])) &&
                 (!share || (made[k]->code.source = strdup(srcs[k])));
        if (!ok) {
            st = wb_rt_fail(WB_ERR_NOMEM, "out of memory for compiled code");
            goto done;
        }
        if ((st = wb_jit_compile_batch(nmiss, srcs, WB_EMIT_FN, &block->jit,
                                       entries)) != WB_OK)
            goto done;
        atomic_init(&block->refs, nmiss);
        for (int k = 0; k < nmiss; k++) {
            wb_tcc_code *c = made[k];
            atomic_init(&c->code.refs, 1);
            c->code.tier = WB_TIER_TCC;
            memcpy(&c->code.entry, &entries[k], sizeof entries[k]);
            c->code.destroy = wb_tcc_destroy;
            memcpy(c->code.key, keys[miss[k]], sizeof c->code.key);
            c->block = block;
            out[miss[k]] = &c->code;
            made[k] = NULL;
            wb_cache_count(WB_STAT_COMPILED, 0);
            if (share)
                wb_table_insert(&c->code);
        }
        block = NULL;
    }
    for (int i = 0; i < n; i++)
        if (first[i] != i) {
            out[i] = out[first[i]];
            atomic_fetch_add(&out[i]->refs, 1);
            wb_cache_count(WB_STAT_SHARED, 0);
        }
done:
    if (st != WB_OK)
        for (int i = 0; i < n; i++) {
            if (out[i] && first[i] == i)
                wb_code_release(out[i]);
            out[i] = NULL;
        }
    for (int k = 0; made && k < nmiss; k++)
        if (made[k]) {
            free(made[k]->code.source);
            free(made[k]);
        }
    free(block);
    free(keys), free(miss), free(first), free(srcs), free(entries),
        free(made);
    return st;
}

/* The note of cc code built by the system compiler. */
static char *wb_cc_built_note(const wb_cc_opts *cc, double ms,
                              const wb_disk *d, wb_disk_found got)
{
    char note[sizeof d->why + 400];
    const char *why = !cc->disk_cache            ? " (disk cache off)"
                      : d->fd < 0                ? " (disk cache off: "
                      : got == WB_DISK_FOREIGN   ? " (not stored: something "
                                                   "the disk cache did not "
                                                   "make is at its entry's "
                                                   "name)"
                      : got != WB_DISK_NONE      ? " (a damaged disk cache "
                                                   "entry was rebuilt)"
                                                 : " (not in the disk cache "
                                                   "yet)";
    snprintf(note, sizeof note, "cc: compiled by '%s' in %.1f ms%s%s%s",
             cc->argv[0], ms, why, cc->disk_cache && d->fd < 0 ? d->why : "",
             cc->disk_cache && d->fd < 0 ? ")" : "");
    return strdup(note);
}

/* Compiles source on the cc tier, through the disk cache when allowed.
   An object is stored only once it has loaded and its entry point was
   found, so a compiler that writes garbage leaves none behind. */
static wb_status wb_cc_code(const char *source, const wb_cc_opts *cc,
                            const wb_disk_key *k, const char *spec,
                            const atomic_bool *cancel, wb_code **out)
{
    char tmp[PATH_MAX], note[200], *built = NULL, *bytes = NULL;
    wb_disk d = {.fd = -1};
    wb_disk_found got = WB_DISK_NONE;
    wb_disk_meta m;
    struct stat sb;
    double ms = 0;
    wb_status st;
    if (cc->disk_cache && wb_disk_open(&d, true)) {
        got = wb_disk_find(&d, k, &m, &bytes);
        if (got == WB_DISK_HIT) {
            st = wb_cc_load_bytes(bytes, (size_t)m.bytes, WB_EMIT_FN, out);
            free(bytes);
            if (st == WB_OK) {
                wb_disk_touch(&d, k);
                wb_disk_close(&d);
                wb_cache_count(WB_STAT_DISK_HITS, m.compile_ms);
                snprintf(note, sizeof note, "cc: loaded from the disk cache "
                         "(entry %.16s, which took %.1f ms to compile)",
                         k->key, m.compile_ms);
                (*out)->note = strdup(note);
                return WB_OK;
            }
            /* Whole, yet it does not load here: rebuilt like a damaged
               one. */
            got = WB_DISK_BAD_OBJECT;
        }
        if (got == WB_DISK_BAD_RECORD || got == WB_DISK_BAD_OBJECT)
            wb_disk_forget(&d, k, &m);
        wb_cache_count(got == WB_DISK_NONE || got == WB_DISK_FOREIGN
                           ? WB_STAT_DISK_MISSES : WB_STAT_DISK_REBUILT, 0);
    }
    if ((st = wb_cc_tmpdir(tmp)) != WB_OK) {
        wb_disk_close(&d);
        return st;
    }
    double t0 = wb_now_ms();
    st = wb_cc_build(cc, source, tmp, &built, cancel);
    ms = wb_now_ms() - t0;
    if (st == WB_OK)
        st = wb_cc_load(built, WB_EMIT_FN, out);
    if (st == WB_OK && d.fd >= 0 && got != WB_DISK_FOREIGN) {
        int fd = wb_disk_open_file(AT_FDCWD, built, WB_DISK_OBJECT_MAX, false,
                                   &sb);
        char *obj = fd < 0 ? NULL : wb_disk_slurp(fd, (size_t)sb.st_size);
        if (fd >= 0)
            close(fd);
        int gone = obj ? wb_disk_store(&d, k, obj, (size_t)sb.st_size, ms,
                                       spec)
                       : 0;
        for (int i = 0; i < gone; i++)
            wb_cache_count(WB_STAT_DISK_EVICTED, 0);
        free(obj);
    }
    free(built);
    wb_cc_tmpdir_free(tmp);
    if (st == WB_OK) {
        wb_cache_count(WB_STAT_COMPILED, 0);
        (*out)->note = wb_cc_built_note(cc, ms, &d, got);
    }
    wb_disk_close(&d);
    return st;
}

wb_status wb_cc_code_get(const char *source, bool share, const wb_cc_opts *cc,
                         const char *spec, const atomic_bool *cancel,
                         wb_code **out)
{
    wb_disk_key k;
    wb_status st;
    wb_disk_key_make(source, cc, &k);
    if (share && (*out = wb_table_find(WB_TIER_CC, k.key, NULL)))
        return WB_OK;
    if ((st = wb_cc_code(source, cc, &k, spec, cancel, out)) != WB_OK)
        return st;
    memcpy((*out)->key, k.key, sizeof k.key);
    if (share)
        wb_table_insert(*out);
    return WB_OK;
}

