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
	// done, if a goroutine reads out, is closed once it has read it all:
	// Wait, which closes out, waits for it.
	done chan struct{}
}

// stop asks the child to stop (its stdin closed) and waits for it to
// report and exit; a child killed already has nothing to stop.
func (c *child) stop() error {
	if c.cmd.ProcessState != nil {
		return nil // killed
	}
	if err := c.stdin.Close(); err != nil {
		return err
	}
	<-c.done
	return c.cmd.Wait()
}

// kill ends the child at once (SIGKILL) if it is still running.
func (c *child) kill() {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		if c.done != nil {
			<-c.done
		}
		_ = c.cmd.Wait()
	}
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
