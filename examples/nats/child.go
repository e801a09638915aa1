package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// child is this program started again in a role (a worker, a replica,
// the fulfilment process): its input, and its output line by line.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startChild starts this program again in role, with the environment
// variable env holding spec as JSON, and returns it with its first line
// (each role's "ready"); a child that ends before it is an error.
func startChild(ctx context.Context, role, env string, spec any) (*child, string, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	// Under go test the executable is the test binary; -test.run keeps it
	// from running tests if it ever ignores env.
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+string(data))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !c.out.Scan() {
		c.kill()
		return nil, "", fmt.Errorf("%s ended before it was ready", role)
	}
	return c, c.out.Text(), nil
}

// kill ends the child with SIGKILL, unless it has ended already.
func (c *child) kill() {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}
