"""Read and check the cohort description: samples (one row per lane), pairs and control panels.

Two input forms give the same `Cohort`: the workflow's own TSV tables (`samples`, `pairs`,
`control_panels` config keys) and Genomon's classic sample sheet (`genomon_sample_sheet`).
Every problem is reported as an `InputError` naming the file, line and field, and all problems
found are reported together, so a user fixes the sheet in one go.

Deliberate differences from upstream Genomon (docs/differences.md): a ``[controlpanel]`` member
may be a BAM path; a BAM mapped to another reference is refused; the same data under two names
for two samples or lanes, and a panel that holds its pair's tumor, are refused.
"""

from __future__ import annotations

import csv
import os
import re
from dataclasses import dataclass, field

import jsonschema
import yaml

from genomon_smk.plan.input_identity import Use, relation, repeated_use_message, repeated_uses, same_data
from genomon_smk.plan.regions import read_fai
from genomon_smk.fileio import GZIP_ERRORS, open_maybe_gzipped

# Names reach file paths and shell command lines: allow only characters that need no quoting.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
DEFAULT_PLATFORM = "ILLUMINA"
MAX_NAME_BYTES = 100
# Snakemake refuses a wildcard value that ends in 20 or more repeats of one piece (its
# PeriodicWildcardError, raised mid-plan without the sheet's line: a guard against a rule that
# matches its own output); a name is checked against the same rule here.
PERIODIC_END = re.compile(r"(?P<piece>.+?)(?P=piece){19,}$")
# The run-wide files and directories that share qc/ and sv/ with the samples' own directories
# (qc/{sample}/, sv/{sample}/; docs/outputs.md): a sample of such a name would collide with them.
LAYOUT_NAMES = {
    "multiqc_data": "qc/multiqc_data/",
    "multiqc_report.html": "qc/multiqc_report.html",
    "timeline": "qc/timeline/",
    "genomon_sv_mqc.tsv": "qc/genomon_sv_mqc.tsv",
    "genomon_sv_parse_mqc.tsv": "qc/genomon_sv_parse_mqc.tsv",
    "control_panel": "sv/control_panel/",
    "non_matched_control_panel": "sv/non_matched_control_panel/",
}


class InputError(Exception):
    """Bad user input; the message lists every problem, one per line."""


@dataclass(frozen=True)
class Where:
    """A place in an input file, for error messages."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Lane:
    sample: str
    fq1: str
    fq2: str
    platform: str
    library: str
    where: Where


@dataclass(frozen=True)
class Pair:
    tumor: str
    normal: str | None
    panel: str | None
    where: Where


@dataclass
class Cohort:
    lanes: dict[str, list[Lane]] = field(default_factory=dict)
    pairs: list[Pair] = field(default_factory=list)
    panels: dict[str, list[str]] = field(default_factory=dict)
    # Genomon's [bam_import]: samples whose final BAM exists (sample -> BAM); not mapped.
    imported: dict[str, str] = field(default_factory=dict)
    # Genomon's [bam_tofastq]: samples mapped from the reads of existing BAMs (sample -> BAMs).
    bam_sources: dict[str, list[str]] = field(default_factory=dict)
    # Where each imported or converted sample's BAM(s) were given, for messages.
    bam_where: dict[str, Where] = field(default_factory=dict)
    # Genomon's [qc] (or [summary]): the samples whose QC runs; None: every sample.
    qc_samples: list[str] | None = None
    qc_where: dict[str, Where] = field(default_factory=dict)
    # Where a Genomon sheet's [controlpanel] row defined each panel, for messages.
    panel_where: dict[str, Where] = field(default_factory=dict)
    # Genomon's [sv_detection]: the pairs whose SVs are detected.
    sv_pairs: list[Pair] = field(default_factory=list)
    # Samples whose rows were refused: their problem is reported there, not again where they are named.
    refused: set[str] = field(default_factory=set)

    @property
    def samples(self) -> list[str]:
        """Every sample: mapped from FASTQ, from a BAM's reads, or imported as a BAM."""
        return list(self.lanes) + list(self.bam_sources) + list(self.imported)

    @property
    def mapped_samples(self) -> list[str]:
        """The samples this run maps (split, map, markdup, merge bam)."""
        return list(self.lanes) + list(self.bam_sources)

    def read_group(self, sample: str) -> dict[str, str]:
        """The SAM read group of a sample: all its lanes share platform and library (checked)."""
        if sample not in self.lanes:  # [bam_tofastq]: Genomon's defaults
            return {"ID": sample, "SM": sample, "PL": DEFAULT_PLATFORM, "LB": sample}
        first = self.lanes[sample][0]
        return {"ID": sample, "SM": sample, "PL": first.platform, "LB": first.library}


class Problems:
    """Collects problems so that all of them are reported at once."""

    def __init__(self) -> None:
        self._found: list[tuple[str, int, str]] = []  # (file, line, message)

    def add(self, where: Where | str, text: str) -> None:
        path, line = (where.path, where.line) if isinstance(where, Where) else (str(where), 0)
        self._found.append((path, line, f"{where}: {text}"))

    def raise_if_any(self) -> None:
        """Raise with every problem, each file's in line order (files in the order first named)."""
        if self._found:
            rank = {path: index for index, path in enumerate(dict.fromkeys(path for path, _, _ in self._found))}
            ordered = sorted(self._found, key=lambda found: (rank[found[0]], found[1]))
            raise InputError("\n".join(message for _, _, message in ordered))


def name_problem(name: str) -> str | None:
    """Why `name` cannot be used as a sample or panel name, or None if it can."""
    if not name:
        return "is empty"
    if len(name.encode()) > MAX_NAME_BYTES:
        return (
            f"{name[:20]!r}... is {len(name.encode())} bytes long: names make file names (a job's work "
            f"directory joins a rule, a run key, a region and the name) that must fit the file "
            f"system's 255 bytes; use at most {MAX_NAME_BYTES}"
        )
    if name == "None":
        return "'None' means 'no sample' in a Genomon sheet and cannot name one"
    if ".." in name or not SAFE_NAME.match(name):
        return (
            f"{name!r} is not a safe name: use letters, digits, '.', '_' and '-' only "
            "(no spaces, '/', '..', quotes, '$', ';'), starting with a letter or digit"
        )
    if periodic := PERIODIC_END.search(name):
        return (
            f"{name!r} ends in {len(periodic.group(0)) // len(periodic.group('piece'))} repeats of "
            f"{periodic.group('piece')!r}: Snakemake refuses such a name in a file path (it takes it for a "
            "rule matching its own output); shorten the repeat below 20"
        )
    return None


def sample_name_problem(name: str) -> str | None:
    """Why `name` cannot name a sample: name_problem's reasons, or a name the output layout uses."""
    if name in LAYOUT_NAMES:
        return (
            f"{name!r} is taken by the output layout ({LAYOUT_NAMES[name]} beside the samples' "
            "directories, docs/outputs.md): rename the sample"
        )
    return name_problem(name)


def resolve(path: str, base: str | os.PathLike) -> str:
    """`path` made absolute against `base` (a directory) unless it already is."""
    expanded = os.path.expanduser(os.path.expandvars(path))
    return os.path.normpath(os.path.join(base, expanded))


def _read_tsv(
    path: str, schema: dict, problems: Problems, either: tuple[list[str], ...] = (), refused: list | None = None
):
    """Yield (Where, row dict) for each data row of a tab-separated table with a header line
    whose rows pass the JSON schema (a row's problems are reported and the row skipped, and
    added to `refused` when given). The header needs the schema's required columns and, given
    `either`, every column of one of those sets."""
    required = schema["required"]
    optional = [c for c in schema["properties"] if c not in required]
    validator = jsonschema.Draft202012Validator(schema)
    with open(path, newline="") as handle:
        lines = [(n, line) for n, line in enumerate(handle, start=1)]
    rows = [(n, line) for n, line in lines if line.strip() and not line.startswith("#")]
    if not rows:
        problems.add(Where(path, 1), f"no header line (expected columns: {', '.join(required)})")
        return
    header_line, header = rows[0][0], next(csv.reader([rows[0][1]], delimiter="\t"))
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if either and not any(all(c in header for c in columns) for columns in either):
        missing += [c for c in either[0] if c not in header]
    if missing:
        others = "".join(f"; or give {', '.join(columns)} instead" for columns in either[1:])
        if any(len(cell.split()) > 1 or "," in cell for cell in header):
            others += "; columns are separated by tabs, not spaces or commas"
        problems.add(
            Where(path, header_line),
            f"missing column(s): {', '.join(missing)} (header is: {', '.join(header)}){others}",
        )
        return
    unknown = [c for c in header if c not in required + optional]
    if unknown:
        problems.add(
            Where(path, header_line),
            f"unknown column(s): {', '.join(unknown)} (allowed: {', '.join(required + optional)})",
        )
    for number, line in rows[1:]:
        cells = [c.strip() for c in next(csv.reader([line.rstrip("\n")], delimiter="\t"))]
        if len(cells) > len(header):
            problems.add(Where(path, number), f"{len(cells)} cells but the header has {len(header)} columns")
            continue
        row = {column: cell for column, cell in zip(header, cells) if column in schema["properties"]}
        errors = list(validator.iter_errors(row))
        for error in errors:
            column = error.path[0] if error.path else None
            problems.add(Where(path, number), f"field '{column}': {error.message}" if column else error.message)
        if not errors:
            yield Where(path, number), row
        elif refused is not None:
            refused.append(row)


def read_samples(path: str, schema: dict, problems: Problems) -> Cohort:
    """The samples table: `sample fq1 fq2 [platform] [library]`, one row per lane; as an
    extension, a row may give `bam` instead of fq1 and fq2: an existing final BAM of the sample
    (Genomon's [bam_import]), one row per such sample."""
    cohort = Cohort()
    base = os.path.dirname(os.path.abspath(path))
    refused_rows: list[dict] = []
    for where, row in _read_tsv(path, schema, problems, either=(["fq1", "fq2"], ["bam"]), refused=refused_rows):
        sample = row["sample"]
        fq1, fq2, bam = (row.get(column) for column in ("fq1", "fq2", "bam"))
        first = cohort.bam_where.get(sample) or (cohort.lanes[sample][0].where if sample in cohort.lanes else None)
        if bam:
            if fq1 or fq2:
                problems.add(where, "field 'bam': a row gives fq1 and fq2 (a lane to map) or bam (the sample's final BAM), not both")
                cohort.refused.add(sample)
            elif first:
                problems.add(where, f"field 'sample': '{sample}' already has a row at {first}; an imported BAM is its sample's only row")
            else:
                cohort.imported[sample] = resolve(bam, base)
                cohort.bam_where[sample] = where
            continue
        if not (fq1 and fq2):
            column = "fq2" if fq1 else "fq1"
            problems.add(where, f"field '{column}': required (a lane has fq1 and fq2; an imported sample has bam instead)")
            cohort.refused.add(sample)
            continue
        if sample in cohort.imported:
            problems.add(where, f"field 'sample': '{sample}' is imported as a BAM at {first}: it has no FASTQ lanes")
            continue
        lane = Lane(
            sample=sample,
            fq1=resolve(fq1, base),
            fq2=resolve(fq2, base),
            platform=row.get("platform") or DEFAULT_PLATFORM,
            library=row.get("library") or sample,
            where=where,
        )
        cohort.lanes.setdefault(sample, []).append(lane)
    cohort.refused.update(row["sample"] for row in refused_rows if isinstance(row.get("sample"), str))
    return cohort


def read_pairs(path: str, schema: dict, problems: Problems) -> list[Pair]:
    """The pairs table: `tumor normal panel` (normal and panel may be empty)."""
    pairs = []
    for where, row in _read_tsv(path, schema, problems):
        pairs.append(Pair(row["tumor"], row.get("normal") or None, row.get("panel") or None, where))
    return pairs


GENOMON_SECTIONS = {"fastq", "bam_tofastq", "bam_import", "mutation_call", "sv_detection", "qc", "summary", "controlpanel"}
NONE_CELLS = {"", "None"}


def sheet_pair(cells: list[str], where: Where) -> Pair:
    """A [mutation_call] or [sv_detection] row: tumor, normal|None, panel|None."""
    tumor, normal, panel = (cells + ["", ""])[:3]
    return Pair(tumor, None if normal in NONE_CELLS else normal, None if panel in NONE_CELLS else panel, where)


def read_genomon_sheet(path: str, problems: Problems, platform: str = DEFAULT_PLATFORM) -> Cohort:
    """Genomon's classic sample sheet (.csv, or tab-separated .tsv/.txt), every DNA section:
    [fastq], [bam_tofastq], [bam_import], [mutation_call], [sv_detection], [qc] (or [summary])
    and [controlpanel]; `;` separates several files of one mate (or several BAMs)."""
    delimiter = "," if path.endswith(".csv") else "\t"
    base = os.path.dirname(os.path.abspath(path))
    cohort = Cohort()
    section = None
    defined: dict[str, Where] = {}  # sample IDs are unique across the three input sections

    def define(sample: str, where: Where) -> bool:
        if sample in defined:
            problems.add(where, f"sample '{sample}' is defined twice in [{section}] (first at {defined[sample]})")
            return False
        defined[sample] = where
        return True

    with open(path, newline="") as handle:
        for number, cells in enumerate(csv.reader(handle, delimiter=delimiter), start=1):
            where = Where(path, number)
            cells = [c.strip() for c in cells]
            while cells and not cells[-1]:
                cells.pop()
            if not cells or cells[0].startswith("#"):
                continue
            header = re.fullmatch(r"\[(\w+)\]", cells[0])
            if header and len(cells) == 1:
                section = header.group(1).lower()
                if section not in GENOMON_SECTIONS:
                    problems.add(where, f"unknown section [{section}] (Genomon's DNA sections: {', '.join(sorted(GENOMON_SECTIONS))})")
                elif section in ("qc", "summary") and cohort.qc_samples is None:
                    cohort.qc_samples = []
                continue
            if section == "fastq":
                if len(cells) != 3:
                    problems.add(where, f"[fastq] rows have 3 cells (sample, R1, R2), found {len(cells)}")
                    cohort.refused.add(cells[0])
                    continue
                sample, r1, r2 = cells
                if not define(sample, where):
                    continue
                r1s, r2s = r1.split(";"), r2.split(";")
                if len(r1s) != len(r2s):
                    problems.add(where, f"sample '{sample}': {len(r1s)} R1 file(s) but {len(r2s)} R2 file(s)")
                    cohort.refused.add(sample)
                    continue
                cohort.lanes[sample] = [
                    Lane(sample, resolve(a, base), resolve(b, base), platform, sample, where) for a, b in zip(r1s, r2s)
                ]
            elif section in ("bam_import", "bam_tofastq"):
                if len(cells) != 2:
                    problems.add(where, f"[{section}] rows have 2 cells (sample, BAM), found {len(cells)}")
                    cohort.refused.add(cells[0])
                elif define(cells[0], where):
                    cohort.bam_where[cells[0]] = where
                    if section == "bam_import":
                        cohort.imported[cells[0]] = resolve(cells[1], base)
                    else:
                        cohort.bam_sources[cells[0]] = [resolve(bam, base) for bam in cells[1].split(";")]
            elif section == "mutation_call":
                cohort.pairs.append(sheet_pair(cells, where))
            elif section == "sv_detection":
                cohort.sv_pairs.append(sheet_pair(cells, where))
            elif section in ("qc", "summary"):
                # One sample per line in Genomon's sheets; a sample named twice gets its QC once.
                for sample in cells:
                    if sample not in cohort.qc_where:
                        cohort.qc_samples.append(sample)
                        cohort.qc_where[sample] = where
            elif section == "controlpanel":
                if len(cells) < 2:
                    problems.add(where, "[controlpanel] rows name a panel and at least one sample")
                    continue
                if cells[0] in cohort.panels:
                    problems.add(where, f"panel '{cells[0]}' is defined twice")
                cohort.panels[cells[0]] = [resolve(m, base) if is_bam_path(m) else m for m in cells[1:]]
                cohort.panel_where[cells[0]] = where
            elif section is None:
                problems.add(where, "data before the first [section] line")
    return cohort


def is_bam_path(member: str) -> bool:
    """Panel members are sample names, or existing BAMs of samples mapped elsewhere."""
    return member.endswith(".bam")


def bam_contigs(path: str) -> list[tuple[str, int]]:
    """(name, length) of every @SQ line of a BAM's header (reads only the header)."""
    import pysam  # only when a panel names BAMs: the rest of this module needs no htslib

    with pysam.AlignmentFile(path, "rb", check_sq=False) as bam:
        return list(zip(bam.references, bam.lengths))


def bam_read_group_samples(path: str) -> list[str]:
    """The SM of every @RG line of a BAM's header (reads only the header)."""
    import pysam

    with pysam.AlignmentFile(path, "rb", check_sq=False) as bam:
        return [group.get("SM", "") for group in bam.header.to_dict().get("RG", [])]


def imported_name_warnings(cohort: Cohort) -> list[str]:
    """A warning for each imported BAM whose read groups name other samples than the name it is
    given here: the results (VCF columns, file names) use the name given here."""
    warnings = []
    for sample, bam in cohort.imported.items():
        try:
            named = sorted(set(bam_read_group_samples(bam)))
        except (OSError, ValueError):
            continue  # unreadable BAMs are refused by bam_problems
        if named and sample not in named:
            warnings.append(
                f"warning: {cohort.bam_where[sample]}: the imported BAM of '{sample}' names the sample(s) "
                f"{', '.join(repr(name) for name in named)} in its read groups; the results call it "
                f"'{sample}' (check that the row names the right BAM)"
            )
    return warnings


def few(names: list[str], shown: int = 3) -> str:
    """The first names of a list, and how many more there are."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def reference_differences(bam: list[tuple[str, int]], reference: list[tuple[str, int]]) -> list[str]:
    """How a BAM's contigs differ from the reference's by name and length (order may differ:
    every tool reads the BAMs by contig name)."""
    bam_lengths, ref_lengths = dict(bam), dict(reference)
    differences = []
    missing = [name for name, _ in reference if name not in bam_lengths]
    if missing:
        differences.append(f"reference contig(s) not in the BAM: {few(missing)}")
    extra = [name for name, _ in bam if name not in ref_lengths]
    if extra:
        differences.append(f"BAM contig(s) not in the reference: {few(extra)}")
    other_length = [
        f"{name} (BAM {length} bp, reference {ref_lengths[name]} bp)"
        for name, length in bam
        if name in ref_lengths and ref_lengths[name] != length
    ]
    if other_length:
        differences.append(f"contig lengths differ: {few(other_length)}")
    return differences


def bam_problems(path: str, reference: tuple[str, list[tuple[str, int]]] | None = None) -> list[str]:
    """Why a control-panel BAM cannot be used: missing, no index, or (given the reference's .fai
    path and contigs) mapped to another reference. Reads only the BAM header, so it is cheap at
    parse time."""
    if not os.path.isfile(path):
        return [f"BAM not found: {path}"]
    problems = []
    if not any(os.path.isfile(index) for index in (path + ".bai", path[: -len(".bam")] + ".bai")):
        problems.append(f"BAM has no index (.bam.bai or .bai): {path}; build it with: samtools index {path}")
    if reference:
        reference_fai, reference_contigs = reference
        try:
            contigs = bam_contigs(path)
        except (OSError, ValueError) as error:
            return problems + [f"cannot read the BAM header of {path}: {error}"]
        differences = reference_differences(contigs, reference_contigs)
        if differences:
            problems.append(
                f"BAM {path} was mapped to another reference (its header's contigs differ from "
                f"{reference_fai}): {'; '.join(differences)}"
            )
    return problems


def fastq_problem(path: str) -> str | None:
    """Why a FASTQ cannot be read, or None. Its content is checked record by record by the split."""
    if not os.path.exists(path):
        return f"file not found: {path}"
    if not os.path.isfile(path):
        return f"not a regular file: {path}"
    if not os.access(path, os.R_OK):
        return f"file not readable: {path}"
    if not first_line(path):
        return f"holds no reads: {path}"
    return None


def first_line(path: str) -> bytes:
    """The first line of a (gzipped or plain) file; b'' when it has none or cannot be read."""
    try:
        with open_maybe_gzipped(path) as handle:
            return handle.readline(4096)
    except (OSError, *GZIP_ERRORS):
        return b""


def check_cohort(
    cohort: Cohort,
    problems: Problems,
    panels_where: str = "control_panels",
    reference: tuple[str, list[tuple[str, int]]] | None = None,
    samples_where: str = "the samples table",
) -> None:
    """Checks a schema cannot express: safe unique names, known references, readable distinct
    files, panel BAMs indexed and mapped to the reference (when its .fai and contigs are given)."""
    for sample, lanes in cohort.lanes.items():
        first = lanes[0]
        problem = sample_name_problem(sample)
        if problem:
            problems.add(first.where, f"field 'sample': {problem}")
        for lane in lanes:
            for column in ("platform", "library"):
                if column == "library" and lane.library == sample:
                    continue  # the default, the sample's name: checked above
                problem = name_problem(getattr(lane, column))
                if problem:
                    problems.add(lane.where, f"field '{column}': {problem}")
            if (lane.platform, lane.library) != (first.platform, first.library):
                problems.add(
                    lane.where,
                    f"sample '{sample}': every lane needs the same platform and library "
                    f"(first lane at {first.where} has {first.platform}/{first.library})",
                )
            for column, fastq in (("fq1", lane.fq1), ("fq2", lane.fq2)):
                if column == "fq2" and fastq == lane.fq1:
                    continue  # reported once, by the check of the data every sample reads
                problem = fastq_problem(fastq)
                if problem:
                    problems.add(lane.where, f"field '{column}': {problem}")
    for panel, members in cohort.panels.items():
        where = cohort.panel_where.get(panel, panels_where)
        problem = name_problem(panel)
        if problem:
            problems.add(where, f"panel name: {problem}")
        for member in members:
            if is_bam_path(member):
                for problem in bam_problems(member, reference):
                    problems.add(where, f"panel '{panel}': {problem}")
            elif member not in cohort.samples and member not in cohort.refused:
                problems.add(where, f"panel '{panel}' names unknown sample '{member}'")
        if len(set(members)) != len(members):
            problems.add(where, f"panel '{panel}' names a sample twice")
    known = set(cohort.samples)
    # Samples whose rows were refused count as known below: their problem is reported at the row.
    named = known | cohort.refused
    for sample, bam in cohort.imported.items():
        where = cohort.bam_where[sample]
        problem = sample_name_problem(sample)
        if problem:
            problems.add(where, f"field 'sample': {problem}")
        for problem in bam_problems(bam, reference):
            problems.add(where, f"field 'bam': {problem}")
    for sample, bams in cohort.bam_sources.items():
        where = cohort.bam_where[sample]
        problem = sample_name_problem(sample)
        if problem:
            problems.add(where, f"field 'sample': {problem}")
        for bam in bams:
            if not os.path.isfile(bam) or not os.access(bam, os.R_OK):
                problems.add(where, f"field 'bam': BAM not found or not readable: {bam}")
    for use, earlier, how in repeated_uses(sample_inputs(cohort)):
        problems.add(use.where, repeated_use_message(use, earlier, how))
    for pair in cohort.pairs + cohort.sv_pairs:
        for problem in panel_tumor_problems(cohort, pair):
            problems.add(pair.where, problem)
    for sample in cohort.qc_samples or []:
        if sample not in named:
            problems.add(cohort.qc_where[sample], f"[qc] names unknown sample '{sample}'")
    check_pairs(cohort.pairs, named, cohort.panels, problems, samples_where)
    check_pairs(cohort.sv_pairs, named, cohort.panels, problems, samples_where)


def sample_inputs(cohort: Cohort) -> list[Use]:
    """Every file a sample's reads come from, in the sheet's order: two samples (or two lanes)
    may not read the same data, whatever its names."""
    uses = [
        Use(path, lane.where, column)
        for lanes in cohort.lanes.values()
        for lane in lanes
        for column, path in (("fq1", lane.fq1), ("fq2", lane.fq2))
    ]
    uses += [Use(bam, cohort.bam_where[sample], "bam") for sample, bams in cohort.bam_sources.items() for bam in bams]
    uses += [Use(bam, cohort.bam_where[sample], "bam") for sample, bam in cohort.imported.items()]
    return sorted(uses, key=lambda use: (use.where.path, use.where.line))


def sample_data(cohort: Cohort, sample: str) -> list[str]:
    """The BAMs a sample's reads come from ([bam_import], [bam_tofastq]); none for FASTQ samples."""
    return ([cohort.imported[sample]] if sample in cohort.imported else []) + cohort.bam_sources.get(sample, [])


def panel_tumor_problems(cohort: Cohort, pair: Pair) -> list[str]:
    """A panel member that is the pair's tumor, by name or as a BAM that holds the tumor's data:
    EBFilter and GenomonSV would take the tumor's own mutations for panel noise and filter out
    every call (a run that succeeds with no calls)."""
    problems = []
    for member in cohort.panels.get(pair.panel, []) if pair.panel else []:
        if member == pair.tumor:
            problems.append(f"panel '{pair.panel}' holds the pair's own tumor '{pair.tumor}': its mutations would be filtered out as panel noise")
            continue
        for data in sample_data(cohort, pair.tumor) if is_bam_path(member) else []:
            how = same_data(member, data)
            if how:
                problems.append(
                    f"panel '{pair.panel}': {member} is {relation(how)} {data}, the data of the pair's tumor "
                    f"'{pair.tumor}' (at {cohort.bam_where[pair.tumor]}): its mutations would be filtered out as panel noise"
                )
    return problems


def panel_normal_warnings(cohort: Cohort) -> list[str]:
    """A warning for each panel BAM that holds the data of its pair's normal under another name:
    Genomon's panels may hold the cohort's normals (GenomonSV filt then ignores the matched
    normal by its name), but under another name the normal's reads count as panel noise."""
    warnings = []
    for pair in cohort.pairs + cohort.sv_pairs:
        if not (pair.panel and pair.normal):
            continue
        for member in filter(is_bam_path, cohort.panels.get(pair.panel, [])):
            for data in sample_data(cohort, pair.normal):
                how = same_data(member, data)
                if how:
                    warnings.append(
                        f"warning: {pair.where}: panel '{pair.panel}': {member} is {relation(how)} {data}, the data of the "
                        f"pair's normal '{pair.normal}': the normal's reads of the tumor's mutations count as panel noise"
                    )
    return list(dict.fromkeys(warnings))


def check_pairs(pairs: list[Pair], known: set[str], panels: dict, problems: Problems, samples_where: str) -> None:
    """Tumors unique, samples and panels known, tumor and normal distinct."""
    tumors: dict[str, Where] = {}
    for pair in pairs:
        if pair.tumor in tumors:
            problems.add(pair.where, f"tumor '{pair.tumor}' already has a row at {tumors[pair.tumor]}")
        tumors[pair.tumor] = pair.where
        for column, sample in (("tumor", pair.tumor), ("normal", pair.normal)):
            if sample is not None and sample not in known:
                problems.add(pair.where, f"field '{column}': unknown sample '{sample}' (not in {samples_where})")
        if pair.normal is not None and pair.normal == pair.tumor:
            problems.add(pair.where, "tumor and normal are the same sample")
        if pair.panel is not None and pair.panel not in panels:
            problems.add(pair.where, f"field 'panel': unknown control panel '{pair.panel}'")


def load_cohort(
    schema_dir: str,
    samples: str | None = None,
    pairs: str | None = None,
    control_panels: dict[str, list[str]] | None = None,
    genomon_sample_sheet: str | None = None,
    panel_base: str = ".",
    reference_fai: str | None = None,
    reference_contigs: list[tuple[str, int]] | None = None,
    check_files: bool = True,
) -> Cohort:
    """Read and check the cohort from either input form; raise InputError listing every problem.
    Panel BAM paths in control_panels resolve against panel_base (the config file's directory);
    given the reference's .fai, panel BAMs must have been mapped to that reference (its contigs:
    reference_contigs, else read from the .fai; a reference still to be built has no .fai yet).
    check_files=False skips the checks beyond the tables themselves (the files, names, panels:
    check_cohort), for a job's own Snakemake after the main process made them."""
    problems = Problems()
    if genomon_sample_sheet:
        if samples or pairs or control_panels:
            raise InputError("config: give either genomon_sample_sheet or samples/pairs/control_panels, not both")
        if not os.path.isfile(genomon_sample_sheet):
            raise InputError(f"config: genomon_sample_sheet: file not found: {genomon_sample_sheet}")
        cohort = read_genomon_sheet(genomon_sample_sheet, problems)
        panels_where = genomon_sample_sheet
        samples_where = "the sheet's [fastq], [bam_tofastq] or [bam_import] sections"
    else:
        if not samples:
            raise InputError("config: 'samples' (or 'genomon_sample_sheet') is required")
        for key, path in (("samples", samples), ("pairs", pairs)):
            if path and not os.path.isfile(path):
                raise InputError(f"config: {key}: file not found: {path}")
        cohort = read_samples(samples, load_schema(schema_dir, "samples"), problems)
        if pairs:
            cohort.pairs = read_pairs(pairs, load_schema(schema_dir, "pairs"), problems)
        cohort.panels = {
            name: [resolve(m, panel_base) if is_bam_path(m) else m for m in members]
            for name, members in (control_panels or {}).items()
        }
        panels_where = "config: control_panels"
        samples_where = "the samples table"
    reference = None
    if reference_fai and check_files:
        reference = (reference_fai, reference_contigs if reference_contigs is not None else read_fai(reference_fai))
    if check_files:
        check_cohort(cohort, problems, panels_where, reference, samples_where)
    problems.raise_if_any()
    return cohort


#: libyaml's parser where PyYAML has it (the same documents, about 8x faster: the config schema
#: is read at every snakemake start)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_schema(schema_dir: str, table: str) -> dict:
    with open(os.path.join(schema_dir, f"{table}.schema.yaml")) as handle:
        return yaml.load(handle, Loader=SAFE_LOADER)


def schema_as_json(schema: dict, yaml_path: str, cache_dir: str) -> str:
    """A JSON copy of a loaded YAML schema, in cache_dir under the YAML file's digest, for
    Snakemake's `validate`: it reads a JSON file with json and a YAML one with PyYAML's pure
    Python parser (0.04 s for the config schema at every start). The YAML path where the copy
    cannot be written."""
    import hashlib
    import json
    import tempfile

    with open(yaml_path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()[:16]
    name = os.path.basename(yaml_path).removesuffix(".yaml")
    path = os.path.join(cache_dir, f"{name}.{digest}.json")
    if os.path.exists(path):
        return path
    try:
        text = json.dumps(schema)
        if json.loads(text) != schema:  # a YAML value JSON has not (a date, a set)
            return yaml_path
        os.makedirs(cache_dir, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=cache_dir, delete=False, prefix=f".{name}.") as handle:
            handle.write(text)
        os.replace(handle.name, path)
    except (OSError, TypeError, ValueError):
        return yaml_path
    return path
