// Package apiserver runs a real kube-apiserver in the current process,
// backed by an embedded etcd, both on loopback ports they pick, with their
// data in a temporary directory. It needs nothing but Go modules: no
// binaries, no containers, no cluster.
//
//	s, err := apiserver.Start()
//	if err != nil { … }
//	defer s.Stop()
//	pods, err := s.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
//
// The apiserver is k8s.io/kubernetes' own test server
// (cmd/kube-apiserver/app/testing), with a static administrator token, RBAC
// authorization (the administrator is in system:masters; other users,
// impersonated, get what roles grant them), and without the ServiceAccount
// admission plugin, so that pods can be created without a controller
// manager. No controllers run: a deleted namespace
// stays Terminating, pods are never scheduled.
//
// Built with the tag herald_external_apiserver, Start instead connects to
// an apiserver already running, named by the environment variables
// EnvHost and EnvToken (as `go run . -serve` prints them), and builds
// nothing of k8s.io/kubernetes: the tests then run with newer clients than
// the apiserver module allows in one build (see go.newest.mod). Such a
// server cannot be restarted (Restartable).
package apiserver

// The environment variables that name an external apiserver.
const (
	EnvHost  = "HERALD_APISERVER_HOST"  // its address, as rest.Config.Host
	EnvToken = "HERALD_APISERVER_TOKEN" // an administrator's bearer token
)
