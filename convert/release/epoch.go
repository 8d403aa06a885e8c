package release

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// SourceDateEpoch is $SOURCE_DATE_EPOCH as a time (zero when unset), the
// Options.SignTime of reproducible signatures.
func SourceDateEpoch() (time.Time, error) {
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		return time.Time{}, nil
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}
	return time.Unix(sec, 0), nil
}
