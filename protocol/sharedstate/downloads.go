package sharedstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The fleet's download counts: every replica adds what it delivered, so
// that `oci-tofu usage --shared-cache` answers for the fleet without a
// log pipeline. A hash per artifact version holds, per client, the count
// ("n:CLIENT") and the last download ("t:CLIENT", Unix ms, only ever
// raised); a set names the versions. Both are bounded by what replicas
// add — versions they delivered (held or pulled through: never a name a
// request made up) and the clients that downloaded them — and again
// here: at most MaxDownloadVersions versions, names of bounded length.

// DownloadCount is how often one client downloaded one artifact version,
// and when last.
type DownloadCount struct {
	Kind, Address, Version, Client string
	Count                          int64
	Last                           time.Time
}

// Bounds of the download counts.
const (
	MaxDownloadVersions = 1 << 18
	maxCountName        = 512
	// countBatch is how many counts one script call adds.
	countBatch = 256
)

// countScript adds counts. KEYS: the set of versions; ARGV: the hashes'
// key prefix, the set's bound, then member, client, count, last (ms) for
// each count. A version beyond the bound is not added. Each count is
// also added to its address's usage and to its version's (usage.go):
// the day of its last download, and its client's last download.
var countScript = redis.NewScript(1, `
local function usage(key, day, cl, n, t)
  local dk, ck = ARGV[1] .. "usage:days:" .. key, ARGV[1] .. "usage:clients:" .. key
  redis.call("hincrby", dk, day, n)
  if redis.call("hlen", dk) > `+usageDaysKept+` then
    local days, newest = redis.call("hkeys", dk), day
    for _, f in ipairs(days) do newest = math.max(newest, tonumber(f) or 0) end
    for _, f in ipairs(days) do
      if (tonumber(f) or 0) <= newest - `+usageDays+` then redis.call("hdel", dk, f) end
    end
  end
  redis.call("expire", dk, `+usageTTL+`)
  if redis.call("hexists", ck, cl) == 1 or redis.call("hlen", ck) < `+maxUsageClients+` then
    local last = redis.call("hget", ck, cl)
    if not last or tonumber(last) < tonumber(t) then redis.call("hset", ck, cl, t) end
  end
  redis.call("expire", ck, `+usageTTL+`)
end
local bound = tonumber(ARGV[2])
for i = 3, #ARGV, 4 do
  local m, cl, n, t = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3]
  if redis.call("sismember", KEYS[1], m) == 1 or redis.call("scard", KEYS[1]) < bound then
    redis.call("sadd", KEYS[1], m)
    local h = ARGV[1] .. m
    redis.call("hincrby", h, "n:" .. cl, n)
    local cur = redis.call("hget", h, "t:" .. cl)
    if not cur or tonumber(cur) < tonumber(t) then redis.call("hset", h, "t:" .. cl, t) end
    local addr = string.match(m, "^([^\031]*\031[^\031]*)\031")
    if addr then
      local day = math.floor(tonumber(t) / 86400000)
      usage(addr, day, cl, n, t)
      usage(m, day, cl, n, t)
    end
  end
end
return 1`)

func (r *Redis) downloadKeys() (set, hashPrefix string) {
	return r.opts.Prefix + "downloads:v1", r.opts.Prefix + "downloads:v1:"
}

// downloadMember names a version in the set.
func downloadMember(kind, address, version string) string {
	return kind + "\x1f" + address + "\x1f" + version
}

// CountDownloads adds counts to the fleet's. Counts with names beyond
// the bounds are left out.
func (r *Redis) CountDownloads(ctx context.Context, counts []DownloadCount) error {
	set, prefix := r.downloadKeys()
	args := []any{set, prefix, MaxDownloadVersions}
	flush := func() error {
		if len(args) == 3 {
			return nil
		}
		err := r.do(ctx, "count downloads", func(ctx context.Context, c redis.Conn) error {
			_, err := countScript.DoContext(ctx, c, args...)
			return err
		})
		args = args[:3]
		return err
	}
	for _, n := range counts {
		m := downloadMember(n.Kind, n.Address, n.Version)
		if len(m) > maxCountName || len(n.Client) > maxCountName || n.Count <= 0 {
			continue
		}
		args = append(args, m, n.Client, n.Count, n.Last.UnixMilli())
		if len(args) >= 3+4*countBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// Downloads reads the fleet's counts, a page of versions at a time.
// Nothing read is trusted beyond its shape: a member or field that is
// not what replicas write is skipped.
func (r *Redis) Downloads(ctx context.Context) ([]DownloadCount, error) {
	set, prefix := r.downloadKeys()
	var out []DownloadCount
	cursor := "0"
	for {
		var members []string
		err := r.do(ctx, "read downloads", func(ctx context.Context, c redis.Conn) error {
			reply, err := redis.Values(redis.DoContext(c, ctx, "SSCAN", set, cursor, "COUNT", 100))
			if err != nil {
				return err
			}
			if len(reply) != 2 {
				return fmt.Errorf("shared state: an SSCAN answer of %d items", len(reply))
			}
			if cursor, err = redis.String(reply[0], nil); err != nil {
				return err
			}
			members, err = redis.Strings(reply[1], nil)
			return err
		})
		if err != nil && !errors.Is(err, redis.ErrNil) {
			return nil, err
		}
		for _, m := range members {
			counts, err := r.versionCounts(ctx, prefix, m)
			if err != nil {
				return nil, err
			}
			out = append(out, counts...)
		}
		if cursor == "0" || len(out) > MaxDownloadVersions*64 {
			return out, nil
		}
	}
}

// versionCounts reads one version's counts by client.
func (r *Redis) versionCounts(ctx context.Context, prefix, member string) ([]DownloadCount, error) {
	parts := strings.Split(member, "\x1f")
	if len(parts) != 3 || len(member) > maxCountName {
		return nil, nil
	}
	var fields map[string]string
	err := r.do(ctx, "read downloads", func(ctx context.Context, c redis.Conn) error {
		var err error
		fields, err = redis.StringMap(redis.DoContext(c, ctx, "HGETALL", prefix+member))
		return err
	})
	if err != nil && !errors.Is(err, redis.ErrNil) {
		return nil, err
	}
	var out []DownloadCount
	for f, v := range fields {
		client, ok := strings.CutPrefix(f, "n:")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		ms, _ := strconv.ParseInt(fields["t:"+client], 10, 64)
		out = append(out, DownloadCount{Kind: parts[0], Address: parts[1], Version: parts[2], Client: client, Count: n, Last: time.UnixMilli(ms).UTC()})
	}
	return out, nil
}
