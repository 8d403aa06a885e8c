#!/usr/bin/env bash
# bench/proxy.sh — the proxy's performance figures beside their references,
# measured in one run over TLS on loopback (see BenchmarkProxy):
#   warm <version>.json req/s: oci-tofu serve vs nginx serving the same file
#   256 MiB archive: streamed through the proxy vs straight from the registry
#   proxy peak RSS during 8 concurrent 256 MiB downloads
# Needs .tools/bin/registry (make tools) and nginx (installed here when root).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
  else
    echo "bench/proxy.sh: please install nginx" >&2
    exit 1
  fi
fi

out=$(go test ./bench -run '^$' -bench '^BenchmarkProxy$' -benchtime 1x -timeout 30m)
echo "$out"
line=$(grep '^BenchmarkProxy' <<<"$out")
metric() { awk -v m="$1" '{for (i = 2; i <= NF; i++) if ($i == m) print $(i-1)}' <<<"$line"; }
printf '\n%-38s %12s %12s %8s\n' "measure" "oci-tofu" "reference" "ratio"
printf '%-38s %12s %12s %8s\n' "warm <version>.json (req/s) vs nginx" "$(metric json-proxy-req/s)" "$(metric json-nginx-req/s)" "$(metric json-proxy/nginx)"
printf '%-38s %12s %12s %8s\n' "256 MiB archive (MiB/s) vs registry" "$(metric stream-proxy-MiB/s)" "$(metric stream-registry-MiB/s)" "$(metric stream-proxy/registry)"
printf '%-38s %12s\n' "peak RSS, 8 x 256 MiB downloads (MiB)" "$(metric proxy-peak-RSS-MiB)"
