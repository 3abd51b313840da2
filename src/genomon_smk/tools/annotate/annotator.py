"""ANNOVAR-style gene-based annotation (refGene semantics of the 2018-04-16 release).

Built from the facts in annotation-spec.md §1 (no ANNOVAR code seen or used). One variant in
Genomon's notation (1-based Start..End; insertion Ref ``-`` after Start; deletion Alt ``-``) gives
the five table_annovar columns Func, Gene, GeneDetail, ExonicFunc and AAChange.

Deliberate differences from upstream Genomon (docs/differences.md, "Gene annotation"): the
choices of spec §1.9 where ANNOVAR's output is not reproducible or not specified (the order of
``wholegene`` lists, one ``dist`` for several up/downstream genes, the intergenic search window,
splice details of non-coding transcripts and of insertions), ``MT`` matched with ``chrM``, and
GTF / knownGene tables besides refGene.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import Iterable

from .genes import Transcript, contig_key, is_mitochondrial, read_gene_table, resolve_table
from .sequence import MITOCHONDRIAL, STANDARD, revcomp, translate

COLUMNS = ["Func.refGene", "Gene.refGene", "GeneDetail.refGene", "ExonicFunc.refGene",
           "AAChange.refGene"]
EMPTY = ("", "", "", "", "")

NEAR_GENE = 1000            # -neargene: up/downstream when closer than this
SPLICE = 2                  # splicing_threshold: intronic bases next to a junction
INDEL_SPLICE = 2            # indel_splicing_threshold (exonic;splicing only for shorter)
GENOME_BIN = 100_000        # -genomebinsize
NEIGHBOUR_BINS = 20         # intergenic neighbours searched this many bins beyond the variant
INDEX_BIN = 20_000          # our lookup index (not ANNOVAR's bins)

#: most severe first (spec §1.7)
SEVERITY = ["frameshift insertion", "frameshift deletion", "frameshift substitution", "stopgain",
            "stoploss", "nonframeshift insertion", "nonframeshift deletion",
            "nonframeshift substitution", "nonsynonymous SNV", "synonymous SNV", "unknown"]
_RANK = {name: i for i, name in enumerate(SEVERITY)}

_CHROM_OK = re.compile(r"^[\w.]+$")
_ALLELE_OK = re.compile(r"^[ACGT0-]+$")
_PARENS = re.compile(r"\(([^)]*)\)")


def invalid_reason(chrom: str, start: str, end: str, ref: str, alt: str) -> str | None:
    """Why ANNOVAR would reject the line (spec §1.2), or None."""
    key = chrom[3:] if chrom.startswith("chr") else chrom
    if not _CHROM_OK.match(key):
        return "chromosome name"
    if not (start.isdigit() and end.isdigit()):
        return "Start/End not integers"
    ref, alt = ref.upper(), alt.upper()
    if ref == "-" and alt == "-":
        return "Ref and Alt both '-'"
    if not _ALLELE_OK.match(ref) or not _ALLELE_OK.match(alt):
        return "Ref/Alt letters other than A, C, G, T, 0, -"
    s, e = int(start), int(end)
    if s > e:
        return "Start > End"
    if ref != "0" and e - s + 1 != len(ref):
        return "End - Start + 1 differs from the length of Ref"
    if ref == "-" and s != e:
        return "insertion with Start != End"
    return None


def from_vcf(pos: int, ref: str, alt: str) -> tuple[int, int, str, str]:
    """A VCF allele (POS, REF, ALT) in Genomon's notation (Start, End, Ref, Alt).

    The shared leading bases (the VCF anchor) and trailing bases are trimmed: an insertion is
    ``Start = End = the base before it, Ref '-'``; a deletion ``Start..End = the deleted bases,
    Alt '-'``.
    """
    ref, alt = ref.upper(), alt.upper()
    while len(ref) > 1 and len(alt) > 1 and ref[-1] == alt[-1]:
        ref, alt = ref[:-1], alt[:-1]
    lead = 0
    while lead < min(len(ref), len(alt)) and ref[lead] == alt[lead]:
        lead += 1
    ref_rest, alt_rest = ref[lead:], alt[lead:]
    start = pos + lead
    if not ref_rest:                                    # insertion after start - 1
        return start - 1, start - 1, "-", alt_rest
    if not alt_rest:
        return start, start + len(ref_rest) - 1, ref_rest, "-"
    return start, start + len(ref_rest) - 1, ref_rest, alt_rest


def table_columns(func: str, gene_field: str, exonic_func: str, aachange: str) -> tuple:
    """variant_function's gene field -> table_annovar's Gene and GeneDetail (spec §1.8)."""
    details = _PARENS.findall(gene_field)
    gene = _PARENS.sub("", gene_field).replace(",", ";")
    detail = ";".join(details).replace(",", ";")
    return func, gene, detail, exonic_func, aachange


class _Chrom:
    """Transcripts of one contig with a bin index and the intergenic neighbour arrays."""

    def __init__(self, transcripts: list[Transcript]):
        self.transcripts = sorted(transcripts, key=lambda t: t.tx_start)
        self.bins: dict[int, list[int]] = {}
        for i, t in enumerate(self.transcripts):
            lo = max(t.tx_start - NEAR_GENE + 1, 0) // INDEX_BIN
            hi = (t.tx_end + NEAR_GENE - 1) // INDEX_BIN
            for b in range(lo, hi + 1):
                self.bins.setdefault(b, []).append(i)
        order = sorted(range(len(self.transcripts)),
                       key=lambda i: (self.transcripts[i].tx_end, -i))
        self.by_end = [self.transcripts[i].tx_end for i in order]
        self.by_end_index = order
        self.starts = [t.tx_start for t in self.transcripts]

    def candidates(self, start: int, end: int) -> list[Transcript]:
        lo, hi = start // INDEX_BIN, end // INDEX_BIN
        if lo == hi:
            return [self.transcripts[i] for i in self.bins.get(lo, ())]
        seen: set[int] = set()
        for b in range(lo, hi + 1):
            seen.update(self.bins.get(b, ()))
        return [self.transcripts[i] for i in sorted(seen)]

    def neighbours(self, start: int, end: int) -> tuple[str, str, str, str]:
        """(left gene, a, right gene, b): nearest transcript ending before / starting after."""
        left_gene, left_dist = "NONE", "NONE"
        j = bisect_left(self.by_end, start) - 1
        if j >= 0:
            t = self.transcripts[self.by_end_index[j]]
            if t.tx_end // GENOME_BIN >= start // GENOME_BIN - NEIGHBOUR_BINS:
                left_gene, left_dist = t.gene, str(start - t.tx_end)
        right_gene, right_dist = "NONE", "NONE"
        k = bisect_right(self.starts, end)
        if k < len(self.starts):
            t = self.transcripts[k]
            if (t.tx_start - 1) // GENOME_BIN <= end // GENOME_BIN + NEIGHBOUR_BINS:
                right_gene, right_dist = t.gene, str(t.tx_start - end)
        return left_gene, left_dist, right_gene, right_dist


class _Layout:
    """A transcript's exon layout and (lazily) its sequence, for c. positions."""

    __slots__ = ("t", "cum", "total", "cs", "ce", "mrna", "orf_ok", "code")

    def __init__(self, t: Transcript):
        self.t = t
        cum, total = [], 0
        for s, e in zip(t.exon_starts, t.exon_ends):
            cum.append(total)
            total += e - s + 1
        self.cum, self.total = cum, total
        a, b = self.txpos(t.cds_start), self.txpos(t.cds_end)
        if a is None or b is None:
            self.cs = self.ce = None
        else:
            self.cs, self.ce = (a, b) if t.strand == "+" else (b, a)
        self.mrna = None
        self.orf_ok = None
        self.code = MITOCHONDRIAL if is_mitochondrial(t.chrom) else STANDARD

    def exon_index(self, pos: int) -> int | None:
        i = bisect_right(self.t.exon_starts, pos) - 1
        if i >= 0 and pos <= self.t.exon_ends[i]:
            return i
        return None

    def txpos(self, pos: int) -> int | None:
        """1-based position in the transcript (5' = 1) of an exonic genomic base."""
        i = self.exon_index(pos)
        if i is None:
            return None
        offset = self.cum[i] + pos - self.t.exon_starts[i]
        return offset + 1 if self.t.strand == "+" else self.total - offset

    def exonic_txpos(self, start: int, end: int) -> tuple[int, int] | None:
        """Transcript positions (5'-most, 3'-most) of the exonic bases in start..end."""
        t = self.t
        got = []
        i = max(bisect_right(t.exon_ends, start - 1), 0)
        while i < len(t.exon_starts) and t.exon_starts[i] <= end:
            s, e = max(start, t.exon_starts[i]), min(end, t.exon_ends[i])
            if s <= e:
                got.append(self.txpos(s))
                got.append(self.txpos(e))
            i += 1
        if not got:
            return None
        return min(got), max(got)

    def label(self, tp: int) -> str:
        """c. label of a transcript position: -N (5' UTR), N (CDS), *N (3' UTR)."""
        if tp < self.cs:
            return f"-{self.cs - tp}"
        if tp > self.ce:
            return f"*{tp - self.ce}"
        return str(tp - self.cs + 1)

    def exon_number(self, start: int, end: int) -> int:
        """1-based number (from the 5' end) of the 5'-most exon overlapped by start..end."""
        t = self.t
        hit = [i for i in range(len(t.exon_starts))
               if t.exon_starts[i] <= end and start <= t.exon_ends[i]]
        if not hit:
            return 0
        return hit[0] + 1 if t.strand == "+" else len(t.exon_starts) - hit[-1]


class Annotator:
    """Gene-based annotation of variants against a gene table and the reference FASTA.

    ``genes``: a genePred/GTF path, a built-in name (hg19, GRCh37, hg38, GRCh38, mm10) or a list of
    :class:`Transcript`; ``fasta``: a FASTA path (indexed) or an open ``pysam.FastaFile``.
    """

    def __init__(self, genes, fasta=None):
        if isinstance(genes, (str, Path)):
            genes = read_gene_table(resolve_table(str(genes)))
        by_chrom: dict[str, list[Transcript]] = {}
        for t in genes:
            by_chrom.setdefault(t.chrom, []).append(t)
        self.chroms = {key: _Chrom(ts) for key, ts in by_chrom.items()}
        if isinstance(fasta, (str, Path)):
            import pysam
            fasta = pysam.FastaFile(str(fasta))
        self.fasta = fasta
        self.fasta_names: dict[str, str] = {}
        if fasta is not None:
            for name in fasta.references:
                self.fasta_names.setdefault(contig_key(name), name)
        self._layouts: dict[int, _Layout] = {}
        self._cache: dict[tuple, tuple] = {}

    # ------------------------------------------------------------------ public

    def annotate(self, chrom: str, start, end, ref: str, alt: str) -> tuple[str, str, str, str, str]:
        """The five columns for one variant (all empty when ANNOVAR would reject the line)."""
        key = (chrom, str(start), str(end), ref, alt)
        hit = self._cache.get(key)
        if hit is None:
            if invalid_reason(*key) is not None:
                hit = EMPTY
            else:
                hit = self._annotate(contig_key(chrom), int(start), int(end), ref.upper(),
                                     alt.upper())
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def annotate_many(self, rows: Iterable[tuple]) -> list[tuple]:
        return [self.annotate(*row[:5]) for row in rows]

    def annotate_vcf(self, chrom: str, pos: int, ref: str, alt: str) -> tuple[str, str, str, str, str]:
        """The five columns for a VCF record's allele (see :func:`from_vcf`)."""
        start, end, gref, galt = from_vcf(int(pos), ref, alt)
        return self.annotate(chrom, start, end, gref, galt)

    # ------------------------------------------------------------------ per variant

    def _layout(self, t: Transcript) -> _Layout:
        lay = self._layouts.get(id(t))
        if lay is None:
            lay = self._layouts[id(t)] = _Layout(t)
        return lay

    def _annotate(self, chrom: str, start: int, end: int, ref: str, alt: str) -> tuple:
        index = self.chroms.get(chrom)
        if index is None:
            return table_columns("intergenic", "NONE(dist=NONE),NONE(dist=NONE)", "", "")
        insertion = ref == "-"
        length = end - start + 1
        exonic: dict[str, list[Transcript]] = {}
        nc_exonic: set[str] = set()
        splice: dict[str, list[str]] = {}
        splice_coding: set[str] = set()
        utr5: dict[str, list[str]] = {}
        utr3: dict[str, list[str]] = {}
        intronic: set[str] = set()
        nc_intronic: set[str] = set()
        upstream: dict[str, int] = {}
        downstream: dict[str, int] = {}
        for t in index.candidates(start, end):
            if end < t.tx_start:
                dist = t.tx_start - end
                if dist < NEAR_GENE:
                    side = upstream if t.strand == "+" else downstream
                    side[t.gene] = min(dist, side.get(t.gene, dist))
                continue
            if start > t.tx_end:
                dist = start - t.tx_end
                if dist < NEAR_GENE:
                    side = downstream if t.strand == "+" else upstream
                    side[t.gene] = min(dist, side.get(t.gene, dist))
                continue
            starts, ends = t.exon_starts, t.exon_ends
            n = len(starts)
            if n > 1:
                detail = self._splice(t, start, end, ref, alt, insertion, length)
                if detail is not None:
                    splice.setdefault(t.gene, [])
                    if detail:
                        splice[t.gene].append(detail)
                    if t.coding:
                        splice_coding.add(t.gene)
            i = bisect_left(ends, start)
            if i < n and end >= starts[i]:
                if not t.coding:
                    nc_exonic.add(t.gene)
                elif end < t.cds_start:
                    self._utr(t, utr5 if t.strand == "+" else utr3, start, end, ref, alt)
                elif start > t.cds_end or (insertion and t.strand == "-" and start == t.cds_end):
                    self._utr(t, utr3 if t.strand == "+" else utr5, start, end, ref, alt)
                else:
                    exonic.setdefault(t.gene, []).append(t)
            elif t.coding:
                intronic.add(t.gene)
            else:
                nc_intronic.add(t.gene)
        return self._combine(index, start, end, ref, alt, length, exonic, nc_exonic, splice,
                             splice_coding, utr5, utr3, intronic, nc_intronic, upstream,
                             downstream)

    def _combine(self, index, start, end, ref, alt, length, exonic, nc_exonic, splice,
                 splice_coding, utr5, utr3, intronic, nc_intronic, upstream, downstream):
        def with_details(table: dict[str, list[str]], genes: Iterable[str]) -> str:
            return ",".join(sorted(f"{g}({','.join(table[g])})" if table[g] else g for g in genes))

        if exonic or nc_exonic:
            genes = ",".join(sorted(exonic or nc_exonic))
            func = "exonic" if exonic else "ncRNA_exonic"
            if splice and length <= INDEL_SPLICE:
                func += ";splicing"
                genes += ";" + with_details(splice, splice)
            if not exonic:
                return table_columns(func, genes, "", "")
            exonic_func, aachange = self._exonic(exonic, start, end, ref, alt)
            return table_columns(func, genes, exonic_func, aachange)
        if splice:
            chosen = splice_coding or set(splice)
            func = "splicing" if splice_coding else "ncRNA_splicing"
            return table_columns(func, with_details(splice, chosen), "", "")
        if nc_intronic:
            return table_columns("ncRNA_intronic", ",".join(sorted(nc_intronic)), "", "")
        if utr5 or utr3:
            funcs = [name for name, table in (("UTR5", utr5), ("UTR3", utr3)) if table]
            parts = [with_details(table, table) for table in (utr5, utr3) if table]
            return table_columns(";".join(funcs), ";".join(parts), "", "")
        if intronic:
            return table_columns("intronic", ",".join(sorted(intronic)), "", "")
        if upstream or downstream:
            funcs, parts = [], []
            for name, table in (("upstream", upstream), ("downstream", downstream)):
                if table:
                    funcs.append(name)
                    parts.append(f"{','.join(sorted(table))}(dist={min(table.values())})")
            return table_columns(";".join(funcs), ";".join(parts), "", "")
        left, a, right, b = index.neighbours(start, end)
        return table_columns("intergenic", f"{left}(dist={a}),{right}(dist={b})", "", "")

    # ------------------------------------------------------------------ splice sites

    def _splice(self, t, start, end, ref, alt, insertion, length) -> str | None:
        """None when not in a splice region; else the detail ('' when none is printed)."""
        starts, ends = t.exon_starts, t.exon_ends
        last = len(starts) - 1
        i = bisect_left(ends, start - SPLICE)
        while i <= last and starts[i] - SPLICE <= end:
            hit = None
            if i < last:                        # the intron after exon i: ends[i]+1..+2
                lo, hi = ends[i] + 1, ends[i] + SPLICE
                if (lo <= start <= hi) if i == 0 else (start <= hi and end >= lo):
                    hit = ("after", ends[i], start - ends[i])
            if hit is None and i > 0:           # the intron before exon i: starts[i]-2..-1
                lo, hi = starts[i] - SPLICE, starts[i] - 1
                if (lo <= end <= hi) if i == last else (start <= hi and end >= lo):
                    hit = ("before", starts[i], starts[i] - start)
            if hit is not None:
                return self._splice_detail(t, i, hit, start, end, ref, alt, insertion, length)
            i += 1
        return None

    def _splice_detail(self, t, i, hit, start, end, ref, alt, insertion, length) -> str:
        side, exon_base, dist = hit
        n = len(t.exon_starts)
        number = i + 1 if t.strand == "+" else n - i
        if start != end or insertion:
            return f"{t.name}:exon{number}:r.spl" if length <= INDEL_SPLICE or insertion else ""
        lay = self._layout(t)
        if lay.cs is None:
            return ""
        tp = lay.txpos(exon_base)
        if tp < lay.cs:
            return f"{t.name}:exon{number}:UTR5"
        if tp > lay.ce:
            return f"{t.name}:exon{number}:UTR3"
        donor = (side == "after") == (t.strand == "+")
        r, a = (ref, alt) if t.strand == "+" else (revcomp(ref), revcomp(alt))
        return f"{t.name}:exon{number}:c.{tp - lay.cs + 1}{'+' if donor else '-'}{dist}{r}>{a}"

    # ------------------------------------------------------------------ UTR

    def _utr(self, t, table, start, end, ref, alt) -> None:
        details = table.setdefault(t.gene, [])
        lay = self._layout(t)
        if lay.cs is None:
            return
        minus = t.strand == "-"
        if ref == "-":
            tp = lay.txpos(start)
            a = tp - 1 if minus else tp
            seq = revcomp(alt) if minus else alt
            c = f"c.{lay.label(a)}_{lay.label(a + 1)}ins{seq}"
        else:
            span = lay.exonic_txpos(start, end)
            if span is None:
                return
            a, b = span
            exonic_ref = self._exonic_bases(t, start, end, ref)
            if start == end and alt != "-" and len(alt) == 1:
                c = f"c.{lay.label(a)}{exonic_ref}>{revcomp(alt) if minus else alt}"
            elif alt == "-":
                # ANNOVAR prints Alt's '-' for UTR5 deletions on '+' (spec §1.6, kept)
                deleted = "-" if (not minus and a < lay.cs) else exonic_ref
                c = f"c.{lay.label(a)}del{deleted}" if a == b else \
                    f"c.{lay.label(a)}_{lay.label(b)}del{deleted}"
            else:
                new = revcomp(alt) if minus else alt
                c = f"c.{lay.label(a)}delins{new}" if a == b else \
                    f"c.{lay.label(a)}_{lay.label(b)}delins{new}"
        details.append(f"{t.name}:{c}")

    @staticmethod
    def _exonic_bases(t, start, end, ref) -> str:
        """The exonic part of Ref (input letters), on the transcript strand."""
        keep = []
        for pos, base in zip(range(start, end + 1), ref):
            i = bisect_right(t.exon_starts, pos) - 1
            if i >= 0 and pos <= t.exon_ends[i]:
                keep.append(base)
        seq = "".join(keep)
        return revcomp(seq) if t.strand == "-" else seq

    # ------------------------------------------------------------------ exonic

    def _sequence(self, lay: _Layout) -> str | None:
        """The transcript's mRNA from the reference (5'->3'), or None without one."""
        if lay.mrna is None:
            t = lay.t
            name = self.fasta_names.get(t.chrom)
            if name is None or lay.cs is None:
                lay.mrna, lay.orf_ok = "", False
                return None
            parts = [self.fasta.fetch(name, s - 1, e) for s, e in zip(t.exon_starts, t.exon_ends)]
            mrna = "".join(parts).upper()
            lay.mrna = revcomp(mrna) if t.strand == "-" else mrna
            if len(lay.mrna) != lay.total:
                lay.orf_ok = False
            else:
                protein = translate(lay.mrna[lay.cs - 1:lay.ce], lay.code)
                lay.orf_ok = "*" not in protein[:-1]
        return lay.mrna if lay.orf_ok else None

    def _exonic(self, exonic: dict[str, list[Transcript]], start, end, ref, alt) -> tuple[str, str]:
        results = []
        for gene, transcripts in exonic.items():
            for t in transcripts:
                results.append(self._change(t, start, end, ref, alt))
        best = min(results, key=lambda r: _RANK[r[0]])[0]
        chosen = [r for r in results if r[0] == best]
        if best == "unknown":
            return "unknown", "UNKNOWN"
        if any(r[2] is None for r in chosen):          # wholegene: visit order
            return best, ",".join(r[1] for r in chosen)
        chosen.sort(key=lambda r: (r[2], r[3]))
        return best, ",".join(r[1] for r in chosen)

    def _change(self, t: Transcript, start, end, ref, alt) -> tuple:
        """(class, AAChange element, exon number or None for wholegene, accession)."""
        lay = self._layout(t)
        mrna = self._sequence(lay)
        if mrna is None:
            return ("unknown", "UNKNOWN", 0, t.name)
        minus = t.strand == "-"
        code = lay.code
        cs, ce = lay.cs, lay.ce
        cds_len = ce - cs + 1
        full = cds_len - cds_len % 3          # last base of the last complete codon
        ext = mrna[cs - 1:]                   # CDS and the 3' UTR after it
        number = lay.exon_number(start, end)
        head = f"{t.gene}:{t.name}:exon{number}:"

        def codon(index: int) -> str:
            return ext[3 * index:3 * index + 3]

        def aa(index: int) -> str:
            c = codon(index)
            return code.get(c, "X") if len(c) == 3 else ""

        if ref == "-":                                                        # insertion
            tp = lay.txpos(start)
            a = tp - 1 if minus else tp
            n5 = a - cs + 1
            seq = revcomp(alt) if minus else alt
            base5, base3 = mrna[a - 1:a], mrna[a:a + 1]
            if len(seq) == 1 and seq == base5:
                c = f"c.{n5}dup{seq}"
            elif len(seq) == 1 and seq == base3:
                c = f"c.{n5 + 1}dup{seq}"
            else:
                c = f"c.{n5}_{n5 + 1}ins{seq}"
            cpos = n5 + 1 if minus else n5
            index = (cpos - 1) // 3
            old = codon(index)
            if len(old) < 3 or cpos > full + (3 if not minus else 0) or cpos < 1:
                return ("unknown", "UNKNOWN", 0, t.name)
            offset = n5 - 3 * index
            varaa = translate(old[:offset] + seq + old[offset:], code)
            if "*" in varaa:
                varaa = varaa[:varaa.index("*") + 1]
            shown = varaa.replace("*", "X")
            refaa, pos = code.get(old, "X"), index + 1
            if len(seq) % 3 == 0:
                if refaa == "*":
                    kind = "nonframeshift insertion" if "*" in varaa else "stoploss"
                    p = f"p.X{pos}delins{shown}"
                else:
                    kind = "stopgain" if "*" in varaa else "nonframeshift insertion"
                    p = f"p.{refaa}{pos}delins{shown}"
            elif refaa == "*":
                kind = "frameshift insertion" if "*" in varaa else "stoploss"
                p = f"p.X{pos}delins{shown}"
            elif "*" in varaa:
                kind = "stopgain"
                p = f"p.{refaa}{pos}_{aa(index + 1).replace('*', 'X')}{pos + 1}delins{shown}"
            else:
                kind = "frameshift insertion"
                p = f"p.{refaa}{pos}fs"
            return (kind, f"{head}{c}:{p}", number, t.name)

        span = lay.exonic_txpos(start, end)
        if span is None:
            return ("unknown", "UNKNOWN", 0, t.name)
        s, e = span[0] - cs + 1, span[1] - cs + 1                  # c. positions
        if alt == "-":                                                        # deletion
            if s == e:                          # one base, or one exonic base of a longer one
                index = (s - 1) // 3
                old = codon(index)
                if s < 1 or s > full:
                    return ("unknown", "UNKNOWN", 0, t.name)
                off = (s - 1) % 3
                new = old[:off] + old[off + 1:] + ext[3 * index + 3:3 * index + 4]
                refaa, pos = code.get(old, "X"), index + 1
                newaa = code.get(new, "X") if len(new) == 3 else ""
                c = f"c.{s}del{mrna[span[0] - 1]}"
                if refaa == "*":
                    if newaa == "*":
                        return ("nonframeshift deletion", f"{head}{c}:p.X{pos}X", number, t.name)
                    return ("stoploss", f"{head}{c}:p.X{pos}{newaa}", number, t.name)
                if newaa == "*":
                    return ("stopgain", f"{head}{c}:p.{refaa}{pos}X", number, t.name)
                return ("frameshift deletion", f"{head}{c}:p.{refaa}{pos}fs", number, t.name)
            if s <= 1:
                return ("frameshift deletion", f"{t.gene}:{t.name}:wholegene", None, t.name)
            ps, pe = (s - 1) // 3 + 1, (e - 1) // 3 + 1
            refaa = aa(ps - 1).replace("*", "X")
            c = f"c.{s}_{e}del"
            if e > cds_len:
                return ("frameshift deletion", f"{head}{c}:p.{refaa}{ps}fs", number, t.name)
            if (e - s + 1) % 3 == 0:
                return ("nonframeshift deletion", f"{head}{c}:p.{ps}_{pe}del", number, t.name)
            return ("frameshift deletion", f"{head}{c}:p.{refaa}{ps}fs", number, t.name)

        if start == end and len(alt) == 1:                                    # SNV
            if s < 1 or s > full:
                return ("unknown", "UNKNOWN", 0, t.name)
            index = (s - 1) // 3
            old = codon(index)
            off = (s - 1) % 3
            new_base = revcomp(alt) if minus else alt
            new = old[:off] + new_base + old[off + 1:]
            refaa, altaa, pos = code.get(old, "X"), code.get(new, "X"), index + 1
            c = f"c.{old[off]}{s}{new_base}"
            if refaa == altaa:
                kind = "synonymous SNV"
            elif altaa == "*":
                kind = "stopgain"
            elif refaa == "*":
                kind = "stoploss"
            else:
                kind = "nonsynonymous SNV"
            p = f"p.{refaa}{pos}{altaa}".replace("*", "X")
            return (kind, f"{head}{c}:{p}", number, t.name)

        new = revcomp(alt) if minus else alt                                  # block
        c = f"c.{s}delins{new}" if s == e else f"c.{s}_{e}{new}"
        kind = "nonframeshift substitution" if (len(ref) - len(alt)) % 3 == 0 \
            else "frameshift substitution"
        return (kind, f"{head}{c}", number, t.name)

