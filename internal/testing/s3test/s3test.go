// Package s3test starts a real S3 server for tests: versitygw (Go module
// github.com/versity/versitygw, pinned at Version) with its posix backend
// on a free loopback port, a fresh root directory and static keys; and it
// runs the independent client, Debian's aws (awscli), against it.
//
// The server is shared by the tests of one binary (Shared) and stops when
// the binary exits (its stdin pipe closes); each test takes a bucket of
// its own (NewBucket), so tests may run in parallel.
//
// versitygw is looked for in $RESOURCESYNC_VERSITYGW, on PATH, then in
// $(go env GOPATH)/bin, where scripts/test.sh installs it. A test skips
// when it is missing, but under CI (CI=true) a missing server fails it:
// CI must not go green by testing nothing.
//
// Nothing here dials beyond 127.0.0.1: the aws client gets the endpoint,
// the keys and the region in its environment, no shared config or
// credentials file, and AWS_EC2_METADATA_DISABLED so that it never asks
// an instance metadata service.
package s3test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the versitygw release the tests run.
const Version = "v1.8.0"

// InstallCommand installs the server where the tests find it.
const InstallCommand = "GOBIN=$(go env GOPATH)/bin go install github.com/versity/versitygw/cmd/versitygw@" + Version

// AWSInstallCommand installs the independent client.
const AWSInstallCommand = "apt-get install -y --no-install-recommends awscli"

// Region is the region the server answers for.
const Region = "us-east-1"

// StartTimeout bounds the wait for the server to accept connections.
var StartTimeout = 30 * time.Second

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's base URL, http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root user's keys (random per server).
	AccessKey, SecretKey string
	Region               string
	// Root is the posix backend's directory: a bucket is Root/BUCKET.
	Root string

	stdin io.WriteCloser
	mu    sync.Mutex
	n     int
}

// Binary returns the path of versitygw, or an error saying how to install
// it.
func Binary() (string, error) {
	if p := os.Getenv("RESOURCESYNC_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("$RESOURCESYNC_VERSITYGW: %w", err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	var dirs []string
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, "go", "bin"))
	}
	name := "versitygw"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("versitygw not found in $RESOURCESYNC_VERSITYGW, PATH or %s (scripts/test.sh installs it): %s", strings.Join(dirs, ", "), InstallCommand)
}

// AWS returns the path of the independent client: Debian's /usr/bin/aws
// first (a pip-installed aws earlier on PATH may be another major
// version), else aws on PATH.
func AWS() (string, error) {
	if _, err := os.Stat("/usr/bin/aws"); err == nil {
		return "/usr/bin/aws", nil
	}
	if p, err := exec.LookPath("aws"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("aws (awscli) not found; scripts/test.sh installs it: %s", AWSInstallCommand)
}

// underCI reports whether a missing tool must fail the test.
func underCI() bool { return os.Getenv("CI") == "true" }

// Skip skips t unless versitygw can be started here (fails it under CI).
func Skip(t testing.TB) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("versitygw's posix backend is run by these tests on Unix only")
	}
	if _, err := Binary(); err != nil {
		if underCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// SkipAWS skips t unless the aws client is installed (fails it under CI).
func SkipAWS(t testing.TB) {
	t.Helper()
	if _, err := AWS(); err != nil {
		if underCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

var shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Shared returns the test binary's one server, started by the first call;
// it runs until the binary exits.
func Shared(t testing.TB) *Server {
	t.Helper()
	Skip(t)
	shared.once.Do(func() { shared.s, shared.err = Start() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

// wrapper runs versitygw in the background and kills it when its stdin, a
// pipe from the test binary, closes (the binary exited, however it
// ended); then removes the directory $1 (the root and the log).
const wrapper = `exec 3<&0
dir="$1"; shift
"$@" </dev/null >"$dir/versitygw.log" 2>&1 &
pid=$!
(read _ignored <&3; kill $pid 2>/dev/null; sleep 1; kill -9 $pid 2>/dev/null; rm -rf "$dir") &
wait $pid
`

// Start starts a new server with a fresh root; it stops when the test
// binary exits. Most tests use Shared.
func Start() (*Server, error) { return start(nil, nil) }

// StartPosix starts a new server whose posix backend takes posixArgs
// (such as --data-integrity-etag); it stops when t ends.
func StartPosix(t testing.TB, posixArgs ...string) *Server {
	t.Helper()
	Skip(t)
	s, err := start(nil, posixArgs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartTLS starts a new server that speaks only HTTPS, with a certificate
// for 127.0.0.1 signed by a CA of its own, whose PEM file it returns; the
// server stops when t ends.
func StartTLS(t testing.TB) (*Server, string) {
	t.Helper()
	Skip(t)
	dir := t.TempDir()
	ca, err := writeTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := start([]string{"--cert", filepath.Join(dir, "cert.pem"), "--key", filepath.Join(dir, "key.pem")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s, ca
}

func start(tlsArgs, posixArgs []string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "s3test-")
	if err != nil {
		return nil, err
	}
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if tlsArgs != nil {
		scheme = "https"
	}
	s := &Server{
		Endpoint:  fmt.Sprintf("%s://127.0.0.1:%d", scheme, port),
		AccessKey: "AKIA" + strings.ToUpper(randHex(8)),
		SecretKey: randHex(20),
		Region:    Region,
		Root:      root,
	}
	args := []string{"-c", wrapper, "sh", base, bin,
		"--access", s.AccessKey, "--secret", s.SecretKey, "--region", s.Region,
		"--port", fmt.Sprintf("127.0.0.1:%d", port), "--quiet"}
	args = append(append(args, tlsArgs...), "posix")
	args = append(append(args, posixArgs...), root)
	cmd := exec.Command("sh", args...)
	// The keys travel in the arguments of a process of this machine only,
	// as versitygw documents; the environment is the binary's own.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	s.stdin = stdin
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(StartTimeout)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(base, "versitygw.log"))
			return nil, fmt.Errorf("versitygw exited (%v): %s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			stdin.Close()
			return nil, fmt.Errorf("versitygw did not answer on %s within %v", s.Endpoint, StartTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeTLS writes a CA (ca.pem) and a certificate for 127.0.0.1 it signed
// (cert.pem, key.pem) into dir, and returns the CA's path.
func writeTLS(dir string) (string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "s3test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	for name, b := range map[string]*pem.Block{
		"ca.pem":   {Type: "CERTIFICATE", Bytes: caDER},
		"cert.pem": {Type: "CERTIFICATE", Bytes: der},
		"key.pem":  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "ca.pem"), nil
}

// Stop stops the server (Shared's runs until the binary exits).
func (s *Server) Stop() { s.stdin.Close() }

// NewBucket creates a bucket with a fresh name and returns the name; it is
// left for the server's removal at exit.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("bkt-%d-%s", s.n, randHex(3))
	s.mu.Unlock()
	// A bucket of the posix backend is a directory of the root: made
	// directly, no client needed.
	if err := os.Mkdir(filepath.Join(s.Root, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return name
}

// Env returns the environment the standard AWS chain reads to reach the
// server with its keys, for the SDK (SetEnv) and the aws client (which
// gets no other AWS_ variable). The shared files point nowhere, so a
// developer's ~/.aws is not read.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
		"AWS_DEFAULT_REGION=" + s.Region,
		"AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
}

// cleared are variables of the chain a developer's environment may set
// that would send the clients elsewhere; SetEnv empties them.
var cleared = []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_CA_BUNDLE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"}

// SetEnv sets Env in t's environment (restored after t).
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	for _, k := range cleared {
		t.Setenv(k, "")
	}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// AWS runs the independent client, aws ARGS..., against the server and
// returns its standard output; a failure fails t with its standard error.
func (s *Server) AWS(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	out, err := s.RunAWS(stdin, args...)
	if err != nil {
		t.Fatalf("aws %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// RunAWS is AWS returning the failure.
func (s *Server) RunAWS(stdin []byte, args ...string) ([]byte, error) {
	bin, err := AWS()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"--endpoint-url", s.Endpoint, "--no-cli-pager"}, args...)...)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, s.Env()...)
	cmd.Env = append(cmd.Env, "AWS_PAGER=")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

// Put writes body under bucket/key with the independent client.
func (s *Server) Put(t testing.TB, bucket, key string, body []byte) {
	t.Helper()
	s.AWS(t, body, "s3", "cp", "--only-show-errors", "-", "s3://"+bucket+"/"+key)
}

// Get reads bucket/key with the independent client.
func (s *Server) Get(t testing.TB, bucket, key string) []byte {
	t.Helper()
	return s.AWS(t, nil, "s3", "cp", "--only-show-errors", "s3://"+bucket+"/"+key, "-")
}

// Remove removes bucket/key with the independent client.
func (s *Server) Remove(t testing.TB, bucket, key string) {
	t.Helper()
	s.AWS(t, nil, "s3", "rm", "--only-show-errors", "s3://"+bucket+"/"+key)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("s3test: no free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
