package natstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// serverModule is the module whose main package is nats-server.
const serverModule = "github.com/nats-io/nats-server/v2"

// binaryEnv names a nats-server binary to run instead of building one.
const binaryEnv = "HERALD_NATS_SERVER"

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns the path of a nats-server binary at the version of
// nats-server's module in the test binary's build list, building it the
// first time (go install, into the user's cache directory; once per test
// binary, and reused by later runs). It fails the test if it cannot.
func Binary(t T) string {
	t.Helper()
	binaryOnce.Do(func() { binaryPath, binaryErr = findBinary() })
	if binaryErr != nil {
		t.Fatalf("natstest: nats-server binary: %v", binaryErr)
	}
	return binaryPath
}

func findBinary() (string, error) {
	if p := os.Getenv(binaryEnv); p != "" {
		return p, nil
	}
	version, dir, err := serverVersion()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "herald", "natstest", "nats-server-"+version)
	if dir != "" { // a local replacement: build it every time, into a temporary place
		bin = filepath.Join(os.TempDir(), fmt.Sprintf("herald-natstest-%d", os.Getpid()), "nats-server")
	} else if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	return bin, build(bin, version, dir)
}

// serverVersion returns the version of nats-server's module in the build
// list of the module the test runs in (go test runs a test binary in its
// package's directory), or the directory of its local replacement. A test
// binary records no dependencies of its own to read instead.
func serverVersion() (version, dir string, err error) {
	out, err := exec.Command("go", "list", "-m", "-json", serverModule).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", "", fmt.Errorf("go list -m %s (require it in go.mod, or set %s): %w", serverModule, binaryEnv, err)
	}
	var m struct {
		Version string
		Replace *struct{ Version, Dir string }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", err
	}
	if r := m.Replace; r != nil {
		if r.Version == "" {
			return "local", r.Dir, nil
		}
		return r.Version, "", nil
	}
	if m.Version == "" {
		return "", "", fmt.Errorf("go list -m %s: no version (set %s)", serverModule, binaryEnv)
	}
	return m.Version, "", nil
}

// build installs nats-server at version (or builds it from dir) as bin,
// through a temporary name, so that test binaries building at once never
// run a half-written file.
func build(bin, version, dir string) error {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(bin), "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var cmd *exec.Cmd
	if dir != "" {
		cmd = exec.Command("go", "build", "-o", filepath.Join(tmp, "nats-server"), ".")
		cmd.Dir = dir
	} else {
		cmd = exec.Command("go", "install", serverModule+"@"+version)
		cmd.Dir = tmp // outside any module: the version alone decides
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "GOWORK=off")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %w\n%s", cmd.Args, err, out)
	}
	return os.Rename(filepath.Join(tmp, "nats-server"), bin)
}
