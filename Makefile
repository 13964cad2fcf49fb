# The README's entry points. Each target installs what it needs first, so both
# `make demo` and `make test` work on a fresh Debian 12 machine.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
ifeq ($(CI),true)
CMAKE_FLAGS += -DGLEANER_WERROR=ON
endif

.PHONY: all deps build test demo bench lint format clean

all: build

deps:
	bash scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

demo: build
	bash scripts/demo.sh $(BUILD)

bench: build
	bash bench/run --build $(BUILD)

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

lint: build
	git ls-files '*.cc' | grep -v '^test/' | xargs clang-tidy -p $(BUILD) --quiet

clean:
	rm -rf $(BUILD)
