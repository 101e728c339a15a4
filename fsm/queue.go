package fsm

// Queue is the bounded FIFO that holds the follow-up events raised while one
// Fire runs. Generated machines embed one; it is not safe for concurrent use
// on its own (the machine's lock guards it).
type Queue[E, A any] struct {
	items   [QueueCapacity]queued[E, A]
	head, n int
}

type queued[E, A any] struct {
	event E
	arg   A
}

// Push appends an event, reporting false when the queue is full.
func (q *Queue[E, A]) Push(event E, arg A) bool {
	if q.n == QueueCapacity {
		return false
	}
	q.items[(q.head+q.n)%QueueCapacity] = queued[E, A]{event, arg}
	q.n++
	return true
}

// Pop removes the oldest event, reporting false when the queue is empty.
func (q *Queue[E, A]) Pop() (event E, arg A, ok bool) {
	if q.n == 0 {
		return event, arg, false
	}
	it := &q.items[q.head]
	event, arg = it.event, it.arg
	*it = queued[E, A]{} // do not keep the caller's argument alive
	q.head = (q.head + 1) % QueueCapacity
	q.n--
	return event, arg, true
}

// Len is the number of queued events.
func (q *Queue[E, A]) Len() int { return q.n }

// Clear drops every queued event, for when an error ends the Fire early.
func (q *Queue[E, A]) Clear() {
	for q.n > 0 {
		q.Pop()
	}
	q.head = 0
}
