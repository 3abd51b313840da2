"""Merge bam: per sample, `samtools cat` of the region BAMs in reference order, the final index
built by merging the region indexes (no second pass over the BAM), and an md5 checksum.
"""


rule merge_bam:
    input:
        bams=expand(rules.markdup.output.bam, region=REGION_NAMES, allow_missing=True),
        bais=expand(rules.markdup.output.bai, region=REGION_NAMES, allow_missing=True),
    output:
        bam=final_bam("{sample}"),
        bai=final_bam("{sample}", ".bai"),
        md5=final_bam("{sample}", ".md5"),
    log:
        log_path("merge_bam", "{sample}"),
    benchmark:
        bench_path("merge_bam", "{sample}")
    wildcard_constraints:
        sample=one_of(MAPPED_SAMPLES),
    priority: config["priorities"]["merge_bam"]
    conda:
        "../../envs/python.yaml"
    envmodules:
        *env_modules("python"),
    resources:
        **FACTS["merge_bam"].resources,
    params:
        work_dir_setup=work_dir_setup("merge_bam"),
    shell:
        """
        {params.work_dir_setup} {log:q}
        printf '%s\\n' {input.bams:q} >"$work/regions.txt"
        samtools cat -b "$work/regions.txt" -o {output.bam:q} 2>{log:q}
        # samtools cat just made the BAM of these regions: a layout other than the one the index
        # merge knows means another samtools version, so the index is made the slow way.
        genomon_python -m genomon_smk.steps.bai_merge --merged {output.bam:q} --out {output.bai:q} \
            --regions-file "$work/regions.txt" --fallback-samtools-index >>{log:q} 2>&1
        (cd "$(dirname {output.bam:q})" && md5sum "$(basename {output.bam:q})") >{output.md5:q}
        """
