package askuser_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/askuser-dev/askuser/clients/go/askuser"
)

// The TLS tests run against the mTLS server of scripts/conformance-servers.sh: ASKUSER_TLS_ADDR,
// with the files and the key the other ASKUSER_TLS_* variables name.

// requireEnv returns an environment variable the test cannot do without; a missing one fails it.
func requireEnv(t *testing.T, name string) string {
	t.Helper()
	value := os.Getenv(name)
	if value == "" {
		t.Fatalf("%s is not set: scripts/conformance-servers.sh exports it", name)
	}
	return value
}

// tlsFiles is the TLS config of the mTLS server's CA and client certificate.
func tlsFiles(t *testing.T) *tls.Config {
	t.Helper()
	config, err := askuser.LoadTLSConfig(requireEnv(t, "ASKUSER_TLS_CA"),
		requireEnv(t, "ASKUSER_TLS_CLIENT_CERT"), requireEnv(t, "ASKUSER_TLS_CLIENT_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	return config
}

// listAgents dials addr with opts and lists the agents, without reconnection: the connections
// these tests expect to fail would otherwise be retried until the deadline.
func listAgents(t *testing.T, addr string, opts ...grpc.DialOption) ([]string, error) {
	t.Helper()
	client, err := askuser.Dial(addr, append(opts, askuser.WithoutReconnect())...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	agents, err := client.ListAgents(ctx)
	ids := make([]string, len(agents))
	for i, agent := range agents {
		ids[i] = agent.GetAgentId()
	}
	return ids, err
}

func TestMTLSRoundTripWithAnAPIKey(t *testing.T) {
	addr, key := requireEnv(t, "ASKUSER_TLS_ADDR"), requireEnv(t, "ASKUSER_TLS_API_KEY")
	ids, err := listAgents(t, addr, askuser.WithTLS(tlsFiles(t)), askuser.WithAPIKey(key))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"free_text", "pick", "checks", "feed"} {
		if !slices.Contains(ids, want) {
			t.Errorf("agents %q lack the conformance agent %q", ids, want)
		}
	}
}

func TestMTLSWithoutAKeyIsUnauthenticated(t *testing.T) {
	_, err := listAgents(t, requireEnv(t, "ASKUSER_TLS_ADDR"), askuser.WithTLS(tlsFiles(t)))
	if e := asError(t, err, codes.Unauthenticated); e.Reason != "MISSING_CREDENTIALS" {
		t.Errorf("reason %q, want MISSING_CREDENTIALS", e.Reason)
	}
}

func TestAServerNameOverrideIsCheckedAgainstTheCertificate(t *testing.T) {
	addr, key := requireEnv(t, "ASKUSER_TLS_ADDR"), requireEnv(t, "ASKUSER_TLS_API_KEY")
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	// The certificate names localhost and 127.0.0.1.
	named := tlsFiles(t)
	named.ServerName = "localhost"
	if _, err := listAgents(t, net.JoinHostPort("127.0.0.1", port), askuser.WithTLS(named), askuser.WithAPIKey(key)); err != nil {
		t.Errorf("with the certificate's name: %v", err)
	}
	wrong := tlsFiles(t)
	wrong.ServerName = "elsewhere.test"
	_, err = listAgents(t, addr, askuser.WithTLS(wrong), askuser.WithAPIKey(key))
	asError(t, err, codes.Unavailable)
}

func TestConnectionsWithoutTrustFail(t *testing.T) {
	addr, key := requireEnv(t, "ASKUSER_TLS_ADDR"), requireEnv(t, "ASKUSER_TLS_API_KEY")
	systemRoots := tlsFiles(t)
	systemRoots.RootCAs = nil
	noClientCertificate := tlsFiles(t)
	noClientCertificate.Certificates = nil
	cases := map[string]grpc.DialOption{
		"the system's roots, not the server's CA": askuser.WithTLS(systemRoots),
		"no client certificate":                   askuser.WithTLS(noClientCertificate),
		"plaintext":                               nil,
	}
	for name, transport := range cases {
		t.Run(name, func(t *testing.T) {
			opts := []grpc.DialOption{askuser.WithAPIKey(key)}
			if transport != nil {
				opts = append(opts, transport)
			}
			_, err := listAgents(t, addr, opts...)
			asError(t, err, codes.Unavailable)
		})
	}
}

func TestTheTokenSourceIsAskedForEveryCall(t *testing.T) {
	addr, key := requireEnv(t, "ASKUSER_ADDR"), requireEnv(t, "ASKUSER_API_KEY")
	var calls atomic.Int32
	client, err := askuser.Dial(addr, askuser.WithTokenSource(func(context.Context) (string, error) {
		calls.Add(1)
		return key, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client.ListAgents(ctx); err != nil {
		t.Fatal(err)
	}
	// NOT_FOUND, not UNAUTHENTICATED: the key went with the call.
	_, err = client.GetRun(ctx, "no-such-run")
	asError(t, err, codes.NotFound)
	run, err := client.StartRun(ctx, "free_text", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	if _, err := client.CancelRun(ctx, run.ID(), ""); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 4 {
		t.Errorf("the token source was asked %d times for 4 calls", got)
	}
}

func TestAWrongKeyIsUnauthenticated(t *testing.T) {
	_, err := listAgents(t, requireEnv(t, "ASKUSER_ADDR"), askuser.WithAPIKey("ak_0_not-a-key"))
	if e := asError(t, err, codes.Unauthenticated); e.Reason != "INVALID_CREDENTIALS" {
		t.Errorf("reason %q, want INVALID_CREDENTIALS", e.Reason)
	}
}
