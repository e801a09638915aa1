package natsbridge

// fifo is a queue on a ring buffer that grows as needed: push at the back,
// pop at the front, read any place by index. Its zero value is an empty
// queue. It is not safe for concurrent use.
type fifo[T any] struct {
	buf  []T
	head int // the index in buf of the front
	n    int
}

func (q *fifo[T]) len() int { return q.n }

// at returns the i-th value from the front (0 is the front).
func (q *fifo[T]) at(i int) T { return q.buf[(q.head+i)%len(q.buf)] }

func (q *fifo[T]) push(v T) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
}

// pop removes and returns the front; the queue must not be empty.
func (q *fifo[T]) pop() T {
	var zero T
	v := q.buf[q.head]
	q.buf[q.head] = zero // let it be collected
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v
}

func (q *fifo[T]) grow() {
	buf := make([]T, max(16, 2*len(q.buf)))
	for i := range q.n {
		buf[i] = q.at(i)
	}
	q.buf, q.head = buf, 0
}
