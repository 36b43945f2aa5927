#!/usr/bin/env python3
"""A Python 3 port of the HPCC simulator's analysis/fct_analysis.py
(alibaba-edu/High-Precision-Congestion-Control), for FCT files in its FCT_OUTPUT_FILE
format (`sip dip sport dport size start_time fct standalone_fct`), ours or ns-3's.

What it computes is unchanged: flows with destination port 100 (-t 0; 200 with -t 1; all
with -t 2) that start before -T ns; slowdown = fct / standalone_fct, at least 1; flows sorted
by size (as `sort -n`: ties by the whole line); the last flow dropped (the original's
`output.split('\\n')[:-2]`); bins of -s percent of the flows; per bin the largest size and
the p50 / p95 / p99 slowdown, each the element at int(len * p) of the bin's sorted
slowdowns. awk's print of the slowdown (six significant digits) is kept too.

Changes from the original: Python 3; the FCT files are given as arguments instead of a list
of CC names under ../simulation/mix/; the pipeline runs in Python instead of cat | awk |
sort | awk (same result); the -t 2 awk program, which does not parse in the original, does
what its comment says.

    fct_analysis.py [-s STEP] [-t TYPE] [-T TIME_LIMIT] FCT_FILE [FCT_FILE ...]
"""

import argparse


def get_pctl(a, p):
    i = int(len(a) * p)
    return a[i]


def awk_number(x):
    """awk's print of a number: integers as integers, others with OFMT %.6g."""
    if x == int(x) and abs(x) < 1e16:
        return "%d" % int(x)
    return "%.6g" % x


def flows(path, type, time_limit):
    """The `size slowdown` lines the original's awk program prints, sorted as `sort -n` does."""
    out = []
    with open(path) as f:
        for line in f:
            c = line.split()
            if len(c) < 8:
                continue
            dport, size, start, fct, base = int(c[3]), c[4], int(c[5]), int(c[6]), int(c[7])
            if type == 0 and dport != 100:
                continue
            if type == 1 and dport != 200:
                continue
            if not start < time_limit:
                continue
            slow = fct / base
            out.append("%s %s" % (size, awk_number(1 if slow < 1 else slow)))
    # sort -n: by the leading number, ties by the whole line (the last-resort comparison).
    out.sort(key=lambda l: (float(l.split()[0]), l))
    # awk '{print $2, $1}', then the original's split('\n')[:-2].
    a = ["%s %s" % (l.split()[1], l.split()[0]) for l in out]
    return a[:-1]


def main():
    parser = argparse.ArgumentParser(description="FCT slowdown per flow-size bin")
    parser.add_argument("-s", dest="step", action="store", default="5")
    parser.add_argument("-t", dest="type", action="store", type=int, default=0,
                        help="0: normal, 1: incast, 2: all")
    parser.add_argument("-T", dest="time_limit", action="store", type=int, default=3000000000,
                        help="only consider flows that start before T")
    parser.add_argument("-b", dest="bw", action="store", type=int, default=25,
                        help="bandwidth of edge link (Gbps), unused as in the original")
    parser.add_argument("files", nargs="+", help="FCT files, one per CC to compare")
    args = parser.parse_args()

    step = int(args.step)
    res = [[i / 100.0] for i in range(0, 100, step)]
    for file in args.files:
        a = flows(file, args.type, args.time_limit)
        n = len(a)
        for i in range(0, 100, step):
            l = i * n // 100
            r = (i + step) * n // 100
            d = [[float(x.split()[0]), int(x.split()[1])] for x in a[l:r]]
            fct = sorted(x[0] for x in d)
            res[i // step].append(d[-1][1])  # flow size
            res[i // step].append(get_pctl(fct, 0.5))  # mid fct
            res[i // step].append(get_pctl(fct, 0.95))  # 95-pct fct
            res[i // step].append(get_pctl(fct, 0.99))  # 99-pct fct
    for item in res:
        line = "%.3f %d" % (item[0], item[1])
        i = 1
        for _ in args.files:
            line += "\t%.3f %.3f %.3f" % (item[i + 1], item[i + 2], item[i + 3])
            i += 4
        print(line)


if __name__ == "__main__":
    main()
