"""Gene tables for the annotator: UCSC genePred (refGene, knownGene-style) and GTF.

Facts from annotation-spec.md §1.3: genePred starts are 0-based (made 1-based here), ends as
they are; an optional leading ``bin`` column; ``name`` is the transcript accession printed,
``name2`` the gene symbol; rows on ``*_hap<N>`` contigs are skipped; a transcript is non-coding
when cdsStart == cdsEnd, and every non-coding transcript of a symbol that also has a coding
transcript is dropped (it contributes nothing, not even intronic or intergenic hits).
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from genomon_smk.fileio import open_text

#: where bin/install puts annot_utils' UCSC tables (the SV tools' venv)
ANNOT_UTILS_GLOB = ".venv-sv/lib/python3*/site-packages/annot_utils/data/{genome}/refGene.txt.gz"
BUILTIN_NAMES = {"hg19": "hg19", "GRCh37": "hg19", "hg38": "hg38", "GRCh38": "hg38",
                 "mm10": "mm10"}
#: the length of chromosome 1 of each built-in table's genome: a reference whose chromosome 1
#: differs is another genome (the workflow refuses it, the command line warns)
CHROMOSOME_1 = {"hg19": 249250621, "GRCh37": 249250621, "hg38": 248956422, "GRCh38": 248956422,
                "mm10": 195471971}
_HAPLOTYPE = re.compile(r"_hap\d+$")


def chromosome_1(contigs: Iterable[tuple[str, int]]) -> int | None:
    """The length of a reference's chromosome 1 (`1` or `chr1`), or None."""
    lengths = dict(contigs)
    return next((lengths[name] for name in ("1", "chr1") if name in lengths), None)


class GeneTableError(ValueError):
    """A gene table that cannot be read (names the file and line)."""


@dataclass
class Transcript:
    """One mapping of a transcript; all coordinates 1-based inclusive."""

    name: str                   # accession printed in the outputs
    gene: str                   # symbol printed as the gene
    chrom: str                  # contig key: leading 'chr' removed, M for MT
    strand: str                 # '+' or '-'
    tx_start: int
    tx_end: int
    cds_start: int              # == tx_start for non-coding (whole span treated as CDS)
    cds_end: int
    exon_starts: list[int]
    exon_ends: list[int]
    coding: bool
    contig: str = ""            # the table's own contig name
    # filled lazily by the annotator
    cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def exon_count(self) -> int:
        return len(self.exon_starts)


def contig_key(name: str) -> str:
    """The name used to match input, table and FASTA contigs: no leading 'chr'; MT -> M."""
    key = name[3:] if name[:3].lower() == "chr" else name
    return "M" if key == "MT" else key


def is_mitochondrial(key: str) -> bool:
    return key == "M"


def builtin_table(name: str, roots: Sequence[Path] | None = None) -> Path:
    """annot_utils' UCSC refGene table for hg19/GRCh37, hg38/GRCh38 or mm10 (in .venv-sv)."""
    genome = BUILTIN_NAMES.get(name)
    if genome is None:
        raise KeyError(f"no built-in gene table named {name!r} (known: {', '.join(BUILTIN_NAMES)})")
    roots = list(roots or [Path(__file__).resolve().parents[4], Path.cwd()])
    for root in roots:
        hits = sorted(glob.glob(str(Path(root) / ANNOT_UTILS_GLOB.format(genome=genome))))
        if hits:
            return Path(hits[0])
    raise FileNotFoundError(f"no annot_utils refGene table for {name!r} under "
                            f"{', '.join(map(str, roots))} (bin/install makes .venv-sv/)")


def resolve_table(value: str) -> Path:
    """A gene table path, or a built-in name (hg19, GRCh37, hg38, GRCh38, mm10)."""
    if value in BUILTIN_NAMES and not Path(value).exists():
        return builtin_table(value)
    return Path(value)


def _is_gtf(path: str) -> bool:
    with open_text(path) as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            f = line.rstrip("\r\n").split("\t")
            return len(f) == 9 and f[3].isdigit() and f[4].isdigit() and f[6] in "+-."
    return False


def read_gene_table(path: str | Path) -> list[Transcript]:
    """Transcripts of a genePred or GTF file, with ANNOVAR's row selection applied."""
    path = str(path)
    gtf = _is_gtf(path)
    rows = read_gtf(path) if gtf else read_genepred(path)
    if not rows:
        raise GeneTableError(f"{path}: no transcripts read (a GTF needs exon rows with "
                             f"transcript_id \"...\" attributes; GFF3 is not read)" if gtf else
                             f"{path}: no transcripts read (an empty genePred table)")
    return select_transcripts(rows)


def select_transcripts(rows: Iterable[Transcript]) -> list[Transcript]:
    """Drop haplotype contigs and the non-coding transcripts of coding gene symbols."""
    rows = [t for t in rows if not _HAPLOTYPE.search(t.contig)]
    coding_genes = {t.gene for t in rows if t.coding}
    seen: set[tuple] = set()
    kept = []
    for t in rows:
        if not t.coding and t.gene in coding_genes:
            continue
        key = (t.name, t.chrom, t.tx_start)          # exact duplicate mappings count once
        if key in seen:
            continue
        seen.add(key)
        kept.append(t)
    return kept


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.rstrip(",").split(",") if x]


def read_genepred(path: str) -> list[Transcript]:
    """genePred / genePredExt / refGene.txt (with or without ``bin``) / knownGene rows."""
    out = []
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith("#") or not line.strip():
                continue
            f = line.rstrip("\r\n").split("\t")
            if f[0].lstrip("-").isdigit() and len(f) >= 11:    # leading bin column
                f = f[1:]
            if len(f) < 10:
                raise GeneTableError(f"{path} line {number}: {len(f)} columns, a genePred row "
                                     f"has at least 10 (name chrom strand txStart txEnd cdsStart "
                                     f"cdsEnd exonCount exonStarts exonEnds)")
            try:
                tx_start, tx_end, cds_start, cds_end = (int(x) for x in f[3:7])
                starts, ends = _ints(f[8]), _ints(f[9])
            except ValueError:
                raise GeneTableError(f"{path} line {number}: coordinates are not integers") from None
            if f[2] not in "+-" or len(starts) != len(ends) or not starts:
                raise GeneTableError(f"{path} line {number}: bad strand or exon lists")
            # genePredExt: name2 is the 12th column (after score); knownGene: proteinID there
            gene = f[11] if len(f) >= 15 and f[11] else f[0]
            out.append(_make(f[0], gene, f[1], f[2], tx_start + 1, tx_end, cds_start, cds_end,
                             [s + 1 for s in starts], ends))
    return out


def _make(name, gene, contig, strand, tx_start1, tx_end, cds_start0, cds_end, starts1, ends):
    coding = cds_start0 != cds_end
    order = sorted(range(len(starts1)), key=starts1.__getitem__)
    starts1 = [starts1[i] for i in order]
    ends = [ends[i] for i in order]
    return Transcript(name=name, gene=gene, chrom=contig_key(contig), strand=strand,
                      tx_start=tx_start1, tx_end=tx_end,
                      cds_start=cds_start0 + 1 if coding else tx_start1,
                      cds_end=cds_end if coding else tx_end,
                      exon_starts=starts1, exon_ends=ends, coding=coding, contig=contig)


_ATTR = re.compile(r'(\S+)\s+"([^"]*)"')


def read_gtf(path: str) -> list[Transcript]:
    """GTF transcripts: exon rows make the exons, CDS + start/stop_codon rows the coding span.

    The gene symbol is ``gene_name`` (else ``gene_id``); the accession is ``transcript_id``.
    GTF CDS rows exclude the stop codon, so ``stop_codon`` rows extend the span (refGene's cdsEnd
    includes it).
    """
    tx: dict[str, dict] = {}
    with open_text(path) as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith("#") or not line.strip():
                continue
            f = line.rstrip("\r\n").split("\t")
            if len(f) != 9:
                raise GeneTableError(f"{path} line {number}: {len(f)} columns, GTF has 9")
            feature = f[2]
            if feature not in ("exon", "CDS", "start_codon", "stop_codon", "transcript"):
                continue
            attrs = dict(_ATTR.findall(f[8]))
            tid = attrs.get("transcript_id")
            if not tid:
                continue
            start, end = int(f[3]), int(f[4])
            rec = tx.setdefault(tid, {"contig": f[0], "strand": f[6], "exons": [], "cds": [],
                                      "gene": attrs.get("gene_name") or attrs.get("gene_id") or tid,
                                      "span": None})
            if feature == "exon":
                rec["exons"].append((start, end))
            elif feature == "transcript":
                rec["span"] = (start, end)
            else:
                rec["cds"].append((start, end))
    out = []
    for tid, rec in tx.items():
        exons = sorted(rec["exons"]) or ([rec["span"]] if rec["span"] else [])
        if not exons or rec["strand"] not in "+-":
            continue
        tx_start1, tx_end = exons[0][0], max(e for _, e in exons)
        if rec["cds"]:
            cds_start0 = min(s for s, _ in rec["cds"]) - 1
            cds_end = max(e for _, e in rec["cds"])
        else:
            cds_start0 = cds_end = tx_end
        out.append(_make(tid, rec["gene"], rec["contig"], rec["strand"], tx_start1, tx_end,
                         cds_start0, cds_end, [s for s, _ in exons], [e for _, e in exons]))
    out.sort(key=lambda t: (t.chrom, t.tx_start))
    return out
