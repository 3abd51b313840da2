"""The clean-room annotator against an independent one: Debian's ``bcftools csq`` with a GFF3 made
from the same random transcripts, on thousands of random exonic variants of a random genome.

Consequence class and protein change must agree wherever the two tools' rules agree; every
rule that differs is named below (CSQ_RULES) and documented in docs/differences.md
("Gene annotation: against bcftools csq"), and a variant is excluded only by such a rule.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from collections import Counter

import pysam
import pytest

from genomon_smk.tools.annotate import Annotator
from genomon_smk.tools.annotate.genes import _make
from genomon_smk.tools.annotate.sequence import STANDARD, revcomp

pytestmark = pytest.mark.skipif(shutil.which("bcftools") is None, reason="bcftools not installed")

SENSE = [c for c, aa in STANDARD.items() if aa != "*"]
STOPS = [c for c, aa in STANDARD.items() if aa == "*"]
CONTIG = "7"
TRANSCRIPTS = 60
VARIANTS = 4000

#: where ANNOVAR's (2018) rules and bcftools csq's differ: name -> what differs (docs/differences.md)
CSQ_RULES = {
    "start_codon": "a change of the start codon: ANNOVAR 2018 has no startloss (nonsynonymous "
                   "SNV p.M1V, or for a deletion from c.1 'wholegene'), csq says start_lost",
    "indel_stop": "an indel that creates or removes a stop codon or touches the stop codon: "
                  "ANNOVAR classes it by its first changed codon (stopgain/stoploss/"
                  "nonframeshift), csq by the frame first (frameshift, stop_gained, stop_lost, "
                  "inframe_altering)",
    "indel_junction": "an indel at or across an exon-intron junction: ANNOVAR uses its exonic "
                      "part and calls it exonic, csq splice_donor/splice_acceptor (checked on "
                      "real transcripts by bench/annotate_vs_csq.py; the random variants here "
                      "keep 3 bases from exon ends)",
    "indel_position": "indel protein positions: ANNOVAR does not shift indels 3' and attributes "
                      "an insertion between codons to the preceding codon (+) or the following "
                      "codon (-); csq normalises, so only the class is compared for indels",
}


def build(rng: random.Random):
    """A random genome with non-overlapping coding transcripts on both strands."""
    genome, transcripts, pos = [], [], 500
    for k in range(TRANSCRIPTS):
        strand = "+-"[k % 2]
        exons, cursor = [], pos
        for _ in range(rng.randint(1, 5)):
            length = rng.randint(40, 250)
            exons.append((cursor, cursor + length - 1))
            cursor += length + rng.randint(60, 400)
        total = sum(e - s + 1 for s, e in exons)
        utr5, utr3 = rng.randint(5, 30), rng.randint(5, 30)
        cds_len = (total - utr5 - utr3) // 3 * 3
        if cds_len < 30:
            pos = cursor + 500
            continue
        # transcript positions (1-based) of the CDS: [utr5+1, utr5+cds_len]
        tx_positions = [p for s, e in exons for p in range(s, e + 1)]
        if strand == "-":
            tx_positions = tx_positions[::-1]
        cds_genomic = tx_positions[utr5:utr5 + cds_len]
        codons = ["ATG"] + [rng.choice(SENSE) for _ in range(cds_len // 3 - 2)] + [rng.choice(STOPS)]
        transcripts.append((f"NM_{k:03d}", f"G{k:03d}", strand, exons, cds_genomic,
                            "".join(codons)))
        pos = cursor + rng.randint(600, 2000)
    size = pos + 500
    genome = [rng.choice("ACGT") for _ in range(size)]
    for _, _, strand, _, cds_genomic, cds in transcripts:
        for p, b in zip(cds_genomic, cds):
            genome[p - 1] = b if strand == "+" else revcomp(b)
    return "".join(genome), transcripts


def write_gff3(path, transcripts):
    lines = ["##gff-version 3"]
    for name, gene, strand, exons, cds_genomic, _ in transcripts:
        lo, hi = exons[0][0], exons[-1][1]
        c_lo, c_hi = min(cds_genomic), max(cds_genomic)
        lines.append(f"{CONTIG}\tt\tgene\t{lo}\t{hi}\t.\t{strand}\t.\t"
                     f"ID=gene:{gene};Name={gene};biotype=protein_coding")
        lines.append(f"{CONTIG}\tt\tmRNA\t{lo}\t{hi}\t.\t{strand}\t.\t"
                     f"ID=transcript:{name};Parent=gene:{gene};Name={name};biotype=protein_coding")
        for s, e in exons:
            lines.append(f"{CONTIG}\tt\texon\t{s}\t{e}\t.\t{strand}\t.\tParent=transcript:{name}")
        done = 0                      # CDS phase in transcript order
        pieces = [(max(s, c_lo), min(e, c_hi)) for s, e in exons if s <= c_hi and e >= c_lo]
        for s, e in (pieces if strand == "+" else pieces[::-1]):
            phase = (3 - done % 3) % 3
            lines.append(f"{CONTIG}\tt\tCDS\t{s}\t{e}\t.\t{strand}\t{phase}\t"
                         f"ID=CDS:{name};Parent=transcript:{name}")
            done += e - s + 1
    path.write_text("\n".join(lines) + "\n")


def random_variants(rng, genome, transcripts):
    """Genomon-notation variants inside CDS exons (>= 3 bases from the exon ends)."""
    out = []
    while len(out) < VARIANTS:
        _, _, _, exons, cds_genomic, _ = rng.choice(transcripts)
        c_lo, c_hi = min(cds_genomic), max(cds_genomic)
        s, e = rng.choice(exons)
        lo, hi = max(s, c_lo) + 3, min(e, c_hi) - 3
        if hi - lo < 12:
            continue
        p = rng.randint(lo, hi - 7)
        kind = rng.random()
        if kind < 0.6:
            ref = genome[p - 1]
            out.append((p, p, ref, rng.choice("ACGT".replace(ref, ""))))
        elif kind < 0.8:
            n = rng.randint(1, 6)
            out.append((p, p + n - 1, genome[p - 1:p + n - 1], "-"))
        else:
            out.append((p, p, "-", "".join(rng.choice("ACGT") for _ in range(rng.randint(1, 6)))))
    return out


def to_vcf(variant, genome):
    start, end, ref, alt = variant
    if ref == "-":
        anchor = genome[start - 1]
        return start, anchor, anchor + alt
    if alt == "-":
        anchor = genome[start - 2]
        return start - 1, anchor + ref, anchor
    return start, ref, alt


CLASS = {"synonymous": "synonymous SNV", "missense": "nonsynonymous SNV",
         "stop_gained": "stopgain", "stop_lost": "stoploss", "stop_retained": "synonymous SNV",
         "inframe_deletion": "nonframeshift deletion", "inframe_insertion": "nonframeshift insertion"}


def csq_call(bcsq: str, variant) -> tuple[str, str]:
    """(ANNOVAR-vocabulary class, protein change 'R12C') of csq's first consequence."""
    entries = [e for e in bcsq.split(",") if e.split("|")[0] != "splice_region"] or [bcsq]
    fields = entries[0].split("|")
    terms = [t for t in fields[0].split("&") if t not in ("splice_region", "coding_sequence")]
    term = terms[0] if terms else fields[0]
    indel = "deletion" if variant[3] == "-" else "insertion"
    if term == "frameshift":
        kind = f"frameshift {indel}"
    elif term in ("inframe_altering",):
        kind = f"nonframeshift {indel}"
    else:
        kind = CLASS.get(term, term)
    change = ""
    if len(fields) > 5:
        m = re.fullmatch(r"(\d+)([A-Z*])(?:>\d+([A-Z*]))?", fields[5])
        if m:
            change = f"{m.group(2)}{m.group(1)}{m.group(3) or m.group(2)}".replace("*", "X")
    return kind, change


def rule_for(variant, ours: str, change: str, theirs: str) -> str | None:
    """The documented rule that explains a disagreement, or None (`theirs`: csq's terms)."""
    start, end, ref, alt = variant
    if ":p.M1" in change or "wholegene" in change or theirs.startswith("start_"):
        return "start_codon"
    if ref == "-" or alt == "-":
        if ours in ("stopgain", "stoploss") or "stop_" in theirs:
            return "indel_stop"
    return None


def test_agrees_with_bcftools_csq(tmp_path):
    rng = random.Random(20180416)
    genome, transcripts = build(rng)
    fasta = tmp_path / "genome.fa"
    fasta.write_text(f">{CONTIG}\n" + "\n".join(genome[i:i + 60] for i in range(0, len(genome), 60)) + "\n")
    pysam.faidx(str(fasta))
    gff = tmp_path / "genes.gff3"
    write_gff3(gff, transcripts)
    variants = sorted(set(random_variants(rng, genome, transcripts)))
    vcf = tmp_path / "in.vcf"
    with open(vcf, "w") as out:
        out.write(f"##fileformat=VCFv4.2\n##contig=<ID={CONTIG},length={len(genome)}>\n"
                  "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
        for i, v in enumerate(variants):
            pos, ref, alt = to_vcf(v, genome)
            out.write(f"{CONTIG}\t{pos}\tv{i}\t{ref}\t{alt}\t.\t.\t.\n")
    run = subprocess.run(["bcftools", "csq", "-l", "-f", str(fasta), "-g", str(gff), str(vcf)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    bcsq = {}
    for line in run.stdout.splitlines():
        if line.startswith("#"):
            continue
        f = line.split("\t")
        m = re.search(r"BCSQ=([^;\t]+)", f[7])
        bcsq[int(f[2][1:])] = m.group(1) if m else ""

    table = []
    for name, gene, strand, exons, cds_genomic, _ in transcripts:
        table.append(_make(name, gene, CONTIG, strand, exons[0][0], exons[-1][1],
                           min(cds_genomic) - 1, max(cds_genomic),
                           [s for s, _ in exons], [e for _, e in exons]))
    annotator = Annotator(table, str(fasta))
    agreed, excluded, disagreements, snv_changes = 0, Counter(), [], 0
    for i, v in enumerate(variants):
        func, gene, _, kind, aachange = annotator.annotate(CONTIG, v[0], v[1], v[2], v[3])
        assert func == "exonic", (v, func)
        theirs, their_change = csq_call(bcsq[i], v)
        p = aachange.split(":p.")[-1] if ":p." in aachange else ""
        snv = v[2] != "-" and v[3] != "-"
        same = kind == theirs and (not snv or p == their_change)
        if same:
            agreed += 1
            snv_changes += bool(snv and p)
            continue
        terms = [e.split("|")[0] for e in bcsq[i].split(",")]
        rule = rule_for(v, kind, aachange, "&".join(t for t in terms if t != "splice_region"))
        if rule is None and not snv and kind == theirs:
            rule = "indel_position"
        if rule is None:
            disagreements.append((v, kind, aachange, bcsq[i]))
        else:
            excluded[rule] += 1
    assert set(excluded) <= set(CSQ_RULES)
    assert not disagreements, disagreements[:10]
    assert agreed >= 0.9 * len(variants), (agreed, excluded)
    assert snv_changes >= 0.5 * len(variants)       # protein changes were compared
