package informer

import (
	"testing"
	"time"
)

// The informer's LIST takes 8 ms; NewController sets the lister within
// microseconds of registering its handler.
func TestControllerSeesAllObjects(t *testing.T) {
	objs := []*Object{{Key: "default/api", Replicas: 3}, {Key: "default/db", Replicas: 1}, {Key: "kube-system/dns", Replicas: 2}}
	inf := NewInformer(objs, 8*time.Millisecond)
	inf.Run()
	c := NewController(inf)
	WaitForCacheSync(inf)
	<-inf.Done()
	seen := c.Seen()
	if len(seen) != len(objs) {
		t.Fatalf("controller saw %d objects, want %d: %v", len(seen), len(objs), seen)
	}
	for _, o := range objs {
		if seen[o.Key] != o.Replicas {
			t.Errorf("%s: replicas %d, want %d", o.Key, seen[o.Key], o.Replicas)
		}
	}
}
