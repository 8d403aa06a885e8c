#!/usr/bin/env bash
# bench/proxy.sh — the proxy's performance figures beside their references,
# measured in one run over TLS on loopback (see BenchmarkProxy):
#   warm <version>.json req/s: oci-tofu serve vs nginx serving the same file
#   256 MiB archive: streamed through the proxy vs straight from the registry
#   proxy peak RSS during 8 concurrent 256 MiB downloads
# Needs .tools/bin/registry (make tools), nginx and wrk (installed here when
# root; without wrk the JSON load comes from Go workers). About a minute.
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

out=$(go test ./bench -run '^$' -bench '^BenchmarkProxy$' -benchtime 1x -timeout 30m)
echo "$out"
line=$(grep '^BenchmarkProxy' <<<"$out")
metric() { awk -v m="$1" '{for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' <<<"$line"; }
client=$(grep -o 'JSON load from [a-z]*' <<<"$out" | awk '{print $4}')
printf '\n%-38s %12s %12s %8s %6s\n' "measure (medians; TLS 1.3, HTTP/1.1)" "oci-tofu" "reference" "ratio" "goal"
printf '%-38s %12s %12s %8s %6s\n' "warm <version>.json (req/s) vs nginx" "$(metric json-proxy-req/s)" "$(metric json-nginx-req/s)" "$(metric json-proxy/nginx)" "≥0.8"
printf '%-38s %12s %12s %8s %6s\n' "256 MiB archive (MiB/s) vs registry" "$(metric stream-proxy-MiB/s)" "$(metric stream-registry-MiB/s)" "$(metric stream-proxy/registry)" "≥0.9"
printf '%-38s %12s %12s %8s %6s\n' "peak RSS, 8 x 256 MiB downloads (MiB)" "$(metric proxy-peak-RSS-MiB)" "" "" "<150"
echo "(JSON load: ${client:-?}, 32 keep-alive connections; archive: one Go HTTP/1.1 client)"
