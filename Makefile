# Set-up and everyday commands. On a fresh Debian 12 machine, as root:
#   make run    installs what is missing, builds, starts ratelimiterd on 127.0.0.1:8080
#   make test   installs what is missing, builds, runs the whole suite (ctest)
BUILD ?= build
JOBS ?= $(shell nproc)
LISTEN ?= 127.0.0.1:8080

# Debian packages the build, the tests and the benchmarks need.
PACKAGES = build-essential cmake pkg-config libh2o-evloop-dev libssl-dev libuv1-dev zlib1g-dev \
           libcjson-dev libyaml-dev libcmocka-dev libcurl4-openssl-dev

.PHONY: all deps build test run asan tsan bench clean

all: build

deps:
	@missing=""; for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

$(BUILD)/Makefile: CMakeLists.txt
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The registry the daemon rewrites lives in data/ (not tracked); the first run
# seeds it from the example limits.
run: build
	mkdir -p data
	[ -f data/limits.json ] || cp examples/limits.json data/limits.json
	$(BUILD)/ratelimiterd --listen $(LISTEN) --backend memory --registry data/limits.json

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer / ThreadSanitizer.
asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRL_SANITIZE=address,undefined
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DRL_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1" ctest --output-on-failure -j $(JOBS)

# Benchmarks (not part of the suite): the in-process memory backend, then
# HTTP against nginx under the same wrk load. Needs wrk and nginx-light.
bench: build
	$(MAKE) --no-print-directory deps PACKAGES="wrk nginx-light"
	taskset -c 0 $(BUILD)/bench_memory 5
	bench/http/run.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan
