package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/encryptfs/encryptfs/internal/serve"
	"github.com/encryptfs/encryptfs/internal/session"
	"github.com/encryptfs/encryptfs/vault"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// serveFlags are the flags of encryptfs serve webdav.
type serveFlags struct {
	unlock        unlockFlags
	listen        string
	readOnly      bool
	cert, key     string
	users         string
	tokenFile     string
	insecure      bool
	sharedStorage bool
	stateDir      string
	logPaths      bool
}

func (f *serveFlags) register(fs *pflag.FlagSet) {
	f.unlock.register(fs, "password")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "listen on `ADDR` (host:port; port 0: a free one, printed at start)")
	fs.BoolVar(&f.readOnly, "ro", false, "serve read-only")
	fs.StringVar(&f.cert, "cert", "", "serve HTTPS with the certificate `FILE` (PEM; with --key)")
	fs.StringVar(&f.key, "key", "", "the private key `FILE` of --cert (PEM)")
	fs.StringVar(&f.users, "users", "", "require HTTP Basic authentication by the users `FILE` (encryptfs serve adduser)")
	fs.StringVar(&f.tokenFile, "token-file", "", "require \"Authorization: Bearer TOKEN\", the first line of `FILE`")
	fs.BoolVar(&f.insecure, "insecure-no-tls-no-auth", false, "allow a listen address beyond loopback without TLS or authentication (anyone who reaches it reads and writes the vault)")
	fs.BoolVar(&f.sharedStorage, "shared-storage", false, "serve a vault that is also mounted, or changed by others (network or sync folder)")
	fs.BoolVar(&f.logPaths, "log-paths", false, "log the plaintext path of every request (without it, only of those that failed on the server's side)")
	registerStateDir(fs, &f.stateDir)
	for _, name := range []string{"cert", "key", "users", "token-file"} {
		mustMark(cobra.MarkFlagFilename(fs, name))
	}
}

func newServeCommand(a *App) *cobra.Command {
	cmd := newCommand("serve", "", 0, 0, groupMount, "serve a vault over the network without FUSE (webdav)")
	cmd.AddCommand(newServeWebDAVCommand(a), newServeAddUserCommand(a))
	return cmd
}

func newServeWebDAVCommand(a *App) *cobra.Command {
	cmd := newCommand("webdav", "CIPHERDIR", 1, 1, "", "serve a vault over WebDAV in the foreground (Ctrl-C stops)", dirArg)
	var f serveFlags
	f.register(cmd.Flags())
	cmd.RunE = func(_ *cobra.Command, pos []string) error { return serveWebDAV(a, pos[0], f) }
	return cmd
}

// serveWebDAV checks the flags and the network rule, listens, unlocks,
// and serves until SIGINT or SIGTERM.
func serveWebDAV(a *App, dir string, f serveFlags) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if (f.cert == "") != (f.key == "") {
		return usageErrorf("serve: --cert and --key go together")
	}
	if f.users != "" && f.tokenFile != "" {
		return usageErrorf("serve: give --users or --token-file, not both")
	}
	auth, err := serveAuth(a, f)
	if err != nil {
		return err
	}
	if err := serve.CheckListen(f.listen, f.cert != "", auth != nil, f.insecure); err != nil {
		if errors.Is(err, serve.ErrInsecureListen) {
			return usageErrorf("serve: %s is not a loopback address: it needs TLS (--cert, --key) and authentication (--users or --token-file), or --insecure-no-tls-no-auth", f.listen)
		}
		return withCode(ExitUsage, err)
	}
	var tlsConf *tls.Config
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("serve: --cert/--key: %w", err))
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	c, err := a.loadConfig(dir)
	if err != nil {
		return err
	}
	if !f.sharedStorage {
		if at := mountedAt(dir); at != "" {
			return errorfCode(ExitMountPoint, "%s is mounted on %s: serve it while mounted only with --shared-storage (both then see each other's changes without caching)", dir, at)
		}
	}
	if err := checkNotMounted(dir, c, f.stateDir); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return withCode(ExitMount, fmt.Errorf("serve: %w", err))
	}
	defer ln.Close()
	logger := log.New(a.Stderr, "encryptfs: ", log.LstdFlags)
	v, err := serveVault(a, dir, c, f, logger)
	if err != nil {
		return err
	}
	defer func() {
		if err := v.Close(); err != nil {
			logger.Printf("close: %v", err)
		}
	}()
	h := serve.NewHandler(serve.Options{Vault: v, ReadOnly: f.readOnly, Auth: auth, LogPaths: f.logPaths, Log: func(l string) { logger.Print(displayText(l)) }})
	return runWebDAV(a, serve.NewServer(h, tlsConf), ln, dir, f, logger)
}

// serveVault unlocks the vault as a foreground mount does: it records
// freshness (a read-only server checks once at start, as mount --ro).
func serveVault(a *App, dir string, c *session.Config, f serveFlags, logger *log.Logger) (*vault.Vault, error) {
	m := mountFlags{readOnly: f.readOnly, sharedStorage: f.sharedStorage, stateDir: f.stateDir, unlock: f.unlock}
	s, err := a.unlockVaultWith(dir, c, f.unlock, "Password", mountSessionOptions(a, dir, c, m, mountFreshness(m), logger))
	if err != nil {
		return nil, mountFreshError(err, dir)
	}
	if err := mountChecked(s, dir, m, logger); err != nil {
		s.Close()
		return nil, err
	}
	v, err := vault.FromSession(s)
	if err == nil && f.sharedStorage {
		v.SharedStorage() // "both then see each other's changes without caching"
	}
	return v, err
}

// runWebDAV serves on ln until SIGINT or SIGTERM, then shuts down.
func runWebDAV(a *App, srv *http.Server, ln net.Listener, dir string, f serveFlags, logger *log.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	scheme := "http"
	if srv.TLSConfig != nil {
		scheme = "https"
	}
	url := fmt.Sprintf("%s://%s/", scheme, ln.Addr())
	done := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			done <- srv.ServeTLS(ln, "", "")
		} else {
			done <- srv.Serve(ln)
		}
	}()
	mode := ""
	if f.readOnly {
		mode = " (read-only)"
	}
	logger.Printf("serving %s at %s%s", dir, url, mode)
	fmt.Fprintln(a.Stdout, url)
	select {
	case err := <-done:
		return withCode(ExitMount, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
	}
	logger.Printf("stopping: waiting for requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	logger.Printf("stopped serving %s", dir)
	return nil
}

// serveAuth reads --users or --token-file (nil, nil: neither).
func serveAuth(a *App, f serveFlags) (serve.Authenticator, error) {
	switch {
	case f.users != "":
		data, err := readSmallFile(f.users, serve.MaxUsersFile)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("serve: --users: %w", err))
		}
		u, err := serve.ParseUsers(data, a.Rand)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", f.users, err))
		}
		return u, nil
	case f.tokenFile != "":
		data, err := readSmallFile(f.tokenFile, serve.MaxTokenFile)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("serve: --token-file: %w", err))
		}
		defer clear(data)
		t, err := serve.ParseToken(data)
		if err != nil {
			return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", f.tokenFile, err))
		}
		return t, nil
	}
	return nil, nil
}
