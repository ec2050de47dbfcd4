package abi

// Stamp is what the file system says of a file without reading it: its
// device and inode, size, and modification and status-change times. Two
// stats of one path with the same stamp see the same content: writing a
// file changes its status-change time (ctime), which no program can set
// back, and replacing it changes its inode. A plan's copy for a detection
// run carries the stamp of the test binary wafl hashed (Provenance
// .BinaryStamp), so that the runtime, whose executable has that stamp,
// knows its hash without reading the whole binary again.
type Stamp struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
}

// Settled reports whether the stamp's file was last changed at least
// a second before now: file times come from a coarse clock, so a file
// written again within the same tick of it, at the same size, could keep
// its stamp; a second later any change shows.
func (s Stamp) Settled(nowNs int64) bool { return nowNs-s.CtimeNs >= 1e9 && nowNs-s.MtimeNs >= 1e9 }

// StampOf returns the stamp of the file at path; ok is false when it
// cannot be had (the file is missing, or the system's stat has no inode
// and status-change time wafl knows how to read).
func StampOf(path string) (s Stamp, ok bool) { return stampOf(path) }
