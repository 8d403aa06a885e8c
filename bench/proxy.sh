#!/usr/bin/env bash
# bench/proxy.sh — the proxy's performance figures beside their references,
# measured in one run over TLS on loopback (see BenchmarkProxy and
# BenchmarkMetadataDistance):
#   warm <version>.json req/s: oci-tofu serve vs nginx serving the same file,
#     and asked by a policy file's client (its token and scope checked)
#   256 MiB archive: the proxy's CPU time per byte vs the registry's serving
#     the blob directly, over HTTP/1.1 and over HTTP/2 (what tofu and
#     terraform speak), and the throughput of each
#   proxy peak RSS during 8 concurrent 256 MiB downloads
#   500 versions × 4 platforms in a registry 40 ms away: cold, warm and
#     after-TTL /versions, cold index.json and <version>.json, in round trips
#     of a static file through the same distance; RSS with 50 such providers
# Needs .tools/bin/registry (make tools), nginx and wrk (installed here when
# root; without wrk the JSON load comes from Go workers). About two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=""
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx"
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  elif [[ "$missing" == *nginx* ]]; then
    echo "bench/proxy.sh: please install nginx (and wrk)" >&2
    exit 1
  fi
fi

out=$(go test ./bench -run '^$' -bench '^Benchmark(Proxy|ProxyJSON|MetadataDistance)$' -benchtime 1x -timeout 30m)
echo "$out"
metric() { awk -v b="$1" -v m="$2" '$1 ~ "^"b"(-[0-9]+)?$" {for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' <<<"$out"; }
p() { metric BenchmarkProxy "$1"; }
d() { metric BenchmarkMetadataDistance "$1"; }
j() { metric BenchmarkProxyJSON "$1"; }
row() { printf '%-44s %12s %12s %8s %8s\n' "$@"; }
client=$(grep -o 'JSON load from [a-z]*' <<<"$out" | awk '{print $4}')

echo
row "measure (medians; TLS 1.3, HTTP/1.1)" "oci-tofu" "reference" "ratio" "goal"
row "warm <version>.json (req/s) vs nginx" "$(p json-proxy-req/s)" "$(p json-nginx-req/s)" "$(p json-proxy/nginx)" "≥0.8"
row "warm <version>.json: CPU µs per answer" "$(p json-cpu-proxy-µs/answer)" "$(p json-cpu-nginx-µs/answer)" "$(p json-cpu-proxy/nginx)" ""
row "warm <version>.json, a scoped client (req/s)" "$(j scoped-req/s)" "$(j proxy-req/s)" "$(j json-scoped/proxy)" "≥0.95"
row "256 MiB archive: CPU ms vs registry's" "$(p stream-cpu-proxy-ms)" "$(p stream-cpu-registry-ms)" "$(p stream-cpu-proxy/registry)" "≤2.4"
row "  the same over HTTP/2 (tofu, terraform)" "$(p stream-h2-cpu-proxy-ms)" "$(p stream-h2-cpu-registry-ms)" "$(p stream-h2-cpu-proxy/registry)" "≤2.4"
row "256 MiB archive: MiB/s vs registry's" "$(p stream-proxy-MiB/s)" "$(p stream-registry-MiB/s)" "$(p stream-proxy/registry)" ""
row "peak RSS, 8 x 256 MiB downloads (MiB)" "$(p proxy-peak-RSS-MiB)" "" "" "<150"
echo "(JSON load: ${client:-?}, 32 keep-alive connections; archive: one Go client, HTTP/1.1, then HTTP/2)"

echo
row "500 versions × 4 platforms, 40 ms away" "oci-tofu" "static file" "ratio" "goal"
row "cold /versions (ms) vs one round trip" "$(d cold-versions-ms)" "$(d static-rtt-ms)" "$(d cold-versions/rtt)" "<1000ms"
row "first cold /versions, new connections (ms)" "$(d first-cold-versions-ms)" "" "" "<1000ms"
row "registry requests per cold /versions" "$(d cold-versions-requests)" "500" "" "≤500+few"
row "warm /versions (ms)" "$(d warm-versions-ms)" "" "" ""
row "/versions after the TTLs (ms; max)" "$(d after-ttl-versions-ms) ($(d after-ttl-versions-max-ms))" "" "" "=warm"
row "cold index.json (round trips)" "$(d cold-index.json-rtts)" "1" "" "≤3"
row "cold <version>.json (round trips)" "$(d cold-version.json-rtts)" "1" "" "≤3"
row "cold download document (round trips)" "$(d cold-download-rtts)" "1" "" ""
row "RSS with 50 such providers cached (MiB)" "$(d rss-50-providers-MiB)" "" "" "bounded"
row "Go heap in use, 50 providers (MiB)" "$(d heap-inuse-50-providers-MiB)" "" "" ""
