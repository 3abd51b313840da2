"""Per-sample QC glue: duplicate metrics summed over regions, the read-pair integrity check and
the coverage summary.

Subcommands (``python -m genomon_smk.steps.qc SUBCOMMAND ...``):

``sum-markdup``  sum bammarkduplicates' per-region metrics into one Picard DuplicationMetrics file
``integrity``    fail unless the final BAM holds exactly the read pairs the FASTQ split counted
``coverage``     mean depth and fraction of the genome at >= N x from mosdepth's outputs, as a TSV

Deliberate difference from upstream Genomon (docs/differences.md): samtools stats/flagstat,
mosdepth and MultiQC instead of genomon_qc: other files and numbers.
"""

import argparse
import json
import math
import os
import sys

from scipy.optimize import brentq

LIBRARY = "LIBRARY"
# Derived from the counts, so recomputed after summing rather than summed.
PERCENT_DUPLICATION = "PERCENT_DUPLICATION"
ESTIMATED_LIBRARY_SIZE = "ESTIMATED_LIBRARY_SIZE"
DERIVED_COLUMNS = (PERCENT_DUPLICATION, ESTIMATED_LIBRARY_SIZE)
PICARD_COLUMNS = (
    LIBRARY,
    "UNPAIRED_READS_EXAMINED",
    "READ_PAIRS_EXAMINED",
    "SECONDARY_OR_SUPPLEMENTARY_RDS",
    "UNMAPPED_READS",
    "UNPAIRED_READ_DUPLICATES",
    "READ_PAIR_DUPLICATES",
    "READ_PAIR_OPTICAL_DUPLICATES",
    PERCENT_DUPLICATION,
    ESTIMATED_LIBRARY_SIZE,
)


class IntegrityError(Exception):
    """The final BAM does not hold the read pairs that went into the pipeline."""


# --- duplicate metrics


def read_duplication_metrics(lines):
    """The metrics table of a Picard / bammarkduplicates metrics file: (columns, rows as dicts).

    The table starts after a ``##METRICS`` / ``## METRICS CLASS`` line and ends at the first blank
    or ``#`` line (the histogram follows). A region without reads has the header and no rows.
    """
    columns, rows, in_table = None, [], False
    for line in lines:
        line = line.rstrip("\n")
        if not in_table:
            in_table = line.replace(" ", "").startswith("##METRICS")
            continue
        if columns is None:
            columns = line.split("\t")
            continue
        if not line.strip() or line.startswith("#"):
            break
        values = line.split("\t")
        if len(values) != len(columns):
            raise ValueError(f"metrics row has {len(values)} fields, header {len(columns)}: {line!r}")
        rows.append(dict(zip(columns, values)))
    if columns is None:
        raise ValueError("no ## METRICS table found")
    return columns, rows


def sum_duplication_counts(rows):
    """Per library, the sum of every count column over the rows (derived columns left out)."""
    totals = {}
    for row in rows:
        library = totals.setdefault(row[LIBRARY], {})
        for column, value in row.items():
            if column != LIBRARY and column not in DERIVED_COLUMNS:
                library[column] = library.get(column, 0) + int(value)
    return totals


def percent_duplication(counts):
    """Picard's PERCENT_DUPLICATION: duplicate reads over examined reads (a pair counts twice)."""
    duplicates = counts.get("UNPAIRED_READ_DUPLICATES", 0) + 2 * counts.get("READ_PAIR_DUPLICATES", 0)
    examined = counts.get("UNPAIRED_READS_EXAMINED", 0) + 2 * counts.get("READ_PAIRS_EXAMINED", 0)
    return duplicates / examined if examined else 0.0


def estimate_library_size(read_pairs, unique_read_pairs):
    """Distinct molecules X with unique/X = 1 - exp(-pairs/X) (Lander-Waterman), or None.

    Solvable only when some but not all pairs are duplicates; the left side falls from above 1
    towards unique/pairs < 1 as X grows while the right side rises to 1, so the root is bracketed
    by unique (where the left side is 1) and a size where the duplicate rate is negligible.
    """
    if read_pairs <= 0 or unique_read_pairs <= 0 or unique_read_pairs >= read_pairs:
        return None

    def gap(size):
        return unique_read_pairs / size - 1 + math.exp(-read_pairs / size)

    upper = float(unique_read_pairs)
    while gap(upper) > 0:
        upper *= 10
    return int(brentq(gap, float(unique_read_pairs), upper, xtol=1e-6))


def library_metrics(counts):
    """A library's counts with Picard's derived columns recomputed from them."""
    pairs = counts.get("READ_PAIRS_EXAMINED", 0)
    size = estimate_library_size(
        pairs - counts.get("READ_PAIR_OPTICAL_DUPLICATES", 0),
        pairs - counts.get("READ_PAIR_DUPLICATES", 0),
    )
    return {
        **counts,
        PERCENT_DUPLICATION: f"{percent_duplication(counts):.6f}",
        ESTIMATED_LIBRARY_SIZE: "" if size is None else str(size),
    }


def format_duplication_metrics(input_bam, totals, columns=PICARD_COLUMNS):
    """Picard's DuplicationMetrics file (MultiQC's picard module names the sample after INPUT)."""
    lines = [
        "## htsjdk.samtools.metrics.StringHeader",
        f"# MarkDuplicates INPUT=[{input_bam}] (bammarkduplicates per region, summed by genomon-smk)",
        "## htsjdk.samtools.metrics.StringHeader",
        "# genomon_smk.steps.qc sum-markdup",
        "",
        "## METRICS CLASS\tpicard.sam.DuplicationMetrics",
        "\t".join(columns),
    ]
    for library in sorted(totals):
        row = {LIBRARY: library, **library_metrics(totals[library])}
        lines.append("\t".join(str(row.get(column, 0)) for column in columns))
    return "\n".join(lines) + "\n\n"


def summed_duplication_metrics(paths, input_bam):
    """The Picard-format text summing bammarkduplicates metrics files by library."""
    columns, rows = None, []
    for path in paths:
        with open(path) as handle:
            file_columns, file_rows = read_duplication_metrics(handle)
        columns = columns or file_columns
        if file_columns != columns:
            raise ValueError(f"{path}: columns differ from the other metrics files")
        rows += file_rows
    return format_duplication_metrics(input_bam, sum_duplication_counts(rows), columns or PICARD_COLUMNS)


# --- integrity


def samtools_stats_summary(lines):
    """The ``SN`` section of ``samtools stats`` as {name: number}."""
    summary = {}
    for line in lines:
        if line.startswith("SN\t"):
            name, value = line.split("\t")[1:3]
            summary[name.rstrip(":")] = float(value)
    return summary


def bam_read_pairs(summary):
    """(read1, read2) primary records counted by samtools stats (secondary/supplementary excluded)."""
    missing = [name for name in ("1st fragments", "last fragments") if name not in summary]
    if missing:
        raise ValueError(f"samtools stats output lacks SN {', '.join(missing)}")
    return int(summary["1st fragments"]), int(summary["last fragments"])


def integrity_problems(sample, expected_pairs, read1, read2, empty_read1=0, empty_read2=0):
    """Why the final BAM does not hold exactly the split's read pairs (empty: it does).
    samtools stats does not count mates of length zero (trimmed to nothing), which bwa keeps:
    the split counted them, so they are taken off what each mate's count must be."""
    problems = []
    if read1 != expected_pairs - empty_read1:
        problems.append(
            f"sample {sample}: the final BAM holds {read1} read pairs (primary read 1 records), "
            f"the FASTQ split counted {expected_pairs} ({read1 - expected_pairs + empty_read1:+d}"
            + (f"; {empty_read1} read 1 mates of length zero, which samtools stats does not count" if empty_read1 else "")
            + ")"
        )
    if read2 - (expected_pairs - empty_read2) != read1 - (expected_pairs - empty_read1):
        problems.append(f"sample {sample}: the final BAM holds {read1} primary read 1 but {read2} read 2 records "
                        f"({empty_read1} and {empty_read2} of length zero not counted)")
    return problems


def check_integrity(sample, counts_path, stats_path):
    """The report line of a passing check; IntegrityError naming both numbers otherwise."""
    with open(counts_path) as handle:
        counts = json.load(handle)
    expected = int(counts["read_pairs"])
    empty = int(counts.get("empty_read1", 0)), int(counts.get("empty_read2", 0))
    with open(stats_path) as handle:
        read1, read2 = bam_read_pairs(samtools_stats_summary(handle))
    problems = integrity_problems(sample, expected, read1, read2, *empty)
    if problems:
        raise IntegrityError(
            "\n".join(problems) + f"\n(counts: {counts_path}, samtools stats: {stats_path}); reads were lost or duplicated"
        )
    zero_length = f"zero_length_read1\t{empty[0]}\nzero_length_read2\t{empty[1]}\n" if any(empty) else ""
    return f"sample\t{sample}\nfastq_read_pairs\t{expected}\nbam_read_pairs\t{read1 + empty[0]}\n{zero_length}status\tOK\n"


# --- coverage


def mean_depth(summary_lines):
    """Genome-wide mean depth: the ``total`` row of mosdepth's summary.txt."""
    for line in summary_lines:
        fields = line.rstrip("\n").split("\t")
        if fields[0] == "total":
            return float(fields[3])
    raise ValueError("mosdepth summary has no 'total' row")


def fraction_at_least(dist_lines, depths):
    """{depth: fraction of the genome covered at >= depth} from the ``total`` rows of
    mosdepth's global.dist.txt (a cumulative distribution; depths beyond it have fraction 0)."""
    cumulative = {}
    for line in dist_lines:
        contig, depth, fraction = line.rstrip("\n").split("\t")
        if contig == "total":
            cumulative[int(depth)] = float(fraction)
    return {depth: cumulative.get(depth, 0.0) for depth in depths}


def coverage_table(sample, mean, fractions):
    """One-row TSV: sample, mean depth, fraction of the genome at >= each depth."""
    header = ["sample", "mean_depth"] + [f"fraction_ge_{depth}x" for depth in fractions]
    row = [sample, f"{mean:.4f}"] + [f"{fractions[depth]:.4f}" for depth in fractions]
    return "\t".join(header) + "\n" + "\t".join(row) + "\n"


# --- CLI


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m genomon_smk.steps.qc", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    markdup = commands.add_parser("sum-markdup", help="sum per-region bammarkduplicates metrics")
    markdup.add_argument("--bam", required=True, help="the final BAM (recorded as INPUT, names the sample)")
    markdup.add_argument("--out", required=True)
    markdup.add_argument("metrics", nargs="+", help="per-region metrics files")

    integrity = commands.add_parser("integrity", help="read pairs in the BAM == read pairs split")
    integrity.add_argument("--sample", required=True)
    integrity.add_argument("--counts", required=True, help="the split's fastq_counts.json")
    integrity.add_argument("--stats", required=True, help="samtools stats of the final BAM")
    integrity.add_argument("--out", required=True, help="written only when the check passes")

    coverage = commands.add_parser("coverage", help="mosdepth summary as a one-row TSV")
    coverage.add_argument("--sample", required=True)
    coverage.add_argument("--summary", required=True, help="mosdepth's .mosdepth.summary.txt")
    coverage.add_argument("--dist", required=True, help="mosdepth's .mosdepth.global.dist.txt")
    coverage.add_argument("--depths", type=int, nargs="+", default=[10, 20, 30])
    coverage.add_argument("--out", required=True)
    return parser.parse_args(argv)


def write_text(path, text):
    """Write through a temporary name, so a reader never sees half a file."""
    partial = f"{path}.partial"
    with open(partial, "w") as handle:
        handle.write(text)
    os.replace(partial, path)


def main(argv=None):
    args = parse_args(argv)
    try:
        if args.command == "sum-markdup":
            write_text(args.out, summed_duplication_metrics(args.metrics, os.path.basename(args.bam)))
        elif args.command == "integrity":
            write_text(args.out, check_integrity(args.sample, args.counts, args.stats))
        else:
            with open(args.summary) as summary, open(args.dist) as dist:
                text = coverage_table(args.sample, mean_depth(summary), fraction_at_least(dist, args.depths))
            write_text(args.out, text)
    except (IntegrityError, ValueError, KeyError, OSError) as error:
        print(f"genomon_smk.steps.qc {args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
