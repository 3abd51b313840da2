#!/usr/bin/env python3
"""The gene annotator against `bcftools csq` on real transcripts: GRCh37 chr20 and hg19 refGene.

    .venv/bin/python bench/annotate_vs_csq.py [--variants 1000000] [--workdir /tmp/annotate-csq]

Draws variants over chr20 as bench/annotate_speed.py does, annotates them with
genomon_smk.tools.annotate (annot_utils' hg19 refGene, chr20's coding transcripts), writes the
exonic ones as a VCF and the same transcripts as a GFF3 (one csq gene per transcript mapping),
runs `bcftools csq -l`, and compares each transcript ANNOVAR-style AAChange lists with csq's
call for that transcript: class for every variant, the protein change for SNVs. Differences are
counted under the rules of docs/differences.md ("Gene annotation"): start_codon, indel_stop,
indel_junction.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

import pysam

sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_speed import write_variants  # noqa: E402

from genomon_smk.tools.annotate import Annotator, builtin_table  # noqa: E402
from genomon_smk.tools.annotate.genes import read_genepred, select_transcripts  # noqa: E402

CLASS = {"synonymous": "synonymous SNV", "missense": "nonsynonymous SNV",
         "stop_gained": "stopgain", "stop_lost": "stoploss", "stop_retained": "synonymous SNV",
         "inframe_deletion": "nonframeshift deletion", "inframe_insertion": "nonframeshift insertion"}


def csq_class(terms: str, indel: str) -> str:
    term = [t for t in terms.split("&") if t != "splice_region"][0]
    if term == "frameshift":
        return f"frameshift {indel}"
    if term == "inframe_altering":
        return f"nonframeshift {indel}"
    return CLASS.get(term, term)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=1_000_000)
    parser.add_argument("--reference", default="/usr/share/doc/vt/examples/ref/20.fa.gz")
    parser.add_argument("--workdir", default="/tmp/annotate-csq")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"variants.{args.variants}.tsv"
    if not source.exists():
        write_variants(args.reference, args.variants, source, seed=1)
    fasta = pysam.FastaFile(args.reference)
    contig = fasta.references[0]
    transcripts = [t for t in select_transcripts(read_genepred(str(builtin_table("hg19"))))
                   if t.chrom == contig.removeprefix("chr") and t.coding]
    annotator = Annotator(transcripts, fasta)
    gff = ["##gff-version 3"]
    for t in transcripts:
        key = f"{t.name}_{t.tx_start}"
        gff.append(f"{contig}\tr\tgene\t{t.tx_start}\t{t.tx_end}\t.\t{t.strand}\t.\t"
                   f"ID=gene:{key};Name={t.gene};biotype=protein_coding")
        gff.append(f"{contig}\tr\tmRNA\t{t.tx_start}\t{t.tx_end}\t.\t{t.strand}\t.\t"
                   f"ID=transcript:{key};Parent=gene:{key};biotype=protein_coding")
        pieces = []
        for s, e in zip(t.exon_starts, t.exon_ends):
            gff.append(f"{contig}\tr\texon\t{s}\t{e}\t.\t{t.strand}\t.\tParent=transcript:{key}")
            if s <= t.cds_end and e >= t.cds_start:
                pieces.append((max(s, t.cds_start), min(e, t.cds_end)))
        done = 0
        for s, e in (pieces if t.strand == "+" else pieces[::-1]):
            gff.append(f"{contig}\tr\tCDS\t{s}\t{e}\t.\t{t.strand}\t{(3 - done % 3) % 3}\t"
                       f"ID=CDS:{key};Parent=transcript:{key}")
            done += e - s + 1
    (work / "genes.gff3").write_text("\n".join(gff) + "\n")

    exonic = []
    with open(source) as handle:
        next(handle)
        for line in handle:
            f = line.split("\t", 5)
            start, end, ref, alt = int(f[1]), int(f[2]), f[3], f[4]
            columns = annotator.annotate(contig, start, end, ref, alt)
            if columns[0].startswith("exonic"):
                exonic.append(((start, end, ref, alt), columns))
    with open(work / "exonic.vcf", "w") as out:
        out.write(f"##fileformat=VCFv4.2\n##contig=<ID={contig},length={fasta.get_reference_length(contig)}>\n"
                  "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n")
        for i, ((start, end, ref, alt), _) in enumerate(exonic):
            if ref == "-":
                anchor = fasta.fetch(contig, start - 1, start).upper()
                pos, vref, valt = start, anchor, anchor + alt
            elif alt == "-":
                anchor = fasta.fetch(contig, start - 2, start - 1).upper()
                pos, vref, valt = start - 1, anchor + ref, anchor
            else:
                pos, vref, valt = start, ref, alt
            out.write(f"{contig}\t{pos}\tv{i}\t{vref}\t{valt}\t.\t.\t.\n")
    run = subprocess.run(["bcftools", "csq", "-l", "-f", args.reference, "-g",
                          str(work / "genes.gff3"), str(work / "exonic.vcf")],
                         capture_output=True, text=True, check=True)
    counts = collections.Counter()
    for line in run.stdout.splitlines():
        if line.startswith("#"):
            continue
        f = line.split("\t")
        (start, end, ref, alt), columns = exonic[int(f[2][1:])]
        bcsq = re.search(r"BCSQ=([^;\t]+)", f[7])
        theirs = {}
        for entry in (bcsq.group(1).split(",") if bcsq else []):
            q = entry.split("|")
            if len(q) >= 3 and q[0] != "splice_region":
                theirs.setdefault(q[2].rsplit("_", 1)[0], q)
        snv = ref != "-" and alt != "-" and len(ref) == 1
        indel = "deletion" if alt == "-" else "insertion"
        for element in columns[4].split(","):
            parts = element.split(":")
            if len(parts) < 3 or parts[1] not in theirs:
                counts["not compared (wholegene/UNKNOWN/no csq call)"] += 1
                continue
            q = theirs[parts[1]]
            if q[0].startswith("start_") or ":p.M1" in element or parts[2] == "wholegene":
                counts["rule start_codon"] += 1
                continue
            kind = csq_class(q[0], indel)
            change = ""
            m = re.fullmatch(r"(\d+)([A-Z*])(?:>\d+([A-Z*]))?", q[5]) if len(q) > 5 else None
            if m:
                change = f"{m.group(2)}{m.group(1)}{m.group(3) or m.group(2)}".replace("*", "X")
            ours = element.split(":p.")[-1] if ":p." in element else ""
            if kind == columns[3] and (not snv or ours == change):
                counts["agree (SNV: class and protein change)" if snv else "agree (indel: class)"] += 1
            elif not snv and ("splice_donor" in q[0] or "splice_acceptor" in q[0]):
                counts["rule indel_junction"] += 1
            elif not snv and (columns[3] in ("stopgain", "stoploss") or "stop_" in q[0]):
                counts["rule indel_stop"] += 1
            else:
                counts["DISAGREE"] += 1
                print("disagree:", (start, end, ref, alt), element, "|".join(q[:6]))
    print(f"{len(exonic)} exonic variants of {args.variants}; transcript calls:")
    for key, n in counts.most_common():
        print(f"  {key}\t{n}")
    return 1 if counts["DISAGREE"] else 0


if __name__ == "__main__":
    sys.exit(main())
