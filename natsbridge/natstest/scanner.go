package natstest

import (
	"bytes"
	"strconv"
)

// pubScanner reads the client side of the NATS protocol as it passes and
// reports the subject of every PUB or HPUB with a payload. It keeps what it
// has not parsed yet between calls, so that an operation split across reads
// is seen whole.
type pubScanner struct {
	onPub func(subject string)
	line  []byte // the part of a protocol line read so far
	skip  int    // payload bytes (and its CRLF) still to pass over
}

func newPubScanner(onPub func(subject string)) *pubScanner {
	return &pubScanner{onPub: onPub}
}

// feed parses b, the next bytes the client sent.
func (s *pubScanner) feed(b []byte) {
	for len(b) > 0 {
		if s.skip > 0 {
			n := min(s.skip, len(b))
			s.skip -= n
			b = b[n:]
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.line = append(s.line, b...)
			return
		}
		s.line = append(s.line, b[:i+1]...)
		b = b[i+1:]
		s.op(bytes.TrimRight(s.line, "\r\n"))
		s.line = s.line[:0]
	}
}

// op handles one protocol line: a PUB or HPUB sets the payload to pass
// over, and counts if the payload is not empty.
func (s *pubScanner) op(line []byte) {
	f := bytes.Fields(line)
	if len(f) < 3 {
		return
	}
	verb := string(bytes.ToUpper(f[0]))
	if verb != "PUB" && verb != "HPUB" {
		return
	}
	size, err := strconv.Atoi(string(f[len(f)-1]))
	if err != nil || size < 0 {
		return
	}
	s.skip = size + 2 // the payload and its CRLF
	if size > 0 {
		s.onPub(string(f[1]))
	}
}
