package pipeline

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorder/wafl/abi"
	ibuild "github.com/memorder/wafl/internal/build"
)

// A detection run's plan copy carries the binary's stamp only once the
// binary has settled, and only while it is the file the build step
// hashed.
func TestRunStamp(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "p.test")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	pb := &pkgBuild{Package: &ibuild.Package{ImportPath: "example.com/p", Binary: bin}}
	if pb.stamp, pb.stamped = abi.StampOf(bin); !pb.stamped {
		t.Skip("no file stamps on this system")
	}
	if s := pb.runStamp(); s != nil {
		t.Errorf("a binary written just now got its stamp %+v", s)
	}
	time.Sleep(1100 * time.Millisecond)
	if s := pb.runStamp(); s == nil || *s != pb.stamp {
		t.Fatalf("settled binary: stamp %v, want %+v", s, pb.stamp)
	}
	if err := os.WriteFile(bin, []byte("BINARY"), 0o755); err != nil {
		t.Fatal(err)
	}
	if s := pb.runStamp(); s != nil {
		t.Errorf("a binary written after the build step hashed it got a stamp %+v", s)
	}
	pb.stamped = false
	if s := pb.runStamp(); s != nil {
		t.Errorf("a binary without a stamp from the build step got %+v", s)
	}
}
