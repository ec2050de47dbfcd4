package trace

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/memorder/wafl/abi"
)

// Dump writes the rest of r as text, one event per line, for tests and
// debugging:
//
//	# wafl trace v1 package=<pkg> test=<test>
//	<time> g=<g> clock=<clock> <op> site=<site> obj=0x<obj>
//	<time> g=<parent> clock=<clock> fork child=<child>
//
// limit > 0 stops after that many events. It returns r.Err() or the
// first write error.
func Dump(w io.Writer, r *Reader, limit int) error {
	bw := bufio.NewWriter(w)
	m := r.Meta()
	fmt.Fprintf(bw, "# wafl trace v%d package=%s test=%s\n", m.Version, m.Package, m.Test)
	n := 0
	var line []byte
	for r.Next() {
		b := r.Batch()
		for i := range b.Len() {
			if limit > 0 && n >= limit {
				return bw.Flush()
			}
			n++
			line = strconv.AppendInt(line[:0], b.Time[i], 10)
			line = append(line, " g="...)
			line = strconv.AppendUint(line, b.G[i], 10)
			line = append(line, " clock="...)
			line = strconv.AppendUint(line, uint64(b.Clock[i]), 10)
			line = append(line, ' ')
			line = append(line, abi.Op(b.Op[i]).String()...)
			if abi.Op(b.Op[i]) == abi.OpFork {
				line = append(line, " child="...)
				line = strconv.AppendUint(line, b.Obj[i], 10)
			} else {
				line = append(line, " site="...)
				line = strconv.AppendUint(line, uint64(b.Site[i]), 10)
				line = append(line, " obj=0x"...)
				line = strconv.AppendUint(line, b.Obj[i], 16)
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return r.Err()
}
