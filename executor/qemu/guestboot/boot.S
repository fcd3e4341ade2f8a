/*
 * The test guest of executor/qemu (guest.go): a boot program with no OS.
 * Assemble with ./build.sh (GNU as and ld); guest.go embeds boot.bin.
 *
 * SeaBIOS loads the first sector at 0x7c00. It loads the rest of the
 * program (3 sectors) behind it with int 13h, switches to 32-bit
 * protected mode with flat segments and then, round after round:
 *
 *   - writes the round counter into every page from 1 MiB up to `end`
 *     (the counter of the current round is the word at 0x100000);
 *   - if `tpc` (HPET ticks per chunk) is not 0, reads the HPET main
 *     counter (100 MHz in QEMU, stopped while the VM is paused) and, for
 *     each `tpc` ticks elapsed, writes one chunk of `chunk` sectors to
 *     the disk in one bus-master DMA transfer (WRITE DMA, LBA28; the
 *     header goes by PIO, WRITE SECTORS):
 *     chunk number `seq` goes to ring slot seq mod `slots` from LBA
 *     `ring`; then it writes the header sector at LBA `hdr` naming that
 *     chunk (seq, round) and, every `flushk` chunks, sends CACHE FLUSH
 *     (QEMU makes it an fdatasync of the image). Every sector of a chunk
 *     says what it is (magic, seq, round, its LBA) and the rest of it is
 *     a pattern of those, so a reader can check every byte;
 *   - stops after the first round unless `forever`.
 *
 * The HPET stands still while the VM is paused, so the guest's own clock
 * cannot see a migration's pause; the RTC (CMOS, driven by the host's
 * clock) can, to the second. So the guest watches the RTC's seconds
 * (every MiB of a round, before each chunk and while it waits on the
 * disk) and notes the HPET counter when
 * they change (`edge`), and stamps each chunk's first sector with words
 * 4..7: the HPET counter at the chunk, `edge`, the RTC's seconds then
 * (BCD) and "DRGT". The wall clock of a chunk is those seconds plus the
 * HPET time since the edge: stale after a pause until the next edge,
 * which makes the pause show as a jump between two chunks
 * (qemu.GuestDowntime reads it).
 *
 * Each chunk's stamp also goes to the timeline (if `tl` is not 0): entry
 * seq mod 16 of sector seq/16 mod `tlsecs` from LBA `tl`, 32 bytes: seq,
 * the HPET counter, `edge`, the RTC's seconds, the round, two zero words
 * and "DRTL". The ring of chunks holds seconds of writes at a fast rate
 * (a 7 MiB ring at 5 MB/s: 1.5 s) and the chunks around a pause are soon
 * written over, while a reader needs the edges either side of the pause;
 * the timeline keeps the last 16,368 stamps (3.6 minutes at 5 MB/s)
 * whatever the ring, for one PIO sector more per chunk.
 *
 * A guest that boots on a disk a writing guest wrote goes on counting
 * chunks from its header (its rounds start again at 1).
 *
 * Interrupts stay off throughout (cli; nIEN set on the disk); the DMA's
 * end is polled on the bus master's status.
 */
	.code16
	.text
	.globl _start
_start:
	cli
	xorw	%ax, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %ss
	movw	$0x7c00, %sp
	sti			/* SeaBIOS's disk services may wait on interrupts */
	movw	$0x0203, %ax	/* read 3 sectors */
	movw	$0x0002, %cx	/* cylinder 0, sector 2 */
	xorb	%dh, %dh	/* head 0; %dl is the boot drive */
	movw	$0x7e00, %bx
	int	$0x13
	cli
	jc	halt16
	lgdtl	gdtr
	movl	%cr0, %eax
	orl	$1, %eax
	movl	%eax, %cr0
	ljmpl	$0x08, $pm
halt16:
	hlt
	jmp	halt16

	.p2align 3
gdt:
	.quad	0
	.quad	0x00cf9a000000ffff	/* code: flat 4 GiB */
	.quad	0x00cf92000000ffff	/* data: flat 4 GiB */
gdtr:
	.word	23
	.long	gdt

	/* The parameters, patched by guest.go at these offsets. */
	.org	0x1d8
tl:	.long	0	/* 0x1d8: first LBA of the timeline; 0: none */
tlsecs:	.long	0	/* 0x1dc: sectors in the timeline */
end:	.long	0	/* 0x1e0: first address not written */
tpc:	.long	0	/* 0x1e4: HPET ticks per disk chunk; 0: no disk writes */
chunk:	.long	0	/* 0x1e8: sectors per chunk, a multiple of 16, at most 256 */
ring:	.long	0	/* 0x1ec: first LBA of the ring of chunks */
slots:	.long	0	/* 0x1f0: chunks in the ring */
hdr:	.long	0	/* 0x1f4: LBA of the header sector */
forever: .byte	0	/* 0x1f8: non-zero loops forever */
	.org	0x1fa
flushk:	.word	1	/* 0x1fa: chunks per CACHE FLUSH, at least 1 */
	.org	0x1fe
	.byte	0x55, 0xaa

/* Sector 2 on, at 0x7e00. */
	.code32
pm:
	movw	$0x10, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %ss
	movl	$0x7c00, %esp
	cld
	movl	$1, 0xfed00010		/* HPET: start the main counter */
	movl	0xfed000f0, %eax
	movl	%eax, last
	cmpl	$0, tpc
	je	1f
	call	ata_init
1:	movl	$1, %ebx		/* the round counter */
again:
	call	rtc_poll
	movl	$0x100000, %edi
fill:
	testl	$0xfffff, %edi		/* the RTC again every MiB */
	jnz	2f
	call	rtc_poll
2:	movl	%ebx, (%edi)
	addl	$4096, %edi
	cmpl	end, %edi
	jb	fill
	cmpl	$0, tpc
	je	next
	movl	0xfed000f0, %eax	/* credit the ticks since the last look */
	movl	%eax, %ecx
	subl	last, %eax
	movl	%ecx, last
	addl	%eax, credit
	movl	tpc, %eax		/* at most 16 chunks behind */
	shll	$4, %eax
	cmpl	%eax, credit
	jbe	write
	movl	%eax, credit
write:
	movl	tpc, %eax
	cmpl	%eax, credit
	jb	next
	subl	%eax, credit
	call	write_chunk
	jmp	write
next:
	incl	%ebx
	cmpb	$0, forever
	jne	again
halt:
	hlt
	jmp	halt

/*
 * ata_init: no interrupts from the disk, 16 sectors per DRQ block, and
 * the chunk count from the header if there is one.
 */
ata_init:
	/* the IDE function (00:01.1): bus master on, its BMDMA ports (BAR4) */
	movw	$0xcf8, %dx
	movl	$0x80000904, %eax
	outl	%eax, %dx
	movw	$0xcfc, %dx
	inl	%dx, %eax
	andl	$0xffff, %eax
	orl	$0x05, %eax		/* I/O space, bus master */
	outl	%eax, %dx
	movw	$0xcf8, %dx
	movl	$0x80000920, %eax
	outl	%eax, %dx
	movw	$0xcfc, %dx
	inl	%dx, %eax
	andl	$0xfffc, %eax
	movw	%ax, bmiba
	movw	$0x3f6, %dx
	movb	$0x02, %al		/* nIEN */
	outb	%al, %dx
	call	ata_idle
	movw	$0x1f2, %dx
	movb	$16, %al
	outb	%al, %dx
	movw	$0x1f6, %dx
	movb	$0xe0, %al
	outb	%al, %dx
	movw	$0x1f7, %dx
	movb	$0xc6, %al		/* SET MULTIPLE MODE */
	outb	%al, %dx
	/* a guest booted again goes on with the chunks after the header's */
	movl	hdr, %esi
	movb	$1, %cl
	movb	$0x20, %al		/* READ SECTORS */
	call	ata_cmd
	call	ata_drq
	movl	$0x10000, %edi
	movw	$0x1f0, %dx
	movl	$128, %ecx
	rep insl
	cmpl	$0x48475244, 0x10000
	jne	ata_idle
	movl	0x10004, %eax
	incl	%eax
	movl	%eax, seq
	call	tl_clear		/* the entries before it in its sector are lost */
	jmp	ata_idle

/* ata_idle waits until the disk is not busy (watching the RTC
 * meanwhile); an error halts. */
ata_idle:
	movw	$0x1f7, %dx
1:	call	rtc_poll
	inb	%dx, %al
	testb	$0x80, %al
	jnz	1b
	testb	$0x21, %al		/* ERR, DF */
	jnz	halt
	ret

/* ata_drq waits until the disk wants data; an error halts. */
ata_drq:
	call	ata_idle
	testb	$0x08, %al
	jz	halt
	ret

/* ata_cmd sends command %al for %cl sectors (0: 256) at LBA %esi. */
ata_cmd:
	pushl	%eax
	call	ata_idle
	movw	$0x1f2, %dx
	movb	%cl, %al
	outb	%al, %dx
	movl	%esi, %eax
	incw	%dx			/* 0x1f3..0x1f5: LBA bits 0..23 */
	outb	%al, %dx
	shrl	$8, %eax
	incw	%dx
	outb	%al, %dx
	shrl	$8, %eax
	incw	%dx
	outb	%al, %dx
	shrl	$8, %eax
	andb	$0x0f, %al
	orb	$0xe0, %al		/* LBA, device 0, bits 24..27 */
	incw	%dx
	outb	%al, %dx
	popl	%eax
	incw	%dx
	outb	%al, %dx
	ret

/*
 * write_chunk writes chunk `seq` of round %ebx into its ring slot, then
 * the header naming it, then flushes.
 */
write_chunk:
	pushl	%ebx
	call	rtc_poll
	movl	seq, %eax
	xorl	%edx, %edx
	divl	slots
	movl	%edx, %eax
	mull	chunk
	addl	ring, %eax
	movl	%eax, %esi		/* the slot's first LBA */
	movl	$0x10000, %edi		/* the buffer */
	movl	chunk, %ecx
1:	call	fill_sector
	incl	%esi
	loop	1b
	movl	%esi, %eax
	subl	chunk, %eax
	movl	%eax, %esi
	/* the clock stamp in words 4..7 of the chunk's first sector */
	movl	0xfed000f0, %eax
	movl	%eax, 0x10010
	movl	%eax, shpet
	movl	edge, %eax
	movl	%eax, 0x10014
	movl	%eax, sedge
	movzbl	rtcsec, %eax
	movl	%eax, 0x10018
	movl	%eax, ssec
	movl	$0x54475244, 0x1001c	/* "DRGT" */
	/* one DMA transfer of the chunk: a PRD of chunk*512 bytes (0: 64 KiB) */
	movl	$0x10000, 0x9000
	movl	chunk, %eax
	shll	$9, %eax
	andl	$0xffff, %eax
	orl	$0x80000000, %eax	/* the last PRD */
	movl	%eax, 0x9004
	movw	bmiba, %dx
	xorb	%al, %al
	outb	%al, %dx		/* stopped; direction memory to disk */
	addw	$4, %dx
	movl	$0x9000, %eax
	outl	%eax, %dx		/* the PRD table */
	subw	$2, %dx
	movb	$0x06, %al
	outb	%al, %dx		/* clear error and interrupt */
	movl	chunk, %ecx
	movb	$0xca, %al		/* WRITE DMA */
	call	ata_cmd
	movw	bmiba, %dx
	movb	$0x01, %al
	outb	%al, %dx		/* start */
	addw	$2, %dx
2:	call	rtc_poll
	inb	%dx, %al
	testb	$0x02, %al		/* error */
	jnz	halt
	testb	$0x01, %al		/* active */
	jnz	2b
	movw	bmiba, %dx
	xorb	%al, %al
	outb	%al, %dx		/* stop */
	call	ata_idle
	popl	%ebx
	/* the header: magic, seq, round, its LBA, then zeros */
	movl	$0x10000, %edi
	movl	$0x48475244, (%edi)	/* "DRGH" */
	movl	seq, %eax
	movl	%eax, 4(%edi)
	movl	%ebx, 8(%edi)
	movl	hdr, %esi
	movl	%esi, 12(%edi)
	pushl	%edi
	addl	$16, %edi
	xorl	%eax, %eax
	movl	$124, %ecx
	rep stosl
	popl	%edi
	movb	$1, %cl
	movb	$0x30, %al		/* WRITE SECTORS */
	call	ata_cmd
	call	ata_drq
	movl	%edi, %esi
	movw	$0x1f0, %dx
	movl	$128, %ecx
	rep outsl
	call	ata_idle
	call	log_stamp
	decw	flushleft
	jnz	3f
	movw	flushk, %ax
	movw	%ax, flushleft
	movw	$0x1f6, %dx
	movb	$0xe0, %al
	outb	%al, %dx
	movw	$0x1f7, %dx
	movb	$0xe7, %al		/* CACHE FLUSH */
	outb	%al, %dx
	call	ata_idle
3:	incl	seq
	ret

/*
 * log_stamp writes chunk `seq`'s stamp (shpet, sedge, ssec) of round
 * %ebx into its timeline entry: the entries of its sector are kept at
 * 0x9200 and the whole sector goes by PIO. The sector of a chunk that
 * starts one is cleared first.
 */
log_stamp:
	cmpl	$0, tlsecs
	je	2f
	movl	seq, %eax
	testl	$15, %eax
	jnz	1f
	call	tl_clear
	movl	seq, %eax
1:	andl	$15, %eax
	shll	$5, %eax
	leal	0x9200(%eax), %edi
	movl	seq, %eax
	movl	%eax, (%edi)
	movl	shpet, %eax
	movl	%eax, 4(%edi)
	movl	sedge, %eax
	movl	%eax, 8(%edi)
	movl	ssec, %eax
	movl	%eax, 12(%edi)
	movl	%ebx, 16(%edi)
	movl	$0x4c545244, 28(%edi)	/* "DRTL" */
	movl	seq, %eax
	shrl	$4, %eax
	xorl	%edx, %edx
	divl	tlsecs
	movl	%edx, %esi
	addl	tl, %esi
	movb	$1, %cl
	movb	$0x30, %al		/* WRITE SECTORS */
	call	ata_cmd
	call	ata_drq
	movl	$0x9200, %esi
	movw	$0x1f0, %dx
	movl	$128, %ecx
	rep outsl
	call	ata_idle
2:	ret

/* tl_clear empties the timeline sector kept at 0x9200. */
tl_clear:
	movl	$0x9200, %edi
	xorl	%eax, %eax
	movl	$128, %ecx
	rep stosl
	ret

/*
 * rtc_poll notes the HPET counter in `edge` when the RTC's seconds have
 * changed since the last look (none while the RTC updates). Clobbers %eax.
 */
rtc_poll:
	movb	$0x0a, %al
	outb	%al, $0x70
	inb	$0x71, %al
	testb	$0x80, %al		/* update in progress: next time */
	jnz	1f
	xorb	%al, %al
	outb	%al, $0x70
	inb	$0x71, %al		/* seconds */
	cmpb	rtcsec, %al
	je	1f
	cmpb	$0xff, rtcsec		/* the first look: mid-second, no edge */
	movb	%al, rtcsec
	je	1f
	movl	0xfed000f0, %eax
	movl	%eax, edge
1:	ret

/*
 * fill_sector writes the sector for LBA %esi of chunk `seq`, round %ebx,
 * at %edi and advances %edi: magic "DRGD", seq, round, LBA, then word i
 * (4..127) = seq*0x9e3779b1 + LBA*128 + i.
 */
fill_sector:
	pushl	%ecx
	movl	$0x44475244, (%edi)
	movl	seq, %eax
	movl	%eax, 4(%edi)
	movl	%ebx, 8(%edi)
	movl	%esi, 12(%edi)
	imull	$0x9e3779b1, %eax, %eax
	movl	%esi, %edx
	shll	$7, %edx
	addl	%edx, %eax
	movl	$4, %ecx
1:	leal	(%eax,%ecx), %edx
	movl	%edx, (%edi,%ecx,4)
	incl	%ecx
	cmpl	$128, %ecx
	jb	1b
	addl	$512, %edi
	popl	%ecx
	ret

	.p2align 2
last:	.long	0	/* the HPET counter at the last look */
credit:	.long	0	/* HPET ticks not yet spent on chunks */
seq:	.long	0	/* the next chunk's number */
flushleft: .word 1	/* chunks until the next flush */
bmiba:	.word	0	/* the IDE bus master's ports */
edge:	.long	0	/* the HPET counter when the RTC's seconds last changed */
rtcsec:	.byte	0xff	/* the RTC's seconds (BCD) at the last look */
	.p2align 2
shpet:	.long	0	/* the stamp of the chunk being written: HPET, */
sedge:	.long	0	/* edge */
ssec:	.long	0	/* and the RTC's seconds */
	.org	0x800	/* 4 sectors in all */
