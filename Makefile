# ringsteer — top-level build. `make help` lists the targets.
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PREFIX   ?= /usr/local
DESTDIR  ?=
BUILD    := build
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine)

CFLAGS_COMMON := -std=gnu11 -g -Wall -Wextra -Werror -D_GNU_SOURCE \
	-Iinclude -Iuserspace/lib -I$(BUILD)/bpf -I/usr/include/libnl3
CFLAGS   ?= -O2
SANFLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all
LIBS     := -lbpf -lelf -lz -lxxhash -lnl-3 -linih -lev -lcurl -ljansson -lmicrohttpd -lm
BPF_CFLAGS := -target bpf -O2 -g -Wall -Werror -Iinclude -Ibpf -I$(ARCH_INC)

BPF_PROGS := steer_lookup steer_tc steer_sockops test_hash_probe
BPF_OBJS  := $(patsubst %,$(BUILD)/bpf/%.bpf.o,$(BPF_PROGS))
BPF_SKELS := $(patsubst %,$(BUILD)/bpf/%.skel.h,$(BPF_PROGS))

LIB_SRCS  := $(wildcard userspace/lib/*.c)
LIB_OBJS  := $(patsubst userspace/lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRCS))
SAN_OBJS  := $(patsubst userspace/lib/%.c,$(BUILD)/lib-san/%.o,$(LIB_SRCS))
LIB_A     := $(BUILD)/libringsteer.a
SAN_A     := $(BUILD)/libringsteer-san.a

BINS      := $(BUILD)/ringsteerd $(BUILD)/ringsteer
UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
BPF_TESTS  := $(patsubst tests/bpf/%.c,$(BUILD)/tests/%,$(wildcard tests/bpf/test_*.c))
TOOLS      := $(patsubst tests/e2e/tools/%.c,$(BUILD)/tools/%,$(wildcard tests/e2e/tools/*.c))
HEADERS    := $(wildcard include/ringsteer/*.h userspace/lib/*.h)
C_SOURCES  := $(shell find bpf include userspace tests scripts bench -name '*.[ch]' 2>/dev/null)

.PHONY: all deps bpffs test unit bpftest e2e demo lint info clean install help bench

all: $(BINS) $(TOOLS)

help:
	@echo "make            build ringsteerd, ringsteer and the test tools"
	@echo "make demo       run the memcached demo in network namespaces (root)"
	@echo "make test       lint + unit + BPF + end-to-end tests (root)"
	@echo "make lint       clang-format check and cppcheck"
	@echo "make info       verifier instruction count and stack use per program"
	@echo "make install    install binaries, sample config, systemd unit"

# Installs missing Debian packages; a no-op when everything is there.
deps:
	@scripts/install-deps.sh --check 2>/dev/null || scripts/install-deps.sh

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) include/ringsteer/abi.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/lib/%.o: userspace/lib/%.c $(HEADERS) $(BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

$(BUILD)/lib-san/%.o: userspace/lib/%.c $(HEADERS) $(BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(SANFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJS)
	ar rcs $@ $^

$(SAN_A): $(SAN_OBJS)
	ar rcs $@ $^

$(BUILD)/ringsteerd: $(wildcard userspace/ringsteerd/*.c) $(LIB_A)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $(filter %.c,$^) $(LIB_A) $(LIBS) -o $@

$(BUILD)/ringsteer: $(wildcard userspace/ringsteer/*.c) $(LIB_A)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $(filter %.c,$^) $(LIB_A) $(LIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(SAN_A) $(BPF_SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(SANFLAGS) $< $(SAN_A) $(LIBS) -lcunit -o $@

BPF_TEST_LIB := $(wildcard tests/bpf/lib/*.c)

$(BUILD)/tests/%: tests/bpf/%.c $(SAN_A) $(BPF_SKELS) $(BPF_TEST_LIB) \
		$(wildcard tests/bpf/lib/*.h)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(SANFLAGS) -Itests/bpf/lib $< $(BPF_TEST_LIB) \
		$(SAN_A) $(LIBS) -lcunit -o $@

TOOL_LIB := $(wildcard tests/e2e/tools/lib/*.c)

$(BUILD)/tools/%: tests/e2e/tools/%.c $(TOOL_LIB) $(wildcard tests/e2e/tools/lib/*.h)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -Itests/e2e/tools/lib \
		$< $(TOOL_LIB) -o $@

unit: $(UNIT_TESTS)
	@scripts/run-suite.sh unit $(UNIT_TESTS)

bpftest: $(BPF_TESTS)
	@scripts/run-suite.sh bpf $(BPF_TESTS)

e2e: $(BINS) $(TOOLS)
	@scripts/run-suite.sh e2e $(sort $(wildcard tests/e2e/test_*.sh))

# Order matters: cheap and local first, namespaces last.
test: deps bpffs
	@$(MAKE) --no-print-directory all $(UNIT_TESTS) $(BPF_TESTS)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory bpftest
	@$(MAKE) --no-print-directory e2e

demo: deps bpffs
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh

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

install: $(BINS)
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
	$(BUILD)/bench/bench_load $(BUILD)/bench/bench_backend

$(BUILD)/bench/%.bpf.o: bench/bpf/%.bpf.c
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/%.skel.h: $(BUILD)/bench/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/bench/decision_cost: bench/decision_cost.c $(LIB_A) $(BPF_SKELS) \
		$(BENCH_BPF)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -I$(BUILD)/bench $< $(LIB_A) $(LIBS) \
		-o $@

$(BUILD)/bench/ring_quality: bench/ring_quality.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) $< $(LIB_A) $(LIBS) -lm -pthread -o $@

$(BUILD)/bench/bench_%: bench/bench_%.c $(TOOL_LIB) \
		$(wildcard tests/e2e/tools/lib/*.h)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -Itests/e2e/tools/lib \
		$< $(TOOL_LIB) -o $@

bench: deps bpffs
	@scripts/bench-deps.sh
	@$(MAKE) --no-print-directory $(BUILD)/ringsteerd $(LIB_A) $(BENCH_BINS)
	@scripts/bench.sh
