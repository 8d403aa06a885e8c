#!/bin/bash
# clidiff.sh records what oci-tofu prints: run BEFORE-BINARY AFTER-BINARY
# (e.g. a build of main and one of a branch) and it runs a few hundred
# command lines with each (every command's help, usage errors, pushes of
# testdata into OCI layouts and into a local Distribution, --json forms,
# reads back), from fresh state at the same paths, and diffs stdout,
# stderr and exit status. Two things differ by nature and are masked:
# policy token's random token and its hash, and log timestamps.
# Needs .tools/bin/registry (make tools) and port 5399 free.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" != "--one" ]; then
  [ $# -eq 2 ] || { echo "usage: $0 BEFORE-BINARY AFTER-BINARY" >&2; exit 2; }
  "$0" --one "$(realpath "$1")" a >/dev/null 2>&1; "$0" --one "$(realpath "$2")" b
  diff -r /tmp/clidiff-a /tmp/clidiff-b | grep -v '^[<>] \(token\|hash\) \|"time":"' | grep '^[<>]' && exit 1
  echo "no difference"; exit 0
fi
BIN=$2; LABEL=$3; OUT=/tmp/clidiff-$LABEL; W=/tmp/clidiff-work; TD=$ROOT/testdata
REG=$ROOT/.tools/bin/registry; PORT=5399
rm -rf $OUT $W; mkdir -p $OUT $W/reg
cat > $W/reg.yml <<YML
version: 0.1
log: {level: error}
storage: {filesystem: {rootdirectory: $W/reg}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$PORT}
YML
$REG serve $W/reg.yml >$W/reg.log 2>&1 &
RP=$!
for i in $(seq 50); do curl -s http://127.0.0.1:$PORT/v2/ >/dev/null && break; sleep 0.1; done
n=0
run() { n=$((n+1)); f=$(printf %03d $n); echo "$*" > $OUT/$f.cmd
  (cd $W && env -i PATH=/usr/bin:/bin HOME=$W SOURCE_DATE_EPOCH=1700000000 $BIN "$@" </dev/null >$OUT/$f.out 2>$OUT/$f.err; echo $? >$OUT/$f.rc); }
R=127.0.0.1:$PORT
# help of every command
run --help; run -h; run help; run --version; run version; run
for c in push pull serve verify lock export mirror prune sbom vulns usage policy version completion; do
  run $c --help; run help $c; done
for c in "push provider" "push module" "push mirror" "push tofu" "pull module" "policy check" "policy token" "policy test" "serve check" ; do
  run $c --help; done
for c in $($BIN --help | sed -n '/COMMANDS:/,/GLOBAL/p' | awk 'NF>1{print $1}'); do
  for s in $($BIN $c --help 2>/dev/null | sed -n '/COMMANDS:/,/OPTIONS/p' | awk 'NF>1&&$1!="COMMANDS:"{print $1}'); do run $c $s --help; run $c $s; run $c $s a b c d e f; run $c $s --nosuch; run $c $s --kye x; done; run $c; run $c nosuch; run $c --nosuch; done
run pus; run nosuch; run completion bash; run completion zsh; run completion fish; run completion nosuch
# usage errors
run push provider; run push provider onlyone; run push provider --policy-warn $TD/providers/hello/1.0.0 oci-layout:$W/l0
run push provider --platform bogus $TD/providers/hello/1.0.0 oci-layout:$W/l0
run push provider $TD/providers/hello/1.0.0 oci-layout:$W/l0   # no key
run push provider --key $TD/keys/other.asc $TD/providers/hello/1.0.0 oci-layout:$W/l0
# pushes into a layout, human and JSON and quiet
for v in 1.0.0 1.1.0 2.0.0-rc1; do run push provider --key $TD/keys/gpg-signer.asc $TD/providers/hello/$v oci-layout:$W/lay/hello; done
run push provider --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.0.0 oci-layout:$W/lay/hello
run push provider --json --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.0.0 oci-layout:$W/lay/hello
run push provider -q --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.0.0 oci-layout:$W/lay/hello
run push provider --json --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.1.0 oci-layout:$W/lay/hello2 --platform linux_amd64 --also-tag latest
run push provider --unsigned $TD/providers/inhouse/0.1.0 oci-layout:$W/lay/inhouse
run push provider --sign-key $TD/keys/other-private.asc --unsigned $TD/providers/inhouse/0.1.0 oci-layout:$W/lay/inhouse2
run push provider --json --unsigned $TD/providers/inhouse/0.1.0 oci-layout:$W/lay/inhouse3
# into the registry
for v in 1.0.0 1.1.0; do run push provider --plain-http --key $TD/keys/gpg-signer.asc $TD/providers/hello/$v $R/acme/hello; done
run push provider --plain-http --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.0.0 $R/acme/hello
run push provider --plain-http --json --key $TD/keys/gpg-signer.asc $TD/providers/hello/2.0.0-rc1 $R/acme/hello --also-tag latest
run push provider --plain-http --json --key $TD/keys/gpg-signer.asc $TD/providers/hello/2.0.0-rc1 $R/acme/hello
run push provider --plain-http --unsigned $TD/providers/inhouse/0.1.0 $R/acme/inhouse
run push provider --plain-http --json --unsigned --no-sbom $TD/providers/inhouse/0.1.0 $R/acme/inhouse2
run push provider --plain-http --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.1.0 $R/acme/hello --replace
# modules
run push module $TD/modules/greeting oci-layout:$W/lay/greeting
run push module --json $TD/modules/greeting oci-layout:$W/lay/greeting
run push module --plain-http $TD/modules/greeting $R/acme/greeting:1.0.0
run push module --plain-http --json $TD/modules/greeting $R/acme/greeting:1.0.0
run push module --plain-http $TD/modules/greeting $R/acme/greeting
run pull module --plain-http $R/acme/greeting:1.0.0 $W/pulled
run pull module --plain-http --json $R/acme/greeting:1.0.0 $W/pulled2
# tofu
for v in 1.8.0 1.9.0 1.10.0-beta1; do run push tofu --key $TD/keys/gpg-signer.asc $TD/tofu/$v oci-layout:$W/lay/tofu; done
run push tofu $TD/tofu/1.9.0 oci-layout:$W/lay/tofu2
run push tofu --json --key $TD/keys/gpg-signer.asc $TD/tofu/1.9.0 $R/opentofu/tofu --plain-http
run push tofu --key $TD/keys/gpg-signer.asc $TD/tofu/1.9.0 $R/opentofu/tofu --plain-http
# mirror dir: make one from the layout via export
run export --plain-http --provider-template "$R/\${namespace}/\${type}" $W/mirror example.com/acme/hello
run export --json --plain-http --provider-template "$R/\${namespace}/\${type}" $W/mirror2 example.com/acme/hello@1.0.0 example.com/acme2/inhouse
run export --plain-http --provider-template "$R/\${namespace}/\${type}" $W/mirror3 "example.com/acme/hello@>=9.0.0"
run export --plain-http --provider-template "$R/\${namespace}/\${type}" $W/mirror3 example.com/acme/nosuch
run export --provider-template "oci-layout:$W/lay/\${type}" $W/mirror4 example.com/acme/hello
run push mirror --plain-http --provider-template "$R/mirrored/\${namespace}/\${type}" $W/mirror
run push mirror --plain-http --json --provider-template "$R/mirrored/\${namespace}/\${type}" $W/mirror
run push mirror --plain-http --json --provider-template "$R/mirrored/\${namespace}/\${type}" $W/mirror2
run push mirror --provider-template "oci-layout:$W/lay/m/\${namespace}/\${type}" $W/mirror
run push mirror --provider-template "oci-layout:$W/lay/m/\${namespace}/\${type}" $W/nosuchdir
# reading back
run verify oci-layout:$W/lay/hello; run verify --json oci-layout:$W/lay/hello
run verify --plain-http $R/acme/hello; run verify --plain-http --json $R/acme/hello
run sbom --plain-http $R/acme/hello:1.0.0; run sbom --plain-http --json $R/acme/hello:1.0.0
run sbom --plain-http --backfill $R/acme/inhouse2
run lock --plain-http --provider-template "$R/acme/{type}" --platform linux_amd64 $W
run prune --plain-http --keep-last 1 $R/acme/hello; run prune --json --plain-http --keep-last 1 $R/acme/hello
run vulns --plain-http $R/acme/hello
cat > $W/policy.hcl <<'HCL'
default = "deny"
provider "registry.opentofu.org/hashicorp/aws" {
  versions = ">= 4.0.0"
  deny     = ["5.2.0"]
  deprecated {
    versions = "< 5.0.0"
    message  = "4.x is end of life"
  }
}
provider "127.0.0.1:5399/acme/*" {
  versions = "< 1.1.0"
}
provider "example.com/acme/*" {
  min_age = "72h"
}
tofu { versions = ">= 1.9.0" }
client "team-a" {
  tokens    = ["sha256:0000000000000000000000000000000000000000000000000000000000000000"]
  providers = ["example.com/team-a/*"]
}
HCL
run policy test --policy $W/policy.hcl hashicorp/aws@5.1.0 hashicorp/aws@4.0.0 tofu@1.9.0 module:a/b/c
run policy test --json --policy $W/policy.hcl hashicorp/aws@5.1.0 hashicorp/aws@4.0.0 tofu@1.9.0
run policy test --as team-a --policy $W/policy.hcl example.com/team-a/x hashicorp/aws@5.1.0
run policy test --as nobody --policy $W/policy.hcl example.com/team-a/x
run policy test --policy $W/policy.hcl hashicorp/aws@banana
run policy test --plain-http --provider-template "$R/\${namespace}/\${type}" --policy $W/policy.hcl example.com/acme/hello 127.0.0.1:5399/acme/hello 127.0.0.1:5399/acme/hello@1.0.0 hashicorp/aws@5.2.0
run policy test --json --plain-http --provider-template "$R/\${namespace}/\${type}" --policy $W/policy.hcl example.com/acme/hello 127.0.0.1:5399/acme/hello 127.0.0.1:5399/acme/hello@1.0.0 hashicorp/aws@5.2.0
run mirror --policy $W/policy.hcl --provider-template "$R/m/\${namespace}/\${type}" --plain-http example.com/nosuch/x
run mirror --json --provider-template "$R/m/\${namespace}/\${type}" --plain-http 127.0.0.1:1/nosuch/x
run push provider --policy $W/policy.hcl --plain-http --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.0.0 $R/acme/hellop
run push provider --policy $W/policy.hcl --policy-warn --plain-http --key $TD/keys/gpg-signer.asc $TD/providers/hello/1.0.0 $R/acme/hellop
run push module $TD/modules/greeting oci-layout:$W/lay/greeting:1.0.0
run push module --json $TD/modules/greeting oci-layout:$W/lay/greeting:1.0.0 --also-tag latest
run push module $TD/modules/greeting oci-layout:$W/lay/greeting:1.0.0
run push provider --plain-http --json --unsigned --no-sbom $TD/providers/inhouse/0.1.0 $R/acme2/inhouse
run sbom --plain-http --backfill $R/acme2/inhouse
run sbom --plain-http --json --backfill $R/acme2/inhouse
run sbom --plain-http --summary $R/acme2/inhouse:0.1.0
run sbom --plain-http --json --summary $R/acme/hello:1.0.0
mkdir -p $W/infra; printf 'terraform {\n  required_providers {\n    hello = { source = "example.com/acme/hello" }\n  }\n}\n' > $W/infra/main.tf
run lock --plain-http --provider-template "$R/\${namespace}/\${type}" --platform linux_amd64 --platform darwin_arm64 $W/infra
run lock --json --plain-http --provider-template "$R/\${namespace}/\${type}" --platform linux_amd64 $W/infra
run lock --policy $W/policy.hcl --plain-http --provider-template "$R/\${namespace}/\${type}" --platform linux_amd64 $W/infra
run verify --plain-http $R/acme/nosuch; run verify --json --plain-http $R/acme2/inhouse $R/acme/nosuch
run verify --policy $W/policy.hcl --plain-http $R/acme/hello
run serve --check --insecure-no-tls --plain-http --provider-template "$R/\${namespace}/\${type}" --check-provider example.com/acme/hello
run serve --check --json --self-signed --plain-http --provider-template "$R/\${namespace}/\${type}" --module-template "$R/m/\${namespace}/\${name}/\${system}" --policy $W/policy.hcl
run serve --check --insecure-no-tls --plain-http --provider-template "$R/\${namespace}/\${type}" --pull-through-origin registry.opentofu.org
run serve --check --insecure-no-tls --plain-http --provider-template "$R/\${hostname}/\${namespace}/\${type}" --pull-through-origin registry.opentofu.org --pull-through-registry-origin registry.opentofu.org
run serve --check --insecure-no-tls --plain-http --provider-template "$R/\${namespace}/\${type}" --pull-through-origin registry.opentofu.org --pull-through-shared-repositories --log-format json
run serve --plain-http --provider-template "$R/\${namespace}/\${type}"
run serve --json --insecure-no-tls --plain-http --provider-template "$R/\${namespace}/\${type}"
run serve --insecure-no-tls --audit-documents --plain-http --provider-template "$R/\${namespace}/\${type}"
run serve --insecure-no-tls --log-level nosuch --provider-template "$R/\${namespace}/\${type}"
run serve --insecure-no-tls --pull-through-registry-origin x --provider-template "$R/\${namespace}/\${type}"
run pull module --plain-http $R/acme/greeting:9.9.9 $W/p3
run pull module --plain-http $R/acme/greeting:1.0.0 $W/pulled
run pull module --plain-http --max-size 10 $R/acme/greeting:1.0.0 $W/p4
run pull module --plain-http --max-size 0 $R/acme/greeting:1.0.0 $W/p5
run pull module oci-layout:$W/lay/greeting $W/p6
mkdir -p $W/sboms
run sbom --plain-http --output $W/sboms $R/acme/hello:1.0.0
run sbom --plain-http --platform linux_amd64 $R/acme/hello:1.0.0
run sbom --plain-http $R/acme/hello:1.0.0
run sbom --plain-http --platform linux_amd64 --output $W/nosuchdir $R/acme/hello:1.0.0
run sbom --platform linux_amd64 oci-layout:$W/lay/hello:1.0.0
run sbom --plain-http --summary $R/acme/hello:9.0.0
VDB=$ROOT/convert/vulns/testdata/db
run vulns --plain-http --vuln-db $VDB $R/acme/hello
run vulns --plain-http --vuln-db $VDB --exit-code $R/acme/hello $R/acme2/inhouse
run vulns --plain-http --vuln-db $VDB --exit-code --json $R/acme2/inhouse
run vulns --plain-http --vuln-db $VDB --all --provider-template "$R/\${namespace}/\${type}" example.com/acme/hello
run vulns --plain-http --vuln-db $VDB --provider-template "$R/\${namespace}" example.com/acme/hello
run sbom --plain-http --provider-template "$R/\${namespace}/\${type}" --summary example.com/acme/hello@1.0.0
run sbom --plain-http --provider-template "bad" --summary example.com/acme/hello@1.0.0
run policy test --as nobody --policy $W/policy.hcl example.com/team-a/x
run policy token --json --stdin
kill $RP; wait $RP 2>/dev/null
echo "$n command lines"
