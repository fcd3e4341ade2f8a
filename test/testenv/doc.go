// Package testenv starts the real infrastructure Drove's tests run
// against: a PostgreSQL database and Kafka brokers per test.
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
//	func TestProjector(t *testing.T) {
//		pg := testenv.Postgres(t)   // pg.URL, pg.Pool(ctx)
//		kafka := testenv.Kafka(t)   // kafka.Brokers, kafka.Topic("events")
//		...
//	}
//
// # PostgreSQL: one server per test binary
//
// Starting PostgreSQL (initdb, then the postmaster) takes one to two
// seconds; creating a database on a running server takes a tenth of that.
// So the first [Postgres] call in a test binary starts one server, guarded
// by a package-level sync.Once, and every test shares it. One per binary,
// not one per machine: `go test ./...` runs package binaries in parallel,
// and a server shared between processes would need locking and a
// reference count to know when to stop. Each binary's cluster lives in its
// own os.MkdirTemp directory (data, unix socket, log) and listens on
// 127.0.0.1 on a port the kernel just reported free; if another binary
// takes the port first, the start is retried on a new one. Parallel and
// repeated runs therefore never meet.
//
// The server is stopped by [Main], which packages that use Postgres call
// as their TestMain. If a binary does not (or is killed), the postmaster
// still dies with it: on Linux it is started with a parent-death signal.
// The temporary directory it leaves is removed by the next run's start,
// once neither its test process nor its postmaster is alive.
//
// The cluster is tuned for tests, not for durability: fsync,
// synchronous_commit and full_page_writes off, 32MB shared_buffers, trust
// authentication, timezone UTC, locale C. A crash loses data; a test never
// needs it back.
//
// Where the server comes from, in order: DATABASE_URL if set (testenv
// creates and drops databases there and never stops it; the role needs
// CREATEDB); else the system's PostgreSQL binaries, found on PATH or in
// /usr/lib/postgresql/*/bin (newest first); else, if a Docker engine
// answers (DOCKER_HOST or /var/run/docker.sock), a postgres:15-alpine
// container through testcontainers-go. The binaries win over Docker
// because they start in a second with no image to pull. With none of the
// three, Postgres fails the test with the install command: a skipped
// database test is a test that silently stopped running.
//
// # PostgreSQL: one database per test
//
// Each test gets a fresh database, test_<random>, created from template1
// and dropped WITH (FORCE) at t.Cleanup, after the test's pool is closed.
// A database, rather than a schema or a rolled-back transaction, because
// Drove's code under test runs its own migrations, opens its own
// transactions and pools, and may use LISTEN/NOTIFY or advisory locks:
// a whole database is the only unit that isolates all of that, so tests
// can run in parallel and create the same table names. The database's
// comment names the test, to trace a leftover one on a shared server.
//
// # Root and the postgres user
//
// initdb and postgres refuse to run as root. When the tests run as root
// (containers, CI), testenv runs both as the postgres OS user, which the
// PostgreSQL packages create, and makes that user own the temporary
// directory. It switches user with syscall.Credential in the command's
// SysProcAttr rather than runuser or su: no PAM session or shell quoting
// in between, the process testenv holds is the postmaster itself (so
// signals reach it), root's supplementary groups are dropped, and the
// parent-death signal survives because Go sets it after changing
// credentials. As root without a postgres user, Postgres fails and says
// how to create one.
//
// # Kafka: one real broker, a namespace per test
//
// [Kafka] gives a test Apache Kafka (deploy/apachekafka, the version
// deps.sh fetches): the brokers in KAFKA_BROKERS when set — `make test`
// starts one broker for the whole run (test/tools/kafkabroker) and hands
// it to every package that way — or else one broker per test binary,
// started at the first call (5 to 10 seconds) and stopped by [Main] (or
// killed with its binary: parent-death signal; the next run removes what
// it left in the temp directory). Brokers run with BrokerSettings: quick
// internal topics, short group sessions, retention applied every second.
//
// Isolation comes from names, not brokers: every test has a TopicPrefix,
// the Namespace of its Config, which events/kafka puts in front of every
// topic, consumer group and transactional ID on the broker. So Drove's
// fixed topic names (drove.requests, ...) are the test's own, tests run in
// parallel on one broker, and a `drove` process started with KafkaEnv
// works in the same namespace. A test's topics are deleted when it ends.
// Its Config also makes appends wait until readers see them
// (AwaitVisible): a test appends, then reads.
//
// The few tests that inject a fault a real broker cannot be made to
// produce start franz-go's kfake themselves, and each says why.
package testenv
