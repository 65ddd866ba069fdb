/*
 * The compiled tiers beyond tcc: the cc tier and its compiler handling,
 * auto promotion under concurrent callers, the in-process and disk caches
 * (hits, misses, damaged entries, the size bound, several processes
 * filling one cache), and batch compiles.
 *
 * Every test that reaches the disk cache points WRAPBAKE_CACHE_DIR at a
 * fresh directory of its own.  Criterion runs each test in a process of
 * its own, so the environment and the cache statistics start clean.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "../src/tiers/tiers.h"
#include "../src/gen/gen.h"

/* x (data mutation) gets x + 1; output 0 is a view of y's second row. */
static int tiers_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                       int nv)
{
    (void)ctx; (void)na; (void)nv;
    const float *x = wb_tensor_data(a[0].t);
    int64_t sizes[1] = {4}, strides[1] = {1};
    if (wb_tensor_new(WBT_F32, WBT_CPU, 2, wb_tensor_sizes(a[0].t), &v[0].t))
        return -1;
    float *nx = wb_tensor_data(v[0].t);
    for (int i = 0; i < 8; i++)
        nx[i] = x[i] + 1;
    if (wb_tensor_as_strided(a[1].t, 1, sizes, strides, 4, &v[1].t))
        return -2;
    return 2;
}

/* The spec of tiers_graph; name tells specs apart (and so their C). */
static wb_spec *tiers_spec(const char *name)
{
    wb_spec *s;
    WBT_OK(wb_spec_new(name, &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "row", WB_OUT_ALIAS_OF_INPUT, 1, true, 1,
                              NULL));
    return s;
}

/* Calls w `calls` times on fresh tensors and checks every result. */
static int tiers_check_calls(wb_wrapper *w, int calls, float first)
{
    wb_tensor *x = wbt_f32(first, 2, 2, 4), *y = wbt_f32(-first, 2, 2, 4);
    wb_arg a[2] = {{.t = x}, {.t = y}};
    int bad = 0;
    for (int c = 1; c <= calls; c++) {
        wb_value row;
        if (wb_call(w, a, 2, &row, 1) != WB_OK) {
            bad++;
            continue;
        }
        if (wbt_at(x, 1, 3) != first + 7 + (float)c ||
            wb_tensor_version(x) != (uint64_t)c ||
            wb_tensor_storage(row.t) != wb_tensor_storage(y) ||
            wbt_at(row.t, 2) != -first + 6)
            bad++;
        wb_tensor_release(row.t);
    }
    wb_tensor_release(x);
    wb_tensor_release(y);
    return bad;
}

/* Waits up to 30 s for w's note, and returns it. */
static const char *tiers_wait_note(wb_wrapper *w)
{
    for (int i = 0; i < 3000 && !wb_wrapper_note(w); i++) {
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    return wb_wrapper_note(w);
}

/* That w serves from tcc for good, as an auto wrapper whose system
   compiler cannot run does, its note says why; returns the note. */
static const char *tiers_assert_stays_on_tcc(wb_wrapper *w)
{
    const char *note = tiers_wait_note(w);
    cr_assert_eq(wb_wrapper_tier(w), WB_TIER_TCC);
    cr_assert_not_null(note);
    cr_assert_not_null(strstr(note, "stays on tcc: cannot run the system "
                              "compiler"), "note: %s", note);
    return note;
}

/* A fresh private directory for this test's disk cache. */
static char *tiers_cache_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/wbt-cache-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    setenv("WRAPBAKE_CACHE_DIR", dir, 1);
    return dir;
}

/* Files in dir whose names end with ext. */
static int tiers_count(const char *dir, const char *ext)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    cr_assert_not_null(d);
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name), e = strlen(ext);
        n += l > e && strcmp(de->d_name + l - e, ext) == 0;
    }
    closedir(d);
    return n;
}

/* A compiler stand-in: a shell script with the given body. */
static const char *tiers_script(const char *body)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/wbt-cc-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    chmod(path, 0700);
    return path;
}

static void tiers_rm(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The path of the one file in dir whose name ends with ext. */
static void tiers_find(const char *dir, const char *ext, char *path,
                       size_t n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    path[0] = '\0';
    cr_assert_not_null(d);
    while ((de = readdir(d)))
        if (strstr(de->d_name, ext))
            snprintf(path, n, "%s/%s", dir, de->d_name);
    closedir(d);
    cr_assert(path[0], "no %s in %s", ext, dir);
}

/* The text of the file at path, at most n - 1 bytes of it, into buf. */
static void tiers_read(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    buf[fread(buf, 1, n - 1, f)] = '\0';
    fclose(f);
}

/* text, as the whole file at path. */
static void tiers_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

/* Asserts that wb_cache_explain says needle of s; what names the case. */
static void tiers_explains(const wb_spec *s, const char *needle,
                           const char *what)
{
    char *why = NULL;
    WBT_OK(wb_cache_explain(s, NULL, &why));
    cr_assert_not_null(strstr(why, needle), "%s: %s", what, why);
    free(why);
}

static double tiers_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits up to 60 s for w to serve on tier. */
static bool tiers_wait_tier(wb_wrapper *w, wb_tier tier)
{
    for (int i = 0; i < 6000 && wb_wrapper_tier(w) != tier; i++) {
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    return wb_wrapper_tier(w) == tier;
}

/* ---- the cc tier ---- */

Test(tiers, cc_agrees_and_says_how_it_was_built)
{
    char *dir = tiers_cache_dir();
    wb_spec *s = tiers_spec("cc_basic");
    wb_wrapper *w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
    cr_assert_eq(tiers_check_calls(w, 50, 10), 0);
    cr_assert_not_null(strstr(wb_wrapper_note(w), "compiled by"),
                       "note: %s", wb_wrapper_note(w));
    /* The same C as the tcc tier compiles. */
    wb_wrapper *t = wbt_wrap(s, tiers_graph, NULL, WB_TIER_TCC);
    cr_assert_str_eq(wb_wrapper_source(w), wb_wrapper_source(t));
    wb_wrapper_free(t);
    wb_wrapper_free(w);
    wb_spec_free(s);
    tiers_rm(dir);
}

Test(tiers, cc_reports_a_failing_compiler_with_its_diagnostics)
{
    wb_spec *s = tiers_spec("cc_fails");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    o.cc = tiers_script("echo 'wrapper.c:1: error: boom' >&2; exit 3");
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "(exit 3): wrapper.c:1: error: boom");
    cr_assert_null(w);
    unlink(o.cc);
    o.cc = "/nonexistent/wbt-cc";
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "cannot run the system compiler '/nonexistent/wbt-cc'");
    o.cc = " \t ";
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_INVALID,
              "blank");
    wb_spec_free(s);
}

/* The compiler may leave anything at the name of its diagnostics file:
   a FIFO nobody writes must not hang the build, and a link must not show
   the file it leads to. */
Test(tiers, cc_reads_diagnostics_only_from_a_regular_file, .timeout = 30)
{
    wb_spec *s = tiers_spec("cc_diag");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    char secret[] = "/tmp/wbt-secret-XXXXXX", body[512];
    int fd = mkstemp(secret);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "SECRET-TEXT\n", 12), 12);
    close(fd);
    static const char *const put[] = {"mkfifo \"$d/diagnostics.txt\"",
                                      "ln -s %s \"$d/diagnostics.txt\""};
    for (int i = 0; i < 2; i++) {
        char what[200];
        snprintf(what, sizeof what, put[i], secret);
        snprintf(body, sizeof body,
                 "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; "
                 "done\nd=$(dirname \"$out\")\nrm -f \"$d/diagnostics.txt\""
                 "\n%s\nexit 4", what);
        o.cc = tiers_script(body);
        WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w),
                  WB_ERR_COMPILE, "(exit 4): no diagnostics");
        cr_assert_null(strstr(wb_last_error(), "SECRET"), "%s",
                       wb_last_error());
        cr_assert_null(w);
        unlink(o.cc);
    }
    unlink(secret);
    wb_spec_free(s);
}

/* What a compiler leaves in its private directory goes with it, however
   deep, and a link there is removed, not followed. */
Test(tiers, cc_removes_the_tree_a_compiler_leaves, .timeout = 60)
{
    wb_spec *s = tiers_spec("cc_tree");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    char tmp[] = "/tmp/wbt-tmp-XXXXXX", outside[] = "/tmp/wbt-out-XXXXXX";
    char body[512], kept[128];
    cr_assert_not_null(mkdtemp(tmp));
    cr_assert_not_null(mkdtemp(outside));
    snprintf(kept, sizeof kept, "%s/kept", outside);
    tiers_write(kept, "kept");
    snprintf(body, sizeof body,
             "for a; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
             "d=$(dirname \"$out\")\nmkdir -p \"$d/sub/deeper/deepest\"\n"
             "echo x >\"$d/sub/deeper/file\"\nln -s %s \"$d/sub/out\"\n"
             "exec cc \"$@\"", outside);
    o.cc = tiers_script(body);
    setenv("TMPDIR", tmp, 1);
    wb_status st = wb_wrapper_new(s, tiers_graph, NULL, &o, &w);
    unsetenv("TMPDIR");
    cr_assert_eq(st, WB_OK, "%s", wb_last_error());
    cr_assert_eq(tiers_check_calls(w, 1, 1), 0);
    wb_wrapper_free(w);
    cr_assert_eq(rmdir(tmp), 0, "the compiler's directory stayed in %s: "
                 "%s", tmp, strerror(errno));
    cr_assert_eq(access(kept, F_OK), 0, "the link was followed");
    unlink(o.cc);
    tiers_rm(tmp);
    tiers_rm(outside);
    wb_spec_free(s);
}

/* In a $TMPDIR so long that the private directory fits within PATH_MAX
   and the files in it do not, the names would be cut short, the source's
   and the object's to the same one: the build fails saying so. */
Test(tiers, cc_refuses_file_names_longer_than_path_max, .timeout = 60)
{
    wb_spec *s = tiers_spec("cc_long");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    char base[] = "/tmp/wbt-long-XXXXXX", tmp[PATH_MAX];
    cr_assert_not_null(mkdtemp(base));
    /* "/wrapbake-XXXXXX" fits after a TMPDIR 5 bytes short; after one 30
       bytes short "/diagnostics.txt" fits too, but not the object named
       by its hash, "/<64 hex>.so". */
    for (int spare = 5; spare <= 30; spare += 25) {
        size_t want = PATH_MAX - 1 - strlen("/wrapbake-XXXXXX") -
                      (size_t)spare;
        snprintf(tmp, sizeof tmp, "%s", base);
        while (strlen(tmp) < want) {
            size_t len = strlen(tmp), part = want - len - 1;
            part = part > 200 ? 200 : part;
            tmp[len] = '/';
            memset(tmp + len + 1, 'd', part);
            tmp[len + 1 + part] = '\0';
            cr_assert_eq(mkdir(tmp, 0700), 0, "%s", strerror(errno));
        }
        setenv("TMPDIR", tmp, 1);
        WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w),
                  WB_ERR_COMPILE, "name too long");
        unsetenv("TMPDIR");
        cr_assert_null(w);
        cr_assert_eq(rmdir(tmp), 0, "the private directory stayed: %s",
                     strerror(errno));
        tiers_rm(base);
        cr_assert_eq(mkdir(base, 0700), 0);
    }
    tiers_rm(base);
    wb_spec_free(s);
}

Test(tiers, cc_stops_a_compiler_past_its_time_limit, .timeout = 30)
{
    wb_spec *s = tiers_spec("cc_slow");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE,
                    .cc_timeout_s = 1};
    wb_wrapper *w = NULL;
    o.cc = tiers_script("exec sleep 20");
    double t0 = tiers_now();
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "ran past its limit of 1 s");
    cr_assert_lt(tiers_now() - t0, 10.0);
    unlink(o.cc);
    wb_spec_free(s);
}

/* Whether process pid has ended (gone, or a zombie nobody reaped yet). */
static bool tiers_ended(long pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return !paren || paren[2] == 'Z' || paren[2] == 'X';
}

Test(tiers, cc_time_limit_stops_what_the_compiler_started, .timeout = 30)
{
    /* A driver that runs a long child, as cc runs cc1, as and ld. */
    wb_spec *s = tiers_spec("cc_slow_child");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE,
                    .cc_timeout_s = 1};
    wb_wrapper *w = NULL;
    char pidfile[] = "/tmp/wbt-cc-child-XXXXXX", body[128];
    close(mkstemp(pidfile));
    snprintf(body, sizeof body, "sleep 25 & echo $! > %s; wait", pidfile);
    o.cc = tiers_script(body);
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "ran past its limit of 1 s");
    FILE *f = fopen(pidfile, "r");
    long child = 0;
    cr_assert(f && fscanf(f, "%ld", &child) == 1 && child > 0,
              "the stand-in recorded its child");
    fclose(f);
    for (int i = 0; i < 200 && !tiers_ended(child); i++) {
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    bool ended = tiers_ended(child);
    if (!ended)
        kill((pid_t)child, SIGKILL);
    cr_assert(ended, "the compiler's child %ld outlived its time limit",
              child);
    unlink(pidfile);
    unlink(o.cc);
    wb_spec_free(s);
}

Test(tiers, cc_compiler_words_are_not_a_shell_command)
{
    /* Shell syntax in the command stays literal: the first word is the
       program, and "$(touch ...)" is one argument that sh would run. */
    wb_spec *s = tiers_spec("cc_words");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    unlink("/tmp/wbt-cc-pwned");
    o.cc = "cc $(touch${IFS}/tmp/wbt-cc-pwned) ;touch /tmp/wbt-cc-pwned";
    cr_assert_neq(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_OK);
    cr_assert_neq(access("/tmp/wbt-cc-pwned", F_OK), 0,
                  "the compiler command went through a shell");
    wb_spec_free(s);
}

/* The host may have the system reap its children (SIGCHLD ignored, or
   SA_NOCLDWAIT): the compiler's exit status is then lost, so the cc tier
   refuses to compile, as for any failed compile, and leaves the
   disposition as it was.  An object in the disk cache still loads. */
Test(tiers, cc_refuses_to_compile_while_sigchld_is_ignored, .timeout = 120)
{
    char *dir = tiers_cache_dir();
    wb_spec *s = tiers_spec("cc_sigchld"), *t = tiers_spec("cc_sigchld_new");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_SHARE};
    wb_wrapper *w = NULL;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    wb_wrapper_free(w);
    struct sigaction old, ign = {.sa_handler = SIG_IGN}, now;
    struct sigaction nowait = {.sa_handler = SIG_DFL,
                               .sa_flags = SA_NOCLDWAIT};
    const struct sigaction *ways[] = {&ign, &nowait};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(sigaction(SIGCHLD, ways[i], &old), 0);
        w = NULL;
        WBT_FAILS(wb_wrapper_new(t, tiers_graph, NULL, &o, &w),
                  WB_ERR_COMPILE, "SIGCHLD is ignored in this process");
        cr_assert_null(w);
        WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
        cr_assert_not_null(strstr(wb_wrapper_note(w), "loaded from the disk "
                                  "cache"), "note: %s", wb_wrapper_note(w));
        cr_assert_eq(tiers_check_calls(w, 5, 0), 0);
        wb_wrapper_free(w);
        cr_assert_eq(sigaction(SIGCHLD, NULL, &now), 0);
        cr_assert(now.sa_handler == ways[i]->sa_handler &&
                      (now.sa_flags & SA_NOCLDWAIT) ==
                          (ways[i]->sa_flags & SA_NOCLDWAIT),
                  "the library changed SIGCHLD's disposition");
        cr_assert_eq(sigaction(SIGCHLD, &old, NULL), 0);
    }
    /* auto stays on tcc and says why. */
    cr_assert_eq(sigaction(SIGCHLD, &ign, &old), 0);
    wb_options a = {.tier = WB_TIER_AUTO, .promote_calls = 1,
                    .flags = WB_OPT_NO_DISK_CACHE};
    WBT_OK(wb_wrapper_new(t, tiers_graph, NULL, &a, &w));
    cr_assert_eq(tiers_check_calls(w, 3, 0), 0);
    const char *note = tiers_assert_stays_on_tcc(w);
    cr_assert_not_null(strstr(note, "SIGCHLD is ignored"), "note: %s", note);
    wb_wrapper_free(w);
    cr_assert_eq(sigaction(SIGCHLD, &old, NULL), 0);
    wb_spec_free(t);
    wb_spec_free(s);
    tiers_rm(dir);
}

/* SIGUSR1's handler in the next test: the host turns to ignoring SIGCHLD
   while the compiler runs. */
static void tiers_ignore_sigchld(int sig)
{
    (void)sig;
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigaction(SIGCHLD, &ign, NULL);
}

Test(tiers, cc_reports_a_compiler_status_it_could_not_read, .timeout = 30)
{
    /* The stand-in has its parent ignore SIGCHLD, then exits: the system
       reaps it, and its status, failure or success, is gone. */
    wb_spec *s = tiers_spec("cc_status_lost");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    struct sigaction usr = {.sa_handler = tiers_ignore_sigchld}, old_usr;
    struct sigaction old_chld;
    cr_assert_eq(sigaction(SIGCHLD, NULL, &old_chld), 0);
    cr_assert_eq(sigaction(SIGUSR1, &usr, &old_usr), 0);
    o.cc = tiers_script("kill -USR1 $PPID; sleep 0.3; exit 0");
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "the exit status of the system compiler '");
    cr_assert_null(w);
    cr_assert(strstr(wb_last_error(), "' was lost: SIGCHLD is ignored"),
              "%s", wb_last_error());
    cr_assert_eq(sigaction(SIGCHLD, &old_chld, NULL), 0);
    cr_assert_eq(sigaction(SIGUSR1, &old_usr, NULL), 0);
    unlink(o.cc);
    wb_spec_free(s);
}

/* ---- auto promotion ---- */

typedef struct tiers_caller {
    wb_wrapper *w;
    float first;
    int bad, calls;
    atomic_bool *stop;
} tiers_caller;

static void *tiers_call_loop(void *p)
{
    tiers_caller *c = p;
    while (!atomic_load(c->stop)) {
        c->bad += tiers_check_calls(c->w, 20, c->first);
        c->calls += 20;
    }
    return NULL;
}

Test(tiers, auto_promotes_to_cc_under_concurrent_callers, .timeout = 120)
{
    char *dir = tiers_cache_dir();
    wb_spec *s = tiers_spec("auto_busy");
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 100};
    wb_wrapper *w = NULL;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert_eq(wb_wrapper_tier(w), WB_TIER_TCC);
    cr_assert_null(wb_wrapper_note(w));

    atomic_bool stop = false;
    tiers_caller c[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        c[i] = (tiers_caller){w, (float)(i * 100), 0, 0, &stop};
        pthread_create(&t[i], NULL, tiers_call_loop, &c[i]);
    }
    bool promoted = tiers_wait_tier(w, WB_TIER_CC);
    /* Keep calling on the new tier for a while. */
    struct timespec nap = {0, 100000000};
    nanosleep(&nap, NULL);
    atomic_store(&stop, true);
    int bad = 0, calls = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        bad += c[i].bad;
        calls += c[i].calls;
    }
    cr_assert(promoted, "still on %s: %s", wb_tier_name(wb_wrapper_tier(w)),
              wb_wrapper_note(w) ? wb_wrapper_note(w) : "(no note)");
    cr_assert_eq(bad, 0, "%d of %d calls went wrong", bad, calls);
    cr_assert_gt(calls, 100);
    cr_assert_eq(tiers_check_calls(w, 10, 5), 0);
    wb_wrapper_free(w);
    wb_spec_free(s);
    tiers_rm(dir);
}

Test(tiers, auto_promotes_by_time_without_calls, .timeout = 120)
{
    char *dir = tiers_cache_dir();
    wb_spec *s = tiers_spec("auto_timer");
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 1u << 30,
                    .promote_ms = 20};
    wb_wrapper *w = NULL;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert(tiers_wait_tier(w, WB_TIER_CC), "note: %s",
              wb_wrapper_note(w) ? wb_wrapper_note(w) : "(none)");
    cr_assert_eq(tiers_check_calls(w, 10, 1), 0);
    wb_wrapper_free(w);
    wb_spec_free(s);
    tiers_rm(dir);
}

Test(tiers, auto_stays_on_tcc_and_says_why_without_a_compiler)
{
    wb_spec *s = tiers_spec("auto_nocc");
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 3,
                    .flags = WB_OPT_NO_DISK_CACHE,
                    .cc = "/nonexistent/wbt-cc"};
    wb_wrapper *w = NULL;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert_eq(tiers_check_calls(w, 5, 0), 0);
    tiers_assert_stays_on_tcc(w);
    cr_assert_eq(tiers_check_calls(w, 5, 0), 0);
    wb_wrapper_free(w);
    wb_spec_free(s);
}

Test(tiers, auto_failing_by_time_leaves_calls_on_tcc, .timeout = 60)
{
    /* Promotion by time, with a call count far off: once it fails, calls
       go straight to the tcc code, not through the counting entry. */
    wb_spec *s = tiers_spec("auto_timer_nocc");
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 1u << 30,
                    .promote_ms = 1, .flags = WB_OPT_NO_DISK_CACHE,
                    .cc = "/nonexistent/wbt-cc"};
    wb_wrapper *w = NULL;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert_neq(atomic_load(&w->entry), w->code->entry,
                  "an auto wrapper starts on its counting entry");
    const char *note = tiers_wait_note(w);
    cr_assert_not_null(note);
    cr_assert_not_null(strstr(note, "stays on tcc"), "note: %s", note);
    cr_assert_eq(atomic_load(&w->entry), w->code->entry,
                 "calls still go through the counting entry");
    cr_assert_eq(tiers_check_calls(w, 5, 0), 0);
    wb_wrapper_free(w);
    wb_spec_free(s);
}

Test(tiers, freeing_an_auto_wrapper_stops_its_compiler, .timeout = 30)
{
    wb_spec *s = tiers_spec("auto_freed");
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 1,
                    .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    o.cc = tiers_script("exec sleep 20");
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert_eq(tiers_check_calls(w, 1, 0), 0);
    struct timespec nap = {0, 50000000};
    nanosleep(&nap, NULL);  /* let the compiler start */
    double t0 = tiers_now();
    wb_wrapper_free(w);
    cr_assert_lt(tiers_now() - t0, 5.0, "free waited for the compiler");
    unlink(o.cc);
    wb_spec_free(s);
}

/* The threads of this process, from /proc/self/task. */
static int tiers_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

Test(tiers, the_promoter_ends_with_the_last_promotion_freed, .timeout = 30)
{
    /* A promotion due by neither calls nor time leaves the promoter
       waiting for work: freeing the wrapper wakes it to end. */
    wb_spec *s = tiers_spec("auto_idle");
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 1u << 30,
                    .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *w = NULL;
    int before = tiers_threads();
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert_eq(tiers_threads(), before + 1, "no promoter started");
    struct timespec park = {0, 100000000};
    nanosleep(&park, NULL);  /* let it find nothing due and wait */
    wb_wrapper_free(w);
    for (int i = 0; i < 500 && tiers_threads() > before; i++) {
        struct timespec nap = {0, 10000000};
        nanosleep(&nap, NULL);
    }
    cr_assert_eq(tiers_threads(), before, "the promoter outlived its work");
    wb_spec_free(s);
}

/* ---- the in-process cache ---- */

Test(tiers, equal_specs_share_one_function)
{
    wb_spec *s = tiers_spec("shared");
    wb_cache_stats a, b, c;
    wb_wrapper *w1 = wbt_wrap(s, tiers_graph, NULL, WB_TIER_TCC);
    wb_cache_stats_get(&a);
    wb_wrapper *w2 = wbt_wrap(s, tiers_graph, NULL, WB_TIER_TCC);
    wb_cache_stats_get(&b);
    cr_assert_eq(b.shared, a.shared + 1);
    cr_assert_eq(b.compiled, a.compiled);
    /* Freeing one leaves the other's code in place. */
    wb_wrapper_free(w1);
    cr_assert_eq(tiers_check_calls(w2, 10, 3), 0);
    /* WB_OPT_NO_SHARE compiles its own. */
    wb_options o = {.tier = WB_TIER_TCC, .flags = WB_OPT_NO_SHARE};
    wb_wrapper *w3 = NULL;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w3));
    wb_cache_stats_get(&c);
    cr_assert_eq(c.compiled, b.compiled + 1);
    wb_wrapper_free(w2);
    wb_wrapper_free(w3);
    /* With the last wrapper gone, the code went too: a new one compiles. */
    wb_wrapper *w4 = wbt_wrap(s, tiers_graph, NULL, WB_TIER_TCC);
    wb_cache_stats_get(&a);
    cr_assert_eq(a.compiled, c.compiled + 1);
    wb_wrapper_free(w4);
    wb_spec_free(s);
}

static void *tiers_ask_source(void *w)
{
    return (void *)wb_wrapper_source(w);
}

/* A tcc wrapper runs code compiled from libtcc's own text and keeps no
   source until one is asked for; then every caller, racing or not, gets
   the one whole text (a cc wrapper's, for any compiler, with #line
   directives). */
Test(tiers, tcc_source_is_made_when_asked_for)
{
    enum { T = 8 };
    wb_spec *s = tiers_spec("asked");
    wb_wrapper *w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_TCC);
    char *whole;
    wb_emitted own;
    WBT_OK(wb_emit(w->spec, WB_EMIT_FN, WB_EMIT_LINES, &whole));
    WBT_OK(wb_emit_parts(w->spec, WB_EMIT_FN, WB_EMIT_LIBTCC, &own));
    /* The code keeps the function libtcc compiled, its sharing key. */
    cr_assert_str_eq(w->code->source, own.body);
    cr_assert_null(atomic_load(&w->source));
    pthread_t t[T];
    void *got[T];
    for (int i = 0; i < T; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, tiers_ask_source, w), 0);
    for (int i = 0; i < T; i++)
        pthread_join(t[i], &got[i]);
    cr_assert_str_eq(got[0], whole);
    for (int i = 1; i < T; i++)
        cr_assert_eq(got[i], got[0], "caller %d got another copy", i);
    cr_assert_eq(wb_wrapper_source(w), got[0]);
    cr_assert_eq(tiers_check_calls(w, 3, 1), 0);
    wb_wrapper_free(w);
    /* The cc tier compiles the whole text, kept from the start. */
    w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
    cr_assert_str_eq(atomic_load(&w->source), whole);
    wb_wrapper_free(w);
    free(whole);
    wb_emitted_free(&own);
    wb_spec_free(s);
}

Test(tiers, cc_code_is_shared_only_for_the_same_compiler)
{
    wb_spec *s = tiers_spec("cc_shared");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
    wb_cache_stats a, b;
    wb_wrapper *w1 = NULL, *w2 = NULL, *w3 = NULL;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w1));
    wb_cache_stats_get(&a);
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w2));
    wb_cache_stats_get(&b);
    cr_assert_eq(b.shared, a.shared + 1);
    /* Another compiler is asked for: it runs, and its failure stands,
       although code of the same C is at hand. */
    o.cc = tiers_script("echo 'other compiler ran' >&2; exit 4");
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w3), WB_ERR_COMPILE,
              "other compiler ran");
    unlink(o.cc);
    /* Other flags build code of their own. */
    o.cc = "cc -g0";
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w3));
    wb_cache_stats_get(&a);
    cr_assert_eq(a.shared, b.shared);
    cr_assert_eq(a.compiled, b.compiled + 1);
    cr_assert_eq(tiers_check_calls(w3, 10, 4), 0);
    wb_wrapper_free(w3);
    wb_wrapper_free(w2);
    wb_wrapper_free(w1);
    wb_spec_free(s);
}

/* Asserts that text, a message or a note, holds printable ASCII alone
   (and newlines, which folded diagnostics may end with), and shows the
   escape character as \x1b; what names the case. */
static void tiers_printable(const char *text, const char *what)
{
    cr_assert_not_null(text, "%s: no text", what);
    for (const char *p = text; *p; p++)
        cr_assert((*p >= 0x20 && *p <= 0x7e) || *p == '\n',
                  "%s: byte 0x%02x in '%s'", what, (unsigned char)*p, text);
    cr_assert_not_null(strstr(text, "\\x1b[31m"), "%s: '%s' does not show "
                       "the escape", what, text);
}

/* What the environment, the compiler and the cache's records hold reaches
   messages and notes printable: a terminal shows no escape sequence of
   theirs. */
Test(tiers, messages_show_outside_text_printable, .timeout = 60)
{
    char base[] = "/tmp/wbt-esc-XXXXXX", path[256], meta[512], text[4096];
    char body[256], *why = NULL;
    wb_spec *s = tiers_spec("printable");
    wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_SHARE};
    wb_wrapper *w = NULL;
    cr_assert_not_null(mkdtemp(base));
    /* $CC naming no program, and a compiler's diagnostics. */
    setenv("CC", "/nonexistent/c\x1b[31mc", 1);
    cr_assert_neq(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_OK);
    tiers_printable(wb_last_error(), "$CC");
    unsetenv("CC");
    o.flags |= WB_OPT_NO_DISK_CACHE;
    o.cc = tiers_script("printf 'wrapper.c:1: \\033[31merror\\007\\n"
                        "second line\\n' >&2; exit 5");
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_COMPILE,
              "(exit 5): wrapper.c:1: \\x1b[31merror\\x07 second line\n");
    tiers_printable(wb_last_error(), "diagnostics");
    unlink(o.cc);
    o.cc = NULL;
    o.flags &= ~WB_OPT_NO_DISK_CACHE;
    /* A $TMPDIR and a cache directory others can write. */
    snprintf(path, sizeof path, "%s/\x1b[31mopen", base);
    cr_assert_eq(mkdir(path, 0777), 0);
    cr_assert_eq(chmod(path, 0777), 0);
    setenv("TMPDIR", path, 1);
    cr_assert_neq(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_OK);
    tiers_printable(wb_last_error(), "$TMPDIR");
    unsetenv("TMPDIR");
    setenv("WRAPBAKE_CACHE_DIR", path, 1);
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    tiers_printable(wb_wrapper_note(w), "the cache directory's note");
    wb_wrapper_free(w);
    WBT_OK(wb_cache_explain(s, NULL, &why));
    tiers_printable(why, "the cache directory's explanation");
    free(why);
    cr_assert_neq(wb_cache_clear(), WB_OK);
    tiers_printable(wb_last_error(), "wb_cache_clear");
    /* A record of the same C by another compiler, whose path it holds
       with an escape in it: the nearest entry of a miss. */
    char *dir = tiers_cache_dir();
    wb_wrapper_free(wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC));
    tiers_find(dir, ".meta", meta, sizeof meta);
    tiers_read(meta, text, sizeof text);
    cr_assert_eq(unlink(meta), 0);
    char *compiler = strstr(text, "\ncompiler "), *line;
    cr_assert_not_null(compiler);
    memset(compiler + 10, 'f', WB_FINGERPRINT_LEN);
    line = strstr(text, "\ncompiler-path ");
    cr_assert_not_null(line);
    snprintf(body, sizeof body, "%s", strchr(line + 1, '\n'));
    snprintf(line, sizeof text - (size_t)(line - text),
             "\ncompiler-path /opt/c\x1b[31mc%s", body);
    snprintf(meta, sizeof meta, "%s/%0*d.meta", dir, WB_FINGERPRINT_LEN, 0);
    tiers_write(meta, text);
    WBT_OK(wb_cache_explain(s, NULL, &why));
    cr_assert_not_null(strstr(why, "differs in: the compiler (/opt/c"), "%s",
                       why);
    tiers_printable(why, "a record's compiler path");
    free(why);
    wb_spec_free(s);
    tiers_rm(dir);
    tiers_rm(base);
}

/* ---- the disk cache ---- */

Test(tiers, disk_cache_hit_miss_and_explanations)
{
    char *dir = tiers_cache_dir(), *why = NULL;
    wb_spec *s = tiers_spec("disk");
    wb_options o = {.tier = WB_TIER_CC};
    wb_cache_stats st;
    WBT_OK(wb_cache_explain(s, &o, &why));
    cr_assert_not_null(strstr(why, "miss: no entry"), "%s", why);
    cr_assert_not_null(strstr(why, "no entry for this spec"), "%s", why);
    free(why);

    wb_wrapper *w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
    wb_wrapper_free(w);
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_misses, 1);
    cr_assert_eq(tiers_count(dir, ".meta"), 1);
    cr_assert_eq(tiers_count(dir, ".so"), 1);

    w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
    cr_assert_not_null(strstr(wb_wrapper_note(w), "loaded from the disk "
                              "cache"), "note: %s", wb_wrapper_note(w));
    cr_assert_eq(tiers_check_calls(w, 10, 2), 0);
    wb_wrapper_free(w);
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_hits, 1);
    cr_assert_gt(st.compile_ms_saved, 0.0);
    WBT_OK(wb_cache_explain(s, &o, &why));
    cr_assert_eq(strncmp(why, "hit: entry", 10), 0, "%s", why);
    free(why);

    /* Another compiler command: the same C, a different key, and the
       explanation names the part that differs. */
    o.cc = "cc -g0";
    WBT_OK(wb_cache_explain(s, &o, &why));
    cr_assert_not_null(strstr(why, "differs in: the compiler's command "
                              "words, or the file /"), "%s", why);
    free(why);
    /* A changed spec of the same name: other generated C. */
    wb_spec *s2 = tiers_spec("disk");
    WBT_OK(wb_spec_set_training(s2, true));
    o.cc = NULL;
    WBT_OK(wb_cache_explain(s2, &o, &why));
    cr_assert_not_null(strstr(why, "other generated C"), "%s", why);
    free(why);

    WBT_OK(wb_cache_clear());
    cr_assert_eq(tiers_count(dir, ".meta") + tiers_count(dir, ".so"), 0);
    wb_spec_free(s2);
    wb_spec_free(s);
    tiers_rm(dir);
}

/* A compiler stand-in that runs cc, at a path of about 2,600 bytes under
   dir. */
static void tiers_deep_cc(const char *dir, const char *name, char *path,
                          size_t size)
{
    char seg[201];
    memset(seg, 'd', 200);
    seg[200] = '\0';
    int n = snprintf(path, size, "%s", dir);
    for (int i = 0; i < 13; i++) {
        n += snprintf(path + n, size - (size_t)n, "/%s", seg);
        cr_assert(mkdir(path, 0700) == 0 || errno == EEXIST);
    }
    snprintf(path + n, size - (size_t)n, "/%s", name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\nexec cc \"$@\"\n");
    fclose(f);
    chmod(path, 0700);
}

Test(tiers, disk_cache_explains_long_compiler_paths_whole)
{
    char *dir = tiers_cache_dir(), *why = NULL;
    char then[3000], now[3000];
    wb_spec *s = tiers_spec("deep_cc");
    wb_options o = {.tier = WB_TIER_CC};
    wb_wrapper *w = NULL;
    tiers_deep_cc(dir, "cc-then", then, sizeof then);
    tiers_deep_cc(dir, "cc-now", now, sizeof now);
    o.cc = then;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    wb_wrapper_free(w);
    o.cc = now;
    WBT_OK(wb_cache_explain(s, &o, &why));
    cr_assert_not_null(strstr(why, "differs in: the compiler"), "%.200s",
                       why);
    char *at_then = strstr(why, then), *at_now = strstr(why, now);
    cr_assert(at_then && at_now, "both compilers named whole");
    cr_assert_str_eq(at_now + strlen(now), " now)");
    free(why);
    wb_spec_free(s);
    tiers_rm(dir);
}

Test(tiers, damaged_disk_entries_are_rebuilt)
{
    char *dir = tiers_cache_dir();
    wb_spec *s = tiers_spec("damaged");
    wb_cache_stats st;
    char path[512];
    wb_wrapper_free(wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC));
    /* Truncate the object, then flip a byte of the next one. */
    for (int round = 0; round < 2; round++) {
        DIR *d = opendir(dir);
        struct dirent *de;
        while ((de = readdir(d)))
            if (strstr(de->d_name, ".so"))
                snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        closedir(d);
        if (round == 0) {
            cr_assert_eq(truncate(path, 100), 0);
        } else {
            FILE *f = fopen(path, "r+b");
            fseek(f, 200, SEEK_SET);
            int ch = fgetc(f);
            fseek(f, 200, SEEK_SET);
            fputc(ch ^ 0x5a, f);
            fclose(f);
        }
        char *why = NULL;
        WBT_OK(wb_cache_explain(s, NULL, &why));
        cr_assert_not_null(strstr(why, "is missing, cut short or altered"),
                           "%s", why);
        free(why);
        wb_wrapper *w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
        cr_assert_not_null(strstr(wb_wrapper_note(w), "rebuilt"), "note: %s",
                           wb_wrapper_note(w));
        cr_assert_eq(tiers_check_calls(w, 5, 1), 0);
        wb_wrapper_free(w);
    }
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_rebuilt, 2);
    /* A damaged entry file is rebuilt as well. */
    tiers_find(dir, ".meta", path, sizeof path);
    tiers_write(path, "wrapbake-cache 1\nsource nonsense\n");
    tiers_explains(s, "its record is unreadable", "a garbled record");
    wb_wrapper *w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
    cr_assert_eq(tiers_check_calls(w, 5, 1), 0);
    wb_wrapper_free(w);
    /* So is a whole entry file that names another source than its key. */
    char text[4096];
    tiers_read(path, text, sizeof text);
    char *src = strstr(text, "\nsource ");
    cr_assert_not_null(src);
    src[8] = src[8] == '0' ? '1' : '0';
    tiers_write(path, text);
    tiers_explains(s, "does not match its key", "another source");
    w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
    cr_assert_eq(tiers_check_calls(w, 5, 1), 0);
    wb_wrapper_free(w);
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_rebuilt, 4);
    cr_assert_eq(st.disk_hits, 0);
    wb_spec_free(s);
    tiers_rm(dir);
}

/* A record holds each field once, whole and well formed: one that does not
   is damaged, and is rebuilt, not loaded.  The compile time alone, a
   figure for notes that another locale may write with a comma, reads as 0
   when it is not a finite time. */
Test(tiers, disk_records_with_fields_twice_missing_or_malformed_are_damaged)
{
    static const struct {
        const char *field, *value; /* NULL value: the line left out */
        bool twice;
    } bad[] = {
        {"abi", "1x", false},          {"abi", "99999999999", false},
        {"abi", "+2", false},          {"bytes", "0x10", false},
        {"bytes", "-5", false},        {"spec", NULL, false},
        {"compile-ms", NULL, false},   {"flags", NULL, true},
        {"object", NULL, true},
    };
    char *dir = tiers_cache_dir();
    wb_spec *s = tiers_spec("records");
    char path[512], good[4096], text[8192];
    wb_wrapper_free(wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC));
    tiers_find(dir, ".meta", path, sizeof path);
    tiers_read(path, good, sizeof good);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        /* The good record, its line of the field replaced or repeated. */
        char *out = text;
        for (char *line = good; *line;) {
            size_t len = strcspn(line, "\n") + 1;
            size_t name = strlen(bad[i].field);
            bool hit = !strncmp(line, bad[i].field, name) && line[name] == ' ';
            if (!hit || bad[i].twice)
                out += sprintf(out, "%.*s", (int)len, line);
            if (hit && bad[i].value)
                out += sprintf(out, "%s %s\n", bad[i].field, bad[i].value);
            else if (hit && bad[i].twice)
                out += sprintf(out, "%.*s", (int)len, line);
            line += len;
        }
        cr_assert_neq(strcmp(text, good), 0, "case %zu changes the record", i);
        char what[64];
        snprintf(what, sizeof what, "%s %s", bad[i].field,
                 bad[i].value   ? bad[i].value
                 : bad[i].twice ? "twice"
                                : "left out");
        tiers_write(path, text);
        tiers_explains(s, "its record is unreadable", what);
        tiers_write(path, good);
        tiers_explains(s, "hit: ", "the good record again");
    }
    char *ms = strstr(good, "\ncompile-ms ");
    cr_assert_not_null(ms);
    snprintf(text, sizeof text, "%.*s\ncompile-ms nan%s", (int)(ms - good),
             good, strchr(ms + 1, '\n'));
    tiers_write(path, text);
    tiers_explains(s, "bytes, 0.0 ms to compile)", "compile-ms nan");
    wb_spec_free(s);
    tiers_rm(dir);
}

/* Uses up every file descriptor but free ones; returns how many it took,
   their numbers in fds (room for max). */
static int tiers_hog_fds(int *fds, int max, int free_left)
{
    int n = 0;
    while (n < max && (fds[n] = dup(0)) >= 0)
        n++;
    cr_assert_lt(n, max, "descriptors ran out");
    for (int i = 0; i < free_left; i++)
        close(fds[--n]);
    return n;
}

/* An entry that cannot be read for want of file descriptors is not
   damaged: it is kept, and loads once there are descriptors again. */
Test(tiers, an_entry_unread_for_want_of_descriptors_is_kept)
{
    static int fds[256];
    char *dir = tiers_cache_dir(), *why;
    wb_spec *s = tiers_spec("scarce");
    struct rlimit lim;
    wb_wrapper_free(wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC));
    cr_assert_eq(getrlimit(RLIMIT_NOFILE, &lim), 0);
    struct rlimit low = {200, lim.rlim_max};
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
    int n = tiers_hog_fds(fds, 256, 1);
    wb_status explained = wb_cache_explain(s, NULL, &why);
    wb_options o = {.tier = WB_TIER_CC};
    wb_wrapper *w = NULL;
    wb_status built = wb_wrapper_new(s, tiers_graph, NULL, &o, &w);
    while (n > 0)
        close(fds[--n]);
    cr_assert_eq(explained, WB_OK);
    cr_assert_not_null(strstr(why, "could not be read: out of memory or "
                              "file descriptors"), "%s", why);
    free(why);
    cr_assert_neq(built, WB_OK, "a compile with one descriptor");
    wb_wrapper_free(w);
    cr_assert_eq(tiers_count(dir, ".meta"), 1);
    cr_assert_eq(tiers_count(dir, ".so"), 1);
    WBT_OK(wb_cache_explain(s, NULL, &why));
    cr_assert_not_null(strstr(why, "hit: "), "%s", why);
    free(why);
    wb_spec_free(s);
    tiers_rm(dir);
}

/* Builds a cc wrapper of a spec named name with the compiler wbt-cc
   found on path (saved: the PATH to put back), and checks that the disk
   entry's record in dir names script as the compiler. */
static void tiers_key_names(const char *name, const char *path,
                            const char *saved, const char *dir,
                            const char *script)
{
    char meta[512], text[4096], want[256];
    wb_spec *s = tiers_spec(name);
    wb_options o = {.tier = WB_TIER_CC, .cc = "wbt-cc"};
    wb_wrapper *w = NULL;
    setenv("PATH", path, 1);
    wb_status st = wb_wrapper_new(s, tiers_graph, NULL, &o, &w);
    setenv("PATH", saved, 1);
    cr_assert_eq(st, WB_OK, "%s", wb_last_error());
    wb_wrapper_free(w);
    tiers_find(dir, ".meta", meta, sizeof meta);
    tiers_read(meta, text, sizeof text);
    snprintf(want, sizeof want, "\ncompiler-path %s\n", script);
    cr_assert_not_null(strstr(text, want), "wanted%s in:\n%s", want, text);
    wb_spec_free(s);
}

/* The disk key names the compiler the library finds on PATH and runs: an
   empty entry of PATH is the current directory, as for execvp. */
Test(tiers, the_disk_key_names_the_compiler_the_spawn_runs)
{
    char *dir = tiers_cache_dir(), bin[64], cwd[512], script[128];
    const char *path = getenv("PATH");
    char *saved = strdup(path ? path : "/usr/bin:/bin"), *spawned;
    snprintf(bin, sizeof bin, "/tmp/wbt-bin-XXXXXX");
    cr_assert_not_null(mkdtemp(bin));
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(script, sizeof script, "%s/wbt-cc", bin);
    tiers_write(script, "#!/bin/sh\nexec cc \"$@\"\n");
    cr_assert_eq(chmod(script, 0755), 0);
    spawned = malloc(strlen(saved) + 2);
    cr_assert_not_null(spawned);
    sprintf(spawned, ":%s", saved);
    cr_assert_eq(chdir(bin), 0);
    tiers_key_names("pathcc", spawned, saved, dir, script);
    cr_assert_eq(chdir(cwd), 0);
    free(spawned);
    free(saved);
    tiers_rm(bin);
    tiers_rm(dir);
}

/* A directory of the compiler's name earlier on PATH is passed over, as
   execvp passes over it: the key names the file that runs. */
Test(tiers, the_disk_key_passes_over_a_directory_of_the_compilers_name)
{
    char *dir = tiers_cache_dir(), first[64], second[64], path[512];
    char script[128];
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "/usr/bin:/bin");
    snprintf(first, sizeof first, "/tmp/wbt-bin1-XXXXXX");
    snprintf(second, sizeof second, "/tmp/wbt-bin2-XXXXXX");
    cr_assert_not_null(mkdtemp(first));
    cr_assert_not_null(mkdtemp(second));
    snprintf(script, sizeof script, "%s/wbt-cc", first);
    cr_assert_eq(mkdir(script, 0755), 0);
    snprintf(script, sizeof script, "%s/wbt-cc", second);
    tiers_write(script, "#!/bin/sh\nexec cc \"$@\"\n");
    cr_assert_eq(chmod(script, 0755), 0);
    snprintf(path, sizeof path, "%s:%s:%s", first, second, saved);
    tiers_key_names("pathdir", path, saved, dir, script);
    free(saved);
    tiers_rm(first);
    tiers_rm(second);
    tiers_rm(dir);
}

/* A compiler stand-in in dir, named name: it marks that it ran (dir's
   "ran-NAME", or mark when given) and runs cc.  Into path (n bytes). */
static void tiers_marking_cc(const char *dir, const char *name,
                             const char *mark, char *path, size_t n)
{
    char text[512], ran[256];
    if (!mark) {
        snprintf(ran, sizeof ran, "%s/ran-%s", dir, name);
        mark = ran;
    }
    snprintf(path, n, "%s/%s", dir, name);
    snprintf(text, sizeof text, "#!/bin/sh\n: >'%s'\nexec cc \"$@\"\n", mark);
    tiers_write(path, text);
    cr_assert_eq(chmod(path, 0755), 0);
}

/* A cc wrapper with compiler cc is refused for why, naming the file:
   nothing ran (no mark), nothing is in the cache directory cache; an
   auto wrapper stays on tcc and says the same. */
static void tiers_compiler_refused(wb_spec *s, const char *cc,
                                   const char *file, const char *why,
                                   const char *mark, const char *cache)
{
    char want[600];
    wb_options o = {.tier = WB_TIER_CC, .cc = cc};
    wb_wrapper *w = NULL;
    snprintf(want, sizeof want, "cannot run the system compiler '%s': %s "
             "is not trusted: %s", cc, file, why);
    WBT_FAILS(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_ERR_COMPILE,
              want);
    cr_assert_null(w);
    o.tier = WB_TIER_AUTO;
    o.promote_calls = 1;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert_eq(tiers_check_calls(w, 3, 0), 0);
    const char *note = tiers_assert_stays_on_tcc(w);
    cr_assert_not_null(strstr(note, want), "note: %s", note);
    wb_wrapper_free(w);
    char *explained;
    o.tier = WB_TIER_CC;
    WBT_OK(wb_cache_explain(s, &o, &explained));
    cr_assert_eq(strncmp(explained, "refused: ", 9), 0, "%s", explained);
    cr_assert_not_null(strstr(explained, want), "%s", explained);
    free(explained);
    cr_assert_neq(access(mark, F_OK), 0, "the compiler ran");
    cr_assert_eq(tiers_count(cache, ".meta") + tiers_count(cache, ".so"), 0,
                 "something was stored");
}

/* The system compiler is held to the rules of a file the library loads
   code from: another user who could replace it, its directory or a link
   on the way would run code as this user (root too, whose environment
   may come from a user's shell) and fill this user's disk cache.  It is
   refused, saying which and why, and runs once the way is the user's. */
Test(tiers, a_compiler_another_user_could_replace_is_refused, .timeout = 90)
{
    char *cache = tiers_cache_dir(), dir[64], cc[128], mark[128];
    char link[128], ldir[64];
    wb_spec *s = tiers_spec("theirs_cc");
    wb_options o = {.tier = WB_TIER_CC};
    wb_wrapper *w = NULL;
    snprintf(dir, sizeof dir, "/tmp/wbt-ccdir-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    tiers_marking_cc(dir, "wbt-cc", NULL, cc, sizeof cc);
    snprintf(mark, sizeof mark, "%s/ran-wbt-cc", dir);
    /* A directory others can write. */
    cr_assert_eq(chmod(dir, 0777), 0);
    char why[200];
    snprintf(why, sizeof why, "%s is writable by others and not sticky",
             dir);
    tiers_compiler_refused(s, cc, cc, why, mark, cache);
    /* The file itself. */
    cr_assert_eq(chmod(dir, 0700), 0);
    cr_assert_eq(chmod(cc, 0775), 0);
    tiers_compiler_refused(s, cc, cc, "it is writable by its group (mode "
                           "775)", mark, cache);
    cr_assert_eq(chmod(cc, 0755), 0);
    if (geteuid() == 0) {
        /* A directory of another user's, the file another user's, and a
           link of another user's, the last one on the way. */
        cr_assert_eq(chown(dir, 65534, 65534), 0);
        snprintf(why, sizeof why, "%s belongs to uid 65534", dir);
        tiers_compiler_refused(s, cc, cc, why, mark, cache);
        cr_assert_eq(chown(dir, 0, 0), 0);
        cr_assert_eq(chown(cc, 65534, 65534), 0);
        tiers_compiler_refused(s, cc, cc, "it belongs to uid 65534, neither "
                               "this user (uid 0) nor root", mark, cache);
        cr_assert_eq(chown(cc, 0, 0), 0);
        snprintf(ldir, sizeof ldir, "/tmp/wbt-cclink-XXXXXX");
        cr_assert_not_null(mkdtemp(ldir));
        snprintf(link, sizeof link, "%s/cc", ldir);
        cr_assert_eq(symlink(cc, link), 0);
        cr_assert_eq(lchown(link, 65534, 65534), 0);
        snprintf(why, sizeof why, "%s belongs to uid 65534", link);
        tiers_compiler_refused(s, link, link, why, mark, cache);
        /* The same link the user's: it is followed, and the disk key
           names the file it leads to, which is the file that ran. */
        cr_assert_eq(lchown(link, 0, 0), 0);
        o.cc = link;
        WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
        wb_wrapper_free(w);
        cr_assert_eq(access(mark, F_OK), 0, "the compiler did not run");
        cr_assert_eq(unlink(mark), 0);
        char meta[512], text[4096], want[256];
        tiers_find(cache, ".meta", meta, sizeof meta);
        tiers_read(meta, text, sizeof text);
        snprintf(want, sizeof want, "\ncompiler-path %s\n", cc);
        cr_assert_not_null(strstr(text, want), "wanted%s in:\n%s", want,
                           text);
        WBT_OK(wb_cache_clear());
        tiers_rm(ldir);
    }
    /* Kept as the rules ask, the same compiler runs and is stored. */
    o.cc = cc;
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    cr_assert_eq(tiers_check_calls(w, 2, 0), 0);
    wb_wrapper_free(w);
    cr_assert_eq(access(mark, F_OK), 0, "the compiler did not run");
    cr_assert_eq(tiers_count(cache, ".meta"), 1);
    wb_spec_free(s);
    tiers_rm(dir);
    tiers_rm(cache);
    if (geteuid() != 0)
        cr_skip_test("the cases of another user's files need root "
                     "(uid 65534)");
}

/* The compiler is looked for on PATH once, by the library, and the file
   found is the one checked, keyed and run: a compiler found first in a
   directory others can write is refused (not passed over for a later
   one, which execvp would not run either), and an auto wrapper runs the
   compiler found when it was made, whatever PATH says when it
   promotes. */
Test(tiers, the_compiler_found_on_path_is_the_one_checked_and_run,
     .timeout = 90)
{
    char *cache = tiers_cache_dir(), open_dir[64], first[64], later[64];
    char cc[128], other[128], path[1024], why[200], mark[128];
    const char *old = getenv("PATH");
    char *saved = strdup(old ? old : "/usr/bin:/bin");
    wb_spec *s = tiers_spec("path_cc");
    wb_wrapper *w = NULL;
    snprintf(open_dir, sizeof open_dir, "/tmp/wbt-ccopen-XXXXXX");
    snprintf(first, sizeof first, "/tmp/wbt-ccfirst-XXXXXX");
    snprintf(later, sizeof later, "/tmp/wbt-cclater-XXXXXX");
    cr_assert_not_null(mkdtemp(open_dir));
    cr_assert_not_null(mkdtemp(first));
    cr_assert_not_null(mkdtemp(later));
    tiers_marking_cc(open_dir, "wbt-cc", NULL, cc, sizeof cc);
    snprintf(mark, sizeof mark, "%s/ran-wbt-cc", open_dir);
    cr_assert_eq(chmod(open_dir, 0777), 0);
    tiers_marking_cc(first, "wbt-cc", NULL, other, sizeof other);
    snprintf(path, sizeof path, "%s:%s:%s", open_dir, first, saved);
    setenv("PATH", path, 1);
    snprintf(why, sizeof why, "%s is writable by others and not sticky",
             open_dir);
    tiers_compiler_refused(s, "wbt-cc", cc, why, mark, cache);
    snprintf(mark, sizeof mark, "%s/ran-wbt-cc", first);
    cr_assert_neq(access(mark, F_OK), 0, "a later compiler on PATH ran");
    /* Found in first when the wrapper is made; PATH then names later. */
    snprintf(path, sizeof path, "%s:%s", first, saved);
    setenv("PATH", path, 1);
    wb_options o = {.tier = WB_TIER_AUTO, .promote_calls = 1,
                    .cc = "wbt-cc"};
    WBT_OK(wb_wrapper_new(s, tiers_graph, NULL, &o, &w));
    tiers_marking_cc(later, "wbt-cc", NULL, other, sizeof other);
    snprintf(path, sizeof path, "%s:%s", later, saved);
    setenv("PATH", path, 1);
    cr_assert_eq(tiers_check_calls(w, 1, 0), 0);
    const char *note = tiers_wait_note(w);
    setenv("PATH", saved, 1);
    cr_assert_eq(wb_wrapper_tier(w), WB_TIER_CC, "note: %s", note);
    wb_wrapper_free(w);
    cr_assert_eq(access(mark, F_OK), 0, "the compiler found did not run");
    snprintf(mark, sizeof mark, "%s/ran-wbt-cc", later);
    cr_assert_neq(access(mark, F_OK), 0, "PATH was searched again");
    free(saved);
    wb_spec_free(s);
    tiers_rm(open_dir);
    tiers_rm(first);
    tiers_rm(later);
    tiers_rm(cache);
}

/* A compiler script reached through a link of another name is run by
   that name: the way found is spawned, its links kept, so a script that
   takes its part from $0, as wrappers do, sees the link's name. */
Test(tiers, a_compiler_script_reached_through_a_link_sees_the_links_name,
     .timeout = 60)
{
    char *cache = tiers_cache_dir(), dir[64], script[128], link[128];
    snprintf(dir, sizeof dir, "/tmp/wbt-cclink-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(script, sizeof script, "%s/ccwrap.sh", dir);
    snprintf(link, sizeof link, "%s/mycc", dir);
    FILE *f = fopen(script, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\ncase \"$(basename \"$0\")\" in\n"
               "mycc) exec cc \"$@\" ;;\n"
               "*) echo \"called as $0\" >&2; exit 1 ;;\nesac\n");
    fclose(f);
    cr_assert_eq(chmod(script, 0700), 0);
    cr_assert_eq(symlink("ccwrap.sh", link), 0);
    wb_spec *s = tiers_spec("link_cc");
    wb_options o = {.tier = WB_TIER_CC, .cc = link};
    wb_wrapper *w = NULL;
    cr_assert_eq(wb_wrapper_new(s, tiers_graph, NULL, &o, &w), WB_OK, "%s",
                 wb_last_error());
    cr_assert_eq(wb_wrapper_tier(w), WB_TIER_CC);
    cr_assert_eq(tiers_check_calls(w, 2, 0), 0);
    wb_wrapper_free(w);
    wb_spec_free(s);
    tiers_rm(dir);
    tiers_rm(cache);
}

Test(tiers, disk_cache_stays_under_its_size_bound)
{
    char *dir = tiers_cache_dir();
    wb_cache_stats st;
    /* Room for about one entry. */
    setenv("WRAPBAKE_CACHE_MAX", "20000", 1);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "bound%d", i);
        /* Different code, not only a different name: equal code is
           stored once. */
        wb_spec *s = tiers_spec(name);
        for (int k = 0; k < i; k++)
            WBT_OK(wb_spec_add_tensor(s, "extra", WB_MUT_NONE, 0, NULL));
        wb_wrapper_free(wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC));
        wb_spec_free(s);
    }
    wb_cache_stats_get(&st);
    cr_assert_eq(st.disk_evicted, 2);
    cr_assert_eq(tiers_count(dir, ".meta"), 1);
    cr_assert_eq(tiers_count(dir, ".so"), 1);
    /* The one kept is the newest. */
    char *why;
    wb_spec *s = tiers_spec("bound2");
    for (int k = 0; k < 2; k++)
        WBT_OK(wb_spec_add_tensor(s, "extra", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_cache_explain(s, NULL, &why));
    cr_assert_eq(strncmp(why, "hit", 3), 0, "%s", why);
    free(why);
    wb_spec_free(s);
    tiers_rm(dir);
}

/* Writes an object file of bytes bytes named by hash letter c, modified
   age_s seconds ago, into dir; returns its path. */
static const char *tiers_orphan(const char *dir, char c, int bytes, int age_s,
                                char *path, size_t size)
{
    char name[WB_FINGERPRINT_LEN + 1];
    memset(name, c, WB_FINGERPRINT_LEN);
    name[WB_FINGERPRINT_LEN] = '\0';
    snprintf(path, size, "%s/%s.so", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < bytes; i++)
        fputc(0, f);
    fclose(f);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age_s;
    t[1] = t[0];
    cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
    return path;
}

Test(tiers, disk_cache_over_its_bound_drops_objects_no_entry_names)
{
    char *dir = tiers_cache_dir(), old[512], young[512];
    wb_cache_stats a, b;
    setenv("WRAPBAKE_CACHE_MAX", "20000", 1);
    /* What a crash between object and entry leaves, an hour ago and just
       now (maybe another process about to write its entry). */
    tiers_orphan(dir, 'a', 30000, 3600, old, sizeof old);
    tiers_orphan(dir, 'b', 100, 0, young, sizeof young);
    wb_cache_stats_get(&a);
    wb_spec *s = tiers_spec("orphans");
    wb_wrapper_free(wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC));
    wb_cache_stats_get(&b);
    cr_assert_neq(access(old, F_OK), 0, "the old orphan stayed");
    cr_assert_eq(access(young, F_OK), 0, "the young orphan went");
    cr_assert_eq(b.disk_evicted, a.disk_evicted, "no entry went");
    cr_assert_eq(tiers_count(dir, ".meta"), 1);
    cr_assert_eq(tiers_count(dir, ".so"), 2);
    wb_spec_free(s);
    unsetenv("WRAPBAKE_CACHE_MAX");
    tiers_rm(dir);
}

Test(tiers, processes_fill_one_disk_cache_at_once, .timeout = 240)
{
    char *dir = tiers_cache_dir();
    enum { PROCS = 6 };
    pid_t pid[PROCS];
    for (int p = 0; p < PROCS; p++) {
        if ((pid[p] = fork()) == 0) {
            /* Half the processes race on one spec, half on their own. */
            char name[32];
            snprintf(name, sizeof name, "race%d", p % 2 ? p : 0);
            wb_spec *s = tiers_spec(name);
            wb_options o = {.tier = WB_TIER_CC};
            wb_wrapper *w = NULL;
            int rc = wb_wrapper_new(s, tiers_graph, NULL, &o, &w) != WB_OK ? 1
                     : tiers_check_calls(w, 20, 0) != 0                   ? 2
                                                                          : 0;
            wb_wrapper_free(w);
            wb_spec_free(s);
            _exit(rc);
        }
        cr_assert_gt(pid[p], 0);
    }
    for (int p = 0; p < PROCS; p++) {
        int status;
        cr_assert_eq(waitpid(pid[p], &status, 0), pid[p]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "process %d failed (status %d)", p, status);
    }
    /* Every entry is whole: each spec now loads from disk.  The specs
       differ only in name, so their code is one object. */
    cr_assert_eq(tiers_count(dir, ".meta"), 4);
    cr_assert_eq(tiers_count(dir, ".so"), 1);
    const char *names[] = {"race0", "race1", "race3", "race5"};
    for (int i = 0; i < 4; i++) {
        wb_spec *s = tiers_spec(names[i]);
        wb_wrapper *w = wbt_wrap(s, tiers_graph, NULL, WB_TIER_CC);
        cr_assert_not_null(strstr(wb_wrapper_note(w), "loaded from the "
                                  "disk cache"), "%s: %s", names[i],
                           wb_wrapper_note(w));
        cr_assert_eq(tiers_check_calls(w, 5, 0), 0);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
    tiers_rm(dir);
}

/* ---- batches ---- */

Test(tiers, batch_compiles_many_specs_at_once)
{
    enum { N = 40 };
    wb_spec *specs[N];
    wb_graph_fn graphs[N];
    wb_wrapper *ws[N];
    wb_cache_stats a, b;
    for (int i = 0; i < N; i++) {
        char name[32];
        /* Every fourth spec repeats an earlier one: shared, not compiled
           twice. */
        snprintf(name, sizeof name, "batch%d", i % 4 == 3 ? i - 1 : i);
        specs[i] = tiers_spec(name);
        graphs[i] = tiers_graph;
    }
    wb_cache_stats_get(&a);
    WBT_OK(wb_wrappers_new(N, (const wb_spec *const *)specs, graphs, NULL,
                           NULL, ws));
    wb_cache_stats_get(&b);
    cr_assert_eq(b.compiled - a.compiled, N - N / 4);
    cr_assert_eq(b.shared - a.shared, N / 4);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(wb_wrapper_tier(ws[i]), WB_TIER_TCC);
        cr_assert_eq(tiers_check_calls(ws[i], 3, (float)i), 0, "wrapper %d",
                     i);
    }
    /* Freed in any order, the shared block stays until the last. */
    for (int i = 0; i < N; i += 2)
        wb_wrapper_free(ws[i]);
    for (int i = 1; i < N; i += 2)
        cr_assert_eq(tiers_check_calls(ws[i], 2, 1), 0);
    for (int i = 1; i < N; i += 2)
        wb_wrapper_free(ws[i]);
    for (int i = 0; i < N; i++)
        wb_spec_free(specs[i]);
}

Test(tiers, a_batch_is_all_or_nothing)
{
    wb_spec *specs[3] = {tiers_spec("ok0"), tiers_spec("ok1"), NULL};
    wb_graph_fn graphs[3] = {tiers_graph, tiers_graph, tiers_graph};
    wb_wrapper *ws[3] = {NULL, NULL, NULL};
    /* The third spec is invalid: an output aliasing a missing input. */
    WBT_OK(wb_spec_new("bad", &specs[2]));
    WBT_OK(wb_spec_add_tensor(specs[2], "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_output(specs[2], "v", WB_OUT_ALIAS_OF_INPUT, 5, true,
                              1, NULL));
    WBT_FAILS(wb_wrappers_new(3, (const wb_spec *const *)specs, graphs, NULL,
                              NULL, ws), WB_ERR_SPEC, "spec 'bad'");
    for (int i = 0; i < 3; i++) {
        cr_assert_null(ws[i]);
        wb_spec_free(specs[i]);
    }
}
