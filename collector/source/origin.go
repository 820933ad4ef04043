package source

import (
	"strings"

	"github.com/sentinel-top/sentinel-top/collector/feed"
	"github.com/sentinel-top/sentinel-top/collector/metriclog"
)

// javaOrigin is what the Java poller states of the services it polls: it
// stamps their messages itself, and they report no breaker transitions.
func javaOrigin() feed.Origin {
	return feed.Origin{Polled: true, StatesUnknown: true, SlowUnknown: true}
}

// OriginOf is what a hello's sdk tells of its sender, for a source reading
// hellos another wrote: a recording, a re-served stream, a simulated
// fleet. Java Sentinel's, as the Java poller names it ("java-sentinel",
// "java-sentinel/1.8.9"), was polled and reports no transitions, and so
// is the Prometheus source's (PromSDK/FAMILY: its transitions are inferred
// from counters, and it reads no response times); a metric log's
// (metriclog.SDK) reports none either; any other is an agent's, the zero
// Origin. Of these, only an agent and the Prometheus source's sentinel-top
// family count slow calls.
func OriginOf(sdk string) feed.Origin {
	switch {
	case sdk == PromSDK+"/"+promFamilyTop:
		// The sentinel-top family counts slow calls (its slow_total); it
		// reads counts alone, through the server.
		return feed.Origin{Polled: true, StatesUnknown: true, RTUnknown: true, Relayed: true}
	case sdk == PromSDK || strings.HasPrefix(sdk, PromSDK+"/"):
		o := javaOrigin()
		o.RTUnknown = true // it reads counts alone
		o.Relayed = true   // through the server: its outage hides them
		return o
	case strings.HasPrefix(sdk, javaSDK):
		return javaOrigin()
	case sdk == metriclog.SDK:
		return feed.Origin{StatesUnknown: true, SlowUnknown: true}
	}
	return feed.Origin{}
}
