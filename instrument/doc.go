// Package instrument rewrites the packages under test with dave/dst so that
// every MEMORDER site calls the wafl runtime, and builds each package's test
// binary through an overlay and an alternate go.mod in wafl's work
// directory, leaving the user's tree untouched.
package instrument
