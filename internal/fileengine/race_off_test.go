//go:build !race

package fileengine

// raceEnabled: see race_on_test.go.
const raceEnabled = false
