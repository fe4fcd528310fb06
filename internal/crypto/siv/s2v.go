package siv

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
)

const blockSize = 16

// cmac is AES-CMAC (RFC 4493) with its subkeys precomputed.
type cmac struct {
	block  cipher.Block
	k1, k2 [blockSize]byte
	zero   [blockSize]byte // CMAC(K, 0^128), the start value of S2V
}

// newCMAC derives the CMAC subkeys K1 = dbl(L), K2 = dbl(K1), L = AES(K, 0).
func newCMAC(b cipher.Block) cmac {
	c := cmac{block: b}
	var l [blockSize]byte
	b.Encrypt(l[:], l[:])
	c.k1 = dbl(l)
	c.k2 = dbl(c.k1)
	// CMAC of one complete zero block: AES(0 xor K1).
	b.Encrypt(c.zero[:], c.k1[:])
	return c
}

// dbl multiplies by x in GF(2^128) (RFC 5297 §2.3), in constant time.
func dbl(in [blockSize]byte) [blockSize]byte {
	var out [blockSize]byte
	carry := in[0] >> 7
	for i := 0; i < blockSize-1; i++ {
		out[i] = in[i]<<1 | in[i+1]>>7
	}
	out[blockSize-1] = in[blockSize-1]<<1 ^ (0x87 & -carry)
	return out
}

// sum computes CMAC(head ‖ tail) into sc.x. head must be a whole number of
// blocks; when tail is empty, head must be empty too (the message's last
// block is always taken from tail).
func (c *cmac) sum(sc *scratch, head, tail []byte) {
	clear(sc.x[:])
	c.blocks(sc, head)
	if len(tail) > blockSize {
		split := (len(tail) - 1) / blockSize * blockSize
		c.blocks(sc, tail[:split])
		tail = tail[split:]
	}
	// Last block: complete -> XOR K1; partial or empty -> pad 10* and XOR K2.
	if len(tail) == blockSize {
		subtle.XORBytes(sc.x[:], sc.x[:], tail)
		subtle.XORBytes(sc.x[:], sc.x[:], c.k1[:])
	} else {
		subtle.XORBytes(sc.x[:len(tail)], sc.x[:len(tail)], tail)
		sc.x[len(tail)] ^= 0x80
		subtle.XORBytes(sc.x[:], sc.x[:], c.k2[:])
	}
	c.block.Encrypt(sc.x[:], sc.x[:])
}

// blocks runs the CBC-MAC chain over whole blocks: x = AES(x xor block).
// The XOR is done in two 64-bit words (byte order is irrelevant for XOR);
// this loop bounds the speed of AES-SIV, so it avoids per-block calls
// other than Encrypt.
func (c *cmac) blocks(sc *scratch, data []byte) {
	for ; len(data) >= blockSize; data = data[blockSize:] {
		x0 := binary.LittleEndian.Uint64(sc.x[:8]) ^ binary.LittleEndian.Uint64(data[:8])
		x1 := binary.LittleEndian.Uint64(sc.x[8:]) ^ binary.LittleEndian.Uint64(data[8:16])
		binary.LittleEndian.PutUint64(sc.x[:8], x0)
		binary.LittleEndian.PutUint64(sc.x[8:], x1)
		c.block.Encrypt(sc.x[:], sc.x[:])
	}
}

// sumMessage computes CMAC(msg) into sc.x.
func (c *cmac) sumMessage(sc *scratch, msg []byte) {
	split := 0
	if len(msg) > 0 {
		split = (len(msg) - 1) / blockSize * blockSize
	}
	c.sum(sc, msg[:split], msg[split:])
}

// s2v computes S2V(K1, ad..., plaintext) (RFC 5297 §2.4) into sc.v.
func (s *SIV) s2v(sc *scratch, ad [][]byte, plaintext []byte) {
	c := &s.mac
	sc.d = c.zero
	for _, a := range ad {
		c.sumMessage(sc, a)
		sc.d = dbl(sc.d)
		subtle.XORBytes(sc.d[:], sc.d[:], sc.x[:])
	}
	if len(plaintext) >= blockSize {
		// T = plaintext xorend D: only the last 16 bytes change. Copy the
		// (at most 31-byte) block-aligned tail that contains them, so the
		// plaintext itself is never copied or modified.
		split := (len(plaintext) - blockSize) / blockSize * blockSize
		tail := sc.tail[:len(plaintext)-split]
		copy(tail, plaintext[split:])
		t := tail[len(tail)-blockSize:]
		subtle.XORBytes(t, t, sc.d[:])
		c.sum(sc, plaintext[:split], tail)
	} else {
		// T = dbl(D) xor pad(plaintext).
		sc.d = dbl(sc.d)
		t := sc.tail[:blockSize]
		copy(t, sc.d[:])
		subtle.XORBytes(t[:len(plaintext)], t[:len(plaintext)], plaintext)
		t[len(plaintext)] ^= 0x80
		c.sum(sc, nil, t)
	}
	sc.v = sc.x
}
