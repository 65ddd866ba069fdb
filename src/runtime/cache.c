/*
 * cache.c -- compiled code and its two caches.
 *
 * In the process, code is shared by key (the tier, and for tcc a fast
 * hash of the generated C backed by a comparison of the sources, for cc
 * its disk key below, so another compiler or other flags get their own
 * code): wrappers of equal specs hold one wb_code, and the last release
 * frees it.  On disk, cc objects are kept across processes:
 *
 *   <dir>/<key>.meta    the entry: what the key was made of, and the object
 *   <dir>/<object>.so   the object, named by the SHA-256 of its bytes
 *
 * where key is the SHA-256 of the source hash, the compiler's identity, the
 * flags and WB_ABI_VERSION.  An object is written under a temporary name
 * and renamed, then its entry the same way, so a reader sees a whole entry
 * or none, and processes filling one key at once each leave a whole one.
 * Naming objects by content lets a reader check what it loads: a truncated
 * or damaged object no longer hashes to its name and is rebuilt.
 *
 * wb_cache_lock guards the in-process table and the statistics; it is
 * never held across a compile.
 */
#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wrapper.h"
#include "../spec/spec.h"
#include "../wrappers/wrappers.h"

static pthread_mutex_t wb_cache_lock = PTHREAD_MUTEX_INITIALIZER;

#define WB_BUCKETS 256
static wb_code *wb_table[WB_BUCKETS];
static wb_cache_stats wb_stats;

double wb_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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

/* ---- the disk cache ---- */

/* Whether name ends in ext and has something before it. */
static bool wb_has_ext(const char *name, const char *ext)
{
    size_t n = strlen(name), e = strlen(ext);
    return n > e && strcmp(name + n - e, ext) == 0;
}

/* dir/name+ext into out (PATH_MAX bytes); false, with out empty, when it
   does not fit. */
static bool wb_join(char *out, const char *dir, const char *name,
                    const char *ext)
{
    size_t a = strlen(dir), b = strlen(name), c = strlen(ext);
    if (a + b + c + 2 > PATH_MAX) {
        out[0] = '\0';
        return false;
    }
    memcpy(out, dir, a);
    out[a] = '/';
    memcpy(out + a + 1, name, b);
    memcpy(out + a + 1 + b, ext, c + 1);
    return true;
}

/* The cache directory into buf: $WRAPBAKE_CACHE_DIR, else
   $XDG_CACHE_HOME/wrapbake, else $HOME/.cache/wrapbake. */
static bool wb_disk_dir(char *buf, size_t n)
{
    const char *d = getenv("WRAPBAKE_CACHE_DIR"), *x, *h;
    int k;
    if (d && *d)
        k = snprintf(buf, n, "%s", d);
    else if ((x = getenv("XDG_CACHE_HOME")) && *x)
        k = snprintf(buf, n, "%s/wrapbake", x);
    else if ((h = getenv("HOME")) && *h)
        k = snprintf(buf, n, "%s/.cache/wrapbake", h);
    else
        return false;
    return k > 0 && (size_t)k < n - 80;  /* room for entry names */
}

const char *wb_cache_dir(void)
{
    static _Thread_local char dir[PATH_MAX];
    return wb_disk_dir(dir, sizeof dir) ? dir : NULL;
}

/* Creates dir and its parents, private to the user. */
static bool wb_mkdirs(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(p, 0700) != 0 && errno != EEXIST)
                return false;
            *s = '/';
        }
    return mkdir(p, 0700) == 0 || errno == EEXIST;
}

/* What a disk cache key is made of. */
typedef struct wb_disk_key {
    char source[WB_FINGERPRINT_LEN + 1];    /* the generated C */
    char compiler[WB_FINGERPRINT_LEN + 1];  /* the compiler's identity */
    char path[PATH_MAX];                    /* the compiler, resolved */
    const char *flags;
    int abi;
    char key[WB_FINGERPRINT_LEN + 1];       /* all of the above */
} wb_disk_key;

/* The compiler's identity: the command's words, and the binary it runs
   (resolved path, size, modification time), which changes whenever the
   compiler is replaced or upgraded. */
static void wb_disk_compiler(const wb_cc_opts *cc, wb_disk_key *k)
{
    char found[PATH_MAX] = "", text[PATH_MAX + 256];
    const char *cmd = cc->argv[0];
    struct stat sb = {0};
    if (strchr(cmd, '/')) {
        if (!realpath(cmd, found))
            snprintf(found, sizeof found, "%s", cmd);
    } else {
        const char *path = getenv("PATH");
        char dir[PATH_MAX], cand[PATH_MAX];
        while (path && *path && !found[0]) {
            size_t len = strcspn(path, ":");
            snprintf(dir, sizeof dir, "%.*s", (int)len, path);
            wb_join(cand, len ? dir : ".", cmd, "");
            if (access(cand, X_OK) == 0 && !realpath(cand, found))
                snprintf(found, sizeof found, "%s", cand);
            path += len + (path[len] == ':');
        }
    }
    stat(found[0] ? found : cmd, &sb);
    snprintf(k->path, sizeof k->path, "%s", found[0] ? found : cmd);
    wb_sha256 h;
    wb_sha256_init(&h);
    for (int i = 0; i < cc->argc; i++)
        wb_sha256_update(&h, cc->argv[i], strlen(cc->argv[i]) + 1);
    int n = snprintf(text, sizeof text, "%s\n%lld\n%lld.%09ld\n", k->path,
                     (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
                     sb.st_mtim.tv_nsec);
    wb_sha256_update(&h, text, (size_t)n);
    wb_sha256_hex(&h, k->compiler);
}

static void wb_disk_key_make(const char *source, const wb_cc_opts *cc,
                             wb_disk_key *k)
{
    char text[512];
    wb_sha256_str(source, strlen(source), k->source);
    wb_disk_compiler(cc, k);
    k->flags = wb_cc_flags_text();
    k->abi = WB_ABI_VERSION;
    int n = snprintf(text, sizeof text, "wrapbake-cc\n%s\n%s\n%s\n%d\n",
                     k->source, k->compiler, k->flags, k->abi);
    wb_sha256_str(text, (size_t)n, k->key);
}

/* An entry as recorded in its .meta file. */
typedef struct wb_disk_meta {
    char source[WB_FINGERPRINT_LEN + 1], compiler[WB_FINGERPRINT_LEN + 1];
    char object[WB_FINGERPRINT_LEN + 1];
    char path[PATH_MAX], flags[128], spec[300];
    int abi;
    long long bytes;
    double compile_ms;
} wb_disk_meta;

/* Reads field value lines; false when the file is not a whole entry. */
static bool wb_disk_read_meta(const char *file, wb_disk_meta *m)
{
    char line[PATH_MAX + 64];
    int seen = 0;
    FILE *f = fopen(file, "re");
    memset(m, 0, sizeof *m);
    if (!f)
        return false;
    if (!fgets(line, sizeof line, f) || strcmp(line, "wrapbake-cache 1\n")) {
        fclose(f);
        return false;
    }
    while (fgets(line, sizeof line, f)) {
        char *v = strchr(line, ' ');
        if (!v)
            continue;
        *v++ = '\0';
        v[strcspn(v, "\n")] = '\0';
#define WB_META_STR(field, dst)                                             \
        if (strcmp(line, field) == 0) {                                     \
            snprintf(dst, sizeof dst, "%s", v);                             \
            seen++;                                                         \
            continue;                                                       \
        }
        WB_META_STR("source", m->source)
        WB_META_STR("compiler", m->compiler)
        WB_META_STR("object", m->object)
        WB_META_STR("compiler-path", m->path)
        WB_META_STR("flags", m->flags)
        WB_META_STR("spec", m->spec)
#undef WB_META_STR
        if (strcmp(line, "abi") == 0)
            m->abi = atoi(v), seen++;
        else if (strcmp(line, "bytes") == 0)
            m->bytes = atoll(v), seen++;
        else if (strcmp(line, "compile-ms") == 0)
            m->compile_ms = atof(v), seen++;
    }
    fclose(f);
    return seen == 9 && strlen(m->object) == WB_FINGERPRINT_LEN;
}

/* Whether the file at path has exactly bytes bytes hashing to hex. */
static bool wb_disk_check_object(const char *path, long long bytes,
                                 const char *hex)
{
    char got[WB_FINGERPRINT_LEN + 1], buf[65536];
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    if (fstat(fd, &sb) != 0 || sb.st_size != bytes) {
        close(fd);
        return false;
    }
    wb_sha256 h;
    wb_sha256_init(&h);
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) > 0)
        wb_sha256_update(&h, buf, (size_t)k);
    close(fd);
    wb_sha256_hex(&h, got);
    return k == 0 && strcmp(got, hex) == 0;
}

/* A fresh temporary name in dir, into tmp (PATH_MAX bytes). */
static void wb_disk_tmp(const char *dir, char *tmp)
{
    static atomic_uint seq;
    char name[64];
    snprintf(name, sizeof name, ".tmp-%ld-%u", (long)getpid(),
             atomic_fetch_add(&seq, 1));
    wb_join(tmp, dir, name, "");
}

/* Copies the object at src into dir as <sha256>.so: under a temporary name
   first, hashing as it goes, then renamed.  Returns the hash and size. */
static bool wb_disk_put_object(const char *dir, const char *src,
                               char hex[WB_FINGERPRINT_LEN + 1],
                               long long *bytes)
{
    char tmp[PATH_MAX], dst[PATH_MAX], buf[65536];
    wb_disk_tmp(dir, tmp);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = in >= 0 && out >= 0;
    wb_sha256 h;
    wb_sha256_init(&h);
    *bytes = 0;
    while (ok) {
        ssize_t k = read(in, buf, sizeof buf);
        if (k == 0)
            break;
        ok = k > 0 && write(out, buf, (size_t)k) == k;
        if (ok) {
            wb_sha256_update(&h, buf, (size_t)k);
            *bytes += k;
        }
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        ok = false;
    wb_sha256_hex(&h, hex);
    ok = ok && wb_join(dst, dir, hex, ".so") && rename(tmp, dst) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

/* Writes text to dst atomically. */
static bool wb_disk_put_text(const char *dir, const char *text,
                             const char *dst)
{
    char tmp[PATH_MAX];
    wb_disk_tmp(dir, tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        return false;
    }
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    ok = ok && rename(tmp, dst) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}

static uint64_t wb_disk_limit(void)
{
    const char *m = getenv("WRAPBAKE_CACHE_MAX");
    char *end;
    unsigned long long v = m ? strtoull(m, &end, 10) : 0;
    return m && *m && !*end ? v : 256ull << 20;
}

typedef struct wb_disk_file {
    char name[NAME_MAX + 1];
    char object[WB_FINGERPRINT_LEN + 1];  /* an entry's object */
    long long bytes;
    struct timespec used;
    bool gone;
} wb_disk_file;

static int wb_disk_older(const void *a, const void *b)
{
    const wb_disk_file *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    return (x->used.tv_nsec > y->used.tv_nsec) - (x->used.tv_nsec <
                                                  y->used.tv_nsec);
}

/* Whether a remaining entry uses the object named name ("<hash>.so"). */
static bool wb_disk_used(const wb_disk_file *e, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!e[i].gone && strncmp(e[i].object, name, WB_FINGERPRINT_LEN) == 0)
            return true;
    return false;
}

/* An object no entry names is removed once it is this old: younger, it
   may be one another process wrote and has not yet written the entry of. */
#define WB_DISK_ORPHAN_S 60

/* Appends an empty record to *v (n used of *cap); NULL when out of
   memory. */
static wb_disk_file *wb_disk_push(wb_disk_file **v, int *n, int *cap)
{
    if (*n == *cap) {
        int grown = *cap ? 2 * *cap : 16;
        wb_disk_file *g = realloc(*v, (size_t)grown * sizeof *g);
        if (!g)
            return NULL;
        *v = g, *cap = grown;
    }
    wb_disk_file *f = &(*v)[(*n)++];
    memset(f, 0, sizeof *f);
    return f;
}

/* Removes dir/name, counting its bytes off *total. */
static bool wb_disk_drop(const char *dir, wb_disk_file *f, long long *total)
{
    char path[PATH_MAX];
    if (!wb_join(path, dir, f->name, "") || unlink(path) != 0)
        return false;
    f->gone = true;
    *total -= f->bytes;
    return true;
}

/* Keeps the directory under the size bound.  Only when it is over are the
   entries read: objects no entry names go first (what a crash or a
   replaced entry left), then the least recently used entries, an object
   with the last entry that uses it (equal code from different sources is
   stored once).  keep, the entry just written, stays.  Returns how many
   entries went. */
static int wb_disk_evict(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    wb_disk_file *e = NULL, *obj = NULL;
    int n = 0, cap = 0, nobj = 0, capobj = 0, gone = 0;
    long long total = 0;
    struct dirent *de;
    if (!d)
        return 0;
    while ((de = readdir(d))) {
        char path[PATH_MAX];
        struct stat sb;
        bool meta = wb_has_ext(de->d_name, ".meta");
        bool so = wb_has_ext(de->d_name, ".so");
        if (de->d_name[0] == '.' || (!meta && !so) ||
            !wb_join(path, dir, de->d_name, "") || stat(path, &sb) != 0)
            continue;
        total += sb.st_size;
        wb_disk_file *f = meta ? wb_disk_push(&e, &n, &cap)
                               : wb_disk_push(&obj, &nobj, &capobj);
        if (!f)
            break;
        snprintf(f->name, sizeof f->name, "%s", de->d_name);
        f->bytes = sb.st_size;
        f->used = sb.st_mtim;
    }
    closedir(d);
    uint64_t limit = wb_disk_limit();
    if ((uint64_t)total > limit) {
        for (int i = 0; i < n; i++) {
            char path[PATH_MAX];
            wb_disk_meta m;
            if (wb_join(path, dir, e[i].name, "") &&
                wb_disk_read_meta(path, &m))
                memcpy(e[i].object, m.object, sizeof e[i].object);
        }
        time_t now = time(NULL);
        for (int j = 0; j < nobj; j++)
            if (now - obj[j].used.tv_sec > WB_DISK_ORPHAN_S &&
                !wb_disk_used(e, n, obj[j].name))
                wb_disk_drop(dir, &obj[j], &total);
        qsort(e, (size_t)n, sizeof *e, wb_disk_older);
    }
    for (int i = 0; i < n && (uint64_t)total > limit; i++) {
        if (strncmp(e[i].name, keep, WB_FINGERPRINT_LEN) == 0 ||
            !wb_disk_drop(dir, &e[i], &total))
            continue;
        gone++;
        if (e[i].object[0] && !wb_disk_used(e, n, e[i].object))
            for (int j = 0; j < nobj; j++)
                if (!obj[j].gone && !strncmp(obj[j].name, e[i].object,
                                             WB_FINGERPRINT_LEN))
                    wb_disk_drop(dir, &obj[j], &total);
    }
    free(e);
    free(obj);
    return gone;
}

/* Looks up the entry for k, its meta at meta and its object at obj, both
   PATH_MAX bytes.  1: whole, read into *m; 0: no entry; -1: damaged (the
   entry does not match its key, or the object is not the one it names). */
static int wb_disk_find(const char *dir, const wb_disk_key *k, char *meta,
                        char *obj, wb_disk_meta *m)
{
    wb_join(meta, dir, k->key, ".meta");
    obj[0] = '\0';
    if (access(meta, F_OK) != 0)
        return 0;
    if (!wb_disk_read_meta(meta, m) || strcmp(m->source, k->source) ||
        strcmp(m->compiler, k->compiler) || m->abi != k->abi)
        return -1;
    wb_join(obj, dir, m->object, ".so");
    return wb_disk_check_object(obj, m->bytes, m->object) ? 1 : -1;
}

/* Loads the entry for k.  1: loaded into *code (*ms is what compiling it
   took); 0: no entry; -1: a damaged entry, now removed. */
static int wb_disk_load(const char *dir, const wb_disk_key *k, wb_code **code,
                        double *ms)
{
    char meta[PATH_MAX], obj[PATH_MAX];
    wb_disk_meta m;
    int found = wb_disk_find(dir, k, meta, obj, &m);
    if (found <= 0) {
        if (found < 0) {
            if (obj[0])
                unlink(obj);
            unlink(meta);
        }
        return found;
    }
    if (wb_cc_load(obj, WB_EMIT_FN, code) != WB_OK) {
        unlink(meta);
        return -1;
    }
    utimensat(AT_FDCWD, meta, NULL, 0);  /* most recently used */
    *ms = m.compile_ms;
    return 1;
}

/* Records the object at built as the entry for k. */
static void wb_disk_store(const char *dir, const wb_disk_key *k,
                          const char *built, double ms, const char *spec)
{
    char meta[PATH_MAX], hex[WB_FINGERPRINT_LEN + 1];
    char text[PATH_MAX + 1024];
    long long bytes;
    if (!wb_disk_put_object(dir, built, hex, &bytes))
        return;
    wb_join(meta, dir, k->key, ".meta");
    snprintf(text, sizeof text,
             "wrapbake-cache 1\nsource %s\ncompiler %s\ncompiler-path %s\n"
             "flags %s\nabi %d\nobject %s\nbytes %lld\ncompile-ms %.3f\n"
             "spec %s\n",
             k->source, k->compiler, k->path, k->flags, k->abi, hex, bytes,
             ms, spec);
    if (wb_disk_put_text(dir, text, meta)) {
        int gone = wb_disk_evict(dir, k->key);
        for (int i = 0; i < gone; i++)
            wb_cache_count(WB_STAT_DISK_EVICTED, 0);
    }
}

/* Removes the private build directory and what the build left in it. */
static void wb_rmtree_flat(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[PATH_MAX];
    while (d && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            wb_join(path, dir, de->d_name, "");
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Compiles source on the cc tier, through the disk cache when allowed. */
static wb_status wb_cc_code(const char *source, const wb_cc_opts *cc,
                            const wb_disk_key *k, const char *spec,
                            const atomic_bool *cancel, wb_code **out)
{
    char dir[PATH_MAX], tmp[PATH_MAX], note[400];
    const char *t = getenv("TMPDIR");
    bool disk = cc->disk_cache && wb_disk_dir(dir, sizeof dir) &&
                wb_mkdirs(dir);
    char *built = NULL;
    double ms = 0;
    int got = 0;
    wb_status st;
    if (disk) {
        got = wb_disk_load(dir, k, out, &ms);
        if (got == 1) {
            wb_cache_count(WB_STAT_DISK_HITS, ms);
            snprintf(note, sizeof note, "cc: loaded from the disk cache "
                     "(entry %.16s, which took %.1f ms to compile)", k->key,
                     ms);
            (*out)->note = strdup(note);
            return WB_OK;
        }
        wb_cache_count(got < 0 ? WB_STAT_DISK_REBUILT : WB_STAT_DISK_MISSES,
                       0);
    }
    snprintf(tmp, sizeof tmp, "%s/wrapbake-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmp))
        return wb_rt_fail(WB_ERR_COMPILE, "cannot make a private directory "
                          "for the system compiler: %s", strerror(errno));
    double t0 = wb_now_ms();
    st = wb_cc_build(cc, source, tmp, &built, cancel);
    ms = wb_now_ms() - t0;
    if (st == WB_OK) {
        if (disk)
            wb_disk_store(dir, k, built, ms, spec);
        st = wb_cc_load(built, WB_EMIT_FN, out);
    }
    free(built);
    wb_rmtree_flat(tmp);
    if (st != WB_OK)
        return st;
    wb_cache_count(WB_STAT_COMPILED, 0);
    snprintf(note, sizeof note, "cc: compiled by '%s' in %.1f ms%s",
             cc->argv[0], ms, !disk ? " (disk cache off)"
                              : got < 0 ? " (a damaged disk cache entry "
                                          "was rebuilt)"
                                        : " (not in the disk cache yet)");
    (*out)->note = strdup(note);
    return WB_OK;
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

wb_status wb_cache_clear(void)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (!wb_disk_dir(dir, sizeof dir))
        return wb_rt_fail(WB_ERR_INVALID, "no cache directory: set "
                          "WRAPBAKE_CACHE_DIR, XDG_CACHE_HOME or HOME");
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return errno == ENOENT ? WB_OK
                               : wb_rt_fail(WB_ERR_INVALID, "cannot read "
                                            "the cache directory %s: %s",
                                            dir, strerror(errno));
    while ((de = readdir(d))) {
        bool ours = wb_has_ext(de->d_name, ".meta") ||
                    wb_has_ext(de->d_name, ".so") ||
                    !strncmp(de->d_name, ".tmp-", 5);
        if (!ours)
            continue;
        wb_join(path, dir, de->d_name, "");
        unlink(path);
    }
    closedir(d);
    return WB_OK;
}

/* Appends to a growable message (a piece longer than its buffer is cut). */
static void wb_say(char **s, size_t *len, const char *fmt, ...)
{
    va_list ap;
    char piece[2 * PATH_MAX + 512];
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0, piece[0] = '\0';
    if ((size_t)n >= sizeof piece)
        n = (int)sizeof piece - 1;
    char *g = *s ? realloc(*s, *len + (size_t)n + 1) : NULL;
    if (!g) {
        free(*s);
        *s = NULL;
        return;
    }
    memcpy(g + *len, piece, (size_t)n + 1);
    *s = g;
    *len += (size_t)n;
}

wb_status wb_cache_explain(const wb_spec *spec, const wb_options *options,
                           char **out)
{
    char dir[PATH_MAX], path[PATH_MAX], *source = NULL;
    wb_spec *copy = NULL;
    wb_cc_opts cc;
    wb_disk_key k;
    wb_disk_meta m, near;
    int nearness = 0;
    wb_status st;
    if (!spec || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_cache_explain: NULL spec or "
                          "out");
    if (!wb_disk_dir(dir, sizeof dir))
        return wb_rt_fail(WB_ERR_INVALID, "no cache directory: set "
                          "WRAPBAKE_CACHE_DIR, XDG_CACHE_HOME or HOME");
    if ((st = wb_spec_clone(spec, &copy)) != WB_OK ||
        (st = wb_spec_validate(copy)) != WB_OK ||
        (st = wb_emit(copy, WB_EMIT_FN, WB_EMIT_LINES, &source)) != WB_OK ||
        (st = wb_cc_opts_init(options, &cc)) != WB_OK) {
        wb_spec_free(copy);
        free(source);
        return st;
    }
    wb_disk_key_make(source, &cc, &k);
    wb_cc_opts_free(&cc);
    free(source);
    wb_spec_free(copy);

    size_t len = 0;
    char *s = malloc(1), obj[PATH_MAX];
    if (s)
        s[0] = '\0';
    int found = wb_disk_find(dir, &k, path, obj, &m);
    if (found == 1) {
        wb_say(&s, &len, "hit: entry %s in %s (object %.16s, %lld bytes, "
               "%.1f ms to compile)", k.key, dir, m.object, m.bytes,
               m.compile_ms);
    } else if (found < 0) {
        if (obj[0])
            wb_say(&s, &len, "damaged (would be rebuilt): entry %s in %s: "
                   "its object %.16s is missing, cut short or altered",
                   k.key, dir, m.object);
        else
            wb_say(&s, &len, "damaged (would be rebuilt): entry %s in %s: "
                   "its record is unreadable or does not match its key",
                   k.key, dir);
    } else {
        /* The nearest entry: same source first, then same spec name. */
        DIR *d = opendir(dir);
        struct dirent *de;
        char name[300];
        wb_spec_print_name(spec->name, name, sizeof name);
        while (d && (de = readdir(d))) {
            if (!wb_has_ext(de->d_name, ".meta"))
                continue;
            wb_join(path, dir, de->d_name, "");
            if (!wb_disk_read_meta(path, &m))
                continue;
            int score = !strcmp(m.source, k.source) ? 2
                        : !strcmp(m.spec, name)     ? 1
                                                    : 0;
            if (score > nearness)
                nearness = score, near = m;
        }
        if (d)
            closedir(d);
        wb_say(&s, &len, "miss: no entry %.16s in %s", k.key, dir);
        if (nearness == 0)
            wb_say(&s, &len, "; no entry for this spec's C or name");
        if (nearness == 1)
            wb_say(&s, &len, "; an entry for spec '%s' has other "
                   "generated C (the spec or the emitter changed)", name);
        if (nearness == 2) {
            wb_say(&s, &len, "; an entry for the same generated C differs "
                   "in:");
            if (strcmp(near.compiler, k.compiler))
                wb_say(&s, &len, " the compiler (%s then, %s now)",
                       near.path, k.path);
            if (strcmp(near.flags, k.flags))
                wb_say(&s, &len, " the flags (%s then, %s now)", near.flags,
                       k.flags);
            if (near.abi != k.abi)
                wb_say(&s, &len, " the ABI version (%d then, %d now)",
                       near.abi, k.abi);
        }
    }
    if (!s)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for an explanation");
    *out = s;
    return WB_OK;
}
