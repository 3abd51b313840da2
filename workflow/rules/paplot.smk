"""paplot (0.5.6 from PyPI, MIT), as Genomon runs it: the QC, SV (ca) and mutation reports of the
cohort's post-analysis tables and their index, paplot/{cohort}/index.html. The config is
Genomon's DNA template that paplot ships, with this project's columns mapped in
(genomon_smk.steps.paplot_report); and, as Genomon, one pmsignature report per K of
pmsignature's ind mode (and one signature report per K of its full mode; rules/pmsignature.smk).
"""


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
    envmodules:
        *env_modules("paplot"),
    params:
        paplot=PAPLOT,
        title=config["paplot"]["title"],
        commands=paplot_commands,
        remarks="Data used in this report were generated using genomon-smk.",
        work_dir_setup=work_dir_setup("paplot", tier="node_local"),
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            # A report of an earlier run: paplot adds to its .meta.json, so it goes first.
            out_dir="$(dirname {output.index:q})"
            rm -rf "$out_dir/.meta.json" "$out_dir"/{params.title:q}
            genomon_python -m genomon_smk.steps.paplot_report --fai {input.fai:q} --out-dir "$work" \
                --mutation {input.mutation:q}
            {params.commands}
            {params.paplot} index "$out_dir" --config_file "$work/paplot.cfg" --remarks {params.remarks:q}
        ) >{log:q} 2>&1
        """


# What `rule all` asks for: the report, whenever there are post-analysis tables (its index alone
# when paplot.include_* leave it none to draw).
PAPLOT_TARGETS = rules.paplot.output if POST_ANALYSIS_TARGETS else []
