//go:build !herald_external_apiserver

package apiserver

import (
	"crypto/rand"
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

// Server is a running etcd and kube-apiserver. Its zero value is not
// usable: get one from Start. Its methods are not safe for concurrent use
// with each other; its Client and Config are.
type Server struct {
	// Config reaches the apiserver as an administrator. It stays valid
	// across StopAPIServer and StartAPIServer.
	Config *rest.Config
	// Client is a clientset on Config.
	Client kubernetes.Interface

	dir      string // removed by Stop
	etcd     *embed.Etcd
	etcdURL  string
	token    string // a static administrator token, valid across restarts
	proxy    *proxy // the fixed address clients use
	tb       *tb    // the harness of the running apiserver, nil while stopped
	teardown kubeapiservertesting.TearDownFunc
	stopOnce sync.Once
}

// Start starts etcd, then the apiserver, and returns once the apiserver
// serves requests (about 3 s). Every Server must be stopped with Stop.
//
// Clients reach the apiserver through a proxy on a fixed loopback address
// with a static token, so that Config and Client stay valid when the
// apiserver is stopped and started again (StopAPIServer, StartAPIServer).
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "herald-apiserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, token: rand.Text()}
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
	s.Config = adminConfig(s.proxy.addr(), s.token)
	if s.Client, err = kubernetes.NewForConfig(s.Config); err == nil {
		err = s.StartAPIServer()
	}
	if err != nil {
		s.proxy.close()
		s.stopEtcd()
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) startEtcd() error {
	cfg := embed.NewConfig()
	cfg.Dir = filepath.Join(s.dir, "etcd")
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop()) // quiet, also at shutdown
	loopback := []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = loopback, loopback
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = loopback, loopback
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
	s.etcdURL = "http://" + e.Clients[0].Addr().String()
	return nil
}

func (s *Server) stopEtcd() {
	s.etcd.Close()
	<-s.etcd.Server.StopNotify()
}

// flags are the apiserver's command-line flags beyond the test server's.
func (s *Server) flags() []string {
	return []string{
		"--token-auth-file=" + filepath.Join(s.dir, "tokens.csv"),
		// Pods need a service account otherwise, which only a
		// controller manager would create.
		"--disable-admission-plugins=ServiceAccount",
		// RBAC, as a cluster has it (the test server allows every
		// request otherwise): the administrator, in system:masters, may
		// do anything; a user the tests impersonate only what the roles
		// they create grant.
		"--authorization-mode=RBAC",
		// Lists read etcd directly. With the watch cache, every
		// consistent list leaves a goroutine behind for 3 s (the
		// cache's blockTimeout), also after the server stopped.
		"--watch-cache=false",
	}
}

// StartAPIServer starts the apiserver on the running etcd. Start calls it;
// call it again after StopAPIServer to restart the apiserver on the same
// data. It returns once the apiserver serves requests.
func (s *Server) StartAPIServer() error {
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{s.etcdURL}
	// Token authentication only: the test server's client-certificate
	// setup makes client-go start a certificate-rotation loop that
	// nothing can stop.
	opts := &kubeapiservertesting.TestServerInstanceOptions{EnableCertAuth: false}
	h := newTB(filepath.Join(s.dir, "apiserver"))
	var server kubeapiservertesting.TestServer
	err := h.run(func() {
		var err error
		if server, err = kubeapiservertesting.StartTestServer(h, opts, s.flags(), storage); err != nil {
			h.Fatal(err)
		}
	})
	if err != nil {
		h.cleanup()
		return fmt.Errorf("start apiserver: %w", err)
	}
	backend, err := url.Parse(server.ClientConfig.Host)
	if err != nil {
		server.TearDownFn()
		h.cleanup()
		return err
	}
	s.tb, s.teardown = h, server.TearDownFn
	s.proxy.setBackend(backend.Host)
	return nil
}

// StopAPIServer stops the apiserver and leaves etcd running. From the
// moment it is called, clients get connection errors (requests in flight
// are cut) until StartAPIServer. It does nothing if the apiserver is not
// running.
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

// Restartable reports whether StopAPIServer and StartAPIServer work: true
// for the apiserver this process runs.
func (s *Server) Restartable() bool { return true }

// Stop stops the apiserver and etcd, waits for their goroutines and
// removes their data. It is idempotent.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.StopAPIServer()
		s.proxy.close()
		s.stopEtcd()
		os.RemoveAll(s.dir)
	})
}
