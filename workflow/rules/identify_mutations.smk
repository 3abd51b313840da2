"""Identify mutations: per pair and region, fisher -> realignment -> indel -> breakpoint ->
simplerepeat -> EBFilter, as Genomon chains them (tumor-only pairs: fisher single ->
realignment -> simplerepeat; EBFilter only when the pair names a control panel)."""


rule identify_mutations:
    input:
        unpack(lambda wildcards: pair_bams(wildcards.tumor)),
        indexes=lambda wildcards: with_indexes(pair_bams(wildcards.tumor)),
        staged=rules.stage_reference.output[0],
    output:
        temp(tier_file("identify_mutations", "mutation/{tumor}/{region}.txt")),
    log:
        log_path("identify_mutations", "{tumor}/{region}"),
    benchmark:
        bench_path("identify_mutations", "{tumor}/{region}")
    priority: config["priorities"]["identify_mutations"]
    conda:
        "../../envs/python.yaml"
    params:
        python=PYTHON,
        intervals=lambda wildcards: ",".join(
            i.samtools() for i in MUTATION_REGIONS[wildcards.region].intervals
        ),
        mode=lambda wildcards: (
            "comparison" if PAIRS[wildcards.tumor].normal else "single"
        ),
        # Empty for a tumor-only pair: the shell names it in the pair branch only, and
        # {input.normal} would not exist for Snakemake to format.
        normal=lambda wildcards, input: input.get("normal", ""),
        panel=lambda wildcards, input: " ".join(
            shlex.quote(bam) for name, bam in input.items() if name.startswith("panel")
        ),
        fisher=lambda wildcards: config["fisher_mutation_call"][
            "pair_params" if PAIRS[wildcards.tumor].normal else "single_params"
        ],
        realignment=config["realignment_filter"]["params"],
        indel=config["indel_filter"]["params"],
        breakpoint=config["breakpoint_filter"]["params"],
        eb=(
            f"-q {config['eb_filter']['map_quality']} -Q {config['eb_filter']['base_quality']}"
            f" --ff {config['eb_filter']['filter_flags']}"
        ),
        simple_repeat_db=(
            config_path(config["simple_repeat_db"])
            if config["simple_repeat_db"]
            else ""
        ),
        tools=TOOLS,
        work_dir=job_work_dir("identify_mutations"),
        cache=TIER_PATHS["cache"],
        staging=config["storage"]["reference_staging"],
    shell:
        """
        (
            reference=$({params.python} -m genomon_smk.stage ensure --method {params.staging} \
                --cache "{params.cache}" --manifest {input.staged:q})
            source {params.work_dir} {log:q}
            echo {params.intervals:q} >"$work/region.txt"
            if [ {params.mode} = comparison ]; then
                {params.tools[fisher]} comparison -1 {input.tumor:q} -2 {params.normal:q} -r "$reference" \
                    -s samtools -L "$work/region.txt" -o "$work/fisher.txt" {params.fisher}
                {params.tools[mutfilter]} realignment -t "$work/fisher.txt" -1 {input.tumor:q} -2 {params.normal:q} \
                    -r "$reference" -o "$work/realignment.txt" {params.realignment}
                {params.tools[mutfilter]} indel -t "$work/realignment.txt" -2 {params.normal:q} -s samtools \
                    -o "$work/indel.txt" {params.indel}
                {params.tools[mutfilter]} breakpoint -t "$work/indel.txt" -2 {params.normal:q} \
                    -o "$work/filtered.txt" {params.breakpoint}
            else
                {params.tools[fisher]} single -1 {input.tumor:q} -r "$reference" \
                    -s samtools -L "$work/region.txt" -o "$work/fisher.txt" {params.fisher}
                {params.tools[mutfilter]} realignment -t "$work/fisher.txt" -1 {input.tumor:q} \
                    -r "$reference" -o "$work/filtered.txt" {params.realignment}
            fi
            simple_repeat_db={params.simple_repeat_db:q}
            if [ -n "$simple_repeat_db" ]; then
                {params.tools[mutfilter]} simplerepeat -t "$work/filtered.txt" -S "$simple_repeat_db" \
                    -o "$work/annotated.txt"
            else
                awk 'BEGIN {{OFS = "\\t"}} {{print $0, "---", "---"}}' "$work/filtered.txt" >"$work/annotated.txt"
            fi
            if [ -n "{params.panel}" ]; then
                printf '%s\\n' {params.panel} >"$work/panel.txt"
                {params.tools[EBFilter]} -f anno --loption {params.eb} "$work/annotated.txt" {input.tumor:q} \
                    "$work/panel.txt" "$work/result.txt"
            else
                mv "$work/annotated.txt" "$work/result.txt"
            fi
            mv "$work/result.txt" {output:q}
        ) >{log:q} 2>&1
        """
