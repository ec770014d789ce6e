# ffcv-go: `make test` and `make demo` work on a fresh Debian machine: they
# install what is missing (Debian packages when root, a .venv from PyPI), build
# the Go library into the Python package, and run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
LIB := python/ffcv_go/_ffcv_go.so
GO_SOURCES := $(shell find core export include -name '*.go' -o -name '*.h' -o -name '*.c' 2>/dev/null) go.mod
DEB_PACKAGES := libturbojpeg0-dev libjpeg62-turbo-dev
DEB_DATA := mate-backgrounds lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 dataset-fashion-mnist
PYTEST_ARGS ?=
CONFORMANCE_ARGS ?=

.PHONY: all build deps venv wheel test test-go test-python test-gpu gpu-bundle conformance vet fuzz ffcv demo bench-peers bench-profile bench-writer bench-ray bench-remote bench-soak clean docs docs-check

all: build

build: $(LIB)

# -ldflags=-w leaves out DWARF (a quarter of the file); the symbol table stays
# for stack traces and perf.
$(LIB): $(GO_SOURCES)
	CGO_ENABLED=1 go build -trimpath -ldflags=-w -buildmode=c-shared -o $@ ./export
	rm -f $(basename $@).h

# Debian packages: the JPEG libraries to build, the photos and Fashion-MNIST
# the benchmark, demo and examples use. Installed only when missing.
deps:
	@missing=""; for p in $(DEB_PACKAGES) $(DEB_DATA); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing Debian packages (run as root or install them):$$missing"; fi; fi

$(VENV)/.installed: requirements-dev.txt requirements-extra.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-dev.txt -r requirements-extra.txt
	touch $@

venv: $(VENV)/.installed

$(VENV)/.wheel-tools: requirements-wheel.txt $(VENV)/.installed
	$(PY) -m pip install -q -r requirements-wheel.txt
	touch $@

# dist/ffcv_go-<version>-py3-none-manylinux_<glibc>_x86_64.whl: the Go library
# (loaded with ctypes, so one wheel serves every CPython 3) with libjpeg-turbo
# bundled by auditwheel (soname rewritten with patchelf). Installing it needs
# neither Go nor system libraries.
wheel: deps venv $(VENV)/.wheel-tools
	rm -rf build/lib build/bdist.* build/wheel dist/ffcv_go-*.whl
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w build/wheel .
	PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m auditwheel repair -w dist build/wheel/ffcv_go-*.whl
	rm -rf build/lib build/bdist.* build/wheel

vet:
	test -z "$$(gofmt -l core export tests/go)" || { gofmt -l core export tests/go; exit 1; }
	go vet ./...

test-go: deps
	go test -count=1 ./...
	go test -count=1 -race ./core/beton ./core/cache ./core/loader ./core/pipeline ./core/order ./core/remote ./export

# Every fuzz target for a short, bounded time (FUZZTIME each). A failure is
# a failing input, which Go writes to testdata/fuzz/<target>; a bare "context
# deadline exceeded" without one is Go 1.26's coordinator race at the end of
# -fuzztime (golang/go#75804, fixed in 1.27), which a loaded machine hits.
FUZZTIME ?= 10s
fuzz: deps
	@for pkg in $$(go list ./core/...); do \
	  dir=$$(go list -f '{{.Dir}}' $$pkg); \
	  for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$pkg $$t"; \
	    before=$$(ls $$dir/testdata/fuzz/$$t 2>/dev/null | wc -l); \
	    if ! go test $$pkg -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s -parallel 2 >/tmp/fuzz.log 2>&1; then \
	      after=$$(ls $$dir/testdata/fuzz/$$t 2>/dev/null | wc -l); \
	      if grep -q "context deadline exceeded" /tmp/fuzz.log && [ "$$after" = "$$before" ]; then \
	        echo "  Go's fuzz coordinator tripped on its own deadline (golang/go#75804, a race under load); no failing input was found"; \
	      else cat /tmp/fuzz.log; exit 1; fi; \
	    fi; \
	    echo "  $$(grep -o "execs: [0-9]*" /tmp/fuzz.log | tail -1) $$(tail -1 /tmp/fuzz.log)"; \
	  done; done

test-python: deps venv build wheel
	PYTHONPATH=python $(PY) -m pytest -q tests/python $(PYTEST_ARGS)

# Everything that needs CUDA (tests/gpu): on a machine without it, one line
# saying why, and success. From a wheel on a GPU machine without Go or
# network: make gpu-bundle here, then bash build/gpu-bundle/run.sh there
# (docs/guides/gpu.md). FFCV_GO_GPU_BETON names a photo .beton to use.
test-gpu: deps venv build
	@if why="$$($(PY) tests/gpu/cuda_available.py)"; then echo "test-gpu: $$why"; \
	  PYTHONPATH=python $(PY) -m pytest -c tests/gpu/pytest.ini tests/gpu $(PYTEST_ARGS); \
	else echo "test-gpu: skipped, $$why"; fi

# build/gpu-bundle (< 60 MiB): the wheel, a .beton of GPU_BUNDLE_IMAGES photos,
# tests/gpu, bench/gpu_train.py and run.sh; see tests/gpu/bundle/make_bundle.py.
GPU_BUNDLE_IMAGES ?= 512
gpu-bundle: deps venv build wheel
	PYTHONPATH=python $(PY) tests/gpu/bundle/make_bundle.py --images $(GPU_BUNDLE_IMAGES)

# FFCV 1.0.2's own test suite (from its PyPI sdist, cached in build/conformance)
# with every `ffcv` import resolved to ffcv_go; see tests/conformance/run.py.
conformance: deps venv build
	$(PY) tests/conformance/run.py $(CONFORMANCE_ARGS)

test: docs-check deps venv build vet test-go fuzz test-python conformance

# The documentation site (mkdocs.yml, docs/) into build/site. --strict turns
# every warning into a failure: a broken link or anchor, a page missing from
# the navigation, a reference that does not resolve, a docstring that does not
# parse, or a public name without an API page (docs/hooks/api_coverage.py).
# It reads the Python sources without importing them, so it needs no build.
$(VENV)/.docs-tools: docs/requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r docs/requirements.txt
	touch $@

docs: $(VENV)/.docs-tools
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict -d build/site

docs-check: docs

# Optional: FFCV 1.0 itself in .venv, for tests/python/test_ffcv_compat.py and the
# benchmark's FFCV column (both skip it otherwise). Builds against Debian's OpenCV.
ffcv: deps venv
	@if ! dpkg -s libopencv-dev >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopencv-dev pkg-config >/dev/null; fi
	$(PY) -m pip install -q terminaltables fastargs assertpy psutil opencv-python-headless pkgconfig wheel
	$(PY) -m pip install -q --no-deps pytorch_pfn_extras
	$(PY) -m pip install -q --no-deps --no-build-isolation ffcv==1.0.2

demo: deps venv build
	PYTHONPATH=python $(PY) bench/demo.py

# ffcv_go against DataLoader, FFCV 1.0, SPDL and DALI (CPU) on the fair setting
# (a .beton that keeps the photos' size); BENCH_ARGS e.g. --max-resolution 256.
# SPDL needs Debian's FFmpeg 5 libraries.
BENCH_ARGS ?=
bench-peers: deps venv build ffcv
	@if ! dpkg -s libavdevice59 >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libavdevice59 libavfilter8 >/dev/null; fi
	$(PY) -m pip install -q -r requirements-peers.txt
	PYTHONPATH=python $(PY) bench/peers.py $(BENCH_ARGS)

# Where the CPU time of one RandomResizedCrop goes (Huffman, IDCT+colour,
# resize), Go kernels against SSE2 and AVX2, on bench/data/imagenet-like.
# OpenCV (PyPI's, as `make ffcv` installs) times cv2.resize on the same crops.
bench-profile: deps venv
	$(PY) -m pip install -q opencv-python-headless
	$(PY) bench/profile_rrc.py $(BENCH_ARGS)

# Writer: ffcv_go's from_image_folder and from_indexed_dataset against FFCV's.
bench-writer: deps venv build ffcv
	PYTHONPATH=python $(PY) bench/writer.py $(BENCH_ARGS)

# ImageFolder -> .beton shards through Ray (ray.init(num_cpus=2)) against
# the single-process writer, on the same photos.
bench-ray: deps venv build
	PYTHONPATH=python $(PY) bench/ray_shards.py $(BENCH_ARGS)

# The loader over S3 (moto) and HTTP (with added latency) against local disk.
bench-remote: deps venv build
	PYTHONPATH=python $(PY) bench/remote.py $(BENCH_ARGS)

# Loaders made, read and dropped 200 times, ffcv_go beside FFCV 1.0: RSS,
# open files and threads per round (bench/results/soak.{md,png}).
bench-soak: deps venv build ffcv
	PYTHONPATH=python $(PY) bench/soak_loaders.py $(BENCH_ARGS)

clean:
	rm -f $(LIB) $(basename $(LIB)).h
	rm -rf build dist
	go clean -cache -testcache
