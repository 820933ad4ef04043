package ui_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/collector/source"
	"github.com/sentinel-top/sentinel-top/fixtures"
	"github.com/sentinel-top/sentinel-top/ui"
)

// A dashboard over a replayed fixture: the collector is the UI's Source.
// In the binary ui.Run shows it on the terminal; here one frame is printed.
func ExampleNew() {
	f, err := fixtures.Open("sawtooth-db-slow")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	r, err := source.NewReplay("sawtooth-db-slow", f, 0, source.ReplayOptions{})
	if err != nil {
		panic(err)
	}
	c := collector.New(collector.Options{Clock: r.Clock(), Mode: collector.ModeReplay, Source: "sawtooth-db-slow"})
	if err := r.Start(c); err != nil {
		panic(err)
	}
	_ = r.Run(context.Background()) // at speed 0 it returns at the end
	c.Publish()

	m := ui.New(c, ui.Options{NoColor: true, Location: time.UTC})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	frame := strings.Split(m.View(), "\n")
	fmt.Println(frame[0])
	for _, line := range frame {
		if strings.HasPrefix(line, "ALERTS") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// sentinel-top  replay sawtooth-db-slow     REPLAY done 4m/4m   00:04:00  range 5m
	// ALERTS  0 critical  1 warning  0 info
}
