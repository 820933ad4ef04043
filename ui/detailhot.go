// The detail screen's hot parameters: a resource's hot-parameter rules and
// its hottest values, each with its rates and the rule that limits it.

package ui

import (
	"strconv"
	"strings"

	"github.com/sentinel-top/sentinel-top/collector"
	"github.com/sentinel-top/sentinel-top/core"
	"github.com/sentinel-top/sentinel-top/core/wire"
)

// hasHot reports whether the detail has hot parameters to show.
func hasHot(d *collector.Detail) bool { return len(d.HotRules) > 0 || len(d.Hot) > 0 }

// hot adds the HOT PARAMETERS section: the rules most instances have, then
// a table of the hottest values (text sanitized), their pass and block per
// second over the rate window, and the rule that limits each with its
// limit for the value. A source that cannot count values says so instead
// of showing none.
func (v *detailView) hot(add func(string)) {
	d, st := v.d, v.st
	add(st.title.on("HOT PARAMETERS"))
	for i := range d.HotRules {
		add("  " + cut("rule "+strconv.Itoa(i+1)+"  "+hotRuleText(&d.HotRules[i]), max(10, v.width-2)))
	}
	if d.HotUnknown != "" {
		add("  " + st.dim.on(cut("hot values: unknown for "+sanitize(d.HotUnknown)+" (it does not count entries by value)", max(10, v.width-2))))
	}
	if len(d.Hot) == 0 {
		if d.HotUnknown == "" {
			add("  " + st.dim.on("no entry with these parameters in the last seconds"))
		}
		return
	}
	const numW = 8
	valW := 5
	for i := range d.Hot {
		valW = max(valW, width(sanitize(d.Hot[i].Value)))
	}
	valW = min(valW, max(8, v.width/3))
	restW := max(8, v.width-2-valW-2*(numW+1)-2)
	var head strings.Builder
	head.WriteString("  ")
	padRight(&head, "VALUE", valW)
	padLeft(&head, "PASS/S", numW+1)
	padLeft(&head, "BLOCK/S", numW+1)
	head.WriteString("  LIMITED BY")
	add(st.dim.on(head.String()))
	for i := range d.Hot {
		h := &d.Hot[i]
		var b strings.Builder
		b.WriteString("  ")
		padRight(&b, safeName(h.Value, valW), valW)
		padLeft(&b, fmtRate(h.PassQPS), numW+1)
		padLeft(&b, fmtRate(h.BlockQPS), numW+1)
		b.WriteString("  ")
		b.WriteString(cut(hotLimitText(d, h), restW))
		line := b.String()
		switch {
		case h.Value == wire.HotOther:
			line = st.dim.on(line)
		case h.BlockQPS > 0:
			line = st.warn.on(line)
		}
		add(line)
	}
}

// hotLimitText names the rule limiting a value and its limit for it.
func hotLimitText(d *collector.Detail, h *collector.HotValue) string {
	if h.Rule < 0 || h.Rule >= len(d.HotRules) {
		return "no rule reads param " + strconv.FormatInt(h.Param, 10)
	}
	r := &d.HotRules[h.Rule]
	s := "rule " + strconv.Itoa(h.Rule+1) + ": " + hotLimit(r, h.Limit)
	if h.Specific {
		s += " (its own item)"
	}
	return s
}

// hotLimit is a limit of rule r as text: per period or in flight.
func hotLimit(r *core.HotParamRule, limit int64) string {
	if r.MetricType == core.HotParamQPS {
		return strconv.FormatInt(limit, 10) + "/" + strconv.FormatInt(r.DurationInSec, 10) + "s"
	}
	return strconv.FormatInt(limit, 10) + " in flight"
}

// hotRuleText renders a hot-parameter rule on one line.
func hotRuleText(r *core.HotParamRule) string {
	var b strings.Builder
	b.WriteString("hot ")
	if r.ParamKey != "" {
		b.WriteString("key " + safeName(r.ParamKey, 24))
		if r.ParamIndex != 0 {
			b.WriteString(" else ")
		}
	}
	if r.ParamKey == "" || r.ParamIndex != 0 {
		b.WriteString("param " + strconv.Itoa(r.ParamIndex))
	}
	b.WriteString(" " + r.MetricType.String() + " " + hotLimit(r, r.Threshold) + " per value")
	if r.MetricType == core.HotParamQPS {
		b.WriteString(" " + r.ControlBehavior.String())
		if r.ControlBehavior == core.Throttling {
			b.WriteString(" queue " + fmtMs(r.MaxQueueingTimeMs))
		} else if r.BurstCount > 0 {
			b.WriteString(" burst " + strconv.FormatInt(r.BurstCount, 10))
		}
	}
	if n := len(r.SpecificItems); n > 0 {
		b.WriteString(" · " + strconv.Itoa(n) + " " + plural(n, "item", "items") + " of their own")
	}
	if r.ID != "" {
		b.WriteString(" id " + safeName(r.ID, 16))
	}
	if r.Pattern != "" {
		b.WriteString(" regex " + safeName(r.Pattern, 40))
	}
	return b.String()
}
