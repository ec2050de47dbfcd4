package instrument

// InlineHelpers are the helpers that must stay within the compiler's
// inlining budget (TestHelpersInline).
var InlineHelpers = []string{hUse, hStore, hInit, hNil, hSend, hClose}

// InlineEntryHelpers are the map entry helpers the run case entries
// instantiates, which must stay inlinable too.
var InlineEntryHelpers = []string{hEntryKey, hEntryInit, hEntryNil}

// InlineSyncHelpers are the sync.Map helpers it calls (not generic;
// none: each makes the sync.Map call besides the hook's, which is beyond
// the budget).
var InlineSyncHelpers []string
