// Command wafl-vet runs wafl's MEMORDER analyzer as a go vet tool:
//
//	go install github.com/memorder/wafl/cmd/wafl-vet@latest
//	go vet -vettool=$(which wafl-vet) ./...
//
// It reports possible use-before-init, use-after-dispose, check-then-act
// and WaitGroup Add-after-go hints (docs/vet.md). `wafl vet` runs the same
// analyzer and can mark each hint with what wafl's test runs showed.
package main

import (
	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/memorder/wafl/internal/vet"
)

func main() { unitchecker.Main(vet.Analyzer) }
