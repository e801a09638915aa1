// Package testkit holds helpers for herald's own tests, and is imported
// only by tests: Lines captures what a logger writes, for tests of what
// an operator reads (which lines, how many); WhileHeld is the check both
// Kubernetes adapters' tests make of Flush, that it waits for what a sink
// holds and returns once it is released.
package testkit
