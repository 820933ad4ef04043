package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// backfillRecording is a real recording of three example services taken
// two minutes after they started: each target's hello, then the 60 s of
// buckets it held, older than the hello (see collector/source's tests).
const backfillRecording = "../../collector/source/testdata/backfill-recorded.ndjson.gz"

// TestReportAgreesWithDashboardOnBackfill: the dashboard's replay of a
// backfilled recording, at speed 1, names its apps and instances as the
// report does from its first seconds, and once sought to the end holds
// what the report holds: the same counts, the same totals per resource,
// the same findings.
func TestReportAgreesWithDashboardOnBackfill(t *testing.T) {
	code, out, stderr := runCmd(t, "report", "--replay", backfillRecording, "--format", "json")
	if code != exitOK {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Apps != 1 || rep.Instances != 3 {
		t.Fatalf("report: %d apps, %d instances", rep.Apps, rep.Instances)
	}

	// The dashboard's session, as `sentinel-top --replay FILE` opens it.
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var in inputFlags
	in.register(fs)
	if err := fs.Parse([]string{"--replay", backfillRecording}); err != nil {
		t.Fatal(err)
	}
	if err := in.validate(); err != nil {
		t.Fatal(err)
	}
	s, err := in.open(context.Background(), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	s.replay.Stay()
	ctx, cancel := context.WithCancel(context.Background())
	fed := make(chan error, 1)
	go func() { fed <- s.feed(ctx) }()
	defer func() { cancel(); <-fed }()

	from, to := s.replay.Range()
	deadline := time.Now().Add(3 * time.Second)
	for {
		snap := s.c.Publish()
		if snap.Apps == rep.Apps && snap.Instances == rep.Instances && snap.Messages > 0 {
			if at := snap.At - from; at > 3000 {
				t.Errorf("the instances showed at +%d ms", at)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3 s at speed 1: %d apps, %d instances, %d messages; the report has %d, %d",
				snap.Apps, snap.Instances, snap.Messages, rep.Apps, rep.Instances)
		}
		time.Sleep(20 * time.Millisecond)
	}

	s.replay.SeekBy(to - s.replay.Clock().UnixMilli())
	for deadline = time.Now().Add(10 * time.Second); !s.replay.Done(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the seek to the end did not finish")
		}
	}
	snap := s.c.Publish()
	if snap.Apps != rep.Apps || snap.Instances != rep.Instances || snap.Resources != rep.Resources || snap.Messages != rep.Messages {
		t.Errorf("dashboard %d apps, %d instances, %d resources, %d messages; report %d, %d, %d, %d",
			snap.Apps, snap.Instances, snap.Resources, snap.Messages, rep.Apps, rep.Instances, rep.Resources, rep.Messages)
	}
	if len(snap.Totals) != len(rep.ResourcesSeen) {
		t.Fatalf("dashboard totals of %d resources, report %d", len(snap.Totals), len(rep.ResourcesSeen))
	}
	for i, tot := range snap.Totals {
		r := rep.ResourcesSeen[i]
		if tot.App != r.App || tot.Resource != r.Resource || tot.Pass != r.Pass || tot.Block != r.Block ||
			tot.Complete != r.Complete || tot.Error != r.Error || tot.Slow != r.Slow {
			t.Errorf("dashboard %+v, report %+v", tot, r)
		}
	}
	var dash, reported []string
	for _, f := range snap.Findings {
		dash = append(dash, string(f.Kind)+" "+f.App+" "+f.Resource+" "+strings.Join(f.Instances, ","))
	}
	for _, f := range rep.Findings {
		reported = append(reported, f.Kind+" "+f.App+" "+f.Resource+" "+strings.Join(f.Instances, ","))
	}
	slices.Sort(dash)
	slices.Sort(reported)
	if !slices.Equal(dash, reported) {
		t.Errorf("findings:\ndashboard %q\nreport    %q", dash, reported)
	}
}
