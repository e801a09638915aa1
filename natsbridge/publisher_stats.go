package natsbridge

// A publisher's counters: kept by its link, under the publisher's mutex,
// and copied at one instant by Stats.

// counters are a publisher's counts, kept by its link.
type counters struct {
	published, confirmed, retries, failed, unconfirmed uint64
	refused, invalid, abandoned, lastSeq               uint64
}

// PublisherStats is a snapshot of a Publisher's counters, taken at one
// instant: Published = Confirmed + Failed + Unconfirmed + Pending, and
// Pending never exceeds the window.
type PublisherStats struct {
	// Published counts values accepted by Publish and TryPublish.
	Published uint64
	// Confirmed counts accepted values the stream acknowledged: each is
	// stored exactly once.
	Confirmed uint64
	// Retries counts sends of a value after its first: every one went on
	// the wire, under the value's message id (the stream drops a copy it
	// holds already).
	Retries uint64
	// Failed counts accepted values the stream refused (or that found it
	// deleted), or that were not confirmed within the delivery timeout
	// (see PublisherOptions.DeliveryTimeout; such a value may still have
	// been stored, its acks lost). They are logged, one line a second
	// with a count (see TopicOptions.Logger).
	Failed uint64
	// Unconfirmed counts accepted values still awaiting their ack when
	// the context given to Shutdown ended, or when the connection was
	// closed (or drained): no ack can come. They may or may not be
	// stored.
	Unconfirmed uint64
	// Pending is the number of accepted values not settled yet (neither
	// Confirmed, Failed nor Unconfirmed): sent and awaiting their ack, or
	// waiting for their turn to be sent.
	Pending int
	// Refused counts TryPublish calls refused because the window was
	// full.
	Refused uint64
	// Invalid counts values refused before sending: a codec error or
	// panic, or an encoding larger than the server accepts.
	Invalid uint64
	// Abandoned counts values a Forward took from its broadcaster and
	// could not publish because the Publisher shut down or the Forward's
	// stop context ended.
	Abandoned uint64
	// LastSeq is the stream sequence of the last value stored by a batch
	// that has ended (a publisher ends its batch whenever it has nothing
	// more to send, and in Shutdown): once Shutdown has returned nil, the
	// sequence of the last value stored.
	LastSeq uint64
}

// Stats returns a snapshot of the publisher's counters, all read at one
// instant. It is safe to call at any time, also after Shutdown.
func (p *Publisher[T]) Stats() PublisherStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.link.stats
	return PublisherStats{
		Published:   c.published,
		Confirmed:   c.confirmed,
		Retries:     c.retries,
		Failed:      c.failed,
		Unconfirmed: c.unconfirmed,
		Pending:     p.link.pending(),
		Refused:     c.refused,
		Invalid:     c.invalid,
		Abandoned:   c.abandoned,
		LastSeq:     c.lastSeq,
	}
}

// addAbandoned counts n values a Forward took and could not publish.
func (p *Publisher[T]) addAbandoned(n uint64) {
	p.mu.Lock()
	p.link.stats.abandoned += n
	p.mu.Unlock()
}

// add returns s and o added up, field by field (LastSeq: the larger, for
// a partitioned publisher, whose partitions number their values apart).
func (s PublisherStats) add(o PublisherStats) PublisherStats {
	return PublisherStats{
		Published:   s.Published + o.Published,
		Confirmed:   s.Confirmed + o.Confirmed,
		Retries:     s.Retries + o.Retries,
		Failed:      s.Failed + o.Failed,
		Unconfirmed: s.Unconfirmed + o.Unconfirmed,
		Pending:     s.Pending + o.Pending,
		Refused:     s.Refused + o.Refused,
		Invalid:     s.Invalid + o.Invalid,
		Abandoned:   s.Abandoned + o.Abandoned,
		LastSeq:     max(s.LastSeq, o.LastSeq),
	}
}
