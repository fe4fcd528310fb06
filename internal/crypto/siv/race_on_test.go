//go:build race

package siv

// raceEnabled: the race detector makes sync.Pool drop items at random.
const raceEnabled = true
