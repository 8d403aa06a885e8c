//go:build tools

// Package tools pins the OpenTofu CLI that the end-to-end tests run.
package tools

import _ "github.com/opentofu/opentofu/cmd/tofu"
