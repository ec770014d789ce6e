# ffcv-go: `make test` and `make demo` work on a fresh Debian machine: they
# install what is missing (Debian packages when root, a .venv from PyPI), build
# the Go library into the Python package, and run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
# MosaicML Streaming and litdata, in a venv of their own (see requirements-mixture-peers.txt).
PEERS_VENV := build/peers-venv
# Ultralytics, in a venv of its own (see requirements-ultralytics.txt).
ULTRA_VENV := build/ultralytics-venv
PY := $(VENV)/bin/python
LIB := python/ffcv_go/_ffcv_go.so
GO_SOURCES := $(shell find core export include -name '*.go' -o -name '*.h' -o -name '*.c' 2>/dev/null) go.mod
DEB_PACKAGES := libturbojpeg0-dev libjpeg62-turbo-dev libflac-dev libopus-dev libopusfile-dev libogg-dev
# espeak-ng speaks the speech of examples/train_kws.py and bench/audio.py.
DEB_DATA := mate-backgrounds lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 dataset-fashion-mnist espeak-ng
PYTEST_ARGS ?=
# pytest processes for the suite and FFCV's (pytest-xdist).
PYTEST_WORKERS ?= 2
CONFORMANCE_ARGS ?= -n $(PYTEST_WORKERS) --dist worksteal

.PHONY: all build deps venv wheel wheel-deps check-wheel test test-torch113 aarch64-deps test-aarch64-quick test-aarch64 test-go test-python test-gpu gpu-bundle conformance vet fuzz ffcv demo bench-peers bench-profile bench-writer bench-ray bench-remote bench-mixture bench-detection bench-image-text bench-video bench-audio bench-soak bench-wheel-ab bench-yolo ultralytics-venv clean docs docs-check

all: build

build: $(LIB)

# -ldflags=-w leaves out DWARF (a quarter of the file); the symbol table stays
# for stack traces and perf.
$(LIB): $(GO_SOURCES)
	CGO_ENABLED=1 go build -trimpath -ldflags=-w -buildmode=c-shared -o $@ ./export
	rm -f $(basename $@).h

# Debian packages: the JPEG and audio (FLAC, Opus, Ogg) libraries to build,
# the photos and Fashion-MNIST the benchmark, demo and examples use, and
# espeak-ng, whose speech the audio tests use. Installed only when missing.
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
# compiler for glibc 2.17, with libjpeg-turbo and the audio codecs (libFLAC,
# libogg, libopus, libopusfile: Debian's source packages, pinned in
# packaging/) built by the same compiler and linked in statically, and the
# licence texts of all it links in. The library is loaded with ctypes, so one
# wheel per architecture serves every CPython 3. Everything is cached under
# build/: a second `make wheel` only repackages. See docs/install.md.
WHEEL_ARCHES := x86_64 aarch64
JPEG_VERSION := 1:2.1.5-2
FLAC_VERSION := 1.4.2+ds-2
OGG_VERSION := 1.3.5-3
OPUS_VERSION := 1.3.1-3
OPUSFILE_VERSION := 0.12-4
src-dir = build/src/$(1)-$(subst :,_,$(2))
JPEG_SRC := $(call src-dir,libjpeg-turbo,$(JPEG_VERSION))
# In the order build-audio-codecs.sh takes them.
CODEC_SRCS := $(call src-dir,flac,$(FLAC_VERSION)) $(call src-dir,libogg,$(OGG_VERSION)) \
  $(call src-dir,opus,$(OPUS_VERSION)) $(call src-dir,opusfile,$(OPUSFILE_VERSION))
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

# build/src/PACKAGE-VERSION: Debian's source package, fetched and unpacked.
define debian-source
$(call src-dir,$(1),$(2))/.unpacked: packaging/fetch-source.sh packaging/$(1).sha256
	packaging/fetch-source.sh $(1) $(2) $$(@D)
	touch $$@
endef
$(eval $(call debian-source,libjpeg-turbo,$(JPEG_VERSION)))
$(eval $(call debian-source,flac,$(FLAC_VERSION)))
$(eval $(call debian-source,libogg,$(OGG_VERSION)))
$(eval $(call debian-source,opus,$(OPUS_VERSION)))
$(eval $(call debian-source,opusfile,$(OPUSFILE_VERSION)))

build/jpeg/%/lib/libjpeg.a: $(JPEG_SRC)/.unpacked build/toolchain/%/cc packaging/build-libjpeg-turbo.sh
	packaging/build-libjpeg-turbo.sh $(JPEG_SRC) build/toolchain/$* $* build/jpeg/$*

build/codecs/%/lib/libopusfile.a: $(addsuffix /.unpacked,$(CODEC_SRCS)) build/toolchain/%/cc packaging/build-audio-codecs.sh
	packaging/build-audio-codecs.sh build/toolchain/$* $* build/codecs/$* $(CODEC_SRCS)

# The licence texts of what the wheels link in, from the trees they are
# built from (see packaging/licences.sh), into each wheel's .dist-info.
build/licences/.done: $(JPEG_SRC)/.unpacked $(addsuffix /.unpacked,$(CODEC_SRCS)) packaging/licences.sh go.mod go.sum
	packaging/licences.sh build/licences $(JPEG_SRC) $(CODEC_SRCS)
	touch $@

# cgo's flags for the wheels' library and the arm64 tests: libjpeg-turbo's
# and the codecs' headers and static libraries built for CPU $(1).
wheel-cgo-flags = CGO_CFLAGS="-O2 -g0 -I$(abspath build/jpeg/$(1)/include) -I$(abspath build/codecs/$(1)/include) \
  -I$(abspath build/codecs/$(1)/include/opus)" CGO_LDFLAGS="-L$(abspath build/jpeg/$(1)/lib) -L$(abspath build/codecs/$(1)/lib)"

# GOAMD64=v1 keeps x86-64's floor (and keeps Go from fusing multiply-adds,
# which v3 allows). Nothing in the library depends on where the tree is:
# -g0, as Zig's clang writes DWARF by default, with the build's paths; no Go
# build ID, which hashes the compiler's path; a GNU build ID from the content.
build/so/%/_ffcv_go.so: $(GO_SOURCES) build/jpeg/%/lib/libjpeg.a build/codecs/%/lib/libopusfile.a build/toolchain/%/cc Makefile
	mkdir -p $(@D)
	CGO_ENABLED=1 GOOS=linux GOARCH=$(GOARCH_$*) GOAMD64=v1 CC=$(abspath build/toolchain/$*/cc) $(call wheel-cgo-flags,$*) \
	  go build -trimpath -ldflags='-w -buildid= -extldflags=-Wl,--build-id=sha1' -buildmode=c-shared -o $@.tmp ./export
	rm -f $(@D)/*.h
	mv $@.tmp $@

dist/.wheels: $(foreach a,$(WHEEL_ARCHES),build/so/$(a)/_ffcv_go.so) build/licences/.done $(shell find python -name '*.py') setup.py pyproject.toml README.md
	rm -rf build/lib build/bdist.* build/wheel dist/ffcv_go-*.whl
	set -e; for a in $(WHEEL_ARCHES); do \
	  FFCV_GO_LIB=build/so/$$a/_ffcv_go.so FFCV_GO_PLAT=manylinux2014_$$a FFCV_GO_LICENCES=build/licences \
	  SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) \
	    $(TOOLS)/bin/python -m pip wheel -q --no-deps --no-build-isolation -w build/wheel .; \
	  rm -rf build/lib build/bdist.*; done
	mkdir -p dist && mv build/wheel/ffcv_go-*.whl dist/ && rm -rf build/wheel
	touch $@

wheel: wheel-deps dist/.wheels check-wheel

# Pattern-rule intermediates: kept, they are the cache.
.SECONDARY: $(foreach a,$(WHEEL_ARCHES),build/toolchain/$(a)/cc build/jpeg/$(a)/lib/libjpeg.a \
  build/codecs/$(a)/lib/libopusfile.a build/so/$(a)/_ffcv_go.so)

# Each wheel's library: the right machine, no GLIBC symbol version above
# 2.17, nothing NEEDED outside glibc, libjpeg's and the codecs' symbols not
# exported; the licence texts beside it; and auditwheel agrees with the tag.
check-wheel: $(TOOLS)/.installed
	packaging/check-wheel.sh $(TOOLS)/bin/auditwheel dist/ffcv_go-*-py3-none-manylinux2014_*.whl

vet:
	test -z "$$(gofmt -l core export tests/go)" || { gofmt -l core export tests/go; exit 1; }
	go vet ./...

test-go: deps
	go test -count=1 ./...
	go test -count=1 -race ./core/beton ./core/cache ./core/loader ./core/pipeline/... ./core/order ./core/remote ./core/ingest ./core/webdataset ./export

# Every fuzz target for a short, bounded time (FUZZTIME each). A failure is
# a failing input, which Go writes to testdata/fuzz/<target>; a bare "context
# deadline exceeded" without one is Go 1.26's coordinator race at the end of
# -fuzztime (golang/go#75804, fixed in 1.27), which a loaded machine hits.
FUZZTIME ?= 4s
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

# The suite on PYTEST_WORKERS processes (pytest-xdist), then the tests
# marked serial (the doctor's verdicts come from measured rates) alone,
# collected from the files that mark any; then the tests that run Ultralytics,
# in its venv, a file per process (each builds its datasets once).
test-python: deps venv build wheel $(PEERS_VENV)/.installed $(ULTRA_VENV)/.installed
	PYTHONPATH=python $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal -m "not serial" tests/python $(PYTEST_ARGS)
	PYTHONPATH=python $(PY) -m pytest -q -m serial $$(grep -l 'pytest.mark.serial' tests/python/test_*.py) $(PYTEST_ARGS)
	PYTHONPATH=python $(ULTRA_VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile \
	  tests/python/test_ultralytics.py tests/python/test_yolo_truth.py $(PYTEST_ARGS)

# Everything that needs CUDA (tests/gpu): on a machine without it, one line
# saying why, and success. From a wheel on a GPU machine without Go or
# network: make gpu-bundle here, then bash build/gpu-bundle/run.sh there
# (docs/guides/gpu.md). FFCV_GO_GPU_BETON names a photo .beton to use.
test-gpu: deps venv build
	@if why="$$($(PY) tests/gpu/cuda_available.py)"; then echo "test-gpu: $$why"; \
	  PYTHONPATH=python $(PY) -m pytest -c tests/gpu/pytest.ini tests/gpu $(PYTEST_ARGS); \
	else echo "test-gpu: skipped, $$why"; fi

# build/gpu-bundle (with the tracked files < 64 MiB): the wheel, a .beton of GPU_BUNDLE_IMAGES photos,
# tests/gpu, bench/gpu_train.py and run.sh; see tests/gpu/bundle/make_bundle.py.
GPU_BUNDLE_IMAGES ?= 256
gpu-bundle: deps venv build wheel
	PYTHONPATH=python $(PY) tests/gpu/bundle/make_bundle.py --images $(GPU_BUNDLE_IMAGES)

# FFCV 1.0.2's own test suite (from its PyPI sdist, cached in build/conformance)
# with every `ffcv` import resolved to ffcv_go; see tests/conformance/run.py.
# Its tests keep to temporary files, so they too run on PYTEST_WORKERS processes.
conformance: deps venv build
	$(PY) tests/conformance/run.py $(CONFORMANCE_ARGS)

test: docs-check deps venv build vet test-go fuzz test-python conformance test-torch113 test-aarch64-quick

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

# ---- Debian's torch 1.13 ---------------------------------------------------
# The reader, writer, loader and transform tests under Debian's own python3,
# python3-torch 1.13 and numpy 1.24 (apt, no venv), against the library that
# `make build` puts in python/: the oldest torch and numpy ffcv_go supports.
TORCH113_DEB_PACKAGES := python3-torch python3-numpy python3-pil python3-pytest
TORCH113_TESTS := test_reader.py test_writer.py test_loader.py test_loader_api.py test_pipeline.py test_custom_ops.py

test-torch113: deps build
	@missing=""; for p in $(TORCH113_DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "missing Debian packages (run as root or install them):$$missing"; exit 1; fi; fi
	cd tests/python && PYTHONPATH=$(abspath python) /usr/bin/python3 -m pytest -q -p no:cacheprovider $(TORCH113_TESTS)

# ---- arm64, under emulation ------------------------------------------------
# The aarch64 wheel installed in a Debian bookworm arm64 root (python3-torch
# 1.13, numpy, Pillow) run by qemu-user-static: it writes the same photos
# into a .beton and loads fixed-seed epochs through RandomResizedCrop, flip
# and normalize, and both must equal x86-64's byte for byte (the x86-64 wheel
# under Debian's python3 here). The Go tests of the resize kernels and the
# pipeline run there too. The root is built once into a tarball under build/
# (tests/aarch64/make-root.sh: about a minute, then seconds to unpack).
# make test runs the quick set; test-aarch64 everything, and times the NEON
# against the Go resize kernels (emulated: indicative only).
AARCH64 := build/aarch64
AARCH64_ROOT := $(AARCH64)/root
AARCH64_DEB_PACKAGES := mmdebstrap qemu-user-static binfmt-support
# The packages whose tests hold float arithmetic to x86-64's digests and
# references: the kernels, every op family with float draws or pixels, and
# the audio decoders (libFLAC, libopus, minimp3 as the aarch64 wheel links them).
AARCH64_GO_QUICK := core/imgproc core/pipeline core/pipeline/rgb core/pipeline/transform core/pipeline/ssl \
  core/pipeline/policy core/pipeline/targets core/pipeline/clip core/pipeline/text core/pipeline/ops \
  core/audioproc core/pipeline/audio core/audio
AARCH64_GO_FULL := $(AARCH64_GO_QUICK) core/jpeg core/field core/order core/beton
ARM_CC_ENV = CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=$(abspath build/toolchain/aarch64/cc) $(call wheel-cgo-flags,aarch64)

aarch64-deps:
	@missing=""; for p in $(AARCH64_DEB_PACKAGES) $(TORCH113_DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "missing Debian packages (run as root or install them):$$missing"; exit 1; fi; fi
	tests/aarch64/binfmt.sh

$(AARCH64)/bookworm-arm64.tar: tests/aarch64/make-root.sh
	mkdir -p $(@D)
	tests/aarch64/make-root.sh $@

$(AARCH64_ROOT)/.extracted: $(AARCH64)/bookworm-arm64.tar
	rm -rf $(AARCH64_ROOT) && mkdir -p $(AARCH64_ROOT)
	tar --numeric-owner -C $(AARCH64_ROOT) -xf $<
	touch $@

$(AARCH64)/photos-%/.done: bench/make_dataset.py
	$(PY) bench/make_dataset.py $(@D) --num-images $* --num-classes 4 --processes 1 >/dev/null
	touch $@

# aarch64-go-test PACKAGES FLAGS: each package's tests cross-compiled for
# arm64 and run under qemu, in the package's directory (testdata), with the
# test binary's FLAGS (-test.short: fewer random draws in the long sweeps).
define aarch64-go-test
	mkdir -p $(AARCH64)/go-tests; set -e; for p in $(1); do t=$(abspath $(AARCH64))/go-tests/$$(echo $$p | tr / _).test; \
	  $(ARM_CC_ENV) go test -c -o $$t ./$$p; \
	  if ! (cd $$p && QEMU_LD_PREFIX=$(abspath $(AARCH64_ROOT)) $$t -test.count=1 $(2) >$$t.log 2>&1); then \
	    cat $$t.log; echo "arm64 $$p: FAIL"; exit 1; fi; \
	  echo "arm64 $$p: $$(tail -1 $$t.log)"; done
endef

# aarch64-crossarch N ARGS: N photos written and loaded on both machines,
# compared; ARGS go to crossarch.py run.
define aarch64-crossarch
	rm -rf $(AARCH64)/x86-site $(AARCH64)/out-x86 $(AARCH64_ROOT)/tmp/xarch
	$(PY) -m pip install -q --no-deps --no-index --target $(AARCH64)/x86-site dist/ffcv_go-*-py3-none-manylinux2014_x86_64.whl
	PYTHONPATH=$(AARCH64)/x86-site /usr/bin/python3 tests/aarch64/crossarch.py run $(AARCH64)/photos-$(1) $(AARCH64)/out-x86 $(2)
	mkdir -p $(AARCH64_ROOT)/tmp/xarch
	cp -r $(AARCH64)/photos-$(1) $(AARCH64_ROOT)/tmp/xarch/photos
	cp tests/aarch64/crossarch.py dist/ffcv_go-*-py3-none-manylinux2014_aarch64.whl $(AARCH64_ROOT)/tmp/xarch/
	tests/aarch64/in-root.sh $(AARCH64_ROOT) 'cd /tmp/xarch && \
	  python3 -m pip install -q --no-deps --no-index --break-system-packages --force-reinstall --root-user-action=ignore ffcv_go-*.whl && \
	  python3 crossarch.py run photos out $(2)'
	/usr/bin/python3 tests/aarch64/crossarch.py compare $(AARCH64)/out-x86 $(AARCH64_ROOT)/tmp/xarch/out
endef

test-aarch64-quick: deps venv aarch64-deps wheel $(AARCH64_ROOT)/.extracted $(AARCH64)/photos-16/.done
	$(call aarch64-go-test,$(AARCH64_GO_QUICK),-test.short)
	$(call aarch64-crossarch,16,--epochs 2)

test-aarch64: deps venv aarch64-deps wheel $(AARCH64_ROOT)/.extracted $(AARCH64)/photos-64/.done
	$(call aarch64-go-test,$(AARCH64_GO_FULL))
	$(call aarch64-crossarch,64,--full --epochs 3)
	@echo "arm64 with FFCV_GO_SIMD=off (the Go resize kernels instead of NEON):"
	tests/aarch64/in-root.sh $(AARCH64_ROOT) 'cd /tmp/xarch && FFCV_GO_SIMD=off python3 crossarch.py run photos out-go --full --epochs 3'
	/usr/bin/python3 tests/aarch64/crossarch.py compare $(AARCH64)/out-x86 $(AARCH64_ROOT)/tmp/xarch/out-go
	@echo "NEON against the Go resize kernels, emulated (indicative only):"
	cd core/imgproc && QEMU_LD_PREFIX=$(abspath $(AARCH64_ROOT)) $(abspath $(AARCH64))/go-tests/core_imgproc.test \
	  -test.run '^$$' -test.bench Kernels -test.cpu 1 -test.benchtime 20x | grep -E 'Benchmark|ok'


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

# Video clips: ffcv_go against DataLoader + PyAV / torchcodec / decord
# (bench/video.py). torchcodec loads Debian's FFmpeg libraries.
bench-video: deps venv build
	@if ! dpkg -s libavdevice59 >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libavdevice59 libavfilter8 >/dev/null; fi
	$(PY) -m pip install -q --no-deps -r requirements-video-peers.txt
	PYTHONPATH=python $(PY) bench/video.py $(BENCH_ARGS)

# Speech: random 5 s windows of 10-20 s FLAC utterances (espeak-ng), Whisper
# log-mel + SpecAugment; ffcv_go against DataLoader + torchcodec / soundfile
# and lhotse (bench/audio.py). lhotse and torchcodec go into .venv with
# --no-deps (a resolution would reinstall torch); torchcodec loads Debian's
# FFmpeg libraries.
bench-audio: deps venv build
	@if ! dpkg -s libavdevice59 >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libavdevice59 libavfilter8 >/dev/null; fi
	$(PY) -m pip install -q --no-deps -r requirements-video-peers.txt -r requirements-audio-peers.txt
	PYTHONPATH=python $(PY) bench/audio.py $(BENCH_ARGS)

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

# Three sources weighted 0.6 / 0.3 / 0.1 (one over HTTP on 127.0.0.1) in one
# Loader: against one .beton of the same photos, and against MosaicML
# Streaming and litdata with the same weights. The peers (also
# bench-image-text's litdata) live in a venv of their own (Streaming pins
# numpy < 2.2, litdata an older huggingface-hub than ours), built from
# .venv's interpreter; a .pth file lends it .venv's torch and torchvision,
# after its own packages.
# BENCH_ARGS=--quick proves it runs (a few minutes: the peers' start-up).
$(PEERS_VENV)/.installed: requirements-mixture-peers.txt $(VENV)/.installed
	test -x $(PEERS_VENV)/bin/python || "$$($(PY) -c 'import os, sys; print(os.path.join(sys.base_prefix, "bin", "python3"))')" -m venv $(PEERS_VENV)
	echo "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > \
	  "$$($(PEERS_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_ffcv_go_venv.pth"
	$(PEERS_VENV)/bin/python -m pip install -q -r requirements-mixture-peers.txt
	touch $@

# Ultralytics (AGPL-3.0; tests/python/test_ultralytics.py, examples/train_yolo.py,
# bench/yolo.py) in a venv of its own, built like the peers' from .venv's
# interpreter and lending its packages; requirements-ultralytics.txt lists
# everything it installs (--no-deps: torch is not downloaded again).
$(ULTRA_VENV)/.installed: requirements-ultralytics.txt $(VENV)/.installed
	test -x $(ULTRA_VENV)/bin/python || "$$($(PY) -c 'import os, sys; print(os.path.join(sys.base_prefix, "bin", "python3"))')" -m venv $(ULTRA_VENV)
	echo "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > \
	  "$$($(ULTRA_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_ffcv_go_venv.pth"
	$(ULTRA_VENV)/bin/python -m pip install -q --no-deps -r requirements-ultralytics.txt
	touch $@

ultralytics-venv: $(ULTRA_VENV)/.installed

# Ultralytics' loader (cache=False and cache="ram") against ours at imgsz 640,
# batch 16, 2 workers, on photos with pasted objects.
bench-yolo: deps venv build $(ULTRA_VENV)/.installed
	PYTHONPATH=python $(ULTRA_VENV)/bin/python bench/yolo.py $(BENCH_ARGS)

bench-mixture: deps venv build $(PEERS_VENV)/.installed
	PYTHONPATH=python $(PY) bench/mixture.py --peers-python $(PEERS_VENV)/bin/python $(BENCH_ARGS)

# Detection and segmentation pipelines (crop + flip with boxes or masks):
# ffcv_go against DataLoader + torchvision.transforms.v2 on the same scenes.
bench-detection: deps venv build
	PYTHONPATH=python $(PY) bench/detection.py $(BENCH_ARGS)

# Image-text data: webdataset shards converted by ffcv_go, FFCV-style
# from_webdataset and litdata.optimize; loaded by ffcv_go and open_clip's
# webdataset pipeline (bench/image_text.py). BENCH_ARGS e.g. --samples 10000.
bench-image-text: deps venv build $(PEERS_VENV)/.installed
	PYTHONPATH=python $(PY) bench/image_text.py --peers-python $(PEERS_VENV)/bin/python $(BENCH_ARGS)

# The loader over S3 (moto) and HTTP (with added latency) against local disk.
bench-remote: deps venv build
	PYTHONPATH=python $(PY) bench/remote.py $(BENCH_ARGS)

# Loaders made, read and dropped 200 times, ffcv_go beside FFCV 1.0: RSS,
# open files and threads per round (bench/results/soak.{md,png}).
bench-soak: deps venv build ffcv
	PYTHONPATH=python $(PY) bench/soak_loaders.py $(BENCH_ARGS)

# Loader speed of the glibc-2.34 wheel (OLD_REF, the last commit that built it,
# built here as it was built:
# the system's gcc, glibc and shared libjpeg-turbo) against make wheel's
# x86-64 wheel, alternating in one run (bench/wheel_ab.py). Needs an idle
# machine. BENCH_ARGS e.g. --rounds 8 --num-images 5000.
OLD_REF ?= c4c0fbb
bench-wheel-ab: deps venv wheel
	rm -rf build/wheel-ab/src-old build/wheel-ab/old-wheel && mkdir -p build/wheel-ab/src-old
	git archive $(OLD_REF) | tar -x -C build/wheel-ab/src-old
	cd build/wheel-ab/src-old && $(abspath $(TOOLS))/bin/python -m pip wheel -q --no-deps --no-build-isolation -w ../old-wheel .
	$(PY) bench/wheel_ab.py --old build/wheel-ab/old-wheel/ffcv_go-*.whl \
	  --new $$(ls dist/ffcv_go-*-py3-none-manylinux2014_x86_64.whl) $(BENCH_ARGS)

clean:
	rm -f $(LIB) $(basename $(LIB)).h
	rm -rf build dist
	go clean -cache -testcache
