#!/usr/bin/env bash
# The operations kit checked by the real tools (Debian's `prometheus` package):
#  1. promtool check rules / test rules on tools/prometheus/roce-alerts.yml;
#  2. a running `roce demo --metrics 127.0.0.1:PORT`, its exposition linted by promtool check metrics;
#  3. a real Prometheus server scraping it every second, with the alert rules loaded, answering
#     queries with non-zero CNP counters (sent and handled);
#  4. every query of tools/grafana/roce-dashboard.json run against that server (valid PromQL,
#     names that exist);
#  5. DPDK's own dpdk-telemetry.py reading the same CNP counter from the demo's telemetry socket.
# Needs: prometheus (promtool, prometheus), dpdk-dev (dpdk-telemetry.py), curl, python3, and
# root for DPDK (as the tests).
# ROCE_BIN picks the binary (default: target/debug/roce, built when missing).
set -euo pipefail
cd "$(dirname "$0")/.."

need() {
    command -v "$1" >/dev/null 2>&1 || {
        echo "metrics-check: $1 not found (apt-get install $2)" >&2
        exit 1
    }
}
need promtool prometheus
need prometheus prometheus
need curl curl
need python3 python3
need dpdk-telemetry.py dpdk-dev

roce=${ROCE_BIN:-target/debug/roce}
if [ ! -x "$roce" ]; then
    cargo build --bin roce
fi

echo "== promtool check rules / test rules"
promtool check rules tools/prometheus/roce-alerts.yml
promtool test rules tools/prometheus/roce-alerts.test.yml

tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
echo "== roce demo --metrics 127.0.0.1:0"
"$roce" demo --duration 20s --bottleneck-gbps 0.2 --metrics "127.0.0.1:0" \
    --metrics-linger 120s --json >"$tmp/demo.json" 2>"$tmp/demo.err" &
pids+=($!)
maddr=
for _ in $(seq 100); do
    maddr=$(sed -n 's|^metrics: http://\(.*\)/metrics$|\1|p' "$tmp/demo.err" | head -1)
    [ -n "$maddr" ] && curl -sf "http://$maddr/metrics" >"$tmp/scrape.txt" 2>/dev/null && break
    sleep 0.2
done
echo "roce demo serves http://$maddr/metrics"
# Chosen now that the demo holds its port.
pport=$(free_port)
[ -s "$tmp/scrape.txt" ] || { echo "metrics-check: no metrics from roce demo" >&2; cat "$tmp/demo.err" >&2; exit 1; }
echo "== promtool check metrics ($(grep -c '^roce_' "$tmp/scrape.txt") samples)"
# promtool lints the Prometheus text format: the OpenMetrics exposition said in it (counter
# families named with their _total suffix, no # UNIT lines, no # EOF marker).
python3 - "$tmp/scrape.txt" <<'PY' | promtool check metrics
import sys
lines = open(sys.argv[1]).read().splitlines()
counters = {l.split()[2] for l in lines if l.startswith("# TYPE ") and l.endswith(" counter")}
for l in lines:
    if l.startswith(("# UNIT ", "# EOF")):
        continue
    if l.startswith(("# HELP ", "# TYPE ")):
        parts = l.split(" ", 3)
        if parts[2] in counters:
            parts[2] += "_total"
        l = " ".join(parts)
    print(l)
PY

echo "== prometheus scraping $maddr every second"
cat >"$tmp/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $PWD/tools/prometheus/roce-alerts.yml
scrape_configs:
  - job_name: roce
    static_configs:
      - targets: ["$maddr"]
CONF
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
    --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
pids+=($!)

query() {
    curl -sf --get "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1"
}
value() {
    query "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)'
}
ok=
for _ in $(seq 120); do
    sent=$(value 'sum(roce_port_np_cnp_sent_total)' 2>/dev/null || echo 0)
    handled=$(value 'sum(roce_port_rp_cnp_handled_total)' 2>/dev/null || echo 0)
    if python3 -c "import sys; sys.exit(0 if float('$sent') > 0 and float('$handled') > 0 else 1)"; then
        ok=1
        break
    fi
    sleep 0.5
done
[ -n "$ok" ] || { echo "metrics-check: Prometheus never saw a CNP (sent=$sent handled=$handled)" >&2; cat "$tmp/prometheus.log" >&2; exit 1; }
echo "prometheus: sum(roce_port_np_cnp_sent_total) = $sent, sum(roce_port_rp_cnp_handled_total) = $handled"
rules=$(curl -sf "http://127.0.0.1:$pport/api/v1/rules" | python3 -c 'import json,sys; g=json.load(sys.stdin)["data"]["groups"]; print(sum(1 for x in g for r in x["rules"] if r["health"] == "ok"))')
[ "$rules" = 4 ] || { echo "metrics-check: $rules of 4 alert rules healthy in Prometheus" >&2; exit 1; }
echo "prometheus: 4 alert rules loaded and healthy"

echo "== every Grafana dashboard query against Prometheus"
python3 - "$pport" tools/grafana/roce-dashboard.json <<'PY'
import json, sys, urllib.parse, urllib.request
port, path = sys.argv[1], sys.argv[2]
dash = json.load(open(path))
n = 0
for panel in dash["panels"]:
    for t in panel["targets"]:
        expr = t["expr"].replace("$__rate_interval", "1m").replace("$device", ".*")
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        r = json.load(urllib.request.urlopen(url))
        if r.get("status") != "success":
            sys.exit(f"panel {panel['title']!r}: {r}")
        n += 1
print(f"grafana: {n} queries of {len(dash['panels'])} panels valid")
PY
echo "== dpdk-telemetry.py on the demo's telemetry socket"
sock=$(sed -n 's/^telemetry: \([^ ]*\) (dpdk-telemetry.py.*/\1/p' "$tmp/demo.err" | head -1)
[ -n "$sock" ] || { echo "metrics-check: the demo has no telemetry socket of its own" >&2; cat "$tmp/demo.err" >&2; exit 1; }
instance=0
case "$sock" in *:*) instance=${sock##*:} ;; esac
prefix=$(basename "$(dirname "$sock")")
echo "/roce/port,r" | dpdk-telemetry.py -f "$prefix" -i "$instance" >"$tmp/telemetry.txt" 2>&1 || true
tcnp=$(python3 - "$tmp/telemetry.txt" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
start = text.find('{"/roce/port"')
if start < 0:
    start = text.find("{")
obj, _ = json.JSONDecoder().raw_decode(text[start:])
print(obj["/roce/port"]["np_cnp_sent"])
PY
) || { echo "metrics-check: dpdk-telemetry.py did not answer /roce/port,r:" >&2; cat "$tmp/telemetry.txt" >&2; exit 1; }
[ "${tcnp:-0}" -gt 0 ] || { echo "metrics-check: dpdk-telemetry.py read np_cnp_sent=$tcnp" >&2; exit 1; }
echo "dpdk-telemetry.py: /roce/port,r np_cnp_sent = $tcnp"
echo "metrics-check: ok"
