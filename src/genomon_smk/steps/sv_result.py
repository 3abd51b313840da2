"""SV detection results in Genomon's layout: GenomonSV filt's table under Genomon's meta lines
(`genomonSV.result.txt`), and the calls of a (filtered) result as a VCF of breakend records that
bcftools reads.

GenomonSV filt writes a header line and one row per junction (an inversion is two rows); a
result that lacks the header means the tool failed without saying so (GenomonSV exits 0 when
bgzip, tabix or sort fail), so it is refused here.

Deliberate differences from upstream Genomon (docs/differences.md): a result without GenomonSV's
header is refused (upstream passes it on as an empty result); a breakend VCF is written (Genomon
writes none).
"""

from __future__ import annotations

import argparse
import sys

import pysam

from genomon_smk.steps import exit_status
from genomon_smk.steps.merge_mutation import add_vcf_arguments, meta_lines, source_version, tool_version

COLUMNS = (
    "Chr_1 Pos_1 Dir_1 Chr_2 Pos_2 Dir_2 Inserted_Seq Variant_Type Gene_1 Gene_2 Exon_1 Exon_2 "
    "Num_Tumor_Ref_Read_Pair Num_Tumor_Var_Read_Pair Tumor_VAF Num_Control_Ref_Read_Pair "
    "Num_Control_Var_Read_Pair Control_VAF Minus_Log_Fisher_P_value "
    "Non-Matched_Control_Sample_With_Max_Junction Num_Max_Non-Matched_Control_Junction "
    "Max_Over_Hang_1 Max_Over_Hang_2"
).split()


def read_rows(path: str) -> list[dict[str, str]]:
    """The rows of a GenomonSV result (meta lines skipped), refused unless its header is Genomon's."""
    with open(path) as handle:
        lines = [line.rstrip("\n") for line in handle if not line.startswith("#")]
    if not lines or lines[0].split("\t") != COLUMNS:
        raise ValueError(f"{path}: not a GenomonSV result (no header line of its {len(COLUMNS)} columns)")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise ValueError(f"{path}: row {number} has {len(cells)} columns, the header {len(COLUMNS)}")
        rows.append(dict(zip(COLUMNS, cells)))
    return rows


def write_result(raw_path: str, out_path: str, versions: list[str]) -> int:
    """Genomon's meta lines, then GenomonSV filt's header and rows; returns the row count."""
    rows = len(read_rows(raw_path))
    with open(raw_path) as raw, open(out_path, "w") as out:
        out.write("\n".join(meta_lines(versions)) + "\n")
        out.writelines(raw)
    return rows


def breakend_alt(base: str, own_dir: str, mate: str, mate_pos: int, mate_dir: str) -> str:
    """VCF 4.2 breakend ALT of a junction end. Genomon's Dir `+`: the sequence up to Pos joins
    the break (left of it); `-`: the sequence from Pos on (right of it)."""
    bracket = "[" if mate_dir == "-" else "]"
    joined = f"{bracket}{mate}:{mate_pos}{bracket}"
    return base + joined if own_dir == "+" else joined + base


def vcf_header(contigs, samples, reference: str) -> pysam.VariantHeader:
    header = pysam.VariantHeader()
    header.add_line(f"##source=genomon-smk {source_version()}")
    header.add_line(f"##reference=file://{reference}")
    for contig, length in contigs:
        header.contigs.add(contig, length=length)
    header.info.add("SVTYPE", 1, "String", "Type of structural variant (a breakend of a junction)")
    header.info.add("MATEID", 1, "String", "ID of the mate breakend")
    header.info.add("SVCLASS", 1, "String", "GenomonSV's Variant_Type: deletion, tandem_duplication, inversion, translocation")
    header.info.add("INSSEQ", 1, "String", "GenomonSV's Inserted_Seq: bases inserted at the junction")
    header.info.add("FISHER", 1, "Float", "GenomonSV's Minus_Log_Fisher_P_value (tumor vs matched control)")
    header.info.add("GENE", ".", "String", "Genes at this breakend (GenomonSV's Gene_1 or Gene_2)")
    header.formats.add("GT", 1, "String", "Genotype")
    header.formats.add("RP", 1, "Integer", "Read pairs supporting the reference")
    header.formats.add("VP", 1, "Integer", "Read pairs supporting the junction")
    header.formats.add("AF", 1, "Float", "Junction allele frequency (GenomonSV's VAF)")
    for sample in samples:
        header.add_sample(sample)
    return header


def write_vcf(result_path: str, fasta_path: str, vcf_path: str, tumor: str, normal: str | None) -> int:
    """Every row of a GenomonSV result as two breakend records (mates), sorted and indexed;
    returns the number of rows."""
    rows = read_rows(result_path)
    fasta = pysam.FastaFile(fasta_path)
    contigs = list(zip(fasta.references, fasta.lengths))
    order = {name: index for index, (name, _) in enumerate(contigs)}
    samples = [tumor] + ([normal] if normal else [])
    header = vcf_header(contigs, samples, fasta_path)
    records = []
    for number, row in enumerate(rows, start=1):
        ends = [(row["Chr_1"], int(row["Pos_1"]), row["Dir_1"], row["Gene_1"]),
                (row["Chr_2"], int(row["Pos_2"]), row["Dir_2"], row["Gene_2"])]
        for side, ((chrom, pos, direction, genes), (mate, mate_pos, mate_dir, _)) in enumerate(
            zip(ends, reversed(ends)), start=1
        ):
            base = fasta.fetch(chrom, pos - 1, pos).upper()
            alt = breakend_alt(base, direction, mate, mate_pos, mate_dir)
            records.append((order[chrom], pos, f"sv{number}_{side}", chrom, f"sv{number}_{3 - side}", base, alt, genes, row))
    records.sort(key=lambda record: record[:3])
    with pysam.VariantFile(vcf_path, "wz", header=header) as out:
        for _, pos, ident, chrom, mate_id, base, alt, genes, row in records:
            record = out.new_record(contig=chrom, start=pos - 1, id=ident, alleles=(base, alt), filter="PASS")
            record.info["SVTYPE"] = "BND"
            record.info["MATEID"] = mate_id
            record.info["SVCLASS"] = row["Variant_Type"]
            if row["Inserted_Seq"] != "---":
                record.info["INSSEQ"] = row["Inserted_Seq"]
            if row["Minus_Log_Fisher_P_value"] != "---":
                record.info["FISHER"] = float(row["Minus_Log_Fisher_P_value"])
            if genes != "---":
                record.info["GENE"] = tuple(genes.split(";"))
            for sample, kind, genotype in ((tumor, "Tumor", (0, 1)), (normal, "Control", (0, 0))):
                if sample is None or row[f"Num_{kind}_Ref_Read_Pair"] == "---":
                    continue
                record.samples[sample]["GT"] = genotype
                record.samples[sample]["RP"] = int(row[f"Num_{kind}_Ref_Read_Pair"])
                record.samples[sample]["VP"] = int(row[f"Num_{kind}_Var_Read_Pair"])
                vaf = row[f"{kind}_VAF"]
                if vaf != "---":
                    record.samples[sample]["AF"] = float(vaf)
            out.write(record)
    pysam.tabix_index(vcf_path, preset="vcf", force=True)
    return len(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="GenomonSV results of one tumor in Genomon's layout.")
    commands = parser.add_subparsers(dest="command", required=True)
    result = commands.add_parser("result", help="Genomon's meta lines + GenomonSV filt's result")
    result.add_argument("--raw", required=True, help="GenomonSV filt's genomonSV.result.txt")
    result.add_argument("--out", required=True)
    result.add_argument("--version-of", nargs="*", default=[], help="tool commands whose --version goes into the meta line")
    add_vcf_arguments(commands.add_parser("vcf", help="a result -> bgzipped, indexed VCF of breakend records"))
    args = parser.parse_args(argv)

    def run() -> None:
        if args.command == "result":
            rows = write_result(args.raw, args.out, [tool_version(tool) for tool in args.version_of])
            print(f"sv_result: {rows} SV junctions")
        else:
            rows = write_vcf(args.result, args.reference, args.out, args.tumor, args.normal)
            print(f"sv_result: {rows} SV junctions written as {2 * rows} breakend records")

    return exit_status("sv_result", run)

if __name__ == "__main__":
    sys.exit(main())
