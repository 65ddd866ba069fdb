/*
 * The disk cache against someone who can write where it looks: planted
 * objects in a directory others can write or own, an object swapped
 * between its check and its load, files of others' in the cache's
 * directory, and FIFOs, links and directories at an entry's name.  None of
 * them may load foreign code, hang, or lose a file the cache did not make.
 *
 * A planted object announces itself: its constructor writes a marker file,
 * so a test sees whether dlopen ever ran it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "../src/tiers/disk.h"
#include "../src/tiers/tiers.h"
#include "../src/gen/gen.h"

/* out = x * 2, a value of its own. */
static int disk_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                      int nv)
{
    (void)ctx; (void)na; (void)nv;
    const float *x = wb_tensor_data(a[0].t);
    if (wb_tensor_new(WBT_F32, WBT_CPU, 1, wb_tensor_sizes(a[0].t), &v[0].t))
        return -1;
    float *o = wb_tensor_data(v[0].t);
    for (int i = 0; i < 4; i++)
        o[i] = 2 * x[i];
    return 1;
}

static wb_spec *disk_spec(void)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("disk_attack", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "y", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
    return s;
}

/* A cc wrapper of disk_spec that shares no code in the process, so that
   each one goes to the disk cache; NULL when it cannot be made. */
static wb_wrapper *disk_wrapper(wb_spec *s)
{
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_SHARE};
    wb_wrapper *w = NULL;
    return wb_wrapper_new(s, disk_graph, NULL, &o, &w) == WB_OK ? w : NULL;
}

/* Whether w computes its graph. */
static bool disk_works(wb_wrapper *w)
{
    wb_tensor *x = wbt_f32(1, 1, 4);
    wb_value y = {NULL};
    wb_arg a[1] = {{.t = x}};
    bool ok = wb_call(w, a, 1, &y, 1) == WB_OK && wbt_at(y.t, 3) == 8.0f;
    wb_tensor_release(y.t);
    wb_tensor_release(x);
    return ok;
}

/* A fresh directory under /tmp, private to this test. */
static void disk_tmpdir(char dir[64], const char *what)
{
    snprintf(dir, 64, "/tmp/wbt-%s-XXXXXX", what);
    cr_assert_not_null(mkdtemp(dir));
}

static void disk_rm(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The one name in dir ending in ext, into name (NAME_MAX + 1 bytes). */
static void disk_find(const char *dir, const char *ext, char *name)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    cr_assert_not_null(d);
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name), e = strlen(ext);
        if (l > e && strcmp(de->d_name + l - e, ext) == 0) {
            snprintf(name, NAME_MAX + 1, "%s", de->d_name);
            n++;
        }
    }
    closedir(d);
    cr_assert_eq(n, 1, "%d names end in %s in %s", n, ext, dir);
}

static int disk_count(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    cr_assert_not_null(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n - 2;
}

/* A link of uid 65534's to target, "theirs" in a new directory others
   may write but sticky (made as disk_tmpdir makes it, named by tag), into
   link (n bytes).  Needs root. */
static void disk_their_link(char sticky[64], const char *tag,
                            const char *target, char *link, size_t n)
{
    disk_tmpdir(sticky, tag);
    cr_assert_eq(chmod(sticky, 01777), 0);
    snprintf(link, n, "%s/theirs", sticky);
    cr_assert_eq(symlink(target, link), 0);
    cr_assert_eq(lchown(link, 65534, 65534), 0);
}

/* A wrapper of s works with the cache off, because the way to the cache
   directory could be moved by another user, for why: the note and
   wb_cache_explain say so, and nothing reaches mine, where the way
   leads. */
static void disk_way_refused(wb_spec *s, const char *mine, const char *why)
{
    char *explain = NULL;
    wb_wrapper *w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    cr_assert(disk_works(w));
    const char *note = wb_wrapper_note(w);
    cr_assert_not_null(strstr(note, "could be moved by another user"),
                       "note: %s", note);
    cr_assert_not_null(strstr(note, why), "note: %s", note);
    wb_wrapper_free(w);
    cr_assert_eq(disk_count(mine), 0, "the cache was used");
    WBT_OK(wb_cache_explain(s, NULL, &explain));
    cr_assert_eq(strncmp(explain, "off: ", 5), 0, "%s", explain);
    cr_assert_not_null(strstr(explain, why), "%s", explain);
    free(explain);
}

static void disk_copy(const char *from, const char *to)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
    cr_assert_eq(system(cmd), 0);
}

/* An attacker's kit: the real entry for disk_spec (built in a cache of its
   own, as anyone can), and an object with the entry point whose
   constructor writes the marker, with a record naming it under the real
   key. */
typedef struct disk_kit {
    char work[64];                /* holds everything below */
    char marker[128];
    char key[NAME_MAX + 1];       /* "<key>.meta" */
    char good[NAME_MAX + 1];      /* "<hash>.so", the real object */
    char good_path[192], good_meta[192];
    char evil_path[192];          /* the planted object */
    char evil_name[NAME_MAX + 1]; /* "<its hash>.so" */
    char evil_meta[192];          /* a record of the key naming it */
} disk_kit;

static void disk_kit_make(disk_kit *k, wb_spec *s)
{
    char cache[256], src[192], cmd[800], hex[WB_FINGERPRINT_LEN + 1];
    disk_tmpdir(k->work, "kit");
    chmod(k->work, 0755);  /* readable by the other user who plants */
    snprintf(k->marker, sizeof k->marker, "%s/planted-code-ran", k->work);
    snprintf(cache, sizeof cache, "%s/cache", k->work);
    setenv("WRAPBAKE_CACHE_DIR", cache, 1);
    wb_wrapper *w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    wb_wrapper_free(w);
    disk_find(cache, ".meta", k->key);
    disk_find(cache, ".so", k->good);
    snprintf(k->good_path, sizeof k->good_path, "%s/good.so", k->work);
    snprintf(k->good_meta, sizeof k->good_meta, "%s/good.meta", k->work);
    snprintf(cmd, sizeof cmd, "%s/%s", cache, k->good);
    disk_copy(cmd, k->good_path);
    snprintf(cmd, sizeof cmd, "%s/%s", cache, k->key);
    disk_copy(cmd, k->good_meta);

    snprintf(src, sizeof src, "%s/evil.c", k->work);
    FILE *f = fopen(src, "w");
    cr_assert_not_null(f);
    fprintf(f, "#include <stdio.h>\n"
               "__attribute__((constructor)) static void planted(void)\n"
               "{ FILE *f = fopen(\"%s\", \"w\"); if (f) fclose(f); }\n"
               "int %s(void) { return 0; }\n", k->marker, WB_EMIT_FN);
    fclose(f);
    snprintf(k->evil_path, sizeof k->evil_path, "%s/evil.so", k->work);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", k->evil_path,
             src);
    cr_assert_eq(system(cmd), 0);
    chmod(k->evil_path, 0644);

    /* The record: the real one, naming the planted object. */
    char *text = wbt_read_file(k->good_meta);
    struct stat sb;
    cr_assert_eq(stat(k->evil_path, &sb), 0);
    int fd = open(k->evil_path, O_RDONLY);
    char *obj = malloc((size_t)sb.st_size);
    cr_assert_eq(read(fd, obj, (size_t)sb.st_size), sb.st_size);
    close(fd);
    wb_sha256_str(obj, (size_t)sb.st_size, hex);
    free(obj);
    snprintf(k->evil_name, sizeof k->evil_name, "%s.so", hex);
    snprintf(k->evil_meta, sizeof k->evil_meta, "%s/evil.meta", k->work);
    f = fopen(k->evil_meta, "w");
    cr_assert_not_null(f);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "object ", 7))
            fprintf(f, "object %s\n", hex);
        else if (!strncmp(line, "bytes ", 6))
            fprintf(f, "bytes %lld\n", (long long)sb.st_size);
        else
            fprintf(f, "%s\n", line);
    }
    fclose(f);
    free(text);
    chmod(k->evil_meta, 0644);
}

/* Copies the planted entry into dir. */
static void disk_plant(const disk_kit *k, const char *dir)
{
    char to[512];
    snprintf(to, sizeof to, "%s/%s", dir, k->key);
    disk_copy(k->evil_meta, to);
    snprintf(to, sizeof to, "%s/%s", dir, k->evil_name);
    disk_copy(k->evil_path, to);
}

/* The victim builds disk_spec's wrapper from dir: it must compile its own,
   say why the cache is off, leave dir as it was and never run the planted
   code. */
static void disk_victim(const disk_kit *k, wb_spec *s, const char *dir,
                        const char *why)
{
    wb_cache_stats st;
    char *explain = NULL;
    int before = disk_count(dir);
    setenv("WRAPBAKE_CACHE_DIR", dir, 1);
    wb_wrapper *w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    cr_assert_neq(access(k->marker, F_OK), 0, "the planted code ran");
    cr_assert(disk_works(w));
    const char *note = wb_wrapper_note(w);
    cr_assert_not_null(strstr(note, "disk cache off"), "note: %s", note);
    cr_assert_not_null(strstr(note, why), "note: %s", note);
    wb_wrapper_free(w);
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_hits, 0);
    WBT_OK(wb_cache_explain(s, NULL, &explain));
    cr_assert_eq(strncmp(explain, "off: ", 5), 0, "%s", explain);
    cr_assert_not_null(strstr(explain, why), "%s", explain);
    free(explain);
    WBT_FAILS(wb_cache_clear(), WB_ERR_INVALID, "nothing was removed");
    cr_assert_eq(disk_count(dir), before, "the directory changed");
}

Test(disk, sha256_gives_the_fips_digests)
{
    /* FIPS 180-4's examples, a message of two blocks whose padding takes
       a third, and a million bytes through many updates. */
    static const struct {
        const char *text, *digest;
    } cases[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc",
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    char hex[WB_FINGERPRINT_LEN + 1];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        wb_sha256_str(cases[i].text, strlen(cases[i].text), hex);
        cr_assert_str_eq(hex, cases[i].digest, "sha256(\"%s\")",
                         cases[i].text);
    }
    /* A million 'a's, in pieces of 1 to 997 bytes, so that the pieces
       end at every offset of a block. */
    wb_sha256 s;
    char a[997];
    memset(a, 'a', sizeof a);
    wb_sha256_init(&s);
    for (size_t left = 1000000, n = 1; left > 0; n = n % sizeof a + 1) {
        size_t take = n < left ? n : left;
        wb_sha256_update(&s, a, take);
        left -= take;
    }
    wb_sha256_hex(&s, hex);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67"
                          "f1809a48a497200e046d39ccc7112cd0");
}

Test(disk, a_directory_others_can_write_is_not_used, .timeout = 60)
{
    disk_kit k;
    char dir[64];
    wb_spec *s = disk_spec();
    disk_kit_make(&k, s);
    disk_tmpdir(dir, "open-cache");
    disk_plant(&k, dir);
    cr_assert_eq(chmod(dir, 0777), 0);
    disk_victim(&k, s, dir, "writable by others (mode 777)");
    cr_assert_eq(chmod(dir, 0770), 0);
    disk_victim(&k, s, dir, "writable by its group (mode 770)");
    /* The same directory made private is used, and the planted entry,
       a whole and consistent one, is then what it holds: this is what
       the check stood between. */
    cr_assert_eq(chmod(dir, 0700), 0);
    wb_wrapper *w = disk_wrapper(s);
    cr_assert_not_null(w);
    cr_assert_eq(access(k.marker, F_OK), 0, "the kit's object is not one "
                 "the cache would have loaded");
    wb_wrapper_free(w);
    wb_spec_free(s);
    disk_rm(dir);
    disk_rm(k.work);
}

Test(disk, a_directory_another_user_owns_is_not_used, .timeout = 60)
{
    disk_kit k;
    char dir[128], cmd[2400];
    if (geteuid() != 0 || system("command -v setpriv >/dev/null 2>&1"))
        cr_skip_test("needs root and setpriv to plant files as another "
                     "user (uid 65534)");
    wb_spec *s = disk_spec();
    disk_kit_make(&k, s);
    /* The other user makes the directory, private to itself but readable,
       and plants the entry. */
    snprintf(dir, sizeof dir, "%s/theirs", k.work);
    chmod(k.work, 0777);
    snprintf(cmd, sizeof cmd,
             "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
             "\"mkdir -m 755 '%s' && cp '%s' '%s/%s' && cp '%s' '%s/%s'\"",
             dir, k.evil_meta, dir, k.key, k.evil_path, dir, k.evil_name);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    chmod(k.work, 0755);
    disk_victim(&k, s, dir, "belongs to uid 65534");
    /* Files of theirs in a directory of ours are ignored too. */
    char mine[160], to[512];
    snprintf(mine, sizeof mine, "%s/mine", k.work);
    cr_assert_eq(mkdir(mine, 0700), 0);
    disk_plant(&k, mine);
    snprintf(to, sizeof to, "%s/%s", mine, k.key);
    cr_assert_eq(chown(to, 65534, 65534), 0);
    snprintf(to, sizeof to, "%s/%s", mine, k.evil_name);
    cr_assert_eq(chown(to, 65534, 65534), 0);
    setenv("WRAPBAKE_CACHE_DIR", mine, 1);
    wb_wrapper *w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    cr_assert(disk_works(w));
    wb_wrapper_free(w);
    WBT_OK(wb_cache_clear());
    cr_assert_eq(access(to, F_OK), 0, "their object was removed");
    cr_assert_neq(access(k.marker, F_OK), 0, "the planted code ran");
    wb_spec_free(s);
    disk_rm(k.work);
}

/* Swaps the planted object and the real one over the real one's name
   until told to stop. */
typedef struct disk_swap {
    const disk_kit *k;
    char target[600], tmp[600];
    atomic_bool stop;
    long swaps;
} disk_swap;

static void *disk_swapper(void *arg)
{
    disk_swap *w = arg;
    while (!atomic_load(&w->stop)) {
        const char *from = w->swaps % 2 ? w->k->good_path : w->k->evil_path;
        unlink(w->tmp);
        if (link(from, w->tmp) == 0 && rename(w->tmp, w->target) == 0)
            w->swaps++;
    }
    return NULL;
}

Test(disk, what_is_checked_is_what_is_loaded, .timeout = 120)
{
    disk_kit k;
    disk_swap w = {.k = NULL};
    pthread_t t;
    wb_cache_stats st;
    char dir[256], key[512];
    wb_spec *s = disk_spec();
    disk_kit_make(&k, s);
    /* A cache of ours with the real entry; the other thread stands for
       someone who can replace its object between check and load. */
    snprintf(dir, sizeof dir, "%s/cache", k.work);
    setenv("WRAPBAKE_CACHE_DIR", dir, 1);
    w.k = &k;
    snprintf(w.target, sizeof w.target, "%s/%s", dir, k.good);
    snprintf(w.tmp, sizeof w.tmp, "%s/swap.tmp", k.work);
    snprintf(key, sizeof key, "%s/%s", dir, k.key);
    atomic_init(&w.stop, false);
    cr_assert_eq(pthread_create(&t, NULL, disk_swapper, &w), 0);
    double end = (double)time(NULL) + 8;
    int built = 0;
    for (int i = 0; i < 400 && (double)time(NULL) < end; i++) {
        /* A damaged entry is rebuilt, which leaves the real record. */
        if (access(key, F_OK) != 0)
            disk_copy(k.good_meta, key);
        wb_wrapper *x = disk_wrapper(s);
        cr_assert_not_null(x, "%s", wb_last_error());
        if (access(k.marker, F_OK) == 0) {
            wb_wrapper_free(x);
            break;
        }
        cr_assert(disk_works(x));
        wb_wrapper_free(x);
        built++;
    }
    atomic_store(&w.stop, true);
    pthread_join(t, NULL);
    wb_cache_stats_get(&st);
    cr_assert_gt(w.swaps, 100, "only %ld swaps", w.swaps);
    cr_assert_gt(st.disk_hits, 0, "no load came from the cache");
    cr_assert_neq(access(k.marker, F_OK), 0, "the swapped-in object was "
                  "loaded after the real one was checked (%d wrappers, %ld "
                  "swaps)", built, w.swaps);
    wb_spec_free(s);
    disk_rm(k.work);
}

/* A file of someone else's, at name in dir. */
static void disk_foreign(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static void disk_assert_file(const char *dir, const char *name,
                             const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *got = wbt_read_file(path);
    cr_assert_not_null(got, "%s was removed", name);
    cr_assert_str_eq(got, text, "%s was changed", name);
    free(got);
}

Test(disk, files_the_cache_did_not_make_survive_eviction_and_clear,
     .timeout = 120)
{
    char dir[64], outside[64], path[512], hex[WB_FINGERPRINT_LEN + 1];
    disk_tmpdir(dir, "shared-dir");
    disk_tmpdir(outside, "outside");
    setenv("WRAPBAKE_CACHE_DIR", dir, 1);
    /* The user's own libraries and notes, in the folder the cache was
       pointed at. */
    const char *names[] = {"libmine.so", "notes.meta", "x.so", ".so",
                           "README", ".tmp-notes", "ABCDEF.so"};
    for (int i = 0; i < 7; i++)
        disk_foreign(dir, names[i], names[i]);
    /* Names of the cache's form holding what it did not make: a link to
       a file outside, a directory, a file others may write. */
    memset(hex, 'c', WB_FINGERPRINT_LEN);
    hex[WB_FINGERPRINT_LEN] = '\0';
    disk_foreign(outside, "target", "target");
    snprintf(path, sizeof path, "%s/%s.so", dir, hex);
    char target[128];
    snprintf(target, sizeof target, "%s/target", outside);
    cr_assert_eq(symlink(target, path), 0);
    hex[0] = 'd';
    snprintf(path, sizeof path, "%s/%s.meta", dir, hex);
    cr_assert_eq(mkdir(path, 0700), 0);
    hex[0] = 'e';
    char shared[80];
    snprintf(shared, sizeof shared, "%s.so", hex);
    disk_foreign(dir, shared, "shared");
    snprintf(path, sizeof path, "%s/%s", dir, shared);
    cr_assert_eq(chmod(path, 0666), 0);
    int foreign = disk_count(dir);

    /* Three entries with room for one: eviction runs twice. */
    setenv("WRAPBAKE_CACHE_MAX", "20000", 1);
    for (int i = 0; i < 3; i++) {
        wb_spec *s = disk_spec();
        for (int e = 0; e < i; e++)
            WBT_OK(wb_spec_add_tensor(s, "extra", WB_MUT_NONE, 0, NULL));
        wb_wrapper *w = disk_wrapper(s);
        cr_assert_not_null(w, "%s", wb_last_error());
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
    wb_cache_stats st;
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_evicted, 2);
    cr_assert_eq(disk_count(dir), foreign + 2, "one entry and its object "
                 "beside the foreign files");
    WBT_OK(wb_cache_clear());
    cr_assert_eq(disk_count(dir), foreign);
    for (int i = 0; i < 7; i++)
        disk_assert_file(dir, names[i], names[i]);
    disk_assert_file(dir, shared, "shared");
    disk_assert_file(outside, "target", "target");
    hex[0] = 'c';
    snprintf(path, sizeof path, "%s/%s.so", dir, hex);
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the link was replaced");
    disk_rm(dir);
    disk_rm(outside);
}

/* Puts what kind names at path: a FIFO, a link to good, or a directory. */
static void disk_put_thing(int kind, const char *path, const char *good)
{
    if (kind == 0)
        cr_assert_eq(mkfifo(path, 0600), 0);
    else if (kind == 1)
        cr_assert_eq(symlink(good, path), 0);
    else
        cr_assert_eq(mkdir(path, 0700), 0);
}

Test(disk, a_fifo_link_or_directory_at_an_entry_name_is_ignored,
     .timeout = 120)
{
    static const char *what[] = {"a FIFO", "a link", "a directory"};
    disk_kit k;
    char dir[256], path[512], *why;
    struct stat sb;
    wb_spec *s = disk_spec();
    disk_kit_make(&k, s);
    snprintf(dir, sizeof dir, "%s/cache", k.work);
    for (int kind = 0; kind < 3; kind++) {
        /* At the record's name: a miss that is never read, removed or
           replaced. */
        WBT_OK(wb_cache_clear());
        snprintf(path, sizeof path, "%s/%s", dir, k.key);
        disk_put_thing(kind, path, k.good_meta);
        wb_wrapper *w = disk_wrapper(s);
        cr_assert_not_null(w, "%s: %s", what[kind], wb_last_error());
        cr_assert(disk_works(w));
        cr_assert_not_null(strstr(wb_wrapper_note(w), "not stored"),
                           "%s: %s", what[kind], wb_wrapper_note(w));
        wb_wrapper_free(w);
        WBT_OK(wb_cache_explain(s, NULL, &why));
        cr_assert_not_null(strstr(why, "it is ignored"), "%s", why);
        free(why);
        cr_assert_eq(lstat(path, &sb), 0, "%s was removed", what[kind]);
        cr_assert(kind != 0 || S_ISFIFO(sb.st_mode));
        cr_assert(kind != 1 || S_ISLNK(sb.st_mode));
        cr_assert(kind != 2 || S_ISDIR(sb.st_mode));
        if (kind == 2)
            rmdir(path);
        else
            unlink(path);

        /* At the object's name, under a real record: a damaged entry. */
        disk_copy(k.good_meta, path);
        snprintf(path, sizeof path, "%s/%s", dir, k.good);
        unlink(path);
        disk_put_thing(kind, path, k.good_path);
        w = disk_wrapper(s);
        cr_assert_not_null(w, "%s: %s", what[kind], wb_last_error());
        cr_assert(disk_works(w));
        cr_assert_null(strstr(wb_wrapper_note(w), "loaded"), "%s: %s",
                       what[kind], wb_wrapper_note(w));
        wb_wrapper_free(w);
        cr_assert_eq(lstat(path, &sb), 0, "%s was removed", what[kind]);
        cr_assert(kind == 2 ? S_ISDIR(sb.st_mode) : !S_ISREG(sb.st_mode));
        if (kind == 2)
            rmdir(path);
        else
            unlink(path);
    }
    wb_cache_stats st;
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_hits, 0);
    wb_spec_free(s);
    disk_rm(k.work);
}

Test(disk, an_object_that_does_not_load_is_never_stored, .timeout = 60)
{
    char dir[64], cc[64];
    disk_tmpdir(dir, "garbage");
    setenv("WRAPBAKE_CACHE_DIR", dir, 1);
    snprintf(cc, sizeof cc, "/tmp/wbt-garbage-cc-XXXXXX");
    int fd = mkstemp(cc);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && "
               "out=$2; shift; done\necho garbage >\"$out\"\n");
    fclose(f);
    chmod(cc, 0700);
    wb_spec *s = disk_spec();
    wb_options o = {.tier = WB_TIER_CC, .cc = cc};
    wb_wrapper *w = NULL;
    WBT_FAILS(wb_wrapper_new(s, disk_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "cannot load");
    cr_assert_null(w);
    cr_assert_eq(disk_count(dir), 0, "the garbage was stored");
    wb_spec_free(s);
    unlink(cc);
    disk_rm(dir);
}

Test(disk, explain_refuses_unknown_option_flags)
{
    wb_spec *s = disk_spec();
    wb_options o = {.tier = WB_TIER_CC, .flags = 0x100};
    char *why = NULL;
    WBT_FAILS(wb_cache_explain(s, &o, &why), WB_ERR_INVALID,
              "wb_cache_explain: unknown option flags 0x100");
    cr_assert_null(why);
    wb_spec_free(s);
}

/* Where the environment names no cache directory, wb_cache_explain says
   so as it says any other reason the cache is off. */
Test(disk, explain_says_off_when_the_environment_names_no_directory)
{
    static const struct {
        const char *cache, *home, *why;
    } cases[] = {
        {"relative/cache", "/root", "off: WRAPBAKE_CACHE_DIR is not an "
                                    "absolute path"},
        {NULL, "relative", "off: no cache directory: set WRAPBAKE_CACHE_DIR, "
                           "XDG_CACHE_HOME or HOME to an absolute path"},
        {NULL, NULL, "off: no cache directory"},
        {"/long", NULL, "off: the cache directory's path is longer than "
                        "PATH_MAX"},
    };
    char *long_dir = malloc(PATH_MAX + 16);
    cr_assert_not_null(long_dir);
    memset(long_dir, 'x', PATH_MAX + 15);
    long_dir[0] = '/';
    long_dir[PATH_MAX + 15] = '\0';
    wb_spec *s = disk_spec();
    unsetenv("XDG_CACHE_HOME");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *why = NULL;
        const char *cache = cases[i].cache;
        if (cache && !strcmp(cache, "/long"))
            cache = long_dir;
        if (cache)
            setenv("WRAPBAKE_CACHE_DIR", cache, 1);
        else
            unsetenv("WRAPBAKE_CACHE_DIR");
        if (cases[i].home)
            setenv("HOME", cases[i].home, 1);
        else
            unsetenv("HOME");
        WBT_OK(wb_cache_explain(s, NULL, &why));
        cr_assert_not_null(why);
        cr_assert_eq(strncmp(why, cases[i].why, strlen(cases[i].why)), 0,
                     "case %zu: %s", i, why);
        free(why);
    }
    free(long_dir);
    wb_spec_free(s);
}

/* Compiles and loads go through a directory under $TMPDIR, reached by
   path: a $TMPDIR where others could rename it away is refused, and a
   link to a safe one is followed to it once, then not again. */
Test(disk, a_tmpdir_others_can_rename_in_is_refused, .timeout = 60)
{
    char open_dir[64], safe[64], link_path[128], cache[64];
    disk_tmpdir(open_dir, "open-tmp");
    disk_tmpdir(safe, "safe-tmp");
    disk_tmpdir(cache, "tmp-cache");
    setenv("WRAPBAKE_CACHE_DIR", cache, 1);
    cr_assert_eq(chmod(open_dir, 0777), 0);
    wb_spec *s = disk_spec();
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_SHARE};
    wb_wrapper *w = NULL;
    setenv("TMPDIR", open_dir, 1);
    WBT_FAILS(wb_wrapper_new(s, disk_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "is writable by others and not sticky");
    cr_assert_null(w);
    cr_assert_eq(disk_count(open_dir), 0, "something was written there");
    /* Sticky, as /tmp is: others cannot rename what is not theirs. */
    cr_assert_eq(chmod(open_dir, 01777), 0);
    w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    cr_assert(disk_works(w));
    wb_wrapper_free(w);
    /* A link to a safe directory, itself in a safe one. */
    snprintf(link_path, sizeof link_path, "%s/link", safe);
    cr_assert_eq(symlink(open_dir, link_path), 0);
    setenv("TMPDIR", link_path, 1);
    WBT_OK(wb_cache_clear());
    w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    wb_wrapper_free(w);
    unsetenv("TMPDIR");
    wb_spec_free(s);
    disk_rm(open_dir);
    disk_rm(safe);
    disk_rm(cache);
}

/* The way to the cache directory counts too: a link to a private
   directory of the user's, planted in a directory others may write,
   could as well point anywhere. */
Test(disk, a_cache_directory_reached_through_a_directory_others_can_write,
     .timeout = 60)
{
    char open_dir[64], mine[64], link_path[128];
    disk_tmpdir(open_dir, "open-way");
    disk_tmpdir(mine, "mine");
    cr_assert_eq(chmod(open_dir, 0777), 0);
    snprintf(link_path, sizeof link_path, "%s/cache", open_dir);
    cr_assert_eq(symlink(mine, link_path), 0);
    setenv("WRAPBAKE_CACHE_DIR", link_path, 1);
    wb_spec *s = disk_spec();
    disk_way_refused(s, mine, "writable by others and not sticky");
    /* A relative path names a different directory in every working
       directory: refused. */
    setenv("WRAPBAKE_CACHE_DIR", "relative/cache", 1);
    wb_wrapper *w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    cr_assert_not_null(strstr(wb_wrapper_note(w), "not an absolute path"),
                       "note: %s", wb_wrapper_note(w));
    wb_wrapper_free(w);
    cr_assert_neq(access("relative", F_OK), 0);
    wb_spec_free(s);
    disk_rm(open_dir);
    disk_rm(mine);
}

/* An entry that is whole but cannot be loaded in this process (here: no
   private directory to load it from) stays for the processes it loads
   in, and so does its object, which other entries may share. */
Test(disk, an_entry_that_does_not_load_here_is_kept, .timeout = 60)
{
    char cache[64], open_dir[64], meta[NAME_MAX + 1], obj[NAME_MAX + 1];
    disk_tmpdir(cache, "kept");
    disk_tmpdir(open_dir, "open-tmp2");
    cr_assert_eq(chmod(open_dir, 0777), 0);
    setenv("WRAPBAKE_CACHE_DIR", cache, 1);
    wb_spec *s = disk_spec();
    wb_wrapper *w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    wb_wrapper_free(w);
    disk_find(cache, ".meta", meta);
    disk_find(cache, ".so", obj);
    setenv("TMPDIR", open_dir, 1);
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_SHARE};
    WBT_FAILS(wb_wrapper_new(s, disk_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "not sticky");
    unsetenv("TMPDIR");
    disk_find(cache, ".meta", meta);
    disk_find(cache, ".so", obj);
    w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    cr_assert_not_null(strstr(wb_wrapper_note(w), "loaded from the disk "
                              "cache"), "note: %s", wb_wrapper_note(w));
    wb_wrapper_free(w);
    wb_spec_free(s);
    disk_rm(cache);
    disk_rm(open_dir);
}

/* A link another user plants on the way to the cache directory, after the
   way was checked, leads nowhere: the directories are made one by one in
   the directory held open, and such a link is not followed, nor one of
   root's that leads to it.  One of root's to a directory is, as the check
   allows. */
Test(disk, making_the_directory_follows_no_link_of_another_user)
{
    char sticky[64], target[64], path[256], made[256];
    if (geteuid() != 0)
        cr_skip_test("needs root to make a link of another user's "
                     "(uid 65534)");
    disk_tmpdir(target, "target");
    disk_their_link(sticky, "sticky", target, path, sizeof path);
    snprintf(path, sizeof path, "%s/theirs/cache", sticky);
    snprintf(made, sizeof made, "%s/cache", target);
    cr_assert_not(wb_disk_mkdirs(path));
    cr_assert_eq(errno, ENOTDIR, "%s", strerror(errno));
    cr_assert_neq(access(made, F_OK), 0, "made %s through their link", made);
    /* Nor through root's link to theirs: each link on the way is looked
       at, not only the first. */
    snprintf(path, sizeof path, "%s/chain", sticky);
    cr_assert_eq(symlink("theirs", path), 0);
    snprintf(path, sizeof path, "%s/chain/cache", sticky);
    cr_assert_not(wb_disk_mkdirs(path));
    cr_assert_neq(access(made, F_OK), 0, "made %s through a chain", made);
    snprintf(path, sizeof path, "%s/ours", sticky);
    cr_assert_eq(symlink(target, path), 0);
    snprintf(path, sizeof path, "%s/ours/cache/deeper", sticky);
    cr_assert(wb_disk_mkdirs(path), "%s", strerror(errno));
    struct stat sb;
    cr_assert_eq(stat(made, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0700);
    cr_assert(wb_disk_mkdirs(path), "again: %s", strerror(errno));
    disk_rm(sticky);
    disk_rm(target);
}

/* A link met inside the target of one of the user's own links counts as
   much as one on the way as written: the user's link to a link another
   user planted in a sticky directory would otherwise name whatever
   directory that user chose.  The way is resolved a link at a time, and
   each link is checked. */
/* A path resolves as the kernel resolves it: a file followed by a slash,
   or by more of a path, names nothing. */
Test(disk, a_file_has_nothing_after_it_on_a_way)
{
    char dir[64], file[128], path[160], real[PATH_MAX], why[600];
    disk_tmpdir(dir, "file-way");
    snprintf(file, sizeof file, "%s/f", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_null(wb_rt_unsafe_path(file, false, real, why, sizeof why),
                   "%s", why);
    cr_assert_str_eq(real, file);
    static const char *const after[] = {"/", "/x", "//"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", file, after[i]);
        cr_assert_not_null(wb_rt_unsafe_path(path, false, real, why,
                                             sizeof why), "%s", path);
        cr_assert_eq(errno, ENOTDIR, "%s: %s", path, why);
    }
    disk_rm(dir);
}

/* A link that ends the path names its target, a file as much as a
   directory: the file is taken when the link is the user's or root's (a
   library's .so link to its versioned name), and refused when the link
   is another user's, who could point it anywhere.  A slash after such a
   link asks for a directory, as the kernel takes it. */
Test(disk, a_file_reached_through_a_final_link_is_checked_through_it)
{
    char dir[64], file[128], link[128], path[160], real[PATH_MAX], why[600];
    disk_tmpdir(dir, "final-link");
    snprintf(file, sizeof file, "%s/lib.so.13", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0644);
    cr_assert_geq(fd, 0);
    close(fd);
    snprintf(link, sizeof link, "%s/lib.so", dir);
    cr_assert_eq(symlink("lib.so.13", link), 0);
    cr_assert_null(wb_rt_unsafe_file(link, real, why, sizeof why), "%s",
                   why);
    cr_assert_str_eq(real, file);
    /* A chain of links, the last one absolute. */
    snprintf(path, sizeof path, "%s/lib-abs.so", dir);
    cr_assert_eq(symlink(file, path), 0);
    snprintf(path, sizeof path, "%s/chain.so", dir);
    cr_assert_eq(symlink("lib-abs.so", path), 0);
    cr_assert_null(wb_rt_unsafe_file(path, real, why, sizeof why), "%s",
                   why);
    cr_assert_str_eq(real, file);
    snprintf(path, sizeof path, "%s/", link);
    cr_assert_not_null(wb_rt_unsafe_path(path, false, real, why,
                                         sizeof why));
    cr_assert_eq(errno, ENOTDIR, "%s", why);
    if (geteuid() == 0) {
        cr_assert_eq(lchown(link, 65534, 65534), 0);
        cr_assert_not_null(wb_rt_unsafe_file(link, real, why, sizeof why));
        cr_assert_eq(errno, 0, "a refusal, not a failure: %s", why);
        cr_assert(strstr(why, "lib.so belongs to uid 65534"), "%s", why);
        /* The file itself is still taken by its own name. */
        cr_assert_null(wb_rt_unsafe_file(file, real, why, sizeof why), "%s",
                       why);
    }
    disk_rm(dir);
    if (geteuid() != 0)
        cr_skip_test("the link of another user's needs root (uid 65534)");
}

Test(disk, a_link_of_another_user_inside_a_link_target_is_refused,
     .timeout = 60)
{
    char sticky[64], mine[64], home[64], theirs[128], path[256];
    char made[256];
    if (geteuid() != 0)
        cr_skip_test("needs root to make a link of another user's "
                     "(uid 65534)");
    disk_tmpdir(mine, "mine-way");
    disk_tmpdir(home, "home-way");
    disk_their_link(sticky, "sticky-way", mine, theirs, sizeof theirs);
    snprintf(path, sizeof path, "%s/cache", home);
    cr_assert_eq(symlink(theirs, path), 0);
    wb_spec *s = disk_spec();
    /* The link as the cache directory, and in the middle of its way. */
    for (int deeper = 0; deeper < 2; deeper++) {
        snprintf(path, sizeof path, "%s/cache%s", home,
                 deeper ? "/sub" : "");
        setenv("WRAPBAKE_CACHE_DIR", path, 1);
        disk_way_refused(s, mine, "theirs belongs to uid 65534");
        WBT_FAILS(wb_cache_clear(), WB_ERR_INVALID, "nothing was removed");
    }
    /* A $TMPDIR reached the same way is refused too. */
    char cache[64];
    disk_tmpdir(cache, "cache-way");
    setenv("WRAPBAKE_CACHE_DIR", cache, 1);
    snprintf(path, sizeof path, "%s/cache", home);
    setenv("TMPDIR", path, 1);
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_SHARE};
    wb_wrapper *w = NULL;
    WBT_FAILS(wb_wrapper_new(s, disk_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "theirs belongs to uid 65534");
    cr_assert_null(w);
    cr_assert_eq(disk_count(mine), 0, "a compile used their directory");
    unsetenv("TMPDIR");
    /* The same way with the link the user's is followed: the refusal
       above was for its owner alone. */
    cr_assert_eq(lchown(theirs, 0, 0), 0);
    snprintf(path, sizeof path, "%s/cache/sub", home);
    setenv("WRAPBAKE_CACHE_DIR", path, 1);
    w = disk_wrapper(s);
    cr_assert_not_null(w, "%s", wb_last_error());
    cr_assert_null(strstr(wb_wrapper_note(w), "disk cache off"), "note: %s",
                   wb_wrapper_note(w));
    wb_wrapper_free(w);
    snprintf(made, sizeof made, "%s/sub", mine);
    cr_assert_eq(disk_count(made), 2, "the entry was not stored");
    wb_spec_free(s);
    disk_rm(sticky);
    disk_rm(mine);
    disk_rm(home);
    disk_rm(cache);
}
