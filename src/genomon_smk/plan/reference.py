"""Checks of the reference genome and the files that must lie next to it."""

from __future__ import annotations

import os

from genomon_smk.fileio import GZIP_MAGIC

BWA_INDEX_SUFFIXES = (".amb", ".ann", ".bwt", ".pac", ".sa")


def reference_files(fasta: str) -> list[str]:
    """The FASTA, its .fai (and .gzi when bgzipped) and its bwa index files: everything a job reads."""
    gzi = [fasta + ".gzi"] if os.path.isfile(fasta + ".gzi") else []
    return [fasta, fasta + ".fai", *gzi] + [fasta + suffix for suffix in BWA_INDEX_SUFFIXES]


def reference_problems(fasta: str) -> list[str]:
    """Why a FASTA with its .fai and bwa index beside it (used in place) cannot be used, with the
    command that fixes it. (A reference without them is built by the set-up rules instead.)"""
    if compression(fasta) == "gzip":
        plain = fasta.removesuffix(".gz")
        return [
            f"reference: {fasta} is gzip-compressed; samtools and bwa read a compressed FASTA only when it "
            f"is bgzip-compressed. Recompress it: zcat {fasta} | bgzip > {plain}.bgz && samtools faidx "
            f"{plain}.bgz && bwa index {plain}.bgz (or decompress it: zcat {fasta} > {plain}, then index that; "
            f"or remove its index files, and the set-up jobs build an indexed copy in resources/)"
        ]
    return consistency_problems(fasta)


def compression(fasta: str) -> str:
    """'plain', 'bgzip' (BGZF: gzip blocks with the BC extra field) or 'gzip'."""
    with open(fasta, "rb") as handle:
        head = handle.read(18)
    if not head.startswith(GZIP_MAGIC):
        return "plain"
    return "bgzip" if len(head) >= 14 and head[3] & 4 and head[12:14] == b"BC" else "gzip"


def read_fai(path: str) -> list[tuple[str, int, int, int, int]]:
    """(name, length, offset, line bases, line width) of each .fai line."""
    entries = []
    with open(path) as handle:
        for line in handle:
            if line.strip():
                name, length, offset, bases, width = line.split("\t")[:5]
                entries.append((name, int(length), int(offset), int(bases), int(width)))
    return entries


def sequence_bytes(length: int, line_bases: int, line_width: int) -> int:
    """Bytes a sequence of `length` bases takes in the FASTA, line ends included."""
    full, rest = divmod(length, line_bases)
    return full * line_width + (rest + line_width - line_bases if rest else 0)


def header_before(handle, offset: int) -> bytes:
    """The FASTA line that ends right before `offset` (a header, if the .fai is right)."""
    start = max(0, offset - 4096)
    handle.seek(start)
    text = handle.read(offset - start)
    if not text.endswith(b"\n"):
        return b""
    return text[:-1].rsplit(b"\n", 1)[-1].rstrip(b"\r")


def fai_mismatch(fasta: str, entries) -> str | None:
    """Why the .fai does not describe this (uncompressed) FASTA, or None. Reads only the bytes
    around each record's boundaries: every record must start right after its `>name` line and
    end where the next record's header (or the file) begins, in the .fai's order."""
    size = os.path.getsize(fasta)
    with open(fasta, "rb") as handle:
        for index, (name, length, offset, line_bases, line_width) in enumerate(entries):
            header = header_before(handle, offset)
            if not header.startswith(b">") or header[1:].split()[0:1] != [name.encode()]:
                return f"no '>{name}' header line right before the offset of {name}"
            end = offset + sequence_bytes(length, line_bases, line_width)
            if index + 1 < len(entries):
                handle.seek(end)
                next_header = handle.readline()
                if not next_header.startswith(b">") or end + len(next_header) != entries[index + 1][2]:
                    return f"{name}: {length} bp are not followed by the header of {entries[index + 1][0]}"
            else:
                handle.seek(end)
                if end > size or handle.read().strip():
                    return f"{name}: {length} bp do not end at the end of the file (sequences missing from the .fai?)"
    return None


def bwa_contigs(ann_path: str) -> list[tuple[str, int]]:
    """(name, length) of each sequence in a bwa index's .ann file."""
    with open(ann_path) as handle:
        lines = handle.read().splitlines()
    contigs = []
    for name_line, place_line in zip(lines[1::2], lines[2::2]):
        contigs.append((name_line.split(" ")[1], int(place_line.split(" ")[1])))
    return contigs


def consistency_problems(fasta: str) -> list[str]:
    """Whether the .fai and the bwa index describe this FASTA (names, lengths, order): a .fai of
    another FASTA makes samtools mpileup fail to read bases ("Failed to retrieve block") while
    exiting 0, and calls silently vanish."""
    kind = compression(fasta)
    entries = read_fai(fasta + ".fai")
    problems = []
    if kind == "bgzip" and not os.path.isfile(fasta + ".gzi"):
        problems.append(f"reference: no {fasta}.gzi beside the bgzipped FASTA; build it with: samtools faidx {fasta}")
    mismatch = fai_mismatch(fasta, entries) if kind == "plain" else None
    if mismatch:
        problems.append(f"reference: {fasta}.fai does not match the FASTA ({mismatch}); "
                        f"rebuild it with: samtools faidx {fasta}")
        return problems  # the bwa index is checked against the .fai: only once that is right
    fai_contigs = [(name, length) for name, length, *_ in entries]
    indexed = bwa_contigs(fasta + ".ann")
    if indexed != fai_contigs:
        differing = next((f"{a[0]} ({a[1]} bp) vs {b[0]} ({b[1]} bp)" for a, b in zip(indexed, fai_contigs)
                          if a != b), f"{len(indexed)} vs {len(fai_contigs)} sequences")
        problems.append(f"reference: the bwa index of {fasta} is of another FASTA (bwa index: {differing} in the "
                        f".fai); rebuild it with: bwa index {fasta}")
    return problems


# The contig names of annot_utils' gene and exon tables (GenomonSV filt's and sv_utils' --grc):
# GRC's (Genomon's GRCh37) and UCSC's.
GRC_CONTIGS = frozenset([*map(str, range(1, 23)), "X", "Y", "MT"])
UCSC_CONTIGS = frozenset([*(f"chr{n}" for n in range(1, 23)), "chrX", "chrY", "chrM"])


def sv_annotation_naming_problem(contigs: list[str], grc: bool) -> str | None:
    """Why sv_filt.grc cannot annotate this reference, or None: no contig has a name of the chosen
    convention while some have the other's (a reference named neither way is not judged)."""
    chosen, other = (GRC_CONTIGS, UCSC_CONTIGS) if grc else (UCSC_CONTIGS, GRC_CONTIGS)
    if set(contigs) & chosen or not set(contigs) & other:
        return None
    convention = "GRC's (1, 2, X, MT)" if grc else "UCSC's (chr1, chr2, chrX, chrM)"
    named = sorted(set(contigs) & other, key=contigs.index)
    found = ", ".join(named[:4]) + (", ..." if len(named) > 4 else "")
    return (
        f"{str(grc).lower()} looks up genes and exons by {convention} contig names, but the reference "
        f"names its contigs the other way ({found}): every Gene_1, Gene_2, Exon_1 and Exon_2 column of "
        f"the SV results would be '---'. Set sv_filt.grc: {str(not grc).lower()}"
    )
