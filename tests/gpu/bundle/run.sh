#!/usr/bin/env bash
# The GPU checks of ffcv_go from this bundle (make gpu-bundle), on a machine
# with torch + CUDA and neither Go nor network:
#
#   bash build/gpu-bundle/run.sh [--bench] [pytest arguments]
#
# 1. installs the bundle's ffcv_go wheel with pip --no-deps --no-index --target
#    into a scratch directory put first on PYTHONPATH (unzipped there when the
#    Python has no pip); the repository's own python/ is not used;
# 2. without CUDA: prints why and exits 0;
# 3. runs pytest on tests/gpu (pytest from the bundle's wheels when the
#    machine has none), with the bundle's photo .beton;
# 4. with --bench, then bench/gpu_train.py on the same .beton, and
#    bench/loader_rate.py (the loader alone on every core).
#
# PYTHON picks the interpreter (default: the first of python3, python that
# imports torch); GPU_TRAIN_ARGS adds arguments to gpu_train.py;
# FFCV_GO_GPU_TESTS_ON_CPU=1 goes on without CUDA and runs the tests marked
# cpu_ok on the CPU (a check of the bundle itself, not of CUDA). Results (JUnit XML, benchmark .json/.md, log) go to $OUT
# when set (the device tool brings that folder back), else to the scratch
# directory. Exit status: pytest's, or the benchmark's when that failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH=0
ARGS=()
for a in "$@"; do
  case "$a" in
    --bench) BENCH=1 ;;
    *) ARGS+=("$a") ;;
  esac
done

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for c in python3 python; do
    if command -v "$c" >/dev/null 2>&1 && "$c" -c "import torch" >/dev/null 2>&1; then PY="$c"; break; fi
  done
fi
if [ -z "$PY" ]; then
  echo "run.sh: no python3 or python here imports torch; set PYTHON=/path/to/python" >&2
  exit 1
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ffcv-go-gpu.XXXXXX")"
RESULTS="${OUT:-$WORK/out}"
mkdir -p "$RESULTS" "$WORK/site"
trap 'rm -rf "$WORK/site"; rmdir "$WORK" 2>/dev/null' EXIT
exec > >(tee -a "$RESULTS/run.log") 2>&1

install() {  # the wheels given, no dependencies, no index
  if "$PY" -m pip --version >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-deps --no-index --no-compile --disable-pip-version-check --target "$WORK/site" "$@"
  else
    local w
    for w in "$@"; do "$PY" -m zipfile -e "$w" "$WORK/site" || return 1; done
  fi
}

wheels=("$HERE"/wheels/ffcv_go-*.whl)
if [ ! -f "${wheels[0]}" ]; then echo "run.sh: no ffcv_go wheel in $HERE/wheels" >&2; exit 1; fi
install "${wheels[@]}" || { echo "run.sh: installing ${wheels[*]} failed" >&2; exit 1; }
export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
cd "$WORK"  # not the repository root, so that nothing there shadows the wheel
"$PY" - <<'PYEOF' || { echo "run.sh: the installed wheel does not import" >&2; exit 1; }
import sys, torch, ffcv_go
print(f"run.sh: python {sys.version.split()[0]}, torch {torch.__version__}, "
      f"ffcv_go {ffcv_go.__version__} from {ffcv_go.__file__}")
PYEOF

if ! why="$("$PY" "$HERE/tests/gpu/cuda_available.py")"; then
  if [ "${FFCV_GO_GPU_TESTS_ON_CPU:-}" != 1 ]; then
    echo "run.sh: skipped, $why"
    exit 0
  fi
  echo "run.sh: $why; FFCV_GO_GPU_TESTS_ON_CPU=1: the cpu_ok tests run on the CPU (a check of the bundle)"
else
  echo "run.sh: $why"
fi

if ! "$PY" -c "import pytest" >/dev/null 2>&1; then
  echo "run.sh: no pytest here; installing the bundle's"
  install "$HERE"/wheels/test/*.whl || { echo "run.sh: no pytest and none in the bundle" >&2; exit 1; }
fi
export FFCV_GO_GPU_BETON="$HERE/data/photos.beton"
(cd "$HERE/tests/gpu" && "$PY" -m pytest -c pytest.ini --rootdir . -v --junitxml "$RESULTS/test-gpu.xml" \
  ${ARGS[@]+"${ARGS[@]}"} .)
rc=$?

if [ "$BENCH" = 1 ]; then
  # shellcheck disable=SC2086  # GPU_TRAIN_ARGS: more arguments, split on spaces
  "$PY" "$HERE/bench/gpu_train.py" --data "$FFCV_GO_GPU_BETON" --out "$RESULTS/gpu_train" ${GPU_TRAIN_ARGS:-}
  brc=$?
  "$PY" "$HERE/bench/loader_rate.py" --data "$FFCV_GO_GPU_BETON" --dir "$WORK" | tee "$RESULTS/loader_rate.txt"
  if [ "$brc" = 0 ]; then brc=${PIPESTATUS[0]}; fi
  if [ "$rc" = 0 ]; then rc=$brc; fi
fi
echo "run.sh: results in $RESULTS"
exit $rc
