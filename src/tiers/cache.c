/*
 * cache.c -- compiled code shared in the process, and the cache
 * statistics.
 *
 * Code is shared by key (the tier, and for tcc a fast hash of the
 * generated C backed by a comparison of the sources, for cc its disk key,
 * so another compiler or other flags get their own code): wrappers of
 * equal specs hold one wb_code, and the last release frees it.  The tiers
 * look their code up here before they compile (tcc.c, cc.c) and insert
 * what they compiled; this file calls no compiler.
 *
 * wb_cache_lock guards the in-process table and the statistics; it is
 * never held across a compile.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tiers.h"

pthread_mutex_t wb_cache_lock = PTHREAD_MUTEX_INITIALIZER;

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
wb_code *wb_cache_find(wb_tier tier, const char *key, const char *source)
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

void wb_cache_insert(wb_code *c)
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
