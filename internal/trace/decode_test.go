package trace

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestNextReusesBuffers checks that reading record batches allocates
// nothing once the reader's buffers have grown to the batch size.
func TestNextReusesBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	var bs []*Batch
	for range 40 {
		bs = append(bs, randBatch(r, 4096))
	}
	data := encode(t, bs...)
	rd, err := newStreamReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if !rd.Next() {
		t.Fatal(rd.Err())
	}
	i, same := 1, true
	allocs := testing.AllocsPerRun(30, func() {
		if !rd.Next() {
			t.Fatal(rd.Err())
		}
		got, want := rd.Batch(), bs[i]
		same = same && got.Len() == want.Len() && got.Time[0] == want.Time[0] && got.Op[got.Len()-1] == want.Op[want.Len()-1]
		i++
	})
	if !same {
		t.Fatal("batches read differ from those written")
	}
	if allocs != 0 {
		t.Fatalf("Next allocates %v times per batch, want 0", allocs)
	}
}

// TestDecodeUnaligned covers the decoding path that copies the columns
// (big-endian machines, or buffers not aligned for their type).
func TestDecodeUnaligned(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	want := randBatch(r, 1000)
	data := encode(t, want)
	rd, err := newStreamReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	body, err := rd.mr.next()
	if err != nil {
		t.Fatal(err)
	}
	shifted := make([]byte, len(body)+1)[1:]
	copy(shifted, body)
	if aligned(shifted, &rd.mr.rb) {
		t.Skip("allocator returned an odd address")
	}
	var got, own Batch
	decodeBatch(&got, &own, shifted, &rd.mr.rb)
	equalPrefix(t, &got, want, want.Len())
	if &got.Time[0] != &own.Time[0] {
		t.Fatal("unaligned columns were not copied into the reader's buffers")
	}
}
