package apiserver

import "k8s.io/client-go/rest"

// adminConfig reaches the apiserver behind the proxy at addr as an
// administrator, with token.
func adminConfig(addr, token string) *rest.Config {
	return &rest.Config{
		Host:        "https://" + addr,
		BearerToken: token,
		// The apiserver makes a new self-signed certificate at each
		// start; the connection never leaves loopback.
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		// No client-side throttling: the server's own speed is what
		// the tests are about.
		QPS:   1000,
		Burst: 1000,
	}
}
