// Command sivcmp runs every AES-SIV vector EncryptFS has (RFC 5297 A.1/A.2,
// testdata/vectors siv, names, xattr names, aes-256-siv content and reverse
// chunks, and every name in the example vaults) through our
// internal/crypto/siv and through candidate libraries, byte for byte.
// docs/format-crypto-notes.md §9 records its output and the decision.
//
// A separate module under testdata (so neither ./... nor CI builds it, and
// the main module gains no dependency). Run: cd testdata/sivcmp && go run .
package main

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/encryptfs/encryptfs/internal/config"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/siv"
	jsiv "github.com/jacobsa/crypto/siv"
	tsub "github.com/tink-crypto/tink-go/v2/daead/subtle"
)

// repo is the EncryptFS module root, relative to testdata/sivcmp.
const repo = "../.."

type vec struct {
	set, name string
	key       []byte
	ad        [][]byte
	plain     []byte
	want      []byte // V ‖ C as stored in the vector / on disk
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func load(name string, v any) {
	data, err := os.ReadFile(filepath.Join(repo, "testdata/vectors", name))
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		panic(err)
	}
}

var b64 = base64.RawURLEncoding

func pad(name []byte) []byte {
	n := 16 - len(name)%16
	return append(bytes.Clone(name), bytes.Repeat([]byte{byte(n)}, n)...)
}

func fileKey(contents, fid []byte) []byte {
	k, err := hkdf.Key(sha256.New, contents, fid, "encryptfs v1 file key aes-256-siv", 64)
	if err != nil {
		panic(err)
	}
	return k
}

func chunkAD(fid []byte, idx uint64, final bool) []byte {
	ad := append(bytes.Clone(fid), make([]byte, 9)...)
	binary.BigEndian.PutUint64(ad[16:], idx)
	if final {
		ad[24] = 1
	}
	return ad
}

func vectors() []vec {
	var vs []vec
	// RFC 5297 Appendix A.
	vs = append(vs, vec{set: "rfc5297", name: "A.1",
		key:   unhex("fffefdfc fbfaf9f8 f7f6f5f4 f3f2f1f0 f0f1f2f3 f4f5f6f7 f8f9fafb fcfdfeff"),
		ad:    [][]byte{unhex("10111213 14151617 18191a1b 1c1d1e1f 20212223 24252627")},
		plain: unhex("11223344 55667788 99aabbcc ddee"),
		want:  unhex("85632d07 c6e8f37f 950acd32 0a2ecc93 40c02b96 90c4dc04 daef7f6a fe5c")})
	vs = append(vs, vec{set: "rfc5297", name: "A.2",
		key: unhex("7f7e7d7c 7b7a7978 77767574 73727170 40414243 44454647 48494a4b 4c4d4e4f"),
		ad: [][]byte{unhex("00112233 44556677 8899aabb ccddeeff deaddada deaddada ffeeddcc bbaa9988 77665544 33221100"),
			unhex("10203040 50607080 90a0"), unhex("09f91102 9d74e35b d84156c5 635688c0")},
		plain: unhex("74686973 20697320 736f6d65 20706c61 696e7465 78742074 6f20656e 63727970 74207573 696e6720 5349562d 414553"),
		want:  unhex("7bdb6e3b 432667eb 06f4d14b ff2fbd0f cb900f2f ddbe4043 26601965 c889bf17 dba77ceb 094fa663 b7a3f748 ba8af829 ea64ad54 4a272e9c 485b62a3 fd5c0d")})

	var sv struct {
		Vectors []struct {
			Key, Plaintext, Output string
			AD                     []string
		}
	}
	load("siv.json", &sv)
	for i, v := range sv.Vectors {
		var ad [][]byte
		for _, a := range v.AD {
			ad = append(ad, unhex(a))
		}
		vs = append(vs, vec{set: "siv.json", name: fmt.Sprintf("#%d key%d pt%d ad%d", i, len(v.Key)/2, len(v.Plaintext)/2, len(ad)),
			key: unhex(v.Key), ad: ad, plain: unhex(v.Plaintext), want: unhex(v.Output)})
	}

	var nj struct {
		NamesKey string
		Names    []struct{ DirID, Name, EncName string }
	}
	load("names.json", &nj)
	for i, n := range nj.Names {
		want, err := b64.DecodeString(n.EncName)
		if err != nil {
			panic(err)
		}
		vs = append(vs, vec{set: "names.json", name: fmt.Sprintf("#%d len%d", i, len(n.Name)),
			key: unhex(nj.NamesKey), ad: [][]byte{unhex(n.DirID)}, plain: pad([]byte(n.Name)), want: want})
	}

	var mj struct {
		XattrNamesKey string
		Xattrs        []struct{ ObjectID, Name, BackingName string }
	}
	load("meta.json", &mj)
	for i, x := range mj.Xattrs {
		want, err := b64.DecodeString(strings.TrimPrefix(x.BackingName, "user.e."))
		if err != nil {
			panic(err)
		}
		vs = append(vs, vec{set: "meta.json xattr names", name: fmt.Sprintf("#%d %s", i, x.Name),
			key: unhex(mj.XattrNamesKey), ad: [][]byte{unhex(x.ObjectID)}, plain: []byte(x.Name[5:]), want: want})
	}

	var cj struct {
		ContentsKey string
		Chunks      []struct {
			Algorithm, FileID, Nonce, Plaintext, Chunk string
			Index                                      uint64
			Final                                      bool
		}
	}
	load("content.json", &cj)
	for i, c := range cj.Chunks {
		if c.Algorithm != "aes-256-siv" {
			continue
		}
		fid, nonce, chunk := unhex(c.FileID), unhex(c.Nonce), unhex(c.Chunk)
		vs = append(vs, vec{set: "content.json chunks", name: fmt.Sprintf("#%d idx%d final=%v pt%d", i, c.Index, c.Final, len(c.Plaintext)/2),
			key: fileKey(unhex(cj.ContentsKey), fid), ad: [][]byte{chunkAD(fid, c.Index, c.Final), nonce},
			plain: unhex(c.Plaintext), want: chunk[16:]})
	}

	var rj struct {
		MasterKey string
		Files     []struct {
			Path, Plaintext, Ciphertext string
			ChunkSize                   int
		}
	}
	load("reverse.json", &rj)
	k, err := keys.Derive(unhex(rj.MasterKey))
	if err != nil {
		panic(err)
	}
	for _, f := range rj.Files {
		ct := unhex(f.Ciphertext)
		fid := ct[4:20]
		body, plain := ct[36:], []byte(f.Plaintext)
		cc := 16 + 16 + f.ChunkSize
		for i := uint64(0); len(body) > 0; i++ {
			n := min(len(body), cc)
			pn := n - 32
			vs = append(vs, vec{set: "reverse.json chunks", name: fmt.Sprintf("%s chunk %d", f.Path, i),
				key: fileKey(k.Contents, fid), ad: [][]byte{chunkAD(fid, i, n == len(body)), body[:16]},
				plain: plain[:pn], want: body[16:n]})
			body, plain = body[n:], plain[pn:]
		}
	}
	vs = append(vs, exampleVaultNames()...)
	return vs
}

// exampleVaultNames: every encrypted name in the committed example vaults,
// decrypted with our siv, re-encrypted by the candidates.
func exampleVaultNames() []vec {
	var vs []vec
	for _, v := range []string{"v1-aes-256-gcm", "v1-xchacha20-poly1305"} {
		root := filepath.Join(repo, "testdata/example-vaults", v)
		cfg, err := config.Load(root)
		if err != nil {
			panic(err)
		}
		mk, err := cfg.Unlock([]byte("encryptfs example v1"))
		if err != nil {
			panic(err)
		}
		k, err := keys.Derive(mk)
		if err != nil {
			panic(err)
		}
		ours, _ := siv.New(k.Names)
		var walk func(dir string)
		walk = func(dir string) {
			dirID, err := os.ReadFile(filepath.Join(dir, "encryptfs.dirid"))
			if err != nil {
				panic(err)
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				enc := e.Name()
				if strings.HasPrefix(enc, "encryptfs.") && !strings.HasSuffix(enc, ".name") {
					continue
				}
				if strings.HasSuffix(enc, ".name") {
					b, _ := os.ReadFile(filepath.Join(dir, enc))
					enc = strings.TrimSpace(string(b))
				}
				raw, err := b64.DecodeString(enc)
				if err != nil {
					panic(err)
				}
				plain, err := ours.Open(nil, raw, dirID)
				if err != nil {
					panic(fmt.Sprintf("%s/%s: %v", dir, enc, err))
				}
				vs = append(vs, vec{set: "example-vault names", name: v + ":" + strings.TrimPrefix(dir, root) + "/" + enc[:8],
					key: k.Names, ad: [][]byte{dirID}, plain: plain, want: raw})
				if e.IsDir() {
					walk(filepath.Join(dir, e.Name()))
				}
			}
		}
		walk(root)
	}
	return vs
}

type impl struct {
	name string
	seal func(key, plain []byte, ad [][]byte) ([]byte, error)
}

func main() {
	impls := []impl{
		{"ours", func(key, plain []byte, ad [][]byte) ([]byte, error) {
			s, err := siv.New(key)
			if err != nil {
				return nil, err
			}
			return s.Seal(nil, plain, ad...), nil
		}},
		{"tink-go v2.9.0 daead/subtle.AESSIV", func(key, plain []byte, ad [][]byte) ([]byte, error) {
			s, err := tsub.NewAESSIV(key)
			if err != nil {
				return nil, err
			}
			if len(ad) != 1 {
				return nil, fmt.Errorf("not expressible: %d AD components (API takes exactly one)", len(ad))
			}
			return s.EncryptDeterministically(plain, ad[0])
		}},
		{"jacobsa/crypto/siv 2019-03-17", func(key, plain []byte, ad [][]byte) ([]byte, error) {
			return jsiv.Encrypt(nil, key, plain, ad)
		}},
	}
	vs := vectors()
	type tally struct {
		match, differ, unsupported int
		notes                      []string
	}
	results := map[string]*tally{}
	sets := []string{}
	seen := map[string]bool{}
	for _, v := range vs {
		if !seen[v.set] {
			seen[v.set] = true
			sets = append(sets, v.set)
		}
	}
	for _, im := range impls {
		for _, v := range vs {
			key := im.name + "|" + v.set
			if results[key] == nil {
				results[key] = &tally{}
			}
			t := results[key]
			got, err := im.seal(v.key, v.plain, v.ad)
			switch {
			case err != nil:
				t.unsupported++
				t.notes = append(t.notes, fmt.Sprintf("%s: %v", v.name, err))
			case bytes.Equal(got, v.want):
				t.match++
			default:
				t.differ++
				t.notes = append(t.notes, fmt.Sprintf("%s: DIFFERS", v.name))
			}
		}
	}
	for _, im := range impls {
		fmt.Printf("== %s\n", im.name)
		for _, s := range sets {
			t := results[im.name+"|"+s]
			fmt.Printf("  %-24s match %2d  differ %2d  not expressible %2d\n", s, t.match, t.differ, t.unsupported)
			for _, n := range t.notes {
				fmt.Printf("      %s\n", n)
			}
		}
	}
	// Workarounds one might try with tink's single-AD API, on the vectors it
	// cannot express: none reproduces the stored bytes.
	fmt.Println("== tink workarounds on multi-component / zero-component vectors")
	for _, v := range vs {
		if len(v.ad) == 1 || len(v.key) != 64 {
			continue
		}
		s, _ := tsub.NewAESSIV(v.key)
		cat := bytes.Join(v.ad, nil)
		got, _ := s.EncryptDeterministically(v.plain, cat)
		fmt.Printf("  %-20s %-28s AD=concat(%d comps): equal=%v\n", v.set, v.name, len(v.ad), bytes.Equal(got, v.want))
	}
}
