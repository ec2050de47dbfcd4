package abi

// Map entries as objects (docs/instrumentation.md, "Map entries"). The
// object of an event on a map entry m[k] — a store into it, a delete, a
// lookup whose value is dereferenced, a comma-ok lookup — is neither the
// map nor an address: it is an id made of the map's identity (the map
// header's address, or the sync.Map's) and a hash of the key, with
// EntryTag set. Slot, channel and other objects are addresses, which on
// every 64-bit platform Go runs on stay below 1<<63, so an entry id never
// equals the object of another event.

// EntryTag is set in every map entry's object id and in no address.
const EntryTag = uint64(1) << 63

// EntryObj is the object id of the entry whose key hashes to keyHash in
// the map whose identity is the address m.
func EntryObj(m uintptr, keyHash uint64) uint64 {
	return EntryTag | (mixEntry(uint64(m)) ^ keyHash)
}

// IsEntry reports whether obj is a map entry's object id.
func IsEntry(obj uint64) bool { return obj&EntryTag != 0 }

// mixEntry spreads a map's address over all 64 bits (splitmix64's
// finalizer), so that two maps' entries of equal keys differ everywhere.
func mixEntry(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
