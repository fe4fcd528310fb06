//go:build !race

package content

const raceEnabled = false
