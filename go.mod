module github.com/encryptfs/encryptfs

go 1.26.8

require (
	filippo.io/age v1.3.2
	github.com/hanwen/go-fuse/v2 v2.12.1
	golang.org/x/crypto v0.58.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
)

require filippo.io/hpke v0.4.0 // indirect
