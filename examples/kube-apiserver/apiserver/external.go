//go:build herald_external_apiserver

package apiserver

import (
	"errors"
	"fmt"
	"os"

	utilnet "k8s.io/apimachinery/pkg/util/net"
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
}

// Start connects to the apiserver that EnvHost and EnvToken name, and
// returns an error if it does not answer.
func Start() (*Server, error) {
	host, token := os.Getenv(EnvHost), os.Getenv(EnvToken)
	if host == "" || token == "" {
		return nil, fmt.Errorf("built with herald_external_apiserver: set %s and %s (go run . -serve prints them)", EnvHost, EnvToken)
	}
	s := &Server{Config: &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, // loopback, a self-signed certificate
		QPS:             1000,
		Burst:           1000,
	}}
	var err error
	if s.Client, err = kubernetes.NewForConfig(s.Config); err != nil {
		return nil, err
	}
	if _, err := s.Client.Discovery().ServerVersion(); err != nil {
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

// Stop closes this process's idle connections to the apiserver, which
// belongs to the process that started it and keeps running.
func (s *Server) Stop() {
	if rt, err := rest.TransportFor(s.Config); err == nil {
		utilnet.CloseIdleConnectionsFor(rt)
	}
}
