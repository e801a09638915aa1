package handle

import (
	"errors"
	"fmt"
	"hash/maphash"
)

// errKeyExited is the failure of a value whose key function called
// runtime.Goexit.
var errKeyExited = errors.New("handle: key function called runtime.Goexit (t.FailNow and t.Fatal do): its value has no key")

// keyed is a value's key and its hash, or why it has none.
type keyed[K comparable] struct {
	k   K
	h   uint64
	err error
}

// keysFrom appends to keys the keys of vals from len(keys) on, up to the
// first whose key function panics: its error is appended then. If the
// key function calls runtime.Goexit (and panics or not in its deferred
// calls after), it leaves the rest of the batch's receive to the reader
// that goes on (see readFrom): the caller clears p.resume when it
// returns.
func (p *Pool[T, K]) keysFrom(vals []T, keys []keyed[K]) (out []keyed[K]) {
	returned := false
	defer func() {
		if returned {
			return
		}
		err := errKeyExited
		if r := recover(); r != nil {
			err = keyPanic(r)
			out = append(keys, keyed[K]{err: err})
		}
		p.resume = func() (int, error) {
			p.acceptAll(vals, append(keys, keyed[K]{err: err}))
			clear(vals)
			return len(vals), p.batchErr
		}
	}()
	for i := len(keys); i < len(vals); i++ {
		k := p.key(vals[i])
		keys = append(keys, keyed[K]{k: k, h: maphash.Comparable(p.seed, k)})
	}
	returned = true
	return keys
}

// keyOf returns d's value's key and its hash, or the panic of the key
// function (or of the hash, for a key of an interface type holding a
// value that cannot be hashed) as an error. If the key function calls
// runtime.Goexit, it leaves the rest of d's receive to the reader that
// goes on (see readFrom): the caller clears p.resume when it returns.
func (p *Pool[T, K]) keyOf(d *Delivery[T]) (k keyed[K]) {
	returned := false
	defer func() {
		if returned {
			return
		}
		k = keyed[K]{err: errKeyExited}
		if r := recover(); r != nil {
			k.err = keyPanic(r)
		}
		dd, kk := *d, k
		p.resume = func() (int, error) {
			p.acceptKeyed(&dd, kk)
			p.push()
			return 1, nil
		}
	}()
	k.k = p.key(d.Value)
	k.h = maphash.Comparable(p.seed, k.k)
	returned = true
	return k
}

// keyPanic is the error of a key function that panicked with r.
func keyPanic(r any) error {
	return fmt.Errorf("handle: key function panicked, or its key cannot be hashed: %v", r)
}
