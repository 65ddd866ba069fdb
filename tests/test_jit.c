/*
 * The libtcc driver: compiler messages point back into the spec, the code
 * never sits in memory that is writable and executable at once, and the
 * generated source is what the tcc tier runs, read by libtcc without the
 * branches other compilers read.  While a zone near the helpers has
 * room, the code lies there and calls them directly.  libtcc's heap is an
 * arena that each compile leaves empty and the next one reuses, its
 * preamble is the target's defines alone, and it knows no assembler
 * keywords.
 */
#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "helpers.h"
#include "../src/tiers/jit.h"
#include "libtcc-trim.h"  /* in the build's copy of libtcc's objects */

typedef int (*jit_int_fn)(int);

/* Compiles a source of the test's own; the helpers it calls are found by
   reading it, as the emitter would have recorded them. */
static wb_status jit_compile(const char *src, const char *fn,
                             wb_jit_code **code, void **entry)
{
    unsigned char used[WB_ABI_COUNT];
    wb_test_symbols_used(src, strlen(src), used);
    return wb_jit_compile(src, fn, used, code, entry);
}

static jit_int_fn jit_compile_ok(const char *src, const char *fn,
                                 wb_jit_code **code)
{
    void *entry;
    jit_int_fn f;
    WBT_OK(jit_compile(src, fn, code, &entry));
    memcpy(&f, &entry, sizeof f);
    return f;
}

Test(jit, compiles_and_runs)
{
    wb_jit_code *code;
    jit_int_fn f = jit_compile_ok("int twice(int x) { return 2 * x; }",
                                  "twice", &code);
    cr_assert_eq(f(21), 42);
    wb_jit_free(code);
}

Test(jit, messages_point_into_the_spec)
{
    wb_jit_code *code = NULL;
    void *entry = NULL;
    WBT_FAILS(jit_compile("#line 7 \"decode_step\"\n"
                             "int f(void) { return no_such_name; }",
                             "f", &code, &entry),
              WB_ERR_COMPILE, "decode_step:7");
    cr_assert_null(code);
    WBT_FAILS(jit_compile("int f(void) { return 1; }", "g", &code, &entry),
              WB_ERR_COMPILE, "no function 'g'");
}

/* What libtcc reads of generated code: the lines only other compilers
   read, and the directives, are left empty, and every other line stays
   where it was. */
Test(jit, libtcc_reads_its_own_branches_alone)
{
    const char *src =
        "#line 4 \"s\"\n"
        "a(\n"
        "#ifdef __TINYC__\n"
        "tcc(\n"
        "#else\n"
        "cc1(\n"
        "#else-ish and # inside are text\n"
        "#endif\n"
        "  #else\n"
        "#ifndef __TINYC__\n"
        "cc2(\n"
        "#endif\n"
        "b(";
    const char *want =
        "#line 4 \"s\"\n"
        "a(\n"
        "\n"
        "tcc(\n"
        "\n"
        "\n"
        "\n"
        "\n"
        "  #else\n"
        "\n"
        "\n"
        "\n"
        "b(";
    char out[256];
    char *end = wb_test_jit_as_read(out, src);
    cr_assert_str_eq(out, want);
    cr_assert_eq(end, out + strlen(want));

    /* The line after a cut branch keeps its number. */
    wb_jit_code *code;
    char text[256];
    wb_test_jit_as_read(text, "int f(int x) {\n"
                              "#ifdef __TINYC__\n"
                              "    x += 1000;\n"
                              "#else\n"
                              "    x += 2000;\n"
                              "    x += 3000;\n"
                              "#endif\n"
                              "    return x + __LINE__;\n"
                              "}\n");
    jit_int_fn f = jit_compile_ok(text, "f", &code);
    cr_assert_eq(f(0), 1008);
    wb_jit_free(code);
}

/* The symbols that generated code calls, by who reads the calls. */
Test(jit, helpers_are_found_with_who_calls_them)
{
    const char *src =
        "wb_rt_grad_set(1);\n"
        "#ifdef __TINYC__\n"
        "wb_rt_args_bad(a, 3, 0);\n"
        "#else\n"
        "wb_rt_prep_same(h, v, &w); wb_rt_grad_set(0);\n"
        "#endif\n"
        "#ifndef __TINYC__\n"
        "wb_rt_release_all(v, 1);\n"
        "#endif\n"
        "wb_rt_not_a_helper(); memset(p, 0, 1); x_wb_rt_grad_swap(1);\n";
    unsigned char used[WB_ABI_COUNT];
    cr_assert_eq(wb_test_symbols_used(src, strlen(src), used), 5);
    for (int i = 0; wb_rt_symbols[i].name; i++) {
        const char *name = wb_rt_symbols[i].name;
        unsigned want = !strcmp(name, "wb_rt_grad_set") ||
                                !strcmp(name, "memset")
                            ? WB_RT_READ_TCC | WB_RT_READ_CC
                        : !strcmp(name, "wb_rt_args_bad") ? WB_RT_READ_TCC
                        : !strcmp(name, "wb_rt_prep_same") ||
                                !strcmp(name, "wb_rt_release_all")
                            ? WB_RT_READ_CC
                            : 0;
        cr_assert_eq(used[i], want, "%s: %u, not %u", name, used[i], want);
    }
}

/* libtcc's preamble loses what scripts/trim-libtcc.sh cuts, where it
   found what it knows (the header it wrote says so): the target's
   predefined macros, and the built-in declarations. */
Test(jit, the_preamble_is_cut)
{
    wb_jit_code *code;
    jit_int_fn f = jit_compile_ok(
        "int predefined(int x) {\n"
        "#if defined __TINYC__ || defined __SIZE_TYPE__ || \\\n"
        "    defined __x86_64__\n"
        "    return 1;\n"
        "#else\n"
        "    return 0;\n"
        "#endif\n"
        "}\n",
        "predefined", &code);
    /* None of them where the script cut them, and some where it left
       them. */
    cr_assert_eq(f(0), !WB_TCC_PREDEFS_CUT,
                 "the target's macros are %sdefined", f(0) ? "" : "not ");
    wb_jit_free(code);
    /* tccpp.o's own, which it does not write through libtcc.o, stays. */
    f = jit_compile_ok("int base(int x) {\n"
                       "    return x + (sizeof __BASE_FILE__ > 1);\n}",
                       "base", &code);
    cr_assert_eq(f(1), 2);
    wb_jit_free(code);
    if (!WB_TCC_BUILTINS_CUT)
        cr_skip_test("this libtcc's built-in text is not the one "
                     "scripts/trim-libtcc.sh knows; it was not cut");

    /* __builtin_va_list is no type, and __builtin_strlen undeclared. */
    void *entry = NULL;
    code = NULL;
    WBT_FAILS(jit_compile("__builtin_va_list ap;\n"
                             "int f(void) { return 0; }", "f", &code, &entry),
              WB_ERR_COMPILE, "(got \"ap\")");
    WBT_FAILS(jit_compile("int f(char *p) {\n"
                             "    return (int)__builtin_strlen(p);\n}",
                             "f", &code, &entry),
              WB_ERR_COMPILE, "__builtin_strlen");
    cr_assert_null(code);
}

/* libtcc keeps the keywords of C, of the preprocessor and of the helpers
   it calls itself, and loses the assembler's, which scripts/trim-libtcc.sh
   cuts from its list where it found the list it knows: C that spells
   assembler keywords as names, and the zeroing that libtcc makes a call
   of memset, compile and run; inline assembly, and #pragma pack(push)
   with the assembler's push, no longer compile. */
Test(jit, c_compiles_without_the_assembler_s_keywords)
{
    wb_jit_code *code;
    jit_int_fn f = jit_compile_ok(
        "typedef struct big { int w[40]; } big;\n"
        "int f(int x) {\n"
        "    int mov = x, rax = 2, byte = 3, section = 40, clflush = 500;\n"
        "    big a = {{0}};\n"
        "    a.w[39] = mov;\n"
        "    return a.w[39] * rax + byte + section + clflush + a.w[0];\n"
        "}\n",
        "f", &code);
    cr_assert_eq(f(1000), 2543);
    wb_jit_free(code);

    const char *nop = "int f(void) { __asm__(\"nop\"); return 1; }";
    void *entry = NULL;
    code = NULL;
    if (!WB_TCC_ASM_KEYWORDS_CUT) {
        WBT_OK(jit_compile(nop, "f", &code, &entry));
        wb_jit_free(code);
        cr_skip_test("this libtcc's keyword list is not the one "
                     "scripts/trim-libtcc.sh knows; it was not cut");
    }
    /* What libtcc says depends on the token numbers that the names it
       met first took in the cut list's place, so only that it refuses. */
    WBT_FAILS(jit_compile(nop, "f", &code, &entry), WB_ERR_COMPILE,
              "libtcc rejected the generated code");
    WBT_FAILS(jit_compile("#pragma pack(push, 1)\n"
                             "int f(void) { return 1; }", "f", &code, &entry),
              WB_ERR_COMPILE, "malformed #pragma");
    cr_assert_null(code);
}

/* The permissions of the mapping holding addr, from /proc/self/maps; and
   whether any mapping of the process is writable and executable. */
static void jit_maps(const void *addr, char perms[5], bool *any_wx)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    cr_assert(f, "cannot read /proc/self/maps");
    perms[0] = '\0';
    *any_wx = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char p[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) != 3)
            continue;
        if (p[1] == 'w' && p[2] == 'x')
            *any_wx = true;
        if ((unsigned long)addr >= lo && (unsigned long)addr < hi)
            memcpy(perms, p, 5);
    }
    fclose(f);
}

/* JIT code is read+execute only; freed, its pages turn read-write and
   serve the next compile. */
Test(jit, code_is_never_writable_and_executable)
{
    wb_jit_code *code;
    char perms[5];
    bool any_wx;
    jit_int_fn f = jit_compile_ok("int inc(int x) { return x + 1; }", "inc",
                                  &code);
    void *addr;
    memcpy(&addr, &f, sizeof addr);
    jit_maps(addr, perms, &any_wx);
    cr_assert_str_eq(perms, "r-xp", "JIT code lies in a %s mapping", perms);
    cr_assert_not(any_wx, "some mapping is writable and executable");
    cr_assert_eq(f(1), 2);
    wb_jit_free(code);

    jit_maps(addr, perms, &any_wx);
    cr_assert_str_eq(perms, "rw-p", "freed JIT code lies in a '%s' mapping, "
                     "not in pages kept read-write", perms);
    cr_assert_not(any_wx);
    jit_int_fn g = jit_compile_ok("int dec(int x) { return x - 1; }", "dec",
                                  &code);
    void *again;
    memcpy(&again, &g, sizeof again);
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    cr_assert_eq((uintptr_t)again / page, (uintptr_t)addr / page,
                 "the pages freed were not reused");
    jit_maps(again, perms, &any_wx);
    cr_assert_str_eq(perms, "r-xp");
    cr_assert_eq(g(1), 0);
    wb_jit_free(code);
}

static int jit_graph(void *ctx, const wb_arg *a, int na, wb_value *v, int nv)
{
    (void)ctx; (void)a; (void)na; (void)v; (void)nv;
    return 0;
}

Test(jit, wrapper_source_is_the_compiled_text)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("tiny", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    wb_wrapper *wt = wbt_wrap(s, jit_graph, NULL, WB_TIER_TCC);
    wb_wrapper *wi = wbt_wrap(s, jit_graph, NULL, WB_TIER_INTERP);
    const char *src = wb_wrapper_source(wt);
    cr_assert(src && strstr(src, "from spec 'tiny'"));
    cr_assert(strstr(src, "#line 1 \"tiny\""), "no #line into the spec");
    cr_assert(strstr(src, "\n#line 1\n"), "a later #line names the file "
              "again");
    cr_assert_null(wb_wrapper_source(wi));
    cr_assert_str_eq(wb_tier_name(wb_wrapper_tier(wt)), "tcc");
    wb_tensor *x = wbt_f32(0, 1, 2);
    wb_arg args[1] = {{.t = x}};
    WBT_OK(wb_call(wt, args, 1, NULL, 0));
    wbt_release_last(x);
    wb_wrapper_free(wt);
    wb_wrapper_free(wi);
    wb_spec_free(s);
}

/* ---- executable memory, under load ---- */

/* Counts the mappings of /proc/self/maps that are writable and executable
   at once; *code gets the anonymous read+execute ones (JIT code). */
static int jit_count_wx(int *code)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int wx = 0;
    *code = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off, inode;
        char p[5], dev[16];
        int path = 0;
        if (sscanf(line, "%lx-%lx %4s %lx %15s %lu %n", &lo, &hi, p, &off, dev,
                   &inode, &path) < 6)
            continue;
        wx += p[1] == 'w' && p[2] == 'x';
        *code += strcmp(p, "r-xp") == 0 && inode == 0 &&
                 (path == 0 || line[path] == '\n' || line[path] == '\0');
    }
    fclose(f);
    return wx;
}

typedef struct jit_scan {
    atomic_int stop;
    long scans;
    int wx_seen;
} jit_scan;

static void *jit_scanner(void *p)
{
    jit_scan *sc = p;
    int total;
    while (!atomic_load(&sc->stop) || sc->scans == 0) {
        int wx = jit_count_wx(&total);
        sc->wx_seen += wx != 0;
        sc->scans++;
    }
    return NULL;
}

/* A thread reads the memory map over and over while wrappers are compiled,
   kept alive together and freed: no page is ever writable and executable,
   not even for a moment between relocation and sealing, and freed code
   pages are no longer executable. */
Test(jit, no_writable_executable_page_while_compiling)
{
    enum { N = 64 };
    wb_spec *s;
    wb_wrapper *w[N];
    WBT_OK(wb_spec_new("wx", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_ALIAS_OF_INPUT, 0, false, 0,
                              NULL));
    int before, during, after;
    cr_assert_eq(jit_count_wx(&before), 0, "a W+X mapping before any JIT");
    jit_scan sc = {0};
    atomic_init(&sc.stop, 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, jit_scanner, &sc), 0);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++)
            w[i] = wbt_wrap(s, jit_graph, NULL, WB_TIER_TCC);
        cr_assert_eq(jit_count_wx(&during), 0);
        cr_assert_gt(during, before, "the code pages are not mapped");
        for (int i = 0; i < N; i++)
            wb_wrapper_free(w[i]);
    }
    atomic_store(&sc.stop, 1);
    pthread_join(th, NULL);
    cr_assert_eq(sc.wx_seen, 0, "%d of %ld scans saw a W+X mapping",
                 sc.wx_seen, sc.scans);
    cr_assert_eq(jit_count_wx(&after), 0);
    cr_assert_leq(after, before, "%d code mappings after freeing, %d before",
                  after, before);
    cr_log_info("jit: %ld scans of the memory map, none W+X", sc.scans);
    wb_spec_free(s);
}

/* The sealed image is read+execute as a whole, its data included, so
   generated code that wrote a static would fault at once rather than
   keep state between calls or threads.  The fault ends the test's process
   through a handler of its own, since AddressSanitizer would report a
   fault it handled. */
static void jit_on_segv(int sig)
{
    (void)sig;
    _exit(77);
}

Test(jit, compiled_code_cannot_write_its_statics, .exit_code = 77)
{
    wb_jit_code *code;
    jit_int_fn f = jit_compile_ok("static int calls;\n"
                                  "int count(int x) { calls += x; "
                                  "return calls; }", "count", &code);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = jit_on_segv;
    cr_assert_eq(sigaction(SIGSEGV, &sa, NULL), 0);
    f(1);
    wb_jit_free(code);
}

/* Generated source defines no object that could be written: at file
   scope only typedefs, prototypes, functions and const tables; no static
   that is not const. */
static void jit_assert_no_static_data(const char *src, const char *what)
{
    /* The code alone: comments and directives blanked out. */
    char *code = strdup(src), *o = code;
    cr_assert_not_null(code);
    for (const char *p = src; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            const char *end = strstr(p + 2, "*/");
            cr_assert_not_null(end, "%s: unterminated comment", what);
            p = end + 1;
            *o++ = ' ';
        } else if (*p == '#' && (p == src || p[-1] == '\n')) {
            while (p[1] && p[1] != '\n')
                p++;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    int depth = 0;
    const char *stmt = code;
    for (const char *p = code; *p; p++) {
        if (strncmp(p, "static", 6) == 0 &&
            (p == code || !isalnum((unsigned char)p[-1]))) {
            const char *q = p + 6;
            while (*q == ' ')
                q++;
            cr_assert(strncmp(q, "const", 5) == 0 ||
                          strncmp(q, "inline", 6) == 0,
                      "%s: a static that is not const: %.60s", what, p);
        }
        if (*p == '{') {
            /* A function body ends its definition; a struct's braces are
               part of a declaration that goes on to its ';'. */
            if (depth++ == 0 && memchr(stmt, '(', (size_t)(p - stmt)))
                stmt = NULL;
        } else if (*p == '}' && --depth == 0 && !stmt) {
            stmt = p + 1;
        } else if (*p == ';' && depth == 0) {
            char decl[512];
            size_t n = (size_t)(p - stmt) < sizeof decl - 1
                           ? (size_t)(p - stmt) : sizeof decl - 1;
            memcpy(decl, stmt, n);
            decl[n] = '\0';
            /* A struct's completion declares its tag alone. */
            const char *d = decl + strspn(decl, " \n");
            bool tag = !strncmp(d, "struct ", 7) && p[-1] == '}';
            cr_assert(tag || strstr(decl, "typedef") || strchr(decl, '(') ||
                          strstr(decl, "const"),
                      "%s: a file-scope object: %s", what, decl);
            stmt = p + 1;
        }
    }
    cr_assert_eq(depth, 0, "%s: unbalanced braces", what);
    free(code);
}

Test(jit, generated_code_defines_no_writable_data)
{
    const char *goldens[] = {"tests/golden/case_E.c",
                             "tests/golden/decode_step.c",
                             "tests/golden/train_step.c"};
    for (int i = 0; i < 3; i++) {
        char *src = wbt_read_file(goldens[i]);
        cr_assert_not_null(src, "cannot read %s", goldens[i]);
        jit_assert_no_static_data(src, goldens[i]);
        free(src);
    }
    /* And the text the tcc tier really compiled, #line directives in. */
    wb_spec *s;
    WBT_OK(wb_spec_new("statics", &s));
    WBT_OK(wb_spec_set_training(s, true));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_RESIZE, WB_INPUT_DETACH, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_STORAGE, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_ALIAS_OF_INPUT, 0, true, 3,
                              NULL));
    wb_wrapper *w = wbt_wrap(s, jit_graph, NULL, WB_TIER_TCC);
    jit_assert_no_static_data(wb_wrapper_source(w), "statics");
    wb_wrapper_free(w);
    wb_spec_free(s);
}

/* ---- code near the helpers ---- */

/* Whether the n bytes of code from f on hold a direct call (e8 and a 32-bit
   displacement) of target. */
static bool jit_calls_directly(const void *f, size_t n, const void *target)
{
    const unsigned char *c = f;
    for (size_t i = 0; i + 5 <= n; i++) {
        int32_t rel;
        memcpy(&rel, c + i + 1, sizeof rel);
        if (c[i] == 0xe8 && (const void *)(c + i + 5 + rel) == target)
            return true;
    }
    return false;
}

/* A function of about 6 KiB of code, which calls wb_rt_grad_swap(x) 400
   times and returns the sum of their answers: 400 with x 1 and grad mode
   on. */
static char *jit_big_source(void)
{
    size_t cap = 64 * 1024, len = 0;
    char *src = malloc(cap);
    cr_assert_not_null(src);
    len += (size_t)snprintf(src + len, cap - len,
                            "int wb_rt_grad_swap(int on);\n"
                            "int big(int x)\n{\n    int n = 0;\n");
    for (int i = 0; i < 400; i++)
        len += (size_t)snprintf(src + len, cap - len,
                                "    n += wb_rt_grad_swap(x);\n");
    snprintf(src + len, cap - len, "    return n;\n}\n");
    return src;
}

static void *jit_entry(const char *src, const char *fn, wb_jit_code **code)
{
    void *entry;
    WBT_OK(jit_compile(src, fn, code, &entry));
    return entry;
}

static const char jit_swap_src[] =
    "int wb_rt_grad_swap(int on);\n"
    "int swap(int on) { return wb_rt_grad_swap(on); }\n";

/* Code lands in the zone in the library's own image, and calls a helper
   with one direct call instead of through a jump slot. */
Test(jit, code_near_the_helpers_calls_them_directly)
{
    wb_jit_code *code;
    void *entry = jit_entry(jit_swap_src, "swap", &code), *helper;
    jit_int_fn f;
    memcpy(&f, &entry, sizeof f);
    wb_rt_fnptr h = (wb_rt_fnptr)wb_rt_grad_swap;
    memcpy(&helper, &h, sizeof helper);
    cr_assert(wb_jit_in_zone(entry));
    cr_assert(jit_calls_directly(entry, 64, helper),
              "the call goes through a jump slot");
    wb_set_grad_enabled(true);
    cr_assert_eq(f(0), 1, "grad mode was on before");
    cr_assert_eq(f(1), 0, "grad mode was off inside");
    cr_assert(wb_grad_enabled());
    wb_jit_free(code);
}

/* Once the zone is full, code goes anywhere, through jump slots; a unit
   larger than the room left is compiled again for pages anywhere; a page
   freed in the zone is used again. */
Test(jit, code_goes_anywhere_the_zone_has_no_room_for)
{
    static wb_jit_code *codes[WB_JIT_ZONE_PAGES];
    wb_jit_code *code;
    void *entry, *helper;
    wb_rt_fnptr h = (wb_rt_fnptr)wb_rt_grad_swap;
    memcpy(&helper, &h, sizeof helper);
    int n = 0;
    wb_set_grad_enabled(true);
    while (wb_test_jit_zone_free_pages() > 0) {
        cr_assert_lt(n, WB_JIT_ZONE_PAGES, "the zone never fills");
        jit_entry("int one(void) { return 1; }", "one", &codes[n++]);
    }
    entry = jit_entry(jit_swap_src, "swap", &code);
    jit_int_fn f;
    memcpy(&f, &entry, sizeof f);
    cr_assert_not(wb_jit_in_zone(entry));
    cr_assert_not(jit_calls_directly(entry, 64, helper));
    cr_assert_eq(f(f(1)), 1);
    wb_jit_free(code);

    /* One page free, and a unit that needs two. */
    wb_jit_free(codes[--n]);
    cr_assert_eq(wb_test_jit_zone_free_pages(), 1);
    char *big = jit_big_source();
    entry = jit_entry(big, "big", &code);
    memcpy(&f, &entry, sizeof f);
    cr_assert_not(wb_jit_in_zone(entry));
    cr_assert_eq(f(1), 400);
    cr_assert_eq(wb_test_jit_zone_free_pages(), 1, "the zone kept its page");
    wb_jit_free(code);
    free(big);

    entry = jit_entry(jit_swap_src, "swap", &code);
    cr_assert(wb_jit_in_zone(entry), "the page freed is not used again");
    cr_assert(jit_calls_directly(entry, 64, helper));
    wb_jit_free(code);
    while (n > 0)
        wb_jit_free(codes[--n]);
    cr_assert_eq(wb_test_jit_zone_free_pages(), WB_JIT_ZONE_PAGES);
}

/* ---- libtcc's heap ---- */

static wb_test_jit_heap_stats jit_heap(void)
{
    wb_test_jit_heap_stats st;
    wb_test_jit_heap_stat(&st);
    return st;
}

static bool jit_heap_owns(const void *p)
{
    const char *base = jit_heap().base, *c = p;
    return base && c >= base && c < base + WB_JIT_HEAP_SIZE;
}

/* How many pages of the arena from offset at on are in memory. */
static size_t jit_heap_resident(size_t at)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = (WB_JIT_HEAP_SIZE - at) / page, count = 0;
    unsigned char *vec = malloc(n);
    cr_assert_not_null(vec);
    cr_assert_eq(mincore((char *)jit_heap().base + at, n * page, vec), 0);
    for (size_t i = 0; i < n; i++)
        count += vec[i] & 1;
    free(vec);
    return count;
}

Test(jit_heap, a_compile_leaves_the_arena_empty_and_in_use)
{
    wb_jit_code *code;
    jit_int_fn f = jit_compile_ok("int twice(int x) { return 2 * x; }",
                                  "twice", &code);
    wb_test_jit_heap_stats st = jit_heap();
    cr_assert_not_null(st.base, "libtcc did not allocate from the arena");
    cr_assert_gt(st.high, 0);
    cr_assert_eq(st.live, 0, "%ld blocks outlived the compile", st.live);
    cr_assert(!st.broken);
    cr_assert_gt(jit_heap_resident(0), 0);
    /* The next compile reuses the pages: it reaches no further. */
    wb_jit_code *again;
    jit_compile_ok("int twice(int x) { return 2 * x; }", "twice", &again);
    cr_assert_eq(jit_heap().high, st.high);
    cr_assert_eq(f(21), 42);
    wb_jit_free(code);
    wb_jit_free(again);
}

Test(jit_heap, a_large_compile_hands_back_what_it_touched_above_the_kept_part)
{
    /* Ten thousand functions need more of the arena than it keeps. */
    enum { N = 10000 };
    char *src = malloc((size_t)N * 48), *p = src;
    cr_assert_not_null(src);
    for (int i = 0; i < N; i++)
        p += sprintf(p, "int f%d(int x) { return x + %d; }\n", i, i);
    wb_jit_code *code;
    jit_int_fn f = jit_compile_ok(src, "f0", &code);
    free(src);
    cr_assert_eq(f(7), 7);
    wb_test_jit_heap_stats st = jit_heap();
    cr_assert_eq(st.live, 0);
    cr_assert_eq(st.high, WB_JIT_HEAP_KEEP, "the compile stayed under the "
                 "kept part (%zu bytes): the test proves nothing", st.high);
    cr_assert_eq(jit_heap_resident(WB_JIT_HEAP_KEEP), 0);
    cr_assert_gt(jit_heap_resident(0), 0);
    wb_jit_free(code);
}

/* The allocator itself, as libtcc sees it during a compile (this test is
   the process's only thread, so it needs no lock). */
Test(jit_heap, blocks_behave_as_the_c_library_s)
{
    wb_jit_heap_open();
    char *a = wb_jit_heap_malloc(100);
    cr_assert(jit_heap_owns(a), "the arena did not open");
    cr_assert_eq((uintptr_t)a % 16, 0);
    memset(a, 'a', 100);
    /* The last block grows where it is. */
    cr_assert_eq(wb_jit_heap_realloc(a, 1000), a);
    char *b = wb_jit_heap_malloc(10);
    cr_assert_eq((uintptr_t)b % 16, 0);
    cr_assert_geq(b, a + 1000);
    /* Any other moves, keeping its bytes. */
    char *moved = wb_jit_heap_realloc(a, 5000);
    cr_assert_neq(moved, a);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(moved[i], 'a');
    /* A freed last block is reused, and calloc zeroes what it reuses. */
    memset(moved, 'x', 5000);
    wb_jit_heap_free(moved);
    char *z = wb_jit_heap_calloc(1000, 5);
    cr_assert_eq(z, moved);
    for (int i = 0; i < 5000; i++)
        cr_assert_eq(z[i], 0);
    cr_assert_null(wb_jit_heap_calloc(SIZE_MAX / 2, 4));
    /* What the arena has no room for comes from the C library. */
    char *big = wb_jit_heap_malloc(WB_JIT_HEAP_SIZE);
    cr_assert_not_null(big);
    cr_assert(!jit_heap_owns(big));
    big[WB_JIT_HEAP_SIZE - 1] = 1;
    wb_jit_heap_free(big);
    cr_assert_null(wb_jit_heap_realloc(z, 0));
    wb_jit_heap_free(b);
    cr_assert_eq(jit_heap().live, 0);
    wb_jit_heap_close();
    /* Closed, it hands every block to the C library. */
    char *c = wb_jit_heap_malloc(16);
    cr_assert(!jit_heap_owns(c));
    wb_jit_heap_free(c);
}

/* libtcc reports an allocation of its own that failed as an error in the
   code ("memory full"): the compile fails out of memory, not as code
   libtcc rejects, and the next one compiles. */
Test(jit_heap, libtcc_out_of_memory_is_nomem)
{
    wb_jit_code *code = NULL;
    void *entry = NULL;
    wb_test_jit_heap_limit((size_t)1 << 20);
    WBT_FAILS(jit_compile("static const char big[4 << 20] = {1};\n"
                          "int f(int i) { return big[i]; }", "f", &code,
                          &entry),
              WB_ERR_NOMEM, "libtcc ran out of memory");
    cr_assert_null(code);
    wb_test_jit_heap_limit(0);
    cr_assert_eq(jit_compile_ok("int twice(int x) { return 2 * x; }",
                                "twice", &code)(4), 8);
    wb_jit_free(code);
}

Test(jit_heap, a_block_left_live_retires_the_arena)
{
    wb_jit_heap_open();
    char *kept = wb_jit_heap_malloc(64);
    cr_assert(jit_heap_owns(kept));
    wb_jit_heap_close();
    cr_assert(jit_heap().broken);
    /* Nothing carves over the live block, and compiles still work. */
    wb_jit_heap_open();
    char *c = wb_jit_heap_malloc(64);
    cr_assert(!jit_heap_owns(c));
    wb_jit_heap_free(c);
    wb_jit_heap_close();
    wb_jit_code *code;
    cr_assert_eq(jit_compile_ok("int twice(int x) { return 2 * x; }",
                                "twice", &code)(4), 8);
    wb_jit_free(code);
    wb_jit_heap_free(kept);
}
