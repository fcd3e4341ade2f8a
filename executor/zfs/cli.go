package zfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gozfs "github.com/mistifyio/go-zfs/v3"
)

// The zfs command line, as this driver uses it. go-zfs v3 is used where
// its commands exist on every ZFS: setting properties, rollback, destroy.
// Its listing functions (GetDataset, Snapshots, and Snapshot and
// CreateFilesystem, which call GetDataset) run `zfs list -Hp -o
// ...,written,logicalused,...`, which old ZFS (zfs-fuse, pool version 23)
// refuses: it has neither `list -p` nor those properties. Listing, `get
// -Hp`, snapshots, clones, send and receive therefore go through exec
// here, with `get -Hp`, which every ZFS has.

// run runs zfs with args and returns its standard output.
func run(ctx context.Context, args ...string) (string, error) {
	var out, errb bytes.Buffer
	c := exec.CommandContext(ctx, "zfs", args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return "", cmdError(args, errb.String(), err)
	}
	return out.String(), nil
}

func cmdError(args []string, stderr string, err error) error {
	msg := strings.TrimSpace(stderr)
	base := ErrCommand
	if strings.Contains(msg, "does not exist") || strings.Contains(msg, "could not find any snapshots") {
		base = errors.Join(ErrCommand, ErrNotFound)
	}
	return fmt.Errorf("%w: zfs %s: %s (%v)", base, strings.Join(args, " "), msg, err)
}

// translate turns a go-zfs error into this package's.
func translate(err error) error {
	var ze *gozfs.Error
	if errors.As(err, &ze) {
		return cmdError(strings.Fields(ze.Debug), ze.Stderr, ze.Err)
	}
	return err
}

func exists(ctx context.Context, name string) (bool, error) {
	_, err := run(ctx, "list", "-H", "-o", "name", name)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// prop reads one property's raw value ("-" when it does not apply).
func prop(ctx context.Context, name, p string) (string, error) {
	out, err := run(ctx, "get", "-Hp", "-o", "value", p, name)
	return strings.TrimSpace(out), err
}

// props reads several properties of name in one command: a switch's
// downtime is made of such commands, each a round trip to the daemon.
// Properties that do not apply read as "-".
func props(ctx context.Context, name string, ps ...string) (map[string]string, error) {
	out, err := run(ctx, "get", "-Hp", "-o", "property,value", strings.Join(ps, ","), name)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "\t"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m, nil
}

// num reads a numeric property value as propInt does.
func num(v string) (int64, error) {
	if v == "-" || v == "none" || v == "" {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// propInt reads a numeric property; "-", "none" and empty read as 0.
func propInt(ctx context.Context, name, p string) (int64, error) {
	v, err := prop(ctx, name, p)
	if err != nil {
		return 0, err
	}
	if v == "-" || v == "none" || v == "" {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

func setProp(ctx context.Context, name, p, v string) error {
	_ = ctx
	return translate((&gozfs.Dataset{Name: name}).SetProperty(p, v))
}

// setProps sets each property of ps on name, all at once (atOnce). Each
// set waits for a transaction group to sync, and zfs-fuse's `zfs set`
// takes one property a command: one after another, a new replica's three
// marks cost three groups (37-45 ms beside a writer, in every first
// sync), at once they mostly share one.
func setProps(ctx context.Context, name string, ps map[string]string) error {
	return atOnce(slices.Collect(maps.Keys(ps)), func(p string) error { return setProp(ctx, name, p, ps[p]) })
}

// atOnce runs f for each of ps, all at once, and joins their errors.
func atOnce(ps []string, f func(p string) error) error {
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { errs[i] = f(p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// intProps reads the numeric properties ps of every one of names in one
// command, by name then property; a property that does not apply, or
// does not parse, is left out (reads as 0).
func intProps(ctx context.Context, names []string, ps ...string) (map[string]map[string]int64, error) {
	out, err := run(ctx, append([]string{"get", "-Hp", "-o", "name,property,value", strings.Join(ps, ",")}, names...)...)
	if err != nil {
		return nil, err
	}
	m := map[string]map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		if err != nil {
			continue
		}
		if m[f[0]] == nil {
			m[f[0]] = map[string]int64{}
		}
		m[f[0]][f[1]] = n
	}
	return m, nil
}

// localProps is those of ps set on name itself (source local).
func localProps(ctx context.Context, name string, ps ...string) ([]string, error) {
	out, err := run(ctx, "get", "-H", "-o", "property,source", strings.Join(ps, ","), name)
	if err != nil {
		return nil, err
	}
	var set []string
	for _, line := range strings.Split(out, "\n") {
		if k, src, ok := strings.Cut(line, "\t"); ok && strings.TrimSpace(src) == "local" {
			set = append(set, k)
		}
	}
	return set, nil
}

func inherit(ctx context.Context, name, p string) error {
	_, err := run(ctx, "inherit", p, name)
	return err
}

// clearProps clears each of ps on name, all at once as setProps does. A
// failure is ignored: each caller clears marks that may not be set.
func clearProps(ctx context.Context, name string, ps ...string) {
	_ = atOnce(ps, func(p string) error { return inherit(ctx, name, p) })
}

// setVouched sets marks on name at once (setProps), then voucher to v. A
// reader trusts the marks only while the voucher names its move, so the
// voucher is set last and cleared first (clearVouched): a crash midway
// never leaves marks that look whole.
func setVouched(ctx context.Context, name string, marks map[string]string, voucher, v string) error {
	if err := setProps(ctx, name, marks); err != nil {
		return err
	}
	return setProp(ctx, name, voucher, v)
}

// clearVouched clears voucher, then marks at once.
func clearVouched(ctx context.Context, name, voucher string, marks ...string) {
	_ = inherit(ctx, name, voucher)
	clearProps(ctx, name, marks...)
}

// remount unmounts a mounted file system and mounts it again: what a
// receive changed under a mounted dataset is then what its files read.
// zfs-fuse keeps files' attributes from before such a receive (issue 18:
// a file empty before a migration's switch still read empty after the
// rollback received its new content), and a fresh mount has no cache.
// A dataset not mounted is left alone.
func remount(ctx context.Context, ds string) error {
	if v, err := prop(ctx, ds, "mounted"); err != nil || v != "yes" {
		return err
	}
	if _, err := run(ctx, "unmount", ds); err != nil {
		return err
	}
	_, err := run(ctx, "mount", ds)
	return err
}

func snapshot(ctx context.Context, name string) error {
	_, err := runToEnd(ctx, "snapshot", "-r", name)
	return err
}

// runToEnd runs a zfs command that makes something (a snapshot, a clone)
// to its end even once ctx is done, then returns ctx's error: zfs-fuse's
// daemon finishes a killed command's work at a moment of its own. An
// abort during a sync's first snapshot thus listed none to drop, and
// @migrate-snap-1 appeared on the source after the abort had ended (CI,
// 12-03). Waited for, the thing is there or not when the caller learns
// of ctx, and its cleanup sees it. makeWait bounds a daemon that never
// answers.
func runToEnd(ctx context.Context, args ...string) (string, error) {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), makeWait)
	defer cancel()
	out, err := run(mctx, args...)
	if err != nil {
		return "", err
	}
	return out, ctx.Err()
}

// makeWait is far above a snapshot's or a clone's time on a loaded
// machine (a transaction group, under a second).
const makeWait = time.Minute

// rollback rolls a dataset back to snap, destroying later snapshots.
// Through exec: go-zfs refuses a Dataset it did not list as a snapshot
// ("can only rollback snapshots"), and listing it is what old ZFS fails.
func rollback(ctx context.Context, snap string) error {
	_, err := run(ctx, "rollback", "-r", snap)
	return err
}

// destroy removes a dataset or snapshot with its children, unmounting by
// force (zfs-fuse reports a mounted dataset busy otherwise). A missing one
// is not an error: cleanup runs after partial work.
// zfs-fuse calls a dataset busy for a moment after its files were last
// used, even with -f; the destroy is retried for up to busyWait.
func destroy(ctx context.Context, name string) error { return destroyWithin(ctx, name, busyWait) }

// destroyWithin is destroy retrying a busy dataset for up to wait.
func destroyWithin(ctx context.Context, name string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := translate((&gozfs.Dataset{Name: name}).Destroy(gozfs.DestroyRecursive | gozfs.DestroyForceUmount))
		if errors.Is(err, ErrNotFound) || err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "busy") {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w (waited %s): %w", ErrBusy, wait, err)
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		}
	}
}

// ErrBusy is a destroy still refused at its deadline because zfs-fuse
// holds the dataset busy.
var ErrBusy = errors.New("zfs: dataset still busy")

// busyWait is long because the moment can be: beside two CPU-bound
// processes a destroy was still refused after 5 s (an abort during a sync
// then ended failed, its target left behind).
const busyWait = 30 * time.Second

// snapNumbers lists the N of ds's @migrate-snap-N snapshots, ascending.
func snapNumbers(ctx context.Context, ds string) ([]int, error) {
	out, err := run(ctx, "list", "-H", "-t", "snapshot", "-o", "name", "-r", ds)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	var ns []int
	for _, line := range strings.Split(out, "\n") {
		d, s, ok := strings.Cut(strings.TrimSpace(line), "@")
		if !ok || d != ds {
			continue
		}
		if n, ok := snapNumber(s); ok {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns, nil
}

// Send and receive are stopped by closing this side of their pipe, not
// by killing the zfs command. zfs-fuse runs a transfer in its daemon: the
// command passes its standard input or output to the daemon and waits, so
// a killed command leaves the daemon reading or writing the pipe on its
// own. A receive left that way either completes a stream meant to be cut
// or blocks, holding the dataset, until the pipe closes. Closing the pipe
// stops a receive (the daemon or kernel sees an incomplete stream) and a
// send (a broken pipe). But zfs-fuse's daemon can keep the snapshot of a
// send stopped that way busy for minutes: there (drain) a stopped send is
// read to its end instead, and its pipe closed only after drainWait. The
// command is killed only if it has not ended stopGrace after that.

// send runs `zfs send args...` into w. It returns when the stream is
// written, or, once ctx ends or w fails, when the send has stopped.
func send(ctx context.Context, w io.Writer, drain bool, args ...string) error {
	all := append([]string{"send"}, args...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	c := exec.Command("zfs", all...)
	c.Stdout, c.Stderr = pw, &errb
	err = c.Start()
	pw.Close() // the command (and through it the daemon) holds the write end
	if err != nil {
		pr.Close()
		return cmdError(all, "", err)
	}
	wait := time.Duration(0)
	if drain {
		wait = drainWait
	}
	// A read blocked when ctx ends is freed by the close.
	stop := context.AfterFunc(ctx, func() { closeAfter(pr, wait) })
	widenPipe(pr)
	_, cerr := copyBig(stoppable{ctx, w}, pr)
	if cerr != nil && drain {
		t := closeAfter(pr, drainWait)
		_, _ = copyBig(io.Discard, pr)
		t.Stop()
	}
	pr.Close() // a failed w must break the daemon's pipe, or it blocks writing
	stop()
	if werr := waitStopped(ctx, c); werr != nil {
		return cmdError(all, errb.String(), werr)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return cerr
}

// drainWait bounds reading a stopped send to its end: at test sizes that
// takes milliseconds; a send still flowing after it is cut after all.
const drainWait = 20 * time.Second

// closeAfter closes f after d (at once for 0).
func closeAfter(f *os.File, d time.Duration) *time.Timer {
	return time.AfterFunc(d, func() { f.Close() })
}

// stoppable is w until ctx ends, then an error: the copy stops writing
// at once, whether or not the read side is then drained.
type stoppable struct {
	ctx context.Context
	w   io.Writer
}

func (s stoppable) Write(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	return s.w.Write(p)
}

// recv runs `zfs receive args...` reading r to its end. If ctx ends or r
// fails before the end, the receive sees an incomplete stream and fails.
func recv(ctx context.Context, r io.Reader, args ...string) error {
	all := append([]string{"receive"}, args...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	var errb bytes.Buffer
	c := exec.Command("zfs", all...)
	c.Stdin, c.Stderr = pr, &errb
	err = c.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return cmdError(all, "", err)
	}
	widenPipe(pw)
	copied := make(chan error, 1)
	go func() {
		var err error
		if wt, ok := r.(io.WriterTo); ok {
			_, err = wt.WriteTo(pw) // a transfer stream splices into the pipe
		} else {
			_, err = copyBig(pw, r)
		}
		pw.Close()
		copied <- err
	}()
	stop := context.AfterFunc(ctx, func() { pw.Close() })
	werr := waitStopped(ctx, c)
	stop()
	// The copy may still wait on r after a failed receive; closing the
	// pipe makes its next write fail, and r's owner ends the read.
	pw.Close()
	if werr != nil {
		err := cmdError(all, errb.String(), werr)
		select {
		case cerr := <-copied:
			if cerr != nil {
				err = fmt.Errorf("%w (the stream: %v)", err, cerr)
			}
		default:
		}
		return err
	}
	// A whole stream is in (it ends with its own end record), even if
	// ctx ended just after. The copy still reads r to its end marker (or
	// its cut, or ctx's close of it), and r's owner reads it next, to
	// reply (transfer.Stream.Reply): wait, so that no two read it at once.
	<-copied
	return nil
}

// waitStopped waits for c; once ctx has ended it allows stopGrace for the
// closed pipe to end the command, then kills it.
func waitStopped(ctx context.Context, c *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		_ = c.Process.Kill()
		return <-done
	}
}

const stopGrace = 30 * time.Second

// The pipes between the ZFS daemon and this process carry the whole
// dataset. With the defaults (64 KiB pipes, 32 KiB copies) each side
// wakes the other every few dozen KiB, and on a small machine those
// wakeups, not the copying, bound the move's throughput.

// pipeSize is the kernel buffer asked for each pipe (Linux caps it at
// /proc/sys/fs/pipe-max-size, 1 MiB by default).
const pipeSize = 1 << 20

// widenPipe asks for a pipeSize buffer; a refusal keeps the default.
func widenPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETPIPE_SZ, pipeSize)
	})
}

// copyBig copies with a pipeSize buffer. The wrappers hide *os.File's
// ReadFrom and WriteTo, which would copy 32 KiB at a time.
func copyBig(w io.Writer, r io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{w}, struct{ io.Reader }{r}, make([]byte, pipeSize))
}
