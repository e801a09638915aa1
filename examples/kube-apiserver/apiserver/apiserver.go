// Package apiserver starts a real kube-apiserver in the current process,
// backed by an embedded etcd, both on loopback ports they pick, with their
// data in a temporary directory. It needs nothing but Go modules: no
// binaries, no containers.
package apiserver

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// Server is a running etcd and kube-apiserver.
type Server struct {
	// Config reaches the apiserver as an administrator.
	Config *rest.Config
	// Client is a clientset on Config.
	Client kubernetes.Interface

	dir      string
	etcd     *embed.Etcd
	etcdURL  string
	token    string // a static administrator token, valid across restarts
	proxy    *proxy // the fixed address clients use
	tb       *tb
	teardown kubeapiservertesting.TearDownFunc
	stopOnce sync.Once
}

// Start starts etcd, then the apiserver, and returns once the apiserver
// answers. Stop must be called.
//
// Clients reach the apiserver through a proxy on a fixed loopback address
// with a static token, so that Config stays valid when the apiserver is
// stopped and started again (StopAPIServer, StartAPIServer).
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "herald-apiserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, token: fmt.Sprintf("herald-%d", time.Now().UnixNano())}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(s.token+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if s.proxy, err = newProxy(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.startEtcd(); err != nil {
		s.proxy.close()
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.StartAPIServer(); err != nil {
		s.proxy.close()
		s.etcd.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) startEtcd() error {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(s.dir, "etcd")
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop()) // quiet, also at shutdown
	client, _ := url.Parse("http://127.0.0.1:0")
	peer, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return fmt.Errorf("etcd not ready after a minute")
	}
	s.etcd = e
	s.etcdURL = e.Clients[0].Addr().String()
	return nil
}

// StartAPIServer starts the apiserver on the running etcd. Start calls it;
// call it again after StopAPIServer to restart the apiserver on the same
// data.
func (s *Server) StartAPIServer() error {
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{"http://" + s.etcdURL}
	s.tb = newTB(filepath.Join(s.dir, "apiserver"))
	var server kubeapiservertesting.TestServer
	err := s.tb.run(func() {
		var err error
		flags := []string{"--disable-admission-plugins=ServiceAccount", "--token-auth-file=" + filepath.Join(s.dir, "tokens.csv")}
		server, err = kubeapiservertesting.StartTestServer(s.tb, nil, flags, storage)
		if err != nil {
			s.tb.Fatal(err)
		}
	})
	if err != nil {
		s.tb.cleanup()
		return fmt.Errorf("start apiserver: %w", err)
	}
	s.teardown = server.TearDownFn
	backend, err := url.Parse(server.ClientConfig.Host)
	if err != nil {
		return err
	}
	s.proxy.setBackend(backend.Host)
	if s.Config == nil {
		s.Config = &rest.Config{
			Host:            "https://" + s.proxy.addr(),
			BearerToken:     s.token,
			TLSClientConfig: rest.TLSClientConfig{Insecure: true}, // a new self-signed certificate at each start
			QPS:             1000,
			Burst:           1000,
		}
		s.Client, err = kubernetes.NewForConfig(s.Config)
	}
	return err
}

// StopAPIServer stops the apiserver and leaves etcd running. Clients get
// connection errors until StartAPIServer.
func (s *Server) StopAPIServer() {
	s.proxy.setBackend("")
	if s.teardown != nil {
		s.teardown()
		s.teardown = nil
	}
	if s.tb != nil {
		s.tb.cleanup()
		s.tb = nil
	}
}

// Stop stops the apiserver and etcd and removes their data.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.StopAPIServer()
		s.proxy.close()
		s.etcd.Close()
		<-s.etcd.Server.StopNotify()
		os.RemoveAll(s.dir)
	})
}

// WaitReady polls until the apiserver serves requests or ctx ends.
func (s *Server) WaitReady(ctx context.Context) error {
	for {
		if _, err := s.Client.Discovery().ServerVersion(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
