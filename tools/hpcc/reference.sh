#!/usr/bin/env bash
# Builds the HPCC authors' ns-3 simulator from its source, runs it on the parity fixtures and
# writes the reference slowdown tables the parity test holds us to (docs/sim.md, "Parity with ns-3").
# Not part of CI: one run takes 10 to 20 CPU minutes (WebSearch or FB_Hadoop at 30 % load), 15 to
# 30 at 50 %.
#
#   tools/hpcc/reference.sh HPCC_CHECKOUT [NAME...]
#
# HPCC_CHECKOUT is a clone of github.com/alibaba-edu/High-Precision-Congestion-Control (the
# fixtures were made at 9f4be2a). NAME is a config under tests/fixtures/hpcc/mix without its
# `config_fat_` prefix and `.txt` suffix: {ws30,ws50,fb30,fb50}_{dcqcn,hp95,timely,dctcp} (all
# sixteen when none is given). For each it writes
# tests/fixtures/hpcc/reference/NAME.txt: the ns-3 FCT file's slowdown per 10 % bin of flows, as
# tools/hpcc/fct_analysis.py prints it.
#
# ns-3.17's waf needs Python 2 (PYTHON2, default `python2`; pyenv's 2.7.18 works). The flags
# are those of the fixtures' build; -march=native lets g++ fuse multiply-adds, so another CPU
# may round a few rates differently and move a percentile by a flow or two.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
src="${1:?usage: reference.sh HPCC_CHECKOUT [NAME...]}"
shift
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for w in ws30 ws50 fb30 fb50; do
        for cc in dcqcn hp95 timely dctcp; do names+=("${w}_$cc"); done
    done
fi
py2="${PYTHON2:-python2}"
sim="$src/simulation"
[ -f "$sim/scratch/third.cc" ] || { echo "reference: $sim/scratch/third.cc not found" >&2; exit 1; }

if [ ! -x "$sim/build/scratch/third" ]; then
    echo "== building ns-3 (waf, optimized) in $sim"
    (cd "$sim" &&
        CXXFLAGS="-O3 -fpermissive -std=gnu++11 -Wno-error -w -march=native" "$py2" ./waf configure -d optimized \
            --enable-modules=core,network,internet,point-to-point,applications,bridge,config-store,tools,stats &&
        "$py2" ./waf build)
fi

fixtures="$root/tests/fixtures/hpcc"
mkdir -p "$fixtures/reference"
cp "$fixtures"/mix/{fat,ws30,ws50,fb30,fb50}.txt "$sim/mix/"
commit="$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)"
for name in "${names[@]}"; do
    cfg="mix/config_fat_$name.txt"
    cp "$fixtures/$cfg" "$sim/$cfg"
    echo "== ns-3 on $cfg"
    (cd "$sim" && LD_LIBRARY_PATH="$sim/build" /usr/bin/time -f "%U s user, %M KB" \
        ./build/scratch/third "$cfg" > "mix/log_fat_$name.txt")
    fct="$sim/mix/fct_fat_$name.txt"
    out="$fixtures/reference/$name.txt"
    {
        echo "# ns-3 (HPCC authors' simulator at $commit, scratch/third) on mix/config_fat_$name.txt:"
        echo "# tools/hpcc/fct_analysis.py -s 10 of its FCT file ($(wc -l < "$fct") flows), made $(date -u +%F)."
        echo "# bin  max_size  p50 p95 p99"
        python3 "$root/tools/hpcc/fct_analysis.py" -s 10 "$fct"
    } > "$out"
    echo "wrote $out"
done
