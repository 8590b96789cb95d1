// Command portico-s3d is an S3-compatible object store for tests: gofakes3 with its in-memory backend on a
// loopback address, so the S3 object-storage driver is exercised through the real AWS SDK against a real
// S3 protocol server. Nothing is kept on disk; the objects die with the process. One gap is filled here:
// gofakes3 forgets Cache-Control, which S3 keeps (see keepCacheControl).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "TCP address to serve the S3 protocol on (port 0: any free port)")
	buckets := flag.String("buckets", "", "comma-separated buckets to create at start-up")
	watchStdin := flag.Bool("exit-on-stdin-eof", false, "stop when standard input closes (the parent process went away)")
	verbose := flag.Bool("verbose", false, "log every request, not only warnings and errors")
	flag.Parse()

	backend := s3mem.New()
	for _, name := range strings.Split(*buckets, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if err := backend.CreateBucket(name); err != nil && !gofakes3.IsAlreadyExists(err) {
			fail(fmt.Errorf("cannot create bucket %q: %w", name, err))
		}
	}

	levels := []gofakes3.LogLevel{gofakes3.LogErr, gofakes3.LogWarn}
	if *verbose {
		levels = append(levels, gofakes3.LogInfo)
	}
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.StdLog(log.New(os.Stderr, "", log.LstdFlags), levels...)))

	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		fail(err)
	}
	server := &http.Server{Handler: keepCacheControl(faker.Server()), ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *watchStdin {
		// A parent killed without a chance to clean up still closes our stdin, so we never outlive it.
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}

	done := make(chan error, 1)
	go func() { done <- server.Serve(listener) }()

	// The line the launcher waits for before it sends requests.
	fmt.Printf("ready http://%s\n", listener.Addr().String())

	select {
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			fail(err)
		}
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}
}

// gofakes3 v1.2.0 drops an upload's Cache-Control, which S3 stores and sends back with the object. Carry it
// under an X-Amz- header (gofakes3 keeps those with the object) and hand it back as Cache-Control.
const storedCacheControl = "X-Amz-Portico-Cache-Control"

func keepCacheControl(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(storedCacheControl)
		if value := r.Header.Get("Cache-Control"); value != "" && (r.Method == http.MethodPut || r.Method == http.MethodPost) {
			r.Header.Set(storedCacheControl, value)
		}
		writer := &cacheControlWriter{ResponseWriter: w}
		next.ServeHTTP(writer, r)
		writer.restore() // a HEAD answer may set headers and return without writing
	})
}

type cacheControlWriter struct {
	http.ResponseWriter
	restored bool
}

func (w *cacheControlWriter) restore() {
	if w.restored {
		return
	}
	w.restored = true
	header := w.Header()
	if value := header.Get(storedCacheControl); value != "" {
		header.Del(storedCacheControl)
		if header.Get("Cache-Control") == "" {
			header.Set("Cache-Control", value)
		}
	}
}

func (w *cacheControlWriter) WriteHeader(code int) {
	w.restore()
	w.ResponseWriter.WriteHeader(code)
}

func (w *cacheControlWriter) Write(body []byte) (int, error) {
	w.restore()
	return w.ResponseWriter.Write(body)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "portico-s3d:", err)
	os.Exit(1)
}
