package config

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// plantPasswordSlots returns data, a marshaled config whose first slot is
// a password slot, with n copies of that slot (IDs 100, 101, ...) planted
// before it, as a storage attacker without the key can: each copy is a
// well-formed password slot at the same KDF cost.
func plantPasswordSlots(t *testing.T, data []byte, n int) []byte {
	t.Helper()
	start := bytes.Index(data, []byte("\"Slots\": [\n"))
	if start < 0 {
		t.Fatalf("no Slots in\n%s", data)
	}
	start += len("\"Slots\": [\n")
	end := bytes.Index(data[start:], []byte("\n\t\t},\n"))
	if end < 0 {
		t.Fatalf("no first slot in\n%s", data)
	}
	first := data[start : start+end+len("\n\t\t},\n")]
	if !bytes.Contains(first, []byte(`"Type": "password"`)) || !bytes.Contains(first, []byte(`"ID": 1,`)) {
		t.Fatalf("first slot is not password slot 1:\n%s", first)
	}
	var planted []byte
	for i := range n {
		planted = append(planted, bytes.Replace(first, []byte(`"ID": 1,`), fmt.Appendf(nil, `"ID": %d,`, 100+i), 1)...)
	}
	out := append([]byte(nil), data[:start]...)
	out = append(out, planted...)
	return append(out, data[start:]...)
}

// TestPlantedPasswordSlots (L5): planted password slots cost at most
// MaxPasswordSlots Argon2id runs per unlock. A config with more password
// slots is refused while parsing, before any KDF (ErrCorrupt: exit 5);
// one with up to the limit runs Argon2id once per password slot and then
// fails the MAC (ErrTampered: exit 5).
func TestPlantedPasswordSlots(t *testing.T) {
	c, _ := newV2Config(t, randomBytes)
	data := mustMarshal(t, c)
	for _, planted := range []int{1, MaxPasswordSlots - 1, MaxPasswordSlots, 7, MaxSlots - 3} {
		t.Run(fmt.Sprint(planted), func(t *testing.T) {
			forged, err := Parse(plantPasswordSlots(t, data, planted))
			if planted+1 > MaxPasswordSlots {
				if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrSlotLimit) {
					t.Fatalf("%d password slots parsed: %v", planted+1, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = forged.UnlockPassword(testPassword)
			if !errors.Is(err, ErrTampered) {
				t.Fatalf("unlock of a config with %d planted slots: %v, want ErrTampered", planted, err)
			}
			if got := forged.passwordKDFRuns; got != planted+1 || got > MaxPasswordSlots {
				t.Fatalf("%d Argon2id runs for %d password slots (limit %d)", got, planted+1, MaxPasswordSlots)
			}
		})
	}
	// The unforged config: one run.
	c2, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c2.UnlockPassword(testPassword); err != nil || c2.passwordKDFRuns != 1 {
		t.Fatalf("unlock: %v, %d runs", err, c2.passwordKDFRuns)
	}
}

// TestAddSlotPasswordLimit: key add refuses a password slot beyond
// MaxPasswordSlots (ErrSlotLimit: exit 13), so that no config this build
// writes is one it refuses to read.
func TestAddSlotPasswordLimit(t *testing.T) {
	c, master := newV2Config(t, randomBytes)
	for i := 1; ; i++ {
		h := SlotHeader{Type: SlotPassword, Label: fmt.Sprint("pw", i), KDF: c.Slots[0].Header.KDF}
		secret := bytes.Repeat([]byte{byte(i)}, SlotSecretSize)
		_, err := c.AddSlot(master, h, secret, bytes.NewReader(randomBytes()))
		if i < MaxPasswordSlots {
			if err != nil {
				t.Fatalf("password slot %d: %v", i+1, err)
			}
			continue
		}
		if !errors.Is(err, ErrSlotLimit) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("password slot %d: %v, want ErrSlotLimit", i+1, err)
		}
		break
	}
	if _, err := Parse(mustMarshal(t, c)); err != nil {
		t.Fatalf("a config with %d password slots: %v", MaxPasswordSlots, err)
	}
}
