# ringsteer — top-level build. `make help` lists the targets.
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    := build
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine)

CFLAGS_COMMON := -std=gnu11 -g -Wall -Wextra -Werror -D_GNU_SOURCE
CFLAGS   ?= -O2
SANFLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
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
INC_core      := -Iinclude -Iuserspace/core
INC_config    := $(INC_core) -Iuserspace/config
INC_dataplane := $(INC_core) -Iuserspace/dataplane -I$(BUILD)/bpf
INC_sys       := $(INC_config) -Iuserspace/sys -I/usr/include/libnl3
INC_ringsteerd := $(INC_sys) -Iuserspace/dataplane -I$(BUILD)/bpf \
	-Iuserspace/ringsteerd
INC_ringsteer := $(INC_config) -Iuserspace/ringsteer
INC_tests     := $(INC_ringsteerd) -I$(BUILD)/tests/bpf

BPF_PROGS := steer_lookup steer_tc steer_sockops steer_probe
BPF_OBJS  := $(patsubst %,$(BUILD)/bpf/%.bpf.o,$(BPF_PROGS))
BPF_SKELS := $(patsubst %,$(BUILD)/bpf/%.skel.h,$(BPF_PROGS))
# Test-only BPF programs: built under build/tests, never beside the shipped.
TEST_BPF_PROGS := $(patsubst tests/bpf/progs/%.bpf.c,%,\
	$(wildcard tests/bpf/progs/*.bpf.c))
TEST_BPF_SKELS := $(patsubst %,$(BUILD)/tests/bpf/%.skel.h,$(TEST_BPF_PROGS))

LAYERS    := core config dataplane sys
LIB_SRCS  := $(foreach l,$(LAYERS),$(wildcard userspace/$(l)/*.c))
LIB_OBJS  := $(patsubst userspace/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
SAN_OBJS  := $(patsubst userspace/%.c,$(BUILD)/san/%.o,$(LIB_SRCS))
LIB_A     := $(BUILD)/libringsteer.a
SAN_A     := $(BUILD)/libringsteer-san.a
DAEMON_OBJS := $(patsubst userspace/%.c,$(BUILD)/obj/%.o,\
	$(wildcard userspace/ringsteerd/*.c))
CLI_OBJS  := $(patsubst userspace/%.c,$(BUILD)/obj/%.o,\
	$(wildcard userspace/ringsteer/*.c))

BINS      := $(BUILD)/ringsteerd $(BUILD)/ringsteer
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
BPF_TESTS  := $(patsubst tests/bpf/%.c,$(BUILD)/tests/%,$(wildcard tests/bpf/test_*.c))
TOOLS      := $(patsubst tests/e2e/tools/%.c,$(BUILD)/tools/%,$(wildcard tests/e2e/tools/*.c))
HEADERS    := $(wildcard include/ringsteer/*.h userspace/*/*.h)
C_SOURCES  := $(shell find bpf include userspace tests scripts bench -name '*.[ch]' 2>/dev/null)

.PHONY: all build deps bpffs test unit bpftest e2e chaos demo demo-fleet bench-fleet lint info clean install help bench \
	vmtest

# `make` installs missing build dependencies first, as `make test` does
# (scripts/install-deps.sh: a no-op when everything is there, root needed
# otherwise). `make build` skips that step.
all: deps
	@$(MAKE) --no-print-directory build

build: $(BINS) $(TOOLS)

help:
	@echo "make            install missing build dependencies (root), then build"
	@echo "make build      build ringsteerd, ringsteer and the test tools"
	@echo "V=1             show whole command lines"
	@echo "make demo       run the memcached demo in network namespaces (root)"
	@echo "make demo-fleet three hosts behind an ECMP router, one affinity (root)"
	@echo "make test       lint + unit + BPF + end-to-end tests (root)"
	@echo "make chaos      long chaos run: CHAOS_ACTIONS (2000), CHAOS_SEED (random),"
	@echo "                CHAOS_CHECK_EVERY (5); tests/e2e/test_chaos.sh (root)"
	@echo "make vmtest     BPF tests and data-plane e2e suites on Debian 12's 6.1 kernel"
	@echo "                under qemu TCG (root; scripts/vmtest.sh)"
	@echo "make lint       clang-format check and cppcheck"
	@echo "make info       verifier instruction count and stack use per program"
	@echo "make install    install binaries, sample config, systemd unit"

# Installs missing Debian packages; a no-op when everything is there.
deps:
	@scripts/install-deps.sh --check 2>/dev/null || scripts/install-deps.sh

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c
	@mkdir -p $(@D)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

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
$(BUILD)/obj/$(1)/%.o: userspace/$(1)/%.c | $(BPF_SKELS)
	@mkdir -p $$(@D)
	$$(call msg,CC,$$@)
	$$(Q)$$(CC) $$(CFLAGS_COMMON) $$(INC_$(1)) $$(CFLAGS) $$(DEPFLAGS) -c $$< -o $$@

$(BUILD)/san/$(1)/%.o: userspace/$(1)/%.c | $(BPF_SKELS)
	@mkdir -p $$(@D)
	$$(call msg,CC-SAN,$$@)
	$$(Q)$$(CC) $$(CFLAGS_COMMON) $$(INC_$(1)) $$(SANFLAGS) $$(DEPFLAGS) -c $$< -o $$@
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
$(BUILD)/ringsteerd: $(DAEMON_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBS) -o $@

$(BUILD)/ringsteer: $(CLI_OBJS) $(LIB_A)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LIBS) -o $@

# Test programs compile and link in one step; their .d files sit beside
# them (-MF, since there is no .o to name it after).
$(BUILD)/tests/%: tests/unit/%.c $(SAN_A) $(TEST_BPF_SKELS) | $(BPF_SKELS)
	@mkdir -p $(@D)
	$(call msg,TEST,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(INC_tests) $(SANFLAGS) $(DEPFLAGS) -MF $@.d \
		$< $(filter %.o,$^) $(SAN_A) $(LIBS) -lcunit -o $@

# Unit tests of the daemon's decision files link just those objects.
$(BUILD)/tests/test_ids: $(BUILD)/san/ringsteerd/ids.o
$(BUILD)/tests/test_fleet_member_fuzz: $(BUILD)/san/ringsteerd/fleet_member.o \
	$(BUILD)/san/ringsteerd/fleet_quic.o

BPF_TEST_LIB := $(patsubst tests/bpf/lib/%.c,$(BUILD)/tests/lib/%.o,\
	$(wildcard tests/bpf/lib/*.c))

$(BUILD)/tests/lib/%.o: tests/bpf/lib/%.c | $(BPF_SKELS)
	@mkdir -p $(@D)
	$(call msg,CC-SAN,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(INC_tests) $(SANFLAGS) $(DEPFLAGS) \
		-Itests/bpf/lib -c $< -o $@

$(BUILD)/tests/%: tests/bpf/%.c $(BPF_TEST_LIB) $(SAN_A) | $(BPF_SKELS)
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
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

unit: $(UNIT_TESTS)
	@scripts/run-suite.sh unit $(UNIT_TESTS)

# The verifier budget (tests/bpf/verifier_budget.txt) runs with the BPF tests.
bpftest: $(BPF_TESTS) $(BUILD)/bpf_info $(BPF_OBJS)
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

# Order matters: cheap and local first, namespaces last.
test: deps bpffs
	@$(MAKE) --no-print-directory build $(UNIT_TESTS) $(BPF_TESTS)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory bpftest
	@$(MAKE) --no-print-directory e2e

# Debian 12's own 6.1 kernel under qemu (README.md, "Tests").
vmtest: deps
	@$(MAKE) --no-print-directory build $(BPF_TESTS) $(BUILD)/bpf_info \
		$(BPF_OBJS)
	@scripts/vmtest.sh

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

$(BUILD)/bpf_info: scripts/bpf_info.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $< -lbpf -lelf -lz -o $@

info: $(BPF_OBJS) $(BUILD)/bpf_info
	@$(BUILD)/bpf_info $(BPF_OBJS)

install: deps
	@$(MAKE) --no-print-directory $(BINS)
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin \
		$(DESTDIR)/etc/ringsteer $(DESTDIR)/lib/systemd/system
	install -m 0755 $(BUILD)/ringsteerd $(DESTDIR)$(PREFIX)/sbin/ringsteerd
	install -m 0755 $(BUILD)/ringsteer $(DESTDIR)$(PREFIX)/bin/ringsteer
	install -m 0644 configs/ringsteer.conf $(DESTDIR)/etc/ringsteer/ringsteer.conf.sample
	install -d $(DESTDIR)$(PREFIX)/share/doc/ringsteer
	install -m 0644 README.md docs/*.md $(DESTDIR)$(PREFIX)/share/doc/ringsteer/
	sed 's|@PREFIX@|$(PREFIX)|g' configs/ringsteerd.service > \
		$(DESTDIR)/lib/systemd/system/ringsteerd.service
	chmod 0644 $(DESTDIR)/lib/systemd/system/ringsteerd.service

clean:
	rm -rf $(BUILD)

# Benchmarks (docs/benchmarks.md): not part of `make test`. BENCH_QUICK=1
# makes a short run; see scripts/bench.sh for the other knobs.
BENCH_BPF  := $(BUILD)/bench/floor_lookup.skel.h
BENCH_BINS := $(BUILD)/bench/decision_cost $(BUILD)/bench/ring_quality \
	$(BUILD)/bench/bench_load $(BUILD)/bench/bench_backend \
	$(BUILD)/bench/fleet_cost

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
		$(BUILD)/bench/bench_load $(BUILD)/bench/bench_backend
	@scripts/bench-fleet.sh

bench: deps bpffs
	@scripts/bench-deps.sh
	@$(MAKE) --no-print-directory $(BUILD)/ringsteerd $(LIB_A) $(BENCH_BINS)
	@scripts/bench.sh
