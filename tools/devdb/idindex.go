package main

// FerretDB v1.24's SQLite backend creates each collection's unique _id index on the expression
// `_ferretdb_sjson->"_id"` but looks documents up by `_ferretdb_sjson->'$._id'`; SQLite uses an expression
// index only for the very same expression, so every lookup by _id scanned the whole table (20 ms at 5,000
// documents, growing with the collection). The indexer gives every collection table the index its
// lookups can use, checking the data directory a few times a second: a table is indexed within moments of
// its creation, and reads are correct (if slower) before that. FerretDB never sees the index (its own
// metadata does not list it), and it goes with the table when a collection or database is dropped.

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the driver FerretDB itself registers and uses
)

const idIndexSuffix = "__id_lookup"

type fileState struct {
	inode   uint64
	mainMod time.Time
	walMod  time.Time
	walSize int64
}

type idIndexer struct {
	dir    string
	logger *slog.Logger
	seen   map[string]fileState
}

func newIDIndexer(dir string, logger *slog.Logger) *idIndexer {
	return &idIndexer{dir: dir, logger: logger, seen: map[string]fileState{}}
}

// run checks every database file that changed since it last looked, until ctx ends.
func (x *idIndexer) run(ctx context.Context, every time.Duration) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		x.scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (x *idIndexer) scan(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(x.dir, "*.sqlite"))
	present := map[string]bool{}
	for _, file := range files {
		present[file] = true
		state, ok := stateOf(file)
		if !ok || x.seen[file] == state {
			continue
		}
		started := time.Now()
		created, err := indexTables(ctx, file)
		if err != nil {
			x.logger.Warn("indexing _id lookups failed; retrying at the next change", "file", file, "error", err)
			continue
		}
		if created > 0 {
			x.logger.Debug("indexed _id lookups", "file", file, "tables", created, "took", time.Since(started))
		}
		x.seen[file] = state
	}
	for file := range x.seen {
		if !present[file] {
			delete(x.seen, file)
		}
	}
}

// stateOf says whether a database file (or its write-ahead log) changed, or was replaced by another.
func stateOf(file string) (fileState, bool) {
	info, err := os.Stat(file)
	if err != nil {
		return fileState{}, false
	}
	state := fileState{mainMod: info.ModTime()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		state.inode = sys.Ino
	}
	if wal, err := os.Stat(file + "-wal"); err == nil {
		state.walMod, state.walSize = wal.ModTime(), wal.Size()
	}
	return state, true
}

// indexTables adds the _id lookup index to every collection table of one database file that lacks it.
func indexTables(ctx context.Context, file string) (int, error) {
	// mode=rw: a database dropped since the scan listed it must not be created again (empty, FerretDB would
	// refuse to start on it). Connections live for one scan only, so none outlives a drop for long.
	db, err := sql.Open("sqlite", "file:"+file+"?mode=rw&_pragma=busy_timeout(10000)")
	if err != nil {
		return 0, err
	}
	defer db.Close()

	rows, err := db.QueryContext(ctx, `SELECT c.table_name FROM _ferretdb_collections c
		WHERE NOT EXISTS (SELECT 1 FROM sqlite_master m WHERE m.type = 'index' AND m.name = c.table_name || ?)`, idIndexSuffix)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "unable to open") {
			return 0, nil // a database FerretDB has not set up yet, or has just dropped
		}
		return 0, err
	}
	var tables []string
	for rows.Next() {
		var table string
		if err := rows.Scan(&table); err != nil {
			rows.Close()
			return 0, err
		}
		tables = append(tables, table)
	}
	rows.Close()

	for _, table := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (_ferretdb_sjson->'$._id')`, table+idIndexSuffix, table)
		if _, err := db.ExecContext(ctx, q); err != nil && !strings.Contains(err.Error(), "no such table") {
			return 0, err
		}
	}
	return len(tables), nil
}
