package source

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gorilla/websocket"
)

// Websocket opcodes (RFC 6455 §5.2) a frameReader tells apart.
const (
	opContinuation = 0
	opText         = websocket.TextMessage
	opBinary       = websocket.BinaryMessage
	opClose        = websocket.CloseMessage
	opPing         = websocket.PingMessage
	opPong         = websocket.PongMessage
)

// errReadLimit is a message over the frameReader's limit.
var errReadLimit = errors.New("message over the read limit")

// errProtocol is a frame no websocket server sends.
var errProtocol = errors.New("websocket protocol error")

// frameHandler takes what a frameReader reads: whole messages (text or
// binary, fragments joined), and control frames (close, ping, pong) as they
// come, between a message's fragments too. Neither keeps data past the call;
// an error stops the reading.
type frameHandler interface {
	message(kind int, data []byte) error
	control(op int, data []byte) error
}

// frameReader reads the frames a websocket server sends (RFC 6455 §5:
// unmasked, no extension) from bytes as they arrive, for a reader of the raw
// socket. What it holds between calls is a fragmented message's payload so
// far, bounded by max.
type frameReader struct {
	max  int     // a message's largest payload
	msg  *[]byte // a fragmented message's payloads so far (from frames)
	kind int     // its opcode
	// need is the size of the frame left at the end of what feed was
	// given, header and payload, once its header has arrived (0 before):
	// the buffer that size holds it whole.
	need int
}

// feed hands every whole frame at the start of p to h and returns how many
// bytes they took; the rest is the start of a frame, to be given again with
// what follows it. An error ends the stream: a frame no server sends, a
// message over max (errReadLimit), or h's own.
func (r *frameReader) feed(p []byte, h frameHandler) (int, error) {
	used := 0
	for {
		b := p[used:]
		r.need = 0
		if len(b) < 2 {
			return used, nil
		}
		fin, op := b[0]&0x80 != 0, int(b[0]&0x0f)
		if b[0]&0x70 != 0 {
			return used, fmt.Errorf("%w: reserved bits set (no extension was agreed)", errProtocol)
		}
		if b[1]&0x80 != 0 {
			return used, fmt.Errorf("%w: a masked frame from the server", errProtocol)
		}
		head, n := 2, uint64(b[1]&0x7f)
		switch n {
		case 126:
			if head = 4; len(b) < head {
				return used, nil
			}
			n = uint64(binary.BigEndian.Uint16(b[2:]))
		case 127:
			if head = 10; len(b) < head {
				return used, nil
			}
			n = binary.BigEndian.Uint64(b[2:])
		}
		held := 0
		if r.msg != nil {
			held = len(*r.msg)
		}
		switch op {
		case opClose, opPing, opPong:
			if !fin || n > 125 {
				return used, fmt.Errorf("%w: a control frame fragmented or over 125 bytes", errProtocol)
			}
		case opText, opBinary:
			if r.msg != nil {
				return used, fmt.Errorf("%w: a new message inside a fragmented one", errProtocol)
			}
		case opContinuation:
			if r.msg == nil {
				return used, fmt.Errorf("%w: a continuation frame with no message begun", errProtocol)
			}
		default:
			return used, fmt.Errorf("%w: unknown opcode %d", errProtocol, op)
		}
		if n > uint64(r.max-held) {
			return used, errReadLimit
		}
		size := head + int(n)
		if len(b) < size {
			r.need = size
			return used, nil
		}
		payload := b[head:size]
		used += size
		var err error
		switch {
		case op >= opClose:
			err = h.control(op, payload)
		case r.msg == nil && fin:
			err = h.message(op, payload)
		case r.msg == nil:
			r.msg, r.kind = frames.Get().(*[]byte), op
			*r.msg = append((*r.msg)[:0], payload...)
		default:
			*r.msg = append(*r.msg, payload...)
			if fin {
				err = h.message(r.kind, *r.msg)
				r.release()
			}
		}
		if err != nil {
			return used, err
		}
	}
}

// release gives back what a fragmented message held.
func (r *frameReader) release() {
	if r.msg != nil {
		releaseFrame(r.msg)
		r.msg = nil
	}
}

// closeError is what a close frame from the server says, as an error:
// "closed by the peer" for a normal close or going away, else its code and
// reason.
func closeError(data []byte) error {
	if len(data) < 2 {
		return errors.New("closed by the peer")
	}
	code := int(binary.BigEndian.Uint16(data))
	if code == websocket.CloseNormalClosure || code == websocket.CloseGoingAway {
		return errors.New("closed by the peer")
	}
	return &websocket.CloseError{Code: code, Text: string(data[2:])}
}
