package apachekafka

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

//go:embed pom.xml
var pom string

// Version is the Apache Kafka version pom.xml pins.
var Version = func() string {
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindStringSubmatch(pom)
	if m == nil {
		panic("apachekafka: pom.xml pins no kafka.version")
	}
	return m[1]
}()

// ErrNotInstalled is returned when the broker's jars or Java are missing.
var ErrNotInstalled = errors.New("apachekafka: not installed")

// LibsEnv names the variable that says where the broker's jars are,
// overriding the search of FindLibs.
const LibsEnv = "DROVE_KAFKA_LIBS"

// FindLibs returns the directory of the broker's jars: $DROVE_KAFKA_LIBS,
// or .cache/kafka-VERSION/libs in the working directory or the nearest
// directory above it that has one (tests run in their package's folder).
func FindLibs() (string, error) {
	if dir := os.Getenv(LibsEnv); dir != "" {
		return dir, checkLibs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	rel := filepath.Join(".cache", "kafka-"+Version, "libs")
	for dir := wd; ; dir = filepath.Dir(dir) {
		if checkLibs(filepath.Join(dir, rel)) == nil {
			return filepath.Join(dir, rel), nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", fmt.Errorf("%w: no %s above %s: run `make test-deps` (test/tools/deps.sh) to fetch Apache Kafka %s, or set %s",
		ErrNotInstalled, rel, wd, Version, LibsEnv)
}

func checkLibs(dir string) error {
	jar := filepath.Join(dir, "kafka_2.13-"+Version+".jar")
	if _, err := os.Stat(jar); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotInstalled, jar, err)
	}
	return nil
}

// FindJava returns a java of version 17 or later: $JAVA_HOME/bin/java, or
// java on PATH.
func FindJava() (string, error) {
	java := "java"
	if home := os.Getenv("JAVA_HOME"); home != "" {
		java = filepath.Join(home, "bin", "java")
	}
	path, err := exec.LookPath(java)
	if err != nil {
		return "", fmt.Errorf("%w: no java (Apache Kafka %s needs Java 17 or later; make test-deps installs it): %w", ErrNotInstalled, Version, err)
	}
	out, err := exec.Command(path, "-XshowSettings:properties", "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s -version: %w: %s", ErrNotInstalled, path, err, out)
	}
	m := regexp.MustCompile(`java\.specification\.version = (\d+)`).FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%w: %s: no java.specification.version in its settings", ErrNotInstalled, path)
	}
	if v, _ := strconv.Atoi(string(m[1])); v < 17 {
		return "", fmt.Errorf("%w: %s is Java %d; Apache Kafka %s needs 17 or later", ErrNotInstalled, path, v, Version)
	}
	return path, nil
}

// classpath is every jar of libs, as Java's wildcard takes them.
func classpath(libs string) string {
	return strings.TrimSuffix(libs, string(filepath.Separator)) + string(filepath.Separator) + "*"
}
