# The two set-up commands: `make test` and `make demo`. Both install what
# they need (Debian packages, via apt-get), configure CMake into build/ once,
# and build incrementally.
SHELL     := /bin/bash
BUILD     ?= build
JOBS      ?= $(shell nproc)
BUILD_TYPE ?= RelWithDebInfo
PACKAGES  := tools/setup/debian-packages.txt
DEPS      := tools/setup/install-deps.sh

.PHONY: all deps build python test demo test-asan test-tsan test-arm64 fuzz fuzz-build fuzz-ci models-check mediapipe-check clean

all: build

deps:
	@$(DEPS) $(PACKAGES)

# RelWithDebInfo with line tables only (-g1): backtraces, sanitizer reports
# and perf keep file and line; full debug info (-g) made each compile a
# quarter to a third slower, and CI builds three trees from scratch on 2
# cores. DEBUG_INFO=-g for variables in a debugger.
DEBUG_INFO ?= -g1
RELWITHDEBINFO := -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 $(DEBUG_INFO) -DNDEBUG"

# Configure once; later runs only rebuild what changed.
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(RELWITHDEBINFO)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# The `kiln` Python module alone, into $(BUILD)/python/kiln:
# PYTHONPATH=$(BUILD)/python /usr/bin/python3 -c "import kiln".
python: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target kiln_python

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

demo: build
	@$(DEPS) tools/setup/debian-packages-demo.txt
	tools/demo.sh $(BUILD)

# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps
	@[ -f build-asan/CMakeCache.txt ] || cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=address,undefined
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j$(JOBS)

# The engine and op suites under ThreadSanitizer (sessions on several threads,
# the host thread pool).
test-tsan: deps
	@[ -f build-tsan/CMakeCache.txt ] || cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo $(RELWITHDEBINFO) -DKILN_SANITIZE=thread
	cmake --build build-tsan -j$(JOBS) --target engine_test ops_test
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j$(JOBS) -R '^(Session|Scheduler|Planner|ThreadPool|Elementwise|Nn|Layout|Reduce)'

# The host-only library and its tests cross-built for arm64 (the NEON
# kernels) with g++-aarch64-linux-gnu, the tests run under qemu-aarch64.
test-arm64: deps
	@$(DEPS) tools/setup/debian-packages-arm64.txt
	@[ -f build-arm64/CMakeCache.txt ] || cmake -S . -B build-arm64 -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(RELWITHDEBINFO) -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
	cmake --build build-arm64 -j$(JOBS)
	cd build-arm64 && ctest --output-on-failure -j$(JOBS)

# libFuzzer (clang, ASan + UBSan) on every parser: the model loader, the ONNX
# and TFLite importers, and convert-then-run on the host, each for
# FUZZ_SECONDS (default 60), from seed corpora written at build time from the
# test models (build-fuzz/corpus/seeds). Corpora grow in
# build-fuzz/corpus/<target>; crashes land in build-fuzz/crashes.
# `make fuzz-ci` (CI) runs each target for a fixed number of inputs with a
# fixed seed from the seeds alone (about 30 s a target on 2 cores), so that
# its result is the same on every machine: a finding is reproducible, and a
# green run here is a green run in CI. The fuzzers reach the host only, so
# the fuzz build leaves the GPU backends (and their shaders) out.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := loader onnx tflite run
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
FUZZ_FLAGS := -rss_limit_mb=4096 -timeout=20 -max_len=65536 -print_final_stats=1
FUZZ_FILTER := grep -E "^(stat::|\#[0-9]+ *DONE|==[0-9]+==|SUMMARY)"
fuzz-build: deps
	@$(DEPS) tools/setup/debian-packages-fuzz.txt
	@[ -f build-fuzz/CMakeCache.txt ] || CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo $(RELWITHDEBINFO) -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF -DKILN_VULKAN=OFF -DKILN_OPENCL=OFF
	cmake --build build-fuzz -j$(JOBS) --target $(addprefix kiln-fuzz-,$(FUZZ_TARGETS)) kiln-fuzz-corpus
	mkdir -p build-fuzz/crashes

fuzz: fuzz-build
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== kiln-fuzz-$$t: $(FUZZ_SECONDS) s"; mkdir -p build-fuzz/corpus/$$t; \
	  $(FUZZ_ENV) build-fuzz/bin/kiln-fuzz-$$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) \
	    -artifact_prefix=build-fuzz/crashes/$$t- build-fuzz/corpus/$$t build-fuzz/corpus/seeds/$$t 2>&1 | $(FUZZ_FILTER); \
	  test $${PIPESTATUS[0]} -eq 0 || { echo "kiln-fuzz-$$t failed: see build-fuzz/crashes"; exit 1; }; \
	done

FUZZ_CI_RUNS := loader:1000000 onnx:600000 tflite:250000 run:100000
fuzz-ci: fuzz-build
	@set -e; for spec in $(FUZZ_CI_RUNS); do t=$${spec%%:*}; n=$${spec##*:}; \
	  rm -rf build-fuzz/ci-corpus/$$t; mkdir -p build-fuzz/ci-corpus/$$t; cp build-fuzz/corpus/seeds/$$t/* build-fuzz/ci-corpus/$$t/; \
	  echo "== kiln-fuzz-$$t: $$n inputs, seed 1"; \
	  $(FUZZ_ENV) build-fuzz/bin/kiln-fuzz-$$t -seed=1 -runs=$$n $(FUZZ_FLAGS) \
	    -artifact_prefix=build-fuzz/crashes/$$t- build-fuzz/ci-corpus/$$t 2>&1 | $(FUZZ_FILTER); \
	  test $${PIPESTATUS[0]} -eq 0 || { echo "kiln-fuzz-$$t failed: see build-fuzz/crashes"; exit 1; }; \
	done

# The real models (torchvision CNNs, a transformer encoder): convert, run on
# the host, compare with torch. Slow (minutes), so not part of `make test`.
models-check: build
	@$(DEPS) tools/setup/debian-packages-models.txt
	tools/models/check_models.sh $(BUILD) $(or $(BACKEND),host)

# Ten MediaPipe TFLite models from npm (face detection incl. the sparse one,
# hands, pose, selfie segmentation, objectron): convert, run on each backend,
# compare with TFLite itself (LiteRT.js in Node). Needs the network the first
# time, so not part of `make test`. BACKENDS=host,vulkan,opencl by default;
# MEDIAPIPE_ALL=1 adds the packages' four other models.
# The backends mediapipe-check runs on (a comma inside $(or ...) would split it).
BACKENDS ?= host,vulkan,opencl
mediapipe-check: build
	@command -v npm > /dev/null || $(DEPS) tools/setup/debian-packages-mediapipe.txt
	tools/models/mediapipe_check.py $(if $(MEDIAPIPE_ALL),--all) $(BUILD) $(BUILD)/mediapipe $(BACKENDS)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz build-arm64
