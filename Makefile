# ringsteer — top-level build. `make help` lists the targets.
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PREFIX   ?= /usr/local
DESTDIR  ?=
# The configuration's place is compiled in (RS_DEFAULT_CONFIG: SYSCONFDIR
# moves only the samples, for scratch installs); the unit's
# is systemd's for system packages on Debian 12.
SYSCONFDIR ?= /etc/ringsteer
UNITDIR  ?= /lib/systemd/system
MANDIR   ?= $(PREFIX)/share/man
DOCDIR   ?= $(PREFIX)/share/doc/ringsteer
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
BUILD    := build
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine)

CFLAGS_COMMON := -std=gnu11 -g -Wall -Wextra -Werror -D_GNU_SOURCE
CFLAGS   ?= -O2
SANFLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
# make tsan: the daemon under ThreadSanitizer, in a build directory of its
# own (it reads build/'s skeletons and version header, writes nothing there).
TSAN_BUILD := build-tsan
TSANFLAGS := -O1 -fsanitize=thread -fno-omit-frame-pointer
LIBS     := -lbpf -lelf -lz -lxxhash -lnl-3 -linih -lev -lcurl -ljansson -lmicrohttpd -lcrypto -lm -pthread
# -mcpu=v3: 32-bit jumps and ALU32 (kernel 5.1+; the data plane needs 5.17).
BPF_CFLAGS := -target bpf -mcpu=v3 -O2 -g -Wall -Werror -Iinclude -Ibpf/lib \
	-I$(ARCH_INC)
# Every compile writes its header dependencies next to its output (.d);
# -MP keeps a deleted header from breaking the build.
DEPFLAGS := -MMD -MP

# V=1 prints whole command lines.
ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-7s %s\n' $(1) $(2)
endif

# A recipe that fails leaves no half-written target behind; chained
# intermediates (BPF objects, skeletons) are kept.
.DELETE_ON_ERROR:
.SECONDARY:

# Each folder of userspace/ sees only itself and the layers below it:
#   core <- config <- dataplane, sys <- ringsteerd, ringsteer
# so an include that points up fails to compile.
INC_core      := -Iinclude -I$(BUILD)/gen -Iuserspace/core -Iuserspace/core/fleet \
	-Iuserspace/core/ring
INC_config    := $(INC_core) -Iuserspace/config
INC_dataplane := $(INC_core) -Iuserspace/dataplane -I$(BUILD)/bpf
INC_sys       := $(INC_config) -Iuserspace/sys -I/usr/include/libnl3
INC_ringsteerd := $(INC_sys) -Iuserspace/dataplane -I$(BUILD)/bpf \
	-Iuserspace/ringsteerd -Iuserspace/ringsteerd/apply \
	-Iuserspace/ringsteerd/fleet -Iuserspace/ringsteerd/serve \
	-Iuserspace/ringsteerd/state -Iuserspace/ringsteerd/sources
INC_ringsteer := $(INC_config) -Iuserspace/dataplane -I$(BUILD)/bpf -Iuserspace/ringsteer
INC_tests     := $(INC_ringsteerd) -I$(BUILD)/tests/bpf

BPF_PROGS := steer_lookup steer_tc steer_tc_kfunc steer_sockops steer_probe
BPF_OBJS  := $(patsubst %,$(BUILD)/bpf/%.bpf.o,$(BPF_PROGS))
BPF_SKELS := $(patsubst %,$(BUILD)/bpf/%.skel.h,$(BPF_PROGS))
# Test-only BPF programs: built under build/tests, never beside the shipped.
TEST_BPF_PROGS := $(patsubst tests/bpf/progs/%.bpf.c,%,\
	$(wildcard tests/bpf/progs/*.bpf.c))
TEST_BPF_SKELS := $(patsubst %,$(BUILD)/tests/bpf/%.skel.h,$(TEST_BPF_PROGS))

LAYERS    := core config dataplane sys
# A layer's subfolders (core/fleet/, core/ring/, dataplane/maps/) are
# rooms of it: its include path, its rule (a stem may hold a slash).
LIB_SRCS  := $(foreach l,$(LAYERS),$(wildcard userspace/$(l)/*.c userspace/$(l)/*/*.c))
LIB_OBJS  := $(patsubst userspace/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
SAN_OBJS  := $(patsubst userspace/%.c,$(BUILD)/san/%.o,$(LIB_SRCS))
LIB_A     := $(BUILD)/libringsteer.a
SAN_A     := $(BUILD)/libringsteer-san.a
# The daemon's folder and its subfolders (fleet/): one include path, one
# pattern rule (a stem may hold a slash).
DAEMON_SRCS := $(wildcard userspace/ringsteerd/*.c userspace/ringsteerd/*/*.c)
DAEMON_OBJS := $(patsubst userspace/%.c,$(BUILD)/obj/%.o,$(DAEMON_SRCS))
CLI_OBJS  := $(patsubst userspace/%.c,$(BUILD)/obj/%.o,\
	$(wildcard userspace/ringsteer/*.c))

BINS      := $(BUILD)/ringsteerd $(BUILD)/ringsteer
# RS_VERSION and RS_COMMIT (include/ringsteer/version.h includes it).
VERSION_H := $(BUILD)/gen/ringsteer/version_gen.h
# Man pages: scdoc sources in man/, roff in build/man/.
MANS      := $(patsubst man/%.scd,$(BUILD)/man/%,$(wildcard man/*.scd))
# Unit tests sit in a folder per subject (tests/unit/<subject>/test_*.c);
# their programs in one folder, build/tests/.
UNIT_SRCS  := $(wildcard tests/unit/*/test_*.c)
UNIT_DIRS  := $(sort $(dir $(UNIT_SRCS)))
UNIT_TESTS := $(addprefix $(BUILD)/tests/,$(basename $(notdir $(UNIT_SRCS))))
BPF_TESTS  := $(patsubst tests/bpf/%.c,$(BUILD)/tests/%,$(wildcard tests/bpf/test_*.c))
TOOLS      := $(patsubst tests/e2e/tools/%.c,$(BUILD)/tools/%,$(wildcard tests/e2e/tools/*.c))
HEADERS    := $(wildcard include/ringsteer/*.h userspace/*/*.h userspace/*/*/*.h)
C_SOURCES  := $(shell find bpf include userspace tests scripts bench -name '*.[ch]' 2>/dev/null)

.PHONY: all build deps bpffs test unit bpftest e2e tsan chaos demo demo-fleet bench-fleet bench-profile lint shape info clean install help bench \
	vmtest vmtest-systemd man uninstall package-test

# `make` installs missing build dependencies first, as `make test` does
# (scripts/install-deps.sh: a no-op when everything is there, root needed
# otherwise). `make build` skips that step.
all: deps
	@$(MAKE) --no-print-directory build

build: $(BINS) $(TOOLS) $(MANS)

man: $(MANS)

$(BUILD)/man/%: man/%.scd
	@mkdir -p $(@D)
	$(call msg,SCDOC,$@)
	$(Q)scdoc < $< > $@.tmp && mv $@.tmp $@

help:
	@echo "make            install missing build dependencies (root), then build"
	@echo "make build      build ringsteerd, ringsteer, the man pages and the test tools"
	@echo "make man        the man pages only (build/man/, from man/*.scd)"
	@echo "make deps       install missing Debian packages (scripts/install-deps.sh)"
	@echo "V=1             show whole command lines"
	@echo "make demo       run the memcached demo in network namespaces (root)"
	@echo "make demo-fleet three hosts behind an ECMP router, one affinity (root)"
	@echo "make test       lint + unit + package + BPF + end-to-end tests (root)"
	@echo "make unit       unit tests only (CUnit, ASan/UBSan)"
	@echo "make bpftest    BPF tests and the verifier budget (root)"
	@echo "make e2e        end-to-end suites in network namespaces (root)"
	@echo "make tsan       ringsteerd under ThreadSanitizer (build-tsan/), the"
	@echo "                fleet suites with it; TSAN_SUITES picks others (root)"
	@echo "make package-test build the Debian package (dpkg-buildpackage), lintian,"
	@echo "                install it into a scratch root (part of make test)"
	@echo "make bpffs      mount the bpf file system at /sys/fs/bpf if missing (root)"
	@echo "make chaos      long chaos run: CHAOS_ACTIONS (2000), CHAOS_SEED (random),"
	@echo "                CHAOS_CHECK_EVERY (5); tests/e2e/test_chaos.sh (root)"
	@echo "make vmtest     BPF tests and data-plane e2e suites on Debian 12's 6.1 kernel"
	@echo "                under qemu TCG (root; scripts/vmtest.sh)"
	@echo "make vmtest-trixie the same on Debian 13: its 6.12 kernel, its userland, the"
	@echo "                tree built and packaged in a trixie root (root; scripts/build-in-root.sh)"
	@echo "make vmtest-systemd the package under systemd as PID 1: Debian 12 and 13"
	@echo "                guests under qemu TCG (root; scripts/vmtest-systemd.sh)"
	@echo "make lint       clang-format check, cppcheck, shellcheck and make shape"
	@echo "make shape      folder and file sizes, the daemon's void * members and"
	@echo "                circles of calls (scripts/shape.sh; fails on a broken rule)"
	@echo "make info       verifier instruction count and stack use per program"
	@echo "make bench      benchmarks (docs/benchmarks.md; root, not part of make test)"
	@echo "make bench-fleet fleet forwarding benchmark (docs/benchmarks.md; root)"
	@echo "make bench-profile where a connection's CPU time goes, under perf (docs/benchmarks.md; root)"
	@echo "make install    binaries, man pages, sample configs, systemd unit, bash"
	@echo "                completion, docs, Grafana dashboard and alert rules"
	@echo "                (PREFIX=$(PREFIX), DESTDIR)"
	@echo "make uninstall  remove what make install put there (a configuration"
	@echo "                is kept; the pinned data plane too: ringsteer detach first)"
	@echo "make clean      remove build/ and build-tsan/"
	@echo "make help       this list"

# Installs missing Debian packages; a no-op when everything is there.
# NO_DEPS=1 skips it (a package build: Build-Depends has what it needs).
deps:
	@[ -n "$(NO_DEPS)" ] || scripts/install-deps.sh --check 2>/dev/null || \
		scripts/install-deps.sh

# Brought up to date each time make reads this file (a commit or a
# changelog entry changes it), rewritten only when it differs, so an
# unchanged version rebuilds nothing. Not a rule with a FORCE
# prerequisite: under .SECONDARY a missing FORCE never forces anything.
$(if $(filter-out clean help,$(or $(MAKECMDGOALS),all)),\
	$(shell scripts/version.sh --update $(VERSION_H) >&2))
# Gone since (make clean build): made again.
$(VERSION_H):
	$(Q)scripts/version.sh --update $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

# steer_tc again, with the kernel's crypto kfuncs for QUIC-LB (6.10+);
# ringsteerd loads it where the kernel has them (docs/quic.md).
$(BUILD)/bpf/steer_tc_kfunc.bpf.o: bpf/steer_tc.bpf.c
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DRS_QUIC_LB_KFUNC $(DEPFLAGS) -c $< -o $@

$(BUILD)/tests/bpf/%.bpf.o: tests/bpf/progs/%.bpf.c
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

%.skel.h: %.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# One pair of rules per folder of userspace/, with that folder's include
# path: optimised objects for the binaries, sanitised ones for the tests.
# Headers come from the .d files; the skeletons are order-only so that the
# first build has them (afterwards the .d files name them too).
define folder_rules
$(BUILD)/obj/$(1)/%.o: userspace/$(1)/%.c | $(BPF_SKELS) $(VERSION_H)
	@mkdir -p $$(@D)
	$$(call msg,CC,$$@)
	$$(Q)$$(CC) $$(CFLAGS_COMMON) $$(INC_$(1)) $$(CPPFLAGS) $$(CFLAGS) $$(DEPFLAGS) -c $$< -o $$@

$(BUILD)/san/$(1)/%.o: userspace/$(1)/%.c | $(BPF_SKELS) $(VERSION_H)
	@mkdir -p $$(@D)
	$$(call msg,CC-SAN,$$@)
	$$(Q)$$(CC) $$(CFLAGS_COMMON) $$(INC_$(1)) $$(SANFLAGS) $$(DEPFLAGS) -c $$< -o $$@

$(TSAN_BUILD)/obj/$(1)/%.o: userspace/$(1)/%.c | $(BPF_SKELS) $(VERSION_H)
	@mkdir -p $$(@D)
	$$(call msg,CC-TSAN,$$@)
	$$(Q)$$(CC) $$(CFLAGS_COMMON) $$(INC_$(1)) $$(TSANFLAGS) $$(DEPFLAGS) -c $$< -o $$@
endef
$(foreach d,$(LAYERS) ringsteerd ringsteer,$(eval $(call folder_rules,$(d))))

$(LIB_A): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SAN_A): $(SAN_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# The binaries depend on their objects, so a touched header (through the
# objects' .d files) relinks them.
# sd_notify: the daemon alone speaks to systemd.
$(BUILD)/ringsteerd: $(DAEMON_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -lsystemd -o $@

$(BUILD)/ringsteer: $(CLI_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LIBS) -o $@

# Every object of the daemon instrumented, the libraries below it too.
TSAN_OBJS := $(patsubst userspace/%.c,$(TSAN_BUILD)/obj/%.o,\
	$(LIB_SRCS) $(DAEMON_SRCS))
$(TSAN_BUILD)/ringsteerd: $(TSAN_OBJS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(TSANFLAGS) $(LDFLAGS) $^ $(LIBS) -lsystemd -o $@

# Test programs compile and link in one step; their .d files sit beside
# them (-MF, since there is no .o to name it after). One rule per subject
# folder: make takes the one whose source exists.
define unit_rule
$(BUILD)/tests/%: $(1)%.c $(SAN_A) $(TEST_BPF_SKELS) | $(BPF_SKELS) \
	$(VERSION_H)
	@mkdir -p $$(@D)
	$$(call msg,TEST,$$@)
	$$(Q)$$(CC) $$(CFLAGS_COMMON) $$(INC_tests) $$(SANFLAGS) $$(DEPFLAGS) -MF $$@.d \
		$$< $$(filter %.o,$$^) $$(SAN_A) $$(LIBS) -lcunit -o $$@
endef
$(foreach d,$(UNIT_DIRS),$(eval $(call unit_rule,$(d))))

# The man page test reads the binaries' --help.
$(BUILD)/tests/test_man_pages: $(BINS)

# Unit tests of the daemon's decision files link just those objects.
$(BUILD)/tests/test_ids: $(BUILD)/san/ringsteerd/state/ids.o
$(BUILD)/tests/test_view: $(BUILD)/san/ringsteerd/state/view.o
$(BUILD)/tests/test_fleet_member_fuzz: \
	$(BUILD)/san/ringsteerd/fleet/fleet_member.o \
	$(BUILD)/san/ringsteerd/fleet/fleet_quic.o
$(BUILD)/tests/test_fleet_member_bind: \
	$(BUILD)/san/ringsteerd/fleet/fleet_member.o \
	$(BUILD)/san/ringsteerd/fleet/fleet_quic.o

BPF_TEST_LIB := $(patsubst tests/bpf/lib/%.c,$(BUILD)/tests/lib/%.o,\
	$(wildcard tests/bpf/lib/*.c))

$(BUILD)/tests/lib/%.o: tests/bpf/lib/%.c | $(BPF_SKELS) $(VERSION_H)
	@mkdir -p $(@D)
	$(call msg,CC-SAN,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(INC_tests) $(SANFLAGS) $(DEPFLAGS) \
		-Itests/bpf/lib -c $< -o $@

$(BUILD)/tests/%: tests/bpf/%.c $(BPF_TEST_LIB) $(SAN_A) | $(BPF_SKELS) \
	$(VERSION_H)
	@mkdir -p $(@D)
	$(call msg,TEST,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(INC_tests) $(SANFLAGS) $(DEPFLAGS) -MF $@.d \
		-Itests/bpf/lib $< $(BPF_TEST_LIB) $(SAN_A) $(LIBS) -lcunit -o $@

TOOL_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Itests/e2e/tools/lib
TOOL_LIB := $(patsubst tests/e2e/tools/lib/%.c,$(BUILD)/tools/lib/%.o,\
	$(wildcard tests/e2e/tools/lib/*.c))

$(BUILD)/tools/lib/%.o: tests/e2e/tools/lib/%.c
	@mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TOOL_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/tools/%: tests/e2e/tools/%.c $(TOOL_LIB)
	@mkdir -p $(@D)
	$(call msg,TOOL,$@)
	$(Q)$(CC) $(TOOL_CFLAGS) $(DEPFLAGS) -MF $@.d $< $(TOOL_LIB) -o $@

# Header dependencies written by earlier builds (none on the first).
-include $(shell find $(BUILD) $(TSAN_BUILD) -name '*.d' 2>/dev/null)

unit: $(UNIT_TESTS)
	@scripts/run-suite.sh unit $(UNIT_TESTS)

# The verifier budget (tests/bpf/verifier_budget.txt) runs with the BPF tests.
bpftest: $(BPF_TESTS) $(BUILD)/bpf_info $(BPF_OBJS) $(BUILD)/ringsteerd
	@scripts/run-suite.sh bpf $(BPF_TESTS) tests/bpf/test_verifier_budget.sh

e2e: $(BINS) $(TOOLS)
	@scripts/run-suite.sh e2e $(sort $(wildcard tests/e2e/test_*.sh))

# The chaos suite at length (make e2e runs a short one): random actions
# under load, CHAOS_SEED to replay one.
chaos: deps bpffs
	@$(MAKE) --no-print-directory build
	@E2E_CHAOS_ACTIONS=$(or $(CHAOS_ACTIONS),2000) \
		E2E_CHAOS_CHECK_EVERY=$(or $(CHAOS_CHECK_EVERY),5) \
		E2E_CHAOS_SEED=$(or $(CHAOS_SEED),random) \
		tests/e2e/test_chaos.sh

# The fleet suites with ringsteerd under ThreadSanitizer: the etcd and
# drain threads against the event loop (not part of make test). A report
# stops the daemon (exit 66) and fails the run (scripts/tsan-suites.sh).
FLEET_SUITES := $(sort $(wildcard tests/e2e/test_fleet*.sh))
tsan: deps bpffs
	@$(MAKE) --no-print-directory build $(TSAN_BUILD)/ringsteerd
	@scripts/tsan-suites.sh $(TSAN_BUILD) $(or $(TSAN_SUITES),$(FLEET_SUITES))

# Order matters: cheap and local first, namespaces last.
test: deps bpffs
	@$(MAKE) --no-print-directory build $(UNIT_TESTS) $(BPF_TESTS)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory package-test
	@$(MAKE) --no-print-directory bpftest
	@$(MAKE) --no-print-directory e2e

# The Debian package: built from a copy of the tree, lintian, installed
# into a scratch root (about 80 s on 2 cores).
package-test: deps
	@scripts/package-test.sh

# Debian 12's own 6.1 kernel under qemu (README.md, "Tests").
vmtest: deps
	@$(MAKE) --no-print-directory build $(BPF_TESTS) $(BUILD)/bpf_info \
		$(BPF_OBJS)
	@scripts/vmtest.sh

# Debian 13: the tree built, unit-tested and packaged in a debootstrapped
# trixie root (cached), then its BPF tests and a subset of the data-plane
# suites on trixie's 6.12 under qemu TCG (scripts/vmtest.sh says which).
.PHONY: vmtest-trixie
vmtest-trixie: deps
	@scripts/build-in-root.sh trixie
	@VMTEST_RELEASE=trixie scripts/vmtest.sh

# The package under a real systemd (PID 1 of a Debian 12 and a Debian 13
# guest): VMTEST_SYSTEMD_RELEASES picks (default both).
vmtest-systemd: deps
	@$(MAKE) --no-print-directory $(BUILD)/tools/rs_client $(BUILD)/tools/rs_backend \
		$(BUILD)/tools/quic_client
	@scripts/vmtest-systemd.sh $(VMTEST_SYSTEMD_RELEASES)

demo: deps bpffs
	@$(MAKE) --no-print-directory build
	@scripts/demo.sh

demo-fleet: deps bpffs
	@$(MAKE) --no-print-directory build
	@scripts/demo-fleet.sh

# BPF tests and pins need a bpf filesystem; mount it where it is missing.
bpffs:
	@mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

lint:
	@scripts/lint.sh $(C_SOURCES)
	@$(MAKE) --no-print-directory shape

# The tree's shape (scripts/shape.sh): folder and file sizes, the daemon's
# void * members and circles of calls (its files compiled with gcc
# -fcallgraph-info, so the skeletons they include come first).
shape: $(BPF_SKELS) $(VERSION_H)
	@scripts/shape.sh $(CFLAGS_COMMON) $(INC_ringsteerd)

$(BUILD)/bpf_info: scripts/bpf_info.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $< -lbpf -lelf -lz -o $@

info: $(BPF_OBJS) $(BUILD)/bpf_info
	@$(BUILD)/bpf_info $(BPF_OBJS)

install: deps
	@$(MAKE) --no-print-directory $(BINS) $(MANS)
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)$(SYSCONFDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(BUILD)/ringsteerd $(DESTDIR)$(PREFIX)/sbin/ringsteerd
	install -m 0755 $(BUILD)/ringsteer $(DESTDIR)$(PREFIX)/bin/ringsteer
	install -m 0644 configs/ringsteer.conf $(DESTDIR)$(SYSCONFDIR)/ringsteer.conf.sample
	install -m 0644 configs/ringsteer.conf.minimal $(DESTDIR)$(SYSCONFDIR)/ringsteer.conf.minimal
	install -m 0644 $(BUILD)/man/ringsteer.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(BUILD)/man/ringsteerd.8 $(BUILD)/man/ringsteer.8 \
		$(DESTDIR)$(MANDIR)/man8/
	install -m 0644 README.md LICENSE docs/*.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 contrib/monitoring/ringsteer-dashboard.json \
		contrib/monitoring/ringsteer-alerts.yml $(DESTDIR)$(DOCDIR)/examples/
	install -m 0644 contrib/bash-completion/ringsteer $(DESTDIR)$(BASHCOMPDIR)/ringsteer
	ln -sf ringsteer $(DESTDIR)$(BASHCOMPDIR)/ringsteerd
	sed 's|@PREFIX@|$(PREFIX)|g' configs/ringsteerd.service > \
		$(DESTDIR)$(UNITDIR)/ringsteerd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/ringsteerd.service

# Removes what install put there, with the same PREFIX and DESTDIR. The
# operator's ringsteer.conf stays, and so does the pinned data plane (a
# stopped daemon keeps steering): `ringsteer detach` first to remove it.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/sbin/ringsteerd $(DESTDIR)$(PREFIX)/bin/ringsteer \
		$(DESTDIR)$(SYSCONFDIR)/ringsteer.conf.sample \
		$(DESTDIR)$(SYSCONFDIR)/ringsteer.conf.minimal \
		$(DESTDIR)$(MANDIR)/man5/ringsteer.conf.5 \
		$(DESTDIR)$(MANDIR)/man8/ringsteerd.8 $(DESTDIR)$(MANDIR)/man8/ringsteer.8 \
		$(DESTDIR)$(BASHCOMPDIR)/ringsteer $(DESTDIR)$(BASHCOMPDIR)/ringsteerd \
		$(DESTDIR)$(UNITDIR)/ringsteerd.service
	rm -rf $(DESTDIR)$(DOCDIR)
	rmdir $(DESTDIR)$(SYSCONFDIR) 2>/dev/null || true

clean:
	rm -rf $(BUILD) $(TSAN_BUILD)

# Benchmarks (docs/benchmarks.md): not part of `make test`. BENCH_QUICK=1
# makes a short run; see scripts/bench.sh for the other knobs.
BENCH_BPF  := $(BUILD)/bench/floor_lookup.skel.h $(BUILD)/bench/fleet_tag.skel.h \
	$(BUILD)/bench/floor_tc.skel.h
BENCH_BINS := $(BUILD)/bench/decision_cost $(BUILD)/bench/ring_quality \
	$(BUILD)/bench/bench_load $(BUILD)/bench/bench_backend \
	$(BUILD)/bench/fleet_cost $(BUILD)/bench/quic_lb_cost \
	$(BUILD)/bench/fleet_tag_cost $(BUILD)/bench/bench_dgram

$(BUILD)/bench/%.bpf.o: bench/bpf/%.bpf.c
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/bench/decision_cost: bench/decision_cost.c $(LIB_A) $(BPF_SKELS) \
		$(BENCH_BPF)
	$(CC) $(CFLAGS_COMMON) $(INC_ringsteerd) $(CFLAGS) $(DEPFLAGS) -MF $@.d \
		-I$(BUILD)/bench $< $(LIB_A) $(LIBS) -o $@

$(BUILD)/bench/fleet_cost: bench/fleet_cost.c $(LIB_A) $(BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(INC_ringsteerd) $(CFLAGS) $(DEPFLAGS) -MF $@.d \
		$< $(LIB_A) $(LIBS) -o $@

# The fleet tag alone, with a repeat count (bench/bpf/fleet_tag.bpf.c).
$(BUILD)/bench/fleet_tag_cost: bench/fleet_tag_cost.c \
		$(BUILD)/bench/fleet_tag.skel.h
	$(CC) $(CFLAGS_COMMON) $(INC_ringsteerd) $(CFLAGS) $(DEPFLAGS) -MF $@.d \
		-I$(BUILD)/bench $< $(LIBS) -o $@

# steer_tc's cookie step per QUIC-LB mode, software AES and kfuncs; it
# drives the program through the BPF tests' TC fixture.
# (its sources compiled here, optimised and without the tests' sanitizers).
QUIC_LB_COST_SRCS := tests/bpf/lib/tc_fixture.c tests/bpf/lib/bpf_fixture.c \
	tests/bpf/lib/frames.c
# With the datagram floors (bench/bpf/floor_tc.bpf.c, floor_lookup) and
# a plain UDP service through steer_lookup (bench/dgram_lookup.c).
$(BUILD)/bench/quic_lb_cost: bench/quic_lb_cost.c bench/dgram_lookup.c \
		$(QUIC_LB_COST_SRCS) $(LIB_A) $(BPF_SKELS) $(BENCH_BPF)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(INC_tests) -Itests/bpf/lib -Ibench \
		-I$(BUILD)/bench $(CFLAGS) $(DEPFLAGS) -MF $@.d $< \
		bench/dgram_lookup.c $(QUIC_LB_COST_SRCS) $(LIB_A) \
		$(LIBS) -lcunit -o $@

$(BUILD)/bench/ring_quality: bench/ring_quality.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(INC_core) $(CFLAGS) $(DEPFLAGS) -MF $@.d $< \
		$(LIB_A) $(LIBS) -lm -pthread -o $@

$(BUILD)/bench/bench_%: bench/bench_%.c $(TOOL_LIB)
	@mkdir -p $(@D)
	$(CC) $(TOOL_CFLAGS) $(DEPFLAGS) -MF $@.d $< $(TOOL_LIB) -o $@

# Fleet mode's benchmark (docs/benchmarks.md, "Fleet"); not in `make bench`.
bench-fleet: deps bpffs
	@$(MAKE) --no-print-directory build $(BUILD)/bench/fleet_cost \
		$(BUILD)/bench/fleet_tag_cost $(BUILD)/bench/bench_load \
		$(BUILD)/bench/bench_backend
	@scripts/bench-fleet.sh

# Where a connection's CPU time goes, under perf (docs/benchmarks.md
# section 5); not in `make bench`.
bench-profile: deps bpffs
	@scripts/bench-deps.sh
	@$(MAKE) --no-print-directory $(BUILD)/ringsteerd $(LIB_A) $(BENCH_BINS)
	@BENCH_SECTIONS=profile scripts/bench.sh

bench: deps bpffs
	@scripts/bench-deps.sh
	@$(MAKE) --no-print-directory $(BUILD)/ringsteerd $(LIB_A) $(BENCH_BINS)
	@scripts/bench.sh
