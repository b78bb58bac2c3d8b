# cubec: the two commands of the README.
#   make demo   installs what is missing (Debian 12, as root), builds the library and the examples
#               it runs (quietly: examples/run_demo.sh), runs them and prints a summary
#   make test   checks the formatting, builds, lints, runs every test (ctest), then the ASan+UBSan
#               build's tests, the ThreadSanitizer build's concurrency tests and each libFuzzer
#               harness for FUZZ_TEST_SECONDS (the README's "What make test runs")
# Other targets: build, docs (the API reference, $(BUILD)/docs/html), bench, abi-baseline, install-deps,
# format, format-check, lint, clean, fuzz (each harness for FUZZ_SECONDS), fuzz-runs (FUZZ_RUNS inputs of
# fuzz_api over FUZZ_JOBS processes; docs/reliability.md, "Fuzzing").

BUILD      ?= build
BUILD_SAN  ?= build-san
BUILD_TSAN ?= build-tsan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS      ?= 60
FUZZ_TEST_SECONDS ?= 20
FUZZ_JOBS         ?= 1
FUZZ_RUNS         ?= 100000
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

DEB_PACKAGES = build-essential cmake pkg-config git libvulkan-dev mesa-vulkan-drivers \
               vulkan-validationlayers vulkan-tools libshaderc-dev glslc glslang-dev spirv-tools \
               libspirv-cross-c-shared-dev libinih-dev libcmocka-dev python3 python3-dev python3-numpy \
               python3-pytest python3-venv clang-format clang-tidy clang libclang-rt-14-dev doxygen \
               python3-cffi python3-pycparser abigail-tools openmpi-bin libopenmpi-dev

.PHONY: abi-baseline demo docs test build build-san build-tsan build-fuzz fuzz fuzz-test fuzz-runs bench install-deps format format-check lint clean

install-deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then \
	    echo "cubec needs these Debian packages; run as root:"; \
	    echo "  apt-get update && apt-get install -y$$missing"; exit 1; \
	  fi; \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing; \
	fi

$(BUILD)/CMakeCache.txt: | install-deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: install-deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

build-san: install-deps
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DCUBEC_SANITIZE=ON $(CMAKE_ARGS)
	cmake --build $(BUILD_SAN) -j $(JOBS)

# ThreadSanitizer: only the concurrency tests.
build-tsan: install-deps
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DCUBEC_TSAN=ON $(CMAKE_ARGS)
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target test_threads test_stream_stress test_graph_threads \
	  test_compile_threads test_copy_pool test_fault_random_threads test_compile_queue test_autotune \
	  test_relocation_threads

# libFuzzer harnesses (fuzz/): clang, every object instrumented, ASan+UBSan; no tests built.
build-fuzz: install-deps
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Debug -DCUBEC_FUZZ=ON -DCUBEC_TESTS=OFF \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ $(CMAKE_ARGS)
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_api fuzz_api_lavapipe fuzz_shader

# Runs each harness for $(1) seconds on fuzz/corpus/<corpus> (read only) plus what earlier runs
# found ($(BUILD_FUZZ)/corpus/<name>, where new inputs go); fuzz_api_lavapipe reads fuzz_api's
# corpus, with LeakSanitizer off (the validation layer's allocations per device; docs). A crash
# leaves its input in $(BUILD_FUZZ)/artifacts/ and prints the whole log; a clean run prints its
# last lines.
define run_fuzzers
	@for f in api api_lavapipe shader; do \
	  c=$$f; opts=; \
	  if [ $$f = api_lavapipe ]; then c=api; opts=detect_leaks=0; fi; \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$f $(BUILD_FUZZ)/artifacts; \
	  echo "== fuzz_$$f for $(1) s"; \
	  ASAN_OPTIONS=$$opts CUBEC_LOG_LEVEL=error CUBEC_CACHE_DIR=none $(BUILD_FUZZ)/bin/fuzz_$$f -max_total_time=$(1) \
	    -timeout=60 -print_final_stats=1 -artifact_prefix=$(BUILD_FUZZ)/artifacts/fuzz_$$f- \
	    $(BUILD_FUZZ)/corpus/$$f fuzz/corpus/$$c > $(BUILD_FUZZ)/fuzz_$$f.log 2>&1; \
	  rc=$$?; \
	  if [ $$rc != 0 ]; then cat $(BUILD_FUZZ)/fuzz_$$f.log; exit $$rc; fi; \
	  grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss)' \
	    $(BUILD_FUZZ)/fuzz_$$f.log; \
	done
endef

fuzz: build-fuzz
	$(call run_fuzzers,$(FUZZ_SECONDS))

fuzz-test: build-fuzz
	$(call run_fuzzers,$(FUZZ_TEST_SECONDS))

# FUZZ_RUNS inputs of fuzz_api in all, over FUZZ_JOBS processes (fuzz/run_parallel.sh), e.g.
# make fuzz-runs FUZZ_JOBS=16 FUZZ_RUNS=1000000
fuzz-runs: build-fuzz
	fuzz/run_parallel.sh $(BUILD_FUZZ) $(FUZZ_JOBS) $(FUZZ_RUNS)

# Builds only the library and the demo programs, quietly (examples/run_demo.sh), then runs them.
# Python: the package's build target goes in DEMO_TARGETS and its examples in DEMO_EXTRA, one per
# line as "name|command|checked against" (examples/run_demo.sh). The Python demo runs the SAXPY
# template from the build tree's package with Debian's interpreter (the one with numpy).
DEMO_TARGETS ?= _cubec
DEMO_EXTRA ?= saxpy|env PYTHONPATH=$(BUILD)/python /usr/bin/python3 examples/python/saxpy.py|numpy on the same arrays, error <= 1e-6 + 1e-6 x |value|
demo: install-deps
	@CUBEC_DEMO_TARGETS="$(DEMO_TARGETS)" CUBEC_DEMO_EXTRA="$(DEMO_EXTRA)" \
	  sh examples/run_demo.sh $(BUILD) $(CMAKE_ARGS)

# The API reference from cubec.h (tools/api_reference.sh, docs/Doxyfile): $(BUILD)/docs/html.
docs: install-deps
	sh tools/api_reference.sh $(BUILD)/docs

test: format-check build lint build-san build-tsan build-fuzz
	cd $(BUILD) && ctest --output-on-failure -j 2
	cd $(BUILD_SAN) && ctest --output-on-failure -j 2 -LE smoke -E install_consumer
	cd $(BUILD_TSAN) && ctest --output-on-failure -E _webgpu -R \
	  "test_threads|test_stream_stress|test_graph_threads|test_compile_threads|test_compile_queue|test_copy_pool|test_fault_random_threads|test_autotune_system_timing|test_relocation_threads"
	$(call run_fuzzers,$(FUZZ_TEST_SECONDS))

# `cubec bench`, then the Python binding against C in one process (bench/python_bench.py; needs
# the extension, built when python3-dev is installed), then shaders.ggml_accepted: the share of
# ggml's shader modules cubec accepts (tests/corpus/ggml_corpus.py; built with the tests).
bench: build
	$(BUILD)/bin/cubec bench
	@if [ -f $(BUILD)/python/cubec/_cubec.abi3.so ]; then \
	  PYTHONPATH=$(BUILD)/python /usr/bin/python3 bench/python_bench.py; fi
	@if [ -x $(BUILD)/bin/corpus_create ]; then \
	  CUBEC_LOG_LEVEL=error CUBEC_CACHE_DIR=none python3 tests/corpus/ggml_corpus.py --build-dir $(BUILD) --bench; fi

# Regenerates the ABI baseline (abi/libcubec.abi) from this build: commit it with the change and
# the version bump that made it (docs/api.md, "Versions and the ABI").
abi-baseline: build
	cmake --build $(BUILD) --target abi-baseline

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# The tracked C files as .clang-format lays them out; `make format` fixes what this reports.
format-check: install-deps
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

# clang-tidy (.clang-tidy) over the library's and the Python extension's C files, with the Release
# build's compile commands (the extension's are there when python3-dev is installed).
# LINT_PENDING: files whose findings are not fixed yet (none today); a file listed here is skipped
# until it passes. Every other file under src/, python/src/, mpi/ (cubec_mpi, built where MPI is
# found: install-deps installs Open MPI) and bench/ (cubec bench: its figures must not report work
# that did not happen), new ones included, must pass.
LINT_PENDING =
LINT_FILES = $(filter-out $(LINT_PENDING),$(shell git ls-files 'src/*.c' 'python/src/*.c' 'mpi/*.c' 'bench/*.c'))
# Findings in headers count under this checkout's src/, python/src/, mpi/ and bench/ only: .clang-tidy's '/src/' alone also
# matched include/cubec/cubec.h in a checkout at ~/src/cubec. The path is a regex: dots and
# pluses in it are escaped.
LINT_HEADERS = ^$(subst +,\+,$(subst .,\.,$(CURDIR)))/((python/)?src|mpi|bench)/

# tools/check_layers.sh: src/api/ writes no device field, device.h includes no component header.
# tools/check_calls.py: no circle of calls between more than two files of src/server or
# src/gpu/webgpu.
lint: build
	sh tools/check_layers.sh
	python3 tools/check_calls.py src/server
	python3 tools/check_calls.py src/gpu/webgpu
	run-clang-tidy -quiet -p $(BUILD) -j $(JOBS) -header-filter '$(LINT_HEADERS)' \
	  $(addprefix '^$(CURDIR)/,$(addsuffix $$',$(LINT_FILES)))

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_TSAN) $(BUILD_FUZZ)
