/*
 * trust.c -- whether a path may be trusted to name what it names: the
 * rules the disk cache keeps for its directory and $TMPDIR, and the CUDA
 * runtime for the file $WRAPBAKE_CUDART names.
 *
 * Whoever can change a directory on the way to a file, or a link met on
 * the way, can make the path name a file of theirs.  So the path is
 * resolved here a component at a time, as the kernel resolves it, each
 * link read and followed by hand, and everything met is checked: every
 * directory must belong to the user or to root and be writable by nobody
 * else unless sticky, and every link, inside a link's target too, must
 * belong to the user or to root.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

/* Whether uid is the effective user or root. */
static bool wb_rt_trusted_uid(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

/* Why the directory (or link) at p, described by sb, could be made to
   name another, or NULL: it belongs to someone but the user or root, or
   others may write it and it is not sticky.  errno is 0 after a
   refusal. */
static const char *wb_rt_unsafe_dir(const char *p, const struct stat *sb,
                                    char *why, size_t n)
{
    char shown[PATH_MAX];
    wb_rt_printable(*p ? p : "/", shown, sizeof shown);
    if (!wb_rt_trusted_uid(sb->st_uid))
        snprintf(why, n, "%s belongs to uid %u", shown, (unsigned)sb->st_uid);
    else if (!S_ISLNK(sb->st_mode) && (sb->st_mode & (S_IWGRP | S_IWOTH)) &&
             !(sb->st_mode & S_ISVTX))
        snprintf(why, n, "%s is writable by others and not sticky", shown);
    else
        return NULL;
    errno = 0;  /* a refusal, not a failure */
    return why;
}

/* why as "P: what errno says" for the path p; errno stays as it was. */
static const char *wb_rt_way_error(const char *p, char *why, size_t n)
{
    char shown[PATH_MAX];
    int e = errno;
    snprintf(why, n, "%s: %s", wb_rt_printable(*p ? p : "/", shown,
                                               sizeof shown), strerror(e));
    errno = e;
    return why;
}

/* Follows the link at done (its parent is done's first len bytes): the
   link's target, then rest, become what is left to walk, in way.  False,
   with errno set, when the target cannot be read or is too long. */
static bool wb_rt_follow(char *done, size_t len, const char *rest,
                         char way[PATH_MAX])
{
    char target[PATH_MAX];
    ssize_t k = readlink(done, target, sizeof target - 1);
    if (k <= 0) {
        errno = k ? errno : ENOENT;
        return false;
    }
    target[k] = '\0';
    /* A link that ends the path is its target alone: a slash after it
       would ask for a directory, and a link to a file is a file.  A slash
       that the path itself has after the link stays, as the kernel asks
       for a directory there. */
    if (snprintf(way, PATH_MAX, *rest ? "%s/%s" : "%s", target, rest) >=
        PATH_MAX) {
        errno = ENAMETOOLONG;
        return false;
    }
    /* An absolute target starts again from the root, a relative one from
       the directory that holds the link. */
    done[target[0] == '/' ? 0 : len] = '\0';
    return true;
}

const char *wb_rt_unsafe_path(const char *path, bool self, char *real,
                              char *why, size_t n)
{
    /* done: the part resolved, with no link in it ("" is the root); way:
       what is left to walk, in the buffer the previous one is not in. */
    char done[PATH_MAX] = "", way[2][PATH_MAX], cwd[PATH_MAX];
    int cur = 0, links = 0;
    struct stat sb;
    errno = 0;
    /* A relative path is walked from the root through the working
       directory, whose way counts as much. */
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
        return wb_rt_way_error(".", why, n);
    if (snprintf(way[0], PATH_MAX, "%s/%s", path[0] == '/' ? "" : cwd,
                 path) >= PATH_MAX) {
        errno = ENAMETOOLONG;
        return wb_rt_way_error(path, why, n);
    }
    if (stat("/", &sb) != 0)
        return wb_rt_way_error("/", why, n);
    if (wb_rt_unsafe_dir("", &sb, why, n))
        return why;
    for (const char *p = way[0];;) {
        p += strspn(p, "/");
        if (!*p)
            break;
        size_t k = strcspn(p, "/"), len = strlen(done);
        const char *rest = p + k;
        bool last = rest[strspn(rest, "/")] == '\0';
        if (k == 1 && p[0] == '.') {
            p = rest;
            continue;
        }
        if (k == 2 && p[0] == '.' && p[1] == '.') {
            /* The parent of what is resolved, which was checked on the
               way down. */
            char *slash = strrchr(done, '/');
            if (slash)
                *slash = '\0';
            p = rest;
            continue;
        }
        if (len + 1 + k >= PATH_MAX) {
            errno = ENAMETOOLONG;
            return wb_rt_way_error(done, why, n);
        }
        done[len] = '/';
        memcpy(done + len + 1, p, k);
        done[len + 1 + k] = '\0';
        if (lstat(done, &sb) != 0) {
            /* What does not exist yet cannot be moved: the walk ends,
               unless the whole path was asked for. */
            if (errno == ENOENT && !real)
                return NULL;
            return wb_rt_way_error(done, why, n);
        }
        if (S_ISLNK(sb.st_mode)) {
            if (wb_rt_unsafe_dir(done, &sb, why, n))
                return why;
            if (++links > WB_RT_LINKS) {
                errno = ELOOP;
                return wb_rt_way_error(path, why, n);
            }
            if (!wb_rt_follow(done, len, rest, way[!cur]))
                return wb_rt_way_error(done, why, n);
            p = way[cur = !cur];
            continue;
        }
        /* Only a directory has something after it, a slash included, as
           the kernel resolves it. */
        if ((!last || *rest) && !S_ISDIR(sb.st_mode)) {
            errno = ENOTDIR;
            return wb_rt_way_error(done, why, n);
        }
        if ((!last || self) && wb_rt_unsafe_dir(done, &sb, why, n))
            return why;
        p = rest;
    }
    if (real)
        snprintf(real, PATH_MAX, "%s", done[0] ? done : "/");
    return NULL;
}

const char *wb_rt_unsafe_file(const char *path, char *real, char *why,
                              size_t n)
{
    struct stat sb;
    if (path[0] != '/') {
        errno = 0;
        snprintf(why, n, "it is not an absolute path");
        return why;
    }
    if (wb_rt_unsafe_path(path, false, real, why, n))
        return why;
    /* real holds no link: lstat looks at the file itself, and opening
       nothing, cannot block on a FIFO or wake a device. */
    if (lstat(real, &sb) != 0)
        return wb_rt_way_error(real, why, n);
    errno = 0;
    if (!S_ISREG(sb.st_mode))
        snprintf(why, n, "it is not a regular file");
    else if (!wb_rt_trusted_uid(sb.st_uid))
        snprintf(why, n, "it belongs to uid %u, neither this user (uid %u) "
                 "nor root", (unsigned)sb.st_uid, (unsigned)geteuid());
    else if (sb.st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, n, "it is writable by %s (mode %03o)",
                 sb.st_mode & S_IWOTH ? "others" : "its group",
                 (unsigned)(sb.st_mode & 0777));
    else
        return NULL;
    return why;
}
