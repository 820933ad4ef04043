package core

import (
	"errors"
	"fmt"
)

// ErrBlocked is matched (errors.Is) by every error that blocks an entry.
var ErrBlocked = errors.New("blocked")

// ErrOpen is matched by errors from an entry blocked by a circuit breaker.
var ErrOpen = errors.New("circuit breaker open")

// ErrFlow is matched by errors from an entry blocked by flow control.
var ErrFlow = errors.New("flow limit exceeded")

// ErrHotParam is matched by errors from an entry blocked by a hot-parameter
// rule.
var ErrHotParam = errors.New("hot parameter limit exceeded")

// BlockCause says which kind of rule blocked an entry.
type BlockCause uint8

// The block causes.
const (
	BlockedByFlow BlockCause = iota + 1
	BlockedByBreaker
	BlockedByHotParam
)

func (c BlockCause) String() string {
	switch c {
	case BlockedByFlow:
		return "flow"
	case BlockedByBreaker:
		return "breaker"
	case BlockedByHotParam:
		return "hot-param"
	}
	return "unknown"
}

// BlockError is returned by Guard.Entry when a rule blocks the entry. Each
// breaker and flow controller owns one, so blocking does not allocate: treat
// it as read-only.
type BlockError struct {
	Resource string
	Cause    BlockCause
	Breaker  *BreakerRule  // set when Cause is BlockedByBreaker
	Flow     *FlowRule     // set when Cause is BlockedByFlow
	HotParam *HotParamRule // set when Cause is BlockedByHotParam
}

func (e *BlockError) Error() string {
	switch e.Cause {
	case BlockedByBreaker:
		id := ""
		if e.Breaker.ID != "" {
			id = " " + e.Breaker.ID
		}
		return fmt.Sprintf("%s: blocked by %s circuit breaker%s", e.Resource, e.Breaker.Strategy, id)
	case BlockedByFlow:
		return fmt.Sprintf("%s: blocked by flow rule (%s, %s, threshold %g)", e.Resource,
			e.Flow.TokenCalculateStrategy, e.Flow.ControlBehavior, e.Flow.Threshold)
	case BlockedByHotParam:
		return e.Resource + ": blocked by " + e.HotParam.describe()
	}
	return e.Resource + ": blocked"
}

// Is matches ErrBlocked, and ErrOpen, ErrFlow or ErrHotParam by cause.
func (e *BlockError) Is(target error) bool {
	switch target {
	case ErrBlocked:
		return true
	case ErrOpen:
		return e.Cause == BlockedByBreaker
	case ErrFlow:
		return e.Cause == BlockedByFlow
	case ErrHotParam:
		return e.Cause == BlockedByHotParam
	}
	return false
}
