package peer

import "sort"

// The settled instances of each machine are kept in the order they
// settled, so that eviction takes the oldest without a scan of every
// instance (a busy connection retains up to MaxInstances per machine for
// Retention, and every new instance at the limit evicts one), and each
// instance knows its aliases, so that removing it does not scan them all.

// settledQueue is one machine's settled instances, oldest first. Removed
// instances may linger until they reach the front (live reports them).
type settledQueue []*Instance

// noteSettled appends i, which just settled (or was restored settled, in
// which case it goes where its settling time belongs).
func (d *Driver) noteSettled(i *Instance) {
	if d.settled == nil {
		d.settled = map[string]settledQueue{}
	}
	q := d.settled[i.Key.Machine]
	if n := len(q); n == 0 || !i.settled.Before(q[n-1].settled) {
		d.settled[i.Key.Machine] = append(q, i)
		return
	}
	at := sort.Search(len(q), func(n int) bool { return i.settled.Before(q[n].settled) })
	q = append(q, nil)
	copy(q[at+1:], q[at:])
	q[at] = i
	d.settled[i.Key.Machine] = q
}

// live reports whether i is still registered (not removed meanwhile).
func (d *Driver) live(i *Instance) bool { return d.instances[i.Key] == i }

// trimSettled drops removed instances from the front of machine's queue.
func (d *Driver) trimSettled(machine string) {
	q := d.settled[machine]
	n := 0
	for n < len(q) && !d.live(q[n]) {
		q[n] = nil
		n++
	}
	if n > 0 {
		d.settled[machine] = q[n:]
	}
}

// evictSettled removes the settled instance of machine that settled first,
// reporting whether one was removed. Live instances are never evicted.
func (d *Driver) evictSettled(machine string) bool {
	d.trimSettled(machine)
	q := d.settled[machine]
	if len(q) == 0 {
		return false
	}
	d.forgetSettled(q[0])
	d.stats.Evicted++
	return true
}

// forgetSettled removes the settled instance i and tells the App, which
// drops its own record of it (Forgetter).
func (d *Driver) forgetSettled(i *Instance) {
	d.remove(i)
	if d.forget != nil {
		d.forget.Forgot(i)
	}
}

// hasSettled reports whether machine has a settled instance to evict.
func (d *Driver) hasSettled(machine string) bool {
	d.trimSettled(machine)
	return len(d.settled[machine]) > 0
}

// noteAlias remembers that alias names k, for remove.
func (d *Driver) noteAlias(k Key, a aliasKey) {
	if d.aliasesOf == nil {
		d.aliasesOf = map[Key][]aliasKey{}
	}
	d.aliasesOf[k] = append(d.aliasesOf[k], a)
}

// dropAliases forgets the aliases that still name i.
func (d *Driver) dropAliases(i *Instance) {
	for _, a := range d.aliasesOf[i.Key] {
		if d.aliases[a] == i.Key.ID {
			delete(d.aliases, a)
		}
	}
	delete(d.aliasesOf, i.Key)
}
