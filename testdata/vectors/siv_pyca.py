#!/usr/bin/env python3
"""Writes testdata/vectors/siv-pyca.json: AES-SIV (RFC 5297) outputs computed
by pyca/cryptography's AESSIV (OpenSSL's implementation), not by our Go code.
internal/crypto/siv's TestPycaVectors checks our Seal and Open against the
file, so CI needs no Python.

Inputs are deterministic (SHA-256 in counter mode over a label), so rerunning
the script with any pyca release must rewrite the file byte for byte; a diff
means one of the two implementations changed.

Regenerate: python3 -m venv /tmp/v && /tmp/v/bin/pip install cryptography &&
            /tmp/v/bin/python testdata/vectors/siv_pyca.py
"""
import hashlib, json, os

from cryptography.hazmat.primitives.ciphers.aead import AESSIV

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "siv-pyca.json")


def stream(label, n):
    """n pseudo-random bytes: SHA-256(label || 0x00 || counter) blocks."""
    out = b""
    i = 0
    while len(out) < n:
        out += hashlib.sha256(label.encode() + b"\0" + i.to_bytes(4, "big")).digest()
        i += 1
    return out[:n]


def case(name, key_len, plain_len, ad_lens):
    key = stream(name + "/key", key_len)
    plain = stream(name + "/plaintext", plain_len)
    ad = [stream("%s/ad%d" % (name, i), n) for i, n in enumerate(ad_lens)]
    # None and [] both mean "no components" to pyca; [b""] is one empty one.
    out = AESSIV(key).encrypt(plain, ad or None)
    return {"Name": name, "Key": key.hex(), "AD": [a.hex() for a in ad],
            "Plaintext": plain.hex(), "Output": out.hex()}


cases = []
# Every key size against plaintext lengths around the block size, around our
# streamThreshold (512: the switch to the standard library's CTR) and a
# content chunk, with 0..3 AD components of varying length.
lengths = [0, 1, 15, 16, 17, 31, 32, 33, 127, 511, 512, 513]
for key_len in (32, 48, 64):
    for i, n in enumerate(lengths):
        ads = [(i * 7 + j * 13) % 41 for j in range(i % 4)]
        cases.append(case("k%d/p%d/a%d" % (key_len, n, len(ads)), key_len, n, ads))
# The shapes EncryptFS uses (64-byte keys): content chunks (AD = fileID ‖
# index ‖ final, 25 bytes; then the 16-byte nonce), names (AD = [dirID],
# PKCS#7-padded names) and xattr names (AD = [objectID]).
for n in (1, 100, 4095, 4096):
    cases.append(case("chunk/p%d" % n, 64, n, [25, 16]))
for n in (16, 32, 48, 256):
    cases.append(case("name/p%d" % n, 64, n, [16]))
cases.append(case("xattr/p3", 64, 3, [16]))
# Empty components are components: [""] differs from no AD at all.
cases.append(case("empty/one", 64, 20, [0]))
cases.append(case("empty/two", 64, 20, [0, 0]))
cases.append(case("empty/last", 64, 20, [5, 0]))
cases.append(case("empty/plain-and-ad", 64, 0, [0]))
# Many components, up to our limit (MaxAssociatedData-1 = 125).
cases.append(case("many/10", 64, 40, [i % 19 for i in range(10)]))
cases.append(case("many/125", 32, 40, [i % 7 for i in range(125)]))

doc = {
    "Description": "AES-SIV (RFC 5297) outputs computed by pyca/cryptography AESSIV "
                   "(testdata/vectors/siv_pyca.py); Output = V || C. "
                   "Checked by internal/crypto/siv TestPycaVectors.",
    "Vectors": cases,
}
with open(OUT, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
print("wrote %d vectors to %s" % (len(cases), OUT))
