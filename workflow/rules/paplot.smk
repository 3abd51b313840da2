"""paplot (0.5.6 from PyPI, MIT), as Genomon runs it: the QC, SV (ca) and mutation reports of the
cohort's post-analysis tables and their index, paplot/{cohort}/index.html. The config is
Genomon's DNA template that paplot ships, with this project's columns mapped in
(genomon_smk.steps.paplot_report). The signature reports come with a signature stage.
"""

PAPLOT_DIR = f"{OUTPUT_DIR}/paplot/{COHORT_NAME}"
# Genomon's paplot command: the venv's (bin/install), or the conda env's.
PAPLOT = "paplot" if CONDA else shlex.quote(str(Path(sys.executable).parent / "paplot"))


def paplot_tables(tables):
    """The filtered tables the report draws, as Genomon picks them: pair + control panel always,
    pair with paplot.include_unpanel, tumor + panel with include_unpair, tumor alone with both.
    """
    wanted = {
        "pair_controlpanel": True,
        "pair": config["paplot"]["include_unpanel"],
        "unpair_controlpanel": config["paplot"]["include_unpair"],
        "unpair": config["paplot"]["include_unpanel"]
        and config["paplot"]["include_unpair"],
    }
    return [
        tables[f"filt_{case}"]
        for case, on in wanted.items()
        if on and f"filt_{case}" in tables
    ]


PAPLOT_INPUTS = {
    "qc": [MERGE_QC] if QC_SAMPLES else [],
    "sv": paplot_tables(SV_TABLES),
    "mutation": paplot_tables(MUTATION_TABLES),
}
# paplot's subcommand, title and overview per report (Genomon's).
PAPLOT_REPORTS = {
    "qc": ("qc", "QC graphs", "Quality Control of bam."),
    "sv": ("ca", "SV graphs", "Structural Variation."),
    "mutation": ("mutation", "Mutation matrix", "Gene-sample mutational profiles."),
}


def paplot_commands(wildcards, input):
    """One paplot command per report that has tables (the mutation report reads the table the
    config step writes in the work directory)."""
    title = shlex.quote(config["paplot"]["title"])
    commands = []
    for kind, (command, heading, overview) in PAPLOT_REPORTS.items():
        if not PAPLOT_INPUTS[kind]:
            continue
        tables = (
            '"$work/mutation.txt"'
            if kind == "mutation"
            else shlex.quote(",".join(input[kind]))
        )
        commands.append(
            f"{PAPLOT} {command} {tables} {shlex.quote(PAPLOT_DIR)} {title} "
            f'--config_file "$work/paplot.cfg" --title {shlex.quote(heading)} '
            f"--overview {shlex.quote(overview)} --ellipsis {kind}"
        )
    return "\n".join(commands)


rule paplot:
    input:
        **PAPLOT_INPUTS,
        fai=REFERENCE_PLAN.fai,
    output:
        # Not in the Snakemake report: the page loads its graphs and scripts from beside it.
        index=f"{PAPLOT_DIR}/index.html",
    log:
        log_path("paplot", COHORT_NAME),
    benchmark:
        bench_path("paplot", COHORT_NAME)
    conda:
        "../../envs/paplot.yaml"
    params:
        python=PYTHON,
        paplot=PAPLOT,
        out_dir=PAPLOT_DIR,
        title=config["paplot"]["title"],
        commands=paplot_commands,
        remarks="Data used in this report were generated using genomon-smk.",
        work_dir_setup=work_dir_setup("paplot", tier="node_local"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            # A report of an earlier run: paplot adds to its .meta.json, so it goes first.
            rm -rf {params.out_dir:q}/.meta.json {params.out_dir:q}/{params.title:q}
            {params.python} -m genomon_smk.steps.paplot_report --fai {input.fai:q} --out-dir "$work" \
                --mutation {input.mutation:q}
            {params.commands}
            {params.paplot} index {params.out_dir:q} --config_file "$work/paplot.cfg" --remarks {params.remarks:q}
        ) >{log:q} 2>&1
        """


# What `rule all` asks for: the report, when there is anything to draw.
PAPLOT_TARGETS = rules.paplot.output if any(PAPLOT_INPUTS.values()) else []
