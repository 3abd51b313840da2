"""Throughput: the run's utilisation timeline (the Fugaku paper's Figs. 7-11), one line per slot
and one bar per job coloured by stage, drawn last from the benchmark files of this run's jobs.
Included after every other rule: its input is final_targets, and it reads the other rules'
threads."""

import time

TIMELINE_PREFIX = f"{OUTPUT_DIR}/qc/timeline/timeline"

# The timeline draws this run's jobs only (earlier runs' benchmark files stay): the moment the
# run started, for its local job's shell. Not a param: it changes every run, and a changed param
# would rerun the timeline of a finished run.
if MAIN_PROCESS:
    os.environ.update(GENOMON_SMK_RUN_STARTED=f"{time.time():.3f}")


# Both read after every other rule is defined (functions in paths.smk). The run's own (--cores,
# the profile's threads), so not params either: a finished run's timeline is not drawn again
# because a later dry run has other cores.
TIMELINE_SLOTS = timeline_slots()
RULE_THREADS = rule_threads()
if MAIN_PROCESS:
    os.environ.update(
        GENOMON_SMK_TIMELINE_SLOTS=str(TIMELINE_SLOTS),
        GENOMON_SMK_RULE_THREADS=RULE_THREADS,
    )


rule utilisation_timeline:
    input:
        final_targets,
    output:
        png=report(
            f"{TIMELINE_PREFIX}.png",
            caption="../report/timeline.rst",
            category="Throughput",
            labels={"content": "timeline (PNG)"},
        ),
        svg=report(
            f"{TIMELINE_PREFIX}.svg",
            caption="../report/timeline.rst",
            category="Throughput",
            labels={"content": "timeline (SVG)"},
        ),
        tsv=report(
            f"{TIMELINE_PREFIX}.jobs.tsv",
            caption="../report/timeline.rst",
            category="Throughput",
            labels={"content": "job records (TSV)"},
        ),
        summary=f"{TIMELINE_PREFIX}.summary.tsv",
    log:
        log_path("utilisation_timeline", "all"),
    benchmark:
        bench_path("utilisation_timeline", "all")
    # On the host Snakemake runs on, which knows the run's cores and sees every benchmark file.
    localrule: True
    conda:
        "../../envs/plot.yaml"
    envmodules:
        *env_modules("plot"),
    params:
        benchmarks=BENCH_DIR,
        # A work directory for matplotlib's font cache (not $HOME); on shared_tmp, a place the
        # Snakemake host sees (node_local may name a variable that only compute nodes set).
        work_dir_setup=work_dir_setup("utilisation_timeline", tier="shared_tmp"),
    shell:
        """
        {params.work_dir_setup} {log:q}
        genomon_python -m genomon_smk.plan.timeline --benchmarks {params.benchmarks:q} \
            --run-started "$GENOMON_SMK_RUN_STARTED" \
            ${{GENOMON_SMK_TIMELINE_SLOTS:+--slots "$GENOMON_SMK_TIMELINE_SLOTS"}} \
            --threads $GENOMON_SMK_RULE_THREADS --png {output.png:q} --svg {output.svg:q} \
            --tsv {output.tsv:q} --summary {output.summary:q} >{log:q} 2>&1
        """


TIMELINE_TARGETS = rules.utilisation_timeline.output
