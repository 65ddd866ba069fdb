# wrapbake -- straight-line runtime wrappers for compiled graphs.
#
#   make            the library and the tools
#   make test       installs missing Debian packages, builds, runs the suite
#   make test-asan  the same suite under AddressSanitizer + UBSan
#   make test-tsan  the concurrency tests under ThreadSanitizer
#   make test-valgrind  a subset under valgrind memcheck: no error, no leak
#   make fuzz       each libFuzzer target for FUZZ_TIME seconds (clang)
#   make fuzz-replay  the fuzz corpora through plain replay binaries
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
DOCDIR    ?= $(PREFIX)/share/doc/wrapbake
CC        ?= cc
OPT       ?= -O2 -g
SANITIZE  ?=
BUILD     ?= build
# V=1 shows each command, not only "CC file".
V         ?=
WARN      := -std=c11 -Wall -Wextra -Wpedantic -Werror
DEFS      := -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
LIBS      := -ldl -lpthread -lm
CLI_LIBS  := -lyaml
TEST_LIBS := -lcriterion
FUZZ_TIME ?= 30
FUZZ_CC   ?= clang
VERSION   := 0.1.0
# CUDA: on when nvcc and the CUDA runtime are found under CUDA_HOME;
# WITH_CUDA=0 or WITH_CUDA=1 forces it either way.
CUDA_HOME ?= /usr/local/cuda
CUDA_FOUND := $(if $(and $(wildcard $(CUDA_HOME)/bin/nvcc),$(wildcard $(CUDA_HOME)/lib64/libcudart.so)),1,0)
WITH_CUDA ?= $(CUDA_FOUND)
# PTX for any GPU the driver can compile it for, and machine code for the
# common data-center ones.
CUDA_ARCH ?= -gencode arch=compute_75,code=compute_75 \
             -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
# Random specs the differential test also builds ahead of time (of the
# 10000 it runs on the tcc tier); each costs the system compiler time.
DIFF_AOT_COUNT ?= 2000
# ---------------------------------------------------------------------------

# A line per step ("CC src/core/tensor.c"); V=1 shows the commands.
# `make test` builds without them, so that its output is a line per suite.
ifeq ($(V),1)
Q   :=
say := @true
else ifeq ($(MAKECMDGOALS),test)
Q   := @
say := @true
else
Q   := @
say := @printf '  %-5s %s\n'
endif

ifneq ($(SANITIZE),)
OPT += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
endif
ALL_CFLAGS  = $(WARN) $(DEFS) $(OPT) -Iinclude $(CFLAGS)
ALL_LDFLAGS = $(OPT) $(LDFLAGS)

# With CUDA the library holds the copy kernel's fatbin (src/core/cuda.c
# embeds it) and loads the CUDA runtime when a program first asks for a
# CUDA device: programs link nothing more, and run where CUDA is absent.
CUDA_FATBIN := $(BUILD)/obj/src/core/cuda_copy.fatbin
ifeq ($(WITH_CUDA),1)
ifeq ($(CUDA_FOUND),0)
$(error WITH_CUDA=1, but no nvcc and libcudart.so under CUDA_HOME=$(CUDA_HOME))
endif
ALL_CFLAGS += -DWB_WITH_CUDA -DWB_CUDA_FATBIN='"$(abspath $(CUDA_FATBIN))"' \
              -DWB_CUDA_LIBDIR='"$(CUDA_HOME)/lib64"' -isystem $(CUDA_HOME)/include
endif

# The library is five layers, each including only those below it (make
# test checks, scripts/check-layers.sh): src/core (tensors, storages,
# devices, messages), src/spec (the IR and the schema parser), src/abi (what
# generated code links to), src/gen (the emitter and the interpreter) and
# src/tiers (wrappers, the JIT, the compilers, the caches).  src/cli holds
# the wrapbake program's own sources, which stay out of libwrapbake.a.
LAYERS    := core spec abi gen tiers
LIB_SRC   := $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_OBJ := $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
# The benchmark's builtin cases built ahead of time: `wrapbake emit --aot`
# names its files after the specs of bench/cases.txt (PREFIX_NAME_INDEX.c),
# and the rule that runs it fails when they are not these.
BENCH_AOT     := $(BUILD)/bench-aot
BENCH_AOT_SRC := $(BENCH_AOT)/bench_cases.c \
                 $(patsubst %,$(BENCH_AOT)/bench_cases_%.c,A_0 B_1 C_2 D_3 E_4)
BENCH_AOT_OBJ := $(BENCH_AOT_SRC:$(BENCH_AOT)/%.c=$(BUILD)/obj/bench-aot/%.o)
CLI_SRC   := $(wildcard src/cli/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)

# The library's own objects hide every name but the public API (WB_API in
# wrapbake.h) and the helpers generated code links to (helpers.def);
# tests/exports.sh holds them to that.
$(LIB_OBJ): ALL_CFLAGS += -fvisibility=hidden

LIB       := $(BUILD)/lib/libwrapbake.a
# The shared library's soname carries the ABI version.
ABI       := $(shell sed -n 's/^\#define WB_ABI_VERSION \([0-9]*\).*/\1/p' include/wrapbake.h)
SO_NAME   := libwrapbake.so.$(ABI)
SO        := $(BUILD)/lib/$(SO_NAME)
PIC_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj-pic/%.o)
TESTS     := $(BUILD)/bin/wrapbake-tests
BENCH     := $(BUILD)/bin/wrapbake-bench
EXAMPLE   := $(BUILD)/bin/readme-example
ALLOCS    := $(BUILD)/bin/alloc-count
ALLOCFAIL := $(BUILD)/bin/alloc-fail
TRUST     := $(BUILD)/bin/env-trust
CLI       := $(BUILD)/bin/wrapbake
TIER_SRC  := $(BUILD)/bin/tier-source
# `make deps`, `make test` and `make bench` (and the targets that run
# them) install the Debian packages they lack; every other goal only
# checks for what the build needs and says how to get it.
INSTALL_GOALS := deps test test-% bench bench-check golden fuzz fuzz-% tsan-run
ifneq ($(filter $(INSTALL_GOALS),$(MAKECMDGOALS)),)
DEPS      := $(BUILD)/.deps-ok
else
DEPS      := $(BUILD)/.deps-checked
endif

.PHONY: all test test-asan test-tsan test-valgrind bench bench-cuda bench-check install \
        uninstall clean deps golden example fuzz fuzz-run fuzz-replay \
        tsan-run test-torch

all: $(LIB) $(if $(SANITIZE),,$(SO)) $(BENCH) $(CLI)

$(BUILD)/.deps-ok: scripts/install-deps.sh
	@mkdir -p $(@D)
	sh scripts/install-deps.sh
	@touch $@
$(BUILD)/.deps-checked: scripts/install-deps.sh
	@mkdir -p $(@D)
	@sh scripts/install-deps.sh --check
	@touch $@
deps: $(DEPS)

# Each object also depends on the headers its source includes, as the
# compiler lists them (-MMD) in the .d file beside it.
$(BUILD)/obj/%.o: %.c | $(DEPS)
	@mkdir -p $(@D)
	$(say) CC $<
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@
-include $(shell find $(BUILD)/obj $(BUILD)/obj-pic -name '*.d' 2>/dev/null)

# libtcc marks the pages it relocates code into read-write-execute
# (mprotect in its tccrun.o).  Its objects are copied into libwrapbake.a
# with that call renamed to wb_jit_tcc_mprotect (src/tiers/jit.c), which
# leaves the pages read-write until wb_jit_compile seals them
# read+execute: no page is ever writable and executable at once.  Its
# malloc, calloc, realloc and free (in libtcc.o) are renamed to the arena
# of src/tiers/jitheap.c, which each compile leaves empty and the next
# reuses.  Its stdout, stderr and environ become variables of
# src/tiers/jit.c, so that the objects, built for executables, also go
# into libwrapbake.so.  The built-in declarations libtcc would read at the
# start of every compile, the assembler's keywords and the target's
# predefined macros are cut (scripts/trim-libtcc.sh).
# Programs link the library without -ltcc, and may link it beside the
# library for libtcc of their own: in the archive libtcc's objects are one
# object with src/tiers/jit.c, the one source that calls libtcc (ld -r),
# in which objcopy leaves no name global but wb_'s, so none of libtcc's
# (tcc_new, file, next...) reaches the program's link; in the shared
# library the version script binds them locally.
TCC_A    = $(shell $(CC) -print-file-name=libtcc.a)
TCC_DIR := $(BUILD)/obj/libtcc
$(TCC_DIR)/.sealed: Makefile scripts/trim-libtcc.sh | $(DEPS)
	$(say) TCC $(TCC_A)
	$(Q)rm -rf $(TCC_DIR)
	$(Q)mkdir -p $(TCC_DIR)
	$(Q)cd $(TCC_DIR) && ar x $(TCC_A)
	$(Q)for o in $(TCC_DIR)/*.o; do \
	    objcopy --redefine-sym mprotect=wb_jit_tcc_mprotect \
	        --redefine-sym stdout=wb_jit_tcc_stdout \
	        --redefine-sym stderr=wb_jit_tcc_stderr \
	        --redefine-sym environ=wb_jit_tcc_environ \
	        --redefine-sym malloc=wb_jit_heap_malloc \
	        --redefine-sym calloc=wb_jit_heap_calloc \
	        --redefine-sym realloc=wb_jit_heap_realloc \
	        --redefine-sym free=wb_jit_heap_free $$o || exit 1; done
	$(Q)sh scripts/trim-libtcc.sh $(TCC_DIR) >$(TCC_DIR)/libtcc-trim.h
	$(Q)touch $@
$(BUILD)/obj/%.libtcc.o: $(BUILD)/obj/%.o $(TCC_DIR)/.sealed
	$(say) LD $@
	$(Q)ld -r -o $@.tmp $< $(TCC_DIR)/*.o
	$(Q)objcopy --wildcard --keep-global-symbol='wb_*' $@.tmp $@
	$(Q)rm -f $@.tmp
# The jit suite checks the cuts where the script made them.
$(BUILD)/obj/tests/test_jit.o: $(TCC_DIR)/.sealed
$(BUILD)/obj/tests/test_jit.o: ALL_CFLAGS += -I$(TCC_DIR)

$(CUDA_FATBIN): src/core/cuda_copy.cu src/core/cuda_copy.h
	@mkdir -p $(@D)
	$(say) NVCC $<
	$(Q)$(CUDA_HOME)/bin/nvcc -fatbin -O3 $(CUDA_ARCH) -o $@ $<
$(BUILD)/obj/src/core/cuda.o: $(if $(filter 1,$(WITH_CUDA)),$(CUDA_FATBIN))

JIT_OBJ := $(BUILD)/obj/src/tiers/jit.o
$(LIB): $(filter-out $(JIT_OBJ),$(LIB_OBJ)) $(JIT_OBJ:.o=.libtcc.o)
	@mkdir -p $(@D)
	$(Q)rm -f $@
	$(say) AR $@
	$(Q)ar rcs $@ $^

# The shared library: the same sources built position-independent, with
# libtcc's objects inside.  The version script exports the wb_ names the
# objects leave visible and binds libtcc's locally, which lets its code,
# built for executables, link without text relocations.  Sanitizer
# builds make the archive alone.  The shared library is never unloaded
# (-z nodelete): a thread that released a tensor runs the library's
# destructor of its header cache when it exits, and the promoter is a
# thread of its own, so a plugin that links the library may be unloaded
# while they live on.
$(BUILD)/obj-pic/%.o: %.c | $(DEPS)
	@mkdir -p $(@D)
	$(say) CC $<
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@
$(BUILD)/obj-pic/src/core/cuda.o: $(if $(filter 1,$(WITH_CUDA)),$(CUDA_FATBIN))
$(SO): $(PIC_OBJ) $(TCC_DIR)/.sealed src/libwrapbake.map
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_LDFLAGS) -shared -Wl,-soname,$(SO_NAME) \
	    -Wl,--version-script=src/libwrapbake.map -Wl,-z,defs \
	    -Wl,-z,nodelete -o $@ \
	    $(PIC_OBJ) $(TCC_DIR)/*.o -ldl -lpthread -lm
	$(Q)ln -sf $(SO_NAME) $(BUILD)/lib/libwrapbake.so

# Test hooks (wb_test_*, under WB_TEST_HOOKS) compile only into the test
# build: the files that define them are built a second time with the
# hooks into libwrapbake-test.a, which the test suite links in place of
# libwrapbake.a.  tests/exports.sh checks libwrapbake.a holds none.
HOOK_SRC := src/abi/symbols.c src/tiers/jit.c src/tiers/jitheap.c src/tiers/tiers.c
HOOK_OBJ := $(HOOK_SRC:%.c=$(BUILD)/obj/%.hooks.o)
TEST_LIB := $(BUILD)/lib/libwrapbake-test.a
$(BUILD)/obj/%.hooks.o: %.c | $(DEPS)
	@mkdir -p $(@D)
	$(say) CC $<
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@
$(HOOK_OBJ) $(TEST_OBJ): ALL_CFLAGS += -DWB_TEST_HOOKS
$(HOOK_OBJ): ALL_CFLAGS += -fvisibility=hidden
$(TEST_LIB): $(filter-out $(HOOK_SRC:%.c=$(BUILD)/obj/%.o),$(LIB_OBJ)) \
             $(filter-out $(JIT_OBJ:.o=.hooks.o),$(HOOK_OBJ)) \
             $(JIT_OBJ:.o=.hooks.libtcc.o)
	@mkdir -p $(@D)
	$(Q)rm -f $@
	$(say) AR $@
	$(Q)ar rcs $@ $^

# -rdynamic: the differential test loads ahead-of-time code built as a
# shared object, which calls the library's helpers in this program.
$(TESTS): $(TEST_OBJ) $(TEST_LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_LDFLAGS) -rdynamic -o $@ $(TEST_OBJ) $(TEST_LIB) $(TEST_LIBS) $(LIBS)


# The benchmark reads spec files with the CLI's reader, and carries the
# ahead-of-time code of its builtin cases for the aot column: the wrapbake
# command built first writes it from bench/cases.txt, the text the
# benchmark takes those specs from.  The command leaves a file whose
# content would not change untouched, so a stamp records each run and
# only changed code is rebuilt.  bench/aot.c is the one benchmark source
# that includes the generated header.
$(BENCH_AOT)/.stamp: bench/cases.txt $(CLI)
	@mkdir -p $(@D)
	$(say) GEN $(BENCH_AOT)
	$(Q)$(CLI) emit --aot -o $(BENCH_AOT) --prefix bench_cases bench/cases.txt \
	    >$(BENCH_AOT)/files
	@printf '%s\n' $(BENCH_AOT)/bench_cases.h $(BENCH_AOT_SRC) | sort \
	    >$(BENCH_AOT)/files.want
	@sort $(BENCH_AOT)/files | cmp -s - $(BENCH_AOT)/files.want || { \
	    echo 'Makefile: BENCH_AOT_SRC does not list the files written for' \
	         'bench/cases.txt:' >&2; cat $(BENCH_AOT)/files >&2; exit 1; }
	$(Q)touch $@
$(BENCH_AOT)/bench_cases.h $(BENCH_AOT_SRC): $(BENCH_AOT)/.stamp ;
$(BUILD)/obj/bench-aot/%.o: $(BENCH_AOT)/%.c $(BENCH_AOT)/bench_cases.h
	@mkdir -p $(@D)
	$(say) CC $<
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/obj/bench/aot.o: bench/aot.c $(BENCH_AOT)/bench_cases.h
	@mkdir -p $(@D)
	$(say) CC $<
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -I$(BENCH_AOT) -c $< -o $@

$(BENCH): $(BENCH_OBJ) $(BENCH_AOT_OBJ) $(BUILD)/obj/src/cli/input.o $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(BENCH_OBJ) $(BENCH_AOT_OBJ) \
	    $(BUILD)/obj/src/cli/input.o $(LIB) $(CLI_LIBS) $(LIBS)

$(CLI): $(CLI_OBJ) $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(CLI_LIBS) $(LIBS)

# Prints the source a tcc-tier wrapper compiled, through the public API
# alone, so that tests/cli/run.sh can hold `wrapbake emit` to it.
$(TIER_SRC): tests/cli/tier_source.c $(LIB) $(wildcard include/*.h)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(LIBS)

# The embedding example in README.md, extracted, compiled and run as is.
$(BUILD)/example/example.c: README.md
	@mkdir -p $(@D)
	$(say) GEN $@
	$(Q)sed -n '/^<!-- example -->/,/^```$$/p' README.md | sed '1,2d;$$d' > $@
$(EXAMPLE): $(BUILD)/example/example.c $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(LIBS)
example: $(EXAMPLE)
	$(EXAMPLE)

# The emulated CUDA runtime the CUDA tests also run on (tests/test_cuda*.c):
# loaded by the library through $$WRAPBAKE_CUDART, in place of libcudart.
FAKECUDA := $(BUILD)/lib/libfakecudart.so
$(FAKECUDA): tests/tools/fakecuda.c tests/tools/fakecuda.h \
             src/core/cuda_copy.h
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -shared $(ALL_LDFLAGS) -o $@ $< -lpthread
ifeq ($(WITH_CUDA),1)
CUDA_EMU_RUN := WRAPBAKE_CUDART=$(abspath $(FAKECUDA)) $(TESTS) --filter "cuda/*" --verbose=0
else
CUDA_EMU_RUN := echo "skipped: built without CUDA"
endif

# Counts heap allocations per call by replacing malloc; sanitizers replace
# it too, so sanitizer builds leave it out.
$(ALLOCS): tests/tools/alloc_count.c $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(LIBS)
# Fails the k-th allocation for every k over the main paths; it replaces
# malloc too.
$(ALLOCFAIL): tests/tools/alloc_fail.c $(BUILD)/obj/src/cli/input.o $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/obj/src/cli/input.o \
	    $(LIB) $(CLI_LIBS) $(LIBS)
# Prints what the library made of its environment, which tests/trust/run.sh
# runs plainly and setuid.
$(TRUST): tests/trust/env_trust.c $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(LIBS)
ifeq ($(SANITIZE),)
ALLOC_RUN := $(ALLOCS) && $(ALLOCFAIL)
TRUST_RUN := CC="$(CC)" sh tests/trust/run.sh $(TRUST)
SHARED_RUN := CC="$(CC)" sh tests/shared/run.sh $(CLI) $(SO)
STATIC_RUN := CC="$(CC)" sh tests/shared/static.sh $(LIB)
INSTALL_RUN := CC="$(CC)" sh tests/shared/install.sh "$(MAKE)" $(BUILD)
else
INSTALL_RUN := echo "skipped under sanitizers, which build no shared library"
TRUST_RUN := echo "skipped under sanitizers, whose runtimes do not run setuid"
SHARED_RUN := echo "skipped under sanitizers, which build no shared library"
STATIC_RUN := echo "skipped under sanitizers: programs built plainly cannot link their archive"
ALLOC_RUN := echo "skipped under sanitizers, which replace malloc"
endif

# Fuzz targets (fuzz/): each defines LLVMFuzzerTestOneInput.  Linked with
# fuzz/replay.c by any compiler they run a corpus once (replay-NAME, part
# of `make test`); linked by clang with -fsanitize=fuzzer they fuzz
# (fuzz-NAME, `make fuzz`, in a build tree of their own).
FUZZ_TARGETS := parse build diff
FUZZ_REPLAY  := $(FUZZ_TARGETS:%=$(BUILD)/bin/replay-%)
FUZZ_BIN     := $(FUZZ_TARGETS:%=$(BUILD)/bin/fuzz-%)
$(BUILD)/obj/fuzz/%.o: fuzz/fuzz.h
.SECONDARY: $(FUZZ_TARGETS:%=$(BUILD)/obj/fuzz/fuzz_%.o) $(BUILD)/obj/fuzz/replay.o
$(BUILD)/bin/replay-%: $(BUILD)/obj/fuzz/fuzz_%.o $(BUILD)/obj/fuzz/replay.o \
                       $(BUILD)/obj/src/cli/input.o $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o,$^) $(LIB) $(CLI_LIBS) $(LIBS)
$(BUILD)/bin/fuzz-%: $(BUILD)/obj/fuzz/fuzz_%.o $(BUILD)/obj/src/cli/input.o \
                     $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(LIB) \
	    $(CLI_LIBS) $(LIBS)

fuzz-replay: $(FUZZ_REPLAY)
	@for t in $(FUZZ_TARGETS); do \
	    $(BUILD)/bin/replay-$$t fuzz/corpus/$$t || exit 1; done

# New inputs go to build/fuzz/corpus, never into the seed corpora; a crash
# leaves its input in build/fuzz/crashes and fails the run.
fuzz:
	$(MAKE) fuzz-run BUILD=build/fuzz CC=$(FUZZ_CC) \
	    OPT='-O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all -fsanitize=fuzzer-no-link,address,undefined'
fuzz-run: $(FUZZ_BIN)
	@mkdir -p $(BUILD)/crashes
	@$(TEST_SETUP)
	@$(TEST_ENV) for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(BUILD)/corpus/$$t; \
	    echo "fuzz-$$t: $(FUZZ_TIME) s"; \
	    $(BUILD)/bin/fuzz-$$t -max_total_time=$(FUZZ_TIME) -timeout=20 \
	        -rss_limit_mb=2048 -print_final_stats=1 \
	        -artifact_prefix=$(BUILD)/crashes/$$t- \
	        $(BUILD)/corpus/$$t fuzz/corpus/$$t >$(BUILD)/fuzz-$$t.log 2>&1; \
	    rc=$$?; grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done)|ERROR|invariant' \
	        $(BUILD)/fuzz-$$t.log; \
	    if [ $$rc -ne 0 ]; then tail -40 $(BUILD)/fuzz-$$t.log; exit 1; fi; \
	done

# Every program a test target runs gets a home and a disk cache of its
# own, so that no test reads or writes the user's (~/.cache/wrapbake
# above all): TEST_ENV starts each recipe line, TEST_SETUP empties both
# first, and TEST_HOME_CHECK fails the run if anything wrote into the
# home.
TEST_HOME  := $(BUILD)/test-home
TEST_CACHE := $(BUILD)/test-cache
TEST_ENV    = export HOME='$(abspath $(TEST_HOME))' XDG_CACHE_HOME= \
              WRAPBAKE_CACHE_DIR='$(abspath $(TEST_CACHE))';
TEST_SETUP  = rm -rf $(TEST_HOME) $(TEST_CACHE) && mkdir -p -m 700 $(TEST_HOME)
TEST_HOME_CHECK = if [ -n "$$(ls -A $(TEST_HOME))" ]; then \
        echo 'make: a test wrote into its home directory:' >&2; \
        ls -A $(TEST_HOME) >&2; exit 1; fi

# `make test` prints a line per suite (tests/suite.sh), each suite's whole
# output going to $(BUILD)/test-logs.  Criterion does not fail a test
# whose worker LeakSanitizer flags at exit, so any sanitizer report in the
# unit suite's output fails it.  Allocation stacks are cut to the
# allocator and its caller, so that the suppression of Criterion's own
# leak (tests/lsan.supp) cannot hide one of ours.
SUITE = $(TEST_ENV) sh tests/suite.sh $(BUILD)/test-logs
UNIT_RUN = WB_DIFF_AOT_COUNT=$(DIFF_AOT_COUNT) \
    LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0:malloc_context_size=2 \
    $(TESTS) --jobs 2 >$(BUILD)/tests.log 2>&1; rc=$$?; cat $(BUILD)/tests.log; \
    if grep -q Sanitizer $(BUILD)/tests.log; then \
        echo "sanitizer reports above"; exit 1; fi; exit $$rc
test: $(TESTS) $(EXAMPLE) $(if $(SANITIZE),,$(ALLOCS) $(ALLOCFAIL) $(TRUST) $(SO)) \
      $(CLI) $(TIER_SRC) $(BENCH) $(FUZZ_REPLAY) \
      $(if $(filter 1,$(WITH_CUDA)),$(FAKECUDA))
	@$(TEST_SETUP)
	@printf '  %-10s %s\n' build "$(BUILD), $(CC) $(OPT)"
	@$(SUITE) example '$(EXAMPLE)'
	@$(SUITE) allocs '$(ALLOC_RUN)'
	@$(SUITE) unit '$(UNIT_RUN)'
	@$(SUITE) layers 'sh scripts/check-layers.sh'
	@$(SUITE) exports 'sh tests/exports.sh $(LIB)'
	@$(SUITE) static '$(STATIC_RUN)'
	@$(SUITE) cuda-emu '$(CUDA_EMU_RUN)'
	@$(SUITE) cli 'sh tests/cli/run.sh $(CLI) $(TIER_SRC)'
	@$(SUITE) aot 'CC="$(CC)" AOT_FLAGS="$(OPT)" sh tests/aot/run.sh $(CLI) $(LIB)'
	@$(SUITE) shared '$(SHARED_RUN)'
	@$(SUITE) install '$(INSTALL_RUN)'
	@$(SUITE) trust '$(TRUST_RUN)'
	@$(SUITE) torch '$(TORCH_RUN)'
	@$(SUITE) bench 'FAKECUDA=$(if $(filter 1,$(WITH_CUDA)),$(abspath $(FAKECUDA))) sh tests/bench/run.sh $(BENCH)'
	@$(SUITE) fuzz 'for t in $(FUZZ_TARGETS); do $(BUILD)/bin/replay-$$t fuzz/corpus/$$t || exit 1; done'
	@$(TEST_HOME_CHECK)
	@echo "make test: every suite passed; their output is in $(BUILD)/test-logs"

# Conformance with PyTorch itself (tests/torch, docs/conformance.md): the
# cases gen.py observes in python3-torch, replayed on every tier; skipped,
# saying so, where python3-torch is missing.
TORCH_RUN = CC="$(CC)" CFLAGS="$(OPT)" sh tests/torch/run.sh $(CLI) $(LIB) \
            $(BUILD)
test-torch: $(CLI) $(LIB)
	@$(TEST_SETUP)
	$(TEST_ENV) $(TORCH_RUN)
	@$(TEST_HOME_CHECK)

test-asan:
	$(MAKE) test BUILD=build/asan SANITIZE=address,undefined

# ThreadSanitizer over the tests that run threads (the rest of the suite
# is single-threaded and runs under test-asan).  Criterion cannot start
# under ThreadSanitizer, so they are built with tests/tools/shim.h in its
# place.  Any report fails the run.
CONC_SRC  := tests/test_threads.c tests/test_stress.c tests/tools/shim.c
CONC      := $(BUILD)/bin/concurrency-tests
$(CONC): $(CONC_SRC) $(LIB) $(wildcard tests/*.h tests/tools/*.h)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) -DWB_TEST_SHIM $(ALL_LDFLAGS) -o $@ $(CONC_SRC) \
	    $(LIB) $(LIBS)
test-tsan:
	$(MAKE) tsan-run BUILD=build/tsan SANITIZE=thread
tsan-run: $(CONC)
	@$(TEST_SETUP)
	$(TEST_ENV) TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 WB_STRESS_CALLS=20000 \
	    $(CONC)

# valgrind memcheck, no error and no leak, over programs that
# need no test framework: the README example, the concurrency tests, the
# fuzz corpora through the replay binaries (parser, builder, and the
# differential run on every tier, JIT code included), the CLI and the
# PyTorch conformance driver.
# The main thread's cache of tensor headers is still reachable at exit when
# a program does not flush it (the README example); every other kind of
# leak is an error.
VG := valgrind -q --error-exitcode=99 --leak-check=full \
      --show-leak-kinds=definite,indirect,possible \
      --errors-for-leak-kinds=definite,indirect,possible
test-valgrind: $(EXAMPLE) $(FUZZ_REPLAY) $(CLI) $(CONC)
	@$(TEST_SETUP)
	$(TEST_ENV) $(VG) $(EXAMPLE) >/dev/null
	$(TEST_ENV) WB_STRESS_CALLS=300 $(VG) $(CONC)
	@$(TEST_ENV) for t in $(FUZZ_TARGETS); do \
	    echo "valgrind replay-$$t"; \
	    $(VG) $(BUILD)/bin/replay-$$t fuzz/corpus/$$t || exit 1; done
	$(TEST_ENV) $(VG) $(CLI) check --json tests/cli/specs.txt tests/cli/ops.yaml \
	    >/dev/null; test $$? -ne 99
	$(TEST_ENV) $(VG) $(CLI) emit --name decode_step tests/cli/specs.txt >/dev/null
	@$(TEST_ENV) if [ -x $(BUILD)/torch/driver ]; then \
	    echo "valgrind torch conformance (interp, tcc)"; \
	    $(VG) $(BUILD)/torch/driver $(BUILD)/torch/cases.txt interp tcc \
	        >/dev/null; test $$? -ne 99; \
	else echo "valgrind torch conformance: skipped, no driver built" \
	    "(make test builds it where python3-torch is installed)"; fi
	@$(TEST_HOME_CHECK)

# The benchmark three times, the graph stand-in keeping a fixed reference
# to every value it hands out, then one not fixed (--unfixed), then handing
# over new values as a compiled graph does (--fresh); then its scaling
# specs, 1 to 1,000 arguments, mutations and views, counted by callgrind,
# with their chart.
bench: $(BENCH)
	$(BENCH)
	$(BENCH) --unfixed
	$(BENCH) --fresh
	$(BENCH) --scale --svg $(BUILD)/bench-scale.svg

# On a CUDA device: cases A-E, then 1 to 32 mutated inputs
# (bench/cuda-mutations.txt), on the legacy default stream and on a stream
# of their own (docs/cuda.md gives the figures).
bench-cuda: $(BENCH)
	$(BENCH) --device cuda --wide
	$(BENCH) --device cuda --wide --spec bench/cuda-mutations.txt
	$(BENCH) --device cuda --wide --spec bench/cuda-mutations.txt --stream

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

install: all
	install -d "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(INCDIR)" \
	    "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(PCDIR)" "$(DESTDIR)$(DOCDIR)/docs"
	install -m 644 $(LIB) "$(DESTDIR)$(LIBDIR)/libwrapbake.a"
	$(if $(SANITIZE),,install -m 755 $(SO) "$(DESTDIR)$(LIBDIR)/$(SO_NAME)")
	$(if $(SANITIZE),,ln -sf $(SO_NAME) "$(DESTDIR)$(LIBDIR)/libwrapbake.so")
	install -m 644 include/wrapbake.h "$(DESTDIR)$(INCDIR)/wrapbake.h"
	install -m 755 $(BENCH) "$(DESTDIR)$(BINDIR)/wrapbake-bench"
	install -m 755 $(CLI) "$(DESTDIR)$(BINDIR)/wrapbake"
	$(PC_SED) wrapbake.pc.in > "$(DESTDIR)$(PCDIR)/wrapbake.pc"
	chmod 644 "$(DESTDIR)$(PCDIR)/wrapbake.pc"
	install -m 644 README.md "$(DESTDIR)$(DOCDIR)"
	install -m 644 docs/*.md "$(DESTDIR)$(DOCDIR)/docs"
	@if [ -z "$(DESTDIR)" ]; then ldconfig 2>/dev/null || true; fi

# Removes what install wrote, and, in a staging DESTDIR, the directories
# left empty; under the real root it leaves the system's own directories.
uninstall:
	rm -f "$(DESTDIR)$(LIBDIR)/libwrapbake.a" \
	    "$(DESTDIR)$(LIBDIR)/$(SO_NAME)" "$(DESTDIR)$(LIBDIR)/libwrapbake.so" \
	    "$(DESTDIR)$(INCDIR)/wrapbake.h" "$(DESTDIR)$(BINDIR)/wrapbake-bench" \
	    "$(DESTDIR)$(BINDIR)/wrapbake" "$(DESTDIR)$(PCDIR)/wrapbake.pc" \
	    "$(DESTDIR)$(DOCDIR)/README.md" \
	    $(patsubst %,"$(DESTDIR)$(DOCDIR)/%",$(wildcard docs/*.md))
	rmdir "$(DESTDIR)$(DOCDIR)/docs" "$(DESTDIR)$(DOCDIR)" 2>/dev/null || true
	@if [ -n "$(DESTDIR)" ]; then \
	    rmdir "$(DESTDIR)$(PCDIR)" "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(INCDIR)" \
	        "$(DESTDIR)$(BINDIR)" 2>/dev/null || true; fi

clean:
	rm -rf build
