package core

// hotLRU is the value cache of one hot-parameter controller: a map from the
// value to its item, and the items in a list from the most to the least
// recently used, linked by index in one slice. sentinel-golang keeps two
// caches per QPS rule (last times and tokens), but every check touches both
// with the same value, so they always hold the same values in the same
// order: one cache holding both is the same.
//
// The slice grows to the capacity and no further: once full, the least
// recent item is reused for the new value, so a full cache does not
// allocate but for the new value's key. Callers hold the controller's lock.
type hotLRU struct {
	capacity   int
	index      map[any]int32
	items      []hotItem
	head, tail int32 // most and least recent; -1 when empty
}

// hotItem is one value's state and its place in the list.
type hotItem struct {
	key        any // the value, owned (hotOwn)
	prev, next int32
	threshold  int64 // SpecificItems' or the rule's, fixed per rule
	last       int64 // QPS: last refill (Reject) or pass (Throttling), Unix ms
	tokens     int64 // QPS Reject
	conc       int64 // Concurrency
}

func (l *hotLRU) init(capacity int) {
	l.capacity = capacity
	l.index = make(map[any]int32, min(capacity, 64))
	l.head, l.tail = -1, -1
}

// moveToFront makes item i the most recent.
func (l *hotLRU) moveToFront(i int32) {
	if l.head == i {
		return
	}
	it := &l.items[i]
	l.items[it.prev].next = it.next // i is not the head, so it has a prev
	if it.next >= 0 {
		l.items[it.next].prev = it.prev
	} else {
		l.tail = it.prev
	}
	it.prev, it.next = -1, l.head
	l.items[l.head].prev = i
	l.head = i
}

// add puts a new value at the front, in the room of the least recent one
// when the cache is full (sentinel-golang adds, then removes the oldest
// when over capacity: the same).
func (l *hotLRU) add(key any, threshold int64) *hotItem {
	var i int32
	if len(l.items) < l.capacity {
		i = int32(len(l.items))
		l.items = append(l.items, hotItem{})
	} else {
		i = l.tail
		delete(l.index, l.items[i].key)
		l.tail = l.items[i].prev
		if l.tail >= 0 {
			l.items[l.tail].next = -1
		} else {
			l.head = -1
		}
	}
	l.items[i] = hotItem{key: key, prev: -1, next: l.head, threshold: threshold}
	if l.head >= 0 {
		l.items[l.head].prev = i
	} else {
		l.tail = i
	}
	l.head = i
	l.index[key] = i
	return &l.items[i]
}
