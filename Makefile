# wrapbake -- straight-line runtime wrappers for compiled graphs.
#
#   make            the library and the tools
#   make test       installs missing Debian packages, builds, runs the suite
#   make test-asan  the same suite under AddressSanitizer + UBSan
#   make bench      the microbenchmark
#   make bench-check  times `wrapbake check --json` on 2,500 real schemas
#   make install    PREFIX=/usr/local DESTDIR=

# ---- settings -------------------------------------------------------------
PREFIX    ?= /usr/local
DESTDIR   ?=
LIBDIR    ?= $(PREFIX)/lib
INCDIR    ?= $(PREFIX)/include
BINDIR    ?= $(PREFIX)/bin
PCDIR     ?= $(LIBDIR)/pkgconfig
CC        ?= cc
OPT       ?= -O2 -g
SANITIZE  ?=
BUILD     ?= build
WARN      := -std=c11 -Wall -Wextra -Wpedantic -Werror
DEFS      := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
LIBS      := -ltcc -ldl -lpthread -lm
CLI_LIBS  := -lyaml
TEST_LIBS := -lcriterion
VERSION   := 0.1.0
# Random specs the differential test also builds ahead of time (of the
# 10000 it runs on the tcc tier); each costs the system compiler time.
DIFF_AOT_COUNT ?= 2000
# ---------------------------------------------------------------------------

ifneq ($(SANITIZE),)
OPT += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
ALL_CFLAGS  = $(WARN) $(DEFS) $(OPT) -Iinclude $(CFLAGS)
ALL_LDFLAGS = $(OPT) $(LDFLAGS)

# The library is src/spec, src/wrappers and src/runtime; src/cli holds the
# wrapbake program's own sources, which stay out of libwrapbake.a.
LIB_SRC   := $(wildcard src/spec/*.c src/wrappers/*.c src/runtime/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC   := $(wildcard src/cli/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)

LIB       := $(BUILD)/lib/libwrapbake.a
TESTS     := $(BUILD)/bin/wrapbake-tests
BENCH     := $(BUILD)/bin/wrapbake-bench
EXAMPLE   := $(BUILD)/bin/readme-example
ALLOCS    := $(BUILD)/bin/alloc-count
CLI       := $(BUILD)/bin/wrapbake
TIER_SRC  := $(BUILD)/bin/tier-source
DEPS      := $(BUILD)/.deps-ok

.PHONY: all test test-asan bench bench-check install uninstall clean deps \
        golden example

all: $(LIB) $(BENCH) $(CLI)

# Installs what the build needs when it is missing (once per build tree).
$(DEPS): scripts/install-deps.sh
	@mkdir -p $(@D)
	sh scripts/install-deps.sh
	@touch $@
deps: $(DEPS)

$(BUILD)/obj/%.o: %.c $(DEPS) $(wildcard include/*.h src/*/*.h tests/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

# -rdynamic: the differential test loads ahead-of-time code built as a
# shared object, which calls the library's helpers in this program.
$(TESTS): $(TEST_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $(TEST_OBJ) $(LIB) $(TEST_LIBS) $(LIBS)

# The benchmark reads spec files with the CLI's reader.
$(BENCH): $(BENCH_OBJ) $(BUILD)/obj/src/cli/input.o $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $(BENCH_OBJ) $(BUILD)/obj/src/cli/input.o \
	    $(LIB) $(CLI_LIBS) $(LIBS)

$(CLI): $(CLI_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(CLI_LIBS) $(LIBS)

# Prints the source a tcc-tier wrapper compiled, through the public API
# alone, so that tests/cli/run.sh can hold `wrapbake emit` to it.
$(TIER_SRC): tests/cli/tier_source.c $(LIB) $(wildcard include/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(LIBS)

# The embedding example in README.md, extracted, compiled and run as is.
$(BUILD)/example/example.c: README.md
	@mkdir -p $(@D)
	sed -n '/^<!-- example -->/,/^```$$/p' README.md | sed '1,2d;$$d' > $@
$(EXAMPLE): $(BUILD)/example/example.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(LIBS)
example: $(EXAMPLE)
	$(EXAMPLE)

# Counts heap allocations per call by replacing malloc; sanitizers replace
# it too, so sanitizer builds leave it out.
$(ALLOCS): tests/tools/alloc_count.c $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(LIBS)
ifeq ($(SANITIZE),)
ALLOC_RUN := $(ALLOCS)
else
ALLOC_RUN := @echo "alloc-count: skipped under sanitizers, which replace malloc"
endif

# Criterion does not fail a test whose worker LeakSanitizer flags at exit,
# so any sanitizer report in the log fails the run.  Allocation stacks are
# cut to the allocator and its caller, so that the suppression of
# Criterion's own leak (tests/lsan.supp) cannot hide one of ours.
test: $(TESTS) $(EXAMPLE) $(if $(SANITIZE),,$(ALLOCS)) $(CLI) $(TIER_SRC) $(BENCH)
	$(EXAMPLE)
	$(ALLOC_RUN)
	@rc=0; WB_DIFF_AOT_COUNT=$(DIFF_AOT_COUNT) LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0:malloc_context_size=2 \
	    $(TESTS) --jobs 2 2>$(BUILD)/tests.log || rc=$$?; \
	cat $(BUILD)/tests.log; \
	if grep -q 'Sanitizer' $(BUILD)/tests.log; then \
	    echo 'make test: sanitizer reports above' >&2; exit 1; fi; \
	exit $$rc
	sh tests/cli/run.sh $(CLI) $(TIER_SRC)
	CC="$(CC)" AOT_FLAGS="$(OPT)" sh tests/aot/run.sh $(CLI) $(LIB)
	sh tests/bench/run.sh $(BENCH)

test-asan:
	$(MAKE) test BUILD=build/asan SANITIZE=address,undefined

bench: $(BENCH)
	$(BENCH)

# `wrapbake check --json` on 2,500 entries: the real schemas of
# tests/cli/native_functions.yaml, replicated with renamed overloads.
bench-check: $(CLI)
	sh tests/cli/run.sh --bench $(CLI)

# Rewrites the golden files from the current emitter; review the diff.
golden: $(TESTS) $(CLI) $(TIER_SRC)
	WB_UPDATE_GOLDEN=1 $(TESTS) --filter 'golden/*'
	WB_UPDATE_GOLDEN=1 sh tests/cli/run.sh $(CLI) $(TIER_SRC)

# The pkg-config file names the install paths, so it is written at install
# time from the PREFIX given then.
PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
             -e 's|@INCDIR@|$(INCDIR)|' -e 's|@VERSION@|$(VERSION)|'

install: $(LIB) $(BENCH) $(CLI)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(PCDIR)
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/libwrapbake.a
	install -m 644 include/wrapbake.h $(DESTDIR)$(INCDIR)/wrapbake.h
	install -m 755 $(BENCH) $(DESTDIR)$(BINDIR)/wrapbake-bench
	install -m 755 $(CLI) $(DESTDIR)$(BINDIR)/wrapbake
	$(PC_SED) wrapbake.pc.in > $(DESTDIR)$(PCDIR)/wrapbake.pc
	chmod 644 $(DESTDIR)$(PCDIR)/wrapbake.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libwrapbake.a $(DESTDIR)$(INCDIR)/wrapbake.h \
	    $(DESTDIR)$(BINDIR)/wrapbake-bench $(DESTDIR)$(BINDIR)/wrapbake \
	    $(DESTDIR)$(PCDIR)/wrapbake.pc

clean:
	rm -rf build
