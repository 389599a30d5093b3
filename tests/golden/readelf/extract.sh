#!/bin/sh
# Print a normalised, tab-separated summary of an ELF object's sections,
# symbols and relocations, taken from GNU readelf (the independent oracle
# for sluice's ELF parser). Format: tests/bpf/README.md, "Golden readelf".
#
#   tests/golden/readelf/extract.sh FILE.o            print to stdout
#   tests/golden/readelf/extract.sh --update          rewrite every golden
#                                                     tests/golden/readelf/*.tsv
#                                                     from tests/bpf/*.o
set -eu

if [ "${1:-}" = "--update" ]; then
	here=$(cd "$(dirname "$0")" && pwd)
	for o in "$here"/../../bpf/*.o "$here"/../../bpf/big_endian/*.o; do
		name=$(basename "$o" .o)
		"$here/extract.sh" "$o" > "$here/$name.tsv"
		echo "wrote $name.tsv"
	done
	exit 0
fi

[ $# -eq 1 ] || { echo "usage: $0 FILE.o | --update" >&2; exit 2; }

LC_ALL=C readelf --wide -S -s -r "$1" | LC_ALL=C perl -e '
use strict;
use warnings;

my %shtype = (NULL => 0, PROGBITS => 1, SYMTAB => 2, STRTAB => 3, RELA => 4,
	HASH => 5, DYNAMIC => 6, NOTE => 7, NOBITS => 8, REL => 9, SHLIB => 10,
	DYNSYM => 11, INIT_ARRAY => 14, FINI_ARRAY => 15, PREINIT_ARRAY => 16,
	GROUP => 17, SYMTAB_SHNDX => 18, LLVM_ADDRSIG => 0x6fff4c03);
my %flag = (W => 0x1, A => 0x2, X => 0x4, M => 0x10, S => 0x20, I => 0x40,
	L => 0x80, O => 0x100, G => 0x200, T => 0x400, C => 0x800,
	E => 0x80000000);
my %symtype = (NOTYPE => 0, OBJECT => 1, FUNC => 2, SECTION => 3, FILE => 4,
	COMMON => 5, TLS => 6);
my %bind = (LOCAL => 0, GLOBAL => 1, WEAK => 2);
my %shndx = (UND => 0, ABS => 0xfff1, COM => 0xfff2);

sub num_type {
	my ($t) = @_;
	return $shtype{$t} if exists $shtype{$t};
	return 0x60000000 + hex($1) if $t =~ /^LOOS\+0x([0-9a-f]+)$/;
	return 0x70000000 + hex($1) if $t =~ /^LOPROC\+0x([0-9a-f]+)$/;
	return 0x80000000 + hex($1) if $t =~ /^LOUSER\+0x([0-9a-f]+)$/;
	die "unknown section type $t\n";
}
sub clean {
	my ($s) = @_;
	die "name with a tab or newline: $s\n" if $s =~ /[\t\n]/;
	return $s;
}

my (%secidx, @out, $relsec, $inrel, $insym);
while (my $l = <STDIN>) {
	chomp $l;
	if ($l =~ /^\s*\[\s*(\d+)\]\s(.*?)\s+(\S+)\s+([0-9a-f]{16})\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([A-Za-z]*)\s+(\d+)\s+(\d+)\s+(\d+)$/) {
		my ($i, $name, $t, $addr, $off, $size, $es, $fl, $lk, $inf, $al) =
			($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);
		my $flags = 0;
		for my $c (split //, $fl) {
			die "unknown section flag $c\n" unless exists $flag{$c};
			$flags |= $flag{$c};
		}
		die "duplicate section name $name\n" if $name ne "" && exists $secidx{$name};
		$secidx{$name} = $i;
		push @out, join("\t", "section", $i, clean($name), num_type($t), $flags,
			hex($off), hex($size), $lk, $inf, hex($es), $al);
		next;
	}
	if ($l =~ /^Symbol table /) { $insym = 1; $inrel = 0; next; }
	if ($l =~ /^Relocation section \x27(.*)\x27 at offset 0x[0-9a-f]+ contains/) {
		die "unknown relocation section $1\n" unless exists $secidx{$1};
		$relsec = $secidx{$1}; $inrel = 1; $insym = 0; next;
	}
	if ($insym && $l =~ /^\s*(\d+):\s+([0-9a-f]{16})\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)(?: (.*))?$/) {
		my ($i, $val, $size, $t, $b, $vis, $ndx, $name) = ($1, $2, $3, $4, $5, $6, $7, $8 // "");
		$size = $size =~ /^0x/ ? hex($size) : $size;
		die "unknown symbol type $t\n" unless exists $symtype{$t};
		die "unknown binding $b\n" unless exists $bind{$b};
		$ndx = exists $shndx{$ndx} ? $shndx{$ndx} : $ndx;
		die "odd section index $ndx\n" unless $ndx =~ /^\d+$/;
		# readelf prints a section symbol with its section name; its st_name is 0
		$name = "" if $t eq "SECTION";
		push @out, join("\t", "symbol", $i, hex($val), $size, $symtype{$t}, $bind{$b},
			$ndx, clean($name));
		next;
	}
	if ($inrel && $l =~ /^([0-9a-f]{16})\s+([0-9a-f]{16})\s/) {
		my ($off, $info) = (hex($1), $2);
		my $sym = hex(substr($info, 0, 8));
		my $type = hex(substr($info, 8, 8));
		push @out, join("\t", "reloc", $relsec, $off, $type, $sym);
		next;
	}
	die "RELA not expected: $l\n" if $inrel && $l =~ /Addend/;
}
for my $k ("section", "symbol", "reloc") {
	print "$_\n" for grep { /^$k\t/ } @out;
}
'
