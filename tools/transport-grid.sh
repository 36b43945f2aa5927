#!/usr/bin/env bash
# The transport grid of issue #37: {go-back-N + PFC, selective repeat without PFC} x {ECMP,
# spraying, adaptive routing} x {DCQCN, HPCC, Swift, NSCC} x {no loss, 0.1% per link} on
# scenarios/transport-grid-websearch.toml and scenarios/transport-grid-allreduce.toml (a k = 4
# fat tree; 3 ms of WebSearch, 10 ms of AllReduce; one seed). Runs 12 `roce sim compare` grids
# (80 runs, about a minute on two cores) with the release binary and writes the two tables
# (markdown) to OUT/table.md, every run's summary to OUT/*.json.
#
#   cargo build --release --bin roce && tools/transport-grid.sh [OUT]   (default target/transport-grid)
#
# HPCC is left out of the sprayed cells: its packets carry the INT shim on their own UDP port,
# and the NICs' sprayer leaves every frame that is not plain RoCEv2 on its flow's path, so those
# runs would be ECMP runs under another name.
set -euo pipefail

cd "$(dirname "$0")/.."
ROCE=${ROCE:-target/release/roce}
OUT=${1:-target/transport-grid}
THREADS=${THREADS:-2}
# Selective repeat's reorder window: how long a packet a NAK showed missing may still be on its
# way over another path before it is resent.
WINDOW_US=${WINDOW_US:-20}
SPRAY_PATHS=${SPRAY_PATHS:-64}

[ -x "$ROCE" ] || { echo "no $ROCE: cargo build --release --bin roce" >&2; exit 1; }
mkdir -p "$OUT"

for wl in websearch allreduce; do
    for tr in gbn-pfc sr-nopfc; do
        for paths in ecmp spray adaptive; do
            ccs=dcqcn-mlx,hpcc,swift,nscc
            sets=()
            case $tr in
                sr-nopfc) sets+=(--set recovery=selective --set "reorder_window_us=$WINDOW_US"
                                 --set switch.pfc=false) ;;
            esac
            case $paths in
                spray) sets+=(--set "spray.paths=$SPRAY_PATHS"); ccs=dcqcn-mlx,swift,nscc ;;
                adaptive) sets+=(--set switch.routing=adaptive) ;;
            esac
            echo "$wl $tr $paths: $ccs" >&2
            "$ROCE" sim compare "scenarios/transport-grid-$wl.toml" --cc "$ccs" \
                --param topology.link.loss=0,0.001 "${sets[@]}" --threads "$THREADS" \
                --allow-failures --json > "$OUT/$wl-$tr-$paths.json" 2> "$OUT/$wl-$tr-$paths.err"
        done
    done
done

python3 - "$OUT" > "$OUT/table.md" <<'PY'
import json, sys, pathlib

out = pathlib.Path(sys.argv[1])
TR = {"gbn-pfc": "go-back-N + PFC", "sr-nopfc": "selective, no PFC"}
CC = {"dcqcn-mlx": "DCQCN", "hpcc": "HPCC", "swift": "Swift", "nscc": "NSCC"}
SHORT, LONG = 10_000, 200_000  # bytes, of the 10x scaled-down WebSearch sizes


def pct(xs, p):
    # The FCT tables' convention (fct_analysis.py): the element at int(n * p) of the sorted list.
    xs = sorted(xs)
    return xs[min(int(len(xs) * p), len(xs) - 1)] if xs else None


def f(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"


def loss_of(variant):
    for p in variant.split()[1:]:
        if p.startswith("topology.link.loss="):
            return "0.1%" if float(p.split("=")[1]) > 0 else "0"
    return "?"


def recovery(s):
    lost = s["drops"]
    retx = s["retransmitted"]
    ratio = f(retx / lost) if lost else "-"
    return [str(retx), str(lost), ratio, str(s["pfc_pause_frames"]), str(s["timeouts"])]


def rows(wl):
    for tr in TR:
        for paths in ("ecmp", "spray", "adaptive"):
            doc = json.loads((out / f"{wl}-{tr}-{paths}.json").read_text())
            runs = {r["variant"]: r["summary"] for r in doc["runs"]}
            for cc in CC:
                for loss in ("0", "0.1%"):
                    hit = [s for v, s in runs.items()
                           if v.split()[0] == cc and loss_of(v) == loss]
                    yield tr, paths, cc, loss, (hit[0] if hit else None)


print("WebSearch (sizes scaled 10x down), 600 flows at 50% load: FCT slowdown p50 / p99 of "
      f"flows up to {SHORT // 1000} KB and over {LONG // 1000} KB; retransmitted packets, "
      "frames dropped (any reason), their ratio, PFC pause frames, ACK timeouts.\n")
print("| recovery | paths | cc | loss | done | short p50 | short p99 | long p50 | long p99 "
      "| resent | dropped | resent/dropped | PFC | timeouts |")
print("|---" * 14 + "|")
for tr, paths, cc, loss, s in rows("websearch"):
    head = [TR[tr], paths, CC[cc], loss]
    if s is None:
        print("| " + " | ".join(head + ["not sprayed: INT frames"] + [""] * 9) + " |")
        continue
    flows = (s.get("fct") or {}).get("flows", [])
    short = [x["slowdown"] for x in flows if x["size"] <= SHORT]
    long_ = [x["slowdown"] for x in flows if x["size"] > LONG]
    done = sum(1 for x in s["flows"] if x["state"] == "done")
    cells = [f"{done}/{len(s['flows'])}", f(pct(short, .5)), f(pct(short, .99)),
             f(pct(long_, .5)), f(pct(long_, .99))]
    print("| " + " | ".join(head + cells + recovery(s)) + " |")

print("\nRing AllReduce of 1 MiB over 16 hosts, every hop across the core: iterations done in "
      "10 ms, mean and largest step time (µs); retransmitted packets, frames dropped, their ratio, "
      "PFC pause frames, ACK timeouts.\n")
print("| recovery | paths | cc | loss | iterations | step mean | step max "
      "| resent | dropped | resent/dropped | PFC | timeouts |")
print("|---" * 12 + "|")
for tr, paths, cc, loss, s in rows("allreduce"):
    head = [TR[tr], paths, CC[cc], loss]
    if s is None:
        print("| " + " | ".join(head + ["not sprayed: INT frames"] + [""] * 7) + " |")
        continue
    steps = [t for c in s["allreduce_iter_us"] for t in c]
    cells = [str(len(steps)), f(sum(steps) / len(steps), 0) if steps else "-",
             f(max(steps), 0) if steps else "-"]
    print("| " + " | ".join(head + cells + recovery(s)) + " |")
PY
echo "table: $OUT/table.md" >&2
