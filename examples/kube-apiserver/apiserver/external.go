//go:build herald_external_apiserver

package apiserver

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Server is an apiserver this process did not start. Its zero value is not
// usable: get one from Start.
type Server struct {
	// Config reaches the apiserver as an administrator.
	Config *rest.Config
	// Client is a clientset on Config.
	Client kubernetes.Interface

	proxy *proxy // what Config reaches; Stop closes it, and every connection
}

// Start connects to the apiserver that EnvHost and EnvToken name, and
// returns an error if it does not answer.
func Start() (*Server, error) {
	host, token := os.Getenv(EnvHost), os.Getenv(EnvToken)
	if host == "" || token == "" {
		return nil, fmt.Errorf("built with herald_external_apiserver: set %s and %s (go run . -serve prints them)", EnvHost, EnvToken)
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: not an https://host:port address", EnvHost, host)
	}
	p, err := newProxy()
	if err != nil {
		return nil, err
	}
	p.setBackend(u.Host)
	s := &Server{proxy: p, Config: adminConfig(p.addr(), token)}
	if s.Client, err = kubernetes.NewForConfig(s.Config); err == nil {
		_, err = s.Client.Discovery().ServerVersion()
	}
	if err != nil {
		p.close()
		return nil, fmt.Errorf("the apiserver at %s (%s): %w", host, EnvHost, err)
	}
	return s, nil
}

// Restartable reports false: this process cannot restart the apiserver.
func (s *Server) Restartable() bool { return false }

// StartAPIServer returns an error: this process cannot start the apiserver.
func (s *Server) StartAPIServer() error {
	return errors.New("the apiserver is external: it cannot be started from here")
}

// StopAPIServer does nothing: this process cannot stop the apiserver.
func (s *Server) StopAPIServer() {}

// Stop ends every connection this process made to the apiserver, which
// belongs to the process that started it and keeps running.
func (s *Server) Stop() { s.proxy.close() }
