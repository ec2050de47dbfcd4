package record

import (
	"unsafe"

	"github.com/memorder/wafl/lcc"
)

// This file fixes the runtime ABI (docs/design.md) so that the instrumenter
// can be built against it; the recorder replaces these bodies.

func Init(site uint32, slot unsafe.Pointer)              {}
func Dispose(site uint32, slot unsafe.Pointer)           {}
func Store(site uint32, slot unsafe.Pointer, isNil bool) {}
func Use(site uint32, slot unsafe.Pointer)               {}
func Fork() lcc.Token                                    { return lcc.Token{} }
func Adopt(t lcc.Token)                                  {}
func Exit(code int)                                      {}
func Finish()                                            {}
