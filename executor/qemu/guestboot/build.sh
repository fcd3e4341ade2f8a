#!/bin/sh
# Assembles boot.S into boot.bin, the test guest guest.go embeds.
# Needs GNU as and ld (binutils). TestGuestBootBuilt checks boot.bin is
# this source's.
set -e
cd "$(dirname "$0")"
out=${1:-boot.bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
as --32 -o "$tmp/boot.o" boot.S
ld -m elf_i386 -Ttext 0x7c00 -e _start --oformat binary -o "$out" "$tmp/boot.o"
