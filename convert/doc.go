// Package convert turns outside formats into OpenTofu artifacts and back:
// provider release directories, SHA256SUMS and their OpenPGP signatures,
// h1/zh package hashes, mirror directories, module zips and lock files.
package convert
