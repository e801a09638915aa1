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
// calls after), or its panic's value does as it is described, it leaves
// the rest of the batch's receive to the reader that goes on (see
// readFrom): the caller clears p.resume when it returns.
func (p *Pool[T, K]) keysFrom(vals []T, keys []keyed[K]) (out []keyed[K]) {
	returned := false
	defer func() {
		if !returned {
			out = p.keyFailed(vals, keys, recover())
		}
	}()
	for i := len(keys); i < len(vals); i++ {
		k := p.key(vals[i])
		keys = append(keys, keyed[K]{k: k, h: maphash.Comparable(p.seed, k)})
	}
	returned = true
	return keys
}

// keyFailed ends keysFrom when the key function of vals[len(keys)] did
// not return: it panicked with r, or called runtime.Goexit if r is nil
// (and maybe panicked after). It returns keys with that value's error,
// and leaves the rest of the batch's receive in p.resume, for the reader
// that goes on if this one ends. (A method of its own: the closure's
// captures escape only on this path.)
func (p *Pool[T, K]) keyFailed(vals []T, keys []keyed[K], r any) []keyed[K] {
	keys = append(keys, keyed[K]{err: keyFailure(r)})
	p.resume = func() (int, error) {
		p.acceptAll(vals, keys)
		clear(vals)
		return len(vals), p.batchErr
	}
	if r != nil {
		keys[len(keys)-1].err = keyPanic(r) // r's String method may call runtime.Goexit: p.resume is set
	}
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
		if !returned {
			k = p.keyOfFailed(d, recover())
		}
	}()
	k.k = p.key(d.Value)
	k.h = maphash.Comparable(p.seed, k.k)
	returned = true
	return k
}

// keyOfFailed is keyFailed for keyOf's value d.
func (p *Pool[T, K]) keyOfFailed(d *Delivery[T], r any) keyed[K] {
	k := keyed[K]{err: keyFailure(r)}
	dd := *d
	p.resume = func() (int, error) {
		p.acceptKeyed(&dd, k)
		p.push()
		return 1, nil
	}
	if r != nil {
		k.err = keyPanic(r) // r's String method may call runtime.Goexit: p.resume is set
	}
	return k
}

// keyFailure is the error of a key function that did not return, before
// its panic's value r is described (describing it may not return):
// errKeyExited if r is nil (it called runtime.Goexit), or its panic, by
// its value's type.
func keyFailure(r any) error {
	if r == nil {
		return errKeyExited
	}
	return fmt.Errorf("handle: key function panicked with a %T", r)
}

// keyPanic is the error of a key function that panicked with r.
func keyPanic(r any) error {
	return fmt.Errorf("handle: key function panicked, or its key cannot be hashed: %s", panicText(r))
}
