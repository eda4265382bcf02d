package askuser

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// TokenSource returns the token (an API key or a JWT) to send with the next call. It is called
// once per call, unary or streaming, so it may rotate tokens; its error fails the call.
type TokenSource func(ctx context.Context) (string, error)

// WithAPIKey is a Dial option that sends key as "authorization: Bearer <key>" on every call.
func WithAPIKey(key string) grpc.DialOption {
	return WithTokenSource(func(context.Context) (string, error) { return key, nil })
}

// WithTokenSource is a Dial option that sends "authorization: Bearer <token>" on every call, with
// the token source returns for that call (e.g. a JWT it refreshes before it expires). Like
// WithAPIKey it works on plaintext connections too: a server on loopback may take keys without TLS.
func WithTokenSource(source TokenSource) grpc.DialOption {
	return grpc.WithPerRPCCredentials(bearer(source))
}

// bearer puts a token source's token in the authorization header of each call.
type bearer TokenSource

func (b bearer) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	token, err := b(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{"authorization": "Bearer " + token}, nil
}

// RequireTransportSecurity is false: keys are also sent to plaintext (loopback) servers.
func (bearer) RequireTransportSecurity() bool { return false }

// WithTLS is a Dial option that connects over TLS with config: nil verifies the server against the
// system's root certificates. config.RootCAs sets the CA instead, config.Certificates a client
// certificate for mTLS and config.ServerName the name the server's certificate must hold when it
// is not the address's host. LoadTLSConfig makes such a config from PEM files.
func WithTLS(config *tls.Config) grpc.DialOption {
	if config == nil {
		config = &tls.Config{}
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(config))
}

// LoadTLSConfig reads a TLS config for WithTLS from PEM files: caFile holds the certificates of
// the CA that signed the server's certificate ("": the system's roots), certFile and keyFile a
// client certificate and its key, for a server that asks for one (both "" for none).
func LoadTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	config := &tls.Config{}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("askuser: no certificate in %s", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("askuser: a client certificate goes with its key")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config, nil
}
