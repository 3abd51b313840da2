"""Map dna sequence: bwa mem per chunk, then, in the same job, scatter the alignments by region.

The reference is pre-staged to the cache tier by stage_reference (once per node on a cluster),
or with storage.reference_staging: llio_transfer, llio_transfer'd by every job that reads it.

bwa's output streams into bamsort, which sorts the chunk while bwa maps, on the node_local tier
(it never leaves the job); samtools cuts it into one sorted piece per region on the map rule's
output tier, and a per-sample gather re-files them by region for markdup.
"""


# Bookkeeping with no compute: run in the Snakemake process's host, not as cluster jobs.
localrules:
    region_table,
    gather_map,


rule region_table:
    input:
        fai=f"{REFERENCE}.fai",
    output:
        f"{OUTPUT_DIR}/regions.tsv",
    log:
        log_path("region_table", "regions"),
    benchmark:
        bench_path("region_table", "regions")
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        region_file=(
            f"--region-file {shlex.quote(config_path(config['regions']['file']))}"
            if config["regions"]["file"]
            else ""
        ),
        max_length=config["regions"]["max_length"],
        pack_bp=config["regions"]["pack_bp"],
    shell:
        "genomon_python -m genomon_smk.plan.regions --fai {input.fai:q} {params.region_file}"
        " --max-length {params.max_length} --pack-bp {params.pack_bp} --out {output:q} > {log:q} 2>&1"


rule stage_reference:
    input:
        reference_files(REFERENCE),
    output:
        STAGED_MANIFEST,
    log:
        log_path("stage_reference", "reference"),
    benchmark:
        bench_path("stage_reference", "reference")
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    params:
        cache=TIER_WORDS["cache"],
        method=config["storage"]["reference_staging"],
    shell:
        """
        genomon_python -m genomon_smk.steps.reference_cache setup --method {params.method} --cache {params.cache} \
            --manifest {output:q} {input:q} >{log:q} 2>&1
        """


rule map_reads:
    input:
        chunks=rules.split_fastq.output.chunks,
        staged=rules.stage_reference.output[0],
        regions=rules.region_table.output[0],
    output:
        pieces=temp(directory(tier_file("map", "map/{sample}/chunk_{chunk}"))),
    log:
        log_path("map_reads", "{sample}/{chunk}"),
    benchmark:
        bench_path("map_reads", "{sample}/{chunk}")
    priority: in_pair_order(config["priorities"]["map_reads"])
    conda:
        "../../envs/map.yaml"
    envmodules:
        *env_modules("map"),
    threads: job_threads("map_reads")
    resources:
        **FACTS["map_reads"].resources,
    params:
        read_group=read_group,
        bwa_params=config_options("map", "bwa_params"),
        batch_bases=config["map"]["batch_bases"],
        work_dir_setup=work_dir_setup("map"),
        cache=TIER_WORDS["cache"],
        staging=config["storage"]["reference_staging"],
        # markdup's bammerge keeps every piece's @PG lines: only the first chunk's have them.
        drop_programs=lambda wildcards: (
            "" if wildcards.chunk == CHUNKS[0] else "--drop-programs"
        ),
    shell:
        """
        reference=$(genomon_python -m genomon_smk.steps.reference_cache ensure --method {params.staging} --cache {params.cache} \
            --manifest {input.staged:q})
        : >{log:q}
        {params.work_dir_setup} {log:q}
        # bwa's alignments stream into the scatter's bamsort (sorting in $work while bwa maps).
        bwa mem -t {threads} -K {params.batch_bases} {params.bwa_params} -R '{params.read_group}' \
            "$reference" {input.chunks:q}/{wildcards.chunk}_R1.fastq {input.chunks:q}/{wildcards.chunk}_R2.fastq 2>>{log:q} \
            | genomon_python -m genomon_smk.steps.scatter --regions {input.regions:q} --out-dir {output.pieces:q} \
                --work-dir "$work" --threads {threads} --job-shell $$ {params.drop_programs} - >>{log:q} 2>&1
        """


rule gather_map:
    input:
        lambda wildcards: expand(
            rules.map_reads.output.pieces, sample=wildcards.sample, chunk=CHUNKS
        ),
    output:
        temp(directory(tier_file("map", "map/{sample}/by_region"))),
    log:
        log_path("gather_map", "{sample}"),
    benchmark:
        bench_path("gather_map", "{sample}")
    priority: config["priorities"]["gather_map"]
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    shell:
        "genomon_python -m genomon_smk.steps.gather --out-dir {output:q} {input:q} > {log:q} 2>&1"
