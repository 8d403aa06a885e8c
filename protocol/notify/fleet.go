package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// fleetMessage is a batch as the other replicas hear it.
type fleetMessage struct {
	From  string   `json:"from"`
	Names []string `json:"names,omitempty"`
	All   bool     `json:"all,omitempty"`
}

// maxMessage bounds a fleet message (the Redis client reads replies of
// at most 64 KiB): a batch naming more is told in several.
const maxMessage = 32 << 10

// tell publishes a batch to the fleet, in messages of at most
// maxMessage: a batch too long for one is not told as "all", which would
// make every other replica drop every repository's for what this one
// dropped a few of. A fleet that cannot be reached costs its replicas
// the batch only (each waits out --tag-ttl), never this one's
// invalidation, done already.
func (r *Receiver) tell(ctx context.Context, names []string, all bool) {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for _, msg := range r.messages(names, all) {
		if err := r.opts.Fleet.Publish(pctx, msg); err != nil {
			r.opts.Logger.Warn("registry notifications: the other replicas were not told of a batch", "error", err.Error())
			return
		}
	}
}

// messages are the fleet messages telling names (or all).
func (r *Receiver) messages(names []string, all bool) [][]byte {
	one := func(m fleetMessage) []byte {
		b, _ := json.Marshal(m)
		return b
	}
	if all {
		return [][]byte{one(fleetMessage{From: r.id, All: true})}
	}
	var out [][]byte
	m := fleetMessage{From: r.id}
	empty := len(one(m)) + len(`,"names":[]`)
	size := empty
	for _, n := range names {
		quoted := len(one(fleetMessage{Names: []string{n}})) - len(`{"from":"","names":[]}`) + 1 // the name and a comma
		if size+quoted > maxMessage && len(m.Names) > 0 {
			out = append(out, one(m))
			m.Names, size = nil, empty
		}
		if size+quoted > maxMessage { // one name too long for any message
			return [][]byte{one(fleetMessage{From: r.id, All: true})}
		}
		m.Names = append(m.Names, n)
		size += quoted
	}
	if len(m.Names) > 0 {
		out = append(out, one(m))
	}
	return out
}

// heard takes a batch another replica published: its names, checked
// against this replica's scope, go into the next batch here (not told
// again).
func (r *Receiver) heard(msg []byte) {
	var m fleetMessage
	if len(msg) > maxMessage || json.Unmarshal(msg, &m) != nil || m.From == r.id {
		return
	}
	if len(m.Names) > r.opts.MaxPending {
		m.All, m.Names = true, nil
	}
	var names []string
	for _, n := range m.Names {
		names = append(names, r.inScope(n)...)
	}
	if len(names) > 0 || m.All {
		r.add(names, m.All, false)
	}
}

// inScope is what invalidation s (as accept makes them: host/path,
// host/path:tag, host/path:) says when its repository is one of the
// proxy's and its tag a tag; none otherwise.
func (r *Receiver) inScope(s string) []string {
	name, tag, tagged := store.SplitName(s)
	if tagged && tag != "" && !names.ValidTag(tag) {
		return nil
	}
	host, repo, ok := strings.Cut(name, "/")
	if !ok || len(host) > MaxRepository || len(repo) > MaxRepository {
		return nil
	}
	for _, n := range r.opts.Scope(host, repo) {
		if n == name {
			return []string{s}
		}
	}
	return nil
}

func randomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
