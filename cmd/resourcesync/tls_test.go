package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA makes a self-signed CA and a certificate it issues for
// 127.0.0.1; it returns the server certificate and the CA's PEM.
func testCA(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "resourcesync test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// TestSyncTLS: a Source behind a certificate of a private CA. Without
// --ca-cert, sync fails at once (one handshake: no retries) with a message
// naming --ca-cert and --insecure; with --ca-cert it mirrors; with
// --insecure it mirrors and warns.
func TestSyncTLS(t *testing.T) {
	syncLoopbackOnly(t)
	loopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + ln.Addr().String() + "/"
	_, handler := sourceBehind(t, dir, base)
	cert, caPEM := testCA(t)
	var handshakes atomic.Int64
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { handshakes.Add(1); return nil, nil }}
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caPEM, 0o644)

	dest := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut := runCLI(t, "sync", "--progress", "quiet", base, dest)
	if code != exitUsage || !strings.Contains(errOut, "--ca-cert") || !strings.Contains(errOut, "--insecure") || !strings.Contains(errOut, "certificate") {
		t.Fatalf("untrusted CA: exit %d, want %d and a message naming --ca-cert\n%s\n%s", code, exitUsage, out, errOut)
	}
	if n := handshakes.Load(); n != 1 {
		t.Errorf("%d handshakes for a certificate that cannot verify, want 1 (no retry)", n)
	}

	code, out, errOut = runCLI(t, "sync", "--progress", "quiet", "--ca-cert", caFile, base, dest)
	if b, _ := os.ReadFile(filepath.Join(dest, "a.txt")); code != 0 || string(b) != "alpha" {
		t.Fatalf("--ca-cert: exit %d, a.txt %q\n%s\n%s", code, b, out, errOut)
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("--ca-cert warns: %s", errOut)
	}

	dest2 := filepath.Join(t.TempDir(), "mirror")
	code, out, errOut = runCLI(t, "sync", "--progress", "quiet", "--insecure", base, dest2)
	if b, _ := os.ReadFile(filepath.Join(dest2, "a.txt")); code != 0 || string(b) != "alpha" {
		t.Fatalf("--insecure: exit %d, a.txt %q\n%s\n%s", code, b, out, errOut)
	}
	if !strings.Contains(errOut, "warning: --insecure") {
		t.Errorf("--insecure does not warn: %s", errOut)
	}

	// validate: the same message, and --ca-cert works there too.
	code, _, errOut = runCLI(t, "validate", base)
	if code != exitUsage || !strings.Contains(errOut, "--ca-cert") {
		t.Errorf("validate, untrusted CA: exit %d\n%s", code, errOut)
	}
	if code, out, errOut = runCLI(t, "validate", "--ca-cert", caFile, base); code != 0 {
		t.Errorf("validate --ca-cert: exit %d\n%s\n%s", code, out, errOut)
	}
}
