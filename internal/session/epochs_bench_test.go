package session

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/keyslot"
)

// BenchmarkOpenEpochs: what opening a vault costs per master-key epoch
// (docs/format.md §3b): the sealed chain is opened once and every epoch's
// keys are derived (HKDF per subkey, a names cipher, a binder). Through
// the master-key door, so that no Argon2id is counted.
//
//	go test -run '^$' -bench OpenEpochs ./internal/session/
func BenchmarkOpenEpochs(b *testing.B) {
	o := Options{BoundVaultID: bytes.Repeat([]byte{5}, 16)}
	dir := b.TempDir()
	s, master, err := CreateWith(dir, []keyslot.NewSlot{{Type: config.SlotKeyfile, Label: "k", Keyfile: keyfileBytes}},
		CreateOptions{Params: config.NewParamsV2(string(AES256GCM), DefaultChunkSize), Options: o})
	if err != nil {
		b.Fatal(err)
	}
	clear(master)
	done := 0
	for _, epochs := range []int{0, 1, 16, 256} {
		for ; done < epochs; done++ {
			if _, err := s.Revoke(keyslot.RevokeSpec{Keyfiles: [][]byte{keyfileBytes}}); err != nil {
				b.Fatal(err)
			}
		}
		current := s.MasterKey()
		b.Run(fmt.Sprintf("epoch=%d", epochs), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				s2, err := OpenWithMasterKey(dir, current, o)
				if err != nil {
					b.Fatal(err)
				}
				s2.Close()
			}
		})
		clear(current)
	}
	s.Close()
}
