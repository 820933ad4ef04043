package main

import (
	"context"

	"github.com/sentinel-top/sentinel-top/collector"
)

func (f *inputFlags) openDemo(ctx context.Context, s *session, opts collector.Options) (*session, error) {
	return nil, usagef("--demo is not available in this build")
}
