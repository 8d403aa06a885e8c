package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// fleetMessage is a batch as the other replicas hear it.
type fleetMessage struct {
	From  string   `json:"from"`
	Names []string `json:"names,omitempty"`
	All   bool     `json:"all,omitempty"`
}

// maxMessage bounds a fleet message (the Redis client reads replies of
// at most 64 KiB): a batch naming more is told as "all".
const maxMessage = 32 << 10

// tell publishes a batch to the fleet; a fleet that cannot be reached
// costs its replicas the batch only (each waits out --tag-ttl), never
// this one's invalidation, done already.
func (r *Receiver) tell(ctx context.Context, names []string, all bool) {
	msg, _ := json.Marshal(fleetMessage{From: r.id, Names: names, All: all})
	if len(msg) > maxMessage {
		msg, _ = json.Marshal(fleetMessage{From: r.id, All: true})
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.opts.Fleet.Publish(pctx, msg); err != nil {
		r.opts.Logger.Warn("registry notifications: the other replicas were not told of a batch", "error", err.Error())
	}
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
	name, tag, tagged := splitInvalidation(s)
	if tagged && tag != "" && !names.ValidTag(tag) {
		return nil
	}
	host, repo, ok := strings.Cut(name, "/")
	if !ok {
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
