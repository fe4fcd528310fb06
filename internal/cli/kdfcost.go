package cli

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"github.com/encryptfs/encryptfs/internal/session"
	"golang.org/x/sys/unix"
)

// kdfCosts are Argon2id costs without a salt.
type kdfCosts struct {
	time      uint32
	memoryKiB uint32
	threads   uint8
}

func costsOf(p session.KDFParams) kdfCosts {
	return kdfCosts{time: p.Time, memoryKiB: p.MemoryKiB, threads: p.Threads}
}

// atLeast raises each cost to floor's.
func (c kdfCosts) atLeast(floor kdfCosts) kdfCosts {
	return kdfCosts{time: max(c.time, floor.time), memoryKiB: max(c.memoryKiB, floor.memoryKiB), threads: max(c.threads, floor.threads)}
}

// defaultKDF is the cost init uses without --kdf-* flags, and the floor
// below which passwd never lowers a cost it did not get from a flag. The
// product's are kdf's defaults (builtinKDFDefaults); tests of the CLI set
// a.kdfDefaults to keep Argon2id cheap.
func (a *App) defaultKDF() kdfCosts {
	if a.kdfDefaults != (kdfCosts{}) {
		return a.kdfDefaults
	}
	return builtinKDFDefaults()
}

// limitKDFMemory bounds the Argon2id memory that unlocking c may take to
// the memory this machine has available (config.LimitKDFMemory says why).
// When that cannot be read, only kdf's own ceiling applies.
func (a *App) limitKDFMemory(c *session.Config) {
	avail := a.memAvailableKiB
	if avail == nil {
		avail = memAvailableKiB
	}
	if kib, ok := avail(); ok {
		c.LimitKDFMemory(max(kib, 1))
	}
}

// memAvailableKiB is the kernel's estimate of the memory that can be
// allocated without swapping (MemAvailable in /proc/meminfo), or, without
// /proc, free plus buffer memory from sysinfo(2).
func memAvailableKiB() (uint64, bool) {
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kib, ok := parseMemAvailable(data); ok {
			return kib, true
		}
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, false
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	return (uint64(si.Freeram) + uint64(si.Bufferram)) * unit / 1024, true
}

// parseMemAvailable finds "MemAvailable:   123456 kB" in /proc/meminfo.
func parseMemAvailable(data []byte) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 3 && string(f[0]) == "MemAvailable:" && string(f[2]) == "kB" {
			n, err := strconv.ParseUint(string(f[1]), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
