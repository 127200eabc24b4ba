# Makefile — the front door: `make serve` and `make test` work on a fresh Debian 12 machine as root.
# Everything else (presets, sanitizers, fuzzing, soaks, benchmarks) is a target here too.

SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build/release
CMAKE_FLAGS ?=
DATA_DIR ?= ./data
ADDRESS ?= 127.0.0.1
PORT ?= 6632
FUZZ_SECONDS ?= 600
SIM_SOAK_SECONDS ?= 3600
CHAOS_SCHEDULES ?= 20

# Debian packages the build and the tests need. `make deps` installs only what is missing.
APT_PACKAGES := build-essential cmake ninja-build pkg-config python3 catch2 liblmdb-dev lmdb-utils \
	libasio-dev libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libhttp-parser-dev libssl-dev \
	libtcmalloc-minimal4 libfiu-dev fiu-utils clang-14 libclang-rt-14-dev clang-format-14 curl procps openssl \
	iptables

QUEEN := $(BUILD)/cli/queen

.PHONY: all deps build serve test check unit fuzz-smoke fuzz format format-check debug asan tsan \
	sim-soak bench cluster chaos clean help

all: build

help:
	@echo "make serve        install deps, build, run a single-node broker on $(ADDRESS):$(PORT) (data in $(DATA_DIR));"
	@echo "                  ADDRESS=0.0.0.0 accepts other machines"
	@echo "make cluster      install deps, build, run a local three-node cluster (conf/cluster-3, data in ./data/node{1,2,3})"
	@echo "make test         install deps, build with -Werror, run every test (ctest) and the fuzz smoke runs"
	@echo "make debug|asan|tsan   build and run the unit tests in that configuration"
	@echo "make fuzz         run every fuzzer for FUZZ_SECONDS (default $(FUZZ_SECONDS))"
	@echo "make chaos        run CHAOS_SCHEDULES (default $(CHAOS_SCHEDULES)) fault schedules on a real three-node cluster"
	@echo "make sim-soak     run the raft simulator for SIM_SOAK_SECONDS (default $(SIM_SOAK_SECONDS))"
	@echo "make bench        run the standard benchmark profiles"
	@echo "make format       reformat the sources; make format-check checks them"

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "error: run as root (or install: $$missing)" >&2; exit 1; fi; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
		{ apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $$missing >/dev/null; }; \
	fi

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

serve: build
	$(QUEEN) serve --data-dir $(DATA_DIR) --address $(ADDRESS) --port $(PORT)

cluster: build
	tools/cluster.sh $(QUEEN)

# The cluster under SIGKILL, SIGSTOP and iptables cuts in a network namespace (root).
chaos: build
	cd tests/integration && QUEEN_BIN=$(abspath $(QUEEN)) QUEEN_CHAOS_SCHEDULES=$(CHAOS_SCHEDULES) \
		python3 -u -m unittest -v test_chaos

# The CI contract: warnings are errors, every ctest test runs, then the short fuzz runs.
test: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUEEN_WERROR=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900
	$(MAKE) --no-print-directory fuzz-smoke

unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

debug:
	$(MAKE) BUILD=build/debug CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug" unit
asan:
	$(MAKE) BUILD=build/asan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DQUEEN_SANITIZE=address" unit
tsan:
	$(MAKE) BUILD=build/tsan CMAKE_FLAGS="-DCMAKE_BUILD_TYPE=Debug -DQUEEN_SANITIZE=thread" unit

# libFuzzer targets need clang; they live in their own build tree.
build/fuzz/build.ninja:
	CC=clang-14 CXX=clang++-14 cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DQUEEN_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null

fuzz-build: deps build/fuzz/build.ninja
	cmake --build build/fuzz -j $(JOBS) --target fuzzers

fuzz-smoke: fuzz-build
	tools/run_fuzzers.sh build/fuzz 20

fuzz: fuzz-build
	tools/run_fuzzers.sh build/fuzz $(FUZZ_SECONDS)

format:
	tools/format.sh

format-check:
	tools/format.sh --check

sim-soak: build
	QUEEN_SIM_BUDGET_MS=$$(( $(SIM_SOAK_SECONDS) * 1000 )) $(BUILD)/modules/raft/raft_sim --budget-ms $$(( $(SIM_SOAK_SECONDS) * 1000 ))

bench: build
	tools/bench.sh $(QUEEN)

clean:
	rm -rf build
