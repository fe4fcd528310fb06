#!/usr/bin/env python3
"""Independent cross-check of the EncryptFS known-answer vectors with
pyca/cryptography (not used by the Go code): HKDF subkeys, format 2 config slots and MAC, master-key epochs, header HMACs, Argon2id, symlink and xattr blobs,
file roots (v2 tag blocks and root: roots-v2.json; the compact layout:
roots-compact-v2.json; trimmed leaves: roots-trimmed-v2.json),
AES-256-GCM (16-byte nonce) and AES-256-SIV chunks, names and xattr names.
XChaCha20-Poly1305 via a small HChaCha20 written here.
Run: python3 testdata/vectors/crosscheck.py"""
import base64, hashlib, hmac, json, os, struct, sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives import hashes

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    path = os.path.join(HERE, name)
    return json.load(open(path)) if os.path.exists(path) else None


def hkdf(secret, salt, info, n):
    return HKDF(hashes.SHA256(), n, salt or None, info.encode()).derive(secret)


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def hchacha20(key, nonce16):
    """HChaCha20 (draft-irtf-cfrg-xchacha §2.2), written out for independence."""
    def rotl(v, c):
        return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))

    def qr(x, a, b, c, d):
        x[a] = (x[a] + x[b]) & 0xFFFFFFFF; x[d] = rotl(x[d] ^ x[a], 16)
        x[c] = (x[c] + x[d]) & 0xFFFFFFFF; x[b] = rotl(x[b] ^ x[c], 12)
        x[a] = (x[a] + x[b]) & 0xFFFFFFFF; x[d] = rotl(x[d] ^ x[a], 8)
        x[c] = (x[c] + x[d]) & 0xFFFFFFFF; x[b] = rotl(x[b] ^ x[c], 7)

    x = list(struct.unpack("<4I", b"expand 32-byte k") + struct.unpack("<8I", key) + struct.unpack("<4I", nonce16))
    for _ in range(10):
        qr(x, 0, 4, 8, 12); qr(x, 1, 5, 9, 13); qr(x, 2, 6, 10, 14); qr(x, 3, 7, 11, 15)
        qr(x, 0, 5, 10, 15); qr(x, 1, 6, 11, 12); qr(x, 2, 7, 8, 13); qr(x, 3, 4, 9, 14)
    return struct.pack("<8I", *(x[0:4] + x[12:16]))


def xchacha_open(key, blob, ad):
    """XChaCha20-Poly1305 = ChaCha20-Poly1305 under HChaCha20(key, n[:16])
    with nonce 0^4 || n[16:24]."""
    sub = hchacha20(key, blob[:16])
    return ChaCha20Poly1305(sub).decrypt(b"\0" * 4 + blob[16:24], blob[24:], ad)


checked = 0
k = load("keys.json")
master = bytes.fromhex(k["MasterKey"])
for s in k["Subkeys"]:
    want = bytes.fromhex(s["Key"])
    assert hkdf(master, b"", s["Label"], len(want)) == want, s["Label"]
    checked += 1

c = load("content.json")
ck, mk = bytes.fromhex(c["ContentsKey"]), bytes.fromhex(c["HeaderMACKey"])
for h in c["Headers"]:
    first = struct.pack(">HH", 1, h["Flags"]) + bytes.fromhex(h["FileID"])
    assert first + hmac.new(mk, first, hashlib.sha256).digest()[:16] == bytes.fromhex(h["Header"])
    checked += 1
for v in c["Chunks"]:
    alg, fid = v["Algorithm"], bytes.fromhex(v["FileID"])
    nonce, plain, chunk = (bytes.fromhex(v[x]) for x in ("Nonce", "Plaintext", "Chunk"))
    ad = fid + struct.pack(">QB", v["Index"], 1 if v["Final"] else 0)
    key = hkdf(ck, fid, "encryptfs v1 file key " + alg, 64 if alg == "aes-256-siv" else 32)
    if alg == "aes-256-gcm":
        assert nonce + AESGCM(key).encrypt(nonce, plain, ad) == chunk
    elif alg == "aes-256-siv":
        assert nonce + AESSIV(key).encrypt(plain, [ad, nonce]) == chunk
    else:
        assert xchacha_open(key, chunk, ad) == plain
    checked += 1

n = load("names.json")
if n:
    nk = bytes.fromhex(n["NamesKey"])
    for v in n["Names"]:
        name = v["Name"].encode()
        padded = name + bytes([16 - len(name) % 16]) * (16 - len(name) % 16)  # PKCS#7 to 16
        enc = b64(AESSIV(nk).encrypt(padded, [bytes.fromhex(v["DirID"])]))
        assert enc == v["EncName"], v["Name"]
        if v["Long"]:
            h = b64(hashlib.sha256(enc.encode()).digest())
            assert v["Backing"] == "encryptfs.long." + h and v["Sidecar"] == v["Backing"] + ".name"
        else:
            assert v["Backing"] == enc
        checked += 1

m = load("meta.json")
if m:
    xk = bytes.fromhex(m["XattrNamesKey"])
    for v in m["Xattrs"]:
        oid = bytes.fromhex(v["ObjectID"])
        assert "user.e." + b64(AESSIV(xk).encrypt(v["Name"][5:].encode(), [oid])) == v["BackingName"]
        checked += 1

sv = load("siv.json")
if sv:
    for v in sv["Vectors"]:
        key, pt = bytes.fromhex(v["Key"]), bytes.fromhex(v["Plaintext"])
        ad = [bytes.fromhex(a) for a in v["AD"]]
        if not pt:  # pyca refuses empty plaintexts; nothing to compare then
            continue
        assert AESSIV(key).encrypt(pt, ad or None) == bytes.fromhex(v["Output"])
        checked += 1

kd = load("kdf.json")
if kd:
    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
    for v in kd["Vectors"]:
        p = v["Params"]
        kdf = Argon2id(salt=base64.b64decode(p["Salt"]), length=32, iterations=p["Time"],
                       lanes=p["Threads"], memory_cost=p["MemoryKiB"])
        assert kdf.derive(v["Password"].encode()) == bytes.fromhex(v["Key"])
        checked += 1

if m:
    sk = bytes.fromhex(m["SymlinksKey"])
    for v in m["Symlinks"]:
        ad = b"symlink" + bytes.fromhex(v["DirID"]) + v["Name"].encode()
        blob = bytes.fromhex(v["Blob"])
        assert xchacha_open(sk, blob, ad) == v["Target"].encode()
        if not v["SidecarName"]:
            assert v["BackingTarget"] == b64(blob)
        checked += 1
    vk = bytes.fromhex(m["XattrValuesKey"])
    for v in m["Xattrs"]:
        ad = bytes.fromhex(v["ObjectID"]) + v["BackingName"].encode()
        assert xchacha_open(vk, bytes.fromhex(v["Blob"]), ad) == bytes.fromhex(v["Value"])
        checked += 1

def raw_value(text, key, start=0):
    """The exact text of the JSON value after "key": in text (from start):
    what format 2 authenticates byte for byte."""
    i = text.index('"%s": ' % key, start) + len(key) + 4
    depth, j, in_str = 0, i, False
    while True:
        c = text[j]
        if in_str:
            if c == "\\":
                j += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return text[i:j + 1], j + 1
        j += 1


v2 = load("config-v2.json")
if v2:
    from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
    text = v2["Config"]
    conf = json.loads(text)
    master = bytes.fromhex(v2["MasterKey"])
    params, _ = raw_value(text, "Params")
    slots_raw, _ = raw_value(text, "Slots")
    mac_key = hkdf(master, b"", "encryptfs v2 config mac", 32)
    assert mac_key == bytes.fromhex(v2["MACKey"])
    mac = hmac.new(mac_key, b"encryptfs.conf v2\0" + params.encode() + b"\0" + slots_raw.encode(), hashlib.sha256).digest()
    assert mac == base64.b64decode(conf["MAC"])
    checked += 1
    pos = 0
    for slot, vec in zip(conf["Slots"], v2["Slots"]):
        header, pos = raw_value(slots_raw, "Header", pos)
        h = slot["Header"]
        if h["Type"] == "password":
            k = h["KDF"]
            secret = Argon2id(salt=base64.b64decode(k["Salt"]), length=32, iterations=k["Time"],
                              lanes=k["Threads"], memory_cost=k["MemoryKiB"]).derive(v2["Password"].encode())
        else:
            cred = bytes.fromhex(v2["Keyfile"] if h["Type"] == "keyfile" else v2["RecoveryKey"])
            label = "encryptfs v2 keyfile" if h["Type"] == "keyfile" else "encryptfs v2 recovery key"
            secret = hkdf(cred, base64.b64decode(h["Salt"]), label, 32)
        assert secret == bytes.fromhex(vec["Secret"]), h["ID"]
        wk = hkdf(secret, b"", "encryptfs v2 slot wrap", 32)
        ad = b"encryptfs.conf v2 slot\0" + params.encode() + b"\0" + header.encode()
        assert ad == vec["AD"].encode()
        w = base64.b64decode(slot["Wrapped"])
        assert AESGCM(wk).decrypt(w[:12], w[12:], ad) == master, h["ID"]
        checked += 1

ep = load("config-epochs.json")
if ep:
    # Master-key epochs (docs/format.md §3b): K_2 from the keyfile slot,
    # the older keys from OldEpochs, the MAC over the epoch tail.
    text = ep["Config"]
    conf = json.loads(text)
    keys = [bytes.fromhex(k) for k in ep["EpochKeys"]]
    cur, e = keys[-1], conf["Epoch"]
    params, _ = raw_value(text, "Params")
    slots_raw, _ = raw_value(text, "Slots")
    sealed = base64.b64decode(conf["OldEpochs"])
    seal_key = hkdf(cur, b"", "encryptfs v2 epoch seal", 32)
    assert seal_key == bytes.fromhex(ep["SealKey"])
    ad = b"encryptfs.conf v2 epochs\0" + params.encode() + b"\0" + struct.pack(">I", e)
    assert ad == ep["SealAD"].encode()
    assert AESGCM(seal_key).decrypt(sealed[:12], sealed[12:], ad) == b"".join(keys[:-1])
    mac_key = hkdf(cur, b"", "encryptfs v2 config mac", 32)
    assert mac_key == bytes.fromhex(ep["MACKey"])
    tail = b"\0" + struct.pack(">I", e) + sealed
    mac = hmac.new(mac_key, b"encryptfs.conf v2\0" + params.encode() + b"\0" + slots_raw.encode() + tail, hashlib.sha256).digest()
    assert mac == base64.b64decode(conf["MAC"])
    checked += 1
    pos = 0
    for slot in conf["Slots"]:
        header, pos = raw_value(slots_raw, "Header", pos)
        if slot["Header"]["Type"] == "keyfile":
            break
    secret = hkdf(bytes.fromhex(ep["Keyfile"]), base64.b64decode(slot["Header"]["Salt"]), "encryptfs v2 keyfile", 32)
    wk = hkdf(secret, b"", "encryptfs v2 slot wrap", 32)
    w = base64.b64decode(slot["Wrapped"])
    assert AESGCM(wk).decrypt(w[:12], w[12:], b"encryptfs.conf v2 slot\0" + params.encode() + b"\0" + header.encode()) == cur
    checked += 1
# Format-2 features (config-v2.json "Bound" and "Upgraded"): the MAC over
# Params, Slots and (upgraded) SlotParams; slot 1 (password) opens with the
# AD over SlotParams when stored, else Params.
for name in ("Bound", "Upgraded"):
    fv = (v2 or {}).get(name)
    if not fv:
        continue
    text = fv["Config"]
    conf = json.loads(text)
    master = bytes.fromhex(fv["MasterKey"])
    assert base64.b64decode(conf["Params"]["VaultID"]) == bytes.fromhex(fv["VaultID"])
    params, _ = raw_value(text, "Params")
    slots_raw, _ = raw_value(text, "Slots")
    mac_in = b"encryptfs.conf v2\0" + params.encode() + b"\0" + slots_raw.encode()
    sealed = params
    if "SlotParams" in conf:
        sealed, _ = raw_value(text, "SlotParams")
        mac_in += b"\0" + sealed.encode()
    assert mac_in == fv["MACInput"].encode(), name
    mac_key = hkdf(master, b"", "encryptfs v2 config mac", 32)
    assert hmac.new(mac_key, mac_in, hashlib.sha256).digest() == base64.b64decode(conf["MAC"]), name
    header, _ = raw_value(slots_raw, "Header", 0)
    k = conf["Slots"][0]["Header"]["KDF"]
    secret = Argon2id(salt=base64.b64decode(k["Salt"]), length=32, iterations=k["Time"],
                      lanes=k["Threads"], memory_cost=k["MemoryKiB"]).derive(v2["Password"].encode())
    ad = b"encryptfs.conf v2 slot\0" + sealed.encode() + b"\0" + header.encode()
    assert ad == fv["SlotAD"].encode(), name
    w = base64.b64decode(conf["Slots"][0]["Wrapped"])
    assert AESGCM(hkdf(secret, b"", "encryptfs v2 slot wrap", 32)).decrypt(w[:12], w[12:], ad) == master, name
    checked += 2
def open_chunk(alg, key, chunk, fid, i, final):
    """Chunk i of file fid opened (format.md §5.3: AD = fileID ‖ i ‖ final)."""
    ad = fid + struct.pack(">QB", i, 1 if final else 0)
    if alg == "aes-256-gcm":
        return AESGCM(key).decrypt(chunk[:16], chunk[16:], ad)
    if alg == "aes-256-siv":
        return AESSIV(key).decrypt(chunk[16:], [ad, chunk[:16]])
    return xchacha_open(key, chunk, ad)


def file_root(mk, fid, size, gen, hs):
    """A file root (format.md §16) over its tag blocks' leaves hs."""
    level = hs
    if len(hs) > 256:
        level = [hashlib.sha256(b"\x01" + b"".join(hs[i:i + 256])).digest() for i in range(0, len(hs), 256)]
    msg = b"encryptfs v2 file root" + fid + struct.pack(">QQQ", size, gen, len(hs)) + b"".join(level)
    return hmac.new(mk, msg, hashlib.sha256).digest()[:16]


def ctags(n):
    """Stored tag bytes of a compact file of n chunks."""
    return (256 if n >= 2 else 0) + (3840 if n >= 17 else 0) + max((n + 255) // 256 - 1, 0) * 4096


def coffset(i, ccs):
    """Offset of chunk i in the compact layout."""
    if i == 0:
        return 128
    if i < 16:
        return 128 + 256 + i * ccs
    return 128 + i * ccs + (i // 256 + 1) * 4096


def check_compact_file(v, mk, ck, leaf, want_flags):
    """One stored file of the compact layout: header MAC and fields, the
    root over its tag blocks (leaf: the rule, H or T), every chunk."""
    alg, cs, st = v["Algorithm"], v["ChunkSize"], bytes.fromhex(v["Stored"])
    fid, plain = bytes.fromhex(v["FileID"]), bytes.fromhex(v["Plaintext"])
    ns = 24 if alg == "xchacha20-poly1305" else 16
    ccs = cs + ns + 16
    hdr = st[:128]
    assert hmac.new(mk, hdr[:112], hashlib.sha256).digest()[:16] == hdr[112:]
    version, flags, epoch = struct.unpack(">HHI", hdr[:8])
    size, gen = struct.unpack(">QQ", hdr[24:40])
    assert (version, flags, hdr[8:24], size) == (2, want_flags, fid, len(plain))
    n = (size + cs - 1) // cs
    assert len(st) == 128 + size + n * (ns + 16) + ctags(n), (alg, len(st))
    chunks = [st[coffset(i, ccs):coffset(i, ccs) + min(cs, size - i * cs) + ns + 16] for i in range(n)]

    def tag_of(chunk):
        return chunk[ns:ns + 16] if alg == "aes-256-siv" else chunk[-16:]
    # Tag block 0 as hashed: its 256 entries whatever is stored.
    block0 = bytearray(4096)
    if n == 1:
        block0[:16] = tag_of(chunks[0])  # no entry stored: chunk 0's own tag
    if n >= 2:
        block0[:256] = st[128 + ccs:128 + ccs + 256]
    if n >= 17:
        b = 128 + 256 + 16 * ccs
        block0[256:] = st[b:b + 3840]
    blocks = [bytes(block0)]
    for g in range(1, (n + 255) // 256):
        b = 128 + g * (4096 + 256 * ccs)
        blocks.append(st[b:b + 4096])
    assert file_root(mk, fid, size, gen, [leaf(b) for b in blocks]) == hdr[40:56], alg
    key = hkdf(ck, fid, "encryptfs v1 file key " + alg, 64 if alg == "aes-256-siv" else 32)
    got = b""
    for i, chunk in enumerate(chunks):
        entry = blocks[i // 256][16 * (i % 256):16 * (i % 256) + 16]
        if entry == bytes(16):
            got += bytes(min(cs, size - i * cs))  # a hole
            continue
        assert tag_of(chunk) == entry, (alg, i)
        got += open_chunk(alg, key, chunk, fid, i, i == n - 1)
    assert got == plain, alg
    assert blocks[-1][16 * (n - (len(blocks) - 1) * 256):] == bytes(4096 - 16 * (n - (len(blocks) - 1) * 256))


r = load("roots-v2.json")
if r:
    rmk = bytes.fromhex(r["HeaderMACKey"])

    for v in r["Roots"]:
        hs = [hashlib.sha256(b"block" + bytes([k >> 8 & 0xFF, k & 0xFF])).digest() for k in range(v["Blocks"])]
        assert file_root(rmk, bytes.fromhex(v["FileID"]), v["Size"], v["Gen"], hs) == bytes.fromhex(v["Root"]), v["Name"]
        checked += 1
    rck = bytes.fromhex(r["ContentsKey"])
    for v in r["Files"]:
        alg, cs, st = v["Algorithm"], v["ChunkSize"], bytes.fromhex(v["Stored"])
        fid, plain = bytes.fromhex(v["FileID"]), bytes.fromhex(v["Plaintext"])
        ns = 24 if alg == "xchacha20-poly1305" else 16
        hdr = st[:128]
        assert hmac.new(rmk, hdr[:112], hashlib.sha256).digest()[:16] == hdr[112:]
        version, flags, epoch = struct.unpack(">HHI", hdr[:8])
        size, gen = struct.unpack(">QQ", hdr[24:40])
        assert (version, flags, hdr[8:24], size) == (2, 0, fid, len(plain))
        block = st[128:128 + 4096]
        assert file_root(rmk, fid, size, gen, [hashlib.sha256(b"\x00" + block).digest()]) == hdr[40:56]
        key = hkdf(rck, fid, "encryptfs v1 file key " + alg, 64 if alg == "aes-256-siv" else 32)
        got, nchunks = b"", (size + cs - 1) // cs
        assert len(st) == 128 + 4096 + size + nchunks * (ns + 16)
        for i in range(nchunks):
            n = min(cs, size - i * cs)
            off = 128 + 4096 + i * (cs + ns + 16)
            chunk, entry = st[off:off + n + ns + 16], block[16 * i:16 * i + 16]
            if entry == bytes(16):
                got += bytes(n)  # a hole
                continue
            tag = chunk[ns:ns + 16] if alg == "aes-256-siv" else chunk[-16:]
            assert tag == entry, (alg, i)
            got += open_chunk(alg, key, chunk, fid, i, i == nchunks - 1)
        assert got == plain, alg
        assert block[16 * nchunks:] == bytes(4096 - 16 * nchunks)
        checked += 1

rc = load("roots-compact-v2.json")
if rc:
    # Compact layout (CompactRoots, format.md §16): chunk 0 at 128, piece
    # A (entries 0..15) after it for 2+ chunks, chunks 1..15, piece B
    # (entries 16..255) after chunk 15 for 17+ chunks, then as FileRoots.
    cmk, cck = bytes.fromhex(rc["HeaderMACKey"]), bytes.fromhex(rc["ContentsKey"])

    for v in rc["Sizes"]:
        cs, size = v["ChunkSize"], v["PlainSize"]
        n = (size + cs - 1) // cs
        want = 0 if size == 0 else 128 + size + n * 32 + ctags(n)  # AES-GCM: 16-byte nonce, 16-byte tag
        assert want == v["CipherSize"], v
        checked += 1
    for v in rc["Files"]:
        check_compact_file(v, cmk, cck, lambda b: hashlib.sha256(b"\x00" + b).digest(), 0)
        checked += 1

rt = load("roots-trimmed-v2.json")
if rt:
    # Trimmed leaves (TrimmedLeaves, format.md §16): T(block) = SHA-256(0x02 ‖
    # the block up to its last non-zero 16-byte entry); files in the
    # compact layout with the header flag TRIMMED (0x0008).
    tmk, tck = bytes.fromhex(rt["HeaderMACKey"]), bytes.fromhex(rt["ContentsKey"])

    def tleaf(block):
        m = len(block) // 16
        while m > 0 and block[16 * (m - 1):16 * m] == bytes(16):
            m -= 1
        return hashlib.sha256(b"\x02" + block[:16 * m]).digest()

    def block_of(entries_hex):
        e = bytes.fromhex(entries_hex)
        return e + bytes(4096 - len(e))

    for v in rt["Leaves"]:
        assert tleaf(block_of(v["Entries"])) == bytes.fromhex(v["Leaf"]), v["Name"]
        checked += 1
    for v in rt["Roots"]:
        hs = [tleaf(bytes(4096))] * v["Count"]
        for b in v["Blocks"] or []:
            hs[b["Index"]] = tleaf(block_of(b["Entries"]))
        assert file_root(tmk, bytes.fromhex(v["FileID"]), v["Size"], v["Gen"], hs) == bytes.fromhex(v["Root"]), v["Name"]
        checked += 1
    for v in rt["Files"]:
        check_compact_file(v, tmk, tck, tleaf, 0x0008)
        checked += 1

print("crosscheck: %d vectors match" % checked)
