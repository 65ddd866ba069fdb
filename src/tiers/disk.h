/*
 * disk.h -- the disk cache of cc-tier objects (internal; see disk.c for
 * what it trusts and why).
 */
#ifndef WB_DISK_H
#define WB_DISK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "tiers.h"

/* The largest object and entry record the cache reads. */
#define WB_DISK_OBJECT_MAX (64 << 20)
#define WB_DISK_META_MAX   16384

/* The cache directory, open and checked, or why the cache is off. */
typedef struct wb_disk {
    int fd;                       /* the directory; -1 when off */
    bool absent;                  /* off because it does not exist */
    char path[PATH_MAX];
    char shown[PATH_MAX];         /* path as messages show it */
    char why[2 * PATH_MAX + 256]; /* why it is off, when it is */
} wb_disk;

/* Opens the cache directory, creating it (private to the user) when
   create is set, and checks that it may be trusted: it must belong to the
   effective user and be writable by nobody else, and its way pass
   wb_rt_unsafe_path.  False, with d->why set, when the disk cache is off;
   wb_disk_close is needed either way. */
bool wb_disk_open(wb_disk *d, bool create);
void wb_disk_close(wb_disk *d);

/* What a disk cache key is made of. */
typedef struct wb_disk_key {
    char source[WB_FINGERPRINT_LEN + 1];    /* the generated C */
    char compiler[WB_FINGERPRINT_LEN + 1];  /* the compiler's identity */
    char path[PATH_MAX];                    /* the compiler, resolved */
    const char *flags;
    int abi;
    char key[WB_FINGERPRINT_LEN + 1];       /* all of the above */
} wb_disk_key;

void wb_disk_key_make(const char *source, const wb_cc_opts *cc,
                      wb_disk_key *k);

/* An entry as recorded in its .meta file. */
typedef struct wb_disk_meta {
    char source[WB_FINGERPRINT_LEN + 1], compiler[WB_FINGERPRINT_LEN + 1];
    char object[WB_FINGERPRINT_LEN + 1];
    char path[PATH_MAX], flags[128], spec[300];
    int abi;
    long long bytes;
    double compile_ms;
} wb_disk_meta;

/* What a lookup found. */
typedef enum wb_disk_found {
    WB_DISK_HIT,        /* a whole entry; its object's bytes verified */
    WB_DISK_NONE,       /* no entry */
    WB_DISK_FOREIGN,    /* something the cache did not make at the entry's
                           name: ignored, never read or removed */
    WB_DISK_BAD_RECORD, /* the record is unreadable or not of its key */
    WB_DISK_BAD_OBJECT, /* the object is missing, cut short or altered */
    WB_DISK_UNREAD      /* no memory or file descriptor to read the entry
                           with: not damage, and left alone */
} wb_disk_found;

/* Looks up k in d.  On WB_DISK_HIT *m is the record and, when bytes is not
   NULL, *bytes (malloc'ed, m->bytes long) the object's bytes, read once
   and hashed: the caller loads these, never the file again. */
wb_disk_found wb_disk_find(const wb_disk *d, const wb_disk_key *k,
                           wb_disk_meta *m, char **bytes);
/* Removes k's damaged entry and its object, where they are the cache's. */
void wb_disk_forget(const wb_disk *d, const wb_disk_key *k,
                    const wb_disk_meta *m);
/* Marks k's entry as just used (eviction takes the least recent first). */
void wb_disk_touch(const wb_disk *d, const wb_disk_key *k);
/* Records obj, n bytes that loaded and had their entry point, as k's entry
   (spec is the spec's printable name), then keeps the directory under its
   size bound, setting *evicted to how many entries that took.  False when
   the entry could not be written. */
bool wb_disk_store(const wb_disk *d, const wb_disk_key *k, const void *obj,
                   size_t n, double ms, const char *spec, int *evicted);

/* What the cache holds under k, in words, into *out (malloc'ed): a hit,
   a damaged or foreign entry, the nearest entry on a miss (name is the
   spec's printable name), or why the cache is off; wb_cache_explain. */
wb_status wb_disk_explain(const wb_disk_key *k, const char *name,
                          char **out);

/* Creates the directory p, an absolute path, and its missing parents,
   private to the user; false with errno set.  The way is walked from the
   root, each directory held open and the next made in it (mkdirat), so
   that a link planted on the way after it was checked
   (wb_rt_unsafe_path) cannot lead the walk elsewhere: a link is
   followed only where that check allows one, when it belongs to the user
   or to root. */
bool wb_disk_mkdirs(const char *p);

/* Opens name under dirfd (AT_FDCWD for a path) for reading without
   following a link or blocking on a FIFO.  The file must be regular and
   of at most max bytes (any size when max is negative); when strict, it
   must also belong to the effective user and be writable by nobody else.
   The descriptor, with *sb filled, or -1 with errno set (EINVAL: a file
   the checks refuse). */
int wb_disk_open_file(int dirfd, const char *name, off_t max, bool strict,
                      struct stat *sb);
/* The n bytes of fd in a new buffer with a NUL after them; NULL unless the
   file holds exactly n bytes, with errno set (EINVAL: it holds more or
   fewer). */
char *wb_disk_slurp(int fd, size_t n);

#endif /* WB_DISK_H */
