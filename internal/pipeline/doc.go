// Package pipeline ties wafl's stages together into the prepare and detect
// workflows: instrument and build test binaries, run each test in its own
// process (record mode for preparation, detect mode for detection),
// convert and analyze traces into plans, attribute crashes to injected
// delays, and write reports. The cobra layer in cmd/wafl only parses flags
// and calls this package.
//
// Every workflow that builds packages is one runner (runner.go): resolve
// the work directory, instrument and build, list the selected tests and
// run a per-test function on each of them in parallel under a progress
// line. A per-test function returns an error for what stopped its test;
// the runner records it as a Problem and goes on with the other tests.
// Each workflow has its own options type (options.go).
package pipeline
