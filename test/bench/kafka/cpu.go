package main

import "github.com/drovehq/drove/test/bench/cpu"

// cpuTimes is the CPU seconds of the processes a fold runs on: this one
// (the projector, and kfake when it is the broker), Postgres and the
// Apache Kafka broker's JVM. On a shared machine they say whether the
// fold waited for the CPU or for one of them.
type cpuTimes struct{ self, postgres, broker float64 }

func (a cpuTimes) sub(b cpuTimes) cpuTimes {
	return cpuTimes{a.self - b.self, a.postgres - b.postgres, a.broker - b.broker}
}

// readCPU reads the CPU seconds so far of this process, of the postmaster
// of pgDataDir and its live children (the backends: one that exited took
// its CPU with it, so this is read while the fold's connections are
// open), and of the processes whose command line names brokerDir.
func readCPU(pgDataDir, brokerDir string) cpuTimes {
	return cpuTimes{self: cpu.Self(), postgres: cpu.Postgres(pgDataDir), broker: cpu.Matching(brokerDir)}
}
