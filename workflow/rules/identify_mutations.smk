"""Identify mutations: per pair and region, fisher -> [hotspotCall -> mutil merge_hotspot] ->
realignment -> indel -> breakpoint -> simplerepeat -> EBFilter, as Genomon chains them (the
hotspot call only with a hotspot database; tumor-only pairs: fisher single -> realignment ->
simplerepeat; EBFilter only when the pair names a control panel)."""


rule identify_mutations:
    input:
        unpack(lambda wildcards: pair_bams(wildcards.tumor)),
        indexes=lambda wildcards: with_indexes(pair_bams(wildcards.tumor)),
        staged=rules.stage_reference.output[0],
        simple_repeat=SIMPLE_REPEAT.files if SIMPLE_REPEAT else [],
        hotspot_db=hotspot_db_input,
    output:
        temp(tier_file("identify_mutations", "mutation/{tumor}/{region}.txt")),
    log:
        log_path("identify_mutations", "{tumor}/{region}"),
    benchmark:
        bench_path("identify_mutations", "{tumor}/{region}")
    priority: config["priorities"]["identify_mutations"]
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    resources:
        **FACTS["identify_mutations"].resources,
    params:
        intervals=lambda wildcards: ",".join(
            i.samtools() for i in MUTATION_REGIONS[wildcards.region].intervals
        ),
        # Empty for a tumor-only pair: {input.normal} would not exist for Snakemake to format.
        normal=lambda wildcards, input: input.get("normal", ""),
        panel=lambda wildcards, input: [
            bam for name, bam in input.items() if name.startswith("panel")
        ],
        fisher=lambda wildcards: config_options(
            "fisher_mutation_call",
            "pair_params" if PAIRS[wildcards.tumor].normal else "single_params",
        ),
        hotspot=config_options("hotspot_call", "params"),
        hotspot_db=lambda wildcards, input: (
            input.hotspot_db[0] if input.hotspot_db else ""
        ),
        realignment=config_options("realignment_filter", "params"),
        indel=config_options("indel_filter", "params"),
        breakpoint=config_options("breakpoint_filter", "params"),
        eb=shlex.join(
            [
                *("-q", str(config["eb_filter"]["map_quality"])),
                *("-Q", str(config["eb_filter"]["base_quality"])),
                *("--ff", config["eb_filter"]["filter_flags"]),
            ]
        ),
        simple_repeat_db=lambda wildcards, input: (
            input.simple_repeat[0] if input.simple_repeat else ""
        ),
        tools=config["mutation_tools"],
        # upstream's commands, as found on PATH when the workflow was planned
        upstream=[
            f"{name}={command}"
            for name, command in TOOLS.items()
            if config["mutation_tools"] == "upstream"
        ],
        # A tumor this run mapped has bwa's NM and MD tags against this reference (not an imported BAM).
        mapped_here=lambda wildcards: (
            "" if wildcards.tumor in COHORT.imported else "--tumor-mapped-here"
        ),
        work_dir_setup=work_dir_setup("identify_mutations"),
        cache=TIER_PATHS["cache"],
        staging=config["storage"]["reference_staging"],
    shell:
        """
        (
            {params.work_dir_setup} {log:q}
            genomon_python -m genomon_smk.steps.identify_mutations --tumor {input.tumor:q} \
                --normal={params.normal:q} --panel {params.panel:q} --staged-reference {input.staged:q} \
                --cache "{params.cache}" --staging {params.staging} \
                --intervals {params.intervals:q} --simple-repeat-db={params.simple_repeat_db:q} \
                --hotspot-db={params.hotspot_db:q} --hotspot-options={params.hotspot:q} \
                --work-dir "$work" --output {output:q} --tools {params.tools} --upstream {params.upstream:q} \
                --fisher-options={params.fisher:q} --realignment-options={params.realignment:q} \
                --indel-options={params.indel:q} --breakpoint-options={params.breakpoint:q} \
                --eb-options={params.eb:q} {params.mapped_here}
        ) >{log:q} 2>&1
        """
