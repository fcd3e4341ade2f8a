// Package test holds what Drove's tests share: testenv starts real
// PostgreSQL and Kafka for them.
package test
