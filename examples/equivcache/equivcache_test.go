package equivcache

import (
	"testing"
	"time"
)

// The informer's LIST takes 8 ms; Create runs microseconds after Start.
func TestServiceAddInvalidatesCache(t *testing.T) {
	inf := NewServiceInformer([]string{"kubernetes", "kube-dns"}, 8*time.Millisecond)
	f := NewScheduler(inf)
	<-inf.Done()
	if got := f.EquivalenceCache().Invalidations("CheckServiceAffinity"); got != 2 {
		t.Fatalf("invalidations = %d, want 2", got)
	}
}
