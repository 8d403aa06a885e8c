#!/usr/bin/env bash
# Regenerates the provider release fixtures: small zips signed by GnuPG (the
# implementation providers really use) and by go-crypto (our own --sign-key
# path). Outputs are committed; run this only to change them.
set -euo pipefail
cd "$(dirname "$0")"
export GNUPGHOME=$(mktemp -d)
trap 'rm -rf "$GNUPGHOME" "$work"' EXIT
work=$(mktemp -d)
export TZ=UTC

mkdir -p keys
# The fixture keys are test keys: their private halves are kept so fixtures
# can be added without re-signing everything.
if [ -f keys/gpg-signer-private.asc ]; then
  gpg --batch --quiet --import keys/gpg-signer-private.asc keys/other-private.asc
else
  gpg --batch --quiet --passphrase '' --quick-gen-key 'oci-tofu fixtures <fixtures@oci-tofu.invalid>' rsa3072 sign never
  gpg --batch --quiet --passphrase '' --quick-gen-key 'someone else <other@oci-tofu.invalid>' ed25519 sign never
  gpg --batch --armor --export-secret-keys fixtures@oci-tofu.invalid > keys/gpg-signer-private.asc
  gpg --batch --armor --export-secret-keys other@oci-tofu.invalid > keys/other-private.asc
fi
gpg --batch --armor --export fixtures@oci-tofu.invalid > keys/gpg-signer.asc
gpg --batch --armor --export other@oci-tofu.invalid > keys/other.asc

# make_release TYPE VERSION PLATFORMS...
make_release() {
  local type=$1 version=$2; shift 2
  local dir=providers/$type/$version
  rm -rf "$dir"; mkdir -p "$dir"
  for p in "$@"; do
    local d=$work/$type-$version-$p
    mkdir -p "$d/docs"
    printf '#!/bin/sh\necho "terraform-provider-%s %s %s"\n' "$type" "$version" "$p" > "$d/terraform-provider-${type}_v${version}"
    chmod 755 "$d/terraform-provider-${type}_v${version}"
    printf 'Fixture provider %s %s for %s.\n' "$type" "$version" "$p" > "$d/docs/README.md"
    touch -d '2024-01-01 00:00:00' "$d" "$d"/* "$d"/docs/*
    # With directory entries (zip's default), as many real providers ship:
    # h1 must ignore them, as tofu hashes the unpacked directory.
    (cd "$d" && zip -q -X -r "$OLDPWD/$dir/terraform-provider-${type}_${version}_${p}.zip" .)
  done
  printf '{"version":1,"metadata":{"protocol_versions":["6.0"]}}\n' > "$dir/terraform-provider-${type}_${version}_manifest.json"
  (cd "$dir" && sha256sum terraform-provider-* > "terraform-provider-${type}_${version}_SHA256SUMS")
}

make_release hello 1.0.0 linux_amd64 linux_arm64 darwin_arm64 windows_amd64
gpg --batch --yes --local-user fixtures@oci-tofu.invalid --detach-sign \
  -o providers/hello/1.0.0/terraform-provider-hello_1.0.0_SHA256SUMS.sig providers/hello/1.0.0/terraform-provider-hello_1.0.0_SHA256SUMS

make_release hello 1.1.0 linux_amd64 linux_arm64 darwin_arm64 windows_amd64
gpg --batch --yes --local-user fixtures@oci-tofu.invalid --detach-sign \
  -o providers/hello/1.1.0/terraform-provider-hello_1.1.0_SHA256SUMS.sig providers/hello/1.1.0/terraform-provider-hello_1.1.0_SHA256SUMS

# Signed by go-crypto (our own signer), key in keys/gocrypto-*.asc.
make_release hello 2.0.0-rc1 linux_amd64 darwin_arm64
(cd .. && go run ./testdata/gensign keys testdata/keys/gocrypto-signer \
  testdata/providers/hello/2.0.0-rc1/terraform-provider-hello_2.0.0-rc1_SHA256SUMS)

# An in-house build with no SHA256SUMS at all.
make_release inhouse 0.1.0 linux_amd64 darwin_arm64
rm providers/inhouse/0.1.0/terraform-provider-inhouse_0.1.0_SHA256SUMS

# OpenTofu releases for the TofuDL mirror (push tofu): tar.gz holding a
# "tofu" binary, a zip, SHA256SUMS and its binary GnuPG signature (.gpgsig).
make_tofu_release() {
  local version=$1; shift
  local dir=tofu/$version
  rm -rf "$dir"; mkdir -p "$dir"
  for p in "$@"; do
    local d=$work/tofu-$version-$p
    mkdir -p "$d"
    printf '#!/bin/sh\necho "OpenTofu v%s (fixture, %s)"\n' "$version" "$p" > "$d/tofu"
    chmod 755 "$d/tofu"
    printf 'Fixture license\n' > "$d/LICENSE"
    touch -d '2024-01-01 00:00:00' "$d"/*
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2024-01-01 00:00:00' -C "$d" -cf - tofu LICENSE | gzip -n -9 > "$dir/tofu_${version}_${p}.tar.gz"
    (cd "$d" && zip -q -X "$OLDPWD/$dir/tofu_${version}_${p}.zip" tofu LICENSE)
  done
  (cd "$dir" && sha256sum tofu_* > "tofu_${version}_SHA256SUMS")
  gpg --batch --yes --local-user fixtures@oci-tofu.invalid --detach-sign -o "$dir/tofu_${version}_SHA256SUMS.gpgsig" "$dir/tofu_${version}_SHA256SUMS"
}
make_tofu_release 1.8.0 linux_amd64 linux_arm64 darwin_arm64
make_tofu_release 1.9.0 linux_amd64 linux_arm64 darwin_arm64
make_tofu_release 1.10.0-beta1 linux_amd64
