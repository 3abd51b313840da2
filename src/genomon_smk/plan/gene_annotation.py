"""A gene annotation file (a GTF, or a UCSC genePred table such as refGene or knownGene, with or
without the bin column; plain or gzip) read whole before any job: a file that is not one, one of
another genome's contig names, or one without an exon on the reference's chromosomes is refused
naming the file, the line and what was found, instead of failing the job that reads it (issue 34:
pmsignature's background job failed, once with a vague message).

`check_gene_annotation(path, reference_contigs)` is the one check; every reader of a gene
annotation (pmsignature.annotation, and a gene annotation stage) asks it. Contig names are
matched as the readers match them (genomon_smk.tools.pmsignature.contig_resolver: `chr1` and `1`,
`chrM` and `MT` are one).
"""

from __future__ import annotations

from genomon_smk.fileio import open_text
from genomon_smk.tools.pmsignature import PRIMARY_CONTIG, contig_resolver

SHOWN = 3  # bad lines quoted, then a count
GTF_FIELDS = 9
GENEPRED_FIELDS = 10  # name, chrom, strand, txStart, txEnd, cdsStart, cdsEnd, exonCount, exonStarts, exonEnds


def few(names, shown: int = 5) -> str:
    names = list(names)
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "") if names else "none"


def gtf_row(fields: list[str]) -> tuple[str, str, bool] | None:
    """(contig, feature, usable exon) of a GTF row, or None when it is not one."""
    if len(fields) != GTF_FIELDS or not (fields[3].isdigit() and fields[4].isdigit()):
        return None
    if fields[6] not in ("+", "-", ".") or int(fields[3]) < 1 or int(fields[3]) > int(fields[4]):
        return None
    return fields[0], fields[2], fields[2] == "exon" and fields[6] in ("+", "-")


def coordinates(text: str) -> list[int] | None:
    cells = text.rstrip(",").split(",")
    return [int(cell) for cell in cells] if all(cell.isdigit() for cell in cells) else None


def genepred_row(fields: list[str]) -> str | None:
    """The contig of a genePred row (with or without the bin column), or None when it is not one."""
    offset = 1 if len(fields) > 3 and fields[3] in ("+", "-") else 0
    if len(fields) < offset + GENEPRED_FIELDS or fields[offset + 2] not in ("+", "-"):
        return None
    numbers = fields[offset + 3 : offset + 8]
    if not all(number.isdigit() for number in numbers):
        return None
    starts, ends = coordinates(fields[offset + 8]), coordinates(fields[offset + 9])
    if starts is None or ends is None or len(starts) != len(ends) or len(starts) != int(fields[offset + 7]):
        return None
    return fields[offset + 1]


def check_gene_annotation(path: str, reference_contigs: list[tuple[str, int]], key: str = "") -> list[str]:
    """Every problem of the gene annotation at `path` for a reference of these contigs, [] when
    it is fit: `FILE:LINE: ...` for rows that are neither GTF nor genePred (the first few, then
    their count), a file without a row, contig names of which none is the reference's, no exon
    on the reference's chromosomes (1-22, X, Y, with or without chr; any contig when it names
    none of those). `key` (e.g. `pmsignature.annotation`) starts each message."""
    prefix = f"{key}: " if key else ""
    resolve = contig_resolver(name for name, _ in reference_contigs)
    primary = {name for name, _ in reference_contigs if PRIMARY_CONTIG.match(name)} or {
        name for name, _ in reference_contigs}
    bad: list[str] = []
    bad_count = rows = 0
    contigs: dict[str, str | None] = {}
    exon_contigs: set[str] = set()
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip() or line.startswith(("#", "track ", "browser ")):
                    continue
                fields = line.rstrip("\r\n").split("\t")
                gtf = gtf_row(fields)
                contig = gtf[0] if gtf else genepred_row(fields)
                if contig is None:
                    bad_count += 1
                    if len(bad) < SHOWN:
                        bad.append(f"{path}:{number}: {prefix}neither a GTF row ({GTF_FIELDS} tab-separated fields: "
                                   "seqname, source, feature, start, end, score, strand, frame, attributes) nor a "
                                   f"UCSC genePred row (name, chrom, strand, txStart, ... exonEnds): {line.strip()[:80]!r}")
                    continue
                rows += 1
                if contig not in contigs:
                    contigs[contig] = resolve(contig)
                if contigs[contig] is not None and (gtf is None or gtf[2]):
                    exon_contigs.add(contigs[contig])
    except (OSError, UnicodeDecodeError, EOFError) as error:
        return [f"{prefix}cannot read {path} as a gene annotation: {error}"]
    if bad_count > SHOWN:
        bad.append(f"{path}: {prefix}{bad_count - SHOWN} more rows that are neither GTF nor genePred")
    if bad:
        return bad
    if not rows:
        return [f"{path}: {prefix}no GTF or genePred row in it (a GTF, or a UCSC genePred table such as refGene)"]
    reference_names = few(name for name, _ in reference_contigs)
    if not any(contigs.values()):
        return [f"{path}: {prefix}none of its contigs ({few(contigs)}) is a reference contig ({reference_names}), "
                "with or without 'chr': is it the annotation of another genome build?"]
    if not exon_contigs & primary:
        found = few(sorted(exon_contigs)) if exon_contigs else "none"
        return [f"{path}: {prefix}no exon on the reference's chromosomes ({few(sorted(primary))}); exons found on "
                f"reference contigs: {found} (of its contigs: {few(contigs)}): a GTF needs `exon` rows with a "
                "strand, a genePred table its exonStarts and exonEnds"]
    return []
