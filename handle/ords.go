package handle

import "math"

// noOrd is a shard's floor when it holds no value without a fate.
const noOrd = math.MaxUint64

// fateRec follows the values placed in one shard, by their receive order:
// which have their fate, and the order of the oldest that has none (the
// shard's floor; the Pool's floor, for Flush and Window, is the least of
// its shards'). Values are added in increasing order. Its zero value is
// empty. It is not safe for concurrent use: its shard's mutex guards it.
type fateRec struct {
	ords  []uint64 // ords[i-head]: the receive order of the value of index base+i-head
	fated []bool
	head  int
	base  uint64 // the index of ords[head]: every index below has its fate
	next  uint64 // the index the next value added gets
}

// add records a value of order ord, the greatest yet, and returns its
// index, for fate.
func (r *fateRec) add(ord uint64) uint64 {
	if r.head == len(r.ords) {
		r.ords, r.fated, r.head = r.ords[:0], r.fated[:0], 0
	} else if r.head > len(r.ords)/2 && len(r.ords) == cap(r.ords) {
		n := copy(r.ords, r.ords[r.head:])
		copy(r.fated, r.fated[r.head:])
		r.ords, r.fated, r.head = r.ords[:n], r.fated[:n], 0
	}
	r.ords = append(r.ords, ord)
	r.fated = append(r.fated, false)
	r.next++
	return r.next - 1
}

// fate records that the value of index idx has its fate, and reports
// whether the oldest without one changed.
func (r *fateRec) fate(idx uint64) bool {
	r.fated[r.head+int(idx-r.base)] = true
	moved := false
	for r.head < len(r.fated) && r.fated[r.head] {
		r.head++
		r.base++
		moved = true
	}
	return moved
}

// oldest returns the order of the oldest value without a fate, or noOrd.
func (r *fateRec) oldest() uint64 {
	if r.head < len(r.ords) {
		return r.ords[r.head]
	}
	return noOrd
}
