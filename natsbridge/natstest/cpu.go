package natstest

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU returns the processor time the server's process has used, user and
// system, since it was last started: for benchmarks that share a machine's
// cores between servers and clients and model the throughput of more. It
// returns 0 if the server is down, or where the process's times cannot be
// read (it reads Linux's /proc).
func (s *Server) CPU() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return processCPU(s.cmd.Process.Pid)
}

// processCPU returns the user and system time of process pid, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100s), or 0.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command's name, field 2, is in parentheses and may hold spaces.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest) // from field 3 on
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
