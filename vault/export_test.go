package vault

// PathErr exposes pathErr to the error-classification table test
// (errors_table_test.go), which lives in package vault_test because it also
// imports the CLI, which imports this package.
func PathErr(op, p string, err error) error { return pathErr(op, p, err) }
