// Package bench holds the benchmarks `make bench` runs. Each benchmark
// measures oci-tofu and its reference (raw uploads, nginx, direct registry
// downloads) in the same run and reports their ratio as a metric, so the
// printed line reads side by side: oci-tofu, reference, ratio.
package bench
