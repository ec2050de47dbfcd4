package pipeline

import (
	"bytes"
	"fmt"
	"os"

	"github.com/memorder/wafl/internal/htmlreport"
	"github.com/memorder/wafl/internal/report"
)

// writeHTML writes bugs as one self-contained HTML page (wafl report --html).
func writeHTML(path string, bugs []*report.Bug) error {
	var buf bytes.Buffer
	if err := htmlreport.Write(&buf, bugs, htmlreport.Options{}); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}
