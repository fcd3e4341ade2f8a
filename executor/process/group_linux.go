package process

import (
	"bytes"
	"os"
	"strconv"
)

// groupAlive reports whether a process of group pgid still runs: one in
// any state but a zombie's. A zombie has ended every system call it was
// in — a write it had begun has reached the file system or failed — and
// waits only to be reaped by whoever its parent now is, which may never
// happen in a container, so it does not count.
func groupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so the fields start after the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(string(f[2])); g == pgid && pid > 0 && string(f[0]) != "Z" && string(f[0]) != "X" {
			return true
		}
	}
	return false
}
