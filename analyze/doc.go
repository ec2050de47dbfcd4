// Package analyze turns a preparation-run trace into a plan: it builds the
// candidate set S with the near-miss window and fork vector clocks, learns
// per-location delay lengths and interference sets (WAFL thesis §3.1,
// §4.1–4.4), streaming over traces larger than memory.
package analyze
