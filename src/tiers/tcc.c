/*
 * tcc.c -- the tcc tier's code: generated C compiled by libtcc (jit.c),
 * shared through the in-process cache (cache.c).
 *
 * Sources are compiled in batches: the ones no wrapper shares yet go to
 * one libtcc state, whose code block the functions of the batch share
 * and the last of them frees.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tiers.h"
#include "../gen/gen.h"

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

wb_status wb_tcc_codes(int n, const wb_emitted *const *parts, bool share,
                       wb_code **out)
{
    /* Equal functions have equal preludes, which the emitter derives from
       the function: the function alone is the key and the comparison. */
    char (*keys)[WB_FINGERPRINT_LEN + 1] = calloc((size_t)n, sizeof *keys);
    int *miss = calloc((size_t)n, sizeof *miss);          /* source index */
    int *first = calloc((size_t)n, sizeof *first);        /* equal source */
    wb_jit_src *srcs = calloc((size_t)n, sizeof *srcs);
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
        const char *body = parts[i]->body;
        if (share)
            wb_tcc_key(body, keys[i]);
        first[i] = i;
        for (int j = 0; share && j < i; j++)
            if (!strcmp(keys[j], keys[i]) && !strcmp(parts[j]->body, body)) {
                first[i] = j;
                break;
            }
        if (first[i] == i && !(share && (out[i] = wb_cache_find(
                                             WB_TIER_TCC, keys[i],
                                             body)))) {
            miss[nmiss] = i;
            srcs[nmiss++] = (wb_jit_src){parts[i]->prelude, body,
                                         parts[i]->entry, parts[i]->used,
                                         parts[i]->types};
        }
    }
    if (nmiss > 0) {
        block = calloc(1, sizeof *block);
        bool ok = block != NULL;
        for (int k = 0; ok && k < nmiss; k++)
            ok = (made[k] = calloc(1, sizeof *made[k])) &&
                 (!share || (made[k]->code.source = strdup(srcs[k].body)));
        if (!ok) {
            st = wb_rt_fail(WB_ERR_NOMEM, "out of memory for compiled code");
            goto done;
        }
        if ((st = wb_jit_compile_batch(nmiss, srcs, &block->jit, entries)) !=
            WB_OK)
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
                wb_cache_insert(&c->code);
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
