/*
 * scale.c -- the specs of wrapbake-bench --scale, and the runs of this
 * program under callgrind that count their instructions.
 *
 * A scaling spec grows one thing: args_N takes N tensors (a list of known
 * length, an input per element) and returns one new tensor, mutations_N
 * mutates each of its N inputs, views_N returns N views of its one input.
 * Every input is a declared float32 2-d CPU tensor, as in bench/cases.txt.
 * Each is named by what it grows and its size, so that `wrapbake-bench
 * --case views_100` times one alone and the counting modes run it under
 * callgrind.
 */
#define _GNU_SOURCE /* environ, CPU_COUNT */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

const char *const bench_scale_kinds[BENCH_SCALE_KINDS] = {"args", "mutations",
                                                          "views"};
const int bench_scale_sizes[BENCH_SCALE_SIZES] = {1, 10, 100, 1000};

bool bench_scale_name(const char *name, int *kind, int *n)
{
    for (int k = 0; k < BENCH_SCALE_KINDS; k++) {
        size_t len = strlen(bench_scale_kinds[k]);
        if (strncmp(name, bench_scale_kinds[k], len) || name[len] != '_')
            continue;
        for (int i = 0; i < BENCH_SCALE_SIZES; i++) {
            char size[16];
            snprintf(size, sizeof size, "%d", bench_scale_sizes[i]);
            if (!strcmp(name + len + 1, size)) {
                *kind = k;
                *n = bench_scale_sizes[i];
                return true;
            }
        }
    }
    return false;
}

/* Appends to the text at *buf, of *len bytes, growing it. */
static void bench_put(char **buf, size_t *len, size_t *cap, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

static void bench_put(char **buf, size_t *len, size_t *cap, const char *fmt,
                      ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < *cap - *len) {
            *len += (size_t)k;
            return;
        }
        char *p = realloc(*buf, *cap * 2);
        if (k < 0 || !p)
            bench_die("--scale", "out of memory");
        *buf = p;
        *cap *= 2;
    }
}

char *bench_scale_text(int kind, int n)
{
    static const char decl[] = "[dtype=float32, ndim=2, device=cpu]";
    size_t len = 0, cap = 4096;
    char *t = malloc(cap);
    if (!t)
        bench_die("--scale", "out of memory");
    t[0] = '\0';
    bench_put(&t, &len, &cap, "%s_%d(", bench_scale_kinds[kind], n);
    if (kind == BENCH_SCALE_VIEWS) {
        bench_put(&t, &len, &cap, "Tensor(a) x %s) -> (", decl);
        for (int i = 0; i < n; i++)
            bench_put(&t, &len, &cap, "%sTensor(a) v%d", i ? ", " : "", i);
        bench_put(&t, &len, &cap, ")");
        return t;
    }
    bench_put(&t, &len, &cap, "Tensor%s[%d] x %s",
              kind == BENCH_SCALE_MUTATIONS ? "(a!)" : "", n, decl);
    bench_put(&t, &len, &cap, ") -> Tensor out");
    return t;
}

/* ---- counting under callgrind ---- */

const char *bench_callgrind_version(char *buf, size_t n)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    (void)buf;
    (void)n;
    return "valgrind cannot run a sanitizer build";
#else
    FILE *p = popen("valgrind --version 2>/dev/null", "r");
    buf[0] = '\0';
    bool ok = p && fgets(buf, (int)n, p) && !strncmp(buf, "valgrind-", 9);
    if (p && pclose(p) != 0)
        ok = false;
    buf[strcspn(buf, "\n")] = '\0';
    return ok ? NULL : "valgrind does not run here (apt-get install valgrind)";
#endif
}

/* The instructions callgrind's log at path counts, or -1. */
static long long bench_log_refs(const char *path)
{
    char line[256];
    long long refs = -1;
    FILE *f = fopen(path, "r");
    while (f && refs < 0 && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, " refs:");
        if (!p)
            continue;
        refs = 0;
        for (p += 6; *p && *p != '\n'; p++)
            if (*p >= '0' && *p <= '9')
                refs = refs * 10 + (*p - '0');
            else if (*p != ',' && *p != ' ')
                refs = -1;
    }
    if (f)
        fclose(f);
    return refs;
}

/* Starts run r, its log at path: its process, or -1 with errno set. */
static pid_t bench_spawn(const char *self, const bench_run *r,
                         const char *path)
{
    char log[320];  /* paths are at most 300 bytes (bench_callgrind) */
    const char *argv[8 + BENCH_RUN_ARGS] = {"valgrind", "--tool=callgrind",
                                            "--callgrind-out-file=/dev/null",
                                            log, self};
    int argc = 5;
    snprintf(log, sizeof log, "--log-file=%.300s", path);
    for (int i = 0; i < r->nargs; i++)
        argv[argc++] = r->args[i];
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int err = posix_spawn_file_actions_init(&fa);
    if (!err) {
        err = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY,
                                               0);
        if (!err)
            err = posix_spawnp(&pid, "valgrind", &fa, NULL, (char **)argv,
                               environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    errno = err;
    return err ? -1 : pid;
}

/* The CPUs this process may run on. */
static int bench_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The end of the log at path (valgrind's reason for a failed run, or
   the program's) on stderr, and into what, of n bytes, which run it was. */
static void bench_run_failed(const bench_run *r, const char *path,
                             char *what, size_t n)
{
    char line[256], tail[5][256];
    int k = snprintf(what, n, "a counting run failed:"), nl = 0;
    for (int i = 0; i < r->nargs && k < (int)n; i++)
        k += snprintf(what + k, n - (size_t)k, " %s", r->args[i]);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        snprintf(tail[nl++ % 5], sizeof tail[0], "%s", line);
    if (f)
        fclose(f);
    for (int i = nl > 5 ? nl - 5 : 0; i < nl; i++)
        fprintf(stderr, "  %s", tail[i % 5]);
}

void bench_callgrind(bench_run *runs, int n)
{
    enum { most = 16 };
    char self[4096], dir[256], path[most][300], kept[300];
    pid_t pids[most] = {0};
    const char *t = getenv("TMPDIR");
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0 || len >= (ssize_t)sizeof self - 1)
        bench_die("--scale", "cannot find this program's file");
    self[len] = '\0';
    snprintf(dir, sizeof dir, "%s/wrapbake-scale-XXXXXX",
             t && *t && strlen(t) < 200 ? t : "/tmp");
    if (!mkdtemp(dir))
        bench_die("--scale: temporary directory", strerror(errno));
    snprintf(kept, sizeof kept, "%s/failed.log", dir);
    int cpus = bench_cpus(), workers = cpus < most ? cpus : most;
    int of[most], next = 0, running = 0, failed = -1, spawn_err = 0;
    /* After a failure no run starts, and the ones running are waited for,
       so that none outlives the program or writes into the directory; of
       the runs that failed, the first in order is named, with its log. */
    while ((next < n && failed < 0) || running) {
        for (int w = 0; w < workers && next < n && failed < 0; w++)
            if (!pids[w]) {
                snprintf(path[w], sizeof path[w], "%s/run-%d.log", dir, w);
                if ((pids[w] = bench_spawn(self, &runs[next], path[w])) < 0) {
                    pids[w] = 0;
                    spawn_err = errno;
                    failed = next;
                    break;
                }
                of[w] = next++;
                running++;
            }
        if (!running)
            break;
        int status;
        pid_t pid = wait(&status);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0)
            bench_die("--scale", strerror(errno));
        for (int w = 0; w < workers; w++) {
            if (pids[w] != pid)
                continue;
            bench_run *r = &runs[of[w]];
            r->refs = bench_log_refs(path[w]);
            bool bad = !WIFEXITED(status) || WEXITSTATUS(status) ||
                       r->refs < 0;
            if (bad && !spawn_err && (failed < 0 || of[w] < failed)) {
                failed = of[w];
                rename(path[w], kept);
            }
            unlink(path[w]);
            pids[w] = 0;
            running--;
        }
    }
    char why[400];
    if (spawn_err)
        snprintf(why, sizeof why, "cannot start valgrind: %s",
                 strerror(spawn_err));
    else if (failed >= 0)
        bench_run_failed(&runs[failed], kept, why, sizeof why);
    unlink(kept);
    rmdir(dir);
    if (failed >= 0)
        bench_die("--scale", why);
}
