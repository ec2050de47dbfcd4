package trace

import "github.com/memorder/wafl/abi"

// Temporary names for packages that have not moved to abi yet: analyze
// (ErrTruncated; Batch in its tests) and internal/pipeline (ErrTruncated,
// SchemaVersion). Delete this file once they use abi.ErrTruncated,
// abi.Batch and abi.FormatVersion directly.
type Batch = abi.Batch

var ErrTruncated = abi.ErrTruncated

const SchemaVersion = abi.FormatVersion
