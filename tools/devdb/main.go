// Command portico-devdb is Portico's embedded MongoDB-compatible database for development and tests:
// FerretDB v1 (SQLite backend) behind the MongoDB wire protocol on a loopback address. Production runs
// real MongoDB instead; the API only uses what both support.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to serve the MongoDB wire protocol on")
	dir := flag.String("dir", ".data/devdb", "directory holding the SQLite databases")
	watchStdin := flag.Bool("exit-on-stdin-eof", false, "stop when standard input closes (the parent process went away)")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fail(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	abs, err := filepath.Abs(*dir)
	if err != nil {
		fail(err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		fail(err)
	}

	db, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/?" + sqliteParams,
	})
	if err != nil {
		fail(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *watchStdin {
		// A parent killed without a chance to clean up still closes our stdin, so we never outlive it.
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}

	done := make(chan struct{})
	go func() {
		_ = db.Run(ctx)
		close(done)
	}()
	go newIDIndexer(abs, logger).run(ctx, 200*time.Millisecond)

	// The line the launcher waits for before it connects.
	fmt.Printf("ready %s\n", db.MongoDBURI())
	<-done
}

// sqliteParams are added to FerretDB's own (busy_timeout, journal_mode=WAL). synchronous=NORMAL: a commit
// appends to the write-ahead log without waiting for the disk (fsync happens at checkpoints), which SQLite
// documents as safe from corruption and durable across a crash of the process (the fault tests SIGKILL
// it) — only an operating-system crash or power loss can lose the last commits, a fair trade for a
// development and test database. With FerretDB's default (FULL) every commit waited for an fsync while
// holding SQLite's single write lock, so write throughput followed the disk's fsync latency: on a busy
// or slow virtual disk (milliseconds per fsync) it fell to about a hundred writes a second, at which a
// few seconds' backlog after an outage took the API tens of seconds to clear.
const sqliteParams = "_pragma=synchronous(normal)"

func fail(err error) {
	fmt.Fprintln(os.Stderr, "portico-devdb:", err)
	os.Exit(1)
}
