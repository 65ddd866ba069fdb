/*
 * cc.c -- the cc tier: the emitted C built by the system compiler.
 *
 * The source is the one the tcc tier compiles.  The system compiler turns
 * it into a shared object in a private temporary directory; dlopen loads
 * it.  A shared object cannot see the helpers of a statically linked
 * library, so a header forced in front of the source renames every helper
 * the code calls into a function pointer of the object's own
 * (`#define wb_rt_x (*wb_rt_x_ptr)`): the prototypes the emitter writes
 * become pointer definitions with the very same types, and the loader
 * fills them in after dlopen.  No process address reaches the object, so
 * one object serves every process through the disk cache.
 *
 * The compiler runs without a shell: argv is the compiler command split at
 * blanks plus fixed flags and paths of our own making.  The program its
 * first word names is found once (on $PATH for a bare word) and checked
 * as a file code is loaded from (wb_cc_resolve); that resolved path is
 * spawned, and named by the disk key.  It runs under a time limit, and
 * its diagnostics land in the error message.
 *
 * A wrapper's cc code comes from the in-process cache (cache.c) when it is
 * shared and there, else from the disk cache (disk.c) when an entry loads,
 * else from the compiler, whose object then goes to both caches.  Objects
 * are loaded from a directory of the user's alone (wb_cc_tmpdir): one from
 * the disk cache as a copy of the very bytes whose hash was checked
 * (wb_cc_load_bytes), never from the cache's own path.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "disk.h"
#include "tiers.h"
#include "../spec/spec.h"
#include "../gen/gen.h"

extern char **environ;

/* Whether execve would run the file at path: a regular file this user
   may execute.  execvp passes over a directory of the name (execve
   refuses it), and so does the search below. */
static bool wb_cc_runnable(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) &&
           faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
}

/* name, joined to dir when dir is not "", as an absolute path into out
   (PATH_MAX bytes): a relative one is taken from the working directory,
   as the kernel takes it.  False when it does not fit or there is no
   working directory. */
static bool wb_cc_absolute(const char *dir, size_t dirlen, const char *name,
                           char *out)
{
    char cwd[PATH_MAX + 1] = "";
    if ((dirlen ? dir[0] : name[0]) != '/') {
        if (!getcwd(cwd, PATH_MAX))
            return false;
        strcat(cwd, "/");
    }
    int n = dirlen ? snprintf(out, PATH_MAX, "%s%.*s/%s", cwd, (int)dirlen,
                              dir, name)
                   : snprintf(out, PATH_MAX, "%s%s", cwd, name);
    if (n < 0 || n >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return false;
    }
    return true;
}

/* Finds the program the command's first word names, once, as execvp
   finds it (a word with a slash names a file, from the working directory
   when relative; a bare word is looked for on $PATH, "/bin:/usr/bin"
   without one, an empty entry being the working directory, in the first
   entry that holds a file this user may execute), and checks it as the
   library checks a file it loads code from (wb_rt_unsafe_file): the file
   and every directory and link on the way to it must be the user's or
   root's and writable by nobody else.  The compiler runs as the user
   does, on the user's data, and its output is loaded into the process
   and stored in the user's disk cache: a program another user could
   replace would run as this user, root too.  That path is the one
   spawned, its links kept (each checked, so only the user or root can
   change what they name), and, resolved, the one the disk key names: the
   file checked is the file that runs.  Sets c->spawn and c->path, or
   c->why; false out of memory. */
static bool wb_cc_resolve(wb_cc_opts *c)
{
    const char *cmd = c->argv[0];
    char found[PATH_MAX] = "", real[PATH_MAX], unsafe[PATH_MAX + 64];
    char shown[PATH_MAX], why[sizeof unsafe + PATH_MAX + 32];
    int err = ENOENT;
    if (strchr(cmd, '/')) {
        /* What execve says of it: what stat says, else EACCES for what
           is not a regular file this user may execute. */
        struct stat sb;
        if (!wb_cc_absolute("", 0, cmd, found) || stat(found, &sb) != 0)
            err = errno;
        else
            err = wb_cc_runnable(found) ? 0 : EACCES;
    } else {
        const char *path = wb_rt_getenv("PATH");
        if (!path)
            path = "/bin:/usr/bin";
        for (;;) {
            size_t len = strcspn(path, ":");
            /* execvp goes past what it cannot run, and says EACCES when
               something of the name was there. */
            if (wb_cc_absolute(path, len, cmd, found)) {
                if (wb_cc_runnable(found)) {
                    err = 0;
                    break;
                }
                if (errno == EACCES || access(found, F_OK) == 0)
                    err = EACCES;
            }
            if (!path[len])
                break;
            path += len + 1;
        }
    }
    if (err) {
        c->why = strdup(strerror(err));
        return c->why;
    }
    if (!wb_rt_unsafe_file(found, real, unsafe, sizeof unsafe)) {
        c->path = strdup(real);
        c->spawn = strdup(found);
        return c->path && c->spawn;
    }
    /* errno is 0 after a refusal, else the walk could not look. */
    if (errno)
        snprintf(why, sizeof why, "%s", unsafe);
    else
        snprintf(why, sizeof why, "%s is not trusted: %s",
                 wb_rt_printable(found, shown, sizeof shown), unsafe);
    c->why = strdup(why);
    return c->why;
}

wb_status wb_cc_opts_init(const wb_options *o, wb_cc_opts *out)
{
    const char *cmd = o && o->cc ? o->cc : wb_rt_getenv("CC");
    if (!cmd || !*cmd)
        cmd = "cc";
    memset(out, 0, sizeof *out);
    out->timeout_s = o && o->cc_timeout_s ? o->cc_timeout_s : 60;
    out->disk_cache = !(o && (o->flags & WB_OPT_NO_DISK_CACHE));
    /* Split at blanks: at most one word per two bytes. */
    size_t len = strlen(cmd);
    char *copy = malloc(len + 1);
    out->argv = calloc(len / 2 + 2, sizeof *out->argv);
    if (!copy || !out->argv) {
        free(copy);
        free(out->argv);
        out->argv = NULL;
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for the compiler "
                          "command");
    }
    memcpy(copy, cmd, len + 1);
    out->words = copy;
    /* strtok_r: wrappers are built on many threads at once. */
    char *save;
    for (char *p = strtok_r(copy, " \t", &save); p;
         p = strtok_r(NULL, " \t", &save))
        out->argv[out->argc++] = p;
    if (out->argc == 0) {
        wb_cc_opts_free(out);
        return wb_rt_fail(WB_ERR_INVALID, "the compiler command is blank");
    }
    wb_rt_printable(out->argv[0], out->shown, sizeof out->shown);
    if (!wb_cc_resolve(out)) {
        wb_cc_opts_free(out);
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for the compiler "
                          "command");
    }
    return WB_OK;
}

wb_status wb_cc_runnable_or_fail(const wb_cc_opts *cc)
{
    if (cc->path)
        return WB_OK;
    return wb_rt_fail(WB_ERR_COMPILE, "cannot run the system compiler '%s': "
                      "%s", cc->shown, cc->why);
}

void wb_cc_opts_free(wb_cc_opts *c)
{
    if (c) {
        free(c->words);
        free(c->argv);
        free(c->path);
        free(c->spawn);
        free(c->why);
        c->words = NULL;
        c->argv = NULL;
        c->path = c->spawn = c->why = NULL;
    }
}

/* Writes n bytes of data to a new file at path. */
static wb_status wb_cc_write(const char *path, const void *data, size_t n)
{
    char shown[PATH_MAX];
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
    if (fd < 0) {
        int e = errno;
        return wb_rt_fail(WB_ERR_COMPILE, "cannot create %s: %s",
                          wb_rt_printable(path, shown, sizeof shown),
                          strerror(e));
    }
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, (const char *)data + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = errno;
            close(fd);
            return wb_rt_fail(WB_ERR_COMPILE, "cannot write %s: %s",
                              wb_rt_printable(path, shown, sizeof shown),
                              strerror(e));
        }
        done += (size_t)k;
    }
    close(fd);
    return WB_OK;
}

wb_status wb_cc_tmpdir(char dir[PATH_MAX])
{
    const char *t = wb_rt_getenv("TMPDIR");
    char why[PATH_MAX + 64], real[PATH_MAX], shown[PATH_MAX];
    if (!t || !*t)
        t = "/tmp";
    /* The files in it are reached by path (the compiler and dlopen take
       paths), so no one else may be able to rename it away. */
    if (wb_rt_unsafe_path(t, true, real, why, sizeof why))
        return wb_rt_fail(WB_ERR_COMPILE, "no private directory for the "
                          "system compiler: %s", why);
    /* Every file in it must fit PATH_MAX, or a name cut short could be
       another's (the source and the object one file): the longest is an
       object named by its hash, "<hex>.so". */
    int n = snprintf(dir, PATH_MAX, "%s/wrapbake-XXXXXX",
                     strcmp(real, "/") ? real : "");
    if (n < 0 || n + 1 + WB_FINGERPRINT_LEN + 3 >= PATH_MAX)
        return wb_rt_fail(WB_ERR_COMPILE, "name too long: the system "
                          "compiler's files in %s would be longer than "
                          "PATH_MAX (%d bytes); set TMPDIR to a shorter "
                          "directory", wb_rt_printable(t, shown, sizeof shown),
                          PATH_MAX);
    if (!mkdtemp(dir)) {
        int e = errno;
        return wb_rt_fail(WB_ERR_COMPILE, "cannot make a private directory "
                          "for the system compiler in %s: %s",
                          wb_rt_printable(t, shown, sizeof shown),
                          strerror(e));
    }
    return WB_OK;
}

/* How deep the tree a compiler leaves in its directory is removed. */
#define WB_CC_TMPDIR_DEPTH 16

/* Empties the directory open as fd (which it closes), and the directories
   in it down to depth levels, following no link: a link is removed, never
   what it leads to. */
static void wb_cc_empty(int fd, int depth)
{
    DIR *d = fdopendir(fd);
    struct dirent *de;
    if (!d) {
        close(fd);
        return;
    }
    while ((de = readdir(d))) {
        struct stat sb;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!S_ISDIR(sb.st_mode)) {
            unlinkat(dirfd(d), de->d_name, 0);
            continue;
        }
        int sub = depth > 0 ? openat(dirfd(d), de->d_name,
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                         O_CLOEXEC)
                            : -1;
        if (sub >= 0)
            wb_cc_empty(sub, depth - 1);
        unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

void wb_cc_tmpdir_free(const char *dir)
{
    /* The compiler may have made directories of its own in it. */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        wb_cc_empty(fd, WB_CC_TMPDIR_DEPTH);
    rmdir(dir);
}

/* The forced header: one renaming per helper of ours. */
static char *wb_cc_bind_header(void)
{
    size_t cap = 128;
    for (const wb_rt_symbol *y = wb_rt_symbols; y->name; y++)
        cap += 2 * strlen(y->name) + 24;
    char *h = malloc(cap), *p = h;
    if (!h)
        return NULL;
    p += sprintf(p, "/* wrapbake cc tier: helpers bound by the loader */\n");
    for (const wb_rt_symbol *y = wb_rt_symbols; y->name; y++)
        if (strncmp(y->name, "wb_", 3) == 0)
            p += sprintf(p, "#define %s (*%s_ptr)\n", y->name, y->name);
    return h;
}

/* The first bytes of the compiler's diagnostics file, for a message, into
   buf (n bytes).  The compiler may have left anything at its name: it is
   opened as the disk cache opens entries, without following a link or
   blocking on a FIFO, and read only when it is a regular file (of any
   size: only its head is read).  Its lines are folded into one, and every
   other byte that is not printable ASCII is shown as \xHH. */
static void wb_cc_read_head(const char *path, char *buf, size_t n)
{
    char raw[1024];
    struct stat sb;
    ssize_t k;
    buf[0] = '\0';
    int fd = wb_disk_open_file(AT_FDCWD, path, -1, false, &sb);
    if (fd < 0)
        return;
    while ((k = read(fd, raw, sizeof raw - 1)) < 0 && errno == EINTR)
        ;
    close(fd);
    raw[k > 0 ? k : 0] = '\0';
    size_t len = strlen(raw);
    bool ends = len > 0 && raw[len - 1] == '\n';
    raw[len - ends] = '\0';
    for (char *p = raw; *p; p++)
        if (*p == '\n')
            *p = ' ';
    wb_rt_printable(raw, buf, n - ends);
    if (ends)
        strcat(buf, "\n");
}

/* Whether the system reaps this process's children itself: SIGCHLD set
   to SIG_IGN or handled with SA_NOCLDWAIT.  No wait can then read the
   compiler's exit status.  The disposition is the host's: it is read,
   never changed. */
static bool wb_cc_children_reaped(void)
{
    struct sigaction sa;
    return sigaction(SIGCHLD, NULL, &sa) == 0 &&
           (sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT));
}

/* Runs the program at path (the one wb_cc_resolve found and checked:
   no search again) with argv (cmd: argv[0] printable, which the program
   gets as the word given), with stdout and stderr in diag,
   within timeout_s seconds, until cancel turns true.  Returns the exit
   status, -1 with a message set when it could not run, was killed or
   timed out, or its status was lost: a compiler that failed, or was
   killed halfway through writing the object, is not told apart from one
   that succeeded by what it left. */
static int wb_cc_run(const char *path, char **argv, const char *cmd,
                     const char *diag, uint32_t timeout_s,
                     const atomic_bool *cancel)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    pid_t pid;
    int rc, status;
    if (wb_cc_children_reaped()) {
        wb_rt_fail(WB_ERR_COMPILE, "cannot run the system compiler '%s': "
                   "SIGCHLD is ignored in this process (SIG_IGN or "
                   "SA_NOCLDWAIT), so the compiler's exit status would be "
                   "lost", cmd);
        return -1;
    }
    if (posix_spawn_file_actions_init(&fa) != 0) {
        wb_rt_fail(WB_ERR_NOMEM, "cannot start the system compiler");
        return -1;
    }
    if (posix_spawnattr_init(&attr) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        wb_rt_fail(WB_ERR_NOMEM, "cannot start the system compiler");
        return -1;
    }
    posix_spawn_file_actions_addopen(&fa, 1, diag,
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* A group of its own, so that stopping it stops what the driver runs
       (cc1, as, ld) too. */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    rc = posix_spawn(&pid, path, &fa, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        wb_rt_fail(WB_ERR_COMPILE, "cannot run the system compiler '%s': "
                   "%s", cmd, strerror(rc));
        return -1;
    }
    double deadline = wb_now_ms() + 1000.0 * timeout_s;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            break;
        if (got < 0 && errno != EINTR) {
            /* SIGCHLD came to be ignored after the check above, or another
               part of the process waited for any child. */
            wb_rt_fail(WB_ERR_COMPILE, "the exit status of the system "
                       "compiler '%s' was lost: SIGCHLD is ignored in this "
                       "process, or another part of it reaped the compiler",
                       cmd);
            return -1;
        }
        bool stop = cancel && atomic_load(cancel);
        if (stop || wb_now_ms() > deadline) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            wb_rt_fail(WB_ERR_COMPILE, stop ? "the system compiler was "
                       "stopped: the wrapper was freed" : "the system "
                       "compiler '%s' ran past its limit of %u s",
                       cmd, timeout_s);
            return -1;
        }
        struct timespec nap = {0, 500000};
        nanosleep(&nap, NULL);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    wb_rt_fail(WB_ERR_COMPILE, "the system compiler '%s' died of signal %d",
               cmd, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return -1;
}

wb_status wb_cc_build(const wb_cc_opts *cc, const char *source,
                      const char *dir, char **path, const atomic_bool *cancel)
{
    /* dir is wb_cc_tmpdir's, whose names all fit PATH_MAX. */
    char src[PATH_MAX], bind[PATH_MAX], obj[PATH_MAX], diag[PATH_MAX];
    wb_status st;
    snprintf(src, sizeof src, "%s/wrapper.c", dir);
    snprintf(bind, sizeof bind, "%s/bind.h", dir);
    snprintf(obj, sizeof obj, "%s/wrapper.so", dir);
    snprintf(diag, sizeof diag, "%s/diagnostics.txt", dir);
    if ((st = wb_cc_runnable_or_fail(cc)) != WB_OK)
        return st;
    char *header = wb_cc_bind_header();
    if (!header)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for the cc tier");
    st = wb_cc_write(bind, header, strlen(header));
    free(header);
    if (st != WB_OK ||
        (st = wb_cc_write(src, source, strlen(source))) != WB_OK)
        return st;

    const char *tail[] = {"-include", bind, "-o", obj, src};
    int ntail = (int)(sizeof tail / sizeof *tail);
    char flags[] = WB_CC_FLAGS;
    char **argv = calloc((size_t)cc->argc + sizeof flags / 2 + (size_t)ntail +
                             1, sizeof *argv);
    if (!argv)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for the cc tier");
    int k = 0;
    for (int i = 0; i < cc->argc; i++)
        argv[k++] = cc->argv[i];
    char *save;
    for (char *f = strtok_r(flags, " ", &save); f;
         f = strtok_r(NULL, " ", &save))
        argv[k++] = f;
    for (int i = 0; i < ntail; i++)
        argv[k++] = (char *)tail[i];
    int rc = wb_cc_run(cc->spawn, argv, cc->shown, diag, cc->timeout_s,
                       cancel);
    free(argv);
    if (rc < 0)
        return WB_ERR_COMPILE;
    if (rc != 0 || faccessat(AT_FDCWD, obj, R_OK, AT_EACCESS) != 0) {
        char text[1500];
        wb_cc_read_head(diag, text, sizeof text);
        return wb_rt_fail(WB_ERR_COMPILE, "the system compiler '%s' failed "
                          "(exit %d): %s", cc->shown, rc,
                          text[0] ? text : "no diagnostics");
    }
    if (!(*path = strdup(obj)))
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for the cc tier");
    return WB_OK;
}

/* ---- loading ---- */

typedef struct wb_cc_code {
    wb_code code;  /* first */
    void *handle;
} wb_cc_code;

static void wb_cc_destroy(wb_code *c)
{
    wb_cc_code *cc = (wb_cc_code *)c;
    wb_code_uncache(c);
    wb_rt_inside_dependency++;
    dlclose(cc->handle);
    wb_rt_inside_dependency--;
    free(c->note);
    free(cc);
}

static wb_status wb_cc_load_locked(const char *path, const char *fn,
                                   wb_code **code)
{
    /* The path is under $TMPDIR, and the loader's words name it. */
    char shown[PATH_MAX];
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        return wb_rt_fail(WB_ERR_COMPILE, "cannot load the compiled "
                          "wrapper: %s", wb_rt_printable(e ? e : path, shown,
                                                         sizeof shown));
    }
    void *entry = dlsym(h, fn);
    if (!entry) {
        dlclose(h);
        return wb_rt_fail(WB_ERR_COMPILE, "the compiled wrapper %s has no "
                          "function '%s'",
                          wb_rt_printable(path, shown, sizeof shown), fn);
    }
    /* Binds each helper the code declares.  Rebinding an object another
       wrapper loaded writes the same addresses. */
    for (const wb_rt_symbol *y = wb_rt_symbols; y->name; y++) {
        char name[128];
        snprintf(name, sizeof name, "%s_ptr", y->name);
        wb_rt_fnptr *slot = dlsym(h, name);
        if (slot)
            *slot = y->addr;
    }
    wb_cc_code *c = calloc(1, sizeof *c);
    if (!c) {
        dlclose(h);
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for compiled code");
    }
    atomic_init(&c->code.refs, 1);
    c->code.tier = WB_TIER_CC;
    memcpy(&c->code.entry, &entry, sizeof entry);
    c->code.destroy = wb_cc_destroy;
    c->handle = h;
    *code = &c->code;
    return WB_OK;
}

/* Equal code from different sources is one object, and dlopen hands every
   load of it the same handle: binds are serialized so that two loads never
   write its pointers at once. */
pthread_mutex_t wb_cc_bind_lock = PTHREAD_MUTEX_INITIALIZER;

wb_status wb_cc_load(const char *path, const char *fn, wb_code **code)
{
    pthread_mutex_lock(&wb_cc_bind_lock);
    wb_rt_inside_dependency++;
    wb_status st = wb_cc_load_locked(path, fn, code);
    wb_rt_inside_dependency--;
    pthread_mutex_unlock(&wb_cc_bind_lock);
    return st;
}

/* The file an object is loaded from is named by the hash of its bytes:
   dlopen hands back the object already loaded under a name without
   opening the file, so a name reused for other bytes (a private
   directory's random name made again) would run the old code. */
wb_status wb_cc_load_bytes(const void *bytes, size_t n, const char *hex,
                           const char *fn, wb_code **code)
{
    char dir[PATH_MAX], path[PATH_MAX + 80];
    wb_status st = wb_cc_tmpdir(dir);
    if (st != WB_OK)
        return st;
    snprintf(path, sizeof path, "%s/%s.so", dir, hex);
    if ((st = wb_cc_write(path, bytes, n)) == WB_OK)
        st = wb_cc_load(path, fn, code);
    unlink(path);
    rmdir(dir);
    return st;
}

/* ---- the cc code, through the disk cache ---- */

/* Compiles source on the cc tier, through the disk cache when allowed.
   An object is stored only once it has loaded and its entry point was
   found, so a compiler that writes garbage leaves none behind.  An entry
   is removed only when it is damaged: one that is whole but does not load
   here (no private directory, a full disk) stays for processes it loads
   in, and this one compiles its own. */
static wb_status wb_cc_code_disk(const char *source, const wb_cc_opts *cc,
                                 const wb_disk_key *k, const char *spec,
                                 const atomic_bool *cancel, wb_code **out)
{
    char tmp[PATH_MAX], *built = NULL, *bytes = NULL;
    char why[sizeof ((wb_disk *)0)->why + 600] = " (disk cache off)";
    wb_disk d = {.fd = -1};
    wb_disk_found got = WB_DISK_NONE;
    wb_disk_meta m;
    struct stat sb;
    double ms = 0;
    wb_status st;
    if (cc->disk_cache && !wb_disk_open(&d, true))
        snprintf(why, sizeof why, " (disk cache off: %s)", d.why);
    if (d.fd >= 0) {
        snprintf(why, sizeof why, " (not in the disk cache yet)");
        got = wb_disk_find(&d, k, &m, &bytes);
        if (got == WB_DISK_HIT) {
            st = wb_cc_load_bytes(bytes, (size_t)m.bytes, m.object,
                                  WB_EMIT_FN, out);
            free(bytes);
            if (st == WB_OK) {
                wb_disk_touch(&d, k);
                wb_disk_close(&d);
                wb_cache_count(WB_STAT_DISK_HITS, m.compile_ms);
                snprintf(why, sizeof why, "cc: loaded from the disk cache "
                         "(entry %.16s, which took %.1f ms to compile)",
                         k->key, m.compile_ms);
                (*out)->note = strdup(why);
                return WB_OK;
            }
            snprintf(why, sizeof why, " (its disk cache entry did not load "
                     "here: %s)", wb_last_error());
        } else if (got == WB_DISK_UNREAD) {
            snprintf(why, sizeof why, " (its disk cache entry could not be "
                     "read: out of memory or file descriptors)");
        } else if (got == WB_DISK_FOREIGN) {
            snprintf(why, sizeof why, " (not stored: something the disk "
                     "cache did not make is at its entry's name)");
        } else if (got != WB_DISK_NONE) {
            wb_disk_forget(&d, k, &m);
            snprintf(why, sizeof why, " (a damaged disk cache entry was "
                     "rebuilt)");
        }
        wb_cache_count(got == WB_DISK_BAD_RECORD || got == WB_DISK_BAD_OBJECT
                           ? WB_STAT_DISK_REBUILT : WB_STAT_DISK_MISSES, 0);
    }
    if ((st = wb_cc_tmpdir(tmp)) != WB_OK) {
        wb_disk_close(&d);
        return st;
    }
    double t0 = wb_now_ms();
    st = wb_cc_build(cc, source, tmp, &built, cancel);
    ms = wb_now_ms() - t0;
    /* Read once: named by its hash for the load (see wb_cc_load_bytes),
       and stored, both from these bytes. */
    char *obj = NULL, named[PATH_MAX + 80], hex[WB_FINGERPRINT_LEN + 1];
    int fd = st == WB_OK ? wb_disk_open_file(AT_FDCWD, built,
                                             WB_DISK_OBJECT_MAX, false, &sb)
                         : -1;
    if (fd >= 0) {
        errno = 0;
        obj = wb_disk_slurp(fd, (size_t)sb.st_size);
        if (!obj && errno == ENOMEM)
            st = wb_rt_fail(WB_ERR_NOMEM, "out of memory for the compiled "
                            "object");
        close(fd);
    }
    char shown[PATH_MAX];
    if (st == WB_OK && !obj)
        st = wb_rt_fail(WB_ERR_COMPILE, "cannot read the object the system "
                        "compiler wrote (%s)",
                        wb_rt_printable(built, shown, sizeof shown));
    if (st == WB_OK) {
        wb_sha256_str(obj, (size_t)sb.st_size, hex);
        snprintf(named, sizeof named, "%s/%s.so", tmp, hex);
        if (rename(built, named) == 0) {
            st = wb_cc_load(named, WB_EMIT_FN, out);
        } else {
            int e = errno;
            st = wb_rt_fail(WB_ERR_COMPILE, "cannot rename the compiled "
                            "object in %s: %s",
                            wb_rt_printable(tmp, shown, sizeof shown),
                            strerror(e));
        }
    }
    if (st == WB_OK && d.fd >= 0 && got != WB_DISK_FOREIGN) {
        int gone = 0;
        if (!wb_disk_store(&d, k, obj, (size_t)sb.st_size, ms, spec, &gone))
            snprintf(why, sizeof why, " (it could not be stored in the disk "
                     "cache)");
        for (int i = 0; i < gone; i++)
            wb_cache_count(WB_STAT_DISK_EVICTED, 0);
    }
    free(obj);
    free(built);
    wb_cc_tmpdir_free(tmp);
    if (st == WB_OK) {
        char note[sizeof why + 300];
        wb_cache_count(WB_STAT_COMPILED, 0);
        snprintf(note, sizeof note, "cc: compiled by '%s' in %.1f ms%s",
                 cc->shown, ms, why);
        (*out)->note = strdup(note);
    }
    wb_disk_close(&d);
    return st;
}

wb_status wb_cc_allowed(void)
{
    if (wb_rt_privileged())
        return wb_rt_fail(WB_ERR_UNSUPPORTED, "the cc tier runs no system "
                          "compiler in a process running with privileges "
                          "its user lacks (setuid, file capabilities)");
    return WB_OK;
}

wb_status wb_cc_code_get(const char *source, bool share, const wb_cc_opts *cc,
                         const char *spec, const atomic_bool *cancel,
                         wb_code **out)
{
    wb_disk_key k;
    wb_status st;
    /* Nothing is looked up, compiled or stored for a compiler that is
       missing or that another user could replace. */
    if ((st = wb_cc_allowed()) != WB_OK ||
        (st = wb_cc_runnable_or_fail(cc)) != WB_OK)
        return st;
    wb_disk_key_make(source, cc, &k);
    if (share && (*out = wb_cache_find(WB_TIER_CC, k.key, NULL)))
        return WB_OK;
    if ((st = wb_cc_code_disk(source, cc, &k, spec, cancel, out)) != WB_OK)
        return st;
    memcpy((*out)->key, k.key, sizeof k.key);
    if (share)
        wb_cache_insert(*out);
    return WB_OK;
}

/* Why a cc wrapper of spec would hit or miss the disk cache: the key it
   would look up (the generated C, the compiler, the flags), then what
   the cache holds under it (disk.c). */
wb_status wb_cache_explain(const wb_spec *spec, const wb_options *options,
                           char **out)
{
    char *source = NULL, name[300];
    wb_spec *copy = NULL;
    wb_cc_opts cc;
    wb_disk_key k;
    wb_status st;
    if (!spec || !out)
        return wb_rt_fail(WB_ERR_INVALID, "wb_cache_explain: NULL spec or "
                          "out");
    if (options && (options->flags & ~WB_OPT_ALL))
        return wb_rt_fail(WB_ERR_INVALID, "wb_cache_explain: unknown option "
                          "flags 0x%x", options->flags & ~WB_OPT_ALL);
    if ((st = wb_spec_clone(spec, &copy)) != WB_OK ||
        (st = wb_spec_validate(copy)) != WB_OK ||
        (st = wb_emit(copy, WB_EMIT_FN, WB_EMIT_LINES, &source)) != WB_OK ||
        (st = wb_cc_opts_init(options, &cc)) != WB_OK) {
        wb_spec_free(copy);
        free(source);
        return st;
    }
    wb_spec_free(copy);
    /* A refused compiler looks nothing up (wb_cc_code_get). */
    if (!cc.path) {
        size_t n = strlen(cc.shown) + strlen(cc.why) + 80;
        if ((*out = malloc(n)))
            snprintf(*out, n, "refused: cannot run the system compiler "
                     "'%s': %s; nothing is looked up", cc.shown, cc.why);
        wb_cc_opts_free(&cc);
        free(source);
        return *out ? WB_OK
                    : wb_rt_fail(WB_ERR_NOMEM, "out of memory for an "
                                 "explanation");
    }
    wb_disk_key_make(source, &cc, &k);
    wb_cc_opts_free(&cc);
    free(source);
    wb_spec_print_name(spec->name, name, sizeof name);
    return wb_disk_explain(&k, name, out);
}
