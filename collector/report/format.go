package report

import (
	"errors"
	"fmt"
	"io"
)

// ErrFormat is Renderer's and WhatIfRenderer's error, after the format
// they were given.
var ErrFormat = errors.New("want text, md or json")

// Renderer is the renderer of a report format: "text" (Text), "md" or
// "markdown" (Markdown), or "json" (JSON).
func Renderer(format string) (func(io.Writer, *Report) error, error) {
	return pick(format, Text, Markdown, JSON)
}

// WhatIfRenderer is the renderer of a whatif report in a format, named as
// Renderer's: WhatIfText, WhatIfMarkdown or WhatIfJSON.
func WhatIfRenderer(format string) (func(io.Writer, *WhatIf) error, error) {
	return pick(format, WhatIfText, WhatIfMarkdown, WhatIfJSON)
}

// pick is the one of text, md and json a format names.
func pick[R any](format string, text, md, json R) (R, error) {
	switch format {
	case "text":
		return text, nil
	case "md", "markdown":
		return md, nil
	case "json":
		return json, nil
	}
	var none R
	return none, fmt.Errorf("%q: %w", format, ErrFormat)
}
