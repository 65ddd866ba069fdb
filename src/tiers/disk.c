/*
 * disk.c -- the disk cache of cc-tier objects, and what it trusts.
 *
 * Entries live in one directory:
 *
 *   <dir>/<key>.meta    the entry: what the key was made of, and the object
 *   <dir>/<object>.so   the object, named by the SHA-256 of its bytes
 *
 * where key is the SHA-256 of the source hash, the compiler's identity, the
 * flags and WB_ABI_VERSION.  An object is written under a temporary name
 * and renamed, then its entry the same way, so a reader sees a whole entry
 * or none, and processes filling one key at once each leave a whole one.
 *
 * The objects are shared libraries that wb_wrapper_new loads into the
 * process, often one running as root or as a service: whoever can write
 * the directory can run code there.  So the cache keeps the rules ssh and
 * ccache keep for their own files:
 *
 *   - The directory must belong to the effective user and be writable by
 *     nobody else, and nobody else may be able to change its way
 *     (wb_rt_unsafe_path).  Otherwise the disk cache is off: nothing in the
 *     directory is read, written or removed, and the wrapper's note and
 *     wb_cache_explain say why.
 *   - An entry is read only when it is a regular file of the user's,
 *     writable by nobody else, of bounded size, opened without following a
 *     link or blocking on a FIFO.  Anything else at an entry's name is
 *     ignored: never loaded, replaced or removed.
 *   - The cache touches only names it makes (64 hex digits and .so or
 *     .meta, and its own .tmp- files), so a directory shared with other
 *     files loses none of them.
 *   - The bytes hashed are the bytes loaded.  An object is read once and
 *     hashed in memory, and the caller loads that copy from a private
 *     directory (wb_cc_load_bytes): by the time dlopen opened the cache's
 *     path again, it could name other bytes.
 *
 * The directory is held open and every file is reached relative to it
 * (openat, renameat, unlinkat), so what is checked is the directory used.
 * Since nobody else may write it, a name checked with fstatat still names
 * the same file when it is then renamed over or removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "disk.h"

/* ---- names and trust ---- */

/* Whether s starts with n lowercase hex digits. */
static bool wb_disk_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* Whether name is one the cache makes: 64 hex digits then ext. */
static bool wb_disk_named(const char *name, const char *ext)
{
    return wb_disk_hex(name, WB_FINGERPRINT_LEN) &&
           strcmp(name + WB_FINGERPRINT_LEN, ext) == 0;
}

/* Whether name is one of the cache's temporary files: .tmp-PID-SEQ. */
static bool wb_disk_tmpname(const char *name)
{
    size_t a, b;
    if (strncmp(name, ".tmp-", 5) != 0)
        return false;
    name += 5;
    a = strspn(name, "0123456789");
    if (a == 0 || name[a] != '-')
        return false;
    b = strspn(name + a + 1, "0123456789");
    return b > 0 && name[a + 1 + b] == '\0';
}

/* Whether a file's owner and mode let the cache trust it: the effective
   user's, writable by nobody else. */
static bool wb_disk_owned(const struct stat *sb)
{
    return sb->st_uid == geteuid() && !(sb->st_mode & (S_IWGRP | S_IWOTH));
}

int wb_disk_open_file(int dirfd, const char *name, off_t max, bool strict,
                      struct stat *sb)
{
    struct stat first;
    /* Looked at before it is opened: opening a device can have effects of
       its own.  The open then checks that it got that very file. */
    if (fstatat(dirfd, name, &first, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    int fd = S_ISREG(first.st_mode)
                 ? openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
                                           O_NOCTTY | O_CLOEXEC)
                 : (errno = EINVAL, -1);
    if (fd < 0)
        return -1;
    if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode) ||
        sb->st_ino != first.st_ino || sb->st_dev != first.st_dev ||
        (max >= 0 && sb->st_size > max) ||
        (strict && !wb_disk_owned(sb))) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

char *wb_disk_slurp(int fd, size_t n)
{
    char *buf = malloc(n + 1), extra;
    size_t done = 0;
    int err = buf ? 0 : ENOMEM;
    while (!err && done < n) {
        ssize_t k = read(fd, buf + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            err = k < 0 ? errno : EINVAL;  /* cut short */
            break;
        }
        done += (size_t)k;
    }
    if (!err && read(fd, &extra, 1) != 0)
        err = EINVAL;  /* longer than its size */
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* Whether name is any of the cache's own: an entry, an object or a
   temporary file. */
static bool wb_disk_own_name(const char *name)
{
    return wb_disk_named(name, ".meta") || wb_disk_named(name, ".so") ||
           wb_disk_tmpname(name);
}

/* What is at name in the directory, without following a link. */
typedef enum wb_disk_at_kind {
    WB_DISK_AT_NOTHING,  /* no such name */
    WB_DISK_AT_OTHER,    /* anything but a regular file of the user's,
                            writable by nobody else (or unreadable) */
    WB_DISK_AT_OURS      /* such a file; *sb describes it */
} wb_disk_at_kind;

static wb_disk_at_kind wb_disk_at(const wb_disk *d, const char *name,
                                  struct stat *sb)
{
    if (fstatat(d->fd, name, sb, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? WB_DISK_AT_NOTHING : WB_DISK_AT_OTHER;
    return S_ISREG(sb->st_mode) && wb_disk_owned(sb) ? WB_DISK_AT_OURS
                                                     : WB_DISK_AT_OTHER;
}

/* Removes name when it holds a file the cache may remove, a regular file
   of the user's: 1 when removed, 0 when it is not one (or is gone), -1
   when removing it failed (errno says why). */
static int wb_disk_unlink(const wb_disk *d, const char *name)
{
    struct stat sb;
    if (wb_disk_at(d, name, &sb) != WB_DISK_AT_OURS)
        return 0;
    if (unlinkat(d->fd, name, 0) == 0)
        return 1;
    return errno == ENOENT ? 0 : -1;
}

/* Whether the cache may put a file at name: nothing is there, or one of
   its own files. */
static bool wb_disk_replaceable(const wb_disk *d, const char *name)
{
    struct stat sb;
    return wb_disk_at(d, name, &sb) != WB_DISK_AT_OTHER;
}

/* ---- the directory ---- */

/* The cache directory into buf: $WRAPBAKE_CACHE_DIR, else
   $XDG_CACHE_HOME/wrapbake, else $HOME/.cache/wrapbake.  A relative
   XDG_CACHE_HOME or HOME is ignored, as the XDG specification says; a
   relative WRAPBAKE_CACHE_DIR is refused.  NULL, or why there is none. */
static const char *wb_disk_dir(char *buf, size_t n)
{
    const char *d = wb_rt_getenv("WRAPBAKE_CACHE_DIR");
    const char *x = wb_rt_getenv("XDG_CACHE_HOME");
    const char *h = wb_rt_getenv("HOME");
    int k;
    if (d && *d && *d != '/')
        return "WRAPBAKE_CACHE_DIR is not an absolute path";
    if (d && *d)
        k = snprintf(buf, n, "%s", d);
    else if (x && *x == '/')
        k = snprintf(buf, n, "%s/wrapbake", x);
    else if (h && *h == '/')
        k = snprintf(buf, n, "%s/.cache/wrapbake", h);
    else
        return "no cache directory: set WRAPBAKE_CACHE_DIR, "
               "XDG_CACHE_HOME or HOME to an absolute path";
    if (k < 0 || (size_t)k >= n)
        return "the cache directory's path is longer than PATH_MAX";
    return NULL;
}

const char *wb_cache_dir(void)
{
    static _Thread_local char dir[PATH_MAX];
    return wb_disk_dir(dir, sizeof dir) ? NULL : dir;
}

bool wb_disk_mkdirs(const char *path)
{
    /* The way still to walk: path, or a link's target and what followed
       the link, in the buffer the previous one is not in. */
    char way[2][PATH_MAX];
    int cur = 0, links = 0;
    const char *p = path;
    int at = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (at >= 0) {
        char name[NAME_MAX + 1];
        struct stat sb;
        p += strspn(p, "/");
        size_t len = strcspn(p, "/");
        if (len == 0 || len > NAME_MAX) {
            close(at);
            errno = len ? ENAMETOOLONG : 0;
            return len == 0;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        p += len;
        int next = mkdirat(at, name, 0700) == 0 || errno == EEXIST
                       ? openat(at, name, O_RDONLY | O_DIRECTORY |
                                              O_NOFOLLOW | O_CLOEXEC)
                       : -1;
        if (next < 0 && (errno == ENOTDIR || errno == ELOOP) &&
            fstatat(at, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(sb.st_mode) &&
            (sb.st_uid == 0 || sb.st_uid == geteuid())) {
            /* A link of the user's or root's: its target, then the rest,
               walked under the same rule, from the root when absolute. */
            char target[PATH_MAX];
            ssize_t n = readlinkat(at, name, target, sizeof target - 1);
            if (n <= 0) {
                errno = n ? errno : ENOENT;
            } else if (++links > WB_RT_LINKS) {
                errno = ELOOP;
            } else if (target[n] = '\0',
                       snprintf(way[!cur], PATH_MAX, "%s/%s", target, p) >=
                           PATH_MAX) {
                errno = ENAMETOOLONG;
            } else {
                p = way[cur = !cur];
                if (target[0] != '/')
                    continue;  /* at still holds the link */
                next = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            }
        }
        int err = errno;
        close(at);
        errno = err;
        at = next;
    }
    return false;
}

bool wb_disk_open(wb_disk *d, bool create)
{
    char real[PATH_MAX], unsafe[PATH_MAX + 64];
    const char *no;
    struct stat sb;
    d->fd = -1;
    d->absent = false;
    d->why[0] = '\0';
    d->shown[0] = '\0';
    if ((no = wb_disk_dir(d->path, sizeof d->path)) != NULL) {
        d->path[0] = '\0';
        snprintf(d->why, sizeof d->why, "%s", no);
        return false;
    }
    /* Nothing is made, or trusted, where another user could move it: the
       whole way is resolved and checked, link by link; where it does not
       exist yet, the part that does is checked, the rest made, and the
       whole way checked once more.  The directory is opened by the path
       that results, and every later use goes through the descriptor. */
    wb_rt_printable(d->path, d->shown, sizeof d->shown);
    bool found = !wb_rt_unsafe_path(d->path, false, real, unsafe,
                                    sizeof unsafe);
    if (!found && create && errno == ENOENT) {
        if (wb_rt_unsafe_path(d->path, false, NULL, unsafe, sizeof unsafe)) {
            snprintf(d->why, sizeof d->why, "the cache directory %s could "
                     "be moved by another user: %s", d->shown, unsafe);
            return false;
        }
        if (!wb_disk_mkdirs(d->path)) {
            snprintf(d->why, sizeof d->why, "cannot create the cache "
                     "directory %s: %s", d->shown, strerror(errno));
            return false;
        }
        found = !wb_rt_unsafe_path(d->path, false, real, unsafe,
                                   sizeof unsafe);
    }
    if (!found) {
        /* errno is 0 when the way was refused. */
        d->absent = errno == ENOENT;
        if (errno)
            snprintf(d->why, sizeof d->why, "cannot open the cache "
                     "directory %s: %s", d->shown, strerror(errno));
        else
            snprintf(d->why, sizeof d->why, "the cache directory %s could "
                     "be moved by another user: %s", d->shown, unsafe);
        return false;
    }
    int fd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(d->why, sizeof d->why, "cannot open the cache directory "
                 "%s: %s", d->shown, strerror(errno));
        return false;
    }
    if (fstat(fd, &sb) != 0)
        snprintf(d->why, sizeof d->why, "cannot read the cache directory "
                 "%s: %s", d->shown, strerror(errno));
    else if (sb.st_uid != geteuid())
        snprintf(d->why, sizeof d->why, "the cache directory %s belongs to "
                 "uid %u, not to this user (uid %u)", d->shown,
                 (unsigned)sb.st_uid, (unsigned)geteuid());
    else if (sb.st_mode & (S_IWGRP | S_IWOTH))
        snprintf(d->why, sizeof d->why, "the cache directory %s is writable "
                 "by %s (mode %03o)", d->shown,
                 sb.st_mode & S_IWOTH ? "others" : "its group",
                 (unsigned)(sb.st_mode & 0777));
    if (d->why[0]) {
        close(fd);
        return false;
    }
    d->fd = fd;
    return true;
}

void wb_disk_close(wb_disk *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

/* ---- keys and records ---- */

/* The compiler's identity: the command's words, and the binary it runs
   (the path wb_cc_opts_init resolved and checked, which is the one
   spawned; its size and modification time), which changes whenever the
   compiler is replaced or upgraded. */
static void wb_disk_compiler(const wb_cc_opts *cc, wb_disk_key *k)
{
    char text[PATH_MAX + 256];
    const char *found = cc->path ? cc->path : cc->argv[0];
    struct stat sb = {0};
    stat(found, &sb);
    snprintf(k->path, sizeof k->path, "%s", found);
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

void wb_disk_key_make(const char *source, const wb_cc_opts *cc,
                      wb_disk_key *k)
{
    char text[512];
    wb_sha256_str(source, strlen(source), k->source);
    wb_disk_compiler(cc, k);
    k->flags = WB_CC_FLAGS;
    k->abi = WB_ABI_VERSION;
    int n = snprintf(text, sizeof text, "wrapbake-cc\n%s\n%s\n%s\n%d\n",
                     k->source, k->compiler, k->flags, k->abi);
    wb_sha256_str(text, (size_t)n, k->key);
}

/* The entry's file name of k. */
static void wb_disk_meta_name(const wb_disk_key *k, char name[80])
{
    snprintf(name, 80, "%s.meta", k->key);
}

/* Whether a read failed for want of memory or file descriptors, which
   says nothing of the file. */
static bool wb_disk_scarce(int err)
{
    return err == ENOMEM || err == EMFILE || err == ENFILE;
}

/* v, all of it, as a decimal number from 0 to max; -1 when it is not. */
static long long wb_disk_number(const char *v, long long max)
{
    char *end;
    errno = 0;
    long long x = *v >= '0' && *v <= '9' ? strtoll(v, &end, 10) : -1;
    return x >= 0 && !*end && !errno && x <= max ? x : -1;
}

/* Reads the record at name: a line per field, "NAME VALUE", each field
   once (a line of another name is skipped).  1 when it is one of the
   cache's own files holding a whole record, 0 when it is not, -1 when it
   could not be read (wb_disk_scarce). */
static int wb_disk_read_meta(int dirfd, const char *name, wb_disk_meta *m)
{
    /* The text fields first, then the numbers. */
    static const char *const fields[] = {
        "source", "compiler", "object", "compiler-path", "flags", "spec",
        "abi", "bytes", "compile-ms",
    };
    enum { ABI = 6, BYTES, MS, NFIELDS };
    _Static_assert(sizeof fields / sizeof *fields == NFIELDS,
                   "a name per field");
    char *const strs[] = {m->source, m->compiler, m->object, m->path,
                          m->flags, m->spec};
    const size_t caps[] = {sizeof m->source, sizeof m->compiler,
                           sizeof m->object, sizeof m->path,
                           sizeof m->flags, sizeof m->spec};
    struct stat sb;
    unsigned seen = 0;
    bool fine = true;
    memset(m, 0, sizeof *m);
    int fd = wb_disk_open_file(dirfd, name, WB_DISK_META_MAX, true, &sb);
    if (fd < 0)
        return wb_disk_scarce(errno) ? -1 : 0;
    char *text = wb_disk_slurp(fd, (size_t)sb.st_size), *line, *save;
    int err = errno;
    close(fd);
    if (!text)
        return wb_disk_scarce(err) ? -1 : 0;
    line = strtok_r(text, "\n", &save);
    fine = line && strcmp(line, "wrapbake-cache 1") == 0;
    while (fine && (line = strtok_r(NULL, "\n", &save))) {
        char *v = strchr(line, ' ');
        int f = 0;
        if (!v)
            continue;
        *v++ = '\0';
        while (f < NFIELDS && strcmp(line, fields[f]) != 0)
            f++;
        if (f == NFIELDS)
            continue;
        fine = !(seen & 1u << f);
        seen |= 1u << f;
        if (f < ABI) {
            fine = fine && strlen(v) < caps[f];
            snprintf(strs[f], caps[f], "%s", v);
        } else if (f == ABI) {
            long long abi = wb_disk_number(v, INT_MAX);
            fine = fine && abi >= 0;
            m->abi = (int)abi;
        } else if (f == BYTES) {
            m->bytes = wb_disk_number(v, WB_DISK_OBJECT_MAX);
            fine = fine && m->bytes > 0;
        } else {  /* MS */
            /* A figure for notes and statistics alone, which the writer's
               locale may have written with a comma: what is not a finite
               time reads as 0. */
            m->compile_ms = strtod(v, NULL);
            if (!isfinite(m->compile_ms) || m->compile_ms < 0)
                m->compile_ms = 0;
        }
    }
    free(text);
    /* The object's name becomes a file name: only our own form of one. */
    return fine && seen == (1u << NFIELDS) - 1 &&
           strlen(m->object) == WB_FINGERPRINT_LEN &&
           wb_disk_hex(m->object, WB_FINGERPRINT_LEN);
}

/* The object m names, read once and checked against its name and size:
   the bytes, or NULL with errno set (EINVAL: another size or hash). */
static char *wb_disk_read_object(int dirfd, const wb_disk_meta *m)
{
    char name[80], got[WB_FINGERPRINT_LEN + 1];
    struct stat sb;
    snprintf(name, sizeof name, "%s.so", m->object);
    int fd = wb_disk_open_file(dirfd, name, WB_DISK_OBJECT_MAX, true, &sb);
    if (fd < 0)
        return NULL;
    char *bytes = sb.st_size == m->bytes
                      ? wb_disk_slurp(fd, (size_t)m->bytes)
                      : (errno = EINVAL, NULL);
    int err = errno;
    close(fd);
    if (bytes) {
        wb_sha256_str(bytes, (size_t)m->bytes, got);
        if (strcmp(got, m->object) != 0) {
            free(bytes);
            bytes = NULL;
            err = EINVAL;
        }
    }
    errno = err;
    return bytes;
}

wb_disk_found wb_disk_find(const wb_disk *d, const wb_disk_key *k,
                           wb_disk_meta *m, char **bytes)
{
    char name[80];
    struct stat sb;
    memset(m, 0, sizeof *m);
    wb_disk_meta_name(k, name);
    switch (wb_disk_at(d, name, &sb)) {
    case WB_DISK_AT_NOTHING: return WB_DISK_NONE;
    case WB_DISK_AT_OTHER: return WB_DISK_FOREIGN;
    case WB_DISK_AT_OURS: break;
    }
    int got = wb_disk_read_meta(d->fd, name, m);
    if (got <= 0 || strcmp(m->source, k->source) ||
        strcmp(m->compiler, k->compiler) || m->abi != k->abi) {
        m->object[0] = '\0';
        return got < 0 ? WB_DISK_UNREAD : WB_DISK_BAD_RECORD;
    }
    char *obj = wb_disk_read_object(d->fd, m);
    if (!obj)
        return wb_disk_scarce(errno) ? WB_DISK_UNREAD : WB_DISK_BAD_OBJECT;
    if (bytes)
        *bytes = obj;
    else
        free(obj);
    return WB_DISK_HIT;
}

void wb_disk_forget(const wb_disk *d, const wb_disk_key *k,
                    const wb_disk_meta *m)
{
    char name[80];
    if (m->object[0]) {
        snprintf(name, sizeof name, "%s.so", m->object);
        wb_disk_unlink(d, name);
    }
    wb_disk_meta_name(k, name);
    wb_disk_unlink(d, name);
}

void wb_disk_touch(const wb_disk *d, const wb_disk_key *k)
{
    char name[80];
    wb_disk_meta_name(k, name);
    utimensat(d->fd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

/* ---- writing ---- */

/* Writes n bytes of data to name atomically: under a fresh temporary name
   first, then renamed over it, unless something the cache did not make is
   there. */
static bool wb_disk_put(const wb_disk *d, const char *name, const void *data,
                        size_t n)
{
    static atomic_uint seq;
    char tmp[64];
    size_t done = 0;
    if (!wb_disk_replaceable(d, name))
        return false;
    snprintf(tmp, sizeof tmp, ".tmp-%ld-%u", (long)getpid(),
             atomic_fetch_add(&seq, 1));
    int fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                                    O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    while (done < n) {
        ssize_t k = write(fd, (const char *)data + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        done += (size_t)k;
    }
    bool ok = close(fd) == 0 && done == n &&
              renameat(d->fd, tmp, d->fd, name) == 0;
    if (!ok)
        unlinkat(d->fd, tmp, 0);
    return ok;
}

/* $WRAPBAKE_CACHE_MAX bytes, when it is a decimal number that fits,
   else 256 MiB. */
static uint64_t wb_disk_limit(void)
{
    const char *m = wb_rt_getenv("WRAPBAKE_CACHE_MAX");
    char *end;
    if (!m || *m < '0' || *m > '9')
        return 256ull << 20;
    errno = 0;
    unsigned long long v = strtoull(m, &end, 10);
    return *end || errno == ERANGE ? 256ull << 20 : v;
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

/* An object no entry names, or a temporary file, is removed once it is
   this old: younger, it may be one another process is writing, or has
   written and not yet recorded. */
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

/* Removes f, counting its bytes off *total. */
static void wb_disk_drop(const wb_disk *d, wb_disk_file *f, long long *total)
{
    if (!f->gone && wb_disk_unlink(d, f->name) == 1) {
        f->gone = true;
        *total -= f->bytes;
    }
}

/* A listing of the directory's entries of the cache's own; NULL when it
   cannot be read.  The descriptor is duplicated because closedir closes
   the one it was given, and rewound because duplicates share a position. */
static DIR *wb_disk_list(const wb_disk *d)
{
    int fd = fcntl(d->fd, F_DUPFD_CLOEXEC, 0);
    DIR *dir = fd < 0 ? NULL : fdopendir(fd);
    if (!dir) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    rewinddir(dir);
    return dir;
}

/* Keeps the directory under the size bound, counting only the cache's own
   files.  Only when it is over are the entries read: objects no entry
   names and stale temporary files go first (what a crash or a replaced
   entry left), then the least recently used entries, an object with the
   last entry that uses it (equal code from different sources is stored
   once).  keep, the entry just written, stays.  Returns how many entries
   went. */
static int wb_disk_evict(const wb_disk *d, const char *keep)
{
    DIR *dir = wb_disk_list(d);
    wb_disk_file *e = NULL, *obj = NULL;
    int n = 0, cap = 0, nobj = 0, capobj = 0, gone = 0;
    long long total = 0;
    struct dirent *de;
    if (!dir)
        return 0;
    for (errno = 0; (de = readdir(dir)); errno = 0) {
        struct stat sb;
        bool meta = wb_disk_named(de->d_name, ".meta");
        if (!wb_disk_own_name(de->d_name) ||
            wb_disk_at(d, de->d_name, &sb) != WB_DISK_AT_OURS)
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
    /* Whether every entry was listed (then, whether each was read). */
    bool all = de == NULL && errno == 0;
    closedir(dir);
    uint64_t limit = wb_disk_limit();
    if ((uint64_t)total > limit) {
        /* An object is an orphan only when every entry was listed and
           read: one that was not may name it. */
        for (int i = 0; i < n; i++) {
            wb_disk_meta m;
            if (wb_disk_read_meta(d->fd, e[i].name, &m) > 0)
                memcpy(e[i].object, m.object, sizeof e[i].object);
            else
                all = false;
        }
        time_t now = time(NULL);
        for (int j = 0; j < nobj; j++)
            if (now - obj[j].used.tv_sec > WB_DISK_ORPHAN_S &&
                (obj[j].name[0] == '.' ||
                 (all && !wb_disk_used(e, n, obj[j].name))))
                wb_disk_drop(d, &obj[j], &total);
        qsort(e, (size_t)n, sizeof *e, wb_disk_older);
    }
    for (int i = 0; i < n && (uint64_t)total > limit; i++) {
        if (strncmp(e[i].name, keep, WB_FINGERPRINT_LEN) == 0)
            continue;
        wb_disk_drop(d, &e[i], &total);
        if (!e[i].gone)
            continue;
        gone++;
        if (e[i].object[0] && !wb_disk_used(e, n, e[i].object))
            for (int j = 0; j < nobj; j++)
                if (!strncmp(obj[j].name, e[i].object, WB_FINGERPRINT_LEN))
                    wb_disk_drop(d, &obj[j], &total);
    }
    free(e);
    free(obj);
    return gone;
}

bool wb_disk_store(const wb_disk *d, const wb_disk_key *k, const void *obj,
                   size_t n, double ms, const char *spec, int *evicted)
{
    char name[80], hex[WB_FINGERPRINT_LEN + 1], text[PATH_MAX + 1024];
    wb_sha256_str(obj, n, hex);
    snprintf(name, sizeof name, "%s.so", hex);
    *evicted = 0;
    if (!wb_disk_put(d, name, obj, n))
        return false;
    int len = snprintf(text, sizeof text,
                       "wrapbake-cache 1\nsource %s\ncompiler %s\n"
                       "compiler-path %s\nflags %s\nabi %d\nobject %s\n"
                       "bytes %zu\ncompile-ms %.3f\nspec %s\n",
                       k->source, k->compiler, k->path, k->flags, k->abi,
                       hex, n, ms, spec);
    wb_disk_meta_name(k, name);
    if (len < 0 || (size_t)len >= sizeof text ||
        !wb_disk_put(d, name, text, (size_t)len))
        return false;
    *evicted = wb_disk_evict(d, k->key);
    return true;
}

wb_status wb_cache_clear(void)
{
    wb_disk d;
    struct dirent *de;
    if (!wb_disk_open(&d, false)) {
        wb_disk_close(&d);
        return d.absent ? WB_OK
                        : wb_rt_fail(WB_ERR_INVALID, "wb_cache_clear: %s; "
                                     "nothing was removed", d.why);
    }
    DIR *dir = wb_disk_list(&d);
    if (!dir) {
        wb_disk_close(&d);
        return wb_rt_fail(WB_ERR_INVALID, "wb_cache_clear: cannot read the "
                          "cache directory %s: %s", d.shown, strerror(errno));
    }
    int left = 0, err = 0;
    while ((de = readdir(dir)))
        if (wb_disk_own_name(de->d_name) &&
            wb_disk_unlink(&d, de->d_name) < 0)
            left++, err = errno;
    closedir(dir);
    wb_disk_close(&d);
    if (left)
        return wb_rt_fail(WB_ERR_INVALID, "wb_cache_clear: %d file%s of the "
                          "cache in %s could not be removed: %s", left,
                          WB_PLURAL(left),
                          d.shown, strerror(err));
    return WB_OK;
}

/* ---- explanations ---- */

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

/* Why there is no entry for k: the nearest entry, same source first, then
   same spec name, and which part of the key differs. */
static void wb_disk_explain_miss(const wb_disk *d, const wb_disk_key *k,
                                 const char *name, char **s, size_t *len)
{
    wb_disk_meta m, near;
    int nearness = 0;
    DIR *dir = d->fd >= 0 ? wb_disk_list(d) : NULL;
    struct dirent *de;
    while (dir && (de = readdir(dir))) {
        if (!wb_disk_named(de->d_name, ".meta") ||
            wb_disk_read_meta(d->fd, de->d_name, &m) <= 0)
            continue;
        int score = !strcmp(m.source, k->source) ? 2
                    : !strcmp(m.spec, name)      ? 1
                                                 : 0;
        if (score > nearness)
            nearness = score, near = m;
    }
    if (dir)
        closedir(dir);
    wb_say(s, len, "miss: no entry %.16s in %s", k->key, d->shown);
    if (nearness == 0)
        wb_say(s, len, "; no entry for this spec's C or name");
    if (nearness == 1)
        wb_say(s, len, "; an entry for spec '%s' has other generated C (the "
               "spec or the emitter changed)", name);
    if (nearness == 2) {
        wb_say(s, len, "; an entry for the same generated C differs in:");
        /* The record's fields are whatever its file holds, and the
           compiler's path comes from $CC or $PATH: shown printable. */
        char then[PATH_MAX], now[PATH_MAX];
        if (strcmp(near.compiler, k->compiler) && strcmp(near.path, k->path))
            wb_say(s, len, " the compiler (%s then, %s now)",
                   wb_rt_printable(near.path, then, sizeof then),
                   wb_rt_printable(k->path, now, sizeof now));
        else if (strcmp(near.compiler, k->compiler))
            wb_say(s, len, " the compiler's command words, or the file %s "
                   "(its size or time)",
                   wb_rt_printable(k->path, now, sizeof now));
        if (strcmp(near.flags, k->flags))
            wb_say(s, len, " the flags (%s then, %s now)",
                   wb_rt_printable(near.flags, then, sizeof then),
                   wb_rt_printable(k->flags, now, sizeof now));
        if (near.abi != k->abi)
            wb_say(s, len, " the ABI version (%d then, %d now)", near.abi,
                   k->abi);
    }
}

wb_status wb_disk_explain(const wb_disk_key *k, const char *name,
                          char **out)
{
    wb_disk_meta m;
    wb_disk d;
    size_t len = 0;
    char *s = calloc(1, 1);
    bool open = wb_disk_open(&d, false);
    if (!open && !d.absent && d.path[0]) {
        wb_say(&s, &len, "off: %s; nothing in it is read, written or "
               "removed", d.why);
    } else if (!open && !d.absent) {
        /* No directory at all: the environment names none. */
        wb_say(&s, &len, "off: %s", d.why);
    } else {
        switch (open ? wb_disk_find(&d, k, &m, NULL) : WB_DISK_NONE) {
        case WB_DISK_HIT:
            wb_say(&s, &len, "hit: entry %s in %s (object %.16s, %lld bytes, "
                   "%.1f ms to compile)", k->key, d.shown, m.object, m.bytes,
                   m.compile_ms);
            break;
        case WB_DISK_BAD_OBJECT:
            wb_say(&s, &len, "damaged (would be rebuilt): entry %s in %s: "
                   "its object %.16s is missing, cut short or altered",
                   k->key, d.shown, m.object);
            break;
        case WB_DISK_BAD_RECORD:
            wb_say(&s, &len, "damaged (would be rebuilt): entry %s in %s: "
                   "its record is unreadable or does not match its key",
                   k->key, d.shown);
            break;
        case WB_DISK_UNREAD:
            wb_say(&s, &len, "unknown: entry %s in %s could not be read: out "
                   "of memory or file descriptors", k->key, d.shown);
            break;
        case WB_DISK_FOREIGN:
            wb_say(&s, &len, "miss: %s.meta in %s is not a regular file of "
                   "this user's, writable by nobody else: it is ignored, "
                   "and this entry cannot be stored", k->key, d.shown);
            break;
        case WB_DISK_NONE:
            wb_disk_explain_miss(&d, k, name, &s, &len);
            break;
        }
    }
    wb_disk_close(&d);
    if (!s)
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for an explanation");
    *out = s;
    return WB_OK;
}
