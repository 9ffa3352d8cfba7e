# Set-up and everyday commands. On a fresh Debian 12 machine, as root:
#   make run    installs what building and running need (BUILD_PACKAGES) if
#               missing, builds, starts ratelimiterd on 127.0.0.1:8080
#   make test   installs what the tests add (TEST_PACKAGES) too, builds, runs the
#               whole suite: ctest on the normal build, again under ASan+UBSan and
#               under TSan (CMakePresets.json), then every fuzz harness: those of
#               tests/fuzz/focus for FUZZ_SECONDS, the others for a third of it
#               (what CI runs, under 30 minutes)
#   make check  the normal build's ctest alone (a minute or two)
# make build and make install need BUILD_PACKAGES only; check, test, asan, tsan,
# fuzz and bench install TEST_PACKAGES as well (make deps-test).
BUILD ?= build
JOBS ?= $(shell nproc)
LISTEN ?= 127.0.0.1:8080
# make install: where to (PREFIX), and a staging root for packagers (DESTDIR).
PREFIX ?= /usr/local
DESTDIR ?=

# Debian packages building and running the daemon need: the compiler, the
# libraries it links, tzdata for budgets' time zones, openssl to make a
# certificate for tls.
BUILD_PACKAGES = build-essential cmake pkg-config libh2o-evloop-dev libssl-dev libuv1-dev zlib1g-dev \
                 libcjson-dev libyaml-dev libcurl4-openssl-dev libhiredis-dev libglib2.0-dev tzdata openssl
# What the tests and benchmarks add: cmocka (without it CMake leaves the tests
# out), a real Redis, promtool, clang and its libFuzzer runtime, chromium for
# the console's browser tests, SQLite for the registry benchmark, python3 for the
# README's examples, systemd-analyze (and /bin/kill) for the systemd unit.
TEST_PACKAGES = libcmocka-dev redis-server prometheus clang libclang-rt-14-dev chromium libsqlite3-dev \
                python3 systemd procps
# Seconds each libFuzzer harness of tests/fuzz/focus runs in make test / make
# fuzz (the others: a third of it, or FUZZ_SECONDS_OTHERS).
FUZZ_SECONDS ?= 60

.PHONY: all deps deps-test build build-tests test check run asan tsan fuzz bench install example clean

all: build

# Installs those of the Debian packages $(1) that are missing.
define install_missing
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
endef

deps:
	$(call install_missing,$(BUILD_PACKAGES))

deps-test: deps
	$(call install_missing,$(TEST_PACKAGES))

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# The build with its tests: configured again, for a tree that make run first
# configured without cmocka (and so without tests).
build-tests: deps-test $(BUILD)/Makefile
	cmake -S . -B $(BUILD) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: check asan tsan fuzz

check: build-tests
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The registry the daemon rewrites lives in data/ (not tracked); the first run
# seeds it from the example limits.
run: build
	mkdir -p data
	[ -f data/limits.json ] || cp examples/limits.json data/limits.json
	$(BUILD)/ratelimiterd --listen $(LISTEN) --backend memory --registry data/limits.json

# Builds what it installs, then installs libratelimiter.{so,a},
# include/ratelimiter/*.h, ratelimiter.pc, ratelimiterd and rlctl under
# $(DESTDIR)$(PREFIX). ldconfig runs for a real (not staged) install as
# root, so that the shared library is found.
install: deps $(BUILD)/Makefile
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX="$(PREFIX)" >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target ratelimiter ratelimiter_shared ratelimiterd rlctl
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

# examples/llm_workload.c built against the installed library (make install
# first, with the same PREFIX/DESTDIR), with nothing but pkg-config.
example:
	@mkdir -p $(BUILD)/examples
	@export PKG_CONFIG_PATH="$(DESTDIR)$(PREFIX)/lib/pkgconfig:$(DESTDIR)$(PREFIX)/lib/$$(cc -dumpmachine)/pkgconfig$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH}"; \
	pc="pkg-config"; [ -z "$(DESTDIR)" ] || pc="pkg-config --define-prefix"; \
	$$pc --exists ratelimiter || { echo "ratelimiter.pc not found under $(DESTDIR)$(PREFIX): run make install first" >&2; exit 1; }; \
	set -x; cc -std=c11 -O2 -Wall -Wextra examples/llm_workload.c $$($$pc --cflags --libs ratelimiter) \
	  -Wl,-rpath,"$$($$pc --variable=libdir ratelimiter)" -o $(BUILD)/examples/llm_workload
	@echo "run it: $(BUILD)/examples/llm_workload   (against make run, load its limits first: $(BUILD)/examples/llm_workload --write-limits /tmp/llm_workload.json && $(BUILD)/rlctl --url http://$(LISTEN) put --file /tmp/llm_workload.json && $(BUILD)/examples/llm_workload --url http://$(LISTEN))"

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer / ThreadSanitizer:
# the presets of CMakePresets.json (build-asan, build-tsan; the sanitizer
# options, TSan's suppressions, are in the test presets).
asan: deps-test
	cmake --preset asan
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan -j $(JOBS)

tsan: deps-test
	cmake --preset tsan
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan -j $(JOBS)

# Every libFuzzer harness (tests/fuzz) over its seeds and regression inputs,
# then fuzzed: FUZZ_SECONDS those of tests/fuzz/focus, a third of it the
# others (clang, build-fuzz).
fuzz: deps-test
	FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) tests/fuzz/run.sh

# Benchmarks (not part of the suite): the in-process memory backend, then
# HTTP against nginx under the same wrk load. Needs wrk and nginx-light.
bench: build-tests
	$(call install_missing,wrk nginx-light)
	taskset -c 0 $(BUILD)/bench_memory 5
	bench/http/run.sh
	bench/journal/run.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
