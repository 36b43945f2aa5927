#!/usr/bin/env python3
"""How much faster `roce sim` runs on 2 threads than on 1, with the machine's own ceiling beside it.

Usage: tools/parallel-speedup.py [--roce BIN] [--rounds N] -- SIM_ARGS...
  e.g. tools/parallel-speedup.py --rounds 5 -- run scenarios/hpcc/websearch-30.toml \
           --set duration_us=1000 --allow-failures

Each round runs, back to back:
  alone    the run on 1 thread;
  pair     two 1-thread runs started together (the control: what two busy CPUs of this machine
           give two independent processes; on a virtual machine with a noisy host it can be far
           from 2x);
  split    the run on 2 threads.
It prints each run's wall and CPU seconds and the share of the CPUs a hypervisor took meanwhile
(`roce sim --json --speed` reports both), then the medians of
  speed-up = alone wall / split wall, and
  ceiling  = 2 x alone wall / pair wall (the slower of the two),
so a speed-up below 2 can be read against what the machine allowed. It fails when the summaries
of the 1- and 2-thread runs differ (they must be identical).
"""
import argparse
import json
import statistics
import subprocess
import sys


def run(binary, args, threads):
    """Starts one run; returns the process."""
    cmd = [binary, "sim", *args, "--json", "--speed", "--threads", str(threads)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(proc):
    """Waits for a run; returns (summary without speed figures, speed)."""
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.exit(f"roce failed ({proc.returncode}): {err.decode(errors='replace').strip()}")
    summary = json.loads(out)
    speed = summary.pop("speed")
    summary.pop("parallel", None)
    return summary, speed


def row(name, speed):
    steal = speed.get("host_steal_share")
    steal = "?" if steal is None else f"{steal * 100:.0f}%"
    return f"  {name:<6} wall {speed['wall_s']:7.2f} s  cpu {speed.get('cpu_s') or 0:7.2f} s  steal {steal}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roce", default="target/release/roce")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("sim_args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.sim_args[1:] if a.sim_args[:1] == ["--"] else a.sim_args
    if not args:
        sys.exit("give the `roce sim` arguments after --")
    speedups, ceilings = [], []
    for r in range(1, a.rounds + 1):
        alone, s_alone = finish(run(a.roce, args, 1))
        p1, p2 = run(a.roce, args, 1), run(a.roce, args, 1)
        (_, s_p1), (_, s_p2) = finish(p1), finish(p2)
        split, s_split = finish(run(a.roce, args, 2))
        if split != alone:
            sys.exit(f"round {r}: the 2-thread summary differs from the 1-thread one")
        speedups.append(s_alone["wall_s"] / s_split["wall_s"])
        ceilings.append(2 * s_alone["wall_s"] / max(s_p1["wall_s"], s_p2["wall_s"]))
        print(f"round {r}: speed-up {speedups[-1]:.2f}x, machine ceiling {ceilings[-1]:.2f}x")
        for name, s in (("alone", s_alone), ("pair", s_p1), ("pair", s_p2), ("split", s_split)):
            print(row(name, s))
    print(
        f"median speed-up {statistics.median(speedups):.2f}x "
        f"({min(speedups):.2f}-{max(speedups):.2f}); "
        f"median machine ceiling {statistics.median(ceilings):.2f}x "
        f"({min(ceilings):.2f}-{max(ceilings):.2f}) over {a.rounds} rounds"
    )


if __name__ == "__main__":
    main()
