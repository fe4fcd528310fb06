package reverse

import (
	"bytes"
	"testing"

	"github.com/encryptfs/encryptfs/internal/crypto/content"
	"github.com/encryptfs/encryptfs/internal/crypto/internal/vectortest"
	"github.com/encryptfs/encryptfs/internal/crypto/keys"
	"github.com/encryptfs/encryptfs/internal/crypto/meta"
	"github.com/encryptfs/encryptfs/internal/crypto/names"
)

type idVector struct {
	Path   string
	DirID  vectortest.Hex // HMAC(R, "dirid\x00" ‖ Path)[:16]
	FileID vectortest.Hex // HMAC(R, "fileid\x00" ‖ Path)[:16]
}

type nonceVector struct {
	FileID vectortest.Hex
	Index  uint64
	Nonce  vectortest.Hex // HMAC(R, "nonce\x00" ‖ FileID ‖ u64 BE Index)[:16]
}

type fileVector struct {
	Path       string
	ChunkSize  int
	Plaintext  string
	Ciphertext vectortest.Hex // the whole file as the view shows it
}

type symlinkVector struct {
	DirPath string
	Name    string
	Target  string
	Nonce   vectortest.Hex // HMAC(R, "symlink\x00" ‖ dirID ‖ Name ‖ 0 ‖ Target)[:24]
	Blob    vectortest.Hex // meta.Symlinks.Seal with that nonce
	EncName string         // the symlink's encrypted name in its directory
}

type reverseVectors struct {
	Description string
	MasterKey   vectortest.Hex
	ReverseKey  vectortest.Hex
	IDs         []idVector
	Nonces      []nonceVector
	Files       []fileVector
	Symlinks    []symlinkVector
}

func generateReverseVectors(t *testing.T) reverseVectors {
	k, err := keys.Derive(vectortest.MasterKey())
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(k.Reverse)
	if err != nil {
		t.Fatal(err)
	}
	v := reverseVectors{
		Description: "Reverse mode (docs/reverse.md): IDs and nonces are HMAC-SHA256(reverse key, label ‖ 0x00 ‖ input) truncated; " +
			"files are aes-256-siv with header flags 0 and derived chunk nonces.",
		MasterKey:  vectortest.MasterKey(),
		ReverseKey: k.Reverse,
	}
	for _, p := range []string{"", "docs", "docs/report.txt"} {
		id := d.FileID(p)
		v.IDs = append(v.IDs, idVector{Path: p, DirID: d.DirID(p), FileID: id[:]})
	}
	id := d.FileID("docs/report.txt")
	for _, i := range []uint64{0, 1} {
		v.Nonces = append(v.Nonces, nonceVector{FileID: id[:], Index: i, Nonce: d.ChunkNonce(id, i)})
	}
	suite, err := content.NewSuite(content.AES256SIV, content.MinChunk, k.Contents, k.HeaderMAC)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ path, plain string }{
		{"docs/report.txt", "hello, reverse mode\n"},
		{"a", string(bytes.Repeat([]byte{'x'}, content.MinChunk+1))}, // two chunks
	} {
		v.Files = append(v.Files, fileVector{Path: f.path, ChunkSize: content.MinChunk, Plaintext: f.plain,
			Ciphertext: sealFile(t, suite, d, f.path, []byte(f.plain))})
	}
	links, err := meta.NewSymlinks(k.Symlinks)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := names.New(k.Names)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ dir, name, target string }{{"docs", "latest", "report.txt"}, {"", "abs", "/etc/hostname"}} {
		dirID := d.DirID(l.dir)
		nonce := d.SymlinkNonce(dirID, l.name, l.target)
		blob, err := links.Seal(dirID, l.name, l.target, bytes.NewReader(nonce))
		if err != nil {
			t.Fatal(err)
		}
		enc, err := nc.Encrypt(dirID, l.name)
		if err != nil {
			t.Fatal(err)
		}
		v.Symlinks = append(v.Symlinks, symlinkVector{DirPath: l.dir, Name: l.name, Target: l.target, Nonce: nonce, Blob: blob, EncName: enc})
	}
	return v
}

// sealFile builds the ciphertext of a whole file the way the reverse view
// does: header (flags 0, derived fileID) and chunks with derived nonces.
func sealFile(t *testing.T, s *content.Suite, d *Deriver, path string, plain []byte) []byte {
	t.Helper()
	id := d.FileID(path)
	out := s.MarshalHeader(content.Header{FileID: id})
	fc, err := s.File(id)
	if err != nil {
		t.Fatal(err)
	}
	cs := s.ChunkSize()
	for i := 0; i*cs < len(plain); i++ {
		end := min((i+1)*cs, len(plain))
		out = fc.Seal(out, plain[i*cs:end], uint64(i), end == len(plain), d.ChunkNonce(id, uint64(i)))
	}
	if int64(len(out)) != s.CipherSize(int64(len(plain))) {
		t.Fatalf("sealed %d bytes, CipherSize says %d", len(out), s.CipherSize(int64(len(plain))))
	}
	return out
}

// TestVectors checks testdata/vectors/reverse.json (rewrite it with -update)
// and opens the stored files and symlink blobs with the forward-mode ciphers.
func TestVectors(t *testing.T) {
	var file reverseVectors
	vectortest.Check(t, "reverse.json", generateReverseVectors(t), &file)
	k, err := keys.Derive(file.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range file.Files {
		s, err := content.NewSuite(content.AES256SIV, f.ChunkSize, k.Contents, k.HeaderMAC)
		if err != nil {
			t.Fatal(err)
		}
		h, err := s.ParseHeader(f.Ciphertext[:content.HeaderSize])
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		fc, err := s.File(h.FileID)
		if err != nil {
			t.Fatal(err)
		}
		var plain []byte
		body := f.Ciphertext[content.HeaderSize:]
		for i := uint64(0); len(body) > 0; i++ {
			n := min(len(body), s.CipherChunkSize())
			plain, err = fc.Open(plain, body[:n], i, n == len(body))
			if err != nil {
				t.Fatalf("%s chunk %d: %v", f.Path, i, err)
			}
			body = body[n:]
		}
		if string(plain) != f.Plaintext {
			t.Errorf("%s: decrypts to %q", f.Path, plain)
		}
	}
	links, err := meta.NewSymlinks(k.Symlinks)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range file.Symlinks {
		var dirID []byte
		for _, id := range file.IDs {
			if id.Path == l.DirPath {
				dirID = id.DirID
			}
		}
		got, err := links.Open(dirID, l.Name, l.Blob)
		if err != nil || got != l.Target {
			t.Errorf("symlink %s/%s: %q, %v", l.DirPath, l.Name, got, err)
		}
		if !bytes.Equal(l.Blob[:SymlinkNonceSize], l.Nonce) {
			t.Errorf("symlink %s/%s: blob does not start with the derived nonce", l.DirPath, l.Name)
		}
	}
}
