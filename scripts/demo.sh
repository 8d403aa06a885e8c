#!/usr/bin/env bash
# `make demo`: the main job on the embedded default — no external registry.
# Pushes the GnuPG-signed provider fixtures into an OCI layout directory,
# serves it with `oci-tofu serve`, and installs it with the real OpenTofu CLI
# through the network mirror protocol; then writes a multi-platform lock
# file from registry metadata that tofu accepts unchanged; pushes a module
# and installs it through the proxy's Module Registry Protocol.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# The binaries and the output directory can be chosen (the e2e test does).
bin=${OCI_TOFU_BIN:-$root/bin/oci-tofu}
demo=${DEMO_DIR:-$root/out/demo}
# OpenTofu: TOFU (or TOFU_BIN) when given; else a `tofu` on PATH of a
# version the demo supports; else the one `make tools` builds, built now
# if missing (it says so: a first build takes about five minutes).
min_tofu=1.10

# tofu_version prints the x.y.z a tofu binary reports, or nothing.
tofu_version() { "$1" version 2>/dev/null | sed -n 's/^OpenTofu v\([0-9][0-9.]*\).*/\1/p' | head -1; }
# supported says whether version $1 is at least $min_tofu.
supported() { [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$min_tofu" "$1" | sort -V | head -1)" = "$min_tofu" ]; }

find_tofu() {
  local given=${TOFU:-${TOFU_BIN:-}}
  if [ -n "$given" ]; then
    echo "$given"; return
  fi
  local path_tofu
  path_tofu=$(command -v tofu || true)
  if [ -n "$path_tofu" ]; then
    local v; v=$(tofu_version "$path_tofu")
    if supported "$v"; then
      echo "using tofu $v from PATH ($path_tofu); TOFU=/path/to/tofu picks another" >&2
      echo "$path_tofu"; return
    fi
    echo "the tofu on PATH ($path_tofu, version ${v:-unknown}) is older than $min_tofu: not used" >&2
  fi
  if [ ! -x "$root/.tools/bin/tofu" ]; then
    echo "building OpenTofu from the Go module proxy into .tools/bin (about five minutes the first time; TOFU=/path/to/tofu skips this)..." >&2
    make --no-print-directory -C "$root" "$root/.tools/bin/tofu" >&2
  fi
  echo "$root/.tools/bin/tofu"
}
tofu=$(find_tofu)
rm -rf "$demo"; mkdir -p "$demo/config" "$demo/home"
store=$demo/store
template="oci-layout:$store/providers/\${namespace}/\${type}"

# Bold headings on a terminal only: a log file gets plain text.
if [ -t 1 ]; then
  step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
else
  step() { printf '\n==> %s\n' "$*"; }
fi

step "push the provider fixtures (verified against their GnuPG signature) into an OCI layout"
for v in 1.0.0 1.1.0; do
  "$bin" push provider --key testdata/keys/gpg-signer.asc "testdata/providers/hello/$v" "oci-layout:$store/providers/test/hello"
done

step "pack and push a module directory (deterministic zip) as version 1.0.0"
"$bin" push module testdata/modules/greeting "oci-layout:$store/modules/acme/greeting/aws:1.0.0"

step "check everything exactly as OpenTofu will read it"
"$bin" verify "oci-layout:$store/providers/test/hello" "oci-layout:$store/modules/acme/greeting/aws"

step "serve the layout over HTTPS (self-signed certificate for this demo)"
"$bin" serve --listen 127.0.0.1:0 --self-signed --self-signed-cert-out "$demo/cert.pem" \
  --provider-template "$template" --module-template "oci-layout:$store/modules/\${namespace}/\${name}/\${system}" \
  2>"$demo/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
port=
for _ in $(seq 100); do
  port=$(sed -n 's/.*msg=serving address=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$demo/serve.log")
  [ -n "$port" ] && [ -s "$demo/cert.pem" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "oci-tofu serve did not start:" >&2; cat "$demo/serve.log" >&2; exit 1; }
echo "serving on https://localhost:$port (log: $demo/serve.log)"
export SSL_CERT_FILE=$demo/cert.pem

cat > "$demo/home/tofu.tfrc" <<TFRC
provider_installation {
  network_mirror {
    url     = "https://localhost:$port/v1/mirror/"
    include = ["example.com/*/*"]
  }
}
TFRC
cat > "$demo/config/main.tf" <<'TF'
terraform {
  required_providers {
    hello = {
      source  = "example.com/test/hello"
      version = "~> 1.0"
    }
  }
}
TF
# The fixture provider is not a real plugin, so the module gets its own
# configuration, which tofu can apply. Module registry addresses need a host
# with a dot: 127.0.0.1 is one.
mkdir -p "$demo/module"
cat > "$demo/module/main.tf" <<TF
module "greeting" {
  source  = "127.0.0.1:$port/acme/greeting/aws"
  version = "~> 1.0"
  name    = "oci-tofu"
}

output "greeting" { value = module.greeting.greeting }
TF

step "write a lock file for three platforms from registry metadata (no zip downloaded)"
"$bin" lock --provider-template "$template" --platform linux_amd64 --platform darwin_arm64 --platform windows_amd64 "$demo/config"
cp "$demo/config/.terraform.lock.hcl" "$demo/lock.before"

step "tofu init through the proxy's network mirror"
(cd "$demo/config" && HOME=$demo/home TF_CLI_CONFIG_FILE=$demo/home/tofu.tfrc "$tofu" init -input=false -no-color)

step "the lock file tofu kept"
cat "$demo/config/.terraform.lock.hcl"
if cmp -s "$demo/lock.before" "$demo/config/.terraform.lock.hcl"; then
  echo "tofu init accepted the generated lock file unchanged."
else
  echo "tofu init changed the lock file:" >&2
  diff "$demo/lock.before" "$demo/config/.terraform.lock.hcl" >&2 || true
  exit 1
fi

step "a module through the proxy's Module Registry Protocol: tofu init and apply"
(cd "$demo/module" && HOME=$demo/home TF_CLI_CONFIG_FILE=$demo/home/tofu.tfrc "$tofu" init -input=false -no-color | grep -E 'Downloading|initialized')
(cd "$demo/module" && HOME=$demo/home TF_CLI_CONFIG_FILE=$demo/home/tofu.tfrc "$tofu" apply -auto-approve -input=false -no-color | tail -3)

echo
echo "Demo done: everything lives in $demo (store = an OCI layout any registry tool can copy)."
cat <<NEXT

Next, try the proxy yourself with your own tofu: docs/guide-serving.md, "Trying it out", is a
complete install through it; or serve this demo's store again and open its page:
  $bin serve --self-signed --listen 127.0.0.1:8443 --provider-template '$template'
  (then https://localhost:8443/ shows the client configuration to copy)
NEXT
