# Drove's make targets. `make help` lists them.
GO ?= go
BIN := bin/drove

.PHONY: help build run run-kafka run-zfs test test-deps kafka-deps vet fuzz bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/drove
	$(GO) build -o $(BIN) ./cmd/drove

run: ## the whole system on this machine (embedded broker, Postgres, demo cluster, API on localhost:8080)
	$(GO) run ./cmd/drove dev

run-kafka: kafka-deps ## make run on a real Apache Kafka broker that drove dev starts and stops (data in .drove-kafka, kept across restarts)
	$(GO) run ./cmd/drove dev --kafka apache --dir .drove-kafka

run-zfs: test-deps ## the same on real parts: one zfs-fuse pool per node, instances as datasets with writing processes (in .drove-zfs)
	$(GO) run ./cmd/drove dev --driver zfs --dir .drove-zfs

test-deps: ## install what the tests need (Apache Kafka, Ganeti's hail and test data, PostgreSQL, zfs-fuse, QEMU, shelltestrunner)
	@bash test/tools/deps.sh

kafka-deps: ## fetch Apache Kafka (the broker's jars, and Java 17 if missing) into .cache
	@bash test/tools/deps.sh kafka

vet: ## go vet, gofmt, go mod tidy, and no tracked file over 1 MB but test data (under testdata/)
	$(GO) vet ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go mod tidy would change go.mod or go.sum: run it"; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@bash test/tools/large-files.sh

# test/tools/run-tests.sh runs every package with the race detector,
# slowest first, and beside it the end-to-end tests without the detector
# (a sample of them with it), then the tests on zfs-fuse (executor/zfs,
# and test/e2e's TestZfs*) through a script that runs them again (at
# most three times) if the zfs-fuse daemon deadlocked or died
# (test/zfsenv/watchdog.go).
# Every package shares one Apache Kafka broker that test/tools/kafkabroker
# starts for the run and hands over as KAFKA_BROKERS; each test works in a
# namespace of its own on it (test/testenv). The chaos and partition tests
# start clusters of their own, to kill and cut off.
KAFKA_RUN = $(GO) run ./test/tools/kafkabroker --

test: test-deps vet ## every test, with the race detector (the end-to-end ones: a sample), on a real Apache Kafka broker
	$(KAFKA_RUN) env GO=$(GO) bash test/tools/run-tests.sh

fuzz: ## run each fuzzer for a while (FUZZTIME=60s)
	$(GO) test ./planner/iallocator -run '^$$' -fuzz FuzzDecode -fuzztime $${FUZZTIME:-60s}
	$(GO) test ./events -run '^$$' -fuzz FuzzDecode -fuzztime $${FUZZTIME:-60s}
	$(GO) test ./planner/htoolsdata -run '^$$' -fuzz FuzzParse -fuzztime $${FUZZTIME:-60s}

HAIL ?= /usr/lib/ganeti/iallocators/hail

bench: build ## measure: the planner vs Ganeti's hail (~10 min), the projector's fold of a 100,000-event log on Apache Kafka, Drove at fleet scale (10,000 nodes, 100,000 instances, a 1,000,000-event log), a move through Drove vs a bare zfs send | receive, a migration through the whole system over HTTP, and the downtime of live QEMU migrations (shared storage, zfs-local hand-over), each kind of move's downtime as its workload saw it, as Drove reported it and as predicted before it (downtime.json), evacuation makespans against their lower bound, and Drove on real Apache Kafka vs kfake (fold rate, request to first opcode, planner takeover, broker kill to append), and load held (200 writes, 500 watchers, readers at once: latencies, memory) (BENCHFLAGS=-quick: short)
	@bash test/tools/deps.sh # hail, Apache Kafka, zfs-fuse, QEMU: what the benches run beside Drove
	$(GO) run ./test/bench/planner -hail $(HAIL) -drove-bin $(BIN) $(BENCHFLAGS)
	$(GO) run ./test/bench/projector $(filter -quick,$(BENCHFLAGS))
	$(GO) run ./test/bench/fleet -drove-bin $(BIN) $(filter -quick,$(BENCHFLAGS))
	$(GO) run ./test/bench/makespan
	$(GO) run ./test/bench/kafka -drove-bin $(BIN) $(filter -quick,$(BENCHFLAGS))
	$(GO) run ./test/bench/zfs
	$(GO) run ./test/bench/live
	$(KAFKA_RUN) env DROVE_LOAD_JSON=$(CURDIR)/test/bench/results/load.json $(GO) test -count=1 -run '^TestLoadHeld$$' -v ./test/e2e/

clean: ## remove build output and caches
	rm -rf bin .cache
