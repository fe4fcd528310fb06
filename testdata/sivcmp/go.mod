module github.com/encryptfs/encryptfs/testdata/sivcmp

go 1.26.8

require (
	github.com/encryptfs/encryptfs v0.0.0
	github.com/jacobsa/crypto v0.0.0-20190317225127-9f44e2d11115
	github.com/tink-crypto/tink-go/v2 v2.9.0
)

require (
	github.com/jacobsa/oglematchers v0.0.0-20150720000706-141901ea67cd // indirect
	github.com/jacobsa/oglemock v0.0.0-20150831005832-e94d794d06ff // indirect
	github.com/jacobsa/ogletest v0.0.0-20170503003838-80d50a735a11 // indirect
	github.com/jacobsa/reqtrace v0.0.0-20150505043853-245c9e0234cb // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/encryptfs/encryptfs => ../..
