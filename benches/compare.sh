#!/usr/bin/env bash
# Runs our W1–W3 benches (release, their measurement passes only) and the
# peer's scripts (BENCHMARKS.md's peer-bench folder) in one sitting, and
# prints one table: workload, ours, peer, peer/ours.
#
# Usage: benches/compare.sh --peer DIR [--runs N] [--scale LIST] [--fuzz-cases C]
#   DIR   a writable copy of peer-bench (its run.sh, *.mjs, package-lock.json);
#         `npm ci` runs there first if it has no node_modules.
#   N     runs of each peer script (its run.sh's RUNS, default 5); the
#         peer's figures are the medians over them. Ours are one process
#         each: W1 the median of 21 timed runs, W2 20 runs, W3 5,000 calls.
#   LIST  the long-thread sizes of the scale bench (default 1000,2000,4000;
#         issue 27 aims at 1000,4000,16000); empty: no scale rows.
#   C     cases of `pai-sim fuzz --seed 7` timed for the fuzz row (default
#         3000); 0: no fuzz row. Neither has a peer figure.
#
# Raw output goes to a temporary folder, named at the end. Run on an idle
# machine: the figures move by ±50% from one hour to the next, so compare
# only figures of one sitting.
set -euo pipefail

usage() { sed -n '6,15p' "$0" >&2; exit 2; }
peer=""
runs=5
scale="1000,2000,4000"
fuzz_cases=3000
while [ $# -gt 0 ]; do
  case "$1" in
    --peer) peer="${2:-}"; shift 2 || usage ;;
    --runs) runs="${2:-}"; shift 2 || usage ;;
    --scale) scale="${2-}"; shift 2 || usage ;;
    --fuzz-cases) fuzz_cases="${2:-}"; shift 2 || usage ;;
    -h|--help) usage ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
[ -n "$peer" ] || usage
[ -f "$peer/run.sh" ] || { echo "no run.sh in $peer" >&2; exit 2; }
peer="$(cd "$peer" && pwd)"
cd "$(dirname "$0")/.."

out="$(mktemp -d /tmp/pai-compare.XXXXXX)"
if [ ! -d "$peer/node_modules" ]; then
  echo "# npm ci in $peer" >&2
  (cd "$peer" && npm ci --no-audit --no-fund) >&2
fi

# Build once, then run the executables themselves (with criterion's
# `--bench` flag, as `cargo bench` would): nothing is rebuilt between runs.
echo "# building the benches (release)" >&2
cargo bench -p pai-benches --bench stream --bench steps --bench hooks --bench scale --no-run \
  --message-format=json 2>"$out/build.log" >"$out/build.json" \
  || { tail -30 "$out/build.log" >&2; exit 1; }
exe() {
  node -e '
    const want = process.argv[1];
    for (const l of require("fs").readFileSync(0, "utf8").split("\n")) {
      if (!l.startsWith("{")) continue;
      const m = JSON.parse(l);
      if (m.reason === "compiler-artifact" && m.target.name === want && m.executable) {
        console.log(m.executable);
      }
    }' "$1" <"$out/build.json" | tail -1
}

echo "# $(date -u +%FT%TZ), nproc $(nproc), loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
for b in stream steps hooks; do
  bin="$(exe "$b")"
  [ -x "$bin" ] || { echo "no executable for bench $b" >&2; exit 1; }
  echo "# ours: $b" >&2
  PAI_BENCH_RESULTS_ONLY=1 "$bin" --bench >"$out/$b.txt" 2>>"$out/ours.err" \
    || { tail -20 "$out/ours.err" >&2; echo "our $b bench failed" >&2; exit 1; }
  grep '^RESULT' "$out/$b.txt" | tee -a "$out/ours.txt" >&2
done
if [ -n "$scale" ]; then
  echo "# ours: scale ($scale sends)" >&2
  PAI_SCALE_SENDS="$scale" "$(exe scale)" >"$out/scale.txt" 2>>"$out/ours.err" \
    || { tail -20 "$out/ours.err" >&2; echo "our scale bench failed" >&2; exit 1; }
  grep '^RESULT' "$out/scale.txt" | tee -a "$out/ours.txt" >&2
fi
if [ "$fuzz_cases" -gt 0 ]; then
  echo "# ours: pai-sim fuzz --cases $fuzz_cases --seed 7" >&2
  cargo build --release -p pai-sim 2>>"$out/build.log" >&2
  target/release/pai-sim fuzz --cases "$fuzz_cases" --seed 7 --keep-going \
    --out "$out/fuzz-finds" >"$out/fuzz.txt" 2>&1 || true
  # "ran N cases (M runs) in Ts: R cases/s"
  sed -n 's/.*ran \([0-9]*\) cases.*: \([0-9.]*\) cases\/s.*/RESULT FUZZ cases_per_s \2/p' \
    "$out/fuzz.txt" | tail -1 | tee -a "$out/ours.txt" >&2
fi
echo "# peer: RUNS=$runs bash run.sh" >&2
(cd "$peer" && RUNS="$runs" bash run.sh) >"$out/peer.txt" 2>"$out/peer.err"

# The peer's medians as `PEER <bench> <field> <value>` lines.
grep '^{"median_of"' "$out/peer.txt" | node -e '
  const lines = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean);
  for (const l of lines) {
    const o = JSON.parse(l);
    for (const [k, v] of Object.entries(o)) {
      if (typeof v === "number") console.log(`PEER ${o.bench} ${k} ${v}`);
      if (k === "correct") console.log(`PEER ${o.bench} correct ${v ? 1 : 0}`);
    }
  }' >"$out/peer.results"

cat "$out/ours.txt" "$out/peer.results" | awk '
  $1 == "RESULT" { ours[$2 " " $3] = $4 }
  $1 == "PEER"   { peer[$2 " " $3] = $4 }
  function row(label, unit, o, p,   r) {
    r = (o != "" && p != "" && o + 0 > 0) ? sprintf("%.1f", p / o) : "n/a"
    printf "| %-40s | %-6s | %12s | %12s | %9s |\n", label, unit, fmt(o), fmt(p), r
  }
  function fmt(x) { return x == "" ? "-" : sprintf("%.3f", x) }
  function us2ns(x) { return x == "" ? "" : x * 1000 }
  END {
    printf "| %-40s | %-6s | %12s | %12s | %9s |\n", "workload", "unit", "ours", "peer", "peer/ours"
    printf "|%s|%s|%s|%s|%s|\n", "------------------------------------------", "--------", "--------------", "--------------", "-----------"
    row("W1 stream + redaction, per delta", "ns", ours["W1 ns_per_delta"], us2ns(peer["stream us_per_delta"]))
    row("W1 peak RSS of the process", "MiB", ours["W1 max_rss_mb"], peer["stream max_rss_mb"])
    row("W2 200-step tool loop, per step", "us", ours["W2 us_per_step"], peer["steps us_per_step"])
    row("W2 per step, steps 0-19", "us", ours["W2 us_per_step_first20"], peer["steps us_per_step_first20"])
    row("W2 per step, steps 180-199", "us", ours["W2 us_per_step_last20"], peer["steps us_per_step_last20"])
    pr = (peer["steps us_per_step_first20"] > 0) ? peer["steps us_per_step_last20"] / peer["steps us_per_step_first20"] : ""
    row("W2 late/early (180-199 over 0-19)", "ratio", ours["W2 late_early_ratio"], pr)
    row("W2 peak RSS of the process", "MiB", ours["W2 max_rss_mb"], peer["steps max_rss_mb"])
    row("W3 call, K=0", "us", ours["W3 us_per_call_k0"], peer["middleware us_per_call_k0"])
    row("W3 call, K=10", "us", ours["W3 us_per_call_k10"], peer["middleware us_per_call_k10"])
    row("W3 per hook per call (means)", "ns", ours["W3 ns_per_hook"], us2ns(peer["middleware us_per_middleware"]))
    row("W3 per hook per call (p50s)", "ns", ours["W3 p50_ns_per_hook"], us2ns(peer["middleware p50_us_per_middleware"]))
    row("W3 per hook, chain alone", "ns", ours["W3 chain_ns_per_hook"], us2ns(peer["middleware direct_us_per_middleware"]))
    row("W3 per hook of another phase (means)", "ns", ours["W3 ns_per_other_phase_hook"], "")
    row("W3 per hook of another phase, chain", "ns", ours["W3 chain_ns_per_other_phase_hook"], "")
    for (k in ours) {
      split(k, f, " ")
      if (f[1] == "SCALE" && f[2] ~ /_s$/) {
        n = f[2]; sub(/^sends_/, "", n); sub(/_s$/, "", n)
        sizes[n + 0] = 1
      }
    }
    count = 0
    for (n in sizes) sorted[++count] = n + 0
    for (i = 2; i <= count; i++) {
      v = sorted[i]; j = i - 1
      while (j > 0 && sorted[j] > v) { sorted[j + 1] = sorted[j]; j-- }
      sorted[j + 1] = v
    }
    for (i = 1; i <= count; i++) {
      n = sorted[i]
      row("scale: " n " queued sends, wall", "s", ours["SCALE sends_" n "_s"], "")
      row("scale: " n " queued sends, peak RSS", "MB", ours["SCALE sends_" n "_mb"], "")
    }
    row("pai-sim fuzz --seed 7 (each case run twice)", "case/s", ours["FUZZ cases_per_s"], "")
    printf "\npeer checks passed: stream %s, steps %s, middleware %s (1 = yes); peer cpu_per_wall: %s %s %s\n", \
      peer["stream correct"], peer["steps correct"], peer["middleware correct"], \
      peer["stream cpu_per_wall"], peer["steps cpu_per_wall"], peer["middleware cpu_per_wall"]
  }'
echo "# loadavg at the end $(cut -d' ' -f1-3 /proc/loadavg); raw output in $out"
