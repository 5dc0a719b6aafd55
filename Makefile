# dlprof - sampling profiler for deep-learning workloads on CPU
#
#   make               build ./dlprof and the helpers record loads (build/libdlprof-itt.so)
#                      (installs missing Debian packages first, as root)
#   make check         build and run the test suite (TAP through prove)
#   make demo          record and report the bundled demo workload
#   make install PREFIX=/usr/local
#
# Test workloads and extra build products register themselves in *.mk fragments under
# tests/ and examples/ (included below), so adding one touches no shared list.

PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
LIBDIR    ?= $(PREFIX)/lib/dlprof
DATADIR   ?= $(PREFIX)/share/dlprof
MANDIR    ?= $(PREFIX)/share/man/man1
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/vendor-completions

CC       ?= gcc
O        := build
PKGS     := libelf libdw zlib
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -ldw -lelf -lz)
CAPSTONE_CFLAGS := $(shell pkg-config --cflags capstone 2>/dev/null)
LIBBPF_CFLAGS   := $(shell pkg-config --cflags libbpf 2>/dev/null)
LIBBPF_LIBS     := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf)

WARN     := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
ALL_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -Iinclude $(PKG_CFLAGS) $(CAPSTONE_CFLAGS) \
	     $(LIBBPF_CFLAGS) \
	     -DDLPROF_LIBDIR='"$(LIBDIR)"' -DDLPROF_DATADIR='"$(DATADIR)"' -MMD -MP
# Capstone, libpfm4 and libstdc++ (its demangler) are loaded when a command first needs
# them (lib/util/dynlib.c)
LDLIBS   := $(PKG_LIBS) $(LIBBPF_LIBS) -lpthread -ldl -lm

# lib/ is one folder per stage, in this order: a stage uses the stages before it only
# (tests/t0003-layers.sh checks every #include and every call between the objects
# against it; docs/layout.md says what each holds).  lib/inject/ is what record loads into workloads, built by its fragments;
# *.bpf.c are BPF programs, built by theirs (lib/record/python/pybpf.mk).
STAGES   := util file isa resolve record attribute views
LIB_SRC  := $(sort $(filter-out %.bpf.c,$(foreach s,$(STAGES),$(wildcard lib/$(s)/*.c lib/$(s)/*/*.c))))
CMD_SRC  := $(sort $(wildcard cmd/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(O)/%.o)
CMD_OBJ  := $(CMD_SRC:%.c=$(O)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/unit/%)

# The libraries record loads into workloads (their rules are in lib/inject/*.mk).
# Named here, before any fragment is read: every rule that runs dlprof record (all, demo,
# check, install) lists them, and make expands a rule's prerequisites when it reads the
# rule, so a list that fragments appended to would still be empty for the fragments read
# first (examples/ sorts before lib/).
HELPERS       := $(O)/libdlprof-itt.so $(O)/libdlprof-mem.so
helpers_named := $(HELPERS)

# fragments append to these; only the rules of this file (below the include) read them
EXTRA_TARGETS :=
TEST_PROGS    :=
INSTALL_DATA  :=
INSTALL_LIBS  := $(HELPERS)

DEPS_STAMP := $(O)/.deps-ok

.PHONY: all deps check check-build check-e2e check-long test unit demo install clean completions FORCE
all: dlprof

# Install what the build and the tests need (Debian packages), only when missing.
deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/bootstrap.sh
	@mkdir -p $(O)
	@sh scripts/bootstrap.sh
	@touch $@

$(O)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# lib/util/paths.c has LIBDIR and DATADIR compiled in: rebuilt when they change
$(O)/.paths: FORCE
	@mkdir -p $(O)
	@echo '$(LIBDIR) $(DATADIR)' | cmp -s - $@ || echo '$(LIBDIR) $(DATADIR)' >$@
$(O)/lib/util/paths.o: $(O)/.paths
FORCE:

$(O)/libdlprof.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

dlprof: $(CMD_OBJ) $(O)/libdlprof.a
	$(CC) $(CFLAGS) -o $@ $(CMD_OBJ) $(O)/libdlprof.a $(LDLIBS)

$(O)/tests/unit/%: tests/unit/%.c $(O)/libdlprof.a | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -o $@ $< $(O)/libdlprof.a $(LDLIBS)

-include $(sort $(wildcard lib/*/*.mk lib/*/*/*.mk tests/*.mk tests/*/*.mk examples/*.mk bench/*.mk))
ifneq ($(HELPERS),$(helpers_named))
$(error a fragment changed HELPERS: name a helper in the Makefile, where every rule reads it)
endif

# what record loads is part of dlprof: the default target builds it
all: $(HELPERS)

unit: $(UNIT_BIN)
# what the tests run, built on every core (a plain make check is serial: the sanitizer
# build, the unit tests and the workloads took 59 s of its ten minutes on one core)
check-build: dlprof $(HELPERS) $(UNIT_BIN) $(EXTRA_TARGETS) $(TEST_PROGS)
CHECK_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 2))
# the checks over 20 s here, end to end (a line "# make check-e2e" says so), run apart
# from make check's ten minutes; .ci/run runs both (tests/README.md)
TESTS_E2E := $(sort $(shell grep -l '^\# make check-e2e' tests/t[0-9]*.sh))
TESTS := $(filter-out $(TESTS_E2E),$(sort $(wildcard tests/t[0-9]*.sh)))
test check:
	@$(MAKE) --no-print-directory $(CHECK_JOBS) check-build
	prove --timer $(TESTS)

check-e2e:
	@$(MAKE) --no-print-directory $(CHECK_JOBS) check-build
	prove --timer $(TESTS_E2E)

# the long checks, apart from make check's ten minutes (README, "Tests")
check-long:
	@$(MAKE) --no-print-directory $(CHECK_JOBS) check-build
	prove --timer tests/l[0-9]*.sh

install: dlprof $(HELPERS) $(EXTRA_TARGETS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(DATADIR) $(DESTDIR)$(LIBDIR) \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 dlprof $(DESTDIR)$(BINDIR)/dlprof
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/
	install -m 644 completions/dlprof.bash $(DESTDIR)$(BASHCOMPDIR)/dlprof
	install -m 644 completions/_dlprof $(DESTDIR)$(ZSHCOMPDIR)/_dlprof
	for f in $(INSTALL_DATA); do install -m 644 $$f $(DESTDIR)$(DATADIR)/; done
	for f in $(INSTALL_LIBS); do install -m 755 $$f $(DESTDIR)$(LIBDIR)/; done

clean:
	rm -rf $(O)/lib $(O)/cmd $(O)/tests $(O)/examples $(O)/*.a $(O)/*.so dlprof dlprof.data*

-include $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d)
