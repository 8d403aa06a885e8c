package sharedstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// A Board is a set of records, one per member (a replica), that every
// member reads whole: each publishes its own and gathers everyone's.
// Members that stop publishing drop off after their record's lifetime.
// The page's record of what the fleet served lives on one
// (protocol/proxy/page, seen_fleet.go).
type Board interface {
	// Publish puts val as member's record on the board for ttl.
	Publish(ctx context.Context, board, member string, val []byte, ttl time.Duration) error
	// Gather reads the records of the board's members that published
	// within ttl, at most MaxBoardMembers of them, the newest.
	Gather(ctx context.Context, board string, ttl time.Duration) (map[string][]byte, error)
}

// Bounds of a board: its members, a member's name. A record is at most
// maxRecord bytes, so a board holds at most MaxBoardMembers × 64 KiB.
const (
	MaxBoardMembers = 32
	maxMemberName   = 64
)

// publishScript sets a member's record and notes it in the board's set
// of members, scored by the time of publication; members older than ttl
// and the oldest beyond the bound leave the set, which expires with its
// longest-lived member. KEYS: the set, the record; ARGV: member, record, ttl (ms),
// now (ms), bound.
var publishScript = redis.NewScript(2, `
redis.call("set", KEYS[2], ARGV[2], "px", ARGV[3])
redis.call("zadd", KEYS[1], ARGV[4], ARGV[1])
redis.call("zremrangebyscore", KEYS[1], "-inf", "(" .. (tonumber(ARGV[4]) - tonumber(ARGV[3])))
redis.call("zremrangebyrank", KEYS[1], 0, -(tonumber(ARGV[5]) + 1))
if redis.call("pttl", KEYS[1]) < tonumber(ARGV[3]) then redis.call("pexpire", KEYS[1], ARGV[3]) end
return 1`)

// gatherScript returns member, record, member, record, … for the
// newest members that published within ttl, skipping records that are
// gone or larger than the bound. Records are found by name from the set
// (a single Redis: Cluster is not supported). KEYS: the set; ARGV: now
// (ms), ttl (ms), the records' key prefix, members bound, record bound.
var gatherScript = redis.NewScript(1, `
local ids = redis.call("zrevrangebyscore", KEYS[1], "+inf", tonumber(ARGV[1]) - tonumber(ARGV[2]), "limit", 0, tonumber(ARGV[4]))
local out = {}
for _, id in ipairs(ids) do
  local k = ARGV[3] .. id
  local n = redis.call("strlen", k)
  if n > 0 and n <= tonumber(ARGV[5]) then
    table.insert(out, id)
    table.insert(out, redis.call("get", k))
  end
end
return out`)

// boardKeys are the keys of a board's member set and of its records.
func (r *Redis) boardKeys(board string) (set, recordPrefix string) {
	return r.opts.Prefix + "board:" + board, r.opts.Prefix + "board:" + board + ":"
}

// Publish puts val as member's record on the board for ttl.
func (r *Redis) Publish(ctx context.Context, board, member string, val []byte, ttl time.Duration) error {
	if len(val) > maxRecord || len(member) == 0 || len(member) > maxMemberName {
		return errors.New("shared state: board record or member name out of bounds")
	}
	set, prefix := r.boardKeys(board)
	return r.do(ctx, "publish", func(ctx context.Context, c redis.Conn) error {
		_, err := publishScript.DoContext(ctx, c, set, prefix+member, member, val, ttl.Milliseconds(), time.Now().UnixMilli(), MaxBoardMembers)
		return err
	})
}

// Gather reads the records of the board's members that published
// within ttl. What Redis answers is checked against the bounds again:
// nothing read is trusted beyond its shape.
func (r *Redis) Gather(ctx context.Context, board string, ttl time.Duration) (map[string][]byte, error) {
	set, prefix := r.boardKeys(board)
	var reply [][]byte
	err := r.do(ctx, "gather", func(ctx context.Context, c redis.Conn) error {
		var err error
		reply, err = redis.ByteSlices(gatherScript.DoContext(ctx, c, set, time.Now().UnixMilli(), ttl.Milliseconds(), prefix, MaxBoardMembers, maxRecord))
		return err
	})
	if errors.Is(err, redis.ErrNil) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, err
	}
	return boardRecords(reply)
}

// boardRecords reads member, record pairs, within the bounds.
func boardRecords(reply [][]byte) (map[string][]byte, error) {
	if len(reply)%2 != 0 || len(reply) > 2*MaxBoardMembers {
		return nil, fmt.Errorf("shared state: a board answer of %d items", len(reply))
	}
	out := make(map[string][]byte, len(reply)/2)
	for i := 0; i < len(reply); i += 2 {
		member, val := reply[i], reply[i+1]
		if len(member) == 0 || len(member) > maxMemberName || len(val) > maxRecord {
			continue
		}
		out[string(member)] = val
	}
	return out, nil
}
