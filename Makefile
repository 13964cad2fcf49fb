# The README's entry points. Each target installs what it needs first, so both
# `make demo` and `make test` work on a fresh Debian 12 machine.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifeq ($(CI),true)
CMAKE_FLAGS += -DGLEANER_WERROR=ON
endif

.PHONY: all deps build test test-sanitize demo bench lint format clean

# The unit tests (every GoogleTest binary labelled unit) built apart with AddressSanitizer
# and UndefinedBehaviorSanitizer; the fuzz targets of `make test` already are.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_TARGETS = common_test net_test cgroup_test resctrl_test kube_test reporter_test agent_test \
	scheduler_test bench_test

all: build

deps:
	bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

test-sanitize: deps
	cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O0 -g1" \
		-DGLEANER_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(SANITIZE_BUILD) -j$(JOBS) --target $(SANITIZE_TARGETS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --test-dir $(SANITIZE_BUILD) -L sanitize --output-on-failure -j$(JOBS)

demo: build
	bash scripts/demo.sh $(BUILD)

bench: build
	bash bench/run --build $(BUILD)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

# .clang-tidy on every source file clang can parse. LINT_FLAGS: e.g. --no-analyzer (leave out
# the slow clang-analyzer checks), --no-tests (the shipped code and benchmarks only).
LINT_FLAGS ?=
lint: build
	/usr/bin/python3 test/lint/clang_tidy_tree.py --build-dir $(BUILD) --jobs $(JOBS) $(LINT_FLAGS)

clean:
	rm -rf $(BUILD)
