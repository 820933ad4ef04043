package wire

import (
	"bytes"
	"encoding/binary"

	"github.com/sentinel-top/sentinel-top/core"
)

// This file reads a bucket item written exactly as AppendBuckets writes
// one, the shape of nearly every item on the wire: keys in the encoder's
// order with no whitespace, counts of 1 to 18 digits, plain ASCII names,
// histograms of 14 counts. It commits a field only when its key, its
// value and the byte after it are all in that shape, and hands everything
// else, from the first key it does not commit on, to readItem's general
// loop, which reads it as it always has. What it accepts, the general
// loop would read to the same values (TestPlainItemAgreesWithGeneral).

// wordKey is an item key as the encoder writes it, `"name":`, as two
// little-endian words and their masks: matching it where 16 bytes remain
// is two loads and two compares.
type wordKey struct {
	text           []byte
	lo, hi         uint64
	loMask, hiMask uint64
}

var itemWordKeys = func() (k [nItem]wordKey) {
	for f, text := range itemKeys {
		var buf [16]byte // every key is at most 16 bytes: "concurrency": is 14
		copy(buf[:], text)
		k[f].text = text
		k[f].lo = binary.LittleEndian.Uint64(buf[:8])
		k[f].hi = binary.LittleEndian.Uint64(buf[8:])
		for b := range text {
			if b < 8 {
				k[f].loMask |= 0xff << (8 * b)
			} else {
				k[f].hiMask |= 0xff << (8 * (b - 8))
			}
		}
	}
	return k
}()

// at reports whether data[i:] starts with the key.
func (k *wordKey) at(data []byte, i int) bool {
	if i < 0 || len(data)-i < 16 {
		return i >= 0 && i <= len(data) && bytes.HasPrefix(data[i:], k.text)
	}
	w := data[i : i+16]
	return binary.LittleEndian.Uint64(w)&k.loMask == k.lo && binary.LittleEndian.Uint64(w[8:])&k.hiMask == k.hi
}

// plainDigits reads the digits of the count at data[i] as the encoder
// writes them: 1 to 18 digits, no leading zero. It returns their value
// and the index of the byte after them, which must exist: the caller
// checks that it ends the value, which also rules out a fraction, an
// exponent, a 19th digit or a digit after a leading 0. Where the caller
// accepts, smallInt reads the same value. A 0, the most common count, is
// read without a loop.
func plainDigits(data []byte, i int) (v int64, next int, ok bool) {
	j := i
	if i < len(data) && data[i] == '0' {
		j++
	} else {
		for end := min(len(data), i+18); j < end; j++ {
			c := data[j] - '0'
			if c > 9 {
				break
			}
			v = v*10 + int64(c)
		}
	}
	if j == i || j >= len(data) {
		return 0, 0, false
	}
	return v, j, true
}

// plainHist reads the rtHist at data[i] when it is '[', 14 counts as
// plainDigits reads them separated by ',' and ']' with nothing between,
// into h; it returns the index after the ']'. Declining, it may have
// written some of h: readHist, which reads the value then, sets it all.
func plainHist(data []byte, i int, h *[core.HistogramSlots]int64) (int, bool) {
	if i >= len(data) || data[i] != '[' {
		return 0, false
	}
	i++
	for n := range h {
		v, j, ok := plainDigits(data, i)
		if !ok {
			return 0, false
		}
		want := byte(',')
		if n == len(h)-1 {
			want = ']'
		}
		if data[j] != want {
			return 0, false
		}
		h[n] = v
		i = j + 1
	}
	return i, true
}

// plainName reads the resource name at data[i] when it is a string of
// plain ASCII (no escape, no control byte) within the name limit. A name
// equal to the one the previous frame had at item idx is recognised by
// comparing bytes, without scanning them (samePlain): interned.internAt
// keeps by index only names that isPlainString accepts.
func (d *Decoder) plainName(data []byte, i, idx int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	start := i + 1
	if at := d.names.at; idx < len(at) {
		if next, ok := samePlain(data, start, at[idx]); ok {
			return at[idx], next, true
		}
	}
	j := start
	for j < len(data) && strPlain[data[j]] {
		j++
	}
	if j >= len(data) || data[j] != '"' || j-start > d.lim.MaxNameBytes {
		return "", 0, false
	}
	return d.names.internAt(data[start:j], d.lim.InternNames, idx), j + 1, true
}

// samePlain reports whether the string whose content starts at
// data[start] is p, a name isPlainString accepts, and the index after its
// closing quote: p's bytes and then a quote are that very string, since p
// can hold no quote, backslash or control byte.
func samePlain(data []byte, start int, p string) (int, bool) {
	if len(data)-start > len(p) && data[start+len(p)] == '"' && string(data[start:start+len(p)]) == p {
		return start + len(p) + 1, true
	}
	return 0, false
}

// isPlainString reports whether s, a decoded name (so valid UTF-8), can be
// written between quotes as it is: no quote, backslash or control byte.
func isPlainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// readPlainItem reads the fields of item idx at data[i] (just after its
// '{') that are in the encoder's shape, in its order: a field is committed
// when its key, its value and the ',' or '}' after it are. It returns the
// index of the first key it left (the last field read in fld, -1 for
// none; those read marked in seen) or, when it read the item to its '}',
// the index after it and done.
func (d *Decoder) readPlainItem(data []byte, i, idx int) (next, fld int, seen uint32, done bool) {
	it := &d.sc.b.Items[idx]
	for f := range nItem {
		if !itemWordKeys[f].at(data, i) {
			return skipWS(data, i), f - 1, seen, false // where sep would leave the general loop
		}
		j := i + len(itemKeys[f])
		switch f {
		case iResource:
			name, after, ok := d.plainName(data, j, idx)
			if !ok || after >= len(data) || data[after] != ',' && data[after] != '}' {
				return i, f - 1, seen, false
			}
			it.Resource, j = name, after
		case iRtHist:
			after, ok := plainHist(data, j, &it.Hist)
			if !ok || after >= len(data) || data[after] != ',' && data[after] != '}' {
				return i, f - 1, seen, false
			}
			it.HasHist, j = true, after
		case iHot:
			return i, f - 1, seen, false // rare: readHot reads it
		default:
			v, after, ok := plainDigits(data, j)
			if !ok || data[after] != ',' && data[after] != '}' {
				return i, f - 1, seen, false
			}
			*it.intField(f), j = v, after
		}
		seen |= 1 << f
		if data[j] == '}' {
			return j + 1, f, seen, true
		}
		i = j + 1
	}
	return i, nItem - 1, seen, false
}
