package wire

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sentinel-top/sentinel-top/core"
)

// This file is the hand-written fast path for buckets messages. It reads
// JSON exactly as encoding/json does into the equivalent structs (field
// names matched exactly first, then case-insensitively; null leaves a field
// at its zero value; the same number grammar, string escapes and nesting
// limit), so that both decoders accept the same messages with the same
// values; the fuzz target FuzzDecode checks it. Messages of other kinds are
// recognised here and handed to encoding/json.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// strPlain marks the bytes a JSON string may hold unescaped, below 0x80.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func peek(data []byte, i int) byte {
	if i < len(data) {
		return data[i]
	}
	return 0
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// syntaxErr reports bad JSON at data[i].
func syntaxErr(data []byte, i int, context string) *DecodeError {
	if i >= len(data) {
		return errorf(ErrMalformed, "", "", "unexpected end of JSON input")
	}
	c := data[i]
	var ch string
	if c >= 0x20 && c < 0x7f {
		ch = fmt.Sprintf("%q", rune(c))
	} else {
		ch = fmt.Sprintf("0x%02x", c)
	}
	return errorf(ErrMalformed, "", "", fmt.Sprintf("invalid character %s %s at offset %d", ch, context, i))
}

// scanString scans the string starting at data[i] == '"'. It returns the
// bounds of its raw content, whether it holds escapes, and the index after
// the closing quote. Invalid UTF-8 is an error.
func scanString(data []byte, i int) (start, end int, esc bool, next int, err *DecodeError) {
	i++
	start = i
	for i < len(data) {
		c := data[i]
		if strPlain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			return start, i, esc, i + 1, nil
		case c == '\\':
			esc = true
			switch peek(data, i+1) {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if !isHex(peek(data, j)) {
						return 0, 0, false, 0, syntaxErr(data, j, "in \\u hexadecimal character escape")
					}
				}
				i += 6
			default:
				return 0, 0, false, 0, syntaxErr(data, i+1, "in string escape code")
			}
		case c < 0x20:
			return 0, 0, false, 0, syntaxErr(data, i, "in string literal")
		default: // multi-byte UTF-8
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, 0, false, 0, errorf(ErrMalformed, "", "", fmt.Sprintf("invalid UTF-8 in string at offset %d", i))
			}
			i += size
		}
	}
	return 0, 0, false, 0, syntaxErr(data, i, "")
}

func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// unescape appends the value of a scanned string's raw content s to dst,
// exactly as encoding/json decodes it: a lone surrogate becomes U+FFFD.
func unescape(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			j := bytes.IndexByte(s[i:], '\\')
			if j < 0 {
				return append(dst, s[i:]...)
			}
			dst = append(dst, s[i:i+j]...)
			i += j
			continue
		}
		switch c := s[i+1]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := getu4(s[i:])
			i += 6
			if utf16.IsSurrogate(r) {
				if dec := utf16.DecodeRune(r, getu4(s[i:])); dec != unicode.ReplacementChar {
					dst = utf8.AppendRune(dst, dec)
					i += 6
					continue
				}
				r = unicode.ReplacementChar
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
		i += 2
	}
	return dst
}

// scanNumber scans the JSON number at data[i] (a '-' or a digit). It
// returns the index after it and, when the number is an integer literal
// that fits an int64, its value with isInt set, as strconv.ParseInt (and so
// encoding/json) would read it.
func scanNumber(data []byte, i int) (next int, v int64, isInt bool, err *DecodeError) {
	neg := false
	if data[i] == '-' {
		neg = true
		i++
	}
	var u uint64
	overflow := false
	switch c := peek(data, i); {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		// 19 digits cannot overflow a uint64; past them each digit is checked.
		start := i
		for i < len(data) && i-start < 19 && isDigit(data[i]) {
			u = u*10 + uint64(data[i]-'0')
			i++
		}
		for i < len(data) && isDigit(data[i]) {
			d := uint64(data[i] - '0')
			if u > (math.MaxUint64-d)/10 {
				overflow = true
			} else {
				u = u*10 + d
			}
			i++
		}
	default:
		return 0, 0, false, syntaxErr(data, i, "in numeric literal")
	}
	isInt = true
	if peek(data, i) == '.' {
		i++
		if !isDigit(peek(data, i)) {
			return 0, 0, false, syntaxErr(data, i, "after decimal point in numeric literal")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
		isInt = false
	}
	if c := peek(data, i); c == 'e' || c == 'E' {
		i++
		if c := peek(data, i); c == '+' || c == '-' {
			i++
		}
		if !isDigit(peek(data, i)) {
			return 0, 0, false, syntaxErr(data, i, "in exponent of numeric literal")
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
		isInt = false
	}
	if !isInt || overflow {
		return i, 0, false, nil
	}
	if neg {
		if u > 1<<63 {
			return i, 0, false, nil
		}
		return i, int64(-u), true, nil //nolint:gosec // -u wraps to MinInt64 exactly when u == 1<<63
	}
	if u > math.MaxInt64 {
		return i, 0, false, nil
	}
	return i, int64(u), true, nil
}

func scanLiteral(data []byte, i int, lit string) (int, *DecodeError) {
	for j := 0; j < len(lit); j++ {
		if peek(data, i+j) != lit[j] {
			return 0, syntaxErr(data, i+j, "in literal "+lit)
		}
	}
	return i + len(lit), nil
}

// scanKey scans an object key at data[i] and the colon after it, returning
// the key's value (unescaped into d.key when needed) and the index of the
// value.
func (d *Decoder) scanKey(data []byte, i int) (key []byte, next int, err *DecodeError) {
	if peek(data, i) != '"' {
		return nil, 0, syntaxErr(data, i, "looking for beginning of object key string")
	}
	s, e, esc, i, err := scanString(data, i)
	if err != nil {
		return nil, 0, err
	}
	key = data[s:e]
	if esc {
		d.key = unescape(d.key[:0], key)
		key = d.key
	}
	i = skipWS(data, i)
	if peek(data, i) != ':' {
		return nil, 0, syntaxErr(data, i, "after object key")
	}
	return key, skipWS(data, i+1), nil
}

// skipValue scans the value at data[i] (whitespace allowed before it)
// without keeping it; depth is the number of containers around it.
func (d *Decoder) skipValue(data []byte, i, depth int) (int, *DecodeError) {
	stack := d.stack[:0]
	defer func() { d.stack = stack[:0] }()
	var err *DecodeError
	for {
		// A value starts at i.
		i = skipWS(data, i)
		closed := false
		switch c := peek(data, i); {
		case c == '{' || c == '[':
			if depth+len(stack)+1 > maxDepth {
				return 0, errorf(ErrMalformed, "", "", fmt.Sprintf("exceeded max depth at offset %d", i))
			}
			stack = append(stack, c)
			i = skipWS(data, i+1)
			if c == '{' {
				if peek(data, i) == '}' {
					stack = stack[:len(stack)-1]
					i++
					closed = true
				} else if _, i, err = d.scanKey(data, i); err != nil {
					return 0, err
				}
			} else if peek(data, i) == ']' {
				stack = stack[:len(stack)-1]
				i++
				closed = true
			}
			if !closed {
				continue // to the first member's value
			}
		case c == '"':
			if _, _, _, i, err = scanString(data, i); err != nil {
				return 0, err
			}
		case c == '-' || isDigit(c):
			if i, _, _, err = scanNumber(data, i); err != nil {
				return 0, err
			}
		case c == 't':
			if i, err = scanLiteral(data, i, "true"); err != nil {
				return 0, err
			}
		case c == 'f':
			if i, err = scanLiteral(data, i, "false"); err != nil {
				return 0, err
			}
		case c == 'n':
			if i, err = scanLiteral(data, i, "null"); err != nil {
				return 0, err
			}
		default:
			return 0, syntaxErr(data, i, "looking for beginning of value")
		}
		// A value ended at i: close containers until one has a next member.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			i = skipWS(data, i)
			top := stack[len(stack)-1]
			c := peek(data, i)
			if c == ',' {
				i = skipWS(data, i+1)
				if top == '{' {
					if _, i, err = d.scanKey(data, i); err != nil {
						return 0, err
					}
				}
				break
			}
			if top == '{' && c == '}' || top == '[' && c == ']' {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if top == '{' {
				return 0, syntaxErr(data, i, "after object key:value pair")
			}
			return 0, syntaxErr(data, i, "after array element")
		}
	}
}

// The outcome of reading a value into an integer field.
const (
	valInt  = iota // an integer that fits
	valNull        // null: the field keeps its zero value
	valBad         // any other JSON value: a type error
)

// smallInt reads the integer at data[i] when it is what the encoder writes
// for a count: 1 to 18 digits, no sign, no leading zero, and neither a
// fraction, an exponent nor more digits after them. ok false leaves
// anything else to scanNumber, which reads every JSON number.
func smallInt(data []byte, i int) (next int, v int64, ok bool) {
	end := min(len(data), i+18)
	j := i
	for ; j < end; j++ {
		c := data[j] - '0'
		if c > 9 {
			break
		}
		v = v*10 + int64(c)
	}
	switch {
	case j == i, data[i] == '0' && j > i+1:
		return i, 0, false
	case j < len(data):
		if c := data[j]; c == '.' || c == 'e' || c == 'E' || isDigit(c) {
			return i, 0, false
		}
	}
	return j, v, true
}

// readInt reads the value at data[i] for an integer field.
func (d *Decoder) readInt(data []byte, i, depth int) (next int, v int64, outcome int, err *DecodeError) {
	if next, v, ok := smallInt(data, i); ok {
		return next, v, valInt, nil
	}
	switch c := peek(data, i); {
	case c == '-' || isDigit(c):
		next, v, isInt, err := scanNumber(data, i)
		if err != nil {
			return 0, 0, 0, err
		}
		if !isInt {
			return next, 0, valBad, nil
		}
		return next, v, valInt, nil
	case c == 'n':
		next, err = scanLiteral(data, i, "null")
		return next, 0, valNull, err
	}
	next, err = d.skipValue(data, i, depth)
	return next, 0, valBad, err
}

// readIntInto reads an integer field's value at data[i] into dst; a value
// of another type (or null, which leaves dst alone) is deferred as an
// error naming the field (field is called only then).
func (d *Decoder) readIntInto(data []byte, i, depth int, dst *int64, field func() string) (int, *DecodeError) {
	if next, v, ok := smallInt(data, i); ok {
		*dst = v
		return next, nil
	}
	next, v, outcome, err := d.readInt(data, i, depth)
	if outcome == valInt {
		*dst = v
	} else if outcome == valBad && err == nil && d.deferred == nil {
		d.later(typeErr(data, i, field(), "an integer"))
	}
	return next, err
}

// firstTime marks field fld as given in seen and reports whether it was
// not given before.
func firstTime(seen *uint32, fld int) bool {
	if *seen&(1<<fld) != 0 {
		return false
	}
	*seen |= 1 << fld
	return true
}

// typeErr builds the error for a value of the wrong JSON type at data[i].
func typeErr(data []byte, i int, field, want string) *DecodeError {
	var got string
	switch c := peek(data, i); {
	case c == '"':
		got = "a string"
	case c == '{':
		got = "an object"
	case c == '[':
		got = "an array"
	case c == 't' || c == 'f':
		got = "a boolean"
	default:
		got = "a non-integer or out-of-range number"
	}
	return errorf(ErrMalformed, KindBuckets, field, "must be "+want+", not "+got)
}

// fold-matched field names of the fast path.
const (
	fV = iota
	fKind
	fTs
	fInstance
	fBucketMs
	fItems
	fDropped
	nTop
)

var topNames = [nTop][]byte{[]byte("v"), []byte("kind"), []byte("ts"), []byte("instance"),
	[]byte("bucketMs"), []byte("items"), []byte("dropped")}

func matchTop(key []byte) int {
	switch string(key) {
	case "v":
		return fV
	case "kind":
		return fKind
	case "ts":
		return fTs
	case "instance":
		return fInstance
	case "bucketMs":
		return fBucketMs
	case "items":
		return fItems
	case "dropped":
		return fDropped
	}
	return foldMatch(key, topNames[:])
}

const (
	iResource = iota
	iStart
	iPass
	iBlock
	iComplete
	iError
	iSlow
	iRtSum
	iRtMin
	iRtMax
	iConcurrency
	iRtHist
	iHot
	nItem
)

var itemNames = [nItem][]byte{[]byte("resource"), []byte("start"), []byte("pass"), []byte("block"),
	[]byte("complete"), []byte("error"), []byte("slow"), []byte("rtSum"), []byte("rtMin"),
	[]byte("rtMax"), []byte("concurrency"), []byte("rtHist"), []byte("hot")}

// itemKeys are the item's keys as the encoder writes them, quoted and with
// their colon: readItem tries the one that follows the key before, in the
// encoder's order, ahead of a full key scan.
var itemKeys = func() (k [nItem][]byte) {
	for f, n := range itemNames {
		k[f] = []byte(`"` + string(n) + `":`)
	}
	return k
}()

// nextItemKey reports whether data[i:] starts with the key of field f as
// the encoder writes it, and the index after its colon.
func nextItemKey(data []byte, i, f int) (int, bool) {
	if f >= nItem || !itemWordKeys[f].at(data, i) {
		return i, false
	}
	return i + len(itemKeys[f]), true
}

func matchItem(key []byte) int {
	switch string(key) {
	case "resource":
		return iResource
	case "start":
		return iStart
	case "pass":
		return iPass
	case "block":
		return iBlock
	case "complete":
		return iComplete
	case "error":
		return iError
	case "slow":
		return iSlow
	case "rtSum":
		return iRtSum
	case "rtMin":
		return iRtMin
	case "rtMax":
		return iRtMax
	case "concurrency":
		return iConcurrency
	case "rtHist":
		return iRtHist
	case "hot":
		return iHot
	}
	return foldMatch(key, itemNames[:])
}

// matchExact finds key among names as encoding/json does: exactly, else
// by foldMatch.
func matchExact(key []byte, names [][]byte) int {
	for f, n := range names {
		if string(key) == string(n) {
			return f
		}
	}
	return foldMatch(key, names)
}

// foldMatch is encoding/json's fallback: a key that matches no field
// exactly matches one that is equal under Unicode case folding.
func foldMatch(key []byte, names [][]byte) int {
	for f, name := range names {
		if bytes.EqualFold(key, name) {
			return f
		}
	}
	return -1
}

func (it *BucketItem) intField(f int) *int64 {
	switch f {
	case iStart:
		return &it.Start
	case iPass:
		return &it.Pass
	case iBlock:
		return &it.Block
	case iComplete:
		return &it.Complete
	case iError:
		return &it.Error
	case iSlow:
		return &it.Slow
	case iRtSum:
		return &it.RtSum
	case iRtMin:
		return &it.RtMin
	case iRtMax:
		return &it.RtMax
	case iConcurrency:
		return &it.Concurrency
	}
	return nil
}

// later records the first error that does not stop the scan (a type error,
// a repeated field, a limit), so that a syntax error, the version and the
// kind, wherever they are in the frame, take precedence over it, as with
// encoding/json.
func (d *Decoder) later(err *DecodeError) {
	if d.deferred == nil {
		d.deferred = err
	}
}

// frame is what the fast path read of a frame's top level.
type frame struct {
	seen      uint32
	v         int // stAbsent, stOK (the integer 1) or stBad
	vText     []byte
	kind      []byte
	kindState int // stAbsent, stOK (a string) or stBad
	tsSet     bool
	instSet   bool
	// state: the fields after the common ones are read as a state
	// message's; other: a field besides the common ones came before.
	state, other bool
}

// The states of a required top-level field.
const (
	stAbsent = iota // missing or null
	stOK
	stBad
)

// decodeFast reads a frame. Buckets and state messages it reads itself;
// for the other kinds, and a state message with anything it leaves to
// encoding/json (see state.go), it returns fallback, and the caller
// decodes the frame with encoding/json. asState reads the fields after the
// common ones as a state message's from the start: the second reading of
// a state message whose kind came after one of them.
func (d *Decoder) decodeFast(data []byte, asState bool) (m Message, fallback bool, err *DecodeError) {
	d.deferred = nil
	if d.sc == nil {
		d.sc = &d.own
	}
	b := &d.sc.b
	*b = Buckets{Items: b.Items[:0]}
	d.sc.hots = d.sc.hots[:0]
	st := &d.st
	*st = stateFrame{}
	f := frame{state: asState}
	i := skipWS(data, 0)
	if peek(data, i) != '{' {
		if i >= len(data) {
			return nil, false, errorf(ErrMalformed, "", "", "empty message")
		}
		if err := d.notObject(data, i); err != nil {
			return nil, false, err
		}
		return nil, false, errorf(ErrMalformed, "", "", "not a JSON object")
	}
	i = skipWS(data, i+1)
	if peek(data, i) == '}' {
		i++
	} else {
		for {
			var key []byte
			if key, i, err = d.scanKey(data, i); err != nil {
				return nil, false, err
			}
			var fld int
			if f.state {
				fld = matchState(key)
			} else {
				fld = matchTop(key)
			}
			if fld >= 0 && !firstTime(&f.seen, fld) {
				if fld <= fInstance {
					// Known in every kind: repeated, it is malformed whatever the kind.
					return nil, false, errorf(ErrMalformed, "", topName(fld), "given more than once")
				}
				if f.state {
					st.odd = true
				} else {
					d.later(errorf(ErrMalformed, "", topName(fld), "given more than once"))
				}
				fld = -1
			}
			if f.state && (fld < 0 || fld > fInstance) {
				i, err = d.stateValue(data, i, fld, st)
			} else {
				f.other = f.other || fld < 0 || fld > fInstance
				i, err = d.topValue(data, i, fld, &f)
			}
			if err != nil {
				return nil, false, err
			}
			if fld == fKind && !f.other && !d.general && string(f.kind) == string(KindState) {
				f.state = true // only common fields so far: the rest is read as state
			}
			i = skipWS(data, i)
			if c := peek(data, i); c == ',' {
				i = skipWS(data, i+1)
				continue
			} else if c == '}' {
				i++
				break
			}
			return nil, false, syntaxErr(data, i, "after object key:value pair")
		}
	}
	if i = skipWS(data, i); i < len(data) {
		return nil, false, syntaxErr(data, i, "after top-level value")
	}

	switch f.v {
	case stAbsent:
		return nil, false, errorf(ErrMalformed, "", "v", "missing")
	case stBad:
		return nil, false, errorf(ErrVersion, "", "v", fmt.Sprintf("is %s, want %d", clipRaw(f.vText), Version))
	}
	switch f.kindState {
	case stAbsent:
		return nil, false, errorf(ErrMalformed, "", "kind", "missing")
	case stBad:
		return nil, false, errorf(ErrMalformed, "", "kind", "must be a string")
	}
	switch string(f.kind) {
	case string(KindBuckets):
	case string(KindState):
		switch {
		case d.general:
			return nil, true, nil
		case !f.state:
			return d.decodeFast(data, true)
		}
		return d.finishState(&f, st)
	case string(KindMeta), string(KindHello), string(KindRules), string(KindBye):
		return nil, true, nil
	default:
		return nil, false, errorf(ErrUnknownKind, "", "kind", quoteClip(string(f.kind)))
	}
	if err := d.deferred; err != nil {
		err.Kind = KindBuckets
		return nil, false, err
	}
	if !f.tsSet {
		return nil, false, errorf(ErrMalformed, KindBuckets, "ts", "missing")
	}
	if !f.instSet {
		return nil, false, errorf(ErrMalformed, KindBuckets, "instance", "missing")
	}
	if err := validateBuckets(b, d.lim); err != nil {
		return nil, false, err
	}
	return b, false, nil
}

// notObject returns the syntax error of a frame that is not an object, if
// it is not even valid JSON; encoding/json reports syntax first.
func (d *Decoder) notObject(data []byte, i int) *DecodeError {
	i, err := d.skipValue(data, i, 0)
	if err != nil {
		return err
	}
	if i = skipWS(data, i); i < len(data) {
		return syntaxErr(data, i, "after top-level value")
	}
	return nil
}

func topName(f int) string { return string(topNames[f]) }

func clipRaw(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}

// topValue reads the value of top-level field fld (-1: unknown) at data[i].
func (d *Decoder) topValue(data []byte, i, fld int, f *frame) (int, *DecodeError) {
	const depth = 1
	b := &d.sc.b
	switch fld {
	case fV:
		start := i
		next, v, outcome, err := d.readInt(data, i, depth)
		if err != nil {
			return 0, err
		}
		switch {
		case outcome == valNull:
			f.v = stAbsent
		case outcome == valInt && v == Version:
			f.v = stOK
		default:
			f.v = stBad
		}
		f.vText = data[start:next]
		return next, nil
	case fKind:
		switch peek(data, i) {
		case '"':
			s, e, esc, next, err := scanString(data, i)
			if err != nil {
				return 0, err
			}
			f.kind = data[s:e]
			if esc {
				d.kindBuf = unescape(d.kindBuf[:0], f.kind)
				f.kind = d.kindBuf
			}
			f.kindState = stOK
			return next, nil
		case 'n':
			f.kindState = stAbsent
			return scanLiteral(data, i, "null")
		}
		f.kindState = stBad
		return d.skipValue(data, i, depth)
	case fTs, fBucketMs, fDropped:
		next, v, outcome, err := d.readInt(data, i, depth)
		if err != nil {
			return 0, err
		}
		switch outcome {
		case valBad:
			d.later(typeErr(data, i, topName(fld), "an integer"))
		case valInt:
			switch fld {
			case fTs:
				b.Ts, f.tsSet = v, true
			case fBucketMs:
				b.BucketMs = v
			case fDropped:
				b.Dropped = v
			}
		case valNull:
			if fld == fTs {
				f.tsSet = false
			}
		}
		return next, nil
	case fInstance:
		switch peek(data, i) {
		case '"':
			// A connection's frames name the same instance: compare first.
			if next, ok := samePlain(data, i+1, d.instance); ok && !d.general {
				b.Instance, f.instSet = d.instance, true
				return next, nil
			}
			s, next, err := d.readName(data, i, "instance", -1)
			if err != nil {
				return 0, err
			}
			b.Instance, f.instSet = s, true
			d.instance = ""
			if isPlainString(s) {
				d.instance = s
			}
			return next, nil
		case 'n':
			f.instSet = false
			return scanLiteral(data, i, "null")
		}
		d.later(typeErr(data, i, "instance", "a string"))
		return d.skipValue(data, i, depth)
	case fItems:
		switch peek(data, i) {
		case '[':
			return d.readItems(data, i)
		case 'n':
			return scanLiteral(data, i, "null")
		}
		d.later(typeErr(data, i, "items", "an array"))
		return d.skipValue(data, i, depth)
	}
	return d.skipValue(data, i, depth)
}

// readName reads a string naming something (an instance, a resource),
// interning it. A name over the limit is reported, not copied.
func (d *Decoder) readName(data []byte, i int, field string, item int) (string, int, *DecodeError) {
	s, e, esc, next, err := scanString(data, i)
	if err != nil {
		return "", 0, err
	}
	raw := data[s:e]
	if esc {
		d.scratch = unescape(d.scratch[:0], raw)
		raw = d.scratch
	}
	if len(raw) > d.lim.MaxNameBytes {
		if d.deferred == nil {
			d.later(errorf(ErrNameTooLong, KindBuckets, fieldAt("items", item, field),
				fmt.Sprintf("%d bytes exceeds the limit of %d", len(raw), d.lim.MaxNameBytes)))
		}
		return "", next, nil
	}
	if item >= 0 {
		return d.names.internAt(raw, d.lim.InternNames, item), next, nil
	}
	return d.intern(raw), next, nil
}

// maxInternBytes bounds the memory a Decoder's interned names hold, so a
// peer sending long random names cannot grow it past a MiB.
const maxInternBytes = 1 << 20

// intern returns b as a string, without allocating when the Decoder has
// seen it recently.
func (d *Decoder) intern(b []byte) string { return d.names.intern(b, d.lim.InternNames) }

// interned is a bounded set of strings: at most n of them and
// maxInternBytes in all, emptied when full. With a pool, a string is
// taken from it first, and kept in m only when the pool has no room.
type interned struct {
	m     map[string]string
	bytes int
	// at is the string interned for each item index of the latest frames
	// (see internAt), each of them in m or the pool: emptied with m. A
	// name holding a quote, a backslash or a control byte is not kept
	// here ("").
	at   []string
	pool *NamePool
}

// internAt is intern for the name of item idx of a frame: a sender writes
// its items in the same order frame after frame, so the name the previous
// frame had at idx is compared first, without hashing.
func (t *interned) internAt(b []byte, n, idx int) string {
	if idx < len(t.at) && string(b) == t.at[idx] {
		return t.at[idx]
	}
	s := t.intern(b, n)
	if idx < n {
		for len(t.at) <= idx {
			t.at = append(t.at, "")
		}
		// Only a name that can be written as it is (see plainName) is
		// kept by index; another is found by hashing each time.
		t.at[idx] = ""
		if isPlainString(s) {
			t.at[idx] = s
		}
	}
	return s
}

func (t *interned) intern(b []byte, n int) string {
	if s, ok := t.m[string(b)]; ok {
		return s
	}
	if t.pool != nil {
		if s, ok := t.pool.Intern(b); ok {
			return s
		}
	}
	if t.m == nil {
		t.m = make(map[string]string)
	}
	if len(t.m) >= n || t.bytes+len(b) > maxInternBytes {
		clear(t.m)
		clear(t.at)
		t.at = t.at[:0]
		t.bytes = 0
	}
	s := string(b)
	t.m[s] = s
	t.bytes += len(s)
	return s
}

// readItems reads the items array at data[i] == '['.
func (d *Decoder) readItems(data []byte, i int) (int, *DecodeError) {
	const depth = 2 // the top-level object and this array
	b := &d.sc.b
	b.Items = b.Items[:0]
	var err *DecodeError
	i = skipWS(data, i+1)
	if peek(data, i) == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		c := peek(data, i)
		switch {
		case n >= d.lim.MaxItems:
			if d.deferred == nil {
				d.later(errorf(ErrTooLarge, KindBuckets, "items", fmt.Sprintf("more than %d items", d.lim.MaxItems)))
			}
			i, err = d.skipValue(data, i, depth)
		case c == '{':
			b.Items = append(b.Items, BucketItem{})
			i, err = d.readItem(data, i, len(b.Items)-1)
		case c == 'n':
			b.Items = append(b.Items, BucketItem{})
			i, err = scanLiteral(data, i, "null")
		default:
			if d.deferred == nil {
				d.later(typeErr(data, i, fieldAt("items", n, ""), "an object"))
			}
			b.Items = append(b.Items, BucketItem{})
			i, err = d.skipValue(data, i, depth)
		}
		if err != nil {
			return 0, err
		}
		var more bool
		if i, more, err = sep(data, i, ']', "after array element"); err != nil || !more {
			return i, err
		}
	}
}

// readItem reads the item object at data[i] == '{' into b.Items[idx].
func (d *Decoder) readItem(data []byte, i, idx int) (int, *DecodeError) {
	const depth = 3 // top-level object, items array, this object
	it := &d.sc.b.Items[idx]
	var err *DecodeError
	i = skipWS(data, i+1)
	if peek(data, i) == '}' {
		return i + 1, nil
	}
	// The encoder's shape first: most items are written by it.
	fld, seen := -1, uint32(0)
	if !d.general {
		var done bool
		if i, fld, seen, done = d.readPlainItem(data, i, idx); done {
			return i, nil
		}
	}
	for {
		// The encoder's order first, whatever the shape of the values.
		next, ok := nextItemKey(data, i, fld+1)
		if ok {
			fld, i = fld+1, skipWS(data, next)
		} else {
			var key []byte
			if key, i, err = d.scanKey(data, i); err != nil {
				return 0, err
			}
			fld = matchItem(key)
		}
		if fld >= 0 && !firstTime(&seen, fld) {
			if d.deferred == nil {
				d.later(errorf(ErrMalformed, KindBuckets, fieldAt("items", idx, string(itemNames[fld])), "given more than once"))
			}
			fld = -1
		}
		switch fld {
		case -1:
			i, err = d.skipValue(data, i, depth)
		case iResource:
			switch peek(data, i) {
			case '"':
				it.Resource, i, err = d.readName(data, i, "resource", idx)
			case 'n':
				i, err = scanLiteral(data, i, "null")
			default:
				if d.deferred == nil {
					d.later(typeErr(data, i, fieldAt("items", idx, "resource"), "a string"))
				}
				i, err = d.skipValue(data, i, depth)
			}
		case iRtHist:
			i, err = d.readHist(data, i, idx)
		case iHot:
			i, err = d.readHot(data, i, idx)
		default:
			i, err = d.readIntInto(data, i, depth, it.intField(fld), func() string {
				return fieldAt("items", idx, string(itemNames[fld]))
			})
		}
		if err != nil {
			return 0, err
		}
		var more bool
		if i, more, err = sep(data, i, '}', "after object key:value pair"); err != nil || !more {
			return i, err
		}
	}
}

// readHist reads an rtHist value at data[i] for b.Items[idx].
func (d *Decoder) readHist(data []byte, i, idx int) (int, *DecodeError) {
	const depth = 3
	it := &d.sc.b.Items[idx]
	switch peek(data, i) {
	case 'n':
		it.Hist, it.HasHist = [core.HistogramSlots]int64{}, false
		return scanLiteral(data, i, "null")
	case '[':
	default:
		if d.deferred == nil {
			d.later(typeErr(data, i, fieldAt("items", idx, "rtHist"), "an array of 14 integers"))
		}
		return d.skipValue(data, i, depth)
	}
	h := &it.Hist
	*h = [core.HistogramSlots]int64{}
	it.HasHist = true
	n := 0
	i = skipWS(data, i+1)
	if peek(data, i) == ']' {
		i++
	} else {
		for ; ; n++ {
			var err *DecodeError
			next, v, ok := smallInt(data, i)
			if ok {
				if n < len(h) {
					h[n] = v
				}
			} else if next, err = d.readHistInt(data, i, idx, n); err != nil {
				return 0, err
			}
			i = skipWS(data, next)
			if c := peek(data, i); c == ',' {
				i = skipWS(data, i+1)
				continue
			} else if c == ']' {
				i++
				n++
				break
			}
			return 0, syntaxErr(data, i, "after array element")
		}
	}
	if n != core.HistogramSlots && d.deferred == nil {
		d.later(errorf(ErrInvalid, KindBuckets, fieldAt("items", idx, "rtHist"),
			fmt.Sprintf("has %d counts, want %d", n, core.HistogramSlots)))
	}
	return i, nil
}

// readHistInt reads rtHist[n] at data[i] when smallInt did not: a number
// of another form, null, or a value of another type (deferred as an
// error).
func (d *Decoder) readHistInt(data []byte, i, idx, n int) (int, *DecodeError) {
	const depth = 4 // top-level object, items array, item, rtHist
	next, v, outcome, err := d.readInt(data, i, depth)
	if err != nil {
		return 0, err
	}
	switch {
	case outcome == valBad:
		if d.deferred == nil {
			d.later(typeErr(data, i, fieldAt("items", idx, fmt.Sprintf("rtHist[%d]", n)), "an integer"))
		}
	case outcome == valInt && n < core.HistogramSlots:
		d.sc.b.Items[idx].Hist[n] = v
	}
	return next, nil
}

// The fields of a hot item.
const (
	hParam = iota
	hValue
	hPass
	hBlock
	nHot
)

var hotNames = [nHot][]byte{[]byte("param"), []byte("value"), []byte("pass"), []byte("block")}

func matchHot(key []byte) int {
	switch string(key) {
	case "param":
		return hParam
	case "value":
		return hValue
	case "pass":
		return hPass
	case "block":
		return hBlock
	}
	return foldMatch(key, hotNames[:])
}

// readHot reads a hot value at data[i] for b.Items[idx]. The values are
// kept in the scratch's hots, which the next frame reuses; past maxHotItems they are
// read (for their syntax and types) but not kept.
func (d *Decoder) readHot(data []byte, i, idx int) (int, *DecodeError) {
	const depth = 3
	it := &d.sc.b.Items[idx]
	it.Hot = nil
	switch peek(data, i) {
	case 'n':
		return scanLiteral(data, i, "null")
	case '[':
	default:
		if d.deferred == nil {
			d.later(typeErr(data, i, fieldAt("items", idx, "hot"), "an array"))
		}
		return d.skipValue(data, i, depth)
	}
	first := len(d.sc.hots)
	i = skipWS(data, i+1)
	if peek(data, i) == ']' {
		return i + 1, nil // no values: nil, as from encoding/json's reading
	}
	var err *DecodeError
	for n := 0; ; n++ {
		var h HotItem
		switch peek(data, i) {
		case '{':
			i, err = d.readHotItem(data, i, idx, n, &h)
		case 'n':
			i, err = scanLiteral(data, i, "null")
		default:
			if d.deferred == nil {
				d.later(typeErr(data, i, fieldAt("items", idx, "hot["+strconv.Itoa(n)+"]"), "an object"))
			}
			i, err = d.skipValue(data, i, depth+1)
		}
		if err != nil {
			return 0, err
		}
		if n < maxHotItems {
			d.sc.hots = append(d.sc.hots, h)
		} else if d.deferred == nil {
			d.later(tooManyHot(idx))
		}
		var more bool
		if i, more, err = sep(data, i, ']', "after array element"); err != nil || !more {
			it.Hot = d.sc.hots[first:len(d.sc.hots):len(d.sc.hots)]
			return i, err
		}
	}
}

// readHotItem reads the hot item object at data[i] == '{' into h.
func (d *Decoder) readHotItem(data []byte, i, idx, n int, h *HotItem) (int, *DecodeError) {
	const depth = 5 // top-level object, items array, item, hot array, this object
	var err *DecodeError
	i = skipWS(data, i+1)
	if peek(data, i) == '}' {
		return i + 1, nil
	}
	var seen uint32
	for {
		var key []byte
		if key, i, err = d.scanKey(data, i); err != nil {
			return 0, err
		}
		fld := matchHot(key)
		if fld >= 0 && !firstTime(&seen, fld) {
			if d.deferred == nil {
				d.later(errorf(ErrMalformed, KindBuckets, hotField(idx, n, fld), "given more than once"))
			}
			fld = -1
		}
		switch fld {
		case -1:
			i, err = d.skipValue(data, i, depth)
		case hValue:
			switch peek(data, i) {
			case '"':
				i, err = d.readHotValue(data, i, idx, n, h)
			case 'n':
				i, err = scanLiteral(data, i, "null")
			default:
				if d.deferred == nil {
					d.later(typeErr(data, i, hotField(idx, n, fld), "a string"))
				}
				i, err = d.skipValue(data, i, depth)
			}
		default:
			i, err = d.readIntInto(data, i, depth, h.intField(fld), func() string { return hotField(idx, n, fld) })
		}
		if err != nil {
			return 0, err
		}
		var more bool
		if i, more, err = sep(data, i, '}', "after object key:value pair"); err != nil || !more {
			return i, err
		}
	}
}

// members walks the members of an object: i is at its '{', then at each
// member's value (which the caller reads, leaving i after it), then after
// its '}'; seen marks the fields given.
type members struct {
	i       int
	started bool
	seen    uint32
}

// member moves o to the next member's value and returns the index of its
// key among names, matched as encoding/json matches (-1: none), and
// whether that field was given before; at the object's end (or on a
// syntax error) ok is false.
func (d *Decoder) member(data []byte, o *members, names [][]byte) (fld int, repeated, ok bool, err *DecodeError) {
	i := o.i
	if !o.started {
		o.started = true
		if i = skipWS(data, i+1); peek(data, i) == '}' {
			o.i = i + 1
			return 0, false, false, nil
		}
	} else {
		var more bool
		if i, more, err = sep(data, i, '}', "after object key:value pair"); err != nil || !more {
			o.i = i
			return 0, false, false, err
		}
	}
	var key []byte
	if key, o.i, err = d.scanKey(data, i); err != nil {
		return 0, false, false, err
	}
	if fld = matchExact(key, names); fld >= 0 && !firstTime(&o.seen, fld) {
		return fld, true, true, nil
	}
	return fld, false, true, nil
}

// intField returns the counter of hot field f.
func (h *HotItem) intField(f int) *int64 {
	switch f {
	case hParam:
		return &h.Param
	case hPass:
		return &h.Pass
	}
	return &h.Block
}

// hotField names field fld of hot item n of item idx.
func hotField(idx, n, fld int) string {
	return fieldAt("items", idx, "hot["+strconv.Itoa(n)+"]."+string(hotNames[fld]))
}

// readHotValue reads a hot value's text, interning it apart from names (so
// a churn of values cannot evict the resource names). A value over
// MaxHotValueBytes is reported, not copied.
func (d *Decoder) readHotValue(data []byte, i, idx, n int, h *HotItem) (int, *DecodeError) {
	s, e, esc, next, err := scanString(data, i)
	if err != nil {
		return 0, err
	}
	raw := data[s:e]
	if esc {
		d.scratch = unescape(d.scratch[:0], raw)
		raw = d.scratch
	}
	if len(raw) > MaxHotValueBytes {
		if d.deferred == nil {
			d.later(hotValueTooLong(idx, n, len(raw)))
		}
		return next, nil
	}
	h.Value = d.values.intern(raw, d.lim.InternNames)
	return next, nil
}

// sep reads what follows a value inside an object or an array: a comma
// (more follows) or the closing byte. It returns the position after it.
func sep(data []byte, i int, closing byte, context string) (next int, more bool, err *DecodeError) {
	i = skipWS(data, i)
	switch peek(data, i) {
	case ',':
		return skipWS(data, i+1), true, nil
	case closing:
		return i + 1, false, nil
	}
	return 0, false, syntaxErr(data, i, context)
}
