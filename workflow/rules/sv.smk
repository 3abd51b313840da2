"""SV detection as Genomon does it: GenomonSV parse per sample (tumors, normals, panel members;
once each however many pairs use it), GenomonSV merge of each control panel's junctions,
GenomonSV filt per pair (tumor-only pairs too) under Genomon's meta lines, sv_utils filter, and
the filtered calls as a VCF of breakend records.

Genomon's SV tools run from their own venv (.venv-sv/, bin/install) or, with --sdm conda,
envs/sv.yaml: GenomonSV 0.8.2 needs pysam < 0.24, which sv_filt checks before it runs.
"""

SV_DIR = f"{OUTPUT_DIR}/sv"
SV_TOOLS_DIR = Path(workflow.basedir).parent / ".venv-sv" / "bin"
SV_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
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
    "pysam ' + pysam.__version__ + '): run bin/install, or use envs/sv.yaml')"
)


def sv_tool(name):
    """A command of Genomon's SV tools: from .venv-sv/bin, or the conda env's PATH."""
    if SV_CONDA:
        return name
    path = SV_TOOLS_DIR / name
    if SV_PAIRS and not path.exists():
        raise WorkflowError(
            f"SV detection: {path} not found: run bin/install (it installs Genomon's SV tools "
            "in .venv-sv/), or run with --sdm conda (envs/sv.yaml)"
        )
    return shlex.quote(str(path))


def sv_prefix(name):
    """Genomon's prefix of a sample's SV files: sv/{name}/{name}."""
    return f"{SV_DIR}/{name}/{name}"


def sv_parsed_bam(name):
    """The BAM GenomonSV parse reads for a name of SV_PARSED (a sample's final BAM, or a panel's BAM)."""
    member = SV_PARSED[name]
    return member if member.endswith(".bam") else final_bam(member)


def sv_parse_files(name):
    return {
        key: sv_prefix(name) + suffix for key, suffix in SV_PARSE_SUFFIXES.items()
    }


def sv_result(tumor, suffix):
    return f"{sv_prefix(tumor)}.genomonSV.result{suffix}"


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


SV_ANNOTATION = f"--genome_id {config['sv_filt']['genome_id']}" + (
    " --grc" if config["sv_filt"]["grc"] else ""
)


wildcard_constraints:
    sv_sample=one_of(SV_PARSED),
    sv_tumor=one_of(SV_PAIRS),
    panel=one_of(SV_PANELS),


rule sv_parse:
    input:
        bam=lambda wildcards: sv_parsed_bam(wildcards.sv_sample),
        # GenomonSV parse fetches read pairs by region.
        index=lambda wildcards: with_indexes({"bam": sv_parsed_bam(wildcards.sv_sample)})[1:],
    output:
        **{
            key: sv_prefix("{sv_sample}") + suffix
            for key, suffix in SV_PARSE_SUFFIXES.items()
        },
    log:
        log_path("sv_parse", "{sv_sample}"),
    benchmark:
        bench_path("sv_parse", "{sv_sample}")
    priority: config["priorities"]["sv_parse"]
    conda:
        "../../envs/sv.yaml"
    resources:
        **FACTS["sv_parse"].resources,
    params:
        genomon_sv=sv_tool("GenomonSV"),
        options=config["sv_parse"]["params"],
        # GenomonSV writes its sort files beside the prefix: in the job's work directory, and
        # the four results move into sv/{sample}/ only once all are written.
        work_dir_setup=work_dir_setup("sv_parse"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            {params.genomon_sv} parse {input.bam:q} "$work/{wildcards.sv_sample}" {params.options}
            mv "$work/{wildcards.sv_sample}".*.clustered.bedpe.gz* "$(dirname {output.junction:q})"/
        ) >{log:q} 2>&1
        """


rule sv_merge_control:
    input:
        junctions=lambda wildcards: [
            sv_parse_files(name)[key]
            for name in SV_PANELS[wildcards.panel]
            for key in ("junction", "junction_tbi")
        ],
    output:
        control_info=f"{SV_DIR}/control_panel/{{panel}}.control_info.txt",
        merged=f"{SV_DIR}/non_matched_control_panel/{{panel}}.merged.junction.control.bedpe.gz",
        merged_tbi=f"{SV_DIR}/non_matched_control_panel/{{panel}}.merged.junction.control.bedpe.gz.tbi",
    log:
        log_path("sv_merge_control", "{panel}"),
    benchmark:
        bench_path("sv_merge_control", "{panel}")
    conda:
        "../../envs/sv.yaml"
    params:
        genomon_sv=sv_tool("GenomonSV"),
        options=config["sv_merge"]["params"],
        # Genomon's control_info.txt: label<TAB>parse prefix, one line per panel member.
        members=lambda wildcards: [
            f"{name}\t{sv_prefix(name)}" for name in SV_PANELS[wildcards.panel]
        ],
        work_dir_setup=work_dir_setup("sv_merge_control", tier="node_local"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            printf '%s\\n' {params.members:q} >{output.control_info:q}
            {params.genomon_sv} merge {output.control_info:q} "$work/merged.bedpe.gz" {params.options}
            mv "$work/merged.bedpe.gz.tbi" {output.merged_tbi:q}
            mv "$work/merged.bedpe.gz" {output.merged:q}
        ) >{log:q} 2>&1
        """


rule sv_filt:
    input:
        unpack(sv_filt_inputs),
        reference=REFERENCE,
    output:
        result=sv_result("{sv_tumor}", ".txt"),
    log:
        log_path("sv_filt", "{sv_tumor}"),
    benchmark:
        bench_path("sv_filt", "{sv_tumor}")
    priority: config["priorities"]["sv_filt"]
    threads: config["sv_filt"]["thread_num"]
    conda:
        "../../envs/sv.yaml"
    resources:
        **FACTS["sv_filt"].resources,
    params:
        python=PYTHON,
        sv_python=sv_tool("python"),
        pysam_check=shlex.quote(SV_PYSAM_CHECK),
        genomon_sv=sv_tool("GenomonSV"),
        sv_utils=sv_tool("sv_utils"),
        controls=sv_filt_controls,
        options=f"{config['sv_filt']['params']} {SV_ANNOTATION}",
        work_dir_setup=work_dir_setup("sv_filt"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            {params.sv_python} -c {params.pysam_check}
            # filt reads the parse files at its prefix and writes its own files beside them.
            for file in {input.junction:q} {input.junction_tbi:q} {input.improper:q} {input.improper_tbi:q}; do
                ln -s "$file" "$work/{wildcards.sv_tumor}${{file##*/{wildcards.sv_tumor}}}"
            done
            {params.genomon_sv} filt {input.tumor:q} "$work/{wildcards.sv_tumor}" {input.reference:q} \
                {params.controls} --thread_num {threads} {params.options}
            {params.python} -m genomon_smk.steps.sv_result result --raw "$work/{wildcards.sv_tumor}.genomonSV.result.txt" \
                --out {output.result:q} --version-of {params.genomon_sv} {params.sv_utils}
        ) >{log:q} 2>&1
        """


rule sv_utils_filter:
    input:
        result=rules.sv_filt.output.result,
    output:
        filtered=report(
            sv_result("{sv_tumor}", ".filt.txt"),
            caption="../report/sv_result.rst",
            category="Structural variants",
            subcategory="{sv_tumor}",
            labels={"content": "filtered SVs (Genomon's table)"},
        ),
    log:
        log_path("sv_utils_filter", "{sv_tumor}"),
    benchmark:
        bench_path("sv_utils_filter", "{sv_tumor}")
    conda:
        "../../envs/sv.yaml"
    params:
        sv_utils=sv_tool("sv_utils"),
        options=f"{config['sv_filt']['sv_utils_params']} {SV_ANNOTATION}",
    shell:
        """
        (
            {params.sv_utils} filter {input.result:q} {output.filtered:q} {params.options}
        ) >{log:q} 2>&1
        """


rule sv_vcf:
    input:
        filtered=rules.sv_utils_filter.output.filtered,
        reference=REFERENCE,
    output:
        vcf=sv_result("{sv_tumor}", ".filt.vcf.gz"),
        tbi=sv_result("{sv_tumor}", ".filt.vcf.gz.tbi"),
    log:
        log_path("sv_vcf", "{sv_tumor}"),
    benchmark:
        bench_path("sv_vcf", "{sv_tumor}")
    conda:
        "../../envs/python.yaml"
    params:
        python=PYTHON,
        normal=lambda wildcards: (
            f"--normal {SV_PAIRS[wildcards.sv_tumor].normal}"
            if SV_PAIRS[wildcards.sv_tumor].normal
            else ""
        ),
    shell:
        """
        (
            {params.python} -m genomon_smk.steps.sv_result vcf --result {input.filtered:q} \
                --reference {input.reference:q} --out {output.vcf:q} --tumor {wildcards.sv_tumor} {params.normal}
        ) >{log:q} 2>&1
        """


# What `rule all` asks for: every SV pair's results.
SV_TARGETS = expand(
    sv_result("{sv_tumor}", "{suffix}"),
    sv_tumor=SV_PAIRS,
    suffix=[".txt", ".filt.txt", ".filt.vcf.gz", ".filt.vcf.gz.tbi"],
)
