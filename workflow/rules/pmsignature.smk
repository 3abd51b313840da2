"""pmsignature, as Genomon runs it (genomon_smk.tools.pmsignature, docs/pmsignature.md): the
cohort's filtered mutations (the tables paplot draws) cut into Genomon's mutation position format,
pmsignature/{cohort}/mutation.cut.txt (pre_pmsignature); then one job per K = signum_min..
signum_max for the independent model (pmsignature_ind) and, when enabled, the full model
(pmsignature_full), each writing the JSON paplot's pmsignature / signature reports read. Their
fixed background signature is built once per reference, annotation, seed and draw into
resources_dir/pmsignature/ (pmsignature_background, a set-up rule; genomon_smk.plan.pmsignature).
"""

PMSIGNATURE_INPUT = f"{PMSIGNATURE_DIR}/mutation.cut.txt"

# A background exactly when some mode runs.
if PMSIGNATURE.background:

    rule pmsignature_background:
        input:
            fasta=PMSIGNATURE.background.reference,
            fai=f"{PMSIGNATURE.background.reference}.fai",
            annotation=PMSIGNATURE.annotation,
        output:
            tables=PMSIGNATURE.background.files,
        log:
            log_path(
                "pmsignature_background",
                os.path.basename(PMSIGNATURE.background.directory),
            ),
        benchmark:
            bench_path(
                "pmsignature_background",
                os.path.basename(PMSIGNATURE.background.directory),
            )
        conda:
            "../../envs/python.yaml"
        envmodules:
            *env_modules("python"),
        resources:
            **FACTS["pmsignature_background"].resources,
        params:
            build_once=BUILD_ONCE,
            seed=PMSIGNATURE.background.seed,
            positions=PMSIGNATURE.background.positions,
        shell:
            # Written beside, then renamed: resources/ is read by other runs.
            """
            (
                {params.build_once} {output.tables:q}
                out_dir="$(dirname {output.tables[0]:q})"
                genomon_python -m genomon_smk.tools.pmsignature background -r {input.fasta:q} \
                    -a {input.annotation:q} -o "$out_dir/partial" --seed {params.seed} \
                    --positions {params.positions}
                for table in {output.tables:q}; do mv "$out_dir/partial/$(basename "$table")" "$table"; done
                rmdir "$out_dir/partial"
            ) >{log:q} 2>&1
            """

    rule pre_pmsignature:
        input:
            tables=PAPLOT_INPUTS["mutation"],
        output:
            positions=PMSIGNATURE_INPUT,
        log:
            log_path("pre_pmsignature", COHORT_NAME),
        benchmark:
            bench_path("pre_pmsignature", COHORT_NAME)
        conda:
            "../../envs/python.yaml"
        envmodules:
            *env_modules("python"),
        shell:
            "genomon_python -m genomon_smk.steps.post_analysis cut --out {output.positions:q}"
            " {input.tables:q} >{log:q} 2>&1"


if PMSIGNATURE.jobs("ind"):

    rule pmsignature_ind:
        input:
            positions=PMSIGNATURE_INPUT,
            fasta=REFERENCE,
            fai=REFERENCE_PLAN.fai,
            annotation=PMSIGNATURE.annotation,
            background=PMSIGNATURE.background.files,
        output:
            result=pmsignature_result("ind", "{signum}"),
        log:
            log_path("pmsignature_ind", f"{COHORT_NAME}.{{signum}}"),
        benchmark:
            bench_path("pmsignature_ind", f"{COHORT_NAME}.{{signum}}")
        wildcard_constraints:
            signum=r"\d+",
        conda:
            "../../envs/python.yaml"
        envmodules:
            *env_modules("python"),
        threads: config["pmsignature_ind"]["threads"]
        resources:
            **FACTS["pmsignature_ind"].resources,
        params:
            trialnum=config["pmsignature_ind"]["trialnum"],
            seed=config["pmsignature"]["seed"],
        shell:
            """
            genomon_python -m genomon_smk.tools.pmsignature fit -i {input.positions:q} \
                -r {input.fasta:q} -a {input.annotation:q} -b "$(dirname {input.background[0]:q})" \
                --signum {wildcards.signum} --trialnum {params.trialnum} --seed {params.seed} \
                -t {threads} -o {output.result:q} >{log:q} 2>&1
            """


if PMSIGNATURE.jobs("full"):

    rule pmsignature_full:
        input:
            positions=PMSIGNATURE_INPUT,
            fasta=REFERENCE,
            fai=REFERENCE_PLAN.fai,
            background=PMSIGNATURE.background.files,
        output:
            result=pmsignature_result("full", "{signum}"),
        log:
            log_path("pmsignature_full", f"{COHORT_NAME}.{{signum}}"),
        benchmark:
            bench_path("pmsignature_full", f"{COHORT_NAME}.{{signum}}")
        wildcard_constraints:
            signum=r"\d+",
        conda:
            "../../envs/python.yaml"
        envmodules:
            *env_modules("python"),
        threads: config["pmsignature_full"]["threads"]
        resources:
            **FACTS["pmsignature_full"].resources,
        params:
            trialnum=config["pmsignature_full"]["trialnum"],
            seed=config["pmsignature"]["seed"],
        shell:
            # No strand feature: the annotation is not read.
            """
            genomon_python -m genomon_smk.tools.pmsignature fit -i {input.positions:q} \
                -r {input.fasta:q} -b "$(dirname {input.background[0]:q})" \
                --signum {wildcards.signum} --trialnum {params.trialnum} --seed {params.seed} \
                -t {threads} --full -o {output.result:q} >{log:q} 2>&1
            """


# What `rule all` asks for (paplot reads them too).
PMSIGNATURE_TARGETS = [
    pmsignature_result(mode, signum)
    for mode, signums in PMSIGNATURE.ks.items()
    for signum in signums
]
