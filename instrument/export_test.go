package instrument

// InlineHelpers are the helpers that must stay within the compiler's
// inlining budget (TestHelpersInline).
var InlineHelpers = []string{hUse, hStore, hInit, hNil, hSend, hClose}
