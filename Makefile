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

.PHONY: all build deps venv wheel wheel-deps check-wheel test test-go test-python conformance vet fuzz ffcv demo bench-peers bench-profile bench-writer bench-ray bench-remote clean

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

# ---- Wheels --------------------------------------------------------------
# dist/ffcv_go-<version>-py3-none-manylinux2014_{x86_64,aarch64}.whl, both
# built here (x86-64): the Go library cross-compiled with cgo and Zig's C
# compiler for glibc 2.17, with libjpeg-turbo (Debian's source package,
# pinned in packaging/) built by the same compiler, with its SIMD, and linked
# in statically. The library is loaded with ctypes, so one wheel per
# architecture serves every CPython 3. Everything is cached under build/:
# a second `make wheel` only repackages. See docs/install.md.
WHEEL_ARCHES := x86_64 aarch64
JPEG_VERSION := 1:2.1.5-2
JPEG_SRC := build/src/libjpeg-turbo-$(subst :,_,$(JPEG_VERSION))
TOOLS := build/tools
WHEEL_DEB_PACKAGES := cmake nasm dpkg-dev binutils
GOARCH_x86_64 := amd64
GOARCH_aarch64 := arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 315532800)

wheel-deps:
	@missing=""; for p in $(WHEEL_DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing Debian packages (run as root or install them):$$missing"; exit 1; fi; fi

# The wheel tools (Zig, setuptools, auditwheel) in a venv of their own.
$(TOOLS)/.installed: requirements-wheel.txt
	test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install -q -r requirements-wheel.txt
	touch $@

build/toolchain/%/cc: $(TOOLS)/.installed packaging/toolchain.sh
	packaging/toolchain.sh "$$($(TOOLS)/bin/python -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')" \
	  $*-linux-gnu.2.17 build/toolchain/$*

$(JPEG_SRC)/.unpacked: packaging/fetch-libjpeg-turbo.sh packaging/libjpeg-turbo.sha256
	packaging/fetch-libjpeg-turbo.sh $(JPEG_VERSION) $(JPEG_SRC)
	touch $@

build/jpeg/%/lib/libjpeg.a: $(JPEG_SRC)/.unpacked build/toolchain/%/cc packaging/build-libjpeg-turbo.sh
	packaging/build-libjpeg-turbo.sh $(JPEG_SRC) build/toolchain/$* $* build/jpeg/$*

# GOAMD64=v1 keeps x86-64's floor (and keeps Go from fusing multiply-adds,
# which v3 allows); the C code is built without -g, so there is no DWARF.
build/so/%/_ffcv_go.so: $(GO_SOURCES) build/jpeg/%/lib/libjpeg.a build/toolchain/%/cc
	mkdir -p $(@D)
	CGO_ENABLED=1 GOOS=linux GOARCH=$(GOARCH_$*) GOAMD64=v1 CC=$(abspath build/toolchain/$*/cc) \
	  CGO_CFLAGS="-O2 -I$(abspath build/jpeg/$*/include)" CGO_LDFLAGS="-L$(abspath build/jpeg/$*/lib)" \
	  go build -trimpath -ldflags=-w -buildmode=c-shared -o $@.tmp ./export
	rm -f $(@D)/*.h
	mv $@.tmp $@

dist/.wheels: $(foreach a,$(WHEEL_ARCHES),build/so/$(a)/_ffcv_go.so) $(shell find python -name '*.py') setup.py pyproject.toml README.md
	rm -rf build/lib build/bdist.* build/wheel dist/ffcv_go-*.whl
	set -e; for a in $(WHEEL_ARCHES); do \
	  FFCV_GO_LIB=build/so/$$a/_ffcv_go.so FFCV_GO_PLAT=manylinux2014_$$a SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) \
	    $(TOOLS)/bin/python -m pip wheel -q --no-deps --no-build-isolation -w build/wheel .; \
	  rm -rf build/lib build/bdist.*; done
	mkdir -p dist && mv build/wheel/ffcv_go-*.whl dist/ && rm -rf build/wheel
	touch $@

wheel: wheel-deps dist/.wheels check-wheel

# Pattern-rule intermediates: kept, they are the cache.
.SECONDARY: $(foreach a,$(WHEEL_ARCHES),build/toolchain/$(a)/cc build/jpeg/$(a)/lib/libjpeg.a build/so/$(a)/_ffcv_go.so)

# Each wheel's library: the right machine, no GLIBC symbol version above
# 2.17, nothing NEEDED outside glibc, libjpeg's symbols not exported; and
# auditwheel agrees with the tag.
check-wheel: $(TOOLS)/.installed
	packaging/check-wheel.sh $(TOOLS)/bin/auditwheel dist/ffcv_go-*-py3-none-manylinux2014_*.whl

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

# FFCV 1.0.2's own test suite (from its PyPI sdist, cached in build/conformance)
# with every `ffcv` import resolved to ffcv_go; see tests/conformance/run.py.
conformance: deps venv build
	$(PY) tests/conformance/run.py $(CONFORMANCE_ARGS)

test: deps venv build vet test-go fuzz test-python conformance

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

clean:
	rm -f $(LIB) $(basename $(LIB)).h
	rm -rf build dist
	go clean -cache -testcache
