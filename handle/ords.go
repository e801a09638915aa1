package handle

// ordSet follows the values a Pool received, by their receive order (0,
// 1, 2…), from the oldest without a fate to the last received: how far
// reading runs ahead of that oldest one (the window), and up to which
// order every value has its fate (the floor, for Flush). Its zero value
// is empty. It is not safe for concurrent use: the Pool's mutex guards it.
type ordSet struct {
	fated []bool // fated[i-head] for orders base+i-head … next-1
	head  int
	base  uint64 // the order of fated[head]: every order below has its fate
	next  uint64 // the order the next value received gets
}

// add returns the order of a value just received.
func (s *ordSet) add() uint64 {
	if s.head == len(s.fated) {
		s.fated, s.head = s.fated[:0], 0
	} else if s.head > len(s.fated)/2 && len(s.fated) == cap(s.fated) {
		n := copy(s.fated, s.fated[s.head:])
		s.fated, s.head = s.fated[:n], 0
	}
	s.fated = append(s.fated, false)
	s.next++
	return s.next - 1
}

// fate records that the value of order ord has its fate, and returns the
// new floor: every order below it has its fate.
func (s *ordSet) fate(ord uint64) uint64 {
	s.fated[s.head+int(ord-s.base)] = true
	for s.head < len(s.fated) && s.fated[s.head] {
		s.head++
		s.base++
	}
	return s.base
}

// span is the window: the values received from the oldest without a fate
// on.
func (s *ordSet) span() int { return int(s.next - s.base) }
