"""What the set-up rules (workflow/rules/reference.smk) build into resources/, planned at parse time.

A reference given with its .fai and bwa index beside it is used in place. Anything else (a bare,
gzipped or bgzipped FASTA, or several FASTAs to concatenate, e.g. a genome and its decoy and virus
sequences) is built once into `resources/reference/<name>-<key>/`: one uncompressed FASTA, its
.fai and its bwa index. A UCSC simpleRepeat table is built into `resources/simple_repeat/...`
(bin column cut, sorted, bgzipped, tabix-indexed); a prepared one (with its .tbi) is used in place.

The key is a digest of the inputs' paths, sizes and modification times (a stat each, so planning
stays cheap): another run, cohort or output directory finds the same directory and reuses what
is there, and a changed input names a new directory, which is built afresh.

Several projects may name one resources_dir, and Snakemake removes a job's existing outputs
before it runs the job: a second project whose set-up jobs were planned before the first built
the files would remove them under the first's readers and build them again (issue 34). So the
shared files are never a job's output. A project that finds a build complete (and has no links of
its own to it) reads it in place, with no set-up job. A project that plans before the build is
complete gets its own links to it (`<output_dir>/reference/<name>-<key>/...`): those are its
set-up jobs' outputs, and each job builds the shared files, if another run has not meanwhile,
under a lock in the build directory, each file written beside and renamed when whole
(workflow/scripts/build-shared.sh), then links them. The project keeps its links on later runs
(its jobs' inputs do not change).

The DAG needs the contigs at parse time (regions, chunks). They come from the .fai when it exists
(in place, or once built); until then the sources are streamed without writing anything (350 Mb/s
plain, measured on GRCh37 chr20; gzipped 85 Mb/s with the gzip module, and ISA-L's reader, used
here, reads the bench genome 1.8x as fast): a human genome costs each planning of a run, dry runs
included, about 20 s gzipped or 10 s plain until its set-up job has built the .fai.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass


from genomon_smk.fileio import open_maybe_gzipped
from genomon_smk.plan.reference import BWA_INDEX_SUFFIXES
from genomon_smk.plan.regions import read_fai

# Bumped when what the set-up rules build changes, so that older builds are not reused.
BUILD_VERSION = 1
BLOCK = 1 << 22
FASTA_SUFFIXES = (".gz", ".bgz", ".fa", ".fasta", ".fna", ".txt")
# A UCSC simpleRepeat.txt row: bin, chrom, chromStart, chromEnd, name, period, copyNum,
# consensusSize, perMatch, perIndel, score, A, C, G, T, entropy, sequence.
UCSC_SIMPLE_REPEAT_FIELDS = 17


def input_key(paths: list[str]) -> str:
    """12 hex digits naming the build of these inputs: their paths, sizes and modification times
    (a missing input is refused later, by the checks that name it)."""
    stats = []
    for path in paths:
        try:
            found = os.stat(path)
            stats.append([os.path.realpath(path), found.st_size, found.st_mtime_ns])
        except OSError:
            stats.append([os.path.realpath(path)])
    return hashlib.sha256(json.dumps([BUILD_VERSION, stats]).encode()).hexdigest()[:12]


def stem(path: str) -> str:
    """A file's name without its compression and format suffixes: hs37d5.fa.gz -> hs37d5."""
    name = os.path.basename(path)
    while (suffix := next((s for s in FASTA_SUFFIXES if name.endswith(s) and name != s), None)) is not None:
        name = name[: -len(suffix)]
    return name


def fasta_contigs(paths: list[str]) -> list[tuple[str, int]]:
    """(name, length) of every sequence of the FASTAs, in order, read as a stream: bases are the
    bytes between header lines other than line ends and blanks (what samtools faidx counts)."""
    contigs: list[tuple[str, int]] = []
    for path in paths:
        with open_maybe_gzipped(path) as handle:
            contigs += stream_contigs(handle, path)
    return contigs


def stream_contigs(handle, path: str) -> list[tuple[str, int]]:
    contigs: list[tuple[str, int]] = []
    header: bytes | None = None  # the header line being read, across blocks
    line_start = True
    for block in iter(lambda: handle.read(BLOCK), b""):
        position = 0
        while position < len(block):
            if header is not None:
                end = block.find(b"\n", position)
                header += block[position:] if end < 0 else block[position:end]
                if end < 0:
                    break
                name = header.split()[0].decode() if header.split() else ""
                if not name:
                    raise ValueError(f"{path}: a '>' line without a sequence name")
                contigs.append((name, 0))
                header, position, line_start = None, end + 1, True
                continue
            if line_start and block[position] == ord(">"):
                header, position = b"", position + 1
                continue
            end = block.find(b"\n>", position)
            piece = block[position:] if end < 0 else block[position : end + 1]
            bases = len(piece.translate(None, b" \t\r\n"))
            if bases and not contigs:
                raise ValueError(f"{path}: not a FASTA file (sequence before the first '>' header line)")
            if bases:
                contigs[-1] = (contigs[-1][0], contigs[-1][1] + bases)
            position += len(piece)
            line_start = piece.endswith(b"\n")
    if header is not None:
        raise ValueError(f"{path}: ends inside a '>' header line")
    if not contigs:
        raise ValueError(f"{path}: no '>' header line: not a FASTA file")
    return contigs


def is_indexed(fasta: str) -> bool:
    """A FASTA with its .fai and every bwa index file beside it: used in place."""
    return all(os.path.isfile(fasta + suffix) for suffix in (".fai", *BWA_INDEX_SUFFIXES))


@dataclass(frozen=True)
class ReferencePlan:
    """The reference jobs read (`fasta`), the user's FASTAs it comes from, and whether the set-up
    rules build it (into `fasta`'s directory under resources/) or it is used in place."""

    fasta: str
    sources: tuple[str, ...]
    built: bool
    # The built files in resources_dir, when `fasta` is the project's link to them (`built`).
    shared: str = ""

    @property
    def fai(self) -> str:
        return self.fasta + ".fai"

    @property
    def link_directory(self) -> str | None:
        """The project's directory of links to the shared build, when it reads through them."""
        return os.path.dirname(self.fasta) if self.built and self.shared else None

    @property
    def bwa_index(self) -> list[str]:
        return [self.fasta + suffix for suffix in BWA_INDEX_SUFFIXES]


def plan_reference(sources: list[str], resources_dir: str, link_dir: str | None = None) -> ReferencePlan:
    """One indexed FASTA: in place. Otherwise the FASTA(s) concatenated, uncompressed and indexed
    in resources/reference/<first FASTA's name>-<key>/<name>.fa; with link_dir (the project's
    output directory), read in place once complete, else through the project's links in
    link_dir/reference/<name>-<key>/ (module docstring)."""
    if len(sources) == 1 and is_indexed(sources[0]):
        return ReferencePlan(sources[0], tuple(sources), built=False)
    name = stem(sources[0])
    build = f"reference/{name}-{input_key(sources)}"
    shared = f"{resources_dir}/{build}/{name}.fa"
    if link_dir is None:
        return ReferencePlan(shared, tuple(sources), built=True)
    link = f"{link_dir}/{build}/{name}.fa"
    if shared_in_place([shared, *reference_index_files(shared)], [link, *reference_index_files(link)]):
        return ReferencePlan(shared, tuple(sources), built=False, shared=shared)
    return ReferencePlan(link, tuple(sources), built=True, shared=shared)


def reference_index_files(fasta: str) -> list[str]:
    return [fasta + ".fai"] + [fasta + suffix for suffix in BWA_INDEX_SUFFIXES]


def shared_in_place(shared: list[str], links: list[str]) -> bool:
    """Whether a project reads a shared build in place: it is complete, and the project has no
    directory for links to it (a project that planned before it was complete keeps its links:
    the run makes their directory at its start (rules/hooks.smk, keep_setup_links), so a
    cluster job's own parse after the build completed still finds the rule it runs)."""
    return all(os.path.isfile(path) for path in shared) and not (
        os.path.isdir(os.path.dirname(links[0])) or any(os.path.lexists(path) for path in links))


def reference_contigs(plan: ReferencePlan) -> list[tuple[str, int]]:
    """The reference's contigs: from its .fai once there is one (the project's link, or the
    shared build's), else streamed from its sources (a built reference before its first set-up
    job); names must be unique."""
    for fai in (plan.fai, plan.shared + ".fai" if plan.shared else None):
        if fai and os.path.isfile(fai):
            return read_fai(fai)
    missing = [path for path in plan.sources if not os.path.isfile(path)]
    if missing:
        raise ValueError("\n".join(f"reference: file not found: {path}" for path in missing))
    contigs = fasta_contigs(list(plan.sources))
    repeated = sorted(name for name, count in Counter(name for name, _ in contigs).items() if count > 1)
    if repeated:
        raise ValueError(f"reference: sequence names occur more than once in {', '.join(plan.sources)}: "
                         f"{', '.join(repeated[:10])}")
    return contigs


def estimated_build_bytes(contigs: list[tuple[str, int]]) -> dict[str, int]:
    """Bytes the reference set-up writes for a genome of these contigs: the FASTA (60 bases a
    line), its .fai, and bwa's index (.bwt about 1, .sa 0.5, .pac 0.25 byte per base)."""
    bases = sum(length for _, length in contigs)
    return {
        "reference_fasta": bases + bases // 60 + sum(len(name) + 2 for name, _ in contigs),
        "reference_fai": 40 * len(contigs),
        "reference_bwa_index": int(1.75 * bases) + 100 * len(contigs),
    }


@dataclass(frozen=True)
class SimpleRepeatPlan:
    """The simple-repeat database jobs read, the table it comes from and whether it is built."""

    db: str
    source: str
    built: bool
    shared: str = ""  # the built database in resources_dir, when `db` is the project's link to it

    @property
    def files(self) -> list[str]:
        return [self.db, self.db + ".tbi"]

    @property
    def link_directory(self) -> str | None:
        """The project's directory of links to the shared build, when it reads through them."""
        return os.path.dirname(self.db) if self.built and self.shared else None


def plan_simple_repeat(source: str, resources_dir: str, link_dir: str | None = None) -> SimpleRepeatPlan:
    """A tabix-indexed database (a .tbi beside it): in place. A UCSC simpleRepeat table (with its
    bin column, plain or gzipped): built into resources/simple_repeat/<name>-<key>/ (with
    link_dir, read in place or through the project's links, as plan_reference's)."""
    if os.path.isfile(source + ".tbi"):
        return SimpleRepeatPlan(source, source, built=False)
    build = f"simple_repeat/{stem(source)}-{input_key([source])}"
    shared = f"{resources_dir}/{build}/simpleRepeat.bed.gz"
    if link_dir is None:
        return SimpleRepeatPlan(shared, source, built=True)
    link = f"{link_dir}/{build}/simpleRepeat.bed.gz"
    if shared_in_place([shared, shared + ".tbi"], [link, link + ".tbi"]):
        return SimpleRepeatPlan(shared, source, built=False, shared=shared)
    return SimpleRepeatPlan(link, source, built=True, shared=shared)


def setup_outputs(reference: ReferencePlan, simple_repeat: SimpleRepeatPlan | None) -> dict[str, list[str]]:
    """The files each set-up rule writes, for those with something to build (rule: files)."""
    outputs = {}
    if reference.built:
        outputs |= {
            "reference_fasta": [reference.fasta],
            "reference_fai": [reference.fai],
            "reference_bwa_index": reference.bwa_index,
        }
    if simple_repeat and simple_repeat.built:
        outputs["simple_repeat_db"] = simple_repeat.files
    return outputs


def simple_repeat_problems(source: str) -> list[str]:
    """Why a simple_repeat_db without a .tbi is not a UCSC simpleRepeat table, or []."""
    if not os.path.isfile(source):
        return [f"simple_repeat_db: file not found: {source}"]
    with open_maybe_gzipped(source) as handle:
        first = next((line for line in handle if line.strip() and not line.startswith(b"#")), b"")
    fields = first.rstrip(b"\r\n").split(b"\t")
    if len(fields) == UCSC_SIMPLE_REPEAT_FIELDS and all(f.isdigit() for f in (fields[0], fields[2], fields[3])):
        return []
    return [
        f"simple_repeat_db: {source} is neither a tabix-indexed database (no {source}.tbi) nor a UCSC "
        f"simpleRepeat table (its first row has {len(fields)} tab-separated fields, a UCSC row "
        f"{UCSC_SIMPLE_REPEAT_FIELDS}: bin, chrom, chromStart, chromEnd, ..., sequence)"
    ]


def ucsc_row_problem(fields: list[str], where: str) -> str | None:
    """What is wrong with one row of a UCSC simpleRepeat table (`where`: file:line), or None."""
    if len(fields) != UCSC_SIMPLE_REPEAT_FIELDS:
        return f"{where}: {len(fields)} tab-separated fields, a UCSC simpleRepeat row has {UCSC_SIMPLE_REPEAT_FIELDS}"
    start, end = fields[2], fields[3]
    if not (start.isdigit() and end.isdigit()):
        return f"{where}: chromStart and chromEnd must be whole numbers, not {start!r} and {end!r}"
    if int(start) > int(end):
        return f"{where}: chromStart {start} is after chromEnd {end}"
    return None


def ucsc_rows(source: str) -> list[list[str]]:
    """The table's rows (bin column included), each checked; ValueError names the first bad line."""
    rows = []
    with open_maybe_gzipped(source) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip() or line.startswith(b"#"):
                continue
            fields = line.decode(errors="replace").rstrip("\r\n").split("\t")
            problem = ucsc_row_problem(fields, f"{source}:{number}")
            if problem:
                raise ValueError(problem)
            rows.append(fields)
    return rows


def simple_repeat_table_problems(source: str, contigs: list[tuple[str, int]]) -> list[str]:
    """Problems of a whole UCSC table about to be built: a bad row, or contig names of which
    none is a reference contig as mutfilter simplerepeat looks them up (`chr` + name, or the
    name): every simple-repeat column would be `---`."""
    try:
        rows = ucsc_rows(source)
    except ValueError as error:
        return [f"simple_repeat_db: {error}"]
    names = {row[1] for row in rows}
    if any(candidate in names for contig, _ in contigs for candidate in (f"chr{contig}", contig)):
        return []
    return [
        f"simple_repeat_db: none of the contigs of {source} ({', '.join(sorted(names)[:5]) or 'no rows'}"
        f"{', ...' if len(names) > 5 else ''}) is a reference contig ({', '.join(c for c, _ in contigs[:5])}"
        f"{', ...' if len(contigs) > 5 else ''}): is it the table of another genome build?"
    ]
