// Package plans defines the plan file: the candidate set S of one test with
// per-location delay lengths, probabilities, candidate pairs and
// interference sets, plus the parameters and provenance that produced it
// and the state detection runs update (WAFL thesis §4.1–4.4).
package plans
