// Package supervise keeps a service's part running: when it stops with an
// error a restart may cure (a broker or database restarting, a connection
// lost), it is started again with backoff and the restart is logged and
// counted; when it stops with one no restart cures (bad configuration, a
// topic the broker keeps with the wrong settings, an event this build
// cannot decode, a newer instance that fenced this one), the error is
// returned, and a separate service exits non-zero with it.
package supervise
