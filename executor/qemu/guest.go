package qemu

import (
	"encoding/binary"
	"fmt"
	"os"
)

// Workload is what the tiny test guest of WriteGuestDisk does.
type Workload int

const (
	// Idle leaves the disk unbootable: only the firmware runs.
	Idle Workload = iota
	// FillOnce writes a counter into every page from 1 MiB up to the end
	// of the region once and halts, so a migration moves real, settled
	// memory and converges.
	FillOnce
	// FillForever rewrites every page of the region in a loop, dirtying
	// memory faster than a capped pre-copy can send it.
	FillForever
)

// bootSector is a 512-byte x86 boot sector, assembled from this source
// (GNU as, .code16 then .code32):
//
//	cli; xor ax,ax; mov ds,ax; lgdt [gdtr]      ; flat 4 GiB segments
//	mov eax,cr0; or eax,1; mov cr0,eax; ljmp 0x08:pm
//	pm: mov ax,0x10; mov ds/es/ss,ax; mov ebx,1
//	again: mov edi,0x100000
//	fill: mov [edi],ebx; add edi,4096; cmp edi,[end]; jb fill
//	      inc ebx; cmp byte [forever],0; jne again
//	halt: hlt; jmp halt
//	gdt: null, code 0x00cf9a000000ffff, data 0x00cf92000000ffff
//	gdtr: dw 23, dd gdt;  end: dd <patched>;  forever: db <patched>
//
// SeaBIOS loads it at 0x7c00 with A20 enabled.
var bootSector = [...]byte{
	0xfa, 0x31, 0xc0, 0x8e, 0xd8, 0x66, 0x0f, 0x01, 0x16, 0x68, 0x7c, 0x0f, 0x20, 0xc0, 0x66, 0x83,
	0xc8, 0x01, 0x0f, 0x22, 0xc0, 0x66, 0xea, 0x1d, 0x7c, 0x00, 0x00, 0x08, 0x00, 0x66, 0xb8, 0x10,
	0x00, 0x8e, 0xd8, 0x8e, 0xc0, 0x8e, 0xd0, 0xbb, 0x01, 0x00, 0x00, 0x00, 0xbf, 0x00, 0x00, 0x10,
	0x00, 0x89, 0x1f, 0x81, 0xc7, 0x00, 0x10, 0x00, 0x00, 0x3b, 0x3d, 0x6e, 0x7c, 0x00, 0x00, 0x72,
	0xf0, 0x43, 0x80, 0x3d, 0x72, 0x7c, 0x00, 0x00, 0x00, 0x75, 0xe1, 0xf4, 0xeb, 0xfd, 0x66, 0x90,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x9a, 0xcf, 0x00,
	0xff, 0xff, 0x00, 0x00, 0x00, 0x92, 0xcf, 0x00, 0x17, 0x00, 0x50, 0x7c, 0x00, 0x00,
}

const (
	endOffset     = 0x6e // dd: first address not written
	foreverOffset = 0x72 // db: non-zero loops forever
)

// WriteGuestDisk writes a raw disk image of sizeMiB at path whose first
// sector boots a guest doing w over the RAM of a memoryMiB VM (all but
// the first and the last 8 MiB, where the firmware keeps its tables). It
// is the stand-in for an OS in tests and benchmarks: a VM needs none to
// run, and this one makes its memory real.
func WriteGuestDisk(path string, sizeMiB int64, memoryMiB int64, w Workload) error {
	if memoryMiB < 16 {
		return fmt.Errorf("qemu: guest needs at least 16 MiB, got %d", memoryMiB)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(sizeMiB << 20); err != nil {
		return err
	}
	if w == Idle {
		return f.Close()
	}
	var sec [512]byte
	copy(sec[:], bootSector[:])
	binary.LittleEndian.PutUint32(sec[endOffset:], uint32((memoryMiB-8)<<20))
	if w == FillForever {
		sec[foreverOffset] = 1
	}
	sec[510], sec[511] = 0x55, 0xaa
	if _, err := f.WriteAt(sec[:], 0); err != nil {
		return err
	}
	return f.Close()
}
