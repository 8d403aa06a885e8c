// Package health owns the probes of `oci-tofu serve`: readiness (/readyz:
// whether this process should be sent requests now) and liveness (/livez:
// whether it is wedged), and the drain that makes readiness fail on
// shutdown before connections close. Readiness fails while the registries
// cannot be reached (checked at most once per Options.Interval, whatever
// the probe rate), while a named condition does not hold (the TLS
// certificate in use has expired), or once Drain is called. A policy file
// that fails to reload is deliberately no such condition: the last good
// policy stays in force. Liveness fails only when the serving loop no
// longer answers: a process that merely cannot reach its registry is not
// restarted (docs/proxy.md, "Probes").
package health
