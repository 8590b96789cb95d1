# The per-machine tool cache, sourced by the scripts; core/src/infra/tool-cache.ts is the same
# protocol in TypeScript (test/core/infra/tool-cache.test.ts checks that both name the same folders).
#
# What the tests need built (the Go programs under tools/, helm and its friends, Schemathesis' venv, the image's
# Debian base) is built once per machine, not once per clone, under
#   ${PORTICO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/portico}/<tool>/<key>/
# The key is a hash of everything the entry was built from, so an entry never changes once it is there and a
# clone on another commit simply uses another one. An entry appears whole: it is built in a sibling temporary
# folder and renamed into place (rename(2) of a folder is atomic), while a lock file beside it (flock(1), which
# the TypeScript side takes too) keeps two clones from building the same entry at once. Old entries are not
# removed; deleting the whole folder is always safe.

# tool_cache_dir: the cache's root folder, absolute.
tool_cache_dir() {
  local dir="${PORTICO_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/portico}"
  case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
  printf '%s' "$dir"
}

# tool_cache_key: the key of the text on stdin (a hash; 20 hex digits, as tool-cache.ts).
tool_cache_key() {
  sha256sum | cut -c1-20
}

# go_build_inputs <folder>: what decides the binary `go build -trimpath` makes in <folder> besides the module's
# own files: the Go release that builds it (run in <folder>, so a go.mod toolchain line counts), the target
# platform and cgo (and so which libc the binary needs), and GOFLAGS.
go_build_inputs() {
  printf 'go build -trimpath\n'
  (cd "$1" && go env GOVERSION GOOS GOARCH CGO_ENABLED GOFLAGS)
}

# go_built_from <folder>: what decides the binary of a Go program under tools/ (core/src/infra/go-tool.ts's
# goBuiltFrom writes the same text, and its hash is the program's key): the inputs above, then go.mod, go.sum
# and every .go file, each by its hash and name, which is all `go build` reads there (go.sum fixes the rest).
go_built_from() {
  go_build_inputs "$1"
  (cd "$1" && LC_ALL=C sha256sum go.mod go.sum $(LC_ALL=C ls -- *.go))
}

# tool_cache_lock <entry> / tool_cache_unlock: the entry's lock (flock on <entry>.lock), held until unlocked or
# until the script exits, however it exits.
tool_cache_lock() {
  mkdir -p "$(dirname "$1")"
  exec {tool_cache_lock_fd}>"$1.lock"
  flock "$tool_cache_lock_fd"
}
tool_cache_unlock() {
  exec {tool_cache_lock_fd}>&-
}

# tool_cache_build <entry> <file> <build function> [args…]: makes sure <entry> exists, <file> (a path inside it)
# showing that it does. Unless it is there already, takes the entry's lock, looks again (another clone may have
# built it meanwhile), calls `<build function> <temporary folder> [args…]` with a new folder beside the entry,
# and renames that folder into place. Leftovers of an interrupted build are removed under the lock. Call it as a
# plain command (not in `if` or `||`), so that `set -e` stops the script when the build fails.
tool_cache_build() {
  local entry="$1" file="$2" build="$3"
  shift 3
  [ -e "$entry/$file" ] && return 0
  tool_cache_lock "$entry"
  if [ ! -e "$entry/$file" ]; then
    rm -rf "$entry" "$entry".tmp.*
    local temporary="$entry.tmp.$$"
    mkdir "$temporary"
    "$build" "$temporary" "$@"
    mv -T "$temporary" "$entry"
  fi
  tool_cache_unlock
}

# link_into <target> <link>: points the clone's <link> (under .tools) at a cache entry, replacing whatever was
# there (a link to an older entry, or a real file or folder of the old per-clone layout).
link_into() {
  local target="$1" link="$2"
  if [ "$(readlink "$link" 2>/dev/null)" = "$target" ]; then return 0; fi
  mkdir -p "$(dirname "$link")"
  rm -rf "$link"
  ln -s "$target" "$link.$$.tmp"
  mv -T "$link.$$.tmp" "$link"
}
