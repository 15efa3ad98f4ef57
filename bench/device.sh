#!/usr/bin/env bash
# Every GPU check of satfuse in one run on a lent GPU machine (Python 3.12 with torch 2.11 + CUDA,
# no network, 64 MiB carried): the nvFuser/CUDA test lane, the CUDA cost of a data obligation's
# check, plans held bit for bit to eager's CUDA kernels (bench/eager_exactness.py --device cuda),
# the OpInfo report on CUDA (plans on real nvFuser), random programs on CUDA (bench/fuzz.py
# --device cuda), and bench/run.py's GPU timings (eager, Inductor, satfuse with kernels measured by
# torch.profiler beside the cost model's). Logs go to $OUT (default /tmp/satfuse-device).
#
# Prepare here, once (nothing of it is committed):
#   bash ../shared/tools/nvfuser-carry.sh .nvf        # real nvFuser, ~24 MiB
#   bench/device.sh --prepare                         # egglog 13.2's cp312 bindings (stripped), expecttest: .dev/
# Then run it there with carry [".nvf", ".dev"]:
#   bash bench/device.sh [lane] [obligation] [exact] [opinfo] [fuzz] [bench]   # default: all but fuzz, in that order
#   bash bench/device.sh lane+exact+opinfo+fuzz bench    # steps joined by '+' run at once (keep timings alone)
# Knobs: LANE_TIMEOUT, EXACT_FAMILIES, EXACT_TIMEOUT, BENCH_PROGRAMS (bench/run.py --programs), BENCH_TIMEOUT, OPINFO_OPS (op ids), OPINFO_LIMIT,
# OPINFO_JOBS, OPINFO_TIMEOUT, OBLIGATION_REPS, OBLIGATION_TIMEOUT (each of its three runs),
# FUZZ_RUNS ("mode:seed ..." campaigns run at once), FUZZ_TIME (seconds each), FUZZ_PROGRAM_TIMEOUT (seconds a
# program may take before it counts as a hang: a compile-mode campaign on an H200 outlived its step
# at the default 60), FUZZ_DEVICE (default cuda).
#
# Why not pip: the machine has no registry; satfuse needs only egglog.bindings (11 MiB stripped),
# and its subpackages are linked into satfuse/ the way pyproject's package-dir maps them.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--prepare" ]; then
  set -e
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$work" "egglog==13.2.*"
  # torch's OpInfo database imports expecttest, which the machine's torch lacks
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$work" expecttest
  (cd "$work" && python3 -m zipfile -e egglog-*.whl x && mkdir -p site/egglog \
    && cp x/egglog/bindings*.so site/egglog/ && strip --strip-unneeded site/egglog/bindings*.so \
    && : > site/egglog/__init__.py && python3 -m zipfile -e expecttest-*.whl site)
  mkdir -p .dev
  tar -C "$work/site" -cJf .dev/egglog-bindings.tar.xz .
  grep -qx "/.dev/" .git/info/exclude 2>/dev/null || echo "/.dev/" >> .git/info/exclude
  echo "ready: .dev ($(du -sh .dev | cut -f1)); carry [\".nvf\", \".dev\"]"
  exit 0
fi

OUT=${OUT:-/tmp/satfuse-device}
mkdir -p "$OUT" /tmp/satfuse-site
tar -C /tmp/satfuse-site -xJf .dev/egglog-bindings.tar.xz
# shellcheck disable=SC1091
[ -f .nvf/activate.sh ] && source .nvf/activate.sh
for d in engine rewrites lowering rules; do ln -sfn "../$d" "satfuse/$d"; done
export PYTHONPATH="$PWD:/tmp/satfuse-site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(lane obligation exact opinfo bench)

python3 - <<'PY' 2>&1 | tee "$OUT/env.log"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "")
try:
    import nvfuser_direct
    print("nvfuser_direct", nvfuser_direct.__version__)
except Exception as e:  # noqa: BLE001
    print("nvfuser_direct: not importable:", type(e).__name__, e)
import satfuse
from satfuse.lowering import nvfuser_probe
print("satfuse from", satfuse.__file__, "; nvFuser:", nvfuser_probe.probe())
PY

step() {
  local s=$1 t0
  t0=$(date +%s)
  case $s in
    lane)
      timeout "${LANE_TIMEOUT:-240}" python3 -m pytest -q -p no:cacheprovider --continue-on-collection-errors \
        -m "nvfuser or cuda" -o addopts="" tests > "$OUT/lane.log" 2>&1; tail -40 "$OUT/lane.log" ;;
    obligation)
      for dn in cuda:512 cuda:8192 cpu:512; do  # the machine's CPU too: quieter than a shared dev box
        timeout "${OBLIGATION_TIMEOUT:-90}" python3 bench/obligation_check.py --device "${dn%:*}" --n "${dn#*:}" \
          --reps "${OBLIGATION_REPS:-100}" 2>&1
      done > "$OUT/obligation.log"; cat "$OUT/obligation.log" ;;
    exact)
      # one process per family, at once (each compiles its own plans)
      local fam
      for fam in ${EXACT_FAMILIES:-unary-dtypes binary-dtypes binary-layouts resize composite-half}; do
        timeout "${EXACT_TIMEOUT:-200}" python3 bench/eager_exactness.py --device cuda --show 40 "$fam" \
          > "/tmp/exact-$fam.log" 2>&1 &
      done
      wait
      cat /tmp/exact-*.log > "$OUT/exact.log"; grep -v "^satfuse\|^family\|^$" "$OUT/exact.log" | head -80 ;;
    opinfo)
      SATFUSE_OPINFO_DEVICE=cuda SATFUSE_OPINFO_JOBS=${OPINFO_JOBS:-12} timeout "${OPINFO_TIMEOUT:-150}" \
        python3 bench/opinfo_report.py --limit "${OPINFO_LIMIT:-2}" ${OPINFO_OPS:-} > "$OUT/opinfo.log" 2>&1
      tail -25 "$OUT/opinfo.log" ;;
    fuzz)
      # one campaign per MODE:SEED, at once, inputs on CUDA; reduced repros are appended to the log
      local runs=() ms
      for ms in ${FUZZ_RUNS:-jit:10025 jit:10026 optimize:9850 compile:9849}; do
        timeout $(( ${FUZZ_TIME:-180} + 120 )) python3 bench/fuzz.py --device "${FUZZ_DEVICE:-cuda}" \
          --mode "${ms%:*}" --seed "${ms#*:}" --count 100000 --time-limit "${FUZZ_TIME:-180}" --reduce-budget 30 \
          --timeout "${FUZZ_PROGRAM_TIMEOUT:-20}" --progress 20 --out "/tmp/fuzz-${ms/:/-}" \
          > "/tmp/fuzz-${ms/:/-}.log" 2>&1 &
        runs+=("${ms/:/-}")
      done
      wait
      for r in "${runs[@]}"; do
        echo "### fuzz $r"; cat "/tmp/fuzz-$r.log"
        for f in /tmp/fuzz-"$r"/*.py; do [ -f "$f" ] && { echo "#### $f"; cat "$f"; }; done
      done > "$OUT/fuzz.log"
      grep -E "^### |equal" "$OUT/fuzz.log" ;;
    bench)
      timeout "${BENCH_TIMEOUT:-330}" python3 bench/run.py --skip-quality --runs 20 --programs "${BENCH_PROGRAMS:-}" --show-kernels \
        --json "$OUT/gpu.jsonl" > "$OUT/bench.log" 2>&1; cat "$OUT/bench.log" ;;
    *) echo "unknown step $s (lane, obligation, exact, opinfo, fuzz, bench)" ;;
  esac
  echo "## step $s: $(( $(date +%s) - t0 )) s"
}

# steps joined by '+' run at once (the correctness checks share the machine; timings run alone)
for group in "${steps[@]}"; do
  IFS=+ read -r -a members <<< "$group"
  for s in "${members[@]}"; do step "$s" > "/tmp/step-$s.out" 2>&1 & done
  wait
  for s in "${members[@]}"; do cat "/tmp/step-$s.out"; done
done
