package readme

import (
	"strings"
	"testing"
)

// FuzzRender: no input panics, and every output keeps to the allow-list.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"# t\n\n[a](javascript:alert(1)) <script>x</script> ![i](https://e/x.png) ![j](d.png)",
		"[x][r]\n\n[r]: &#106;avascript:alert(1)\n\n<javascript:alert(1)> www.e.com a@b.c",
		"| a | b |\n|:-|-:|\n| `x\\|y` | [l](../x) |\n\n- [x] t\n- [ ] u\n\n~~d~~",
		"> > - 1. <a href=x onclick=y>z</a>\n\n```js\" onclick=\"\nx\n```",
		"[a](<java\tscript:x>) [b](%2e%2e/x) [c](#f) [d](../../examples/y)",
		sampleREADME,
	} {
		f.Add(s, "modules/vpc")
	}
	f.Fuzz(func(t *testing.T, in, dir string) {
		o := testOptions
		o.Dir = dir
		out := string(Render([]byte(in), o))
		if bad := checkSafe(out, ours, ours); len(bad) > 0 {
			t.Fatalf("Render(%q) = %s\nbreaches: %q", in, out, bad)
		}
	})
}

// BenchmarkRender renders a 512 KiB README (sampleREADME repeated).
func BenchmarkRender(b *testing.B) {
	src := []byte(strings.Repeat(sampleREADME, MaxSize/len(sampleREADME)))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		Render(src, testOptions)
	}
}

// BenchmarkRenderHostile renders 512 KiB of the worst traps found.
func BenchmarkRenderHostile(b *testing.B) {
	for name, in := range map[string]string{
		"blockquotes":    strings.Repeat(">", MaxSize-3) + " x",
		"lists":          strings.Repeat("- ", MaxSize/2-2) + "x",
		"unclosed links": strings.Repeat("[a](", MaxSize/4),
		"unclosed attrs": strings.Repeat("<a b=\"\n", MaxSize/7),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				Render([]byte(in), testOptions)
			}
		})
	}
}

// sampleREADME is a module README of the usual kind.
const sampleREADME = `# AWS VPC module

[![CI](https://github.com/example/vpc/actions/workflows/ci.yml/badge.svg)](https://github.com/example/vpc/actions)
[![Registry](https://img.shields.io/badge/registry-vpc-blue)](https://registry.example/modules/vpc)

Creates a **VPC** with public and private subnets, NAT gateways and *optional* flow logs.
See [the submodules](modules/x), the [example](examples/y/README.md) and [usage](#usage).

![Architecture](docs/architecture.png "Architecture")

## Usage

` + "```hcl" + `
module "vpc" {
  source  = "registry.example/example/vpc/aws"
  version = "~> 5.0"

  name = "main"
  cidr = "10.0.0.0/16"
}
` + "```" + `

## Inputs

| Name | Description | Type | Default | Required |
|------|-------------|:----:|---------|:--------:|
| name | Name of the VPC | ` + "`string`" + ` | ` + "`\"\"`" + ` | no |
| cidr | The IPv4 CIDR block | ` + "`string`" + ` | ` + "`\"10.0.0.0/16\"`" + ` | no |
| azs  | Availability zones | ` + "`list(string)`" + ` | ` + "`[]`" + ` | no |

## Notes

1. NAT gateways cost money; see <https://aws.amazon.com/vpc/pricing/>.
2. Flow logs need an IAM role:
   - created by the module when ` + "`create_flow_log_role = true`" + `,
   - or passed in.

> **Warning**
> Changing ` + "`cidr`" + ` recreates the VPC.

- [x] IPv6
- [ ] Transit gateway

Questions: vpc@example.com. ~~Terraform 0.12~~ is no longer supported.

---

`
