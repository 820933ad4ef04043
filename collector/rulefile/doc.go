// Package rulefile reads rule sets written as JSON: Java Sentinel's
// degrade and flow rules, mapped to core's rules. collector/source maps
// the rules a Java service answers with it, so that there is one mapping.
package rulefile
