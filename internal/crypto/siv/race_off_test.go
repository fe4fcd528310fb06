//go:build !race

package siv

const raceEnabled = false
