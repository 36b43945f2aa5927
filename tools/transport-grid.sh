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
            return float(p.split("=")[1]) > 0
    raise ValueError(variant)


def rows(wl):
    """(recovery, paths, cc, clean run's summary, lossy run's summary) per row; None, None
    where the cell was not run."""
    for tr in TR:
        for paths in ("ecmp", "spray", "adaptive"):
            doc = json.loads((out / f"{wl}-{tr}-{paths}.json").read_text())
            runs = {(r["variant"].split()[0], loss_of(r["variant"])): r["summary"]
                    for r in doc["runs"]}
            for cc in CC:
                yield [TR[tr], paths, CC[cc]], runs.get((cc, False)), runs.get((cc, True))


def pair(clean, lossy, fn):
    return f"{fn(clean)} / {fn(lossy)}"


def per_drop(s):
    return f(s["retransmitted"] / s["drops"]) if s["drops"] else "-"


def counters(clean, lossy):
    return [pair(clean, lossy, lambda s: s["retransmitted"]), per_drop(lossy),
            pair(clean, lossy, lambda s: s["pfc_pause_frames"]),
            pair(clean, lossy, lambda s: s["timeouts"])]


def line(cells):
    print("| " + " | ".join(cells) + " |")


print("WebSearch (sizes scaled 10x down), 600 flows at 50% load; each cell: no loss / 0.1% per "
      f"link. Flows done; FCT slowdown p50 and p99 of the flows up to {SHORT // 1000} KB and over "
      f"{LONG // 1000} KB (finished flows); packets resent; resent per frame dropped (any "
      "reason) at 0.1%; PFC pause frames; ACK timeouts.\n")
line(["recovery", "paths", "cc", "done", "short p50", "short p99", "long p50", "long p99",
      "resent", "per drop", "PFC", "timeouts"])
line(["---"] * 12)
for head, clean, lossy in rows("websearch"):
    if clean is None or lossy is None:
        line(head + ["not sprayed (INT frames)"] + [""] * 8)
        continue

    def sizes(s, keep):
        return [x["slowdown"] for x in (s.get("fct") or {}).get("flows", []) if keep(x["size"])]

    def done(s):
        return sum(1 for x in s["flows"] if x["state"] == "done")

    short = [sizes(s, lambda b: b <= SHORT) for s in (clean, lossy)]
    long_ = [sizes(s, lambda b: b > LONG) for s in (clean, lossy)]
    cells = [pair(clean, lossy, done)]
    for group in (short, long_):
        for p in (0.5, 0.99):
            cells.append(f"{f(pct(group[0], p))} / {f(pct(group[1], p))}")
    line(head + cells + counters(clean, lossy))

print("\nRing AllReduce of 1 MiB over 16 hosts, every hop across the core, 10 ms; each cell: no "
      "loss / 0.1% per link. Iterations done; mean and largest step time, µs; packets resent; "
      "resent per frame dropped at 0.1%; PFC pause frames; ACK timeouts.\n")
line(["recovery", "paths", "cc", "iterations", "step mean", "step max", "resent", "per drop",
      "PFC", "timeouts"])
line(["---"] * 10)
for head, clean, lossy in rows("allreduce"):
    if clean is None or lossy is None:
        line(head + ["not sprayed (INT frames)"] + [""] * 6)
        continue

    def steps(s):
        return [t for c in s["allreduce_iter_us"] for t in c]

    cells = [pair(clean, lossy, lambda s: len(steps(s))),
             pair(clean, lossy, lambda s: f(sum(steps(s)) / len(steps(s)), 0) if steps(s) else "-"),
             pair(clean, lossy, lambda s: f(max(steps(s)), 0) if steps(s) else "-")]
    line(head + cells + counters(clean, lossy))
PY
echo "table: $OUT/table.md" >&2
