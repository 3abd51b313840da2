"""Markdup: per sample and region, join the region's pieces from all chunks, sort with
biobambam2 bamsort and mark duplicates with bammarkduplicates (which writes the index).
"""


rule markdup:
    input:
        by_region=rules.gather_map.output[0],
    output:
        bam=temp(tier_file("markdup", "markdup/{sample}/{region}.markdup.bam")),
        bai=temp(tier_file("markdup", "markdup/{sample}/{region}.markdup.bam.bai")),
        metrics=f"{OUTPUT_DIR}/qc/{{sample}}/markdup_metrics/{{region}}.txt",
    log:
        log_path("markdup", "{sample}/{region}"),
    benchmark:
        bench_path("markdup", "{sample}/{region}")
    priority: config["priorities"]["markdup"]
    conda:
        "../../envs/markdup.yaml"
    threads: config["markdup"]["threads"]
    params:
        work_dir=job_work_dir("markdup"),
    shell:
        """
        source {params.work_dir} {log:q}
        ls -1 {input.by_region:q}/{wildcards.region}/*.bam >"$work/pieces.txt"
        # bammarkduplicates reads stdin itself: given I=/dev/stdin it tries a second pass and fails
        (samtools cat -b "$work/pieces.txt" -o - \
            | bamsort SO=coordinate inputformat=bam level=1 inputthreads={threads} outputthreads={threads} \
                sortthreads={threads} tmpfile="$work/bamsort" \
            | bammarkduplicates O={output.bam:q} M={output.metrics:q} markthreads={threads} \
                index=1 indexfilename={output.bai:q} tmpfile="$work/markdup") 2>{log:q}
        """
