# normscope - build, test, sanitizers, bench, install.
#
#   make            build ./normscope
#   make test       build and run every test (the live view's needs tmux);
#                   make test-NAME runs tests/sh/NAME.sh, make test-unit-NAME
#                   tests/unit/test_NAME.c, make list-tests names them all;
#                   the lessons' end-to-end checks (lessons.sh, tour.sh,
#                   tui_twin.sh) and the PyTorch probe's run here, not under
#                   the sanitizers, where they would take too long
#   make test-generic  the numeric suites again on the portable kernels
#   make asan       the test suite under AddressSanitizer + UBSan (build/asan)
#   make tsan       the test suite under ThreadSanitizer (build/tsan), which
#                   includes the live view driven by scripted key presses
#   make fuzz       each libFuzzer harness in tests/fuzz/ for FUZZ_SECONDS (clang)
#   make valgrind   memcheck on headless and live runs (tests/sh/valgrind.sh)
#   make bench      speed against a PyTorch peer when python3-torch is present,
#                   the live view's training speed against --headless,
#                   speed and peak memory as the model grows (scaling.sh),
#                   and the PyTorch probe's overhead (probe_overhead.py)
#   make install    PREFIX=/usr/local DESTDIR=
#
# Never -ffast-math or -Ofast: finding NaN and Inf depends on IEEE semantics.

CC      ?= cc
# the compiler of the tools the build runs (embed): the build machine's,
# also when CC cross-compiles (make CC=aarch64-linux-gnu-gcc CURSES=0)
HOSTCC  ?= cc
# the tests' and benchmarks' Python (make test passes it on): Debian's,
# where python3-torch installs torch; on macOS /usr/bin/python3 is Apple's
# (no torch, and a prompt to install the command line tools), so PATH's
PYTHON  ?= $(if $(filter Darwin,$(shell uname -s 2>/dev/null)),python3,/usr/bin/python3)
OPT     ?= -O2
# CFLAGS is the user's (a packager's CFLAGS=-O2 -g replaces it whole); the
# flags the numbers depend on are NS_CFLAGS, added after it, so no CFLAGS
# drops or undoes them (tests/sh/portable.sh builds with CFLAGS=-O2 and
# with clang and compares the bytes of a run):
#   -std=c11: ISO C, not GNU C, whose default lets GCC fuse a * b + c;
#   -ffp-contract=off: a * b + c stays two roundings unless the code asks
#     for an FMA (clang's default fuses within an expression, and the
#     portable kernels promise the AVX2 ones' bits where those use no FMA:
#     ops.h, ops_sumsq, ops_adamw);
#   -fno-fast-math: after a CFLAGS=-Ofast or -ffast-math, IEEE again
#     (finding NaN and Inf depends on it);
#   32-bit x86 only, -msse2 -mfpmath=sse: x87 keeps 80 bits in its
#     registers and gives other numbers from the first step (src/rng.c
#     refuses a build without SSE2 arithmetic).
CFLAGS  ?= $(OPT)
NS_CFLAGS := -std=c11 -ffp-contract=off -fno-fast-math
NS_WARN := -Wall -Wextra
CC_CLANG := $(shell $(CC) -dM -E -x c /dev/null 2>/dev/null | grep -c __clang__)
CC_MACHINE := $(shell $(CC) -dumpmachine 2>/dev/null)
ifneq ($(filter i386-% i486-% i586-% i686-%,$(CC_MACHINE)),)
NS_CFLAGS += -msse2 -mfpmath=sse
endif
# -O2 with GCC 12 vectorizes only loops whose trip count it knows; the
# dynamic cost model lets the inner loops of the kernels vectorize too
# (a speed flag, GCC's only: the same bits without it, clang has none).
ifeq ($(CC_CLANG),0)
VECFLAGS ?= -fvect-cost-model=dynamic
endif
# _POSIX_C_SOURCE: POSIX 2008, and on glibc and musl nothing more unless
# a file asks (_GNU_SOURCE for getline); _DARWIN_C_SOURCE: macOS hides its
# BSD names under _POSIX_C_SOURCE (O_DIRECTORY, O_NOFOLLOW, flock,
# SIGWINCH, ru_maxrss, _SC_NPROCESSORS_ONLN, _SC_PHYS_PAGES), this shows
# them again; other systems ignore it.
CPPFLAGS += -Iinclude -D_POSIX_C_SOURCE=200809L -D_DARWIN_C_SOURCE
# include/ holds the public headers, one per module; the engine's own
# (model, ops, optim, schedule) are in src/internal/, on the include path
# of the engine's objects, the unit tests and the fuzzers only, so a front
# end that includes one does not build (tests/sh/layers.sh checks the rest).
INTERNAL := -Isrc/internal
ENGINE_INTERNAL := engine model ops ops_avx2 ops_generic optim schedule
SANFLAGS ?=
LDLIBS  += -lm -lpthread
# curses for the binary only: the engine library (and so every unit test)
# stays free of it. pkg-config knows whether -ltinfo is needed too, and
# where Homebrew's ncurses is: ncursesw, then ncurses; without either,
# -lncurses on macOS (its system curses is wide-capable), else -lncursesw.
# A cross build (CC's target has another arch, or is macOS and the build
# machine not) does not ask the build machine's pkg-config: CURSES_LIBS=
# and CURSES_CFLAGS= say where. Only -I from --cflags: Debian's adds
# feature-test macros the sources set themselves.
darwin_of = $(if $(findstring darwin,$(1))$(findstring macos,$(1)),1)
arch_of = $(firstword $(subst -, ,$(1)))
HOST_MACHINE := $(shell $(HOSTCC) -dumpmachine 2>/dev/null)
CC_DARWIN := $(call darwin_of,$(CC_MACHINE))
CC_NATIVE := $(if $(filter $(call arch_of,$(HOST_MACHINE))$(call darwin_of,$(HOST_MACHINE)),\
	$(call arch_of,$(CC_MACHINE))$(CC_DARWIN)),1)
CURSES_PC := $(if $(CC_NATIVE),$(shell \
	pkg-config --exists ncursesw 2>/dev/null && echo ncursesw || \
	{ pkg-config --exists ncurses 2>/dev/null && echo ncurses; }))
CURSES_LIBS ?= $(if $(CURSES_PC),$(shell pkg-config --libs $(CURSES_PC)),$(if $(CC_DARWIN),-lncurses,-lncursesw))
CURSES_CFLAGS ?= $(if $(CURSES_PC),$(filter -I%,$(shell pkg-config --cflags $(CURSES_PC))))

BUILD   ?= build
BIN     ?= normscope
PREFIX  ?= /usr/local
MANDIR  ?= $(PREFIX)/share/man

# src/tui_curses.c is the only file that calls curses: it is not in the
# library. CURSES=0 links src/tui_none.c in its place (a headless target,
# a cross build without the target's ncurses): the live view then says in
# one line that this build has none; make normscope-headless builds that
# binary beside the usual one.
CURSES  ?= 1
UI_OBJ  := $(BUILD)/$(if $(filter 0,$(CURSES)),tui_none,tui_curses).o
UI_LIBS  = $(if $(filter 0,$(CURSES)),,$(CURSES_LIBS))
LIB_SRCS  := $(filter-out src/main.c src/tui_curses.c src/tui_none.c,$(wildcard src/*.c))
LIB_OBJS  := $(LIB_SRCS:src/%.c=$(BUILD)/%.o) $(BUILD)/corpus.o $(BUILD)/lessons.o
LESSONS   := $(sort $(wildcard assets/lessons/*.lesson))
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/%)
DEPS      := $(LIB_OBJS:.o=.d) $(BUILD)/main.d $(BUILD)/tui_curses.d $(BUILD)/tui_none.d \
             $(TEST_BINS:=.d)

ALL_CFLAGS = $(CPPFLAGS) $(CFLAGS) $(VECFLAGS) $(NS_WARN) $(NS_CFLAGS) $(SANFLAGS)

.PHONY: all test test-generic asan tsan bench install uninstall clean lint
all: $(BIN)

$(BIN): $(BUILD)/main.o $(UI_OBJ) $(BUILD)/libnormscope.a
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(LDFLAGS) $(UI_LIBS) $(LDLIBS)
normscope-headless: $(BUILD)/main.o $(BUILD)/tui_none.o $(BUILD)/libnormscope.a
	$(CC) $(CFLAGS) $(SANFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/libnormscope.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/%.o: src/%.c | $(BUILD)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<
$(ENGINE_INTERNAL:%=$(BUILD)/%.o): CPPFLAGS += $(INTERNAL)
$(BUILD)/tui_curses.o: CPPFLAGS += $(CURSES_CFLAGS)

# the built-in corpus, compiled in so the binary runs from anywhere; embed
# runs here, so it is the build machine's program (HOSTCC)
$(BUILD)/embed: src/tools/embed.c | $(BUILD)
	$(HOSTCC) -O1 -o $@ $<
$(BUILD)/corpus.c: assets/corpus.txt $(BUILD)/embed
	$(BUILD)/embed ns_corpus $< $@
$(BUILD)/corpus.o: $(BUILD)/corpus.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
# the lessons (assets/lessons/*.lesson), compiled in as a table. A deleted
# lesson leaves no file newer than lessons.c, so the table also depends on
# the list of names, rewritten only when the list changes (its timestamp
# then moves, and make remakes the table without the deleted one)
$(BUILD)/lessons.list: FORCE | $(BUILD)
	@printf '%s\n' $(LESSONS) | cmp -s - $@ || printf '%s\n' $(LESSONS) >$@
$(BUILD)/lessons.c: $(LESSONS) $(BUILD)/lessons.list $(BUILD)/embed
	$(BUILD)/embed -t ns_lessons $@ $(LESSONS)
FORCE:
.PHONY: FORCE
$(BUILD)/lessons.o: $(BUILD)/lessons.c
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/test_%: tests/unit/test_%.c tests/unit/testutil.h tests/unit/testengine.h $(BUILD)/libnormscope.a
	$(CC) $(ALL_CFLAGS) $(INTERNAL) -Itests -MMD -MP -o $@ $< $(BUILD)/libnormscope.a $(LDFLAGS) $(LDLIBS)

$(BUILD):
	mkdir -p $@

# The suites. A C suite is tests/unit/test_NAME.c (the binary build/test_NAME,
# target test-unit-NAME); a shell suite is tests/sh/NAME.sh (target
# test-NAME), but for the shell libraries (*_lib.sh) and the scripts of
# other targets (soak, valgrind). Both lists are read from the tree, as
# tmux's regress does: a new file is a new suite. SH_ORDER only orders
# them (shell suites it does not name run last, by name); SH_SLOW run
# only without sanitizers, where they would take too long. Each suite
# prints "N passed, N failed" and exits non-zero on a failure; make test
# runs every one, in this order, and then fails if any did.
TEST_C_DIR  := tests/unit
TEST_SH_DIR := tests/sh
C_SUITES  := $(patsubst $(TEST_C_DIR)/test_%.c,%,$(sort $(wildcard $(TEST_C_DIR)/test_*.c)))
SH_FOUND  := $(filter-out %_lib soak valgrind,$(patsubst $(TEST_SH_DIR)/%.sh,%,$(sort $(wildcard $(TEST_SH_DIR)/*.sh))))
SH_ORDER  := layers symbols cli harden diagnose fixbank settings kernels memory sweep tui_sweep plot twin tui_e2e \
             tui_diag tui_signals follow tui_lesson lessons sched tour tui_twin probe follow_probe
SH_SLOW   := kernels lessons sched tour tui_twin probe follow_probe tui_lesson_sizes fixbank portable cross \
             onerow platforms
SH_SUITES := $(filter $(SH_FOUND),$(SH_ORDER)) $(filter-out $(SH_ORDER),$(SH_FOUND))
SH_RUN     = $(if $(SANFLAGS),$(filter-out $(SH_SLOW) $(SAN_SKIP_SH),$(SH_SUITES)),$(SH_SUITES))

# each suite's wall time is printed after it ("-- NAME: 12 s"), so the CI
# budget can be read off any log; a failing suite makes the line FAILED
SUITE_TIMED = t0=$$(date +%s); if $(2); then r=0; else r=1; fi; \
	echo "-- $(1): $$(( $$(date +%s) - t0 )) s$$([ $$r -eq 0 ] || echo ', FAILED')"; [ $$r -eq 0 ]
RUN_C  = echo "== $(BUILD)/test_$(1)"; $(call SUITE_TIMED,test_$(1),NS_FIXTURES=tests/fixtures $(BUILD)/test_$(1))
RUN_SH = echo "== $(TEST_SH_DIR)/$(1).sh"; $(call SUITE_TIMED,$(1).sh,NS_SANITIZED="$(SANFLAGS)" NS_BIN=./$(BIN) \
	NS_LIB=$(BUILD)/libnormscope.a PYTHON="$(PYTHON)" sh $(TEST_SH_DIR)/$(1).sh)

test: $(BIN) $(TEST_BINS)
	@fail=0; \
	$(foreach s,$(filter-out $(SAN_SKIP_C),$(C_SUITES)),$(call RUN_C,$(s)) || fail=1;) \
	$(foreach s,$(SH_RUN),$(call RUN_SH,$(s)) || fail=1;) \
	if [ $$fail -ne 0 ]; then echo "make test: FAILED"; exit 1; fi; \
	echo "make test: all suites passed"

$(C_SUITES:%=test-unit-%): test-unit-%: $(BUILD)/test_%
	@$(call RUN_C,$*)
$(SH_SUITES:%=test-%): test-%: $(BIN)
	@$(call RUN_SH,$*)
# the names of the suites, one a line (make list-tests)
list-tests:
	@for s in $(C_SUITES); do echo "test-unit-$$s"; done; for s in $(SH_SUITES); do echo "test-$$s"; done
.PHONY: list-tests $(C_SUITES:%=test-unit-%) $(SH_SUITES:%=test-%)

# The numeric suites once more on the portable kernels (both builds give
# the same bits; this keeps the portable one tested on an AVX2 machine).
GENERIC_C  := parity engine precision norms threads trainer
GENERIC_SH := settings
test-generic: $(BIN) $(GENERIC_C:%=$(BUILD)/test_%)
	@fail=0; export NORMSCOPE_KERNELS=generic; \
	$(foreach s,$(GENERIC_C),$(call RUN_C,$(s)) || fail=1;) \
	$(foreach s,$(GENERIC_SH),$(call RUN_SH,$(s)) || fail=1;) \
	if [ $$fail -ne 0 ]; then echo "make test-generic: FAILED"; exit 1; fi; \
	echo "make test-generic: all suites passed"

# $(3): C suites the run leaves out, $(4) shell suites. TSan leaves out
# test_ops and test_precision: they check the kernels' and the formats'
# numbers one thread at a time (ASan and UBSan run them), which TSan
# cannot fault and takes minutes over;
# test_threads runs the same kernels split over the pool, under TSan too.
# TSan also leaves out diagnose.sh: thirty headless runs of the trainer
# thread that cli.sh, harden.sh and the soak already drive under TSan,
# six minutes of CI there; ASan and UBSan run it.
SAN_TEST = $(MAKE) --no-print-directory BUILD=$(1) BIN=$(1)/normscope OPT="-O1 -g" SANFLAGS="$(2)" \
	SAN_SKIP_C="$(3)" SAN_SKIP_SH="$(4)" test

asan:
	$(call SAN_TEST,build/asan,-fsanitize=address$(comma)undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
tsan:
	$(call SAN_TEST,build/tsan,-fsanitize=thread,ops precision,diagnose)
comma := ,

bench: $(BIN)
	sh tests/bench/bench.sh ./$(BIN)
	sh tests/bench/ui_overhead.sh ./$(BIN)
	sh tests/bench/schemes.sh ./$(BIN)
	sh tests/bench/scaling.sh ./$(BIN)
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
	    OPENBLAS_NUM_THREADS=1 $(PYTHON) tests/bench/probe_overhead.py --shape L4d64 && \
	    OPENBLAS_NUM_THREADS=1 $(PYTHON) tests/bench/probe_overhead.py --shape L4d64 \
	        --signature logits && \
	    OPENBLAS_NUM_THREADS=1 $(PYTHON) tests/bench/probe_overhead.py --shape L4d64 \
	        --signature logits --loop nanogpt && \
	    OPENBLAS_NUM_THREADS=1 $(PYTHON) tests/bench/probe_overhead.py --shape L12d384 \
	        --signature logits --windows 2 && \
	    OPENBLAS_NUM_THREADS=1 $(PYTHON) tests/bench/probe_overhead.py --shape L4d64 \
	        --signature logits --vocab 32768 --batch 8 --rss; \
	else echo "probe overhead: skipped ($(PYTHON) has no torch)"; fi

install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/normscope
	install -m 644 man/normscope.1 $(DESTDIR)$(MANDIR)/man1/normscope.1
	for f in man/*.7; do [ -f "$$f" ] || continue; install -d $(DESTDIR)$(MANDIR)/man7; \
	  install -m 644 "$$f" $(DESTDIR)$(MANDIR)/man7/; done
	install -d $(DESTDIR)$(PREFIX)/lib/normscope/python/normscope_probe
	install -m 644 src/probe/normscope_probe/*.py $(DESTDIR)$(PREFIX)/lib/normscope/python/normscope_probe/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/normscope $(DESTDIR)$(MANDIR)/man1/normscope.1 \
	  $(DESTDIR)$(MANDIR)/man7/normscope-lessons.7
	rm -rf $(DESTDIR)$(PREFIX)/lib/normscope/python/normscope_probe

lint:
	mandoc -Tlint -Wwarning man/normscope.1 man/normscope-lessons.7

clean:
	rm -rf build $(BIN) normscope-headless

-include $(DEPS)

# Fuzzing (libFuzzer, clang, ASan + UBSan): each harness in tests/fuzz/ runs
# for FUZZ_SECONDS on a copy of its seed corpus, FUZZ_JOBS (2) at a time; any
# finding fails (CI runs every harness for 30 s, .ci/run; a longer hunt: make
# fuzz FUZZ_SECONDS=3600).
FUZZ_SECONDS ?= 60
FUZZERS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_FLAGS = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
# the library once, instrumented for coverage (fuzzer-no-link), shared by
# every harness
FUZZ_LIB_FLAGS = -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_OBJS := $(LIB_SRCS:src/%.c=build/fuzz/obj/%.o) build/fuzz/obj/corpus.o build/fuzz/obj/lessons.o
build/fuzz/obj/%.o: src/%.c
	@mkdir -p build/fuzz/obj
	clang $(FUZZ_LIB_FLAGS) $(CPPFLAGS) $(INTERNAL) -std=c11 -MMD -MP -c -o $@ $<
build/fuzz/obj/%.o: $(BUILD)/%.c
	@mkdir -p build/fuzz/obj
	clang $(FUZZ_LIB_FLAGS) $(CPPFLAGS) -std=c11 -c -o $@ $<
-include $(FUZZ_OBJS:.o=.d)
build/fuzz/libnormscope.a: $(FUZZ_OBJS)
	rm -f $@
	$(AR) rcs $@ $^
fuzz: build/fuzz/libnormscope.a
	@set -e; for f in $(FUZZERS); do \
	  clang $(FUZZ_FLAGS) $(CPPFLAGS) $(INTERNAL) -std=c11 -o build/fuzz/$$f tests/fuzz/fuzz_$$f.c \
	    build/fuzz/libnormscope.a -lm -lpthread; \
	done
	sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZERS)
.PHONY: fuzz

# The wrong-advice search (tests/bench/diag_grid.sh, not in `make test`: about
# 20 minutes on 2 cores): a grid of LR x placement x precision x depth, each
# cell run with the diagnosis' fixes applied and left alone, from the same
# seed; the table of helped / did nothing / hurt is normscope(1)'s, DIAGNOSIS.
DIAG_GRID_OUT ?= diag-grid-out
diag-grid: $(BIN)
	DIAG_GRID_OUT=$(DIAG_GRID_OUT) sh tests/bench/diag_grid.sh ./$(BIN)
.PHONY: diag-grid

# valgrind's memcheck on the real binary (tests/sh/valgrind.sh): headless runs
# with --csv, --jsonl, --save and --load, refused inputs and outputs, and the
# live view driven in tmux. Needs valgrind (apt-get install valgrind) and
# tmux. -O1 -g: readable stacks, without sanitizer instrumentation, which
# valgrind cannot run under.
valgrind:
	$(MAKE) --no-print-directory BUILD=build/valgrind BIN=build/valgrind/normscope OPT="-O1 -g" build/valgrind/normscope
	NS_BIN=build/valgrind/normscope sh tests/sh/valgrind.sh
.PHONY: valgrind

# Soak (tests/sh/soak.sh): the live view in tmux for SOAK_SECONDS (20 minutes;
# CI runs SOAK_SECONDS=120) with random keys, clicks and resizes every
# 100-500 ms. Fails on a crash, on q not quitting at the end, on a sanitizer
# report, or when resident memory, sampled at 120x40 every 5 s, rises more
# than max(2 MiB, 5%) above its value at 60 s (30 s for runs under 5
# minutes), counted from when the history ring is full. It stays flat
# because every history is bounded: TRAINER_HIST = 4096 steps of chart and
# heatmap (a ring), TRAINER_EVENTS = 1024 log lines, TRAINER_QUEUE = 64
# commands, NS_EVENT_RING = 256 engine events, --snapshots (8) rewind copies.
# soak-san runs the same against the ASan+UBSan and TSan binaries for
# SOAK_SAN_SECONDS each, checking crashes and reports only (ASan's
# quarantine grows memory by design).
SOAK_SECONDS ?= 1200
SOAK_SAN_SECONDS ?= 120
soak: $(BIN)
	SOAK_SECONDS=$(SOAK_SECONDS) NS_BIN=./$(BIN) sh tests/sh/soak.sh
soak-san:
	$(MAKE) --no-print-directory BUILD=build/asan BIN=build/asan/normscope OPT="-O1 -g" \
	  SANFLAGS="-fsanitize=address$(comma)undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  build/asan/normscope
	$(MAKE) --no-print-directory BUILD=build/tsan BIN=build/tsan/normscope OPT="-O1 -g" \
	  SANFLAGS=-fsanitize=thread build/tsan/normscope
	SOAK_SECONDS=$(SOAK_SAN_SECONDS) SOAK_RSS=0 NS_BIN=build/asan/normscope sh tests/sh/soak.sh
	SOAK_SECONDS=$(SOAK_SAN_SECONDS) SOAK_RSS=0 NS_BIN=build/tsan/normscope sh tests/sh/soak.sh
.PHONY: soak soak-san
