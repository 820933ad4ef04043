// Package serveapi is the HTTP side of `sentinel-top serve`: the routes
// beside the re-served stream, over one collector's published snapshot.
//
//	/metrics          the collector's metrics, then serve's own and the
//	                  process's, in the Prometheus text format (gzipped
//	                  when asked)
//	/sentinel/stream  the wsstream.Server given
//	/report           the findings (findings-v1 JSON; ?format=md or text)
//	/healthz          200 while serving, 503 once the recording failed
//
// Every route but /healthz is behind the bearer token when one is given,
// compared in constant time. A render holds a buffer (and, gzipped, a
// compressor of about 1 MiB) until its response is written, so renders
// are bounded: at most MaxMetricsRenders and MaxReportRenders in flight
// (more get 503 and are counted), a client must take each piece of a
// response within RenderStall, and a /report page is charged to the
// collector's memory budget while it is held.
package serveapi
