package correlation

import "time"

// Summaries: what the spam filter skipped and no recorded result carried,
// kept per key and reported (see Options.Summaries).

// pending is the values of one key skipped since its last report: a
// recorded result, whose count carries them, or a summary.
type pending[T any] struct {
	n           int // how many; zero: none
	first, last time.Time
	event       T // the last of them
}

// Summary reports the values of one key that no recorded result carried:
// those the spam filter skipped since the key's last recorded result or
// summary.
type Summary[T, K any] struct {
	Key      K
	Combined bool // Key is a group key: the values were stand-ins
	Count    int  // values skipped since the last report
	Total    int  // the key's count when the summary was made
	First    time.Time
	Last     time.Time
	Event    T    // the last of them
	Evicted  bool // the key was forgotten to make room: its next value is new
}

// pend notes what res means for the values of e's key not reported yet:
// a recorded repeat carries them in its count; a skipped value joins
// them.
func (c *Correlator[T, K, M, L]) pend(e *entry[T, L], res *Result[T, L], repeat bool, now time.Time) {
	switch {
	case res.Skip:
		if e.pend == nil {
			e.pend = new(pending[T])
		}
		p := e.pend
		if p.n == 0 {
			p.first = now
		}
		p.n++
		p.last, p.event = now, res.Event
		c.stats.Unreported++
	case repeat && e.pend != nil && e.pend.n > 0:
		// A new count (a key forgotten by Stored) does not carry them:
		// they wait for a summary.
		n := uint64(e.pend.n)
		c.stats.Carried += n
		c.stats.Unreported -= n
		*e.pend = pending[T]{}
	}
}

// summarize makes the summary of e's unreported values, due for the
// owner, and empties them.
func (c *Correlator[T, K, M, L]) summarize(k obsKey[K], e *entry[T, L], evicted bool) {
	p := e.pend
	c.due = append(c.due, Summary[T, K]{
		Key: k.k, Combined: k.combined, Count: p.n, Total: e.Count,
		First: p.first, Last: p.last, Event: p.event, Evicted: evicted,
	})
	c.stats.Summarized += uint64(p.n)
	c.stats.Unreported -= uint64(p.n)
	c.stats.Summaries++
	*p = pending[T]{}
}

// Flush makes a summary of every key with values not reported yet, least
// recently used first, due for the owner (Due).
func (c *Correlator[T, K, M, L]) Flush() {
	if c.stats.Unreported == 0 {
		return
	}
	for k, e := range c.obs.All() {
		if e.pend != nil && e.pend.n > 0 {
			c.summarize(*k, e, false)
		}
	}
}

// Due returns the summaries made since the last call, in the order they
// were made, and forgets them: the owner reports them once it has
// released its lock.
func (c *Correlator[T, K, M, L]) Due() []Summary[T, K] {
	d := c.due
	c.due = nil
	return d
}

// Peek returns what is remembered under the key whose hash is h and which
// match accepts (a group key if combined), without counting anything or
// marking it used, and how many of its values are unreported.
func (c *Correlator[T, K, M, L]) Peek(h uint64, match func(*K) bool, combined bool) (o Observation[L], unreported int, ok bool) {
	e, ok := c.obs.Peek(h, func(k *obsKey[K]) bool { return k.combined == combined && match(&k.k) })
	if !ok || e.Count <= 0 {
		return Observation[L]{}, 0, false
	}
	if e.pend != nil {
		unreported = e.pend.n
	}
	return e.Observation, unreported, true
}
