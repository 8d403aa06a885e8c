package sharedstate

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The fleet's usage of an address, for a provider's catalogue page: the
// download counts (downloads.go) say how often each client downloaded a
// version, not when, so countScript also adds, per address, the
// downloads of each day (a hash of day number to count; once it holds
// more than usageDaysKept days, those usageDays or more before its newest
// are dropped) and
// each client's last download (a hash of client to Unix ms, at most
// maxUsageClients clients). Both expire usageTTL seconds after their
// last download. The same two hashes are kept per version (within the
// bound of MaxDownloadVersions versions). A count is dated by the last
// download it adds (a replica adds its counts every few seconds).

// Bounds of the usage counts, as the script's text writes them.
const (
	usageDays       = "30"
	usageDaysKept   = "40"
	usageTTL        = "2764800" // 32 days
	maxUsageClients = "256"     // HGETALL answers 512 items: within the replies' bound
)

// AddressUsage is the fleet's downloads of an address: in the last 7
// and 30 days (by UTC day, today included), the clients whose last
// download was in the last 30 days, and More when the clients were
// more than those kept (at least Clients).
type AddressUsage struct {
	Week, Month int64
	Clients     int
	More        bool
}

// Usage reads the fleet's usage of address (of kind) as of now.
func (r *Redis) Usage(ctx context.Context, kind, address string, now time.Time) (AddressUsage, error) {
	return r.usage(ctx, kind+"\x1f"+address, now)
}

// VersionUsage reads the fleet's usage of one version of address (of
// kind) as of now: counted since replicas count versions' usage (none
// before).
func (r *Redis) VersionUsage(ctx context.Context, kind, address, version string, now time.Time) (AddressUsage, error) {
	return r.usage(ctx, downloadMember(kind, address, version), now)
}

// usage reads the usage hashes of key (an address, or a version's
// member) as of now.
func (r *Redis) usage(ctx context.Context, key string, now time.Time) (AddressUsage, error) {
	_, prefix := r.downloadKeys()
	var days, clients map[string]string
	err := r.do(ctx, "read usage", func(ctx context.Context, c redis.Conn) error {
		var err error
		if days, err = redis.StringMap(redis.DoContext(c, ctx, "HGETALL", prefix+"usage:days:"+key)); err != nil {
			return err
		}
		clients, err = redis.StringMap(redis.DoContext(c, ctx, "HGETALL", prefix+"usage:clients:"+key))
		return err
	})
	if err != nil && !errors.Is(err, redis.ErrNil) {
		return AddressUsage{}, err
	}
	return usageOf(days, clients, now), nil
}

// usageOf sums the usage hashes up as of now; a field that is not what
// the script writes is skipped.
func usageOf(days, clients map[string]string, now time.Time) AddressUsage {
	var u AddressUsage
	today := now.UnixMilli() / 86400000
	for f, v := range days {
		day, err1 := strconv.ParseInt(f, 10, 64)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil || n <= 0 || day > today {
			continue
		}
		if day > today-7 {
			u.Week += n
		}
		if day > today-30 {
			u.Month += n
		}
	}
	since := now.Add(-30 * 24 * time.Hour).UnixMilli()
	for _, v := range clients {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= since {
			u.Clients++
		}
	}
	max, _ := strconv.Atoi(maxUsageClients)
	u.More = len(clients) >= max
	return u
}
