/*
 * jit.c -- the libtcc driver.
 *
 * libtcc keeps process-wide state whose first initialization is racy, so
 * every compile holds wb_jit_lock, the library's one lock.  The compiler
 * gets only fixed option strings and code from the emitter (no user text
 * outside escaped comments), which keeps it from calling exit, except when
 * its own allocator runs out of memory outside a compile, which cannot be
 * caught from outside libtcc; inside one, it reports the failure as an
 * error in the code, which wb_jit_fail tells apart.  The code is relocated
 * into pages of our own that turn read+execute before anyone can call them,
 * and the compiler state is deleted at once: pages of a zone near the
 * helpers, so that the code calls them directly, while it has room, else
 * pages anywhere.  Freed code pages turn read-write again; the zone's go
 * back to it, and a few others are kept, under a lock of their own, for
 * later compiles.
 */
#include <libtcc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jit.h"
#include "../gen/gen.h"

pthread_mutex_t wb_jit_lock = PTHREAD_MUTEX_INITIALIZER;

struct wb_jit_code {
    void *mem;
    size_t size;
#ifndef TCC_RELOCATE_AUTO
    TCCState *state;  /* newer libtcc owns the code memory itself */
#endif
};

typedef struct wb_jit_diag {
    char text[2048];
    size_t len;
    long failures;  /* wb_jit_heap_failures() when the compile began */
} wb_jit_diag;

static void wb_jit_on_message(void *opaque, const char *msg)
{
    wb_jit_diag *d = opaque;
    int n = snprintf(d->text + d->len, sizeof d->text - d->len, "%s%s",
                     d->len ? "; " : "", msg);
    if (n > 0)
        d->len = d->len + (size_t)n < sizeof d->text ? d->len + (size_t)n
                                                     : sizeof d->text - 1;
}

/* A failure of libtcc's at what it did to the generated code, with its
   messages: WB_ERR_NOMEM where one of its allocations failed meanwhile,
   which it reports as an error in the code ("memory full"). */
static wb_status wb_jit_fail(const wb_jit_diag *d, const char *did)
{
    if (wb_jit_heap_failures() != d->failures)
        return wb_rt_fail(WB_ERR_NOMEM, "libtcc ran out of memory: %s",
                          d->text);
    return wb_rt_fail(WB_ERR_COMPILE, "libtcc %s the generated code: %s",
                      did, d->text);
}

/* libtcc's objects go into libwrapbake.a with their one mprotect call
   renamed to this (see the Makefile).  libtcc would make the pages it just
   copied code into read-write-execute; left read-write, they turn
   read+execute in wb_jit_compile_batch once libtcc is done with them, so
   no page is ever writable and executable at once. */
int wb_jit_tcc_mprotect(void *addr, size_t len, int prot)
{
    (void)addr;
    (void)len;
    (void)prot;
    return 0;
}

/* What libtcc.o calls instead of cstr_printf, where
   scripts/trim-libtcc.sh cut the target's predefined macros: it writes
   the thirty "#define" lines every compile would write and read, about
   113k instructions of each, nowhere.  Generated code tests no macro. */
int wb_jit_tcc_predef(void *cstr, const char *fmt, ...)
{
    (void)cstr;
    (void)fmt;
    return 0;
}

/* libtcc's objects name stdout, stderr and environ as these (see the
   Makefile): a reference to the C library's own, from code built for
   executables, could not go into libwrapbake.so.  libtcc prints nothing
   here (its messages go to wb_jit_on_message) and runs no program, so
   they only need to be valid, which wb_jit_build sees to. */
FILE *wb_jit_tcc_stdout, *wb_jit_tcc_stderr;
char **wb_jit_tcc_environ;
extern char **environ;

/* Code pages freed and made read-write again, kept for the next compile
   that fits in them: on the development VM, mapping pages,
   faulting in the first write and unmapping them took about 8 us, where a
   compile that reuses pages pays only the mprotect that seals them.  A run
   of at most WB_JIT_SPARE_PAGES pages is kept, and at most WB_JIT_SPARES
   of them: 1 MiB at worst. */
#define WB_JIT_SPARES 16
#define WB_JIT_SPARE_PAGES 16
pthread_mutex_t wb_jit_spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *mem;
    size_t size;
} wb_jit_spare[WB_JIT_SPARES];
static int wb_jit_nspare;

/* Code near the helpers.  libtcc calls a symbol given to it with
   tcc_add_symbol through a jump slot of its own (a call, then an indirect
   jump), as the symbol may lie anywhere in the address space; a symbol
   declared hidden it calls directly, which needs the code within 2 GiB of
   it.  So, while there is room, code goes into a zone of this library's
   own bss, which lies in one image with the helpers, and the unit then
   declares hidden every helper it calls that the whole zone reaches: one
   instruction fewer per helper call (3 a call of the benchmark's case A,
   which takes 98 above the floor).  The zone is address space only until
   a page is used.  A unit whose code turns out larger than the zone's room is
   compiled again without the declarations, for pages anywhere.  The
   pages are tracked under wb_jit_spare_lock. */
static _Alignas(WB_JIT_ZONE_PAGE) unsigned char
    wb_jit_zone[WB_JIT_ZONE_PAGES * WB_JIT_ZONE_PAGE];
static unsigned char wb_jit_zone_used[WB_JIT_ZONE_PAGES];
static int wb_jit_zone_free = WB_JIT_ZONE_PAGES;

bool wb_jit_in_zone(const void *p)
{
    const unsigned char *c = p;
    return c >= wb_jit_zone && c < wb_jit_zone + sizeof wb_jit_zone;
}

#ifdef WB_TEST_HOOKS
int wb_test_jit_zone_free_pages(void)
{
    pthread_mutex_lock(&wb_jit_spare_lock);
    int n = wb_jit_zone_free;
    pthread_mutex_unlock(&wb_jit_spare_lock);
    return n;
}
#endif

/* Whether code anywhere in the zone can call addr directly. */
static bool wb_jit_zone_reaches(const void *addr)
{
    const intptr_t reach = INT32_MAX - 2 * WB_JIT_ZONE_PAGE;
    intptr_t a = (intptr_t)addr, lo = (intptr_t)wb_jit_zone,
             hi = lo + (intptr_t)sizeof wb_jit_zone;
    return a - lo < reach && lo - a < reach && a - hi < reach &&
           hi - a < reach;
}

/* Whether the zone can take code: pages of its size, and a page free. */
static bool wb_jit_zone_open(void)
{
    bool open;
    if (sysconf(_SC_PAGESIZE) != WB_JIT_ZONE_PAGE)
        return false;
    pthread_mutex_lock(&wb_jit_spare_lock);
    open = wb_jit_zone_free > 0;
    pthread_mutex_unlock(&wb_jit_spare_lock);
    return open;
}

/* Zeroed read-write pages of the zone for size bytes of code, the first
   run that fits; false when none does. */
static bool wb_jit_zone_pages(wb_jit_code *c, size_t size)
{
    size_t k = size ? (size + WB_JIT_ZONE_PAGE - 1) / WB_JIT_ZONE_PAGE : 1;
    size_t at = 0, run = 0;
    pthread_mutex_lock(&wb_jit_spare_lock);
    for (size_t i = 0; i < WB_JIT_ZONE_PAGES && run < k; i++) {
        if (wb_jit_zone_used[i])
            run = 0;
        else if (run++ == 0)
            at = i;
    }
    if (run == k) {
        memset(wb_jit_zone_used + at, 1, k);
        wb_jit_zone_free -= (int)k;
    }
    pthread_mutex_unlock(&wb_jit_spare_lock);
    if (run < k)
        return false;
    c->mem = wb_jit_zone + at * WB_JIT_ZONE_PAGE;
    c->size = k * WB_JIT_ZONE_PAGE;
    memset(c->mem, 0, c->size);
    return true;
}

/* Read-write pages for size bytes of code, kept or freshly mapped; sets
   c->mem and c->size. */
static bool wb_jit_pages(wb_jit_code *c, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    c->size = size ? (size + page - 1) / page * page : page;
    pthread_mutex_lock(&wb_jit_spare_lock);
    for (int i = 0; i < wb_jit_nspare; i++)
        if (wb_jit_spare[i].size >= c->size) {
            c->mem = wb_jit_spare[i].mem;
            c->size = wb_jit_spare[i].size;
            wb_jit_spare[i] = wb_jit_spare[--wb_jit_nspare];
            break;
        }
    pthread_mutex_unlock(&wb_jit_spare_lock);
    if (c->mem) {
        /* No byte of earlier code survives into the new image. */
        memset(c->mem, 0, c->size);
        return true;
    }
    c->mem = mmap(NULL, c->size, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->mem == MAP_FAILED)
        c->mem = NULL;
    return c->mem != NULL;
}

/* Gives code pages back: kept read-write when there is room, else
   unmapped. */
static void wb_jit_unpages(void *mem, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    bool kept = false;
    if (wb_jit_in_zone(mem)) {
        size_t at = (size_t)((unsigned char *)mem - wb_jit_zone) / page;
        /* Pages that cannot turn writable again stay taken. */
        if (mprotect(mem, size, PROT_READ | PROT_WRITE) != 0)
            return;
        pthread_mutex_lock(&wb_jit_spare_lock);
        memset(wb_jit_zone_used + at, 0, size / page);
        wb_jit_zone_free += (int)(size / page);
        pthread_mutex_unlock(&wb_jit_spare_lock);
        return;
    }
    if (size <= WB_JIT_SPARE_PAGES * page &&
        mprotect(mem, size, PROT_READ | PROT_WRITE) == 0) {
        pthread_mutex_lock(&wb_jit_spare_lock);
        if ((kept = wb_jit_nspare < WB_JIT_SPARES)) {
            wb_jit_spare[wb_jit_nspare].mem = mem;
            wb_jit_spare[wb_jit_nspare].size = size;
            wb_jit_nspare++;
        }
        pthread_mutex_unlock(&wb_jit_spare_lock);
    }
    if (!kept)
        munmap(mem, size);
}

/* Relocates s into read-write pages of our own, which the caller seals
   read+execute: pages of the zone when the code calls helpers directly
   (near), and *no_room set when they have no room for it. */
static wb_status wb_jit_place(TCCState *s, wb_jit_code *c, wb_jit_diag *d,
                              bool near, bool *no_room)
{
#ifdef TCC_RELOCATE_AUTO
    int size = tcc_relocate(s, NULL);
    if (size < 0)
        return wb_jit_fail(d, "could not link");
    if (near) {
        if (!(*no_room = !wb_jit_zone_pages(c, (size_t)size)) &&
            tcc_relocate(s, c->mem) < 0)
            return wb_jit_fail(d, "could not relocate");
        return WB_OK;
    }
    if (!wb_jit_pages(c, (size_t)size))
        return wb_rt_fail(WB_ERR_NOMEM, "cannot map %d bytes for code",
                          size);
    if (tcc_relocate(s, c->mem) < 0)
        return wb_jit_fail(d, "could not relocate");
#else
    (void)near;
    (void)no_room;
    if (tcc_relocate(s) < 0)
        return wb_jit_fail(d, "could not link");
#endif
    return WB_OK;
}

#ifdef WB_TEST_HOOKS
/* The bytes from s to e, or only their newlines when not read. */
static char *wb_jit_span(char *p, const char *s, const char *e, bool read)
{
    if (read) {
        memcpy(p, s, (size_t)(e - s));
        return p + (e - s);
    }
    for (; (s = memchr(s, '\n', (size_t)(e - s))) != NULL; s++)
        *p++ = '\n';
    return p;
}

/* Copies src to dst as libtcc reads it: the lines only other compilers
   read are left empty, and so are the directives, so that every line
   keeps its number.  The tcc tier compiles libtcc's form, which has none
   of them; the tests hold that form to this reading of the whole text. */
char *wb_test_jit_as_read(char *dst, const char *src)
{
    const char *s = src, *end = src + strlen(src);
    wb_rt_cond in = WB_RT_COND_NONE;
    bool read = true;
    char *p = dst;
    for (const char *h = memchr(s, '#', (size_t)(end - s)); h;
         h = memchr(h + 1, '#', (size_t)(end - h - 1))) {
        wb_rt_cond c;
        if ((h > src && h[-1] != '\n') ||
            (c = wb_test_cond_at(h)) == WB_RT_COND_NONE)
            continue;
        p = wb_jit_span(p, s, h, read);
        *p++ = '\n';
        h = strchr(h, '\n');  /* wb_test_cond_at matched up to it */
        s = h + 1;
        read = wb_rt_cond_next(c, &in) & WB_RT_READ_TCC;
    }
    p = wb_jit_span(p, s, end, read);
    *p = '\0';
    return p;
}
#endif

/* Whether libtcc reads a call of helper i in src. */
static bool wb_jit_reads(const wb_jit_src *src, int i)
{
    return src->used && (src->used[i] & WB_RT_READ_TCC);
}

/* The functions of a batch as one translation unit: libtcc's fixed cost
   is per unit (30 to 60 us here), then it charges per token and per byte
   it reads.  Each function is renamed by a define around it to entry_k;
   the first comes with its prelude, each later one after the completion
   of each type it reads into and a prototype of each helper it calls
   that no earlier one had, so that libtcc reads each declaration once and
   no prelude but the first (for case A, what libtcc charged per wrapper
   fell from 129k instructions to 111k when the unit stopped keeping the
   later preludes for the preprocessor to skip).  Sets used[i] for every
   helper i some function calls. */
static char *wb_jit_unit(int n, const wb_jit_src *srcs,
                         unsigned char used[WB_ABI_COUNT])
{
    size_t cap = 64 + strlen(srcs[0].prelude);
    unsigned types = srcs[0].types;
    for (int i = 0; wb_rt_symbols[i].name; i++)
        cap += strlen(wb_rt_symbols[i].proto) + 1;
    for (int t = 0; t < WB_EMIT_NTYPES; t++)
        cap += strlen(wb_emit_type_text[t]);
    for (int k = 0; k < n; k++)
        cap += strlen(srcs[k].body) + 2 * strlen(srcs[k].entry) + 64;
    char *unit = malloc(cap), *p = unit;
    if (!unit)
        return NULL;
    memset(used, 0, sizeof *used * WB_ABI_COUNT);
    for (int k = 0; k < n; k++) {
        for (int t = 0; t < WB_EMIT_NTYPES; t++)
            if (srcs[k].types & ~types & 1u << t)
                p = stpcpy(p, wb_emit_type_text[t]);
        types |= srcs[k].types;
        for (int i = 0; wb_rt_symbols[i].name; i++) {
            if (!wb_jit_reads(&srcs[k], i))
                continue;
            if (k > 0 && !used[i]) {
                p = stpcpy(p, wb_rt_symbols[i].proto);
                *p++ = '\n';
            }
            used[i] = 1;
        }
        p += sprintf(p, "#define %s %s_%d\n", srcs[k].entry, srcs[k].entry,
                     k);
        if (k == 0)
            p = stpcpy(p, srcs[0].prelude);
        p = stpcpy(p, srcs[k].body);
        p = stpcpy(p, "\n#undef ");
        p = stpcpy(p, srcs[k].entry);
        *p++ = '\n';
    }
    *p = '\0';
    return unit;
}

/* Appends to *unit, of len bytes, a hidden declaration of each helper it
   calls that the zone reaches (see wb_jit_zone), but those called only
   once a call has failed: libtcc reads each declaration for 4k to 5k
   instructions, which a compile need not pay for a call that saves one.
   False, with *unit as it was, when out of memory. */
static bool wb_jit_declare_hidden(char **unit, size_t len,
                                  const unsigned char *used)
{
    static const char decl[] =
        "__typeof__(%s) %s __attribute__((visibility(\"hidden\")));\n";
    size_t add = 0;
    for (int i = 0; wb_rt_symbols[i].name; i++)
        if (used[i])
            add += sizeof decl + 2 * wb_rt_symbols[i].len;
    char *u = realloc(*unit, len + add + 1), *p;
    if (!u)
        return false;
    *(p = u + len) = '\0';
    for (int i = 0; wb_rt_symbols[i].name; i++) {
        const wb_rt_symbol *y = &wb_rt_symbols[i];
        const void *addr;
        memcpy(&addr, &y->addr, sizeof addr);
        if (used[i] && !y->cold && wb_jit_zone_reaches(addr))
            p += sprintf(p, decl, y->name, y->name);
    }
    *unit = u;
    return true;
}

/* Compiles unit in a state of its own and places its code, under
   wb_jit_lock: in the zone when near, where *no_room says whether it had
   room; the n functions of srcs (entry, or entry_k in a batch) in
   entries. */
static wb_status wb_jit_build(const char *unit, int n, const wb_jit_src *srcs,
                              const unsigned char *used, bool near,
                              wb_jit_code *c, void **entries, bool *no_room)
{
    wb_jit_diag diag = {{0}, 0, wb_jit_heap_failures()};
    wb_status st = WB_OK;
    *no_room = false;
    wb_jit_tcc_stdout = stdout;
    wb_jit_tcc_stderr = stderr;
    wb_jit_tcc_environ = environ;
#ifdef TCC_RELOCATE_AUTO
    wb_jit_heap_open();  /* closed once the state is deleted, below */
#endif
    TCCState *s = tcc_new();
    if (!s) {
        wb_jit_heap_close();
        return wb_rt_fail(WB_ERR_NOMEM, "libtcc could not start");
    }
    tcc_set_error_func(s, &diag, wb_jit_on_message);
    /* Generated code compiles without a warning: -Werror turns one (a
       helper called undeclared, say) into a failed build, not wrong code. */
    tcc_set_options(s, "-nostdlib -Werror");
    tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
    /* Each symbol costs libtcc about a microsecond, so only the helpers
       the sources call are registered, and memcpy and memset, which libtcc
       itself may call for copies and zeroed locals. */
    for (int i = 0; wb_rt_symbols[i].name; i++) {
        const wb_rt_symbol *y = &wb_rt_symbols[i];
        if (!used[i] && strcmp(y->name, "memcpy") && strcmp(y->name, "memset"))
            continue;
        /* POSIX lets function and object pointers convert both ways. */
        const void *addr;
        memcpy(&addr, &y->addr, sizeof addr);
        tcc_add_symbol(s, y->name, addr);
    }
    if (tcc_compile_string(s, unit) < 0)
        st = wb_jit_fail(&diag, "rejected");
    if (st == WB_OK)
        st = wb_jit_place(s, c, &diag, near, no_room);
    for (int i = 0; i < n && st == WB_OK && !*no_room; i++) {
        char name[300];
        if (n == 1)
            snprintf(name, sizeof name, "%s", srcs[i].entry);
        else
            snprintf(name, sizeof name, "%s_%d", srcs[i].entry, i);
        if (!(entries[i] = tcc_get_symbol(s, name)))
            st = wb_rt_fail(WB_ERR_COMPILE, "the generated code has no "
                            "function '%s'", name);
    }
#ifdef TCC_RELOCATE_AUTO
    tcc_delete(s);
    wb_jit_heap_close();
#else
    if (st == WB_OK)
        c->state = s;
    else
        tcc_delete(s);
#endif
    return st;
}

wb_status wb_jit_compile_batch(int n, const wb_jit_src *srcs,
                               wb_jit_code **code, void **entries)
{
    wb_status st;
    if (n < 1 || !srcs || !code || !entries)
        return wb_rt_fail(WB_ERR_INVALID, "wb_jit_compile: NULL argument");
    for (int i = 0; i < n; i++)
        if (!srcs[i].prelude || !srcs[i].body || !srcs[i].entry)
            return wb_rt_fail(WB_ERR_INVALID, "wb_jit_compile: NULL "
                              "source %d", i);
    /* One function compiles as it is, a batch as one unit; the helpers
       registered are those the emitter recorded libtcc reads. */
    unsigned char used[WB_ABI_COUNT];
    wb_jit_code *c = calloc(1, sizeof *c);
    char *unit;
    if (n == 1) {
        size_t a = strlen(srcs[0].prelude), b = strlen(srcs[0].body);
        if ((unit = malloc(a + b + 1)) != NULL) {
            memcpy(unit, srcs[0].prelude, a);
            memcpy(unit + a, srcs[0].body, b + 1);
        }
        for (int i = 0; i < WB_ABI_COUNT; i++)
            used[i] = wb_jit_reads(&srcs[0], i);
    } else {
        unit = wb_jit_unit(n, srcs, used);
    }
    if (!c || !unit) {
        free(c);
        free(unit);
        return wb_rt_fail(WB_ERR_NOMEM, "out of memory for compiled code");
    }
    size_t plain = strlen(unit);
    bool near = false, no_room;
#ifdef TCC_RELOCATE_AUTO
    near = wb_jit_zone_open() && wb_jit_declare_hidden(&unit, plain, used);
#endif

    pthread_mutex_lock(&wb_jit_lock);
    wb_rt_inside_dependency++;
    st = wb_jit_build(unit, n, srcs, used, near, c, entries, &no_room);
    if (st == WB_OK && no_room) {
        unit[plain] = '\0';
        st = wb_jit_build(unit, n, srcs, used, false, c, entries, &no_room);
    }
    wb_rt_inside_dependency--;
    pthread_mutex_unlock(&wb_jit_lock);
    free(unit);

    if (st == WB_OK && c->mem &&
        mprotect(c->mem, c->size, PROT_READ | PROT_EXEC) != 0)
        st = wb_rt_fail(WB_ERR_COMPILE, "cannot make the code pages "
                        "read+execute");
    if (st != WB_OK) {
        wb_jit_free(c);
        return st;
    }
    *code = c;
    return WB_OK;
}

wb_status wb_jit_compile(const char *src, const char *fn,
                         const unsigned char *used, wb_jit_code **code,
                         void **entry)
{
    wb_jit_src one = {"", src, fn, used, 0};
    if (!src || !fn)
        return wb_rt_fail(WB_ERR_INVALID, "wb_jit_compile: NULL argument");
    return wb_jit_compile_batch(1, &one, code, entry);
}

void wb_jit_free(wb_jit_code *c)
{
    if (!c)
        return;
    if (c->mem)
        wb_jit_unpages(c->mem, c->size);
#ifndef TCC_RELOCATE_AUTO
    if (c->state) {
        pthread_mutex_lock(&wb_jit_lock);
        wb_rt_inside_dependency++;
        tcc_delete(c->state);
        wb_rt_inside_dependency--;
        pthread_mutex_unlock(&wb_jit_lock);
    }
#endif
    free(c);
}
