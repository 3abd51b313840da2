"""SV detection's paths and commands (rules/sv.smk; its post-analysis tables are in paths.smk):
Genomon's SV tools, the files of its stage, the options of filt, its wildcards."""

# SV detection (rules/sv.smk): Genomon's SV tools, the files of its stage, the options of filt.
SV_DIR = f"{OUTPUT_DIR}/sv"
# (SV_TOOLS_DIR, the checkout's .venv-sv/bin: tiers.smk, whose shell prefix names it to the jobs.)
# What GenomonSV parse writes and filt reads, after its prefix.
SV_PARSE_SUFFIXES = {
    "junction": ".junction.clustered.bedpe.gz",
    "junction_tbi": ".junction.clustered.bedpe.gz.tbi",
    "improper": ".improper.clustered.bedpe.gz",
    "improper_tbi": ".improper.clustered.bedpe.gz.tbi",
}
# Since pysam 0.24, pysam.faidx prints instead of returning: GenomonSV filt then finds no SV
# and exits 0. Checked with the tools' own python before filt runs.
SV_PYSAM_CHECK = (
    "import pysam, sys; old = tuple(map(int, pysam.__version__.split('.')[:2])) < (0, 24); "
    "sys.exit(0 if old else 'GenomonSV 0.8.2 needs pysam < 0.24 (its realignment finds no SV with "
    "pysam %s): run bin/install, or use envs/sv.yaml' % pysam.__version__)"
)


def sv_tool(name):
    """A command of Genomon's SV tools: from .venv-sv/bin, or the conda env's PATH."""
    if CONDA:
        return name
    path = SV_TOOLS_DIR / name
    if SV_PAIRS and not path.exists():
        raise WorkflowError(
            f"SV detection: {path} not found: run bin/install (it installs Genomon's SV tools "
            "in .venv-sv/), or run with --sdm conda (envs/sv.yaml)"
        )
    # $genomon_sv_bin: the shell prefix's (tiers.smk); no checkout path in params.
    return f'"$genomon_sv_bin"/{name}'


def sv_prefix(name):
    """Genomon's prefix of a sample's SV files: sv/{name}/{name}."""
    return f"{SV_DIR}/{name}/{name}"


def sv_parsed_bam(name):
    """The BAM GenomonSV parse reads for a name of SV_PARSED (a sample's final BAM, or a panel's BAM)."""
    member = SV_PARSED[name]
    return member if member.endswith(".bam") else final_bam(member)


def sv_parse_files(name):
    return {
        key: f"{sv_prefix(name)}{suffix}" for key, suffix in SV_PARSE_SUFFIXES.items()
    }


def sv_result(tumor, suffix):
    return f"{sv_prefix(tumor)}.genomonSV.result{suffix}"


def sv_summary_file(tumor, suffix):
    """A file of the SV summary of a tumor (sv_summary makes them): counts .tsv, plot .png."""
    return f"{sv_prefix(tumor)}.genomonSV.summary{suffix}"


def sv_filt_inputs(wildcards):
    """sv_filt's inputs: the tumor's BAM and parse files, the matched normal's BAM, the panel's
    merged junctions (the last two when the pair has them)."""
    pair = SV_PAIRS[wildcards.sv_tumor]
    files = {
        "tumor": final_bam(pair.tumor),
        "tumor_bai": final_bam(pair.tumor, ".bai"),
        **sv_parse_files(pair.tumor),
    }
    if pair.normal:
        files["normal"] = final_bam(pair.normal)
        files["normal_bai"] = final_bam(pair.normal, ".bai")
    if pair.panel:
        files["panel"] = rules.sv_merge_control.output.merged.format(panel=pair.panel)
    return files


def sv_filt_controls(wildcards, input):
    """GenomonSV filt's control options, as Genomon passes them: the matched normal's BAM, the
    panel's merged junctions and, with both, the normal's label (its own junctions in the panel
    do not count against the tumor)."""
    pair = SV_PAIRS[wildcards.sv_tumor]
    options = []
    if pair.normal:
        options += ["--matched_control_bam", input.normal]
    if pair.panel:
        options += ["--non_matched_control_junction", input.panel]
        if pair.normal:
            options += ["--matched_control_label", sv_name(pair.normal)]
    return shlex.join(options)


SV_ANNOTATION = " ".join(
    ["--genome_id", config["sv_filt"]["genome_id"]]
    + (["--grc"] if config["sv_filt"]["grc"] else [])
)


wildcard_constraints:
    sv_sample=one_of(SV_PARSED),
    sv_tumor=one_of(SV_PAIRS),
    panel=one_of(SV_PANELS),
