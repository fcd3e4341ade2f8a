package main

import (
	"flag"
	"os"

	"github.com/drovehq/drove/events/kafka"
)

// kafkaSecurity are the flags (and environment variables) of every
// command that talks to Kafka: TLS and SASL, and the namespace of the
// installation's topics on a shared cluster. There is no password flag:
// a command line is visible to every user of the host (ps), so the
// password comes from the environment or a file only the owner can read.
type kafkaSecurity struct {
	tls                  bool
	ca, cert, key        string
	serverName           string
	mechanism, user      string
	password, passwdFile string
	namespace            string
}

func (k *kafkaSecurity) register(fs *flag.FlagSet) {
	fs.BoolVar(&k.tls, "kafka-tls", os.Getenv("KAFKA_TLS") == "true", "connect to Kafka over TLS, checked against the system's roots unless --kafka-ca (env KAFKA_TLS=true)")
	fs.StringVar(&k.ca, "kafka-ca", os.Getenv("KAFKA_CA_FILE"), "PEM CA bundle the brokers' certificates are checked against; implies TLS (env KAFKA_CA_FILE)")
	fs.StringVar(&k.cert, "kafka-cert", os.Getenv("KAFKA_CERT_FILE"), "client certificate for brokers that require one (env KAFKA_CERT_FILE)")
	fs.StringVar(&k.key, "kafka-key", os.Getenv("KAFKA_KEY_FILE"), "the client certificate's key, mode 0600 (env KAFKA_KEY_FILE)")
	fs.StringVar(&k.serverName, "kafka-server-name", os.Getenv("KAFKA_TLS_SERVER_NAME"), "name to check in the brokers' certificates instead of their host (env KAFKA_TLS_SERVER_NAME)")
	fs.StringVar(&k.mechanism, "kafka-sasl-mechanism", os.Getenv("KAFKA_SASL_MECHANISM"), "SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN (PLAIN over TLS only); empty: no SASL (env KAFKA_SASL_MECHANISM)")
	fs.StringVar(&k.user, "kafka-sasl-user", os.Getenv("KAFKA_SASL_USER"), "SASL user (env KAFKA_SASL_USER)")
	fs.StringVar(&k.passwdFile, "kafka-sasl-password-file", os.Getenv("KAFKA_SASL_PASSWORD_FILE"), "file holding the SASL password, mode 0600 (env KAFKA_SASL_PASSWORD_FILE; or the password itself in env KAFKA_SASL_PASSWORD)")
	fs.StringVar(&k.namespace, "kafka-namespace", os.Getenv("KAFKA_NAMESPACE"), "put in front of every topic, consumer group and transactional id, so several Drove installations share one Kafka cluster; every service of one installation needs the same (env KAFKA_NAMESPACE; default none)")
	k.password = os.Getenv("KAFKA_SASL_PASSWORD")
}

// apply sets cfg's TLS and SASL from the flags.
func (k *kafkaSecurity) apply(cfg *kafka.Config) {
	cfg.TLS = kafka.TLS{Enabled: k.tls, CAFile: k.ca, CertFile: k.cert, KeyFile: k.key, ServerName: k.serverName}
	cfg.SASL = kafka.SASL{Mechanism: k.mechanism, User: k.user, Password: k.password, PasswordFile: k.passwdFile}
	cfg.Namespace = k.namespace
}
